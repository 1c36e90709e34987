"""HybridServer: WebSocket links appear to a game server as one more client each (sans-I/O)."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.demo.arena import PROTOCOL_ID, SNAPSHOT_FORMAT, make_server
from lagless.errors import ConfigError, LocalProtocolError
from lagless.physics import CarJoined, Keys
from lagless.physics.codec import InputEvent, Snapshot, Welcome, decode_message, encode_message
from lagless.transport import (
    RELIABLE,
    UNRELIABLE,
    ClientConnected,
    ClientDisconnected,
    MessageReceived,
    NetcodeServerConfig,
)
from lagless.transport.netcode_state import ServerDisconnectReason
from lagless.web import (
    LINK_CONNECTION_BASE,
    LINK_VERSION,
    Hello,
    HybridServer,
    LinkClose,
    LinkMessage,
    Ping,
    Pong,
    decode_frame,
    encode_frame,
)

ADDR = ("10.0.0.7", 51000)
HELLO = encode_frame(Hello(PROTOCOL_ID, LINK_VERSION))


def _hub(**kwargs: float) -> HybridServer:
    config = NetcodeServerConfig(
        protocol_id=PROTOCOL_ID, public_address=("127.0.0.1", 40000), insecure=True
    )
    return HybridServer(config=config, random_bytes=random.Random(1).randbytes, **kwargs)  # type: ignore[arg-type]


def _events(hub: HybridServer) -> list[object]:
    out = []
    while (event := hub.next_event()) is not None:
        out.append(event)
    return out


def _connected(hub: HybridServer, link_id: int = 1, now: float = 0.0) -> int:
    hub.open_link(link_id, ADDR, now)
    hub.receive_frame(link_id, HELLO, now)
    (event,) = _events(hub)
    assert isinstance(event, ClientConnected)
    return event.connection_id


def test_hello_connects_and_messages_flow_both_ways() -> None:
    hub = _hub()
    hub.open_link(1, ADDR, 0.0)
    assert _events(hub) == []
    assert hub.next_timer() == pytest.approx(5.0)
    hub.receive_frame(1, HELLO, 0.1)
    (joined,) = _events(hub)
    assert isinstance(joined, ClientConnected)
    cid = joined.connection_id
    assert cid == LINK_CONNECTION_BASE
    assert (joined.address, joined.client_index) == (ADDR, -1)
    assert hub.clients == [cid]
    assert hub.is_connected(cid)
    assert hub.connection_statistics(cid) is None

    hub.receive_frame(1, encode_frame(LinkMessage(RELIABLE, b"keys")), 0.2)
    assert hub.next_timer() == pytest.approx(0.2)  # the game server drains at once
    (message,) = _events(hub)
    assert isinstance(message, MessageReceived)
    assert (message.connection_id, message.channel, message.payload) == (cid, RELIABLE, b"keys")

    assert hub.send(cid, RELIABLE, b"welcome") == 0
    hub.broadcast(UNRELIABLE, b"snap")
    out = hub.frames_to_send()
    assert [(f.link_id, decode_frame(f.data), f.droppable) for f in out] == [
        (1, LinkMessage(RELIABLE, b"welcome"), False),
        (1, LinkMessage(UNRELIABLE, b"snap"), True),
    ]
    assert hub.frames_to_send() == []


def test_ping_is_answered_with_the_server_clock() -> None:
    hub = _hub()
    _connected(hub)
    hub.receive_frame(1, encode_frame(Ping(3.25)), 17.5)
    (pong,) = hub.frames_to_send()
    assert decode_frame(pong.data) == Pong(3.25, 17.5)
    assert pong.droppable


@pytest.mark.parametrize(
    "first",
    [
        encode_frame(Hello(PROTOCOL_ID + 1, LINK_VERSION)),
        encode_frame(Hello(PROTOCOL_ID, LINK_VERSION + 1)),
        encode_frame(LinkMessage(RELIABLE, b"keys")),
        b"\xff\x00garbage",
    ],
)
def test_a_bad_first_frame_closes_the_link(first: bytes) -> None:
    hub = _hub()
    hub.open_link(4, ADDR, 0.0)
    hub.receive_frame(4, first, 0.0)
    assert hub.links_to_close() == [LinkClose(4, ServerDisconnectReason.PROTOCOL_VIOLATION)]
    assert _events(hub) == []
    assert hub.bad_frames == 1
    assert hub.links == 0
    hub.receive_frame(4, HELLO, 0.1)  # a frame after the close is ignored
    assert _events(hub) == []


def test_a_ping_may_overtake_the_hello() -> None:
    hub = _hub()
    hub.open_link(1, ADDR, 0.0)
    hub.receive_frame(1, encode_frame(Ping(0.5)), 0.1)  # a datagram ahead of the stream
    assert hub.frames_to_send() == []  # not answered before the HELLO
    assert hub.links_to_close() == []
    hub.receive_frame(1, HELLO, 0.2)
    assert [type(e) for e in _events(hub)] == [ClientConnected]
    assert hub.bad_frames == 0


def test_a_violation_after_hello_disconnects_the_player() -> None:
    hub = _hub()
    cid = _connected(hub)
    hub.receive_frame(1, encode_frame(Pong(1.0, 2.0)), 1.0)
    (gone,) = _events(hub)
    assert gone == ClientDisconnected(
        client_index=-1, connection_id=cid, reason=ServerDisconnectReason.PROTOCOL_VIOLATION
    )
    assert hub.links_to_close() == [LinkClose(1, ServerDisconnectReason.PROTOCOL_VIOLATION)]
    assert not hub.is_connected(cid)
    assert hub.send(cid, RELIABLE, b"late") is None


def test_unknown_channel_from_a_link_is_a_violation() -> None:
    hub = _hub()
    _connected(hub)
    hub.receive_frame(1, encode_frame(LinkMessage(9, b"x")), 1.0)
    assert [type(e) for e in _events(hub)] == [ClientDisconnected]


def test_hello_timeout() -> None:
    hub = _hub(hello_timeout=2.0)
    hub.open_link(1, ADDR, 0.0)
    hub.open_link(2, ADDR, 1.0)
    hub.receive_frame(2, HELLO, 1.5)
    _events(hub)
    hub.handle_timer(1.9)
    assert hub.links_to_close() == []
    hub.handle_timer(2.0)
    assert hub.links_to_close() == [LinkClose(1, ServerDisconnectReason.PROTOCOL_VIOLATION)]
    hub.handle_timer(3.5)
    assert hub.links_to_close() == []  # link 2 said HELLO in time
    assert hub.links == 1


def test_close_disconnect_and_limits() -> None:
    hub = _hub(max_links=2)
    cid = _connected(hub, 1)
    hub.open_link(2, ADDR, 0.0)
    hub.open_link(3, ADDR, 0.0)
    assert hub.links_to_close() == [LinkClose(3, ServerDisconnectReason.SERVER_DISCONNECTED)]
    assert hub.links_refused == 1
    assert hub.disconnect(cid) is True
    assert hub.disconnect(cid) is False
    (gone,) = _events(hub)
    assert isinstance(gone, ClientDisconnected)
    assert gone.reason == ServerDisconnectReason.SERVER_DISCONNECTED
    assert hub.links_to_close() == [LinkClose(1, ServerDisconnectReason.SERVER_DISCONNECTED)]
    hub.close_link(1, 1.0)  # the driver reports the close it was asked for: nothing more
    assert _events(hub) == []
    cid2 = _connected(hub, 5)
    hub.close_link(5, 2.0)
    assert [e.connection_id for e in _events(hub)] == [cid2]  # type: ignore[attr-defined]
    with pytest.raises(LocalProtocolError):
        hub.send(LINK_CONNECTION_BASE + 99, RELIABLE, b"x")
    with pytest.raises(LocalProtocolError):
        hub.send(cid2, 7, b"x")
    with pytest.raises(ConfigError):
        _hub(hello_timeout=0.0)
    with pytest.raises(ConfigError):
        _hub(max_links=0)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.binary(max_size=40)), max_size=30))
def test_any_frames_never_raise(frames: list[tuple[int, bytes]]) -> None:
    hub = _hub()
    for link_id in (1, 2, 3):
        hub.open_link(link_id, ADDR, 0.0)
    hub.receive_frame(2, HELLO, 0.0)
    for k, (link_id, data) in enumerate(frames):
        hub.receive_frame(link_id, data, 0.01 * k)
    events = _events(hub)
    connected = sum(isinstance(e, ClientConnected) for e in events)
    left = sum(isinstance(e, ClientDisconnected) for e in events)
    assert connected - left == len(hub.link_connections) <= 3
    assert hub.frames_to_send() is not None


def test_a_physics_server_gives_a_link_a_car_and_snapshots() -> None:
    """The demo's BotServer on a HybridServer: a link joins, drives, receives snapshots."""
    bot = make_server(
        ("127.0.0.1", 40000),
        bots=2,
        rng=random.Random(5),
        start=0.0,
        transport_type=HybridServer,
    )
    hub = bot.server.transport
    assert isinstance(hub, HybridServer)
    hub.open_link(1, ADDR, 0.0)
    hub.receive_frame(1, HELLO, 0.0)
    now = 0.0
    car_id = None
    snapshots: list[Snapshot] = []
    while now < 2.0:
        due = bot.next_timer()
        now = max(now, due if due is not None else now + 0.01)
        bot.handle_timer(now)
        bot.datagrams_to_send(now)
        while (event := bot.next_event()) is not None:
            assert isinstance(event, CarJoined)
            assert event.connection_id == LINK_CONNECTION_BASE
        for frame in hub.frames_to_send():
            decoded = decode_frame(frame.data)
            assert isinstance(decoded, LinkMessage)
            message = decode_message(decoded.payload, SNAPSHOT_FORMAT)
            if isinstance(message, Welcome):
                car_id = message.car_id
                event_bytes = encode_message(
                    InputEvent(seq=1, keys=Keys.UP, t=now), SNAPSHOT_FORMAT
                )
                hub.receive_frame(1, encode_frame(LinkMessage(RELIABLE, event_bytes)), now)
            elif isinstance(message, Snapshot):
                assert decoded.channel == UNRELIABLE
                assert frame.droppable
                snapshots.append(message)
    assert car_id == 0
    assert 35 <= len(snapshots) <= 41  # 20 Hz for 2 s
    assert {c.car_id for c in snapshots[-1].cars} == {0, 62, 63}
    mine = next(c for c in snapshots[-1].cars if c.car_id == car_id)
    assert mine.input_seq == 1
    assert mine.state.x > 30.0
