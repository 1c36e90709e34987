"""BitWriter / BitReader / BitCounter: one serialize() writes, reads and measures (yojimbo)."""

from __future__ import annotations

import contextlib
import math
import struct
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.wire import (
    BitCounter,
    BitReader,
    BitStream,
    BitWriter,
    Buffer,
    DecodeError,
    measure_message,
    pack_bit_columns,
    read_message,
    unpack_bit_columns,
    write_message,
)

X_LO, X_HI, X_RES = -500.0, 500.0, 0.01


@dataclass
class Composite:
    """A test message with every field kind, a conditional field and a variable-length list."""

    tick: int = 0
    entity: int = 0
    alive: bool = False
    dx: int = 0
    x: float = 0.0
    heading: float = 0.0
    name: bytes = b""
    count: int = 0
    items: list[int] = field(default_factory=list)
    wide: int = 0

    def serialize(self, stream: BitStream) -> None:
        self.tick = stream.serialize_uint(self.tick, 32)
        self.entity = stream.serialize_range(self.entity, 0, 1023)
        self.alive = stream.serialize_bool(self.alive)
        if self.alive:
            self.dx = stream.serialize_int(self.dx, 12)
        self.x = stream.serialize_float(self.x, X_LO, X_HI, X_RES)
        self.heading = stream.serialize_float32(self.heading)
        self.name = stream.serialize_bytes(self.name, 16)
        stream.align()
        self.count = stream.serialize_varint(self.count)
        n = stream.serialize_range(len(self.items), 0, 8)
        if stream.is_reading:
            self.items = [0] * n
        for i in range(n):
            self.items[i] = stream.serialize_bits(self.items[i], 5)
        self.wide = stream.serialize_bits(self.wide, 64)


@st.composite
def composites(draw: st.DrawFn) -> Composite:
    alive = draw(st.booleans())
    return Composite(
        tick=draw(st.integers(0, 2**32 - 1)),
        entity=draw(st.integers(0, 1023)),
        alive=alive,
        dx=draw(st.integers(-2048, 2047)) if alive else 0,
        x=draw(st.floats(X_LO - 10, X_HI + 10)),
        heading=draw(st.floats(width=32, allow_nan=False)),
        name=draw(st.binary(max_size=16)),
        count=draw(st.integers(0, 2**64 - 1)),
        items=draw(st.lists(st.integers(0, 31), max_size=8)),
        wide=draw(st.integers(0, 2**64 - 1)),
    )


FIELD = st.integers(0, 64).flatmap(lambda b: st.tuples(st.integers(0, (1 << b) - 1), st.just(b)))


@given(composites())
def test_composite_round_trip(msg: Composite) -> None:
    original_x = msg.x
    data = write_message(msg)  # the writer stores the receiver's view back into msg
    assert abs(msg.x - min(max(original_x, X_LO), X_HI)) <= X_RES / 2 + 1e-9
    assert read_message(Composite, data) == msg
    assert write_message(msg) == data


@given(composites())
def test_measure_equals_write(msg: Composite) -> None:
    assert measure_message(msg) == len(write_message(msg))
    counter = BitCounter()
    writer = BitWriter()
    msg.serialize(counter)
    msg.serialize(writer)
    assert counter.bits_written == writer.bits_written == writer.bits_processed
    assert counter.bytes_written == writer.bytes_written == len(writer.getvalue())


