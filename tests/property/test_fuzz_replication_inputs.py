"""Fuzz the prediction codecs and their receivers (DESIGN.md "Bad input", issue 13 #7).

``decode_input_packet`` and ``decode_server_report`` raise only ``DecodeError``;
``InputServer.receive_packet`` and ``PredictionClient.receive_report`` never raise, count what they
drop and buffer at most ``max_ahead`` inputs whatever they are fed.
"""

from __future__ import annotations

import contextlib
import struct

from hypothesis import given
from hypothesis import strategies as st

from lagless.replication.prediction import (
    MAX_INPUTS_PER_PACKET,
    InputFrame,
    InputServer,
    PredictionClient,
    PredictionConfig,
    ServerReport,
    decode_input_packet,
    decode_server_report,
    encode_input_packet,
    encode_server_report,
)
from lagless.wire import DecodeError
from tests.property.fuzzing import FUZZ, fuzz_bytes

MAX_INPUT = 4
MAX_STATE = 16
_STATE = struct.Struct("<d")


class ByteInput:
    """An input is one signed byte."""

    def encode(self, value: int) -> bytes:
        return struct.pack("<b", value)

    def decode(self, data: bytes) -> int:
        if len(data) != 1:
            raise DecodeError("input is one byte")
        return int(struct.unpack("<b", data)[0])


class FloatState:
    """A state is one float64."""

    def encode(self, value: float) -> bytes:
        return _STATE.pack(value)

    def decode(self, data: bytes) -> float:
        if len(data) != _STATE.size:
            raise DecodeError("state is 8 bytes")
        return float(_STATE.unpack(data)[0])


def step(state: float, move: int, dt: float) -> float:
    return state + move * dt


@st.composite
def input_packets(draw: st.DrawFn) -> bytes:
    first = draw(st.integers(0, 2**20))
    count = draw(st.integers(1, MAX_INPUTS_PER_PACKET))
    frames = [
        InputFrame(
            first + i,
            draw(st.integers(0, 255)) / 1000.0,
            draw(st.binary(max_size=MAX_INPUT)),
        )
        for i in range(count)
    ]
    return encode_input_packet(frames, max_input_bytes=MAX_INPUT)


reports = st.builds(
    ServerReport,
    st.integers(0, 2**32 - 1),
    st.one_of(st.none(), st.integers(0, 2**16 - 1)),
    st.binary(max_size=MAX_STATE),
).map(lambda r: encode_server_report(r, max_state_bytes=MAX_STATE))


@FUZZ
@given(fuzz_bytes(input_packets()))
def test_input_packet_decoder_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        frames = decode_input_packet(data, max_input_bytes=MAX_INPUT)
        assert 1 <= len(frames) <= MAX_INPUTS_PER_PACKET
        assert all(0 <= f.seq < 2**16 and 0.0 <= f.dt <= 0.255 for f in frames)
        assert all(len(f.data) <= MAX_INPUT for f in frames)


@FUZZ
@given(fuzz_bytes(reports))
def test_server_report_decoder_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        report = decode_server_report(data, max_state_bytes=MAX_STATE)
        assert len(report.state) <= MAX_STATE


@FUZZ
@given(st.lists(fuzz_bytes(input_packets()), min_size=1, max_size=8))
def test_input_server_never_raises(packets: list[bytes]) -> None:
    config = PredictionConfig(max_input_bytes=MAX_INPUT, max_state_bytes=MAX_STATE, max_ahead=64)
    server = InputServer[float, int](
        0.0, step=step, input_codec=ByteInput(), state_codec=FloatState(), config=config
    )
    for i, data in enumerate(packets):
        server.receive_packet(data, float(i))
        server.tick(float(i))
        assert server.buffered <= config.max_ahead + 1  # bounded memory
    stats = server.statistics()
    assert stats.packets + stats.packets_malformed == len(packets)


@FUZZ
@given(st.lists(fuzz_bytes(reports), min_size=1, max_size=8))
def test_prediction_client_never_raises(datagrams: list[bytes]) -> None:
    config = PredictionConfig(max_input_bytes=MAX_INPUT, max_state_bytes=MAX_STATE)
    client = PredictionClient[float, int](
        0.0,
        step=step,
        position=lambda s: (s,),
        input_codec=ByteInput(),
        state_codec=FloatState(),
        config=config,
    )
    for i, data in enumerate(datagrams):
        client.apply_input(1, 0.01, float(i))
        client.receive_report(data, float(i))
    stats = client.statistics()
    assert stats.reports + stats.reports_stale + stats.reports_malformed == len(datagrams)
