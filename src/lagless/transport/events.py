"""Events of the reliability layer, pulled with ``next_event()`` (STYLE §6.4).

Implements the application side of spec 004 §4.4.2 (per-packet delivery notifications, the
Tribes model) and §4.4.4 (messages delivered with their delivery policy). The connection events
(``ClientConnected``, ``Connected``, ``Disconnected``, ...) come from the netcode layer, in
`lagless.transport.netcode_events`; `Event` is the union a `Server` or `Client` returns.

Decision: these events are immutable tuples with named, typed fields, not dataclasses. One
`MessageReceived` and one `MessageDelivered` are built per message on the hot path, and a slots
dataclass costs 0.5-0.6 µs to build (its ``__init__`` is Python code: a call and one attribute
store per field), about a quarter of what the pair of connections spends per 100-byte message
(``benchmarks/transport.py``); the connection builds these with ``tuple.__new__``, about
0.1 µs. Applications use them as before: by field name (``event.payload``), with ``isinstance``,
in ``match`` statements by keyword or position (``case MessageReceived(channel=c, payload=p)``),
and by calling the class with positional or keyword fields. They compare equal only to an event
of the same class with the same fields (never to a plain tuple or another event class), are
hashable, and pickle.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeAlias

from lagless.errors import LocalProtocolError
from lagless.transport.message_errors import MessageDropReason
from lagless.transport.netcode_events import NetcodeEvent


def _field(index: int, doc: str) -> Any:
    """A read-only attribute reading item ``index`` of the tuple (a C getter, no Python frame)."""
    return property(itemgetter(index), doc=doc)


class TransportEvent(tuple):  # type: ignore[type-arg]  # the fields are typed one by one below
    """Base class of the reliability layer's events: an immutable tuple with named fields."""

    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ("client_index", "connection_id")
    __match_args__: ClassVar[tuple[str, ...]] = _fields

    if TYPE_CHECKING:
        client_index: int
        connection_id: int
    else:
        client_index = _field(
            0, "Server: the peer's slot (reused after a disconnect). Client: its own slot."
        )
        connection_id = _field(
            1,
            "The connection's identity, never reused: on a server the id its ``ClientConnected``"
            " carried (pass it to `Server.send`); on a client the ordinal of its connections"
            " (1, 2, ...).",
        )

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        """Build the event from its fields, by position or by name, in ``_fields`` order.

        Raises:
            LocalProtocolError: a field is missing, repeated or unknown.
        """
        fields = cls._fields
        if len(args) > len(fields):
            raise LocalProtocolError(
                f"{cls.__name__} takes {len(fields)} fields {fields}, got {len(args)}"
            )
        values = list(args)
        for name in fields[len(args) :]:
            if name not in kwargs:
                raise LocalProtocolError(f"{cls.__name__} needs field {name!r}")
            values.append(kwargs.pop(name))
        if kwargs:
            raise LocalProtocolError(
                f"{cls.__name__} has no field(s) {sorted(kwargs)} (or got them twice); "
                f"its fields are {fields}"
            )
        return tuple.__new__(cls, values)

    def __getnewargs__(self) -> tuple[Any, ...]:
        """The fields, for pickle and copy."""
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        """Equal to an event of the same class with equal fields only."""
        return type(self) is type(other) and tuple.__eq__(self, other)  # type: ignore[arg-type, unused-ignore]

    def __ne__(self, other: object) -> bool:
        """The negation of `__eq__`."""
        return not self.__eq__(other)

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        """``MessageDelivered(client_index=0, connection_id=1, channel=0, message_id=7)``."""
        body = ", ".join(
            f"{name}={value!r}" for name, value in zip(self._fields, self, strict=True)
        )
        return f"{type(self).__name__}({body})"


class MessageReceived(TransportEvent):
    """A message arrived: in order on reliable-ordered channels, once on reliable ones."""

    __slots__ = ()
    _fields = __match_args__ = ("client_index", "connection_id", "channel", "message_id", "payload")

    if TYPE_CHECKING:
        channel: int
        message_id: int
        payload: bytes
    else:
        channel = _field(2, "Channel index the sender used.")
        message_id = _field(3, "The sender's 16-bit message id on that channel.")
        payload = _field(4, "The message bytes, reassembled if it was fragmented.")


class MessageDelivered(TransportEvent):
    """A reliable message this side sent is acknowledged in full by the peer."""

    __slots__ = ()
    _fields = __match_args__ = ("client_index", "connection_id", "channel", "message_id")

    if TYPE_CHECKING:
        channel: int
        message_id: int
    else:
        channel = _field(2, "Channel index it was sent on.")
        message_id = _field(3, "The id `send` returned.")


class PacketDelivered(TransportEvent):
    """A payload packet this side sent was acknowledged (only with ``packet_events``)."""

    __slots__ = ()
    _fields = __match_args__ = ("client_index", "connection_id", "sequence")

    if TYPE_CHECKING:
        sequence: int
    else:
        sequence = _field(2, "Its 16-bit packet sequence number.")


class PacketLost(TransportEvent):
    """A payload packet this side sent was declared lost (only with ``packet_events``)."""

    __slots__ = ()
    _fields = __match_args__ = ("client_index", "connection_id", "sequence")

    if TYPE_CHECKING:
        sequence: int
    else:
        sequence = _field(2, "Its 16-bit packet sequence number.")


class ConnectionViolated(TransportEvent):
    """The authenticated peer broke the message protocol; the connection is being closed."""

    __slots__ = ()
    _fields = __match_args__ = ("client_index", "connection_id", "reason")

    if TYPE_CHECKING:
        reason: MessageDropReason
    else:
        reason = _field(2, "The first violation the message layer saw.")


Event: TypeAlias = NetcodeEvent | TransportEvent
"""Anything a `Server` or `Client` returns from ``next_event()``."""
