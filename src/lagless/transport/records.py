"""The record format of the message layer: one message or fragment inside a payload.

Implements the per-message framing of DESIGN.md "Transport defaults" (messages of all channels
packed into one payload, fragments of at most 1024 bytes) and spec 004 §4.4.4 (each message keeps
its own channel and delivery policy inside a shared packet). `lagless.transport.packer` writes and
reads whole payloads of these records; `lagless.transport.channels` encodes an unfragmented
reliable message once, at ``send``, and every packet that carries it copies those bytes.

Wire format (all integers big-endian; a payload is zero or more records to its end)::

    record  = head:u8  message_id:u16  [fragment_index:u8  fragment_count_minus_1:u8]
              length:varint  data[length]
    head    = bit 7: fragment flag (the two fragment bytes follow)
              bit 6: reserved, must be 0
              bits 0-5: channel index (0..63)
    varint  = 1 byte for 0..127, else 2 bytes: (length & 0x7f) | 0x80, length >> 7 (non-zero);
              the shortest form only

An unfragmented record costs 4 bytes of overhead below 128 bytes of data and 5 above; a fragment
costs 7. `parse_records` checks the grammar only (``DecodeError`` on truncation, the reserved
bit, a non-minimal or 3-byte varint, a length above ``fragment_size``, a fragment count below 2
or an index beyond it, a non-last fragment shorter than ``fragment_size``, an empty last
fragment); the configuration checks are the packer's.
"""

from __future__ import annotations

import struct
from typing import Final, NamedTuple, TypeAlias

from lagless.wire.errors import DecodeError

__all__ = [
    "CHANNEL_MASK",
    "FRAGMENT_FLAG",
    "RESERVED_BIT",
    "SHORT_HEAD",
    "ParsedRecord",
    "Record",
    "encode_record",
    "fragment_head",
    "parse_payload",
    "parse_records",
    "record_size",
    "small_record",
    "small_record_head",
]

_HEAD: Final = struct.Struct(">BH")
_FRAG: Final = struct.Struct(">BB")
SHORT_HEAD: Final = struct.Struct(">BHB")
"""Head, id and one-byte length of an unfragmented record of below 128 bytes of data."""
_LONG: Final = struct.Struct(">BHBB")  # head, id, two-byte length
# the hot packers, bound once: a compiled build calls a bound method directly, where
# ``SHORT_HEAD.pack(...)`` looks the method up on every call
SHORT_PACK: Final = SHORT_HEAD.pack
SHORT_UNPACK_FROM: Final = SHORT_HEAD.unpack_from
_LONG_PACK: Final = _LONG.pack
FRAGMENT_FLAG: Final = 0x80
RESERVED_BIT: Final = 0x40
CHANNEL_MASK: Final = 0x3F


ParsedRecord: TypeAlias = tuple[int, int, bytes] | tuple[int, int, int, int, bytes]
"""What `parse_records` returns per record: ``(channel, message_id, data)`` for an unfragmented
message, ``(channel, message_id, index, count, data)`` for a fragment."""


class Record(NamedTuple):
    """One parsed record of a payload."""

    channel: int
    """Channel index (0..63)."""
    message_id: int
    """16-bit message id."""
    fragment_index: int
    """Fragment index, or -1 for an unfragmented message."""
    fragment_count: int
    """Number of fragments (1 when unfragmented)."""
    data: bytes
    """Record data (bytes)."""


def record_size(length: int, *, fragment: bool) -> int:
    """Return the encoded size (bytes) of a record with ``length`` bytes of data.

    Args:
        length: Data length (bytes), below 16384.
        fragment: True for a fragment record.

    Returns:
        Header plus data bytes.
    """
    return 3 + (2 if fragment else 0) + (1 if length < 0x80 else 2) + length


def small_record(channel: int, message_id: int, data: bytes) -> bytes:
    """Return the encoded unfragmented record of ``data`` (below 16384 bytes).

    Args:
        channel: Channel index (0..63).
        message_id: 16-bit message id.
        data: Message bytes.

    Returns:
        The record bytes, the same as `encode_record` appends.
    """
    return small_record_head(channel, message_id, len(data)) + data


def small_record_head(channel: int, message_id: int, length: int) -> bytes:
    """Return the bytes of an unfragmented record before its data (of ``length`` bytes).

    Args:
        channel: Channel index (0..63).
        message_id: 16-bit message id.
        length: Message length, below 16384 bytes.
    """
    if length < 0x80:
        return SHORT_PACK(channel, message_id, length)
    return _LONG_PACK(channel, message_id, (length & 0x7F) | 0x80, length >> 7)


