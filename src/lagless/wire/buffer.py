"""Byte-aligned reader/writer with precompiled ``struct.Struct`` codecs (aioquic ``Buffer`` shape).

Implements spec 004 §4.4.3 (IO Service ``DataInput``/``DataOutput`` over a ``ByteBuffer``) for the
byte-aligned headers of STYLE §6.7 ("``pull_x`` / ``push_x`` pairs"). Decisions:

* **Little-endian** for every fixed-width integer and float, as netcode 1.02 uses
  (``test_buffer.py::test_little_endian_layout``).
* **Varint = unsigned LEB128**: seven value bits per byte, least-significant group first, bit 7 set
  on every byte but the last; at most 10 bytes and values below ``2**64``. The encoding must be
  *canonical*: a last byte of ``0x00`` after the first byte (an overlong encoding), an 11th byte
  or a value of ``2**64`` or more raises ``DecodeError`` (``test_buffer.py::test_varint_overlong``),
  so every value has exactly one encoding.
* Pulling past the end raises ``DecodeError``; pushing a value that does not fit its field, a
  negative length or past a fixed ``capacity`` raises ``LocalProtocolError``
  (``test_buffer.py::test_push_errors``).
* ``data`` is every valid byte (written or given), not only the bytes before the cursor, so a
  writer that seeks back to patch a length field still returns the whole datagram
  (``test_buffer.py::test_seek_back_and_patch``).
"""

from __future__ import annotations

import struct
from typing import Final

from lagless.errors import LocalProtocolError
from lagless.wire.errors import DecodeError

__all__ = ["VARINT_MAX_BYTES", "Buffer", "varint_size"]

VARINT_MAX_BYTES: Final = 10  # bytes: ceil(64 / 7), the longest canonical LEB128 of a u64

_U8: Final = struct.Struct("<B")
_U16: Final = struct.Struct("<H")
_U32: Final = struct.Struct("<I")
_U64: Final = struct.Struct("<Q")
_F32: Final = struct.Struct("<f")
_F64: Final = struct.Struct("<d")
_U64_LIMIT: Final = 1 << 64


