"""Bit-packed streams: one ``serialize(stream)`` per message writes, reads and measures (yojimbo).

Implements spec 004 §3.3.1 and §4.4.3 (Bitstream: single bits, bit fields, variable-length integers
and range-quantised floats; ``Packable`` with a default constructor) and spec 003 §5.4.3
(``BitStream`` with typed read/write of almost any datum, packed at bit level). Decisions:

* **Bit order: LSB first.** Stream bit ``k`` is bit ``k % 8`` of byte ``k // 8``, and every value
  is written least-significant bit first. This equals yojimbo's "LSB first within 32-bit
  little-endian words" byte for byte, and the zero-bitmap order of ``compress``
  (``test_bitstream.py::test_bit_order``).
* ``getvalue()`` pads the last byte with zero bits; its length is ``ceil(bits_written / 8)``,
  which ``BitCounter.bytes_written`` reports exactly
  (``test_bitstream.py::test_measure_equals_write``).
* **Signed integers are two's complement** in ``bits`` bits, range ``[-2^(bits-1), 2^(bits-1))``
  (``test_bitstream.py::test_int_twos_complement``). Zigzag gains nothing at a fixed width.
* **Varints** in the bit stream are the same unsigned LEB128 as ``Buffer.push_varint``, one 8-bit
  group at a time (not byte aligned); overlong or ``>= 2**64`` on read raises ``DecodeError``
  (``test_bitstream.py::test_varint_matches_buffer``).
* **Every ``serialize_*`` returns the value the reader will see**: on write it returns the input
  for exact codecs, and the dequantised value for ``serialize_float`` / ``serialize_float32``, so
  the sender can keep exactly the state the receiver rebuilds.
* **Writers and counters validate** (out-of-range values raise ``LocalProtocolError``) and
  ``serialize_float`` clips out-of-range floats to ``[lo, hi]`` (see ``quantize``). **Readers
  validate** codes above a range's maximum and non-zero ``align()`` padding, raising
  ``DecodeError`` (``test_bitstream.py::test_reader_rejects_out_of_range``).
* ``read_message`` requires the message to use the whole datagram: at most 7 trailing bits, all
  zero; anything else raises ``DecodeError`` (``test_bitstream.py::test_read_message_trailing``).
* ``pack_bit_columns`` / ``unpack_bit_columns`` are a numpy bit packer for struct-of-arrays records
  that produces the same bytes as a ``BitWriter`` writing each record's fields in order
  (``test_bitstream.py::test_columns_match_bitwriter``).
"""

from __future__ import annotations

import functools
import math
import struct
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Final, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError
from lagless.wire.buffer import VARINT_MAX_BYTES
from lagless.wire.errors import DecodeError
from lagless.wire.quantize import quantization_steps

__all__ = [
    "BitCounter",
    "BitReader",
    "BitStream",
    "BitWriter",
    "Serializable",
    "measure_message",
    "pack_bit_columns",
    "read_message",
    "unpack_bit_columns",
    "write_message",
]

MAX_FIELD_BITS: Final = 64  # bits; widest single serialize_bits field
_MASK64: Final = (1 << 64) - 1
_F32: Final = struct.Struct("<f")
_F32_BITS: Final = struct.Struct("<I")


