"""Client-side prediction and reconciliation (spec 000 §2.10, issue 13 #7)."""

from __future__ import annotations

import math
import struct
from collections import deque

import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.replication.prediction import (
    BlendConfig,
    BlendKind,
    InputFrame,
    InputServer,
    PredictionClient,
    PredictionConfig,
    ServerReport,
    decode_input_packet,
    decode_server_report,
    encode_input_packet,
    encode_server_report,
    quantize_dt,
    widen_seq,
)
from lagless.wire import DecodeError

State = tuple[float, float]
Move = tuple[int, int]
_MOVE = struct.Struct("<bb")
_STATE = struct.Struct("<dd")
SPEED = 5.0  # m/s per unit of input


class MoveCodec:
    """Input: a velocity command in whole units per axis, two signed bytes."""

    def encode(self, value: Move) -> bytes:
        return _MOVE.pack(*value)

    def decode(self, data: bytes) -> Move:
        if len(data) != _MOVE.size:
            raise DecodeError(f"move is {_MOVE.size} bytes, got {len(data)}")
        x, y = _MOVE.unpack(data)
        return x, y


class StateCodec:
    """State: position as two float64."""

    def encode(self, value: State) -> bytes:
        return _STATE.pack(*value)

    def decode(self, data: bytes) -> State:
        if len(data) != _STATE.size:
            raise DecodeError(f"state is {_STATE.size} bytes, got {len(data)}")
        x, y = _STATE.unpack(data)
        return x, y


def step(state: State, move: Move, dt: float) -> State:
    return state[0] + SPEED * move[0] * dt, state[1] + SPEED * move[1] * dt


def make(
    config: PredictionConfig | None = None,
) -> tuple[PredictionClient[State, Move], InputServer[State, Move]]:
    common = {"step": step, "input_codec": MoveCodec(), "state_codec": StateCodec()}
    client = PredictionClient[State, Move](
        (0.0, 0.0), position=lambda s: s, config=config, **common
    )
    server = InputServer[State, Move]((0.0, 0.0), config=config, **common)
    return client, server


def frame(seq: int, move: Move = (1, 0), dt: float = 0.02) -> InputFrame:
    return InputFrame(seq, dt, _MOVE.pack(*move))


def test_input_packet_round_trip() -> None:
    frames = [frame(65534), frame(65535, (-1, 2), 0.255), frame(65536, (0, 0), 0.0)]
    data = encode_input_packet(frames, max_input_bytes=2)
    assert len(data) == math.ceil((16 + 5 + 3 * (8 + 2 + 16)) / 8)
    decoded = decode_input_packet(data, max_input_bytes=2)
    assert [f.seq for f in decoded] == [65534, 65535, 0]
    assert [f.dt for f in decoded] == [0.02, 0.255, 0.0]
    assert [f.data for f in decoded] == [f.data for f in frames]
    with pytest.raises(DecodeError):
        decode_input_packet(data, max_input_bytes=1)
    with pytest.raises(DecodeError):
        decode_input_packet(data + b"\x00", max_input_bytes=2)
    with pytest.raises(DecodeError):
        decode_input_packet(data[:-1], max_input_bytes=2)


def test_input_packet_rejects_bad_frames() -> None:
    with pytest.raises(LocalProtocolError):
        encode_input_packet([], max_input_bytes=2)
    with pytest.raises(LocalProtocolError):
        encode_input_packet([frame(i) for i in range(33)], max_input_bytes=2)
    with pytest.raises(LocalProtocolError, match="consecutive"):
        encode_input_packet([frame(1), frame(3)], max_input_bytes=2)
    with pytest.raises(LocalProtocolError):
        encode_input_packet([frame(1, dt=0.3)], max_input_bytes=2)
    assert quantize_dt(0.0166) == 0.017
    assert quantize_dt(0.2554) == 0.255
    for bad in (0.2556, -0.001, math.nan):
        with pytest.raises(LocalProtocolError):
            quantize_dt(bad)


def test_server_report_round_trip() -> None:
    for report in (ServerReport(7, 65535, b"abc"), ServerReport(2**32 - 1, None, b"")):
        data = encode_server_report(report, max_state_bytes=16)
        assert decode_server_report(data, max_state_bytes=16) == report
    with pytest.raises(DecodeError):
        decode_server_report(b"\x00\x00\x00", max_state_bytes=16)


def test_widen_seq() -> None:
    assert widen_seq(3, 65534) == 65539
    assert widen_seq(65535, 65536) == 65535
    assert widen_seq(10, 10) == 10
    assert widen_seq(0, -1) == 0


