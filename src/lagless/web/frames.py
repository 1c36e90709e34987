"""The WebSocket link protocol: what one binary WebSocket frame carries between browser and server.

A browser cannot speak netcode 1.02 (raw UDP, ChaCha20-Poly1305 per packet), so a WebSocket link
replaces the netcode packet layer and the reliability layer (acks, resends, fragments: TCP does
them) but keeps the messages above them: a MESSAGE frame carries one application message on one
lagless channel, byte for byte what the transport's ``send(connection, channel, payload)`` would
carry over UDP (for the demo: ``lagless.physics.codec`` input events, welcomes and snapshots).
Clock sync, which the transport does inside its packets, is a PING / PONG pair (Cristian's method,
spec 000 §2.4; the browser filters the samples like spec 004 §4.4.2).

Layouts (little-endian; every frame starts with a one-byte kind)::

    HELLO    0x01 | protocol_id u32 | version u8            client -> server, first frame, 6 B
    MESSAGE  0x02 | channel u8 | payload (1..MAX_PAYLOAD B)  both ways
    PING     0x03 | client_time f64                          client -> server, 9 B
    PONG     0x04 | client_time f64 | server_time f64        server -> client, 17 B

Times are seconds: ``client_time`` on the browser's clock (echoed untouched), ``server_time`` the
server's clock when it answered (the clock its snapshots are stamped with).

Decisions:
    * One frame, one message: WebSocket frames are already delimited, so there is no length field
      and no packing of several messages (the browser's event loop gets one ``message`` event per
      message, and TCP merges small writes anyway).
    * ``MAX_PAYLOAD`` is 4096 bytes: a 64-car demo snapshot is about 1.2 kB; anything larger than
      the transport's 1200-byte payload budget times a few is a broken or hostile peer.
    * ``decode_frame`` never raises: bytes that are not exactly one valid frame (unknown kind,
      wrong length, empty payload, non-finite time, a channel beyond 255) give ``None``.
"""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import dataclass
from typing import Final

from lagless.errors import LocalProtocolError

__all__ = [
    "LINK_VERSION",
    "MAX_FRAME",
    "MAX_PAYLOAD",
    "Frame",
    "FrameKind",
    "Hello",
    "LinkMessage",
    "Ping",
    "Pong",
    "decode_frame",
    "encode_frame",
]

LINK_VERSION: Final = 1
"""Version byte of HELLO: a browser page from another lagless version is refused."""
MAX_PAYLOAD: Final = 4096  # bytes of one MESSAGE payload
MAX_FRAME: Final = MAX_PAYLOAD + 2  # bytes: the largest valid frame (kind + channel + payload)

_HELLO: Final = struct.Struct("<BIB")
_PING: Final = struct.Struct("<Bd")
_PONG: Final = struct.Struct("<Bdd")


class FrameKind(enum.IntEnum):
    """The first byte of a frame."""

    HELLO = 1
    MESSAGE = 2
    PING = 3
    PONG = 4


@dataclass(frozen=True, slots=True)
class Hello:
    """The browser's first frame: which game protocol and link version it speaks."""

    protocol_id: int
    """The game's protocol id, u32 (the demo's ``PROTOCOL_ID``)."""
    version: int
    """``LINK_VERSION`` of the page."""


@dataclass(frozen=True, slots=True)
class LinkMessage:
    """One application message on one lagless channel."""

    channel: int
    """Channel index, 0..255 (``lagless.transport.RELIABLE``, ``UNRELIABLE``, ...)."""
    payload: bytes
    """The message, 1..``MAX_PAYLOAD`` bytes."""


@dataclass(frozen=True, slots=True)
class Ping:
    """A clock-sync request."""

    client_time: float
    """The browser's clock when it sent the ping, s."""


@dataclass(frozen=True, slots=True)
class Pong:
    """The answer to a ``Ping``."""

    client_time: float
    """The ping's ``client_time``, echoed, s."""
    server_time: float
    """The server's clock when it answered, s."""


Frame = Hello | LinkMessage | Ping | Pong


def encode_frame(frame: Frame) -> bytes:
    """Return the bytes of one frame.

    Raises:
        LocalProtocolError: A field out of its range (a payload empty or over ``MAX_PAYLOAD``
            bytes, a channel beyond 255, a non-finite time, a protocol id beyond 32 bits).
    """
    try:
        if isinstance(frame, Hello):
            return _HELLO.pack(FrameKind.HELLO, frame.protocol_id, frame.version)
        if isinstance(frame, LinkMessage):
            if not 1 <= len(frame.payload) <= MAX_PAYLOAD:
                raise LocalProtocolError(
                    f"payload must be 1..{MAX_PAYLOAD} bytes, got {len(frame.payload)}"
                )
            return bytes((FrameKind.MESSAGE, frame.channel)) + frame.payload
        if isinstance(frame, Ping):
            _finite(frame.client_time)
            return _PING.pack(FrameKind.PING, frame.client_time)
        _finite(frame.client_time)
        _finite(frame.server_time)
        return _PONG.pack(FrameKind.PONG, frame.client_time, frame.server_time)
    except (struct.error, ValueError) as exc:
        raise LocalProtocolError(f"cannot encode {frame!r}: {exc}") from None


def _finite(t: float) -> None:
    if not math.isfinite(t):
        raise LocalProtocolError(f"time must be finite, got {t!r}")


def decode_frame(data: bytes) -> Frame | None:
    """Decode one frame; ``None`` for anything that is not exactly one valid frame."""
    if not data or len(data) > MAX_FRAME:
        return None
    kind = data[0]
    if kind == FrameKind.HELLO and len(data) == _HELLO.size:
        _, protocol_id, version = _HELLO.unpack(data)
        return Hello(protocol_id, version)
    if kind == FrameKind.MESSAGE and len(data) >= 3:
        return LinkMessage(data[1], bytes(data[2:]))
    if kind == FrameKind.PING and len(data) == _PING.size:
        _, t = _PING.unpack(data)
        return Ping(t) if math.isfinite(t) else None
    if kind == FrameKind.PONG and len(data) == _PONG.size:
        _, t, server = _PONG.unpack(data)
        return Pong(t, server) if math.isfinite(t) and math.isfinite(server) else None
    return None
