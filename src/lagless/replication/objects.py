"""Network objects with roles, the class registry and the world that holds them (spec 003 §5.4.5).

Implements issue 13 item 3's object side: the thesis's ``NetworkObject`` (role authority / proxy /
owner, class ID string, announcement data for remote construction, initial vs continuous
replication through each field's ``initial_only``), ``ObjectReference<T>`` (a `RefField` holding
an `IdRef`, resolved through the world), and one ID pool per world whose IDs are the same for
savegames and the network (spec 003 §5.3, checklist "the same ID is used for savegame references
and network references").

Decisions:

* Objects are made by `World.spawn` (authority) or by a replication client (proxy / owner), never
  by calling the class: a network object always has a world, an ID and a row.
* **Writes by role.** The authority writes every field; an owner writes only ``Writer.OWNER``
  fields; a proxy writes nothing (`LocalProtocolError`). Values the network brings in bypass the
  check.
* **References.** Setting a `RefField` takes a `NetworkObject`, an `IdRef`, an ID or None. A
  reference keeps the generation of the assignment it was taken from, so after the referenced
  object is destroyed it resolves to None even if the ID is assigned again. Destroying an object
  also nulls every reference to it in the world (one numpy pass per reference field), on the
  server and on every client, so a stale ID never reaches the wire. References that arrive over
  the network or from a savegame carry generation 0, which resolves to whatever holds the ID.
* **Change detection** (thesis ``IsDataUpdated`` / ``OldID``): `World.changes` drains the
  spawns, destroys, owner changes and string/bytes writes since the last drain; numeric fields
  are compared by code against each client's baseline by the snapshot engine instead, and
  ``RefField.is_updated(obj)`` tells the game whether a reference's ID changed.
* **Savegames** (`World.save` / `World.load`) are JSON through the schema, with the pool's next
  ID, so a loaded world never reissues an ID of the saved one.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, TypeVar

import numpy as np

from lagless.errors import LocalProtocolError
from lagless.replication.fields import Field, NumericField, RefField, Writer, _BlobField
from lagless.replication.ids import NO_ID, NULL_REF, IdPool, IdRef
from lagless.replication.schema import Schema, Table

__all__ = ["ClassRegistry", "NetworkObject", "Role", "World", "WorldChanges"]

SAVE_FORMAT: Final = "lagless.replication/1"
ObjT = TypeVar("ObjT", bound="NetworkObject")


class Role(enum.Enum):
    """A network object's role on one host (thesis ``NetworkObjectRole``)."""

    AUTHORITY = "authority"
    """The master copy (the server's)."""
    PROXY = "proxy"
    """A replica that follows the authority."""
    OWNER = "owner"
    """A replica on its owning client, which may write ``Writer.OWNER`` fields."""


