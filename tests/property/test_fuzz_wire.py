"""Fuzz every ``lagless.wire`` reader: only ``DecodeError`` escapes (DESIGN.md "Bad input").

Readers: ``Buffer.pull_*``, ``BitReader.serialize_*`` and ``align``, ``read_message``,
``unpack_bit_columns``, ``zero_bitmap_decompress``; the network-facing dequantisers
(``dequantize``, ``dequantize_angle``, ``unpack_quaternion(s)_smallest_three``) accept every code.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lagless.wire import (
    BitReader,
    BitWriter,
    Buffer,
    DecodeError,
    dequantize,
    dequantize_angle,
    pack_bit_columns,
    read_message,
    unpack_bit_columns,
    unpack_quaternion_smallest_three,
    unpack_quaternions_smallest_three,
    zero_bitmap_compress,
    zero_bitmap_decompress,
)
from lagless.wire.bitstream import BitStream
from tests.property.fuzzing import FUZZ, fuzz_bytes

u64 = st.integers(0, 2**64 - 1)
PULLS = ("u8", "u16", "u32", "u64", "f32", "f64", "varint", "bytes")
pull_plans = st.lists(st.tuples(st.sampled_from(PULLS), st.integers(0, 64)), max_size=12)


@st.composite
def buffers(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, int]]]:
    """A pull plan and the bytes a ``Buffer`` pushed for it."""
    plan = draw(pull_plans)
    buf = Buffer()
    for op, n in plan:
        if op == "bytes":
            buf.push_bytes(bytes(n))
        elif op in ("f32", "f64"):
            getattr(buf, f"push_{op}")(float(n))
        else:
            getattr(buf, f"push_{op}")(n)
    return buf.data, plan


@FUZZ
@given(buffers().flatmap(lambda bp: st.tuples(fuzz_bytes(st.just(bp[0])), st.just(bp[1]))))
def test_buffer_pulls_raise_decode_error_only(case: tuple[bytes, list[tuple[str, int]]]) -> None:
    data, plan = case
    buf = Buffer(data=data)
    with contextlib.suppress(DecodeError):
        for op, n in plan:
            if op == "bytes":
                assert len(buf.pull_bytes(n)) == n
            else:
                getattr(buf, f"pull_{op}")()
        assert buf.remaining >= 0


FIELDS = ("bits", "bool", "uint", "int", "range", "varint", "float", "float32", "bytes", "align")
field_plans = st.lists(
    st.tuples(st.sampled_from(FIELDS), st.integers(1, 64), st.integers(0, 2**64 - 1)),
    max_size=10,
)


def _serialize(stream: BitStream, plan: list[tuple[str, int, int]]) -> None:
    """Write or read the fields of ``plan`` (field kind, width, value) through ``stream``."""
    for kind, width, value in plan:
        if kind == "bits":
            stream.serialize_bits(value % (1 << width), width)
        elif kind == "bool":
            stream.serialize_bool(bool(value & 1))
        elif kind == "uint":
            stream.serialize_uint(value % (1 << width), width)
        elif kind == "int":
            stream.serialize_int(value % (1 << width) - (1 << (width - 1)), width)
        elif kind == "range":
            stream.serialize_range(value % (width + 1), 0, width)
        elif kind == "varint":
            stream.serialize_varint(value)
        elif kind == "float":
            stream.serialize_float(float(value % 100), 0.0, 100.0, 0.01)
        elif kind == "float32":
            stream.serialize_float32(float(value % 1000))
        elif kind == "bytes":
            stream.serialize_bytes(bytes(width % 9), 8)
        else:
            stream.align()


@st.composite
def bit_messages(draw: st.DrawFn) -> tuple[bytes, list[tuple[str, int, int]]]:
    """A field plan and the bytes a ``BitWriter`` wrote for it."""
    plan = draw(field_plans)
    writer = BitWriter()
    _serialize(writer, plan)
    return writer.getvalue(), plan


@FUZZ
@given(bit_messages().flatmap(lambda mp: st.tuples(fuzz_bytes(st.just(mp[0])), st.just(mp[1]))))
def test_bit_reader_raises_decode_error_only(
    case: tuple[bytes, list[tuple[str, int, int]]],
) -> None:
    data, plan = case
    with contextlib.suppress(DecodeError):
        _serialize(BitReader(data), plan)


class Everything:
    """A message with one field of every kind (for ``read_message``)."""

    def __init__(self) -> None:
        self.flag = False
        self.small = 0
        self.signed = 0
        self.ranged = 3
        self.count = 0
        self.speed = 0.0
        self.raw = 0.0
        self.blob = b""

    def serialize(self, stream: BitStream) -> None:
        """Write, read or measure every field."""
        self.flag = stream.serialize_bool(self.flag)
        self.small = stream.serialize_uint(self.small, 5)
        self.signed = stream.serialize_int(self.signed, 12)
        self.ranged = stream.serialize_range(self.ranged, 3, 40)
        self.count = stream.serialize_varint(self.count)
        self.speed = stream.serialize_float(self.speed, -10.0, 10.0, 0.001)
        self.raw = stream.serialize_float32(self.raw)
        stream.align()
        self.blob = stream.serialize_bytes(self.blob, 16)


@st.composite
def everything_bytes(draw: st.DrawFn) -> bytes:
    """Valid encodings of ``Everything``."""
    msg = Everything()
    msg.flag = draw(st.booleans())
    msg.small = draw(st.integers(0, 31))
    msg.signed = draw(st.integers(-2048, 2047))
    msg.ranged = draw(st.integers(3, 40))
    msg.count = draw(u64)
    msg.speed = draw(st.floats(-10, 10))
    msg.raw = draw(st.floats(width=32))
    msg.blob = draw(st.binary(max_size=16))
    writer = BitWriter()
    msg.serialize(writer)
    return writer.getvalue()


@FUZZ
@given(fuzz_bytes(everything_bytes()))
def test_read_message_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        msg = read_message(Everything, data)
        assert 3 <= msg.ranged <= 40
        assert len(msg.blob) <= 16


@st.composite
def columns(draw: st.DrawFn) -> tuple[bytes, int, list[int]]:
    """Bit-packed columns, their record count and their widths."""
    widths = draw(st.lists(st.integers(1, 64), min_size=1, max_size=4))
    count = draw(st.integers(0, 20))
    cols = [
        np.array(draw(st.lists(st.integers(0, 2**w - 1), min_size=count, max_size=count)), "<u8")
        for w in widths
    ]
    return pack_bit_columns(cols, widths), count, widths


@FUZZ
@given(columns().flatmap(lambda c: st.tuples(fuzz_bytes(st.just(c[0])), st.just(c[1:]))))
def test_unpack_bit_columns_raises_decode_error_only(
    case: tuple[bytes, tuple[int, list[int]]],
) -> None:
    data, (count, widths) = case
    with contextlib.suppress(DecodeError):
        assert all(len(c) == count for c in unpack_bit_columns(data, count, widths))


@FUZZ
@given(
    fuzz_bytes(st.binary(max_size=300).map(zero_bitmap_compress)),
    st.none() | st.integers(0, 2100),
)
def test_zero_bitmap_decompress_raises_decode_error_only(data: bytes, length: int | None) -> None:
    with contextlib.suppress(DecodeError):
        assert len(zero_bitmap_decompress(data, length)) <= 2040


@FUZZ
@given(st.integers(-(2**70), 2**70), u64, st.integers(2, 20))
def test_dequantisers_accept_every_code(q: int, code: int, bits: int) -> None:
    assert -50.0 <= dequantize(q, -50.0, 50.0, 0.01) <= 50.0
    assert math.isfinite(dequantize_angle(q, min(bits, 16)))
    assert all(math.isfinite(v) for v in unpack_quaternion_smallest_three(code, bits))
    assert np.isfinite(unpack_quaternions_smallest_three(np.array([code], "<u8"), bits)).all()
