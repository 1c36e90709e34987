"""The sans-I/O replication server on top of the transport's `Server` (issue 13 items 3-5, 7).

Implements spec 003 §5.4 (the authority side of the remote-object lifecycle: spawn -> announce
-> replicate -> destroy, destroy propagating; ownership; ``ObjectReference`` with "depending")
with the snapshot engine of ``snapshot.py`` and the events of ``events.py``. It is a protocol
object like every other (DESIGN.md "The sans-I/O contract"): a driver feeds datagrams and timers
and pumps it; the game calls `spawn`, writes fields, `destroy`s, `set_owner`s and `send_event`s
between pumps, and a tick runs every ``1 / tick_rate`` seconds inside `handle_timer`.

Channels (the transport's default four): 0 reliable-ordered for control messages (welcome,
announce, destroy, owner, string/bytes fields) and guaranteed events; 2 unreliable-sequenced for
owner updates; 3 unreliable for snapshots, acks and non-guaranteed events.

Decisions:

* **Announce once, on relevance.** An object is announced to a client the first tick the
  interest policy (or, without one, any change) makes it relevant, with its full state; it
  enters that client's snapshots only once the transport reports the announcement delivered
  (`MessageDelivered`), so the client can always parse its records. Objects are not withdrawn
  when they leave a client's interest (the client keeps the last state).
* **Depending references first.** Announcing an object first announces (recursively, cycles
  cut) every object its ``RefField(depending=True)`` fields reference, in the same ordered
  control message, so the referenced replica exists when the holder's is built. When such a
  reference later points to an object a client does not have, that object is announced to it
  in the same tick (the reference itself rides the snapshots and resolves once it arrives).
* **Destroy propagates** to every client the object was announced to, on the control channel.
* **Large initial states.** One tick's control operations for a client go in messages of at most
  `CONTROL_CHUNK` bytes on the reliable-ordered channel, which fragments them (a whole level of
  announcements arrives in order, in a few messages).
* **Owners.** A client may write only the ``Writer.OWNER`` fields of objects it owns; an owner
  update for another client's object is dropped and counted. An object's owner's pivots for the
  interest policy are the positional objects it owns.
* **Events from clients** are re-stamped with the real sender (the id in the message is ignored)
  and relayed by the server: ``ALL`` reaches the server and every other client, ``OWNER`` the
  owner, ``ALL_BUT_OWNER`` every client but the owner and the sender, ``SET`` the listed
  connected clients.
* Malformed input from a client is counted in ``drops`` and never raises.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

import numpy as np
import numpy.typing as npt

from lagless._types import Address
from lagless.errors import ConfigError, LocalProtocolError
from lagless.interest import InterestPolicy
from lagless.replication.events import NetEvent, Target, TargetKind
from lagless.replication.fields import RefField
from lagless.replication.messages import (
    MAX_OPS,
    MSG_EVENT,
    MSG_OWNER_UPDATE,
    Announce,
    BlobSet,
    ControlOp,
    Destroy,
    OwnerChange,
    Welcome,
    decode_event,
    decode_owner_update,
    encode_control,
    encode_event,
    message_type,
)
from lagless.replication.objects import NetworkObject, World
from lagless.replication.session import ClientJoined, ClientLeft, EventReceived, ReplicationEvent
from lagless.replication.snapshot import MSG_ACK, SnapshotConfig, SnapshotEngine, decode_ack
from lagless.transport import (
    ClientConnected,
    ClientDisconnected,
    MessageDelivered,
    MessageReceived,
    Server,
)
from lagless.wire import DecodeError

__all__ = [
    "CONTROL_CHANNEL",
    "OWNER_CHANNEL",
    "SNAPSHOT_CHANNEL",
    "ReplicationConfig",
    "ReplicationServer",
]

CONTROL_CHANNEL: Final = 0  # reliable-ordered (transport default channel 0)
OWNER_CHANNEL: Final = 2  # unreliable-sequenced
SNAPSHOT_CHANNEL: Final = 3  # unreliable
CONTROL_CHUNK: Final = 64 * 1024  # bytes: control messages are cut here (transport max 256 KiB)
ObjT = TypeVar("ObjT", bound=NetworkObject)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicationConfig:
    """Settings shared by the replication server and client."""

    tick_rate: float = 20.0
    """Ticks per second (Hz): snapshots on the server, owner updates on a client."""
    snapshot: SnapshotConfig = field(default_factory=SnapshotConfig)
    """The server's snapshot budget and resend settings."""

    def __post_init__(self) -> None:
        """Validate; raise `ConfigError` naming the field."""
        if not 1.0 <= self.tick_rate <= 240.0:
            raise ConfigError(f"tick_rate must be in [1, 240] Hz, got {self.tick_rate}")