class BitStream(Protocol):
    """The interface ``BitWriter``, ``BitReader`` and ``BitCounter`` share.

    A message's ``serialize(stream)`` calls these methods with its current field values and
    assigns the results back; the same code then writes, reads and measures.
    """

    @property
    def is_writing(self) -> bool:
        """True for ``BitWriter`` and ``BitCounter``."""
        ...

    @property
    def is_reading(self) -> bool:
        """True for ``BitReader``."""
        ...

    @property
    def bits_processed(self) -> int:
        """Bits written, measured or read so far."""
        ...

    def serialize_bits(self, value: int, bits: int) -> int:
        """Unsigned ``value`` in ``bits`` (0..64) bits."""
        ...

    def serialize_bool(self, value: bool) -> bool:
        """One bit."""
        ...

    def serialize_uint(self, value: int, bits: int) -> int:
        """Unsigned integer in ``bits`` (1..64) bits."""
        ...

    def serialize_int(self, value: int, bits: int) -> int:
        """Two's-complement signed integer in ``bits`` (1..64) bits."""
        ...

    def serialize_range(self, value: int, lo: int, hi: int) -> int:
        """Integer in ``[lo, hi]`` in ``ceil(log2(hi - lo + 1))`` bits."""
        ...

    def serialize_varint(self, value: int) -> int:
        """Unsigned LEB128 varint, 8 to 80 bits."""
        ...

    def serialize_float(self, value: float, lo: float, hi: float, resolution: float) -> float:
        """Range-quantised float; worst-case error ``resolution / 2``."""
        ...

    def serialize_float32(self, value: float) -> float:
        """Raw IEEE 754 binary32, 32 bits."""
        ...

    def serialize_bytes(self, value: bytes, max_len: int) -> bytes:
        """Length in ``[0, max_len]`` (range bits), then the bytes."""
        ...

    def align(self) -> None:
        """Pad to a byte boundary with zero bits."""
        ...


class Serializable(Protocol):
    """A message with one ``serialize`` method for writing, reading and measuring.

    ``read_message`` constructs it with no arguments, so every field needs a default.
    """

    def serialize(self, stream: BitStream) -> None:
        """Write, read or measure every field through ``stream``."""
        ...


S = TypeVar("S", bound=Serializable)


def _check_bits(bits: int, low: int) -> None:
    if not low <= bits <= MAX_FIELD_BITS:
        raise LocalProtocolError(f"bits must be in [{low}, {MAX_FIELD_BITS}], got {bits}")


def _check_range(lo: int, hi: int) -> int:
    if hi < lo or (hi - lo).bit_length() > MAX_FIELD_BITS:
        raise LocalProtocolError(f"range must have lo <= hi and span < 2**64, got [{lo}, {hi}]")
    return (hi - lo).bit_length()


@functools.lru_cache(maxsize=1024)
def _float_codec(lo: float, hi: float, resolution: float) -> tuple[int, int]:
    # Cached: a message re-validates the same few (lo, hi, resolution) triples on every call.
    n = quantization_steps(lo, hi, resolution)
    if n.bit_length() > MAX_FIELD_BITS:
        raise LocalProtocolError(f"float range needs {n.bit_length()} bits, max {MAX_FIELD_BITS}")
    return n, n.bit_length()