class NetworkObject:
    """Base of every replicated class; declare fields as class attributes.

    ``class_id`` (default: the class name) names the class on the wire; ``position_field`` names a
    `Vec2Field` / `Vec3Field` that interest policies use (None: relevant to every client).

    >>> from lagless.replication.fields import Vec2Field
    >>> class Ship(NetworkObject):
    ...     pos = Vec2Field(-500.0, 500.0, 0.01)
    >>> world = World([Ship]); ship = world.spawn(Ship, pos=(1.0, 2.0))
    >>> ship.id, ship.pos, ship.role.value
    (1, (1.0, 2.0), 'authority')
    """

    class_id: ClassVar[str] = "NetworkObject"
    position_field: ClassVar[str | None] = None
    schema: ClassVar[Schema] = Schema(())

    id: int
    """The object's ID in its world's pool (`NO_ID` once destroyed)."""
    role: Role
    """Authority, proxy or owner."""
    owner: int | None
    """The owning client's id, or None."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Collect the declared fields (base classes first) into ``cls.schema``."""
        super().__init_subclass__(**kwargs)
        if "class_id" not in cls.__dict__:
            cls.class_id = cls.__name__
        inherited = list(cls.__mro__[1].schema.fields) if hasattr(cls.__mro__[1], "schema") else []
        taken = {f.name for f in inherited}
        own = [v for v in cls.__dict__.values() if isinstance(v, Field)]
        for f in own:
            if f.name in taken:
                raise LocalProtocolError(f"{cls.__name__} redeclares field {f.name!r}")
        cls.schema = Schema(inherited + own)
        if cls.position_field is not None:
            pos = cls.schema.by_name.get(cls.position_field)
            if (
                not isinstance(pos, NumericField)
                or pos.dims not in (2, 3)
                or isinstance(pos, RefField)
            ):
                raise LocalProtocolError(
                    f"{cls.__name__}.position_field must name a Vec2Field or Vec3Field"
                )

    def __init__(self) -> None:
        self.id = NO_ID
        self.role = Role.AUTHORITY
        self.owner = None
        self._world: World | None = None
        self._table: Table | None = None
        self._row = -1

    # -- thesis hooks -------------------------------------------------------------------------

    def announcement_data(self) -> bytes:
        """Bytes a remote host needs to construct the counterpart (thesis
        ``ConstructAndSetAnnouncementData``); empty by default, at most 1024 bytes."""
        return b""

    def on_announced(self, data: bytes) -> None:
        """Called on a replica after construction with the authority's announcement data."""

    # -- access -------------------------------------------------------------------------------

    @property
    def world(self) -> World:
        """The world holding the object (`LocalProtocolError` once destroyed)."""
        if self._world is None:
            raise LocalProtocolError(f"{type(self).__name__} {self.id} is not in a world")
        return self._world

    @property
    def alive(self) -> bool:
        """Whether the object is in a world (not destroyed)."""
        return self._world is not None

    def ref(self) -> IdRef:
        """A reference to this object (its ID and the generation of its assignment)."""
        return self.world.pool.ref(self.id)

    def resolve(self, ref: IdRef) -> NetworkObject | None:
        """Resolve a reference through this object's world (thesis ``Resolve``)."""
        return self.world.resolve(ref)

    def values(self) -> dict[str, Any]:
        """Every field's value by name."""
        return {f.name: getattr(self, f.name) for f in self.schema.fields}

    def _get_field(self, f: Field[Any]) -> Any:
        table = self._table
        if table is None:
            raise LocalProtocolError(f"{type(self).__name__}.{f.name}: object is destroyed")
        if isinstance(f, _BlobField):
            return table.blobs[f.slot][self._row]
        assert isinstance(f, NumericField)
        return f.from_slots(table.values[self._row, f.slot : f.slot + f.dims])

    def _set_field(self, f: Field[Any], value: Any) -> None:
        world = self._world
        if world is None:
            raise LocalProtocolError(f"{type(self).__name__}.{f.name}: object is destroyed")
        if self.role is Role.PROXY or (self.role is Role.OWNER and f.writer is not Writer.OWNER):
            raise LocalProtocolError(
                f"{type(self).__name__}.{f.name} is written by the {f.writer.value}; "
                f"this replica's role is {self.role.value}"
            )
        world._write(self, f, value)


@dataclass(slots=True)
class WorldChanges:
    """What happened in a world since the last `World.changes` (for the replication layer)."""

    spawned: list[NetworkObject] = field(default_factory=list)
    """Objects spawned, in order."""
    destroyed: list[tuple[int, type[NetworkObject], int]] = field(default_factory=list)
    """ID, class and former table row of each destroyed object, in order."""
    owners: dict[int, int | None] = field(default_factory=dict)
    """New owner by object ID."""
    blobs: dict[int, set[int]] = field(default_factory=dict)
    """Object ID -> indices (into ``schema.blobs``) of string/bytes fields written."""
    owner_writes: set[int] = field(default_factory=set)
    """IDs of objects whose ``Writer.OWNER`` fields this host wrote as their owner."""


class ClassRegistry:
    """Network object classes by ``class_id`` (both ends register the same classes).

    Args:
        classes: The classes; their ``class_id`` must be unique.

    Raises:
        LocalProtocolError: duplicate ``class_id`` or a class that is not a `NetworkObject`.
    """

    def __init__(self, classes: Iterable[type[NetworkObject]] = ()) -> None:
        self._by_id: dict[str, type[NetworkObject]] = {}
        for cls in classes:
            self.register(cls)

    def register(self, cls: type[NetworkObject]) -> None:
        """Add ``cls`` (registering the same class twice is a no-op)."""
        if not (isinstance(cls, type) and issubclass(cls, NetworkObject)):
            raise LocalProtocolError(f"expected a NetworkObject subclass, got {cls!r}")
        known = self._by_id.get(cls.class_id)
        if known is not None and known is not cls:
            raise LocalProtocolError(f"class_id {cls.class_id!r} is taken by {known.__name__}")
        self._by_id[cls.class_id] = cls

    def get(self, class_id: str) -> type[NetworkObject] | None:
        """The class registered under ``class_id``, or None."""
        return self._by_id.get(class_id)

    def __contains__(self, cls: object) -> bool:
        """Whether ``cls`` is registered."""
        return isinstance(cls, type) and self._by_id.get(getattr(cls, "class_id", "")) is cls

    def __iter__(self) -> Iterator[type[NetworkObject]]:
        """The classes, by ``class_id``."""
        return iter(self._by_id[k] for k in sorted(self._by_id))