def _chunks(ops: list[ControlOp]) -> list[list[ControlOp]]:
    """Split control ops into messages of at most `CONTROL_CHUNK` bytes and `MAX_OPS` ops."""
    chunks: list[list[ControlOp]] = [[]]
    size = 0
    for op in ops:
        op_size = len(encode_control([op]))
        if chunks[-1] and (size + op_size > CONTROL_CHUNK or len(chunks[-1]) == MAX_OPS):
            chunks.append([])
            size = 0
        chunks[-1].append(op)
        size += op_size
    return [c for c in chunks if c]


def event_channel(event: NetEvent) -> int:
    """The channel of an event: reliable-ordered when guaranteed, unreliable otherwise."""
    return CONTROL_CHANNEL if event.guaranteed else SNAPSHOT_CHANNEL


class ReplicationServer:
    """The authority: replicates a `World` to every connected client of a transport `Server`.

    Args:
        transport: The transport server (insecure or secure).
        world: The authority world (objects made with `spawn` or ``world.spawn``).
        config: Tick rate and snapshot settings.
        policy: An interest policy for relevance and update rate, or None (every object is
            relevant to every client).
        events: The event classes clients may send.
    """

    def __init__(
        self,
        transport: Server,
        world: World,
        *,
        config: ReplicationConfig | None = None,
        policy: InterestPolicy | None = None,
        events: Iterable[type[NetEvent]] = (),
    ) -> None:
        self.transport = transport
        self.world = world
        self.config = ReplicationConfig() if config is None else config
        self.engine = SnapshotEngine(world, self.config.snapshot, policy)
        self._event_classes = {cls.class_id: cls for cls in events}
        self._events: deque[ReplicationEvent] = deque()
        self._now = 0.0
        self._next_tick: float | None = None
        self._announcing: dict[tuple[int, int], list[tuple[NetworkObject, npt.NDArray[Any]]]] = {}
        self._ref_codes: dict[tuple[type[NetworkObject], str], npt.NDArray[np.float64]] = {}
        self.drops: Counter[str] = Counter()
        """Client messages dropped, by reason."""
        self.ticks = 0
        """Ticks run."""

    # -- game verbs ---------------------------------------------------------------------------

    @property
    def clients(self) -> list[int]:
        """Ids of the connected clients."""
        return self.engine.clients

    def spawn(
        self, cls: type[ObjT], *, owner: int | None = None, ident: int | None = None, **values: Any
    ) -> ObjT:
        """Create an authority object (announced to clients from the next tick on)."""
        return self.world.spawn(cls, owner=owner, ident=ident, **values)

    def destroy(self, obj: NetworkObject) -> None:
        """Destroy an object; its replicas are destroyed at the next tick."""
        self.world.destroy(obj)

    def set_owner(self, obj: NetworkObject, client: int | None) -> None:
        """Give ``obj`` to ``client`` (None: back to the server); replicas learn it next tick."""
        self.world.set_owner(obj, client)

    def send_event(self, event: NetEvent, target: Target, now: float) -> None:
        """Send an event from the server to ``target``'s clients, stamped with ``now``.

        Raises:
            LocalProtocolError: ``target`` is the server itself.
        """
        if target.kind is TargetKind.SERVER:
            raise LocalProtocolError("the server cannot send an event to itself")
        payload = encode_event(event, None, target, now)
        for key in self._recipients(target, None):
            self.transport.send(key, event_channel(event), payload)

    # -- sans-I/O -----------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises. Pump afterwards."""
        self._now = max(self._now, now)
        self.transport.receive_datagram(data, addr, now)
        self._drain(now)

    def handle_timer(self, now: float) -> None:
        """Run transport timers and the tick when due. Pump afterwards."""
        self._now = max(self._now, now)
        self.transport.handle_timer(now)
        self._drain(now)
        if self._next_tick is None:
            self._next_tick = now
        if now >= self._next_tick:
            self.tick(now)
            period = 1.0 / self.config.tick_rate
            self._next_tick = max(self._next_tick + period, now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """The transport's datagrams."""
        return self.transport.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """The earliest of the transport's deadline and the next tick (seconds)."""
        times = [t for t in (self.transport.next_timer(), self._next_tick) if t is not None]
        if self._next_tick is None:
            times.append(self._now)
        return min(times)

    def next_event(self) -> ReplicationEvent | None:
        """The next replication event, or None."""
        return self._events.popleft() if self._events else None

    # -- the tick -----------------------------------------------------------------------------

    def tick(self, now: float) -> None:
        """Propagate lifecycle changes, then send every client its announcements and snapshot."""
        self.ticks += 1
        ops: dict[int, list[ControlOp]] = {}
        records: dict[int, list[tuple[ControlOp, tuple[NetworkObject, npt.NDArray[Any]]]]] = {}
        changes = self.world.changes()
        for ident, cls, row in changes.destroyed:  # first: a new object may reuse the row
            for key in self.engine.announced_clients(cls, row):
                ops.setdefault(key, []).append(Destroy(ident))
            self.engine.object_removed(cls, row)
        for obj in changes.spawned:
            if obj.alive:
                self.engine.object_added(obj)
        repivot = any(o.alive and o.owner is not None for o in changes.spawned)
        for ident, owner in changes.owners.items():
            obj = self.world.find(ident)
            if obj is None:
                continue
            repivot = True
            for key in self.engine.announced_clients(type(obj), obj._row):
                ops.setdefault(key, []).append(OwnerChange(ident, owner))
        for ident, indices in changes.blobs.items():
            obj = self.world.find(ident)
            if obj is None:
                continue
            for key in self.engine.announced_clients(type(obj), obj._row):
                for index in sorted(indices):
                    blob = obj.schema.blobs[index]
                    data = blob.to_bytes(getattr(obj, blob.name))
                    ops.setdefault(key, []).append(BlobSet(ident, index, data))
        if repivot or changes.destroyed:
            self._set_pivots()
        snapshots = self.engine.tick(now)
        for key, obj in self.engine.announcements_due():
            self._announce(key, obj, ops.setdefault(key, []), records.setdefault(key, []))
        for holder, target in self._retargeted():
            for key in self.engine.announced_clients(type(holder), holder._row):
                if not self.engine.is_announced(key, target):
                    self.engine.mark_relevant(key, target)
                    self._announce(
                        key, target, ops.setdefault(key, []), records.setdefault(key, [])
                    )
        for key, key_ops in ops.items():
            pending = {id(op): record for op, record in records.get(key, [])}
            for chunk in _chunks(key_ops):
                message_id = self.transport.send(key, CONTROL_CHANNEL, encode_control(chunk))
                announced = [pending[id(op)] for op in chunk if id(op) in pending]
                if message_id is not None and announced:
                    self._announcing[(key, message_id)] = announced
        for key, payload in snapshots.items():
            self.transport.send(key, SNAPSHOT_CHANNEL, payload)

    def _retargeted(self) -> list[tuple[NetworkObject, NetworkObject]]:
        """``(holder, new target)`` of every depending reference that changed since last tick."""
        out = []
        for cls, table in self.world.tables.items():
            for f in cls.schema.numeric:
                if not (isinstance(f, RefField) and f.depending):
                    continue
                n = table.size
                column = table.values[:n, f.slot].copy()
                prev = self._ref_codes.get((cls, f.name))
                if prev is None or prev.shape[0] < n:
                    grown = np.zeros(n, dtype=np.float64)
                    if prev is not None:
                        grown[: prev.shape[0]] = prev
                    prev = grown
                changed = np.flatnonzero((column != prev[:n]) & (column > 0) & (table.ids[:n] >= 0))
                self._ref_codes[(cls, f.name)] = column
                for row in changed.tolist():
                    target = self.world.find(int(column[row]) - 1)
                    if target is not None:
                        out.append((table.objects[row], target))
        return out

    def _set_pivots(self) -> None:
        """Each client's interest pivots: the positional objects it owns (one pass)."""
        owned: dict[int, list[NetworkObject]] = {key: [] for key in self.clients}
        for obj in self.world:
            if obj.owner in owned and obj.position_field is not None:
                owned[obj.owner].append(obj)
        for key, objects in owned.items():
            self.engine.set_pivots(key, objects)

    def _announce(
        self,
        key: int,
        obj: NetworkObject,
        ops: list[ControlOp],
        records: list[tuple[ControlOp, tuple[NetworkObject, npt.NDArray[Any]]]],
    ) -> None:
        if self.engine.is_announced(key, obj):
            return
        self.engine.mark_announced(key, obj, delivered=False)
        schema = obj.schema
        for f in schema.numeric:
            if isinstance(f, RefField) and f.depending:
                target = self.world.resolve(getattr(obj, f.name))
                if target is not None:
                    self.engine.mark_relevant(key, target)
                    self._announce(key, target, ops, records)
        table = obj._table
        assert table is not None
        row = table.values[obj._row : obj._row + 1]
        codes = schema.encode(row, schema.numeric)[0]
        blobs = tuple(getattr(obj, f.name) for f in schema.blobs)
        data = obj.announcement_data()
        op = Announce(type(obj), obj.id, obj.owner, data, tuple(codes.tolist()), blobs)
        ops.append(op)
        records.append((op, (obj, schema.encode(row)[0])))

    # -- input --------------------------------------------------------------------------------

    def _drain(self, now: float) -> None:
        while (event := self.transport.next_event()) is not None:
            if isinstance(event, MessageReceived):
                self._on_message(event.connection_id, event.payload, now)
            elif isinstance(event, MessageDelivered):
                if event.channel == CONTROL_CHANNEL:
                    self._delivered(event.connection_id, event.message_id)
            elif isinstance(event, ClientConnected):
                self.engine.add_client(event.connection_id)
                self.transport.send(
                    event.connection_id,
                    CONTROL_CHANNEL,
                    encode_control([Welcome(event.connection_id)]),
                )
                self._events.append(ClientJoined(event.connection_id))
            elif isinstance(event, ClientDisconnected):
                if event.connection_id in self.engine.clients:
                    self.engine.remove_client(event.connection_id)
                    self._events.append(ClientLeft(event.connection_id))
                for pending in [k for k in self._announcing if k[0] == event.connection_id]:
                    del self._announcing[pending]

    def _delivered(self, key: int, message_id: int) -> None:
        for obj, codes in self._announcing.pop((key, message_id), ()):
            if obj.alive:
                self.engine.mark_announced(key, obj, delivered=True)
                self.engine.announced_codes(key, obj, codes)

    def _on_message(self, key: int, payload: bytes, now: float) -> None:
        kind = message_type(payload)
        try:
            if kind == MSG_ACK:
                self.engine.on_ack(key, *decode_ack(payload))
            elif kind == MSG_OWNER_UPDATE:
                self._owner_update(key, payload)
            elif kind == MSG_EVENT:
                self._client_event(key, payload)
            else:
                self.drops["unknown_type"] += 1
        except DecodeError:
            self.drops["malformed"] += 1

    def _owner_update(self, key: int, payload: bytes) -> None:
        for obj, codes in decode_owner_update(payload, self.world.find):
            if obj.owner != key:
                self.drops["not_owner"] += 1
                continue
            schema = obj.schema
            table = obj._table
            assert table is not None
            schema.decode_into(
                np.array([codes], dtype=np.uint64),
                table.values[obj._row : obj._row + 1],
                schema.owner_fields,
            )

    def _client_event(self, key: int, payload: bytes) -> None:
        message = decode_event(payload, self._event_classes)
        event, target = message.event, message.target
        if target.kind in (TargetKind.SERVER, TargetKind.ALL):
            self._events.append(EventReceived(event, key, target, message.time))
        if target.kind is TargetKind.SERVER:
            return
        relayed = encode_event(event, key, target, message.time)
        try:
            for recipient in self._recipients(target, key):
                self.transport.send(recipient, event_channel(event), relayed)
        except LocalProtocolError:  # re-stamped, it no longer fits an unreliable message
            self.drops["event_too_large"] += 1

    def _recipients(self, target: Target, sender: int | None) -> list[int]:
        clients = self.clients
        if target.kind is TargetKind.SET:
            chosen = [c for c in target.clients if c in clients]
        elif target.kind is TargetKind.ALL:
            chosen = clients
        else:
            obj = self.world.find(target.object_id)
            owner = obj.owner if obj is not None else None
            if target.kind is TargetKind.OWNER:
                chosen = [owner] if owner in clients else []
            else:
                chosen = [c for c in clients if c != owner]
        return [c for c in chosen if c is not None and c != sender]
