"""The WebSocket link frames: layouts, round trips, and a decoder that never raises (fuzzed)."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.web.frames import (
    LINK_VERSION,
    MAX_FRAME,
    MAX_PAYLOAD,
    Hello,
    LinkMessage,
    Ping,
    Pong,
    decode_frame,
    encode_frame,
)

finite = st.floats(allow_nan=False, allow_infinity=False)
frames = st.one_of(
    st.builds(Hello, st.integers(0, 2**32 - 1), st.integers(0, 255)),
    st.builds(LinkMessage, st.integers(0, 255), st.binary(min_size=1, max_size=MAX_PAYLOAD)),
    st.builds(Ping, finite),
    st.builds(Pong, finite, finite),
)


def test_layouts() -> None:
    assert encode_frame(Hello(0x1A61E55D, LINK_VERSION)).hex() == "015de5611a01"
    assert encode_frame(LinkMessage(3, b"\xab")) == b"\x02\x03\xab"
    assert encode_frame(Ping(1.5)) == b"\x03" + struct.pack("<d", 1.5)
    assert encode_frame(Pong(1.5, -2.0)) == b"\x04" + struct.pack("<dd", 1.5, -2.0)


@given(frames)
def test_round_trip(frame: Hello | LinkMessage | Ping | Pong) -> None:
    data = encode_frame(frame)
    assert len(data) <= MAX_FRAME
    assert decode_frame(data) == frame


@given(st.binary(max_size=2 * MAX_FRAME))
def test_decoder_never_raises(data: bytes) -> None:
    frame = decode_frame(data)
    if frame is not None:
        assert encode_frame(frame) == data


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        b"\x05" + bytes(8),
        b"\x01\x00\x00\x00\x00",  # HELLO one byte short
        b"\x02\x03",  # MESSAGE without payload
        b"\x02\x03" + bytes(MAX_PAYLOAD + 1),
        b"\x03" + struct.pack("<d", math.inf),
        b"\x03" + bytes(9),  # PING one byte long
        b"\x04" + struct.pack("<dd", 0.0, math.nan),
    ],
)
def test_bad_frames_are_none(data: bytes) -> None:
    assert decode_frame(data) is None


@pytest.mark.parametrize(
    "frame",
    [
        LinkMessage(0, b""),
        LinkMessage(0, bytes(MAX_PAYLOAD + 1)),
        LinkMessage(256, b"x"),
        Ping(math.nan),
        Pong(0.0, math.inf),
        Hello(2**32, 1),
    ],
)
def test_encoder_refuses_out_of_range(frame: Hello | LinkMessage | Ping | Pong) -> None:
    with pytest.raises(LocalProtocolError):
        encode_frame(frame)