class World:
    """The network objects of one host: an ID pool, a table per class and pending changes.

    Args:
        classes: The classes (or a `ClassRegistry`) this world may hold.
        pool: The ID pool (default: ``IdPool("NetworkObject", start=1, width=32)``).
    """

    def __init__(
        self,
        classes: Iterable[type[NetworkObject]] | ClassRegistry = (),
        *,
        pool: IdPool[NetworkObject] | None = None,
    ) -> None:
        self.registry = classes if isinstance(classes, ClassRegistry) else ClassRegistry(classes)
        self.pool: IdPool[NetworkObject] = IdPool("NetworkObject") if pool is None else pool
        self.tables: dict[type[NetworkObject], Table] = {}
        self._changes = WorldChanges()

    # -- lifecycle ----------------------------------------------------------------------------

    def spawn(
        self,
        cls: type[ObjT],
        *,
        ident: int | None = None,
        owner: int | None = None,
        role: Role = Role.AUTHORITY,
        **values: Any,
    ) -> ObjT:
        """Create an object of ``cls`` with its field defaults, then ``values``.

        Args:
            cls: A registered class.
            ident: Explicit ID (replicas use the authority's), or None for the next one.
            owner: Owning client id, or None.
            role: The object's role on this host.
            **values: Initial field values by name.

        Returns:
            The object.

        Raises:
            LocalProtocolError: unregistered class, unknown field or bad value.
            IdTakenError: ``ident`` is taken.
            IdOverflowError: the pool is exhausted.
        """
        if cls not in self.registry:
            raise LocalProtocolError(f"{cls.__name__} is not registered in this world")
        unknown = set(values) - set(cls.schema.by_name)
        if unknown:
            raise LocalProtocolError(f"{cls.__name__} has no fields {sorted(unknown)}")
        obj = cls.__new__(cls)
        NetworkObject.__init__(obj)
        obj.id = self.pool.assign(obj, ident)
        table = self.tables.get(cls)
        if table is None:
            table = self.tables[cls] = Table(cls.schema)
        obj._world, obj._table, obj._row = self, table, table.add(obj, obj.id)
        obj.role, obj.owner = role, owner
        try:
            for name, value in values.items():
                self._write(obj, cls.schema.by_name[name], value, quiet=True)
        except LocalProtocolError:
            self._forget(obj)
            raise
        self._changes.spawned.append(obj)
        return obj

    def destroy(self, obj: NetworkObject) -> None:
        """Destroy ``obj``: free its ID (never reissued) and null every reference to it.

        Raises:
            LocalProtocolError: ``obj`` is not alive in this world.
        """
        if obj._world is not self:
            raise LocalProtocolError(f"{type(obj).__name__} {obj.id} is not alive in this world")
        ident, row = obj.id, obj._row
        self._forget(obj)
        self._null_references(ident)
        self._changes.destroyed.append((ident, type(obj), row))

    def set_owner(self, obj: NetworkObject, owner: int | None) -> None:
        """Transfer ownership of ``obj`` to client ``owner`` (None: server-owned)."""
        if obj._world is not self:
            raise LocalProtocolError(f"{type(obj).__name__} {obj.id} is not alive in this world")
        obj.owner = owner
        self._changes.owners[obj.id] = owner

    def changes(self) -> WorldChanges:
        """Return and clear what happened since the last call."""
        changes, self._changes = self._changes, WorldChanges()
        return changes

    # -- lookup -------------------------------------------------------------------------------

    def find(self, ident: int) -> NetworkObject | None:
        """The object holding ``ident``, or None."""
        return self.pool.find(ident)

    def resolve(self, ref: IdRef) -> NetworkObject | None:
        """The referenced object while its assignment lives (generation 0: the ID's holder)."""
        if ref.generation == 0:
            return self.pool.find(ref.id) if ref.id != NO_ID else None
        return self.pool.resolve(ref)

    def __iter__(self) -> Iterator[NetworkObject]:
        """Objects in ascending ID order."""
        return (obj for _, obj in self.pool)

    def __len__(self) -> int:
        """Number of live objects."""
        return len(self.pool)

    # -- savegames ----------------------------------------------------------------------------

    def save(self) -> dict[str, Any]:
        """Return the world as JSON data (every object, every field, the pool's next ID)."""
        return {
            "format": SAVE_FORMAT,
            "pool": {"name": self.pool.name, "next_id": self.pool.next_id},
            "objects": [
                {
                    "class": obj.class_id,
                    "id": obj.id,
                    "owner": obj.owner,
                    "fields": {f.name: f.to_json(getattr(obj, f.name)) for f in obj.schema.fields},
                }
                for obj in self
            ],
        }

    def load(self, data: Mapping[str, Any]) -> None:
        """Replace this world's objects with a `save` result (same IDs, same next ID).

        Raises:
            LocalProtocolError: the data is not a save of known classes and valid values.
        """
        if not isinstance(data, Mapping) or data.get("format") != SAVE_FORMAT:
            raise LocalProtocolError(f"expected a {SAVE_FORMAT!r} savegame")
        entries = data.get("objects")
        pool = data.get("pool")
        if not isinstance(entries, list) or not isinstance(pool, Mapping):
            raise LocalProtocolError("savegame needs 'objects' (list) and 'pool' (mapping)")
        for obj in list(self):
            self._forget(obj)
        self.pool.reset()
        for entry in entries:
            if not isinstance(entry, Mapping):
                raise LocalProtocolError(f"savegame object must be a mapping, got {entry!r}")
            cls = self.registry.get(str(entry.get("class")))
            fields = entry.get("fields")
            owner = entry.get("owner")
            if cls is None or not isinstance(fields, Mapping):
                raise LocalProtocolError(f"savegame object of unknown class: {entry!r}")
            if owner is not None and not isinstance(owner, int):
                raise LocalProtocolError(f"savegame owner must be an int or null, got {owner!r}")
            values = {}
            for name, raw in fields.items():
                f = cls.schema.by_name.get(name)
                if f is None:
                    raise LocalProtocolError(f"{cls.__name__} has no field {name!r}")
                values[name] = f.from_json(raw)
            ident = entry.get("id")
            if isinstance(ident, bool) or not isinstance(ident, int):
                raise LocalProtocolError(f"savegame ID must be an int, got {ident!r}")
            self.spawn(cls, ident=ident, owner=owner, **values)
        next_id = pool.get("next_id")
        if isinstance(next_id, int) and not isinstance(next_id, bool):
            self.pool.advance(next_id)
        self._changes = WorldChanges()

    # -- internals ----------------------------------------------------------------------------

    def _write(self, obj: NetworkObject, f: Field[Any], value: Any, *, quiet: bool = False) -> None:
        table = obj._table
        assert table is not None
        if isinstance(f, _BlobField):
            f.to_bytes(value)  # validates type and length
            table.blobs[f.slot][obj._row] = value
            if not quiet:
                self._changes.blobs.setdefault(obj.id, set()).add(f.slot)
            return
        assert isinstance(f, NumericField)
        if isinstance(f, RefField):
            value = self._as_ref(value, f)
        table.values[obj._row, f.slot : f.slot + f.dims] = f.to_slots(value)
        if obj.role is Role.OWNER and not quiet:
            self._changes.owner_writes.add(obj.id)

    def _as_ref(self, value: Any, f: RefField) -> IdRef:
        if value is None:
            return NULL_REF
        if isinstance(value, IdRef):
            return value
        if isinstance(value, NetworkObject):
            if value._world is not self:
                raise LocalProtocolError(f"{f.name}: the referenced object is not in this world")
            return self.pool.ref(value.id)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return IdRef(value, self.pool.generation(value))
        raise LocalProtocolError(
            f"{f.name} takes a NetworkObject, IdRef, ID or None, got {value!r}"
        )

    def _forget(self, obj: NetworkObject) -> None:
        table = obj._table
        assert table is not None
        table.remove(obj._row)
        self.pool.invalidate(obj.id)
        obj._world, obj._table, obj._row = None, None, -1
        obj.id = NO_ID

    def _null_references(self, ident: int) -> None:
        code = float(ident + 1)
        for table in self.tables.values():
            for f in table.schema.numeric:
                if isinstance(f, RefField):
                    column = table.values[: table.size, f.slot]
                    hit = np.flatnonzero(column == code)
                    table.values[hit, f.slot : f.slot + 2] = 0.0
