"""Buffer: byte-aligned little-endian codecs, LEB128 varints, only DecodeError on bad bytes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.wire import Buffer, DecodeError, varint_size

U64 = st.integers(0, 2**64 - 1)

FIELDS = st.one_of(
    st.tuples(st.just("u8"), st.integers(0, 255)),
    st.tuples(st.just("u16"), st.integers(0, 2**16 - 1)),
    st.tuples(st.just("u32"), st.integers(0, 2**32 - 1)),
    st.tuples(st.just("u64"), U64),
    st.tuples(st.just("varint"), U64),
    st.tuples(st.just("f64"), st.floats(allow_nan=False)),
    st.tuples(st.just("bytes"), st.binary(max_size=40)),
)


def test_little_endian_layout() -> None:
    buf = Buffer()
    buf.push_u8(0xAB)
    buf.push_u16(0x0102)
    buf.push_u32(0x03040506)
    buf.push_u64(0x0708090A0B0C0D0E)
    buf.push_f32(1.0)
    assert buf.data.hex(" ") == "ab 02 01 06 05 04 03 0e 0d 0c 0b 0a 09 08 07 00 00 80 3f"
    assert buf.tell() == 19


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16384, "808001"),
        (2**64 - 1, "ffffffffffffffffff01"),
    ],
)
def test_varint_vectors(value: int, encoded: str) -> None:
    buf = Buffer()
    buf.push_varint(value)
    assert buf.data.hex() == encoded
    assert varint_size(value) == len(encoded) // 2
    assert Buffer(data=bytes.fromhex(encoded)).pull_varint() == value


@pytest.mark.parametrize(
    "encoded",
    [
        "8000",  # 0 in two bytes
        "ff00",  # 127 with a trailing zero group
        "ffffffffffffffffff02",  # 2**64 exactly
        "ffffffffffffffffff7f",  # far beyond 64 bits
        "8080808080808080808001",  # 11 bytes
        "80",  # truncated
        "",
    ],
)
def test_varint_overlong(encoded: str) -> None:
    with pytest.raises(DecodeError):
        Buffer(data=bytes.fromhex(encoded)).pull_varint()


@given(st.lists(FIELDS, max_size=20))
def test_round_trip(fields: list[tuple[str, object]]) -> None:
    writer = Buffer()
    for kind, value in fields:
        getattr(writer, f"push_{kind}")(value)
    reader = Buffer(data=writer.data)
    for kind, value in fields:
        if kind == "bytes":
            assert isinstance(value, bytes)
            assert reader.pull_bytes(len(value)) == value
        else:
            assert getattr(reader, f"pull_{kind}")() == value
    assert reader.eof()
    assert reader.remaining == 0


@given(st.floats(width=32))
def test_f32_round_trip_bitwise(value: float) -> None:
    buf = Buffer()
    buf.push_f32(value)
    back = Buffer(data=buf.data).pull_f32()
    assert back == value or (math.isnan(back) and math.isnan(value))


@given(U64)
def test_varint_size_matches_encoding(value: int) -> None:
    buf = Buffer()
    buf.push_varint(value)
    assert len(buf.data) == varint_size(value)


@given(st.binary(max_size=64), st.lists(st.sampled_from(list(range(9))), max_size=30))
def test_arbitrary_bytes_only_decode_error(data: bytes, ops: list[int]) -> None:
    buf = Buffer(data=data)
    pulls = [
        buf.pull_u8,
        buf.pull_u16,
        buf.pull_u32,
        buf.pull_u64,
        buf.pull_f32,
        buf.pull_f64,
        buf.pull_varint,
        lambda: buf.pull_bytes(3),
        lambda: buf.pull_bytes(0),
    ]
    for op in ops:
        before = buf.tell()
        try:
            pulls[op]()
        except DecodeError:
            assert buf.tell() <= len(data)
            if op != 6:  # a varint may consume bytes before failing
                assert buf.tell() == before
        assert 0 <= buf.remaining <= len(data)


def test_pull_past_end() -> None:
    buf = Buffer(data=b"\x01\x02\x03")
    with pytest.raises(DecodeError, match="truncated"):
        buf.pull_u32()
    assert buf.tell() == 0
    assert buf.pull_u16() == 0x0201
    with pytest.raises(DecodeError):
        buf.pull_bytes(2)
    assert buf.pull_bytes(1) == b"\x03"
    assert buf.eof()


def test_push_errors() -> None:
    buf = Buffer(capacity=4)
    with pytest.raises(LocalProtocolError, match="u8"):
        buf.push_u8(256)
    with pytest.raises(LocalProtocolError, match="u16"):
        buf.push_u16(-1)
    with pytest.raises(LocalProtocolError, match="varint"):
        buf.push_varint(2**64)
    with pytest.raises(LocalProtocolError, match="f32"):
        buf.push_f32(1e300)
    buf.push_u32(7)
    with pytest.raises(LocalProtocolError, match="capacity"):
        buf.push_u8(1)
    with pytest.raises(LocalProtocolError, match="length"):
        buf.pull_bytes(-1)
    with pytest.raises(LocalProtocolError, match="capacity"):
        Buffer(capacity=1, data=b"ab")
    assert buf.data == b"\x07\x00\x00\x00"
    assert buf.capacity == 4


def test_fixed_capacity_fills_exactly() -> None:
    buf = Buffer(capacity=3)
    assert buf.data == b""
    buf.push_u16(0xFFFF)
    buf.push_u8(1)
    assert buf.data == b"\xff\xff\x01"


def test_seek_back_and_patch() -> None:
    buf = Buffer()
    buf.push_u16(0)  # length placeholder
    buf.push_bytes(b"payload")
    end = buf.tell()
    buf.seek(0)
    buf.push_u16(end - 2)
    assert buf.data == b"\x07\x00payload"
    buf.seek(end)
    assert buf.eof()
    with pytest.raises(LocalProtocolError, match="seek"):
        buf.seek(end + 1)
    with pytest.raises(LocalProtocolError, match="seek"):
        buf.seek(-1)


def test_reader_with_initial_data_can_append() -> None:
    buf = Buffer(data=b"\x01")
    assert buf.pull_u8() == 1
    buf.push_u8(2)
    assert buf.data == b"\x01\x02"
    assert buf.remaining == 0
