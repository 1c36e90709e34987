"""The VFC client on the lagless transport: object pool with ownership, client rounds, views.

Implements spec 001 §3.4 (join: register the avatar and the view), §3.5 (the game writes through
object references with no commit; every 33 ms round the client sends only its objects that changed
since the last round; ``get_updated_ids``), §3.8 (client API) and §3.10 (control on the reliable
channel, updates unreliable). ``VfcClient`` wraps a ``lagless.transport.Client`` and presents the
same sans-I/O shape (STYLE §3).

Ambiguity decisions, pinned in ``tests/interest/test_client.py``:

* Calls made before the server's ``Welcome`` (``add_object``, ``set_view``) are queued and sent,
  in order, right after it (``test_calls_before_welcome_are_queued``); at most
  ``MAX_QUEUED_CONTROLS`` of them, beyond which the call raises `SendQueueFull`.
* A control call whose message the transport cannot queue (its reliable channel full: a server
  that stopped acking) raises `SendQueueFull` and changes nothing, so the caller may retry it
  (``test_full_control_queue_raises_and_changes_nothing``); `disconnect` still clears the client
  and counts the lost ``Leave`` in ``drops["leave_queue_full"]``.
* "Changed" means the object's 24-byte quantised record differs from the one last sent, so
  sub-quantum jitter is not sent (``test_unchanged_objects_are_not_sent``).
* Records for objects this client owns are ignored if a server ever sends them.
* With the server's ``delta`` encoding (announced in ``Welcome``) the client keeps, per object,
  the records it decoded by tag and datagram sequence; a record relative to baseline ``b`` shows
  that the server will never use an older one again (its baselines only move forward), so older
  entries are pruned, and at most ``KEPT_SENDS`` entries are kept per object. A datagram is
  acknowledged only if every record in it was decoded, so the server never takes as a baseline
  a record the client lacks; a datagram more than ``ACK_WINDOW`` sequences older than the newest
  is dropped unacknowledged, and an older record never overwrites a replica set from a newer
  datagram. Acks go out in the round after delta datagrams arrived and once more in the next
  (``test_delta_client_rejects_stale_and_missing``,
  ``test_delta_client_keeps_a_bounded_number_of_sends``; end to end
  ``test_server.py::test_delta_encoding_over_lossy_network``).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless._types import Address
from lagless.errors import LocalProtocolError
from lagless.interest.control import (
    ACK_CHANNEL,
    CONTROL_CHANNEL,
    UPDATE_CHANNEL,
    AddObject,
    ChangeClientId,
    ClientIdChanged,
    Control,
    DelObject,
    Join,
    Kick,
    Leave,
    ObjectDeleted,
    Welcome,
    decode_control,
    encode_control,
    view_to_message,
)
from lagless.interest.policy import ROUND_PERIOD
from lagless.interest.records import (
    ACK_WINDOW,
    MAX_DELTA_CHAIN,
    CubeOriObj,
    pack_records,
    read_delta_datagram,
    unpack_records,
    write_update_ack,
)
from lagless.interest.session_events import Joined, Kicked, ObjectRemoved, ReplicasUpdated, VfcEvent
from lagless.interest.view import View
from lagless.transport import Client, SendQueueFull
from lagless.transport.events import MessageReceived
from lagless.transport.netcode_events import Connected
from lagless.wire import DecodeError, seq_diff

__all__ = ["KEPT_SENDS", "VfcClient"]

MAX_QUEUED_CONTROLS: Final = 256  # control calls held before the server's Welcome
KEPT_SENDS: Final = 2 * MAX_DELTA_CHAIN  # decoded sends kept per object as possible baselines
ACK_REPEATS: Final = 2  # rounds that carry an ack after delta datagrams arrived


class _DeltaStore:
    """The client half of the delta encoding: decoded sends by (object, tag), acks to send."""

    def __init__(self) -> None:
        self.records: dict[tuple[int, int], npt.NDArray[np.void]] = {}
        self.sends: dict[int, dict[int, int]] = {}  # object id -> tag -> datagram sequence
        self.applied: dict[int, int] = {}  # object id -> sequence of the replica's record
        self.newest: int | None = None
        self.ack_bits = 0
        self.ack_rounds = 0

    def stale(self, seq: int) -> bool:
        """Whether datagram ``seq`` is too far behind the newest to decode safely."""
        return self.newest is not None and seq_diff(self.newest, seq) > ACK_WINDOW

    def keep(self, oid: int, tag: int, base: int, seq: int, record: npt.NDArray[np.void]) -> None:
        """Store a decoded send and prune the sends older than the baseline it used."""
        tags = self.sends.setdefault(oid, {})
        if base and base in tags:
            floor = tags[base]
            for old in [t for t, s in tags.items() if seq_diff(s, floor) < 0]:
                del tags[old]
                del self.records[(oid, old)]
        tags.pop(tag, None)
        tags[tag] = seq
        self.records[(oid, tag)] = record
        if len(tags) > KEPT_SENDS:
            oldest = max(tags, key=lambda t: seq_diff(seq, tags[t]))
            del tags[oldest]
            del self.records[(oid, oldest)]

    def newer(self, oid: int, seq: int) -> bool:
        """Whether a record from datagram ``seq`` is newer than the replica's; records it."""
        last = self.applied.get(oid)
        if last is not None and seq_diff(seq, last) <= 0:
            return False
        self.applied[oid] = seq
        return True

    def acknowledge(self, seq: int) -> None:
        """Mark datagram ``seq`` decoded in full."""
        if self.newest is None or seq_diff(seq, self.newest) > 0:
            shift = 0 if self.newest is None else seq_diff(seq, self.newest)
            bits = (self.ack_bits << shift | 1 << (shift - 1)) if shift else 0
            self.ack_bits = bits & 0xFFFF_FFFF
            self.newest = seq
        else:
            back = seq_diff(self.newest, seq)
            if 1 <= back <= 32:
                self.ack_bits |= 1 << (back - 1)
        self.ack_rounds = ACK_REPEATS

    def forget(self, oid: int) -> None:
        """Drop everything held for a deleted object."""
        for tag in self.sends.pop(oid, {}):
            del self.records[(oid, tag)]
        self.applied.pop(oid, None)