class _Stream(ABC):
    """Shared high-level codecs; subclasses provide the primitive bit operations."""

    __slots__ = ()
    is_writing: bool
    is_reading: bool

    @property
    @abstractmethod
    def bits_processed(self) -> int:
        """Bits written, measured or read so far."""

    @abstractmethod
    def serialize_bits(self, value: int, bits: int) -> int:
        """Serialize an unsigned ``bits``-bit field (0..64 bits)."""

    @abstractmethod
    def _raw(self, value: int, bits: int) -> int:
        """Serialize a field of any width without validation (for ``serialize_bytes``)."""

    def serialize_bool(self, value: bool) -> bool:
        """Serialize one bit.

        Args:
            value: The flag (ignored when reading).

        Returns:
            The flag as written or read.
        """
        return bool(self.serialize_bits(1 if value else 0, 1))

    def serialize_uint(self, value: int, bits: int) -> int:
        """Serialize an unsigned integer in ``bits`` bits.

        Args:
            value: Integer in ``[0, 2**bits)`` (ignored when reading).
            bits: Field width, 1..64.

        Returns:
            The integer as written or read.

        Raises:
            LocalProtocolError: ``bits`` out of range, or (writing) ``value`` does not fit.
            DecodeError: (reading) the stream is exhausted.
        """
        _check_bits(bits, 1)
        return self.serialize_bits(value, bits)

    def serialize_int(self, value: int, bits: int) -> int:
        """Serialize a signed integer as ``bits``-bit two's complement.

        Args:
            value: Integer in ``[-2**(bits-1), 2**(bits-1))`` (ignored when reading).
            bits: Field width, 1..64.

        Returns:
            The integer as written or read.

        Raises:
            LocalProtocolError: ``bits`` out of range, or (writing) ``value`` does not fit.
            DecodeError: (reading) the stream is exhausted.
        """
        _check_bits(bits, 1)
        half = 1 << (bits - 1)
        if self.is_writing:
            if not -half <= value < half:
                raise LocalProtocolError(
                    f"signed value must be in [{-half}, {half - 1}] for {bits} bits, got {value}"
                )
            self.serialize_bits(value & ((half << 1) - 1), bits)
            return value
        raw = self.serialize_bits(0, bits)
        return raw - (half << 1) if raw >= half else raw

    def serialize_range(self, value: int, lo: int, hi: int) -> int:
        """Serialize an integer in ``[lo, hi]`` in ``ceil(log2(hi - lo + 1))`` bits.

        Args:
            value: Integer in ``[lo, hi]`` (ignored when reading).
            lo: Smallest allowed value.
            hi: Largest allowed value; ``hi - lo < 2**64``.

        Returns:
            The integer as written or read.

        Raises:
            LocalProtocolError: Bad range, or (writing) ``value`` outside it.
            DecodeError: (reading) the code exceeds ``hi - lo`` or the stream is exhausted.
        """
        bits = _check_range(lo, hi)
        if self.is_writing:
            if not lo <= value <= hi:
                raise LocalProtocolError(f"value must be in [{lo}, {hi}], got {value}")
            self.serialize_bits(value - lo, bits)
            return value
        offset = self.serialize_bits(0, bits)
        if offset > hi - lo:
            raise DecodeError(f"value {lo + offset} outside [{lo}, {hi}]")
        return lo + offset

    def serialize_varint(self, value: int) -> int:
        """Serialize an unsigned LEB128 varint (8 bits per 7-bit group, 1 to 10 groups).

        Args:
            value: Integer in ``[0, 2**64)`` (ignored when reading).

        Returns:
            The integer as written or read.

        Raises:
            LocalProtocolError: (writing) ``value`` outside ``[0, 2**64)``.
            DecodeError: (reading) overlong, over 64 bits, or the stream is exhausted.
        """
        if self.is_writing:
            if not 0 <= value <= _MASK64:
                raise LocalProtocolError(f"varint value must be in [0, 2**64), got {value}")
            rest = value
            while rest > 0x7F:
                self.serialize_bits((rest & 0x7F) | 0x80, 8)
                rest >>= 7
            self.serialize_bits(rest, 8)
            return value
        result = 0
        for i in range(VARINT_MAX_BYTES):
            group = self.serialize_bits(0, 8)
            result |= (group & 0x7F) << (7 * i)
            if not group & 0x80:
                if group == 0 and i > 0:
                    raise DecodeError("overlong varint: trailing zero group")
                if result > _MASK64:
                    raise DecodeError("varint exceeds 64 bits")
                return result
        raise DecodeError(f"varint longer than {VARINT_MAX_BYTES} groups")

    def serialize_float(self, value: float, lo: float, hi: float, resolution: float) -> float:
        """Serialize a float quantised to ``resolution`` over ``[lo, hi]``.

        Uses ``bits_for_range(lo, hi, resolution)`` bits; worst-case error ``resolution / 2`` for
        values in range (values outside are clipped first). See ``lagless.wire.quantize``.

        Args:
            value: The value (ignored when reading); same unit as the bounds.
            lo: Lower bound.
            hi: Upper bound.
            resolution: Quantisation step.

        Returns:
            The dequantised value the reader sees (also when writing or measuring).

        Raises:
            LocalProtocolError: Bad range/resolution, or (writing) ``value`` is NaN.
            DecodeError: (reading) the code exceeds the range or the stream is exhausted.
        """
        n, bits = _float_codec(lo, hi, resolution)
        if self.is_writing:
            if value != value:
                raise LocalProtocolError("float value must not be NaN")
            if value <= lo:
                q = 0
            elif value >= hi:
                q = n
            else:
                q = min(math.floor((value - lo) / resolution + 0.5), n)
            self.serialize_bits(q, bits)
        else:
            q = self.serialize_bits(0, bits)
            if q > n:
                raise DecodeError(f"quantised code {q} exceeds {n}")
        result = lo + q * resolution
        return hi if result > hi else result

    def serialize_float32(self, value: float) -> float:
        """Serialize a raw IEEE 754 binary32 float (32 bits; NaN and infinities pass through).

        Args:
            value: The value (ignored when reading); rounded to binary32 when writing.

        Returns:
            The binary32 value as a Python float.

        Raises:
            LocalProtocolError: (writing) the value overflows binary32.
            DecodeError: (reading) the stream is exhausted.
        """
        if self.is_writing:
            try:
                packed = _F32.pack(value)
            except OverflowError:
                raise LocalProtocolError(f"float32 value out of range: {value!r}") from None
            raw = int(_F32_BITS.unpack(packed)[0])
            self.serialize_bits(raw, 32)
            return float(_F32.unpack(packed)[0])
        raw = self.serialize_bits(0, 32)
        return float(_F32.unpack(_F32_BITS.pack(raw))[0])

    def serialize_bytes(self, value: bytes, max_len: int) -> bytes:
        """Serialize a byte string: its length in ``[0, max_len]`` (range bits), then the bytes.

        Args:
            value: The bytes (ignored when reading).
            max_len: Largest allowed length in bytes; bounds what a reader allocates.

        Returns:
            The bytes as written or read.

        Raises:
            LocalProtocolError: ``max_len < 0`` or (writing) ``len(value) > max_len``.
            DecodeError: (reading) length above ``max_len`` or the stream is exhausted.
        """
        if max_len < 0:
            raise LocalProtocolError(f"max_len must be >= 0, got {max_len}")
        n = self.serialize_range(len(value), 0, max_len)
        if self.is_writing:
            self._raw(int.from_bytes(value, "little"), 8 * n)
            return bytes(value)
        return self._raw(0, 8 * n).to_bytes(n, "little")

    def align(self) -> None:
        """Pad to the next byte boundary with zero bits (0 to 7 bits).

        Raises:
            DecodeError: (reading) a padding bit is not zero, or the stream is exhausted.
        """
        pad = -self.bits_processed % 8
        if self.serialize_bits(0, pad) != 0:
            raise DecodeError("non-zero alignment padding")


