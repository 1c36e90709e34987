"""Zero-bitmap compression (spec 001 §4.5.2): exact format, size formula, strict decoding."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.wire import (
    ZERO_BITMAP_MAX_INPUT,
    DecodeError,
    zero_bitmap_compress,
    zero_bitmap_compressed_size,
    zero_bitmap_decompress,
)
from lagless.wire.compress import _NUMPY_THRESHOLD

BYTE = st.one_of(st.just(0), st.integers(0, 255))
SPARSE = st.lists(BYTE, max_size=ZERO_BITMAP_MAX_INPUT).map(bytes)


@pytest.mark.parametrize(
    ("raw", "packed"),
    [
        (bytes([0, 5, 0, 0, 0, 0, 0, 7]), b"\x01\x82\x05\x07"),
        (b"", b"\x00"),
        (bytes(8), b"\x01\x00"),
        (b"\x01", b"\x01\x01\x01"),
        (bytes([9]) + bytes(8) + bytes([3]), bytes([2, 0x01, 0x02, 9, 3])),
        (bytes(range(1, 9)), b"\x01\xff" + bytes(range(1, 9))),
        (bytes(23) + b"\x80", bytes([3, 0, 0, 0x80, 0x80])),
    ],
)
def test_hand_made_vectors(raw: bytes, packed: bytes) -> None:
    assert zero_bitmap_compress(raw) == packed
    assert zero_bitmap_decompress(packed, length=len(raw)) == raw
    assert zero_bitmap_decompress(packed) == raw + bytes(-len(raw) % 8)


def test_large_hand_made_vector() -> None:
    # Above the numpy threshold: 2040 bytes with 0xAA at every 100th position.
    raw = bytearray(ZERO_BITMAP_MAX_INPUT)
    for i in range(0, len(raw), 100):
        raw[i] = 0xAA
    bitmap = bytearray(255)
    for i in range(0, len(raw), 100):
        bitmap[i // 8] |= 1 << (i % 8)
    expected = bytes([255]) + bytes(bitmap) + b"\xaa" * 21
    assert zero_bitmap_compress(bytes(raw)) == expected
    assert zero_bitmap_decompress(expected, length=len(raw)) == raw


@given(SPARSE)
def test_round_trip_and_size_formula(raw: bytes) -> None:
    packed = zero_bitmap_compress(raw)
    nnz = sum(1 for b in raw if b)
    assert len(packed) == 1 + (len(raw) + 7) // 8 + nnz
    assert zero_bitmap_compressed_size(raw) == len(packed)
    assert zero_bitmap_decompress(packed, length=len(raw)) == raw
    full = zero_bitmap_decompress(packed)
    assert len(full) == 8 * packed[0]
    assert full[: len(raw)] == raw
    assert not any(full[len(raw) :])


def test_delta_size() -> None:
    # spec 001 §3.11: one 24-byte delta compresses to 4 + nnz bytes.
    delta = bytes([0, 0, 1, 0, 0, 0, 2, 0] + [0] * 15 + [3])
    assert len(zero_bitmap_compress(delta)) == 4 + 3


def test_paths_agree() -> None:
    sizes = [_NUMPY_THRESHOLD - 1, _NUMPY_THRESHOLD, _NUMPY_THRESHOLD + 1, _NUMPY_THRESHOLD + 8]
    for n in sizes:
        raw = bytes((i * 37) % 5 and (i % 251) for i in range(n))
        packed = zero_bitmap_compress(raw)
        expected_bitmap = bytearray((n + 7) // 8)
        for i, b in enumerate(raw):
            if b:
                expected_bitmap[i // 8] |= 1 << (i % 8)
        assert packed == bytes([len(expected_bitmap)]) + expected_bitmap + raw.replace(b"\0", b"")
        assert zero_bitmap_decompress(packed, length=n) == raw


def test_input_cap() -> None:
    assert zero_bitmap_compress(bytes(ZERO_BITMAP_MAX_INPUT))[0] == 255
    with pytest.raises(LocalProtocolError, match="2040"):
        zero_bitmap_compress(bytes(ZERO_BITMAP_MAX_INPUT + 1))


def test_length_recovery() -> None:
    packed = zero_bitmap_compress(bytes([1, 0, 2]))  # m = 1
    assert zero_bitmap_decompress(packed, length=3) == b"\x01\x00\x02"
    assert zero_bitmap_decompress(packed, length=8) == b"\x01\x00\x02" + bytes(5)
    for bad in (0, 9, 100):
        with pytest.raises(DecodeError, match="length"):
            zero_bitmap_decompress(packed, length=bad)
    # length=2 fits m = 1 but the bitmap flags a non-zero byte at position 2.
    with pytest.raises(DecodeError, match="past length"):
        zero_bitmap_decompress(packed, length=2)
    assert zero_bitmap_decompress(b"\x00", length=0) == b""
    with pytest.raises(LocalProtocolError, match="length"):
        zero_bitmap_decompress(packed, length=-1)


@pytest.mark.parametrize(
    "data",
    [
        b"",  # empty
        b"\x02\x00",  # bitmap cut short
        b"\x01\x03\x05",  # one of two non-zero bytes missing
        b"\x01\x82\x05\x07\x00",  # extra trailing byte
        b"\x01\x00\x00",  # extra byte after an all-zero bitmap
    ],
)
def test_garbage_only_decode_error(data: bytes) -> None:
    with pytest.raises(DecodeError):
        zero_bitmap_decompress(data)


@given(st.binary(max_size=300), st.none() | st.integers(0, 2100))
def test_arbitrary_bytes_only_decode_error(data: bytes, length: int | None) -> None:
    try:
        out = zero_bitmap_decompress(data, length)
    except DecodeError:
        return
    assert len(out) <= ZERO_BITMAP_MAX_INPUT
    assert zero_bitmap_compress(out) == data  # accepted input is canonical
