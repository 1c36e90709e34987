"""A real ``lagless demo --server --metrics`` process with a player over UDP (issue 16 part 3):
the scrape shows the live transport (connections, traffic, RTT buckets, drops) beside players,
bots and snapshots; SIGTERM tells the player ``server shutting down`` (a physics `Goodbye`)
before its disconnect, and the server exits 143. The `Goodbye` decoder is fuzzed."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.demo.arena import SNAPSHOT_FORMAT
from lagless.demo.net import UdpPlayer
from lagless.demo.session import hud_lines
from lagless.errors import LocalProtocolError
from lagless.physics.codec import (
    MAX_GOODBYE_BYTES,
    Goodbye,
    Welcome,
    decode_message,
    encode_message,
)
from lagless.transport import DropReason
from lagless.wire import DecodeError
from tests.ops.helpers import JsonServer, scrape
from tests.property.fuzzing import FUZZ, fuzz_bytes

REASON = "server shutting down"


def _play(player: UdpPlayer, until: Callable[[], bool], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        player.advance()
        player.wait(0.01)


def test_demo_server_exports_its_transport_and_says_goodbye_on_sigterm(
    json_server: Callable[..., JsonServer],
) -> None:
    server = json_server(
        "demo", "--server", "--bots", "2", "--host", "127.0.0.1", "-p", "0", "--metrics",
        "127.0.0.1:0", "--log-format", "json",
    )  # fmt: skip
    host, port = str(server.wait_event("serving")["address"]).rsplit(":", 1)
    metrics_at = str(server.wait_event("metrics")["address"])
    player = UdpPlayer((host, int(port)), seed=3, model="dr+0.15rtt", autopilot=True)
    try:
        _play(player, lambda: player.client.snapshots >= 10, 10.0)
        server.wait_event("status")  # the once-a-second figures too
        live = scrape(metrics_at)
        server.process.send_signal(signal.SIGTERM)
        _play(player, lambda: player.client.ended is not None, 10.0)
        status = player.status(0)
    finally:
        player.close()
    code, err = server.finish()

    assert live["lagless_connections", (("kind", "lagless"),)] == 1
    assert live["lagless_connections", (("kind", "plain"),)] == 0
    assert live["lagless_players", ()] == 1
    assert live["lagless_bots", ()] == 2
    assert live["lagless_snapshots_total", ()] >= 10
    assert live["lagless_ticks_total", ()] > 30  # 60 Hz for more than half a second
    assert live["lagless_sent_bytes_total", ()] > 1000
    assert live["lagless_received_bytes_total", ()] > 50
    assert live["lagless_sent_packets_total", ()] >= 10
    assert live["lagless_received_packets_total", ()] >= 2
    assert live["lagless_rtt_seconds_gcount", ()] == 1
    assert live["lagless_rtt_seconds_bucket", (("le", "+Inf"),)] == 1
    assert live["lagless_rtt_seconds_bucket", (("le", "1.0"),)] == 1
    assert live["lagless_loss_ratio_gcount", ()] == 1
    drops = {k[1][0][1] for k in live if k[0] == "lagless_dropped_packets_total"}
    assert drops == {reason.value for reason in DropReason}
    assert 0 < live["lagless_tick_seconds_recent", (("stat", "avg"),)] < 0.1

    assert player.client.goodbye == REASON
    assert player.client.ended == "server_disconnected"
    assert status.ended == REASON
    assert f"ended: {REASON}" in hud_lines(status, None, keys_help=False)[1]
    assert code == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    (shutdown,) = server.events("shutdown")
    assert (shutdown["clients"], shutdown["reason"]) == (1, REASON)
    (summary,) = server.events("summary")
    assert (summary["players"], summary["signal"]) == (1, 15)


goodbyes = st.text(max_size=40).filter(lambda r: len(r.encode("utf-8")) <= MAX_GOODBYE_BYTES)
encoded = goodbyes.map(lambda r: encode_message(Goodbye(reason=r), SNAPSHOT_FORMAT))


@FUZZ
@given(fuzz_bytes(encoded))
def test_goodbye_decoder_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        message = decode_message(data, SNAPSHOT_FORMAT)
        assert encode_message(message, SNAPSHOT_FORMAT) == data
        if isinstance(message, Goodbye):
            assert len(message.reason.encode("utf-8")) <= MAX_GOODBYE_BYTES


def test_goodbye_bounds() -> None:
    longest = Goodbye(reason="é" * (MAX_GOODBYE_BYTES // 2))
    data = encode_message(longest, SNAPSHOT_FORMAT)
    assert decode_message(data, SNAPSHOT_FORMAT) == longest
    assert len(data) == 2 + MAX_GOODBYE_BYTES  # 2-bit kind and 7-bit length, padded
    with pytest.raises(LocalProtocolError):
        encode_message(Goodbye(reason="x" * (MAX_GOODBYE_BYTES + 1)), SNAPSHOT_FORMAT)
    not_utf8 = bytearray(encode_message(Goodbye(reason="ab"), SNAPSHOT_FORMAT))
    not_utf8[2] |= 0x01  # bit 7 of the first text byte (bits 9..16, LSB first): 'a' -> 0xE1
    with pytest.raises(DecodeError, match="UTF-8"):
        decode_message(bytes(not_utf8), SNAPSHOT_FORMAT)
    assert decode_message(encode_message(Welcome(car_id=3), SNAPSHOT_FORMAT), SNAPSHOT_FORMAT)