class _Sink(_Stream):
    """A stream that writes or measures: validates every field before ``_put`` takes it."""

    __slots__ = ()

    def serialize_bits(self, value: int, bits: int) -> int:
        """Write (or count) the low ``bits`` bits of an unsigned value.

        Args:
            value: Integer in ``[0, 2**bits)``.
            bits: Field width, 0..64.

        Returns:
            ``value``.

        Raises:
            LocalProtocolError: ``bits`` outside 0..64 or ``value`` does not fit.
        """
        if not 0 <= bits <= MAX_FIELD_BITS or value < 0 or value >> bits:
            raise LocalProtocolError(
                f"value must be in [0, 2**bits) with bits in [0, 64], got {value} in {bits} bits"
            )
        return self._put(value, bits)

    @abstractmethod
    def _put(self, value: int, bits: int) -> int:
        """Take a validated field of 0..64 bits; return ``value``."""


class BitWriter(_Sink):
    """Write bit-packed values, LSB first, into a growing byte string.

    Values accumulate in a Python-int scratch word that is flushed eight bytes at a time, so
    there is no per-bit loop.

    Examples:
        >>> w = BitWriter()
        >>> w.serialize_bits(0b101, 3), w.serialize_range(7, 0, 100), w.serialize_bool(True)
        (5, 7, True)
        >>> w.bits_written, w.getvalue().hex()
        (11, '3d04')
    """

    __slots__ = ("_buf", "_scratch", "_scratch_bits")
    is_writing = True
    is_reading = False

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scratch = 0
        self._scratch_bits = 0

    @property
    def bits_written(self) -> int:
        """Bits written so far."""
        return len(self._buf) * 8 + self._scratch_bits

    @property
    def bytes_written(self) -> int:
        """Bytes ``getvalue()`` returns now: ``ceil(bits_written / 8)``."""
        return len(self._buf) + (self._scratch_bits + 7) // 8

    @property
    def bits_processed(self) -> int:
        """Bits written so far (the ``BitStream`` name)."""
        return len(self._buf) * 8 + self._scratch_bits

    def _put(self, value: int, bits: int) -> int:
        self._scratch |= value << self._scratch_bits
        self._scratch_bits += bits
        if self._scratch_bits >= 64:
            self._buf += (self._scratch & _MASK64).to_bytes(8, "little")
            self._scratch >>= 64
            self._scratch_bits -= 64
        return value

    def _raw(self, value: int, bits: int) -> int:
        self._scratch |= value << self._scratch_bits
        total = self._scratch_bits + bits
        whole = total >> 3
        if whole:
            self._buf += (self._scratch & ((1 << (whole * 8)) - 1)).to_bytes(whole, "little")
            self._scratch >>= whole * 8
        self._scratch_bits = total & 7
        return value

    def getvalue(self) -> bytes:
        """Return everything written, the last byte padded with zero bits.

        Returns:
            ``bytes_written`` bytes. The writer can keep writing afterwards.
        """
        tail = (self._scratch_bits + 7) // 8
        return bytes(self._buf) + self._scratch.to_bytes(tail, "little")


