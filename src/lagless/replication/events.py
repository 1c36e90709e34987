"""Typed events (RPC) with a delivery policy and a target (issue 13 item 5, spec 004 §4.4.4).

An event class declares replicated fields exactly like a `NetworkObject` (same field types, same
codes on the wire) and a delivery policy: ``guaranteed = True`` (the default) rides the
reliable-ordered channel, ``False`` the unreliable one, so a lost non-guaranteed event is never
resent and never delays later ones (spec 004's guaranteed / non-guaranteed events). Every event
is stamped with its sender's synchronised time (the server's clock, via the transport's clock
sync on a client) and carries a `Target`: the server, the owner of an object, every client,
every client but the owner, or a set of clients. A client's event to other clients goes through
the server, which checks and relays it (clients never talk to each other).

Decisions: an event's ``initial_only`` / ``writer`` / ``priority`` field options are ignored (an
event is sent once, whole); `RefField` values travel as IDs and are resolved by the receiver
through its world.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from lagless.errors import LocalProtocolError
from lagless.replication.fields import Field, NumericField, RefField, _BlobField
from lagless.replication.ids import NULL_REF, IdRef
from lagless.replication.objects import NetworkObject
from lagless.replication.schema import Schema

__all__ = ["NetEvent", "Target", "TargetKind"]


class TargetKind(enum.IntEnum):
    """Who receives an event."""

    SERVER = 0
    """The server only."""
    OWNER = 1
    """The client owning ``Target.object_id`` (nobody if it has no owner)."""
    ALL = 2
    """Every client (and the server, when a client sends it)."""
    ALL_BUT_OWNER = 3
    """Every client except the owner of ``Target.object_id``."""
    SET = 4
    """The clients in ``Target.clients``."""


@dataclass(frozen=True, slots=True)
class Target:
    """An event's recipients; build it with the class methods."""

    kind: TargetKind
    """Which rule applies."""
    object_id: int = -1
    """The object whose owner the rule names (``OWNER``, ``ALL_BUT_OWNER``)."""
    clients: tuple[int, ...] = ()
    """The recipients of ``SET`` (client ids as the server names them)."""

    @classmethod
    def server(cls) -> Target:
        """The server only."""
        return cls(TargetKind.SERVER)

    @classmethod
    def everyone(cls) -> Target:
        """Every client."""
        return cls(TargetKind.ALL)

    @classmethod
    def owner_of(cls, obj: NetworkObject) -> Target:
        """The client that owns ``obj``."""
        return cls(TargetKind.OWNER, obj.id)

    @classmethod
    def all_but_owner(cls, obj: NetworkObject) -> Target:
        """Every client except the owner of ``obj``."""
        return cls(TargetKind.ALL_BUT_OWNER, obj.id)

    @classmethod
    def set(cls, clients: Iterable[int]) -> Target:
        """The given clients."""
        return cls(TargetKind.SET, clients=tuple(sorted(set(clients))))


class NetEvent:
    """Base of every event class; declare fields as class attributes and construct with values.

    ``class_id`` (default: the class name) names it on the wire; ``guaranteed`` picks the channel.
    """

    class_id: ClassVar[str] = "NetEvent"
    guaranteed: ClassVar[bool] = True
    schema: ClassVar[Schema] = Schema(())

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Collect the declared fields (base classes first) into ``cls.schema``."""
        super().__init_subclass__(**kwargs)
        if "class_id" not in cls.__dict__:
            cls.class_id = cls.__name__
        base = cls.__mro__[1]
        inherited = list(base.schema.fields) if issubclass(base, NetEvent) else []
        own = [v for v in cls.__dict__.values() if isinstance(v, Field)]
        cls.schema = Schema(inherited + own)

    def __init__(self, **values: Any) -> None:
        schema = self.schema
        self._slots = np.zeros((1, max(schema.dims, 1)), dtype=np.float64)
        self._blobs: list[Any] = [f.default for f in schema.blobs]
        for f in schema.numeric:
            self._slots[0, f.slot : f.slot + f.dims] = f.to_slots(f.default)
        unknown = set(values) - set(schema.by_name)
        if unknown:
            raise LocalProtocolError(f"{type(self).__name__} has no fields {sorted(unknown)}")
        for name, value in values.items():
            setattr(self, name, value)

    def _get_field(self, f: Field[Any]) -> Any:
        if isinstance(f, _BlobField):
            return self._blobs[f.slot]
        assert isinstance(f, NumericField)
        return f.from_slots(self._slots[0, f.slot : f.slot + f.dims])

    def _set_field(self, f: Field[Any], value: Any) -> None:
        if isinstance(f, _BlobField):
            f.to_bytes(value)
            self._blobs[f.slot] = value
            return
        assert isinstance(f, NumericField)
        if isinstance(f, RefField):
            value = _as_ref(value, f.name)
        self._slots[0, f.slot : f.slot + f.dims] = f.to_slots(value)

    def values(self) -> dict[str, Any]:
        """Every field's value by name."""
        return {f.name: getattr(self, f.name) for f in self.schema.fields}

    def __eq__(self, other: object) -> bool:
        """Same class and same field values."""
        return type(other) is type(self) and self.values() == other.values()  # type: ignore[union-attr]

    def __hash__(self) -> int:
        """Events are mutable values: unhashable in spirit, hashed by identity."""
        return id(self)

    def __repr__(self) -> str:
        """``Name(field=value, ...)``."""
        inner = ", ".join(f"{k}={v!r}" for k, v in self.values().items())
        return f"{type(self).__name__}({inner})"


def _as_ref(value: Any, name: str) -> IdRef:
    if value is None:
        return NULL_REF
    if isinstance(value, IdRef):
        return value
    if isinstance(value, NetworkObject):
        return value.ref()
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return IdRef(value, 0)
    raise LocalProtocolError(f"{name} takes a NetworkObject, IdRef, ID or None, got {value!r}")