@given(st.lists(FIELD, max_size=40))
def test_bit_order_definition(fields: list[tuple[int, int]]) -> None:
    # Stream bit k is bit k % 8 of byte k // 8; each value goes in LSB first.
    writer = BitWriter()
    expected = 0
    offset = 0
    for value, bits in fields:
        assert writer.serialize_bits(value, bits) == value
        expected |= value << offset
        offset += bits
    assert writer.getvalue() == expected.to_bytes((offset + 7) // 8, "little")
    reader = BitReader(writer.getvalue())
    assert [reader.serialize_bits(0, bits) for _, bits in fields] == [v for v, _ in fields]
    assert reader.bits_read == offset
    assert reader.bits_remaining == -offset % 8


def test_bit_order() -> None:
    writer = BitWriter()
    writer.serialize_bits(1, 1)
    writer.serialize_bits(0, 1)
    writer.serialize_bits(0xF, 4)
    writer.serialize_bits(0x3, 2)
    writer.serialize_bits(0x1234, 16)
    writer.serialize_bool(True)
    assert writer.getvalue().hex() == "fd341201"
    assert writer.bits_written == 25


def test_int_twos_complement() -> None:
    writer = BitWriter()
    for value in (-1, -128, 127, 0):
        writer.serialize_int(value, 8)
    writer.serialize_int(-(2**63), 64)
    writer.serialize_int(-1, 1)
    assert writer.getvalue().hex() == "ff807f00" + "0000000000000080" + "01"
    reader = BitReader(writer.getvalue())
    assert [reader.serialize_int(0, 8) for _ in range(4)] == [-1, -128, 127, 0]
    assert reader.serialize_int(0, 64) == -(2**63)
    assert reader.serialize_int(0, 1) == -1
    for bad, bits in ((128, 8), (-129, 8), (1, 1)):
        with pytest.raises(LocalProtocolError, match="signed"):
            BitWriter().serialize_int(bad, bits)


@given(st.integers(0, 2**64 - 1))
def test_varint_matches_buffer(value: int) -> None:
    writer = BitWriter()
    writer.serialize_varint(value)
    buf = Buffer()
    buf.push_varint(value)
    assert writer.getvalue() == buf.data
    counter = BitCounter()
    counter.serialize_varint(value)
    assert counter.bytes_written == len(buf.data)
    # Unaligned: one flag bit first, then the varint.
    writer = BitWriter()
    writer.serialize_bool(True)
    writer.serialize_varint(value)
    reader = BitReader(writer.getvalue())
    assert reader.serialize_bool(False)
    assert reader.serialize_varint(0) == value


@pytest.mark.parametrize("encoded", ["8000", "ffffffffffffffffff02", "8080808080808080808001"])
def test_varint_reader_rejects_overlong(encoded: str) -> None:
    with pytest.raises(DecodeError):
        BitReader(bytes.fromhex(encoded)).serialize_varint(0)


def test_range_bits_and_zero_width() -> None:
    counter = BitCounter()
    counter.serialize_range(50, 0, 100)  # spec 004 §3.3.1: 0..100 needs 7 bits
    assert counter.bits_written == 7
    counter.serialize_range(2047, 0, 2047)  # spec 004 §4.4.2: writeInt(v, 2047) is 11 bits
    assert counter.bits_written == 18
    counter.serialize_range(5, 5, 5)
    assert counter.bits_written == 18
    counter.serialize_range(-3, -4, 3)
    assert counter.bits_written == 21
    reader = BitReader(b"")
    assert reader.serialize_range(0, 5, 5) == 5


def test_float_bits_and_counter_value() -> None:
    counter = BitCounter()
    writer = BitWriter()
    for stream in (counter, writer):
        assert stream.serialize_float(123.456, 0.0, 1000.0, 0.01) == pytest.approx(123.46)
        assert stream.serialize_float(-60.0, -50.0, 50.0, 0.01) == -50.0
        assert stream.serialize_float(math.inf, -50.0, 50.0, 0.01) == 50.0
        assert stream.serialize_float32(0.1) == struct.unpack("<f", struct.pack("<f", 0.1))[0]
    assert counter.bits_written == writer.bits_written == 17 + 14 + 14 + 32


@given(st.floats(X_LO, X_HI), st.booleans())
def test_float_error_bound(value: float, misalign: bool) -> None:
    writer = BitWriter()
    if misalign:
        writer.serialize_bool(True)
    sent = writer.serialize_float(value, X_LO, X_HI, X_RES)
    reader = BitReader(writer.getvalue())
    if misalign:
        reader.serialize_bool(False)
    received = reader.serialize_float(0.0, X_LO, X_HI, X_RES)
    assert received == sent
    assert abs(received - value) <= X_RES / 2 + 1e-9


@given(st.integers(0, 2**32 - 1))
def test_float32_bitwise(raw: int) -> None:
    value = struct.unpack("<f", struct.pack("<I", raw))[0]
    writer = BitWriter()
    writer.serialize_float32(value)
    back = BitReader(writer.getvalue()).serialize_float32(0.0)
    if math.isnan(value):
        assert math.isnan(back)
    else:
        assert struct.pack("<f", back) == struct.pack("<I", raw)


def test_writer_rejects_bad_values() -> None:
    writer = BitWriter()
    with pytest.raises(LocalProtocolError):
        writer.serialize_bits(8, 3)
    with pytest.raises(LocalProtocolError):
        writer.serialize_bits(-1, 3)
    with pytest.raises(LocalProtocolError):
        writer.serialize_bits(0, 65)
    with pytest.raises(LocalProtocolError):
        writer.serialize_uint(0, 0)
    with pytest.raises(LocalProtocolError, match=r"\[0, 100\]"):
        writer.serialize_range(101, 0, 100)
    with pytest.raises(LocalProtocolError, match="range"):
        writer.serialize_range(0, 1, 0)
    with pytest.raises(LocalProtocolError, match="varint"):
        writer.serialize_varint(-1)
    with pytest.raises(LocalProtocolError, match="NaN"):
        writer.serialize_float(math.nan, 0.0, 1.0, 0.1)
    with pytest.raises(LocalProtocolError, match="resolution"):
        writer.serialize_float(0.0, 0.0, 1.0, 0.0)
    with pytest.raises(LocalProtocolError, match="bits"):
        writer.serialize_float(0.0, 0.0, 1e30, 1e-30)
    with pytest.raises(LocalProtocolError, match="float32"):
        writer.serialize_float32(1e300)
    with pytest.raises(LocalProtocolError, match=r"\[0, 4\]"):
        writer.serialize_bytes(b"12345", 4)
    with pytest.raises(LocalProtocolError, match="max_len"):
        writer.serialize_bytes(b"", -1)
    assert writer.bits_written == 0
    counter = BitCounter()
    with pytest.raises(LocalProtocolError):
        counter.serialize_bits(8, 3)
    with pytest.raises(LocalProtocolError, match=r"\[0, 100\]"):
        counter.serialize_range(101, 0, 100)


def test_reader_rejects_out_of_range() -> None:
    with pytest.raises(DecodeError, match="outside"):
        BitReader(b"\x7f").serialize_range(0, 0, 100)
    with pytest.raises(DecodeError, match="exceeds"):
        BitReader(b"\xff\xff\xff").serialize_float(0.0, 0.0, 1000.0, 0.01)
    reader = BitReader(b"\x02")
    reader.serialize_bool(False)
    with pytest.raises(DecodeError, match="padding"):
        reader.align()
    with pytest.raises(DecodeError, match=r"\[0, 4\]"):
        BitReader(b"\x07\xff\xff").serialize_bytes(b"", 4)
    with pytest.raises(LocalProtocolError, match="bits"):
        BitReader(bytes(20)).serialize_bits(0, 65)


def test_reader_truncation() -> None:
    reader = BitReader(b"\xab")
    assert reader.serialize_bits(0, 4) == 0xB
    with pytest.raises(DecodeError, match="truncated"):
        reader.serialize_bits(0, 5)
    assert reader.serialize_bits(0, 4) == 0xA
    assert reader.bits_remaining == 0
    with pytest.raises(DecodeError, match="truncated"):
        reader.serialize_bool(False)
    with pytest.raises(DecodeError, match="truncated"):
        BitReader(b"\x02a").serialize_bytes(b"", 4)


def test_align() -> None:
    writer = BitWriter()
    writer.align()
    assert writer.bits_written == 0
    writer.serialize_bits(1, 3)
    writer.align()
    assert writer.bits_written == 8
    writer.serialize_bits(0xAB, 8)
    counter = BitCounter()
    counter.serialize_bits(1, 3)
    counter.align()
    counter.serialize_bits(0xAB, 8)
    assert counter.bits_written == writer.bits_written == 16
    reader = BitReader(writer.getvalue())
    reader.serialize_bits(0, 3)
    reader.align()
    assert reader.bits_read == 8
    assert reader.serialize_bits(0, 8) == 0xAB


def test_getvalue_then_keep_writing() -> None:
    writer = BitWriter()
    writer.serialize_bits(1, 1)
    assert writer.getvalue() == b"\x01"
    writer.serialize_bits(1, 1)
    assert writer.getvalue() == b"\x03"


def test_read_message_trailing() -> None:
    msg = Composite(tick=1, name=b"abc", items=[1, 2])
    data = write_message(msg)
    assert read_message(Composite, data) == msg
    with pytest.raises(DecodeError, match="trailing"):
        read_message(Composite, data + b"\x00")
    counter = BitCounter()
    msg.serialize(counter)
    assert len(data) * 8 - counter.bits_written == 2  # so bit 7 of the last byte is padding
    corrupt = data[:-1] + bytes([data[-1] | 0x80])
    with pytest.raises(DecodeError, match="trailing"):
        read_message(Composite, corrupt)
    with pytest.raises(DecodeError, match="truncated"):
        read_message(Composite, data[:-1])


@given(st.binary(max_size=80))
def test_arbitrary_bytes_read_message_only_decode_error(data: bytes) -> None:
    try:
        msg = read_message(Composite, data)
    except DecodeError:
        return
    assert write_message(msg) == data  # anything accepted re-encodes to the same bytes


OPS = st.sampled_from(["bits", "bool", "int", "range", "varint", "float", "f32", "bytes", "align"])


@given(st.binary(max_size=40), st.lists(st.tuples(OPS, st.integers(1, 64)), max_size=25))
def test_arbitrary_bytes_reader_ops_only_decode_error(
    data: bytes, ops: list[tuple[str, int]]
) -> None:
    reader = BitReader(data)
    calls = {
        "bits": lambda n: reader.serialize_bits(0, n),
        "bool": lambda n: reader.serialize_bool(False),
        "int": lambda n: reader.serialize_int(0, n),
        "range": lambda n: reader.serialize_range(0, -n, 3 * n),
        "varint": lambda n: reader.serialize_varint(0),
        "float": lambda n: reader.serialize_float(0.0, -1.0, float(n), 0.001),
        "f32": lambda n: reader.serialize_float32(0.0),
        "bytes": lambda n: reader.serialize_bytes(b"", n),
        "align": lambda n: reader.align(),
    }
    for op, n in ops:
        with contextlib.suppress(DecodeError):
            calls[op](n)
        assert 0 <= reader.bits_remaining <= 8 * len(data)
        assert reader.bits_read + reader.bits_remaining == 8 * len(data)


@st.composite
def columns(draw: st.DrawFn) -> tuple[list[np.ndarray], list[int]]:
    widths = draw(st.lists(st.integers(1, 64), min_size=1, max_size=6))
    n = draw(st.integers(0, 30))
    cols = [
        np.array([draw(st.integers(0, (1 << w) - 1)) for _ in range(n)], dtype=np.uint64)
        for w in widths
    ]
    return cols, widths


@given(columns())
def test_columns_match_bitwriter(case: tuple[list[np.ndarray], list[int]]) -> None:
    cols, widths = case
    n = len(cols[0])
    writer = BitWriter()
    for i in range(n):
        for col, w in zip(cols, widths, strict=True):
            writer.serialize_bits(int(col[i]), w)
    data = pack_bit_columns(cols, widths)
    assert data == writer.getvalue()
    back = unpack_bit_columns(data, n, widths)
    for got, want in zip(back, cols, strict=True):
        assert got.dtype == np.uint64
        assert got.tolist() == want.tolist()


@given(st.binary(max_size=40), st.integers(0, 12), st.lists(st.integers(1, 64), max_size=4))
def test_unpack_columns_arbitrary_bytes(data: bytes, count: int, widths: list[int]) -> None:
    try:
        cols = unpack_bit_columns(data, count, widths)
    except DecodeError:
        return
    assert pack_bit_columns(cols, widths) == data


def test_columns_errors() -> None:
    with pytest.raises(LocalProtocolError, match="fit"):
        pack_bit_columns([np.array([8])], [3])
    with pytest.raises(LocalProtocolError, match="widths"):
        pack_bit_columns([np.array([1])], [3, 3])
    with pytest.raises(LocalProtocolError, match="same length"):
        pack_bit_columns([np.array([1]), np.array([1, 2])], [3, 3])
    with pytest.raises(LocalProtocolError, match=">= 0"):
        pack_bit_columns([np.array([-1])], [3])
    with pytest.raises(LocalProtocolError, match="integer"):
        pack_bit_columns([np.array([1.5])], [3])
    with pytest.raises(LocalProtocolError, match="bits"):
        unpack_bit_columns(b"", 0, [0])
    with pytest.raises(LocalProtocolError, match="count"):
        unpack_bit_columns(b"", -1, [3])
    with pytest.raises(DecodeError, match="expected"):
        unpack_bit_columns(b"\x00", 3, [3])
    with pytest.raises(DecodeError, match="padding"):
        unpack_bit_columns(b"\x80", 2, [3])
    assert pack_bit_columns([], []) == b""
    assert pack_bit_columns([np.array([], dtype=np.uint64)], [7]) == b""