class BitCounter(_Sink):
    """Measure the size a ``BitWriter`` would produce, validating the same way, writing nothing.

    Examples:
        >>> c = BitCounter()
        >>> c.serialize_float(1.0, 0.0, 1000.0, 0.01), c.serialize_varint(300)
        (1.0, 300)
        >>> c.bits_written, c.bytes_written
        (33, 5)
    """

    __slots__ = ("_bits",)
    is_writing = True
    is_reading = False

    def __init__(self) -> None:
        self._bits = 0

    @property
    def bits_written(self) -> int:
        """Bits a ``BitWriter`` would have written."""
        return self._bits

    @property
    def bytes_written(self) -> int:
        """Bytes a ``BitWriter.getvalue()`` would return: ``ceil(bits_written / 8)``."""
        return (self._bits + 7) // 8

    @property
    def bits_processed(self) -> int:
        """Bits measured so far (the ``BitStream`` name)."""
        return self._bits

    def _put(self, value: int, bits: int) -> int:
        self._bits += bits
        return value

    _raw = _put


class BitReader(_Stream):
    """Read bit-packed values written by ``BitWriter``.

    Reading past the end raises ``DecodeError``; nothing is allocated beyond the input size.

    Args:
        data: The bytes to read.

    Examples:
        >>> r = BitReader(bytes.fromhex("3d04"))
        >>> r.serialize_bits(0, 3), r.serialize_range(0, 0, 100), r.serialize_bool(False)
        (5, 7, True)
        >>> r.bits_remaining
        5
    """

    __slots__ = ("_data", "_pos", "_scratch", "_scratch_bits")
    is_writing = False
    is_reading = True

    def __init__(self, data: bytes) -> None:
        self._data = bytes(data)
        self._pos = 0
        self._scratch = 0
        self._scratch_bits = 0

    @property
    def bits_remaining(self) -> int:
        """Bits left to read (including the zero padding of the last byte)."""
        return (len(self._data) - self._pos) * 8 + self._scratch_bits

    @property
    def bits_read(self) -> int:
        """Bits read so far."""
        return self._pos * 8 - self._scratch_bits

    @property
    def bits_processed(self) -> int:
        """Bits read so far (the ``BitStream`` name)."""
        return self._pos * 8 - self._scratch_bits

    def _refill(self, bits: int) -> None:
        if not 0 <= bits <= MAX_FIELD_BITS:
            raise LocalProtocolError(f"bits must be in [0, {MAX_FIELD_BITS}], got {bits}")
        pos = self._pos
        take = min(8, len(self._data) - pos)
        if self._scratch_bits + take * 8 < bits:
            raise DecodeError(f"truncated: need {bits} bits, have {self.bits_remaining}")
        self._scratch |= (
            int.from_bytes(self._data[pos : pos + take], "little") << self._scratch_bits
        )
        self._scratch_bits += take * 8
        self._pos = pos + take

    def serialize_bits(self, value: int, bits: int) -> int:
        """Read an unsigned ``bits``-bit value (``value`` is ignored).

        Args:
            value: Ignored (the caller's current field value).
            bits: Field width, 0..64.

        Returns:
            The value read.

        Raises:
            LocalProtocolError: ``bits`` outside 0..64.
            DecodeError: Fewer than ``bits`` bits remain.
        """
        if not 0 <= bits <= self._scratch_bits or bits > MAX_FIELD_BITS:
            self._refill(bits)
        result = self._scratch & ((1 << bits) - 1)
        self._scratch >>= bits
        self._scratch_bits -= bits
        return result

    def _raw(self, value: int, bits: int) -> int:
        if bits > self.bits_remaining:
            raise DecodeError(f"truncated: need {bits} bits, have {self.bits_remaining}")
        need = bits - self._scratch_bits
        if need > 0:
            take = (need + 7) // 8
            chunk = int.from_bytes(self._data[self._pos : self._pos + take], "little")
            self._scratch |= chunk << self._scratch_bits
            self._scratch_bits += take * 8
            self._pos += take
        result = self._scratch & ((1 << bits) - 1)
        self._scratch >>= bits
        self._scratch_bits -= bits
        return result


