"""The VFC server on the lagless transport: control channel, update rounds, primary repository.

Implements spec 001 §3.6, §3.8 (server API: ``get_object``, the two event queries), §3.9 (the
primary repository with an owner map and the per-object cache of the last received encoded
record), §3.10 (reliable control channel, unreliable update channel without retransmission) and
§4.5.2 (per round, every record due to one client is concatenated and bitmap-compressed into one
datagram). ``VfcServer`` wraps a ``lagless.transport.Server`` and presents the same sans-I/O
shape (STYLE §3), delegating datagrams and timers to it and adding its own 33 ms round timer.

Ambiguity decisions, pinned in ``tests/interest/test_server.py``:

* The first object a client adds becomes its pivot unless its ``SetView`` named pivots (the
  thesis registers the avatar as the pivot, §3.4) (``test_updates_flow_between_clients``).
* A client's objects are deleted when it leaves, and every other client is told with
  ``ObjectDeleted`` on the control channel (``test_leave_deletes_objects``).
* An update record for an object the sender does not own, or a malformed datagram, is counted in
  ``drops`` by reason and ignored (``test_foreign_records_are_dropped``).
* ``kick`` sends ``Kick`` reliably and frees the connection ``kick_grace`` seconds later.
* ``Leave`` takes effect at once: the client's objects are deleted and ``ClientLeft`` is queued
  before the next message is read, so messages behind it in the same packet (``ChangeClientId``,
  ``AddObject``, even ``Join``) are dropped as ``not_joined`` or ``gone``
  (``test_server_robustness.py::test_leave_then_change_client_id_in_one_packet``).
* Clients are named by the transport's never-reused connection ids, and a verb on a connection
  that has gone away is a no-op there, so a client that times out while the server is still
  telling it about another leaving client is no error, and every leave removes the client
  from the policy: no ghosts
  (``test_server_robustness.py::test_clients_timing_out_together_leave_no_ghosts``).
* ``encoding="records"`` (default) sends the thesis's bitmap-compressed records;
  ``encoding="delta"`` sends each record as its quantised difference from the last value that
  client acknowledged (``Welcome`` tells the client which). Acknowledgement is at the application
  level, not the transport's ``PacketDelivered``: the transport reports packet sequences and
  does not say which packet carried an unreliable message. The client answers every round in
  which delta datagrams arrived (and the next round again) with ``write_update_ack`` on
  ``ACK_CHANNEL``; an acknowledged record becomes the (client, object) baseline only if it is
  newer than the current one, so baselines never move back and a lost datagram never becomes a
  baseline. A baseline older than ``MAX_DELTA_CHAIN`` sends is dropped (the next send is
  absolute), and sends not acknowledged within ``ACK_WINDOW`` datagrams are forgotten, which
  bounds the state and lets a client that lost a baseline recover
  (``test_delta_encoding_over_lossy_network``, ``test_delta_baselines_only_from_acks``).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless._types import Address
from lagless.errors import ConfigError, LocalProtocolError
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
    ObjectRejected,
    SetView,
    Welcome,
    decode_control,
    encode_control,
    message_to_view,
)
from lagless.interest.policy import ROUND_PERIOD
from lagless.interest.records import (
    ACK_WINDOW,
    CUBE_UNIT,
    MAX_DELTA_CHAIN,
    RECORD_DTYPE,
    RECORD_SIZE,
    delta_datagram_starts,
    delta_record_bits,
    dequantise_headings,
    dequantise_positions,
    pack_records,
    read_update_ack,
    unpack_records,
    write_delta_datagram,
)
from lagless.interest.session_events import (
    ClientJoined,
    ClientLeft,
    ObjectAdded,
    ObjectRemoved,
    VfcEvent,
    ViewChanged,
)
from lagless.interest.vfc import VfcConfig, VfcPolicy
from lagless.interest.view import View, normal_view
from lagless.transport import Server
from lagless.transport.events import MessageReceived
from lagless.transport.netcode_events import ClientDisconnected
from lagless.wire import DecodeError

__all__ = ["ENCODINGS", "VfcServer", "VfcServerConfig"]

ENCODINGS: Final = ("records", "delta")
_ACK_BITS: Final = 32  # datagrams before ``ack`` an acknowledgement covers


@dataclass(frozen=True, slots=True, kw_only=True)
class VfcServerConfig:
    """Settings of a ``VfcServer``."""

    round_period: float = ROUND_PERIOD
    """Seconds between server rounds (spec 001 §2.9: 33 ms)."""
    default_view: View = field(default_factory=lambda: normal_view(CUBE_UNIT))
    """View of a client that never sent ``SetView`` (Table 5.1, 1 unit = 0.125 m)."""
    kick_grace: float = 0.5
    """Seconds between sending ``Kick`` and freeing the connection."""
    encoding: str = "records"
    """Update datagrams: ``records`` (thesis, §4.5) or ``delta`` (quantised delta against the
    last value the client acknowledged; lagless's improvement)."""

    def __post_init__(self) -> None:
        """Validate.

        Raises:
            ConfigError: naming the offending field.
        """
        if not 0.0 < self.round_period < math.inf:
            raise ConfigError(f"round_period must be > 0 seconds, got {self.round_period!r}")
        if not 0.0 <= self.kick_grace < math.inf:
            raise ConfigError(f"kick_grace must be >= 0 seconds, got {self.kick_grace!r}")
        if not isinstance(self.default_view, View):
            raise ConfigError(f"default_view must be a View, got {self.default_view!r}")
        if self.encoding not in ENCODINGS:
            raise ConfigError(f"encoding must be one of {ENCODINGS}, got {self.encoding!r}")


class _Baselines:
    """One client's delta state: acknowledged baselines and the sends awaiting an ack.

    Arrays are indexed by the policy's object index; ``sends`` counts the sends of each object to
    this client (send ``k`` carries tag ``k % 255 + 1``), ``base_send`` is the send number of
    the baseline (-1: none yet) and ``valid`` says whether the baseline may be used.
    """

    def __init__(self, capacity: int) -> None:
        self.records = np.zeros(capacity, dtype=RECORD_DTYPE)
        self.valid = np.zeros(capacity, dtype=np.bool_)
        self.base_send = np.full(capacity, -1, dtype=np.int64)
        self.sends = np.zeros(capacity, dtype=np.int64)
        self.seq = 0
        self.inflight: dict[
            int,
            tuple[
                npt.NDArray[np.intp],
                npt.NDArray[np.int64],
                npt.NDArray[np.int64],
                npt.NDArray[np.void],
            ],
        ] = {}

    def grow(self, capacity: int) -> None:
        old = self.records.shape[0]
        if capacity <= old:
            return
        records = np.zeros(capacity, dtype=RECORD_DTYPE)
        records[:old] = self.records
        self.records = records
        self.valid = np.concatenate([self.valid, np.zeros(capacity - old, dtype=np.bool_)])
        self.base_send = np.concatenate([self.base_send, np.full(capacity - old, -1, np.int64)])
        self.sends = np.concatenate([self.sends, np.zeros(capacity - old, dtype=np.int64)])

    def forget(self, index: int) -> None:
        """The object at ``index`` was removed: its next incarnation starts from scratch."""
        if index < self.records.shape[0]:
            self.valid[index] = False
            self.base_send[index] = -1
            self.sends[index] = 0


class VfcServer:
    """VFC4FPS server (spec 001 §3.8) riding on a transport ``Server``; sans-I/O.

    Args:
        transport: the transport server (insecure or secure) it owns from now on.
        config: settings.
    """

    def __init__(self, transport: Server, *, config: VfcServerConfig | None = None) -> None:
        self.transport = transport
        """The transport server underneath."""
        self.config = config if config is not None else VfcServerConfig()
        """Settings."""
        self.policy = VfcPolicy(VfcConfig(dim=3, default_view=self.config.default_view))
        """The Consistency Manager (public for tools and tests)."""
        self._conn_client: dict[int, int] = {}
        self._client_conn: dict[int, int] = {}
        self._public: dict[int, int] = {}
        self._objects: dict[int, int] = {}
        self._wire_ids: dict[int, int] = {}
        self._owner: dict[int, int] = {}
        self._records = np.zeros(16, dtype=RECORD_DTYPE)
        self._generation = np.zeros(16, dtype=np.int64)
        self._baselines: dict[int, _Baselines] = {}
        self._explicit_pivots: set[int] = set()
        self._kicks: dict[int, float] = {}
        self._events: deque[VfcEvent] = deque()
        self._next_round: float | None = None
        self._now = -math.inf
        self.drops: Counter[str] = Counter()
        """Dropped inputs by reason."""
        self.bytes_out: Counter[int] = Counter()
        """Payload bytes sent by channel."""

    # -- server API (spec 001 §3.8) ----------------------------------------------------------

    def get_object(self, object_id: int) -> npt.NDArray[np.void]:
        """Return a copy of the primary record of an object (``GetObject``), shape (1,).

        Raises:
            LocalProtocolError: unknown object id.
        """
        if object_id not in self._objects:
            raise LocalProtocolError(f"object_id must be a registered object, got {object_id!r}")
        index = self._objects[object_id]
        return self._records[index : index + 1].copy()

    def client_ids_near(self, position: npt.ArrayLike, radius: float) -> list[int]:
        """Clients with a pivot within ``radius`` metres (positional sound, spec 001 §3.6)."""
        mask = self.policy.filter_sound(position, radius)
        return sorted(self._public[c] for c in np.flatnonzero(mask).tolist() if c in self._public)

    def client_ids_for_shot(
        self, origin: npt.ArrayLike, destination: npt.ArrayLike, max_zone: int
    ) -> list[int]:
        """Clients whose zone ≤ ``max_zone`` holds the shot's origin or destination (§3.6)."""
        mask = self.policy.filter_shot(origin, destination, max_zone)
        return sorted(self._public[c] for c in np.flatnonzero(mask).tolist() if c in self._public)

    @property
    def object_ids(self) -> list[int]:
        """Ids of the registered objects, ascending."""
        return sorted(self._objects)

    @property
    def client_ids(self) -> list[int]:
        """Public ids of the joined clients."""
        return sorted(self._public.values())

    def kick(self, client_id: int, reason: str, now: float) -> None:
        """Force a client off: ``Kick`` on the control channel, disconnected after the grace time.

        Raises:
            LocalProtocolError: unknown client id.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        internal = self._internal(client_id)
        conn = self._client_conn[internal]
        self._send_control(conn, Kick(reason=reason))
        self._kicks[conn] = now + self.config.kick_grace

    # -- sans-I/O shape ----------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._now = max(self._now, now)
        self.transport.receive_datagram(data, addr, now)
        self._drain(now)

    def handle_timer(self, now: float) -> None:
        """Run due transport timers, the round when due, and pending kicks.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._now = max(self._now, now)
        self.transport.handle_timer(now)
        self._drain(now)
        for conn, deadline in list(self._kicks.items()):
            if now >= deadline:
                del self._kicks[conn]
                if conn in self.transport.clients:
                    self.transport.disconnect(conn)
        if self._next_round is not None and now >= self._next_round:
            self._round(now)
            period = self.config.round_period
            self._next_round = max(self._next_round + period, now)
        self._drain(now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Datagrams the transport has ready."""
        return self.transport.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """Earliest of the transport's deadline, the next round and pending kicks (seconds)."""
        times = [t for t in (self.transport.next_timer(), self._next_round) if t is not None]
        times += list(self._kicks.values())
        return min(times) if times else None

    def next_event(self) -> VfcEvent | None:
        """Pop the next session event, or ``None``."""
        return self._events.popleft() if self._events else None

    # -- internals -------------------------------------------------------------------------------

    def _internal(self, client_id: int) -> int:
        for internal, public in self._public.items():
            if public == client_id:
                return internal
        raise LocalProtocolError(f"client_id must be a joined client, got {client_id!r}")

    def _send_control(self, conn: int, message: Control) -> None:
        payload = encode_control(message)
        self.bytes_out[CONTROL_CHANNEL] += len(payload)
        self.transport.send(conn, CONTROL_CHANNEL, payload)

    def _drain(self, now: float) -> None:
        while (event := self.transport.next_event()) is not None:
            match event:
                case MessageReceived(connection_id=conn, channel=ch, payload=p) if (
                    ch == CONTROL_CHANNEL
                ):
                    self._on_control(conn, p, now)
                case MessageReceived(connection_id=conn, channel=ch, payload=p) if (
                    ch == UPDATE_CHANNEL
                ):
                    self._on_update(conn, p, now)
                case MessageReceived(connection_id=conn, channel=ch, payload=p) if (
                    ch == ACK_CHANNEL
                ):
                    self._on_ack(conn, p)
                case ClientDisconnected(connection_id=conn):
                    self._leave(conn)
                case _:
                    pass

    def _on_control(self, conn: int, payload: bytes, now: float) -> None:
        try:
            message = decode_control(payload)
        except DecodeError:
            self.drops["malformed_control"] += 1
            return
        if isinstance(message, Join):
            if not self.transport.is_connected(conn):
                self.drops["gone"] += 1
            elif conn not in self._conn_client:
                self._join(conn, now)
            return
        client = self._conn_client.get(conn)
        if client is None:
            self.drops["not_joined"] += 1
            return
        match message:
            case AddObject(record=record):
                self._add_object(conn, client, record, now)
            case DelObject(object_id=oid):
                self._del_object(conn, client, oid)
            case SetView():
                self._set_view(client, message)
            case ChangeClientId(client_id=wanted):
                taken = wanted in self._public.values() or not 0 <= wanted < 2**31
                if not taken:
                    self._public[client] = wanted
                reply = ClientIdChanged(client_id=self._public[client], accepted=not taken)
                self._send_control(conn, reply)
            case Leave():
                self._leave(conn)
                self.transport.disconnect(conn)
            case _:
                self.drops["wrong_direction"] += 1

    def _join(self, conn: int, now: float) -> None:
        client = self.policy.add_client()
        self._conn_client[conn] = client
        self._client_conn[client] = conn
        public = client
        while public in self._public.values():
            public += 1
        self._public[client] = public
        self._send_control(conn, Welcome(client_id=public, encoding=self.config.encoding))
        if self.config.encoding == "delta":
            self._baselines[client] = _Baselines(self._records.shape[0])
        if self._next_round is None:
            self._next_round = now + self.config.round_period
        self._events.append(ClientJoined(client_id=public))

    def _leave(self, conn: int) -> None:
        client = self._conn_client.pop(conn, None)
        self._kicks.pop(conn, None)
        if client is None:
            return
        del self._client_conn[client]
        for oid in [o for o, owner in self._owner.items() if owner == client]:
            self._remove(oid)
        self.policy.remove_client(client)
        self._baselines.pop(client, None)
        self._explicit_pivots.discard(client)
        public = self._public.pop(client)
        self._events.append(ClientLeft(client_id=public))

    def _add_object(self, conn: int, client: int, record: bytes, now: float) -> None:
        if len(record) != RECORD_SIZE:
            self.drops["malformed_record"] += 1
            return
        rec = np.frombuffer(record, dtype=RECORD_DTYPE)
        oid = int(rec["id"][0])
        if oid < 0 or oid in self._objects:
            self._send_control(conn, ObjectRejected(object_id=oid, reason="id taken or invalid"))
            return
        index = self.policy.add_object(owner=client)
        if index >= self._records.shape[0]:
            size = self._records.shape[0]
            grown = np.zeros(2 * (index + 1), dtype=RECORD_DTYPE)
            grown[:size] = self._records
            self._records = grown
            self._generation = np.concatenate(
                [self._generation, np.zeros(grown.shape[0] - size, dtype=np.int64)]
            )
            for state in self._baselines.values():
                state.grow(grown.shape[0])
        self._objects[oid] = index
        self._wire_ids[index] = oid
        self._owner[oid] = client
        self._store(np.array([index]), rec, now)
        if client not in self._explicit_pivots and not self.policy.pivots_of(client):
            self.policy.set_pivots(client, [index])
        self._events.append(ObjectAdded(object_id=oid, owner=self._public[client]))

    def _del_object(self, conn: int, client: int, oid: int) -> None:
        if self._owner.get(oid) != client:
            self._send_control(conn, ObjectRejected(object_id=oid, reason="not the owner"))
            return
        self._remove(oid)

    def _remove(self, oid: int) -> None:
        index = self._objects.pop(oid)
        del self._wire_ids[index]
        owner = self._owner.pop(oid)
        self.policy.remove_object(index)
        self._generation[index] += 1
        for state in self._baselines.values():
            state.forget(index)
        for other, conn in self._client_conn.items():
            if other != owner:
                self._send_control(conn, ObjectDeleted(object_id=oid))
        self._events.append(ObjectRemoved(object_id=oid))

    def _set_view(self, client: int, message: SetView) -> None:
        try:
            view = message_to_view(message)
        except DecodeError:
            self.drops["malformed_view"] += 1
            return
        self.policy.set_view(client, view)
        pivots = [self._objects[p] for p in message.pivots if p in self._objects]
        if pivots:
            self.policy.set_pivots(client, pivots[: self.policy.config.max_pivots])
            self._explicit_pivots.add(client)
        self._events.append(ViewChanged(client_id=self._public[client]))

    def _on_update(self, conn: int, payload: bytes, now: float) -> None:
        client = self._conn_client.get(conn)
        if client is None:
            self.drops["not_joined"] += 1
            return
        try:
            records = unpack_records(payload)
        except DecodeError:
            self.drops["malformed_update"] += 1
            return
        ids = records["id"].tolist()
        mine = np.array([self._owner.get(i) == client for i in ids], dtype=np.bool_)
        self.drops["foreign_record"] += int((~mine).sum())
        if mine.any():
            kept = records[mine]
            indices = np.array([self._objects[i] for i in kept["id"].tolist()], dtype=np.intp)
            self._store(indices, kept, now)

    def _store(
        self, indices: npt.NDArray[np.intp], records: npt.NDArray[np.void], now: float
    ) -> None:
        """Cache the encoded records and feed the policy (``update-received``)."""
        self._records[indices] = records
        self.policy.update_received(
            indices,
            dequantise_positions(records),
            None,
            now,
            headings=dequantise_headings(records),
        )

    def _round(self, now: float) -> None:
        """One server round: decide sends, pack each client's records, send unreliably."""
        plan = self.policy.round(now)
        for client in np.unique(plan.clients).tolist():
            conn = self._client_conn.get(client)
            if conn is None:
                continue
            objects = plan.objects_for(client)
            state = self._baselines.get(client)
            if state is None:
                payloads = pack_records(self._records[objects])
            else:
                payloads = self._delta_payloads(state, objects)
            for payload in payloads:
                self.bytes_out[UPDATE_CHANNEL] += len(payload)
                self.transport.send(conn, UPDATE_CHANNEL, payload)

    def _delta_payloads(self, state: _Baselines, objects: npt.NDArray[np.intp]) -> list[bytes]:
        """Delta datagrams of one client's due objects; remember each send until acked."""
        sends = state.sends[objects].copy()
        state.sends[objects] += 1
        state.valid[objects] &= sends - state.base_send[objects] <= MAX_DELTA_CHAIN
        use = state.valid[objects]
        records = self._records[objects]
        baselines = state.records[objects]
        baselines[~use] = np.zeros(1, dtype=RECORD_DTYPE)
        tags = sends % 255 + 1
        bases = np.where(use, state.base_send[objects] % 255 + 1, 0)
        generation = self._generation[objects]
        starts = delta_datagram_starts(delta_record_bits(records, baselines))
        payloads = []
        for part in np.split(np.arange(objects.shape[0]), starts[1:]):
            seq = state.seq
            state.seq = (seq + 1) & 0xFFFF
            state.inflight.pop((seq - ACK_WINDOW) & 0xFFFF, None)
            state.inflight[seq] = (objects[part], sends[part], generation[part], records[part])
            payloads.append(
                write_delta_datagram(seq, records[part], baselines[part], tags[part], bases[part])
            )
        return payloads

    def _on_ack(self, conn: int, payload: bytes) -> None:
        """Advance baselines to the acknowledged sends that are newer than them."""
        client = self._conn_client.get(conn)
        state = None if client is None else self._baselines.get(client)
        if state is None:
            self.drops["unexpected_ack"] += 1
            return
        try:
            ack, bits = read_update_ack(payload)
        except DecodeError:
            self.drops["malformed_ack"] += 1
            return
        for back in range(_ACK_BITS + 1):
            if back and not bits >> (back - 1) & 1:
                continue
            entry = state.inflight.pop((ack - back) & 0xFFFF, None)
            if entry is None:
                continue
            objects, sends, generation, records = entry
            newer = (generation == self._generation[objects]) & (sends > state.base_send[objects])
            chosen = objects[newer]
            state.records[chosen] = records[newer]
            state.base_send[chosen] = sends[newer]
            state.valid[chosen] = True
