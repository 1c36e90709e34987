"""Events of the reliability layer, pulled with ``next_event()`` (STYLE §6.4).

Implements the application side of spec 004 §4.4.2 (per-packet delivery notifications, the
Tribes model) and §4.4.4 (messages delivered with their delivery policy). The connection events
(``ClientConnected``, ``Connected``, ``Disconnected``, ...) come from the netcode layer, in
`lagless.transport.netcode_events`; `Event` is the union a `Server` or `Client` returns.

Decision: these classes are ``slots=True`` but neither frozen nor keyword-only. A frozen
dataclass sets every field through ``object.__setattr__`` and costs about three times as much to
build, and one `MessageReceived` and one `MessageDelivered` are built per message on the hot path;
a keyword call costs about 0.3 µs more than a positional one (Python 3.11), so the connection
builds them positionally, in field order (the base class's ``client_index``, ``connection_id``
first). Applications should still name the fields. Treat the events as read-only values all the
same (they compare by value and are not hashable).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from lagless.transport.message_errors import MessageDropReason
from lagless.transport.netcode_events import NetcodeEvent


@dataclass(slots=True)
class TransportEvent:
    """Base class of the reliability layer's events."""

    client_index: int
    """Server: the peer's slot (reused after a disconnect). Client: its own slot."""
    connection_id: int
    """The connection's identity, never reused: on a server the id its ``ClientConnected``
    carried (pass it to `Server.send`); on a client the ordinal of its connections (1, 2, ...)."""


@dataclass(slots=True)
class MessageReceived(TransportEvent):
    """A message arrived: in order on reliable-ordered channels, once on reliable ones."""

    channel: int
    """Channel index the sender used."""
    message_id: int
    """The sender's 16-bit message id on that channel."""
    payload: bytes
    """The message bytes, reassembled if it was fragmented."""


@dataclass(slots=True)
class MessageDelivered(TransportEvent):
    """A reliable message this side sent is acknowledged in full by the peer."""

    channel: int
    """Channel index it was sent on."""
    message_id: int
    """The id `send` returned."""


@dataclass(slots=True)
class PacketDelivered(TransportEvent):
    """A payload packet this side sent was acknowledged (only with ``packet_events``)."""

    sequence: int
    """Its 16-bit packet sequence number."""


@dataclass(slots=True)
class PacketLost(TransportEvent):
    """A payload packet this side sent was declared lost (only with ``packet_events``)."""

    sequence: int
    """Its 16-bit packet sequence number."""


@dataclass(slots=True)
class ConnectionViolated(TransportEvent):
    """The authenticated peer broke the message protocol; the connection is being closed."""

    reason: MessageDropReason
    """The first violation the message layer saw."""


Event: TypeAlias = NetcodeEvent | TransportEvent
"""Anything a `Server` or `Client` returns from ``next_event()``."""