def encode_record(
    out: bytearray, channel: int, message_id: int, data: bytes, index: int = -1, count: int = 1
) -> None:
    """Append one record to ``out``.

    Args:
        out: Buffer to extend.
        channel: Channel index (0..63).
        message_id: 16-bit message id.
        data: Record data, below 16384 bytes.
        index: Fragment index, or -1 for an unfragmented message.
        count: Number of fragments (2..256) of a fragment record.
    """
    if index < 0:
        out += small_record(channel, message_id, data)
        return
    out += fragment_head(channel, message_id, index, count, len(data))
    out += data


def fragment_head(channel: int, message_id: int, index: int, count: int, length: int) -> bytes:
    """Return the bytes of a fragment record before its data (of ``length`` bytes).

    Args:
        channel: Channel index (0..63).
        message_id: 16-bit message id.
        index: Fragment index.
        count: Number of fragments (2..256).
        length: Fragment data length, below 16384 bytes.
    """
    varint = bytes((length,)) if length < 0x80 else bytes(((length & 0x7F) | 0x80, length >> 7))
    return _HEAD.pack(channel | FRAGMENT_FLAG, message_id) + _FRAG.pack(index, count - 1) + varint


def parse_records(data: bytes, fragment_size: int, start: int = 0) -> list[ParsedRecord]:
    """Split a payload into `ParsedRecord` tuples, grammar only.

    The tuple form of `parse_payload` for the receive path (a tuple costs a tenth of a record
    object to build); an unfragmented record's 3-tuple is the message layer's ``Ready`` entry,
    queued as it is.

    Args:
        data: The payload bytes.
        fragment_size: Exact length of every non-last fragment, bound of every record (bytes).
        start: Offset of the first record in ``data`` (bytes); records run to its end.

    Returns:
        The records in order.

    Raises:
        DecodeError: On any grammar violation (the only exception it raises).
    """
    records: list[ParsedRecord] = []
    append = records.append
    pos = start
    end = len(data)
    unpack_short = SHORT_HEAD.unpack_from
    while pos < end:
        if pos + 4 > end:
            raise DecodeError(f"truncated record header at byte {pos}")
        head, message_id, length = unpack_short(data, pos)
        if not head & (FRAGMENT_FLAG | RESERVED_BIT):
            # the common record: unfragmented, reserved bit clear
            start_data = pos + 4
            if length & 0x80:
                if start_data >= end:
                    raise DecodeError("truncated length")
                high = data[start_data]
                if high == 0 or high & 0x80:
                    raise DecodeError("non-minimal or overlong length")
                length = (length & 0x7F) | (high << 7)
                start_data += 1
            stop = start_data + length
            if length > fragment_size or stop > end:
                raise DecodeError(f"record length {length} out of range")
            append((head, message_id, data[start_data:stop]))
            pos = stop
            continue
        if head & RESERVED_BIT:
            raise DecodeError("reserved bit set in record head")
        # a fragment record: head, id, index, count - 1, length
        if pos + 6 > end:
            raise DecodeError("truncated fragment header")
        index = data[pos + 3]
        count = data[pos + 4] + 1
        if count < 2 or index >= count:
            raise DecodeError(f"fragment index {index} of count {count}")
        length = data[pos + 5]
        pos += 6
        if length & 0x80:
            if pos >= end:
                raise DecodeError("truncated length")
            high = data[pos]
            pos += 1
            if high == 0 or high & 0x80:
                raise DecodeError("non-minimal or overlong length")
            length = (length & 0x7F) | (high << 7)
        stop = pos + length
        if length > fragment_size or stop > end:
            raise DecodeError(f"record length {length} out of range")
        if length == 0 if index == count - 1 else length != fragment_size:
            raise DecodeError(f"fragment {index} of {count} has {length} bytes")
        append((head & CHANNEL_MASK, message_id, index, count, data[pos:stop]))
        pos = stop
    return records


def parse_payload(data: bytes, fragment_size: int) -> list[Record]:
    """Split a payload into `Record` objects, checking the grammar only (not the configuration).

    Args:
        data: The payload bytes.
        fragment_size: Exact length of every non-last fragment, bound of every record (bytes).

    Returns:
        The records in order.

    Raises:
        DecodeError: On any grammar violation (the only exception it raises).
    """
    return [
        Record(*fields) if len(fields) == 5 else Record(fields[0], fields[1], -1, 1, fields[2])
        for fields in parse_records(data, fragment_size)
    ]
