"""The datagram of the Time Warp and local-rollback peers: a timestamp, an ack and queued messages.

Implements the wire side of spec 000 §2.3 (Time Warp messages and anti-messages; local rollback's
"a packet with timestamp > t from every participant"): every tick a peer sends each other peer
one unreliable datagram carrying its virtual time (the frames it has executed), how many of the
receiver's messages it holds in order, and every message of its own the receiver has not
acknowledged yet, so a lost datagram costs no message, only delay.

Layout (little-endian)::

    magic      u8   0xA7
    timestamp  u32  frames the sender has executed (its virtual time)
    ack        u32  messages of the receiver the sender has received in order
    first      u32  serial number of the first message below
    count      u8   messages that follow, at most MAX_MESSAGES
    count x:   flags u8 (bit 0: anti-message; other bits zero)
               frame u32  the frame the input takes effect
               length u8  input length, at most MAX_INPUT
               input      length bytes
    checks     u8   checksum pairs that follow, at most MAX_CHECKS
    checks x:  frame u32, checksum u32   the sender's state after that many frames, final

Decisions:
    * ``decode`` never raises: wrong magic, truncation, reserved flag bits, lengths or counts
      beyond the limits, or trailing bytes return ``None``; nothing is allocated beyond the
      datagram's own size (at most ``MAX_MESSAGES`` messages of ``MAX_INPUT`` bytes).
    * Serial numbers and frames are u32: at 60 Hz that is over two years of frames.
    * Checksums ride along for desync detection: each is of a frame the sender no longer rolls
      back to, so a difference is a real desync, not a prediction.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_CHECKS", "MAX_INPUT", "MAX_MESSAGES", "Message", "Packet", "decode", "encode"]

MAGIC: Final = 0xA7
MAX_MESSAGES: Final = 32
"""Messages one datagram carries at most (the rest wait for the next tick)."""
MAX_INPUT: Final = 32
"""Largest input (bytes) a message may carry."""
MAX_CHECKS: Final = 4
"""Checksum pairs one datagram carries at most."""

_HEAD = struct.Struct("<BIIIB")
_ITEM = struct.Struct("<BIB")
_COUNT = struct.Struct("<B")
_CHECK = struct.Struct("<II")
_ANTI = 0x01


@dataclass(frozen=True, slots=True)
class Message:
    """An input event of one player, or the anti-message that cancels it."""

    frame: int
    """The first frame the input holds for."""
    value: bytes
    """The input bytes."""
    anti: bool = False
    """True for the anti-message of an earlier message with the same frame and value."""


@dataclass(frozen=True, slots=True)
class Packet:
    """One decoded datagram."""

    timestamp: int
    """Frames the sender has executed."""
    ack: int
    """Messages of the receiver the sender holds, in order."""
    first: int
    """Serial number of ``messages[0]``."""
    messages: tuple[Message, ...]
    """The sender's unacknowledged messages, oldest first."""
    checks: tuple[tuple[int, int], ...] = ()
    """``(frame, checksum)`` of the sender's final states, newest last."""


def encode(packet: Packet) -> bytes:
    """Serialise ``packet``.

    Raises:
        ValueError: more than ``MAX_MESSAGES`` messages, an input longer than ``MAX_INPUT``, or
            a number outside u32.
    """
    if len(packet.messages) > MAX_MESSAGES:
        raise ValueError(f"at most {MAX_MESSAGES} messages per packet, got {len(packet.messages)}")
    out = bytearray(
        _HEAD.pack(MAGIC, packet.timestamp, packet.ack, packet.first, len(packet.messages))
    )
    for message in packet.messages:
        if len(message.value) > MAX_INPUT:
            raise ValueError(f"input must be at most {MAX_INPUT} bytes, got {len(message.value)}")
        out += _ITEM.pack(_ANTI if message.anti else 0, message.frame, len(message.value))
        out += message.value
    if len(packet.checks) > MAX_CHECKS:
        raise ValueError(f"at most {MAX_CHECKS} checksums per packet, got {len(packet.checks)}")
    out += _COUNT.pack(len(packet.checks))
    for frame, checksum in packet.checks:
        out += _CHECK.pack(frame, checksum)
    return bytes(out)


def decode(data: bytes) -> Packet | None:
    """Parse a datagram; ``None`` for anything that is not exactly a valid packet."""
    if len(data) < _HEAD.size:
        return None
    magic, timestamp, ack, first, count = _HEAD.unpack_from(data, 0)
    if magic != MAGIC or count > MAX_MESSAGES:
        return None
    offset = _HEAD.size
    messages: list[Message] = []
    for _ in range(count):
        if offset + _ITEM.size > len(data):
            return None
        flags, frame, length = _ITEM.unpack_from(data, offset)
        offset += _ITEM.size
        if flags & ~_ANTI or length > MAX_INPUT or offset + length > len(data):
            return None
        messages.append(Message(frame, bytes(data[offset : offset + length]), bool(flags)))
        offset += length
    if offset + _COUNT.size > len(data):
        return None
    (checks,) = _COUNT.unpack_from(data, offset)
    offset += _COUNT.size
    if checks > MAX_CHECKS or offset + checks * _CHECK.size != len(data):
        return None
    pairs = tuple(_CHECK.unpack_from(data, offset + i * _CHECK.size) for i in range(checks))
    return Packet(timestamp, ack, first, tuple(messages), pairs)