def run_link(
    client: PredictionClient[State, Move],
    server: InputServer[State, Move],
    moves: list[Move],
    *,
    delay_ticks: int,
    lose: set[int] | None = None,
) -> None:
    """One input, one packet and one report per 20-ms tick; both ways ``delay_ticks`` late."""
    up: deque[tuple[int, bytes]] = deque()
    down: deque[tuple[int, bytes]] = deque()
    lose = lose or set()
    dt = 0.02
    for tick in range(len(moves) + 3 * delay_ticks + 2):
        now = tick * dt
        if tick < len(moves):
            client.apply_input(moves[tick], dt, now)
            packet = client.input_packet(now)
            assert packet is not None
            if tick not in lose:
                up.append((tick + delay_ticks, packet))
        while up and up[0][0] <= tick:
            server.receive_packet(up.popleft()[1], now)
        server.tick(now)
        down.append((tick + delay_ticks, server.report(now)))
        while down and down[0][0] <= tick:
            assert client.receive_report(down.popleft()[1], now)


def test_lossless_run_never_mispredicts() -> None:
    client, server = make()
    moves = [(1, 0)] * 10 + [(0, 1)] * 10 + [(-1, -1)] * 10
    run_link(client, server, moves, delay_ticks=5)
    stats = client.statistics()
    assert stats.mispredictions == 0
    assert stats.reports > 0
    assert stats.replayed > 0  # 5 ticks each way: inputs were in flight at every report
    assert stats.pending == 0
    assert client.state == server.state == pytest.approx((0.0, 0.0), abs=1e-12)
    assert client.display_position(10.0) == client.state
    served = server.statistics()
    assert served.inputs_applied == 30
    assert served.inputs_skipped == 0
    assert served.inputs_stale > 0  # every input rode in up to eight packets


def test_redundancy_hides_loss() -> None:
    client, server = make()
    moves = [(1, 0)] * 40
    run_link(client, server, moves, delay_ticks=3, lose={5, 6, 7, 20, 21})
    assert server.statistics().inputs_skipped == 0
    assert server.statistics().inputs_applied == 40
    assert client.statistics().mispredictions == 0
    assert server.state == pytest.approx((40 * 0.02 * SPEED, 0.0))


def test_server_skips_inputs_the_client_gave_up() -> None:
    client, server = make(PredictionConfig(redundancy=2))
    packets = []
    for _ in range(4):
        client.apply_input((1, 0), 0.1, 0.0)
        packets.append(client.input_packet(0.0))
    assert server.receive_packet(packets[-1], 0.4)  # inputs 2 and 3 only
    server.tick(0.4)
    stats = server.statistics()
    assert (stats.inputs_skipped, stats.inputs_applied, server.last_applied) == (2, 2, 3)
    assert server.state == pytest.approx((2 * 0.1 * SPEED, 0.0))
    assert server.receive_packet(packets[0], 0.5)  # reordered: too late now
    assert server.statistics().inputs_stale == 1
    assert client.receive_report(server.report(0.5), 0.5)
    got = client.statistics()
    assert got.mispredictions == 1
    assert got.misprediction_error_max == pytest.approx(2 * 0.1 * SPEED)
    assert client.state == server.state


def test_reordered_packets_before_the_tick_fill_the_gap() -> None:
    _, server = make(PredictionConfig(redundancy=1))
    assert server.receive_packet(encode_input_packet([frame(1)], max_input_bytes=16), 0.0)
    assert server.receive_packet(encode_input_packet([frame(0)], max_input_bytes=16), 0.0)
    server.tick(0.0)
    assert server.last_applied == 1
    stats = server.statistics()
    assert (stats.inputs_applied, stats.inputs_skipped) == (2, 0)


def test_duplicates_counted_once_applied() -> None:
    _, server = make()
    data = encode_input_packet([frame(0), frame(1)], max_input_bytes=16)
    assert server.receive_packet(data, 0.0)
    assert server.receive_packet(data, 0.0)
    server.tick(0.0)
    stats = server.statistics()
    assert (stats.inputs_duplicate, stats.inputs_applied, stats.packets) == (2, 2, 2)
    assert server.receive_packet(data, 0.1)
    assert server.statistics().inputs_stale == 2


def test_far_ahead_inputs_dropped() -> None:
    _, server = make(PredictionConfig(max_ahead=10))
    assert server.receive_packet(encode_input_packet([frame(20)], max_input_bytes=16), 0.0)
    assert server.statistics().inputs_too_far == 1
    server.tick(0.0)
    assert server.state == (0.0, 0.0)
    assert server.receive_packet(encode_input_packet([frame(0)], max_input_bytes=16), 0.1)
    server.tick(0.1)  # the far packet made the server skip nothing
    assert (server.last_applied, server.statistics().inputs_skipped) == (0, 0)


def test_malformed_packet_changes_nothing() -> None:
    _, server = make()
    bad_input = encode_input_packet([InputFrame(0, 0.02, b"\x01")], max_input_bytes=16)
    for data in (b"", b"\xff" * 40, bad_input):
        assert not server.receive_packet(data, 0.0)
    server.tick(0.0)
    stats = server.statistics()
    assert stats.packets_malformed == 3
    assert (stats.packets, stats.inputs_applied, server.last_packet_time) == (0, 0, None)


