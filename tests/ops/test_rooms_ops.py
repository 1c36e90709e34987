"""Graceful shutdown of the room service (issue 16 part 3): `RoomServer.shutdown` tells every
client why in the room protocol's `Closing` message; a real ``lagless game rooms`` process does
it on SIGTERM, disconnects everyone after the acknowledgements and exits 143. The `Closing`
decoder is fuzzed like every room message."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.cli.game import GAME_PROTOCOL_ID
from lagless.errors import ConfigError
from lagless.game.rooms import (
    MAX_REASON,
    Closing,
    CreateRoom,
    Joined,
    RoomClient,
    decode_room_message,
    encode_room_message,
)
from lagless.io.endpoint import PollEndpoint
from lagless.transport import ClientDisconnectReason, Disconnected
from tests.game.helpers import Lobby
from tests.ops.helpers import JsonServer
from tests.property.fuzzing import FUZZ, fuzz_bytes

REASON = "server shutting down"


def test_shutdown_tells_every_member_and_counts_the_acknowledgements() -> None:
    lobby = Lobby()
    clients = [lobby.join(n) for n in (1, 2)]
    lobby.run(0.5)
    clients[0].poke(lambda c: c.request(CreateRoom("r", 4)))
    lobby.run()
    service = lobby.server.obj
    told = service.shutdown(REASON)
    assert (told, service.goodbyes_pending) == (2, 2)
    lobby.server.poke(lambda s: None)  # pump: the Closing messages leave
    lobby.run(0.5)
    assert service.goodbyes_pending == 0
    assert [c.obj.closing for c in clients] == [REASON, REASON]
    for events in lobby.events:
        assert Closing(REASON) in events
    assert lobby.server.obj.close() == 2
    lobby.server.poke(lambda s: None)
    lobby.run(0.5)
    for events in lobby.events:
        ended = [e for e in events if isinstance(e, Disconnected)]
        assert [e.reason for e in ended] == [ClientDisconnectReason.SERVER_DISCONNECTED]
    assert service.rooms == []


def test_a_reason_beyond_the_bound_is_refused() -> None:
    lobby = Lobby()
    with pytest.raises(ConfigError, match="at most 120"):
        lobby.server.obj.shutdown("x" * (MAX_REASON + 1))
    assert lobby.server.obj.goodbyes_pending == 0


closings = st.text(max_size=MAX_REASON).map(lambda r: encode_room_message(Closing(r)))


@FUZZ
@given(fuzz_bytes(closings))
def test_closing_decoder_never_raises_and_bounds_the_reason(data: bytes) -> None:
    message = decode_room_message(data)
    if isinstance(message, Closing):
        assert len(message.reason) <= MAX_REASON
        assert decode_room_message(encode_room_message(message)) == message


def test_a_closing_reason_too_long_does_not_decode() -> None:
    too_long = msgspec.msgpack.encode({"type": "bye", "reason": "x" * (MAX_REASON + 1)})
    assert decode_room_message(too_long) is None
    assert decode_room_message(encode_room_message(Closing("x" * MAX_REASON))) is not None


def test_rooms_process_says_why_on_sigterm_and_exits_143(
    json_server: Callable[..., JsonServer],
) -> None:
    server = json_server("game", "rooms", "-p", "0")
    stream = server.process.stdout
    assert stream is not None
    line = stream.readline()
    assert line.startswith("room service on 127.0.0.1:"), line
    port = int(line.split()[3].rsplit(":", 1)[1])
    client = RoomClient(GAME_PROTOCOL_ID)
    events: list[object] = []
    with PollEndpoint(client, "127.0.0.1:0") as endpoint:
        endpoint.call(lambda c: c.connect(("127.0.0.1", port), endpoint.now(), client_id=7))

        def pump_until(done: Callable[[], bool], timeout: float) -> None:
            deadline = time.monotonic() + timeout
            while not done() and time.monotonic() < deadline:
                endpoint.wait(0.01)
                events.extend(endpoint.pump())

        pump_until(lambda: client.transport.connected, 10.0)
        endpoint.call(lambda c: c.request(CreateRoom("lobby", 4)))
        pump_until(lambda: any(isinstance(e, Joined) for e in events), 10.0)
        server.process.send_signal(signal.SIGTERM)
        pump_until(lambda: any(isinstance(e, Disconnected) for e in events), 10.0)
    out, err = server.process.communicate(timeout=10)

    assert client.closing == REASON
    closing = events.index(Closing(REASON))
    ended = [e for e in events if isinstance(e, Disconnected)]
    assert [e.reason for e in ended] == [ClientDisconnectReason.SERVER_DISCONNECTED]
    assert closing < events.index(ended[0])  # told why before the disconnect
    assert server.process.returncode == 128 + signal.SIGTERM, err
    assert "shutting down: telling 1 clients 'server shutting down'" in out
    assert "Traceback" not in err