def write_message(msg: Serializable) -> bytes:
    """Serialize ``msg`` with a ``BitWriter``.

    Args:
        msg: The message.

    Returns:
        The bit-packed bytes, zero-padded to a whole byte.

    Raises:
        LocalProtocolError: A field value is out of its declared range.
    """
    writer = BitWriter()
    msg.serialize(writer)
    return writer.getvalue()


def measure_message(msg: Serializable) -> int:
    """Return ``len(write_message(msg))`` without writing anything.

    Args:
        msg: The message.

    Returns:
        Size in bytes.

    Raises:
        LocalProtocolError: A field value is out of its declared range.
    """
    counter = BitCounter()
    msg.serialize(counter)
    return counter.bytes_written


def read_message(cls: type[S], data: bytes) -> S:
    """Construct ``cls()`` and fill it by serializing with a ``BitReader`` over ``data``.

    The message must use all of ``data``: at most 7 trailing padding bits, all zero.

    Args:
        cls: A default-constructible ``Serializable`` class.
        data: The bytes received.

    Returns:
        The decoded message.

    Raises:
        DecodeError: Truncated data, an out-of-range value, or trailing data / non-zero padding.
    """
    msg = cls()
    reader = BitReader(data)
    msg.serialize(reader)
    left = reader.bits_remaining
    if left >= 8 or reader.serialize_bits(0, left) != 0:
        raise DecodeError(f"{left} trailing bits after message (allowed: < 8 zero padding bits)")
    return msg


