"""The sans-I/O replication client on top of the transport's `Client` (issue 13 items 3, 5-7).

Implements the remote side of spec 003 §5.4.5's lifecycle: an announcement constructs the
counterpart with the authority's ID (explicit ID assignment, spec 003 §5.3) and the proxy role,
or the owner role when this client owns it, and calls its ``on_announced`` with the announcement
data; snapshots update it; a destroy removes it and nulls every reference to it. Owned objects'
``Writer.OWNER`` fields go to the server every tick they changed. Events are stamped with the
server's clock as this client estimates it (the transport's clock sync, spec 004 §4.4.5) once it
is synchronised, and with the local ``now`` before.

Remote objects are shown through `lagless.smoothing` display models by an optional `Display`
(``display.py``) that the client feeds every snapshot, stamped with the snapshot's server time.

Owner updates ride the unreliable-sequenced channel, so a lost one is never resent: a written
object's ``Writer.OWNER`` fields go out on each of the next `OWNER_REDUNDANCY` ticks (with 20 %
loss all four are lost once in 625 writes; the next write repairs it).

Decisions: a control message that fails to decode is dropped whole and counted (the reliable
channel will not resend it: the client's world may then miss objects, which is what a malicious
or broken server deserves; a correct server never sends one). An announcement of an ID already
present, an operation on an unknown ID and a string/bytes value longer than its field are
counted and skipped.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from typing import Final

import numpy as np

from lagless._types import Address
from lagless.errors import LocalProtocolError
from lagless.replication.display import Display
from lagless.replication.events import NetEvent, Target
from lagless.replication.messages import (
    MAX_OPS,
    MSG_CONTROL,
    MSG_EVENT,
    Announce,
    BlobSet,
    ControlOp,
    Destroy,
    OwnerChange,
    Welcome,
    decode_control,
    decode_event,
    encode_event,
    encode_owner_update,
    message_type,
)
from lagless.replication.objects import NetworkObject, Role, World
from lagless.replication.server import (
    OWNER_CHANNEL,
    SNAPSHOT_CHANNEL,
    ReplicationConfig,
    event_channel,
)
from lagless.replication.session import (
    EventReceived,
    ObjectAnnounced,
    ObjectDestroyed,
    OwnerChanged,
    ReplicationEvent,
    SnapshotReceived,
    Welcomed,
)
from lagless.replication.snapshot import MSG_SNAPSHOT, SnapshotReader
from lagless.transport import Client, Disconnected, MessageReceived
from lagless.wire import DecodeError

__all__ = ["OWNER_REDUNDANCY", "ReplicationClient"]

OWNER_REDUNDANCY: Final = 4  # ticks an owner write is sent (unreliable, never resent)


class ReplicationClient:
    """Replicas of a server's world, over a transport `Client`.

    Args:
        transport: The transport client (connect it before or after wrapping).
        world: The replica world; register the same classes as the server.
        config: Tick rate of owner updates.
        events: The event classes the server may send.
        display: Smoothing display models for the replicas (`Display`), or None.
    """

    def __init__(
        self,
        transport: Client,
        world: World,
        *,
        config: ReplicationConfig | None = None,
        events: Iterable[type[NetEvent]] = (),
        display: Display | None = None,
    ) -> None:
        self.transport = transport
        self.display = display
        """Smoothing display models fed from every snapshot, or None."""
        self.world = world
        self.config = ReplicationConfig() if config is None else config
        self.reader = SnapshotReader(world)
        self.client_id: int | None = None
        """This client's id as the server names it (set by the welcome)."""
        self._event_classes = {cls.class_id: cls for cls in events}
        self._events: deque[ReplicationEvent] = deque()
        self._now = 0.0
        self._next_tick: float | None = None
        self._owner_sends: dict[int, int] = {}  # object ID -> ticks its owner fields still go out
        self.drops: Counter[str] = Counter()
        """Server messages or operations dropped, by reason."""

    # -- game verbs ---------------------------------------------------------------------------

    def send_event(self, event: NetEvent, target: Target, now: float) -> None:
        """Send an event to ``target`` through the server, stamped with the synchronised time.

        Raises:
            LocalProtocolError: not welcomed by the server yet.
        """
        if self.client_id is None:
            raise LocalProtocolError("send_event needs a client the server has welcomed")
        payload = encode_event(event, self.client_id, target, self.server_time(now))
        self.transport.send(event_channel(event), payload)

    def server_time(self, now: float) -> float:
        """The server's clock at local ``now`` (seconds); ``now`` until clock sync converges."""
        return self.transport.server_time(now) if self.transport.synchronized else now

    # -- sans-I/O -----------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises. Pump afterwards."""
        self._now = max(self._now, now)
        self.transport.receive_datagram(data, addr, now)
        self._drain()

    def handle_timer(self, now: float) -> None:
        """Run transport timers and, when due, send owner updates. Pump afterwards."""
        self._now = max(self._now, now)
        self.transport.handle_timer(now)
        self._drain()
        if self._next_tick is not None and now >= self._next_tick:
            self._tick()
            self._next_tick = max(self._next_tick + 1.0 / self.config.tick_rate, now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """The transport's datagrams."""
        return self.transport.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """The earliest of the transport's deadline and the next tick (seconds)."""
        times = [t for t in (self.transport.next_timer(), self._next_tick) if t is not None]
        return min(times) if times else None

    def next_event(self) -> ReplicationEvent | None:
        """The next replication event, or None."""
        return self._events.popleft() if self._events else None

    # -- internals ----------------------------------------------------------------------------

    def _tick(self) -> None:
        for ident in self.world.changes().owner_writes:
            self._owner_sends[ident] = OWNER_REDUNDANCY
        owned = [self.world.find(i) for i in sorted(self._owner_sends)]
        mine = [o for o in owned if o is not None and o.role is Role.OWNER]
        for ident in list(self._owner_sends):
            self._owner_sends[ident] -= 1
            if self._owner_sends[ident] <= 0:
                del self._owner_sends[ident]
        if mine and self.transport.connected:
            self.transport.send(OWNER_CHANNEL, encode_owner_update(mine[:MAX_OPS]))

    def _drain(self) -> None:
        while (event := self.transport.next_event()) is not None:
            if isinstance(event, MessageReceived):
                self._on_message(event.payload)
            elif isinstance(event, Disconnected):
                self._next_tick = None

    def _on_message(self, payload: bytes) -> None:
        kind = message_type(payload)
        try:
            if kind == MSG_CONTROL:
                for op in decode_control(payload, self.world.registry):
                    self._apply(op)
            elif kind == MSG_SNAPSHOT:
                info = self.reader.read(payload)
                ack = self.reader.ack()
                if ack is not None and self.transport.connected:
                    self.transport.send(SNAPSHOT_CHANNEL, ack)
                event = SnapshotReceived(info.seq, info.server_time, info.updated)
                if self.display is not None:
                    self.display.update(event, self._now, self.server_time(self._now))
                self._events.append(event)
            elif kind == MSG_EVENT:
                message = decode_event(payload, self._event_classes)
                self._events.append(
                    EventReceived(message.event, message.sender, message.target, message.time)
                )
            else:
                self.drops["unknown_type"] += 1
        except DecodeError:
            self.drops["malformed"] += 1

    def _apply(self, op: ControlOp) -> None:
        if isinstance(op, Welcome):
            self.client_id = op.client
            self._next_tick = self._now
            self._events.append(Welcomed(op.client))
        elif isinstance(op, Announce):
            self._announce(op)
        elif isinstance(op, Destroy):
            obj = self.world.find(op.ident)
            if obj is None:
                self.drops["unknown_object"] += 1
                return
            cls = type(obj)
            self.world.destroy(obj)
            self.reader.forget(op.ident, cls)
            if self.display is not None:
                self.display.forget(op.ident)
            self._events.append(ObjectDestroyed(op.ident, cls))
        elif isinstance(op, OwnerChange):
            obj = self.world.find(op.ident)
            if obj is None:
                self.drops["unknown_object"] += 1
                return
            obj.owner = op.owner
            obj.role = self._role(op.owner)
            self._events.append(OwnerChanged(obj, op.owner))
        else:
            self._blob(op)

    def _role(self, owner: int | None) -> Role:
        return Role.OWNER if owner is not None and owner == self.client_id else Role.PROXY

    def _announce(self, op: Announce) -> None:
        if self.world.find(op.ident) is not None:
            self.drops["announced_twice"] += 1
            return
        obj: NetworkObject = self.world.spawn(
            op.cls, ident=op.ident, owner=op.owner, role=self._role(op.owner)
        )
        schema = op.cls.schema
        table = obj._table
        assert table is not None
        row = table.values[obj._row : obj._row + 1]
        schema.decode_into(np.array([op.codes], dtype=np.uint64), row, schema.numeric)
        for f, value in zip(schema.blobs, op.blobs, strict=True):
            table.blobs[f.slot][obj._row] = value
        obj.on_announced(op.data)
        self._events.append(ObjectAnnounced(obj))

    def _blob(self, op: BlobSet) -> None:
        obj = self.world.find(op.ident)
        if obj is None or op.index >= len(obj.schema.blobs):
            self.drops["unknown_object"] += 1
            return
        f = obj.schema.blobs[op.index]
        try:
            if len(op.data) > f.max_len:
                raise ValueError("too long")
            value = f.from_bytes(op.data)
        except ValueError:
            self.drops["bad_blob"] += 1
            return
        table = obj._table
        assert table is not None
        table.blobs[f.slot][obj._row] = value