class VfcClient:
    """VFC4FPS client library (spec 001 §3.8) riding on a transport ``Client``; sans-I/O.

    Connect the transport client first (``connect`` or ``connect_insecure``); this object sends
    ``Join`` as soon as the transport connects.

    Args:
        transport: the transport client it owns from now on.
        round_period: seconds between client rounds (spec 001 §2.9: 33 ms).
    """

    def __init__(self, transport: Client, *, round_period: float = ROUND_PERIOD) -> None:
        if not 0.0 < round_period < math.inf:
            raise LocalProtocolError(f"round_period must be > 0 seconds, got {round_period!r}")
        self.transport = transport
        """The transport client underneath."""
        self.round_period = round_period
        """Seconds between client rounds."""
        self.client_id: int | None = None
        """The id the server assigned (``None`` before ``Welcome``)."""
        self._pool: dict[int, CubeOriObj] = {}
        self._owned: dict[int, bytes] = {}
        self._updated: set[int] = set()
        self._view: tuple[View, tuple[int, ...]] | None = None
        self._queue: list[Control] = []
        self._events: deque[VfcEvent] = deque()
        self._next_round: float | None = None
        self._delta: _DeltaStore | None = None
        self.drops: Counter[str] = Counter()
        """Dropped inputs by reason."""

    # -- client API (spec 001 §3.8) ------------------------------------------------------------

    def is_connected(self) -> bool:
        """Whether the server has welcomed this client."""
        return self.client_id is not None and self.transport.connected

    def add_object(self, obj: CubeOriObj) -> None:
        """Share an object owned by this client; sent to the server at once (``AddObject``).

        Raises:
            LocalProtocolError: the id is already in the pool.
            SendQueueFull: the control channel is full; nothing changed.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if obj.id in self._pool:
            raise LocalProtocolError(f"obj.id must be new to the pool, got {obj.id}")
        record = obj.encode()
        self._control(AddObject(record=record))
        self._pool[obj.id] = obj
        self._owned[obj.id] = record

    def del_object(self, object_id: int) -> None:
        """Delete an object this client owns (``DelObject``).

        Raises:
            LocalProtocolError: the object is not owned by this client.
            SendQueueFull: the control channel is full; nothing changed.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if object_id not in self._owned:
            raise LocalProtocolError(f"object_id must be owned by this client, got {object_id}")
        self._control(DelObject(object_id=object_id))
        del self._owned[object_id]
        del self._pool[object_id]

    def get_object_ref(self, object_id: int) -> CubeOriObj:
        """Return the object in the pool by reference; writes go through it (``GetObjectRef``).

        Raises:
            LocalProtocolError: unknown id.
        """
        if object_id not in self._pool:
            raise LocalProtocolError(f"object_id must be in the pool, got {object_id}")
        return self._pool[object_id]

    def object_ids(self) -> list[int]:
        """Every id in the pool (owned and replicas), ascending."""
        return sorted(self._pool)

    def get_updated_ids(self) -> list[int]:
        """Ids the server refreshed since the last call (``GetUpdatedIDs``)."""
        out = sorted(self._updated)
        self._updated.clear()
        return out

    def get_view(self) -> tuple[View, tuple[int, ...]] | None:
        """The view and pivots last set (``GetPhi``), or ``None``."""
        return self._view

    def set_view(self, view: View, pivots: Sequence[int]) -> None:
        """Replace the view and pivots; sent to the server at once (``SetPhi``).

        Raises:
            SendQueueFull: the control channel is full; nothing changed.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._control(view_to_message(view, pivots=pivots))
        self._view = (view, tuple(int(p) for p in pivots))

    def set_client_id(self, client_id: int) -> None:
        """Ask the server for another client id (``SetClientID``); the answer updates it.

        Raises:
            SendQueueFull: the control channel is full; nothing was sent.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._control(ChangeClientId(client_id=client_id))

    def disconnect(self) -> None:
        """Leave and clear the client state (``DisconnectFromServer``).

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if self.transport.connected:
            try:
                self.transport.send(CONTROL_CHANNEL, encode_control(Leave()))
            except SendQueueFull:
                self.drops["leave_queue_full"] += 1  # the server times the client out instead
        self.client_id = None
        self._pool.clear()
        self._owned.clear()
        self._updated.clear()
        self._queue.clear()
        self._next_round = None
        self._delta = None

    @property
    def encoding(self) -> str | None:
        """The update encoding the server announced (``records`` or ``delta``), or ``None``."""
        if self.client_id is None:
            return None
        return "records" if self._delta is None else "delta"

    # -- sans-I/O shape --------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self.transport.receive_datagram(data, addr, now)
        self._drain(now)

    def handle_timer(self, now: float) -> None:
        """Run transport timers and the client round when due.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self.transport.handle_timer(now)
        self._drain(now)
        if self._next_round is not None and now >= self._next_round:
            self._round()
            self._next_round = max(self._next_round + self.round_period, now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Datagrams the transport has ready."""
        return self.transport.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """Earliest of the transport's deadline and the next client round (seconds)."""
        times = [t for t in (self.transport.next_timer(), self._next_round) if t is not None]
        return min(times) if times else None

    def next_event(self) -> VfcEvent | None:
        """Pop the next session event, or ``None``."""
        return self._events.popleft() if self._events else None

    # -- internals -------------------------------------------------------------------------------

    def _control(self, message: Control) -> None:
        if self.client_id is None:
            if len(self._queue) >= MAX_QUEUED_CONTROLS:
                raise SendQueueFull(
                    f"{MAX_QUEUED_CONTROLS} control calls are queued until the server's Welcome"
                )
            self._queue.append(message)
        else:
            self.transport.send(CONTROL_CHANNEL, encode_control(message))

    def _round(self) -> None:
        """Client round (spec 001 §3.5): send the owned objects whose record changed."""
        delta = self._delta
        if delta is not None and delta.ack_rounds and delta.newest is not None:
            delta.ack_rounds -= 1
            self.transport.send(ACK_CHANNEL, write_update_ack(delta.newest, delta.ack_bits))
        changed = []
        for oid, last in self._owned.items():
            record = self._pool[oid].to_record()
            if record.tobytes() != last:
                self._owned[oid] = record.tobytes()
                changed.append(record)
        if changed:
            for payload in pack_records(np.concatenate(changed)):
                self.transport.send(UPDATE_CHANNEL, payload)

    def _drain(self, now: float) -> None:
        while (event := self.transport.next_event()) is not None:
            match event:
                case Connected():
                    self.transport.send(CONTROL_CHANNEL, encode_control(Join()))
                case MessageReceived(channel=ch, payload=p) if ch == CONTROL_CHANNEL:
                    self._on_control(p, now)
                case MessageReceived(channel=ch, payload=p) if ch == UPDATE_CHANNEL:
                    if self._delta is None:
                        self._on_update(p)
                    else:
                        self._on_delta(self._delta, p)
                case _:
                    pass

    def _on_control(self, payload: bytes, now: float) -> None:
        try:
            message = decode_control(payload)
        except DecodeError:
            self.drops["malformed_control"] += 1
            return
        match message:
            case Welcome(client_id=cid, encoding=encoding):
                self.client_id = cid
                self._delta = _DeltaStore() if encoding == "delta" else None
                queued, self._queue = self._queue, []
                for index, item in enumerate(queued):
                    try:
                        self._control(item)
                    except SendQueueFull:  # a transport with a channel smaller than the queue
                        self.drops["control_queue_full"] += len(queued) - index
                        break
                self._next_round = now + self.round_period
                self._events.append(Joined(client_id=cid))
            case ClientIdChanged(client_id=cid):
                self.client_id = cid
            case ObjectDeleted(object_id=oid):
                if oid not in self._owned:
                    if self._delta is not None:
                        self._delta.forget(oid)
                    self._pool.pop(oid, None)
                    self._updated.discard(oid)
                    self._events.append(ObjectRemoved(object_id=oid))
            case Kick(reason=reason):
                self._events.append(Kicked(reason=reason))
                self.transport.disconnect()
                self.client_id = None
                self._next_round = None
                self._delta = None
            case _:
                self.drops["unhandled_control"] += 1

    def _on_update(self, payload: bytes) -> None:
        try:
            records = unpack_records(payload)
        except DecodeError:
            self.drops["malformed_update"] += 1
            return
        refreshed = []
        for i in range(records.shape[0]):
            oid = int(records["id"][i])
            if oid in self._owned:
                self.drops["own_record"] += 1
                continue
            obj = self._pool.get(oid)
            if obj is None:
                obj = self._pool[oid] = CubeOriObj(id=oid)
            obj.assign(records[i : i + 1])
            refreshed.append(oid)
        self._updated.update(refreshed)
        if refreshed:
            self._events.append(ReplicasUpdated(object_ids=tuple(refreshed)))

    def _on_delta(self, store: _DeltaStore, payload: bytes) -> None:
        """Decode a delta datagram against the kept sends; acknowledge it if complete."""
        try:
            seq, records, missing = read_delta_datagram(payload, store.records)
        except DecodeError:
            self.drops["malformed_update"] += 1
            return
        if store.stale(seq):
            self.drops["stale_update"] += 1
            return
        self.drops["missing_baseline"] += missing
        refreshed = []
        for item in records:
            oid = int(item.record["id"][0])
            if oid in self._owned:
                self.drops["own_record"] += 1
                continue
            store.keep(oid, item.tag, item.base, seq, item.record)
            if not store.newer(oid, seq):
                continue
            obj = self._pool.get(oid)
            if obj is None:
                obj = self._pool[oid] = CubeOriObj(id=oid)
            obj.assign(item.record)
            refreshed.append(oid)
        if not missing:
            store.acknowledge(seq)
        self._updated.update(refreshed)
        if refreshed:
            self._events.append(ReplicasUpdated(object_ids=tuple(refreshed)))