def pack_bit_columns(columns: Sequence[npt.ArrayLike], bits: Sequence[int]) -> bytes:
    """Bit-pack struct-of-arrays records with numpy, record by record, fields LSB first.

    The output equals a ``BitWriter`` that, for each record ``i``, calls
    ``serialize_bits(columns[j][i], bits[j])`` for every field ``j`` in order, then ``getvalue()``.

    Args:
        columns: One non-negative integer array per field, all of length ``N``.
        bits: Width of each field, 1..64 bits.

    Returns:
        ``ceil(N * sum(bits) / 8)`` bytes.

    Raises:
        LocalProtocolError: Mismatched lengths, bad widths, or a value that does not fit.

    Examples:
        >>> pack_bit_columns([np.array([1, 2]), np.array([3, 0])], [3, 2]).hex()
        '5900'
    """
    widths = _check_widths(bits)
    if len(columns) != len(widths):
        raise LocalProtocolError(f"got {len(columns)} columns but {len(widths)} widths")
    arrays = [_as_column(col) for col in columns]
    if len({len(a) for a in arrays}) > 1:
        raise LocalProtocolError("all columns must have the same length")
    n = len(arrays[0]) if arrays else 0
    planes = []
    for arr, width in zip(arrays, widths, strict=True):
        if n and width < 64 and int(arr.max()) >> width:
            raise LocalProtocolError(f"a column value does not fit in {width} bits")
        # Little-endian uint64 bytes -> 64 bit planes, LSB first; keep the low ``width``.
        planes.append(
            np.unpackbits(arr.view(np.uint8).reshape(n, 8), axis=1, bitorder="little")[:, :width]
        )
    if not planes:
        return b""
    matrix = np.concatenate(planes, axis=1)
    return np.packbits(matrix.reshape(-1), bitorder="little").tobytes()


def unpack_bit_columns(
    data: bytes, count: int, bits: Sequence[int]
) -> list[npt.NDArray[np.uint64]]:
    """Inverse of ``pack_bit_columns``: read ``count`` records of the given field widths.

    Args:
        data: Exactly ``ceil(count * sum(bits) / 8)`` bytes.
        count: Number of records, >= 0.
        bits: Width of each field, 1..64 bits.

    Returns:
        One ``uint64`` array of length ``count`` per field.

    Raises:
        LocalProtocolError: Bad ``count`` or widths.
        DecodeError: ``data`` has the wrong length or non-zero padding bits.

    Examples:
        >>> [c.tolist() for c in unpack_bit_columns(bytes.fromhex("5900"), 2, [3, 2])]
        [[1, 2], [3, 0]]
    """
    widths = _check_widths(bits)
    if count < 0:
        raise LocalProtocolError(f"count must be >= 0, got {count}")
    stride = sum(widths)
    total = count * stride
    if len(data) != (total + 7) // 8:
        raise DecodeError(f"expected {(total + 7) // 8} bytes for {count} records, got {len(data)}")
    flat = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")
    if flat[total:].any():
        raise DecodeError("non-zero padding bits after the last record")
    matrix = flat[:total].reshape(count, stride)
    result = []
    start = 0
    padded = np.zeros((count, 64), dtype=np.uint8)
    for width in widths:
        padded[:, :width] = matrix[:, start : start + width]
        padded[:, width:] = 0
        packed = np.packbits(padded, axis=1, bitorder="little")
        result.append(packed.view("<u8").reshape(count).astype(np.uint64))
        start += width
    return result


def _check_widths(bits: Sequence[int]) -> list[int]:
    widths = [int(b) for b in bits]
    for width in widths:
        _check_bits(width, 1)
    return widths


def _as_column(col: npt.ArrayLike) -> npt.NDArray[np.uint64]:
    arr = np.asarray(col)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "ui"):
        raise LocalProtocolError("columns must be 1-D integer arrays")
    if arr.size and arr.dtype.kind == "i" and int(arr.min()) < 0:
        raise LocalProtocolError("column values must be >= 0")
    return np.ascontiguousarray(arr, dtype="<u8")