def test_stale_and_impossible_reports_ignored() -> None:
    client, _ = make()
    client.apply_input((1, 0), 0.1, 0.0)
    state = StateCodec().encode((9.0, 9.0))
    assert client.receive_report(
        encode_server_report(ServerReport(5, 0, state), max_state_bytes=64), 0.1
    )
    assert not client.receive_report(
        encode_server_report(ServerReport(4, 0, state), max_state_bytes=64), 0.1
    )
    assert not client.receive_report(
        encode_server_report(ServerReport(6, 7, state), max_state_bytes=64), 0.1
    )
    assert not client.receive_report(b"\x01", 0.1)
    assert not client.receive_report(
        encode_server_report(ServerReport(8, 0, b"x"), max_state_bytes=64), 0.1
    )
    stats = client.statistics()
    assert (stats.reports, stats.reports_stale, stats.reports_malformed) == (1, 1, 3)
    assert client.state == (9.0, 9.0)


def test_correction_is_blended_exponentially() -> None:
    client, server = make(PredictionConfig(blend=BlendConfig(time=0.1)))
    client.apply_input((1, 0), 0.1, 0.0)
    server.receive_packet(client.input_packet(0.0) or b"", 0.05)
    server.tick(0.05)
    server.state = (server.state[0], 2.0)  # knocked sideways on the server
    before = client.display_position(0.1)
    assert client.receive_report(server.report(0.1), 0.1)
    assert client.display_position(0.1) == pytest.approx(before)  # no jump on the display
    assert client.state == pytest.approx((0.5, 2.0))
    assert client.offset(0.2) == pytest.approx((0.0, -2.0 * math.exp(-1.0)))
    assert client.display_position(5.0) == pytest.approx(client.state)
    stats = client.statistics()
    assert stats.mispredictions == 1
    assert stats.misprediction_error_mean == pytest.approx(2.0)


def test_blend_kinds() -> None:
    assert BlendConfig(kind=BlendKind.LINEAR, time=0.2).remaining(0.05) == pytest.approx(0.75)
    assert BlendConfig(kind=BlendKind.LINEAR, time=0.2).remaining(0.3) == 0.0
    assert BlendConfig(kind=BlendKind.SNAP).remaining(0.0) == 0.0
    assert BlendConfig(time=0.1).remaining(0.1) == pytest.approx(math.exp(-1.0))
    client, server = make(PredictionConfig(blend=BlendConfig(snap_distance=1.0)))
    server.state = (3.0, 0.0)
    server.tick(0.0)
    assert client.receive_report(server.report(0.0), 0.0)
    assert client.display_position(0.0) == (3.0, 0.0)
    assert client.statistics().snaps == 1


def test_pending_overflow_drops_oldest() -> None:
    client, _ = make(PredictionConfig(redundancy=2, max_pending=4))
    for _ in range(6):
        client.apply_input((1, 0), 0.01, 0.0)
    stats = client.statistics()
    assert (stats.pending, stats.pending_overflows, stats.inputs) == (4, 2, 6)
    packet = client.input_packet(0.0)
    assert packet is not None
    assert [f.seq for f in decode_input_packet(packet, max_input_bytes=16)] == [4, 5]


def test_sequence_wraps() -> None:
    client, server = make(PredictionConfig(redundancy=4))
    moves = 70_000
    for i in range(moves):
        client.apply_input((1, 0), 0.001, 0.0)
        if i % 4 == 3:
            server.receive_packet(client.input_packet(0.0) or b"", 0.0)
            server.tick(0.0)
            assert client.receive_report(server.report(0.0), 0.0)
    assert server.last_applied == moves - 1
    assert client.statistics().mispredictions == 0
    assert client.statistics().pending == 0
    assert server.state == pytest.approx((moves * 0.001 * SPEED, 0.0))


def test_config_validation() -> None:
    with pytest.raises(ConfigError):
        PredictionConfig(redundancy=0)
    with pytest.raises(ConfigError):
        PredictionConfig(redundancy=8, max_pending=4)
    with pytest.raises(ConfigError):
        BlendConfig(time=0.0)
    with pytest.raises(ConfigError):
        BlendConfig(snap_distance=0.0)
    client, _ = make(PredictionConfig(max_input_bytes=1))
    with pytest.raises(LocalProtocolError, match="max_input_bytes"):
        client.apply_input((1, 1), 0.01, 0.0)
    assert client.input_packet(0.0) is None


def test_on_input_sees_each_applied_state() -> None:
    seen: list[tuple[int, State]] = []
    server = InputServer[State, Move](
        (0.0, 0.0),
        step=step,
        input_codec=MoveCodec(),
        state_codec=StateCodec(),
        on_input=lambda seq, state: seen.append((seq, state)),
    )
    data = encode_input_packet([frame(0), frame(1, (0, 1))], max_input_bytes=16)
    assert server.receive_packet(data, 0.0)
    server.tick(0.0)
    assert seen == [(0, pytest.approx((0.1, 0.0))), (1, pytest.approx((0.1, 0.1)))]