def varint_size(value: int) -> int:
    """Return the length in bytes of the LEB128 encoding of ``value``.

    Args:
        value: Unsigned integer in ``[0, 2**64)``.

    Returns:
        ``max(1, ceil(bit_length / 7))`` bytes, between 1 and 10.

    Raises:
        LocalProtocolError: ``value`` is negative or does not fit in 64 bits.

    Examples:
        >>> [varint_size(v) for v in (0, 127, 128, 16383, 16384, 2**64 - 1)]
        [1, 1, 2, 2, 3, 10]
    """
    if value < 0 or value >= _U64_LIMIT:
        raise LocalProtocolError(f"varint value must be in [0, 2**64), got {value}")
    return max(1, -(-value.bit_length() // 7))


class Buffer:
    """A byte cursor over a growable (or fixed-capacity) ``bytearray``.

    Reads (``pull_*``) and writes (``push_*``) share one position, as in aioquic. All multi-byte
    integers and floats are little-endian.

    Args:
        capacity: Maximum size in bytes; pushing beyond it raises ``LocalProtocolError``. ``None``
            means the buffer grows without limit (the writer side is trusted code).
        data: Initial contents to read (the cursor starts at 0).

    Raises:
        LocalProtocolError: ``capacity`` is negative or smaller than ``len(data)``.

    Examples:
        >>> buf = Buffer()
        >>> buf.push_u16(0x1234); buf.push_varint(300)
        >>> buf.data.hex()
        '3412ac02'
        >>> reader = Buffer(data=buf.data)
        >>> reader.pull_u16(), reader.pull_varint(), reader.eof()
        (4660, 300, True)
    """

    __slots__ = ("_capacity", "_data", "_end", "_pos")

    def __init__(self, capacity: int | None = None, data: bytes | None = None) -> None:
        initial = b"" if data is None else bytes(data)
        if capacity is not None and not len(initial) <= capacity:
            raise LocalProtocolError(
                f"capacity must be >= len(data) = {len(initial)} and >= 0, got {capacity}"
            )
        self._capacity = capacity
        self._data = bytearray(initial)
        if capacity is not None:
            self._data.extend(bytes(capacity - len(initial)))
        self._pos = 0
        self._end = len(initial)

    # -- cursor ---------------------------------------------------------------------------------

    @property
    def data(self) -> bytes:
        """Every valid byte of the buffer: the initial data plus everything pushed (bytes)."""
        return bytes(self._data[: self._end])

    @property
    def capacity(self) -> int | None:
        """The fixed capacity in bytes, or ``None`` for a growable buffer."""
        return self._capacity

    @property
    def remaining(self) -> int:
        """Bytes left to pull between the cursor and the end of the valid data."""
        return self._end - self._pos

    def tell(self) -> int:
        """Return the cursor position in bytes from the start."""
        return self._pos

    def seek(self, pos: int) -> None:
        """Move the cursor to byte ``pos``.

        Args:
            pos: New position, in ``[0, len(data)]`` bytes.

        Raises:
            LocalProtocolError: ``pos`` is outside ``[0, len(data)]``.
        """
        if not 0 <= pos <= self._end:
            raise LocalProtocolError(f"seek position must be in [0, {self._end}], got {pos}")
        self._pos = pos

    def eof(self) -> bool:
        """Return True when the cursor is at the end of the valid data."""
        return self._pos >= self._end

    # -- internals ------------------------------------------------------------------------------

    def _reserve(self, n: int) -> int:
        pos = self._pos
        new_end = pos + n
        if new_end > len(self._data):
            if self._capacity is not None:
                raise LocalProtocolError(
                    f"push of {n} bytes at {pos} exceeds buffer capacity {self._capacity}"
                )
            self._data.extend(bytes(max(new_end - len(self._data), len(self._data))))
        self._pos = new_end
        if new_end > self._end:
            self._end = new_end
        return pos

    def _take(self, n: int) -> int:
        pos = self._pos
        if pos + n > self._end:
            raise DecodeError(f"truncated: need {n} bytes at offset {pos}, have {self._end - pos}")
        self._pos = pos + n
        return pos

    def _push_struct(self, codec: struct.Struct, value: float, name: str) -> None:
        try:
            packed = codec.pack(value)
        except (struct.error, OverflowError):
            raise LocalProtocolError(f"{name} value out of range: {value!r}") from None
        pos = self._reserve(codec.size)
        self._data[pos : pos + codec.size] = packed

    # -- push -----------------------------------------------------------------------------------

    def push_u8(self, value: int) -> None:
        """Append an unsigned 8-bit integer in ``[0, 255]``.

        Raises:
            LocalProtocolError: The value does not fit, or the capacity is exceeded.
        """
        self._push_struct(_U8, value, "u8")

    def push_u16(self, value: int) -> None:
        """Append an unsigned 16-bit little-endian integer in ``[0, 65535]``.

        Raises:
            LocalProtocolError: The value does not fit, or the capacity is exceeded.
        """
        self._push_struct(_U16, value, "u16")

    def push_u32(self, value: int) -> None:
        """Append an unsigned 32-bit little-endian integer in ``[0, 2**32)``.

        Raises:
            LocalProtocolError: The value does not fit, or the capacity is exceeded.
        """
        self._push_struct(_U32, value, "u32")

    def push_u64(self, value: int) -> None:
        """Append an unsigned 64-bit little-endian integer in ``[0, 2**64)``.

        Raises:
            LocalProtocolError: The value does not fit, or the capacity is exceeded.
        """
        self._push_struct(_U64, value, "u64")

    def push_f32(self, value: float) -> None:
        """Append an IEEE 754 binary32 little-endian float (rounded to nearest).

        Raises:
            LocalProtocolError: The value overflows binary32, or the capacity is exceeded.
        """
        self._push_struct(_F32, value, "f32")

    def push_f64(self, value: float) -> None:
        """Append an IEEE 754 binary64 little-endian float (exact).

        Raises:
            LocalProtocolError: The capacity is exceeded.
        """
        self._push_struct(_F64, value, "f64")

    def push_bytes(self, value: bytes) -> None:
        """Append raw bytes (no length prefix).

        Raises:
            LocalProtocolError: The capacity is exceeded.
        """
        n = len(value)
        pos = self._reserve(n)
        self._data[pos : pos + n] = value

    def push_varint(self, value: int) -> None:
        """Append an unsigned LEB128 varint (1 to 10 bytes).

        Raises:
            LocalProtocolError: ``value`` is outside ``[0, 2**64)``, or the capacity is exceeded.
        """
        n = varint_size(value)
        out = bytearray(n)
        for i in range(n - 1):
            out[i] = (value & 0x7F) | 0x80
            value >>= 7
        out[n - 1] = value
        self.push_bytes(bytes(out))

    # -- pull -----------------------------------------------------------------------------------

    def pull_u8(self) -> int:
        """Read an unsigned 8-bit integer.

        Raises:
            DecodeError: Fewer than 1 byte remains.
        """
        return int(_U8.unpack_from(self._data, self._take(1))[0])

    def pull_u16(self) -> int:
        """Read an unsigned 16-bit little-endian integer.

        Raises:
            DecodeError: Fewer than 2 bytes remain.
        """
        return int(_U16.unpack_from(self._data, self._take(2))[0])

    def pull_u32(self) -> int:
        """Read an unsigned 32-bit little-endian integer.

        Raises:
            DecodeError: Fewer than 4 bytes remain.
        """
        return int(_U32.unpack_from(self._data, self._take(4))[0])

    def pull_u64(self) -> int:
        """Read an unsigned 64-bit little-endian integer.

        Raises:
            DecodeError: Fewer than 8 bytes remain.
        """
        return int(_U64.unpack_from(self._data, self._take(8))[0])

    def pull_f32(self) -> float:
        """Read an IEEE 754 binary32 little-endian float (any bit pattern, NaN included).

        Raises:
            DecodeError: Fewer than 4 bytes remain.
        """
        return float(_F32.unpack_from(self._data, self._take(4))[0])

    def pull_f64(self) -> float:
        """Read an IEEE 754 binary64 little-endian float (any bit pattern, NaN included).

        Raises:
            DecodeError: Fewer than 8 bytes remain.
        """
        return float(_F64.unpack_from(self._data, self._take(8))[0])

    def pull_bytes(self, n: int) -> bytes:
        """Read exactly ``n`` raw bytes.

        Args:
            n: Number of bytes, >= 0.

        Raises:
            LocalProtocolError: ``n`` is negative (a caller mistake).
            DecodeError: Fewer than ``n`` bytes remain.
        """
        if n < 0:
            raise LocalProtocolError(f"pull_bytes length must be >= 0, got {n}")
        pos = self._take(n)
        return bytes(self._data[pos : pos + n])

    def pull_varint(self) -> int:
        """Read a canonical unsigned LEB128 varint.

        Raises:
            DecodeError: Truncated, longer than 10 bytes, not canonical (overlong), or ``>= 2**64``.
        """
        value = 0
        shift = 0
        for i in range(VARINT_MAX_BYTES):
            byte = self.pull_u8()
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                if byte == 0 and i > 0:
                    raise DecodeError("overlong varint: trailing zero group")
                if value >= _U64_LIMIT:
                    raise DecodeError("varint exceeds 64 bits")
                return value
            shift += 7
        raise DecodeError(f"varint longer than {VARINT_MAX_BYTES} bytes")
