"""Delta snapshots against acknowledged baselines, with a priority accumulator and a byte budget.

Implements issue 13 item 4 (the anchors: Gaffer on Games' snapshot compression and delta
encoding, Quake 3 / Unity NetCode acked baselines, Photon Fusion priorities). The server side
(`SnapshotEngine`) decides every (client, object) pair of a tick at once with numpy; the client
side (`SnapshotReader`) decodes one message with a `BitReader`.

Decisions:

* **Baselines are keyed by our own snapshot sequence numbers.** The transport reports delivery
  only for reliable messages (`MessageDelivered`), not for unreliable ones, so every snapshot has
  a per-client sequence number and the client acknowledges the newest one it received plus a
  32-bit field of the 32 before it (`encode_ack`, with the IDs of objects whose baseline it
  lost, at most `MAX_RESYNC`), on every snapshot. For each (client, object)
  the server keeps the codes of the newest acknowledged record: the baseline.
* **Per-record baselines.** A budget sends only some objects per tick, so records name their own
  baseline as an *age* (this sequence minus the baseline's, 1..31); the header carries the most
  common age and a record says "common" in one bit. An older or missing baseline means full state.
* **What is sent.** A pair is a candidate when the client has the object's announcement
  (delivered on the reliable channel), its current codes differ from the client's acknowledged
  codes, and either the interest policy put it in this tick's plan (relevance and update rate: any
  `lagless.interest.InterestPolicy`) or its newest record is unacknowledged after
  ``resend_interval`` (lost). Without a policy, a changed object is relevant to every client.
* **Priority accumulator.** Each tick a candidate's accumulator grows by the summed ``priority``
  of its changed fields; candidates go out by descending accumulator until the client's
  ``budget_bytes`` are used, and a sent pair's accumulator returns to 0, so objects that wait
  gain priority (Fusion / Tribes). The selection estimates each record's ID and age bits; a
  message that comes out over budget is selected again with a smaller budget before anything
  is committed, so no message ever exceeds ``budget_bytes``
  (``test_snapshot.py::test_budget_and_priority_accumulator``).
* **Record layout** (LSB first): object ID as the gap to the previous record's ID in a prefix
  code (``0`` for 1, ``10`` + 4 bits for 2..17, ``110`` + 8 bits for 18..273, ``111`` + a
  6-bit length + the gap - 274: consecutive IDs cost one bit, as in Gaffer's index encoding);
  ``has_baseline``; if so, ``is_common`` and, if not common, a 5-bit age. Full state: every
  continuous code column in its full width. Delta: the changed-field mask (one bit per
  continuous field), then per column of a changed field a tier: ``0``, ``10`` or ``110`` + the
  zigzag difference in 1, 2 or 3 times ``delta_bits`` bits, or ``111`` + the full code (a tier
  as wide as the code is never used; columns without ``delta_bits`` send the full code, no
  tier). Gaffer's relative encoding uses the same idea.
* **Predicted columns** (a vector field declared with ``predict="vel"``): the difference is taken
  against the baseline code plus ``round((v_lo + v_code * v_res) * dt / res)``, ``v_code`` the
  baseline's velocity code and ``dt`` the server-time gap between the two snapshots' headers
  (ms); server (numpy) and client (Python floats) run the same float64 steps, so they agree.
* **Header**: type (3 bits), sequence (16), server time in ms modulo 2^32 (32), common age (5),
  record count (12); the message is padded to a byte. One message per client per tick, on an
  unreliable channel, at most ``budget_bytes``.
* A record whose object the client no longer knows (destroyed while the snapshot was in flight)
  is parsed through the class remembered for the last ``TOMBSTONES`` destroyed IDs; an ID never
  seen ends the message (counted). A record whose baseline the client no longer has is parsed
  and skipped (counted); that snapshot is not acknowledged (the server never takes a record the
  client could not rebuild as a baseline) and the next ack asks for the object in full. A record
  older than the object's newest applied one is kept as a baseline but not applied (reordering).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError, LocalProtocolError
from lagless.interest import InterestPolicy
from lagless.replication.bitpack import pack_items
from lagless.replication.fields import NumericField
from lagless.replication.objects import NetworkObject, Role, World
from lagless.replication.schema import Schema, Table
from lagless.wire import BitReader, BitWriter, DecodeError, seq_diff

__all__ = [
    "MSG_ACK",
    "MSG_SNAPSHOT",
    "SnapshotConfig",
    "SnapshotEngine",
    "SnapshotInfo",
    "SnapshotReader",
    "decode_ack",
    "encode_ack",
]

MSG_SNAPSHOT: Final = 1  # 3-bit message type of a snapshot
MSG_ACK: Final = 2  # 3-bit message type of a snapshot acknowledgement
TYPE_BITS: Final = 3
SEQ_BITS: Final = 16
SEQ_MOD: Final = 1 << SEQ_BITS
TIME_BITS: Final = 32
AGE_BITS: Final = 5
MAX_AGE: Final = (1 << AGE_BITS) - 1  # snapshots; an older baseline means full state
COUNT_BITS: Final = 12
MAX_RECORDS: Final = (1 << COUNT_BITS) - 1
HEADER_BITS: Final = TYPE_BITS + SEQ_BITS + TIME_BITS + AGE_BITS + COUNT_BITS
ACK_FIELD_BITS: Final = 32
MAX_RESYNC: Final = 255  # object IDs one ack may ask to resend in full
SENT_LOG: Final = 64  # snapshots remembered per client for acks
TOMBSTONES: Final = 4096  # destroyed IDs whose class a reader remembers
HISTORY: Final = MAX_AGE + 1  # received records kept per object as baselines
ID_ESTIMATE_BITS: Final = 6  # the selection's estimate of one record's ID gap
MAX_BUDGET: Final = 1016  # bytes: one unreliable message (1024) minus the record overhead
# ID gap prefix code: (lowest gap, prefix value, prefix bits, payload bits)
_GAP_BUCKETS: Final = ((1, 0, 1, 0), (2, 1, 2, 4), (18, 3, 3, 8))
_GAP_LONG: Final = 274  # gaps from here: prefix 0b111, 6-bit length, value
_FULL: Final = 0  # delta tiers of a column: full code, then deltas of 1, 2, 3 x delta_bits
_SMALL: Final = 1
_TIER_PREFIX: Final = np.array([7, 0, 1, 3], dtype=np.uint64)  # LSB first: 111, 0, 10, 110
_TIER_PREFIX_BITS: Final = np.array([3, 1, 2, 3], dtype=np.int64)
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotConfig:
    """Settings of the server's snapshot engine."""

    budget_bytes: int = 1000
    """Most bytes of one client's snapshot per tick, header included (<= 1016: one unreliable
    message)."""
    resend_interval: float = 0.25
    """Seconds after which an unacknowledged record's pair is sent again if still changed."""

    def __post_init__(self) -> None:
        """Validate; raise `ConfigError` naming the field."""
        if not 16 <= self.budget_bytes <= MAX_BUDGET:
            raise ConfigError(
                f"budget_bytes must be in [16, {MAX_BUDGET}], got {self.budget_bytes}"
            )
        if not 0.0 < self.resend_interval <= 10.0:
            raise ConfigError(
                f"resend_interval must be in (0, 10] seconds, got {self.resend_interval}"
            )


def encode_ack(latest: int, bits: int, resync: Sequence[int] = ()) -> bytes:
    """Encode an acknowledgement: the newest snapshot received, 32 earlier ones, resyncs.

    Args:
        latest: 16-bit sequence of the newest snapshot received.
        bits: bit ``i`` set when snapshot ``latest - 1 - i`` was received.
        resync: IDs of objects whose baseline the client lost (at most `MAX_RESYNC`): the server
            sends them in full next.
    """
    writer = BitWriter()
    writer.serialize_bits(MSG_ACK, TYPE_BITS)
    writer.serialize_bits(latest & (SEQ_MOD - 1), SEQ_BITS)
    writer.serialize_bits(bits & 0xFFFFFFFF, ACK_FIELD_BITS)
    writer.serialize_range(len(resync), 0, MAX_RESYNC)
    for ident in resync:
        writer.serialize_varint(ident)
    return writer.getvalue()


def decode_ack(payload: bytes) -> tuple[int, int, tuple[int, ...]]:
    """Decode `encode_ack` output into ``(latest, bits, resync)``; raise ``DecodeError``."""
    reader = BitReader(payload)
    if reader.serialize_bits(0, TYPE_BITS) != MSG_ACK:
        raise DecodeError("not an ack message")
    latest = reader.serialize_bits(0, SEQ_BITS)
    bits = reader.serialize_bits(0, ACK_FIELD_BITS)
    count = reader.serialize_range(0, 0, MAX_RESYNC)
    resync = tuple(reader.serialize_varint(0) for _ in range(count))
    left = reader.bits_remaining
    if left >= 8 or reader.serialize_bits(0, left) != 0:
        raise DecodeError("trailing bits after ack")
    return latest, bits, resync


def _zigzag(d: IntArray) -> npt.NDArray[np.uint64]:
    return ((d << 1) ^ (d >> 63)).astype(np.uint64)


def _unzigzag(z: int) -> int:
    return (z >> 1) ^ -(z & 1)


class _ClassState:
    """Per (client, object row) state of one class: baselines, announcements, accumulators."""

    def __init__(self, table: Table, clients: int) -> None:
        self.table = table
        self.schema = table.schema
        rows = table.ids.shape[0]
        cols = self.schema.columns
        self.acked = np.zeros((clients, rows, cols), dtype=np.uint64)
        self.acked_seq = np.full((clients, rows), -1, dtype=np.int64)
        self.acked_ms = np.zeros((clients, rows), dtype=np.int64)  # baseline's server time
        self.sent_seq = np.full((clients, rows), -1, dtype=np.int64)
        self.sent_time = np.zeros((clients, rows), dtype=np.float64)
        self.announced = np.zeros((clients, rows), dtype=np.int8)  # 0 no, 1 sent, 2 delivered
        self.want = np.zeros((clients, rows), dtype=np.bool_)
        self.acc = np.zeros((clients, rows), dtype=np.float64)
        self.prev = np.zeros((rows, cols), dtype=np.uint64)
        self.fresh = np.ones(rows, dtype=np.bool_)  # row (re)used since the last tick
        self.policy_obj = np.full(rows, -1, dtype=np.int64)
        field_of = self.schema.column_field
        self.col_to_field = np.zeros((cols, len(self.schema.continuous)), dtype=np.int64)
        self.col_to_field[np.arange(cols), field_of] = 1
        self.codes = np.zeros((0, cols), dtype=np.uint64)
        widths, db = self.schema.widths, self.schema.delta_bits
        self.wrap_cols = np.flatnonzero(self.schema.wraps)
        self.wrap_mask = (np.int64(1) << widths[self.wrap_cols]) - 1
        self.wrap_half = (self.wrap_mask + 1) >> 1
        self.small_limit = np.where(db > 0, np.int64(1) << db, 0).astype(np.uint64)
        medium_ok = (db > 0) & (2 * db < widths)
        self.medium_limit = np.where(medium_ok, np.int64(1) << (2 * db), 0).astype(np.uint64)
        large_ok = (db > 0) & (3 * db < widths)
        self.large_limit = np.where(large_ok, np.int64(1) << (3 * db), 0).astype(np.uint64)
        self.full_cost = np.where(db > 0, 3 + widths, widths)
        self.small_gain = 1 + db - self.full_cost
        self.medium_gain = 2 + 2 * db - self.full_cost
        self.large_gain = 3 + 3 * db - self.full_cost
        self.tier_bits = np.stack([widths, db, 2 * db, 3 * db])  # payload bits by tier
        self.pred_cols = np.flatnonzero(self.schema.predict_from >= 0)

    def fit(self, clients: int) -> None:
        """Grow the arrays to the table's row capacity and ``clients`` client slots."""
        rows = self.table.ids.shape[0]
        old_c, old_r = self.acked_seq.shape
        if rows <= old_r and clients <= old_c:
            return
        c, r = max(clients, old_c), max(rows, old_r)

        def grown(a: np.ndarray, fill: float | int, per_client: bool = True) -> np.ndarray:
            shape = (c, r, *a.shape[2:]) if per_client else (r, *a.shape[1:])
            out = np.full(shape, fill, dtype=a.dtype)
            if per_client:
                out[: a.shape[0], : a.shape[1]] = a
            else:
                out[: a.shape[0]] = a
            return out

        self.acked = grown(self.acked, 0)
        self.acked_seq = grown(self.acked_seq, -1)
        self.acked_ms = grown(self.acked_ms, 0)
        self.sent_seq = grown(self.sent_seq, -1)
        self.sent_time = grown(self.sent_time, 0.0)
        self.announced = grown(self.announced, 0)
        self.want = grown(self.want, False)
        self.acc = grown(self.acc, 0.0)
        self.prev = grown(self.prev, 0, per_client=False)
        self.fresh = grown(self.fresh, True, per_client=False)
        self.policy_obj = grown(self.policy_obj, -1, per_client=False)

    def reset_row(self, row: int) -> None:
        """Forget every client's state of a freed row."""
        self.acked_seq[:, row] = -1
        self.sent_seq[:, row] = -1
        self.announced[:, row] = 0
        self.want[:, row] = False
        self.acc[:, row] = 0.0
        self.fresh[row] = True

    def reset_client(self, slot: int) -> None:
        """Forget one client slot's state."""
        self.acked_seq[slot] = -1
        self.sent_seq[slot] = -1
        self.announced[slot] = 0
        self.want[slot] = False
        self.acc[slot] = 0.0


@dataclass(slots=True)
class _Candidates:
    """Candidate (client slot, row) pairs of one class this tick, with their delta data."""

    state: _ClassState
    slots: IntArray
    rows: IntArray
    cur: npt.NDArray[np.uint64]
    zig: npt.NDArray[np.uint64]
    """Zigzag-coded difference to the baseline, per column."""
    tier: npt.NDArray[np.int8]
    field_changed: npt.NDArray[np.bool_]
    has_base: npt.NDArray[np.bool_]
    age: IntArray
    bits: IntArray
    acc: npt.NDArray[np.float64]

    def take(self, keep: npt.NDArray[np.bool_]) -> _Candidates:
        """The subset ``keep``."""
        return _Candidates(
            self.state,
            self.slots[keep],
            self.rows[keep],
            self.cur[keep],
            self.zig[keep],
            self.tier[keep],
            self.field_changed[keep],
            self.has_base[keep],
            self.age[keep],
            self.bits[keep],
            self.acc[keep],
        )

    def items(self, gap: IntArray, common: IntArray) -> tuple[npt.NDArray[np.uint64], IntArray]:
        """Item values and widths, shape ``(records, 3 + columns)``, in wire order.

        Items: the ID gap, the baseline bits, the changed-field mask, then one item per column
        (tier prefix and payload together); absent items have width 0.

        Args:
            gap: Each record's ID gap to the previous record of its message.
            common: The common baseline age of each record's message.
        """
        schema = self.state.schema
        n = self.slots.size
        nc = schema.columns
        nf = len(schema.continuous)
        v = np.zeros((n, 3 + nc), dtype=np.uint64)
        w = np.zeros((n, 3 + nc), dtype=np.int64)
        v[:, 0], w[:, 0] = _gap_items(gap)
        hb = self.has_base
        is_common = hb & (self.age == common)
        own_age = hb & ~is_common
        v[:, 1] = hb | (is_common << 1) | np.where(own_age, self.age << 2, 0)
        w[:, 1] = np.where(hb, np.where(is_common, 2, 2 + AGE_BITS), 1)
        v[:, 2] = self.field_changed.astype(np.uint64) @ (
            np.uint64(1) << np.arange(nf, dtype=np.uint64)
        )
        w[:, 2] = np.where(hb, nf, 0)
        col_changed = self.field_changed[:, schema.column_field]
        send = ~hb[:, None] | col_changed
        coded = hb[:, None] & col_changed & (schema.delta_bits > 0)[None, :]
        tier = np.where(coded, self.tier, _FULL)
        delta = tier != _FULL
        payload = np.where(delta, self.zig, self.cur)
        payload_bits = self.state.tier_bits[tier, np.arange(nc)[None, :]]
        prefix_bits = _TIER_PREFIX_BITS[tier]
        v[:, 3:] = np.where(
            coded, _TIER_PREFIX[tier] | (payload << prefix_bits.astype(np.uint64)), self.cur
        )
        w[:, 3:] = np.where(coded, prefix_bits + payload_bits, np.where(send, schema.widths, 0))
        return v, w


_GAP_LOWEST: Final = np.array([b[0] for b in _GAP_BUCKETS] + [_GAP_LONG], dtype=np.int64)
_GAP_PREFIX: Final = np.array([b[1] for b in _GAP_BUCKETS] + [7], dtype=np.int64)
_GAP_WIDTH: Final = np.array([b[2] + b[3] for b in _GAP_BUCKETS] + [9], dtype=np.int64)
_GAP_SHIFT: Final = np.array([b[2] for b in _GAP_BUCKETS] + [9], dtype=np.int64)


def _gap_items(gap: IntArray) -> tuple[npt.NDArray[np.uint64], IntArray]:
    """One item (prefix and payload together) per ID gap (>= 1)."""
    bucket = np.searchsorted(_GAP_LOWEST, gap, side="right") - 1
    rest = gap - _GAP_LOWEST[bucket]
    v = _GAP_PREFIX[bucket] | (rest << _GAP_SHIFT[bucket])
    w = _GAP_WIDTH[bucket].copy()
    long = np.flatnonzero(bucket == len(_GAP_BUCKETS))
    if long.size:  # prefix 0b111, a 6-bit length, then the value
        length = np.zeros(long.size, dtype=np.int64)
        remaining = rest[long].copy()
        while remaining.any():
            length += remaining > 0
            remaining >>= 1
        v[long] = 7 | (length << 3) | (rest[long] << 9)
        w[long] += length
    return v.astype(np.uint64), w


def _read_gap(reader: BitReader) -> int:
    for lowest, _, prefix_bits, payload in _GAP_BUCKETS:
        if not reader.serialize_bits(0, 1):
            return lowest + reader.serialize_bits(0, payload)
        if prefix_bits == 3:
            break
    length = reader.serialize_bits(0, 6)
    if length > 53:
        raise DecodeError(f"ID gap length {length} bits is too long")
    return _GAP_LONG + reader.serialize_bits(0, length)


def _read_tier(reader: BitReader) -> int:
    for tier in (1, 2, 3):
        if not reader.serialize_bits(0, 1):
            return tier
    return _FULL


def _predicted_offset(
    velocity_codes: npt.NDArray[np.uint64], dt_ms: IntArray, scale: npt.NDArray[np.float64]
) -> IntArray:
    """Codes a predicted column moves by: ``round((v_lo + code * v_res) * dt / res)``.

    The same float64 operations in the same order as `_offset` (the reader's scalar twin), so
    both sides agree to the code.
    """
    velocity = scale[:, 0] + velocity_codes.astype(np.float64) * scale[:, 1]
    return np.floor(velocity * dt_ms / 1000.0 / scale[:, 2] + 0.5).astype(np.int64)


def _offset(velocity_code: int, dt_ms: int, scale: Sequence[float]) -> int:
    velocity = scale[0] + float(velocity_code) * scale[1]
    return math.floor(velocity * dt_ms / 1000.0 / scale[2] + 0.5)


def _combine(v: npt.NDArray[np.uint64], w: IntArray) -> tuple[npt.NDArray[np.uint64], IntArray]:
    """Concatenate each row's items (LSB first) into 64-bit words and their widths.

    Row ``r``'s bits are the items of ``v[r]`` in ``w[r]`` bits each, in order (zero-width items
    add nothing); word ``j`` holds bits ``64 j .. 64 j + 63`` and has width
    ``clip(total - 64 j, 0, 64)``. Packing the words gives the same bits as packing the items.
    """
    n, k = v.shape
    ends = np.cumsum(w, axis=1)
    total = ends[:, -1] if k else np.zeros(n, dtype=np.int64)
    m = max(1, int((int(total.max(initial=0)) + 63) // 64))
    words = np.zeros((n, m + 1), dtype=np.uint64)
    rows = np.arange(n)
    for col in range(k):
        width = w[:, col]
        start = ends[:, col] - width
        value = np.where(width > 0, v[:, col], np.uint64(0))
        word = start >> 6
        shift = (start & 63).astype(np.uint64)
        words[rows, word] |= value << shift
        spill = np.flatnonzero((start & 63) + width > 64)
        if spill.size:
            words[spill, word[spill] + 1] |= value[spill] >> (np.uint64(64) - shift[spill])
    word_bits = np.clip(total[:, None] - 64 * np.arange(m)[None, :], 0, 64)
    return words[:, :m], word_bits


def _expand(starts: IntArray, lens: IntArray) -> IntArray:
    """Concatenate the index ranges ``[starts[i], starts[i] + lens[i])``."""
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lens) - lens
    return np.repeat(starts - offsets, lens) + np.arange(total, dtype=np.int64)


@dataclass(slots=True)
class _Sent:
    """One tick's records of one class for every client: sorted by client slot."""

    state: _ClassState
    slots: IntArray
    rows: IntArray
    ids: IntArray
    """The rows' object IDs when sent (a reused row holds another object later)."""
    codes: npt.NDArray[np.uint64]
    bounds: IntArray
    """``bounds[s]:bounds[s + 1]`` are slot ``s``'s records."""
    time_ms: int
    """The snapshot header's server time (ms modulo 2^32)."""


@dataclass(slots=True)
class _Client:
    slot: int
    key: int
    policy_client: int
    seq: int = 0  # sequence number of the next snapshot
    log: OrderedDict[int, int] = field(default_factory=OrderedDict)  # seq -> tick number


class SnapshotEngine:
    """The server side: per-client baselines and one vectorised snapshot per client per tick.

    Args:
        world: The server's world (authority objects).
        config: Budget and resend settings.
        policy: An interest policy deciding relevance and update rate, or None (every changed
            object is relevant to every client).
    """

    def __init__(
        self,
        world: World,
        config: SnapshotConfig | None = None,
        policy: InterestPolicy | None = None,
    ) -> None:
        self.world = world
        self.config = SnapshotConfig() if config is None else config
        self.policy = policy
        self._states: dict[type[NetworkObject], _ClassState] = {}
        self._clients: dict[int, _Client] = {}
        self._by_slot: dict[int, _Client] = {}
        self._by_policy: dict[int, int] = {}  # policy client id -> slot
        self._free_slots: list[int] = []
        self._slots = 0  # client slot high-water mark
        self._sent: OrderedDict[int, list[_Sent]] = OrderedDict()  # tick number -> records
        self._ticks = 0
        self.records_sent = 0
        """Records sent over all ticks."""
        self.record_bits = 0
        """Bits of the records alone, ID gaps included (per-entity-update figures divide this)."""
        self.bits_sent = 0
        """Snapshot bits sent over all ticks, headers and padding included."""

    # -- clients ------------------------------------------------------------------------------

    def add_client(self, key: int) -> None:
        """Register client ``key`` (e.g. its transport connection id).

        Raises:
            LocalProtocolError: ``key`` is already registered.
        """
        if key in self._clients:
            raise LocalProtocolError(f"client {key} is already registered")
        if self._free_slots:
            slot = self._free_slots.pop()
        else:
            slot = self._slots
            self._slots += 1
        policy_client = self.policy.add_client() if self.policy is not None else -1
        client = _Client(slot, key, policy_client)
        self._clients[key] = client
        self._by_slot[slot] = client
        if policy_client >= 0:
            self._by_policy[policy_client] = slot
        for state in self._states.values():
            state.fit(self._slots)
            state.reset_client(slot)
            live = state.table.ids[: state.table.size] >= 0
            if self.policy is not None:
                live &= state.policy_obj[: state.table.size] < 0
            state.want[slot, : state.table.size] = live

    def remove_client(self, key: int) -> None:
        """Forget client ``key`` (no-op when unknown)."""
        client = self._clients.pop(key, None)
        if client is None:
            return
        del self._by_slot[client.slot]
        if self.policy is not None:
            self.policy.remove_client(client.policy_client)
            del self._by_policy[client.policy_client]
        for state in self._states.values():
            state.reset_client(client.slot)
        self._free_slots.append(client.slot)

    @property
    def clients(self) -> list[int]:
        """Registered client keys."""
        return list(self._clients)

    def set_pivots(self, key: int, objects: list[NetworkObject]) -> None:
        """Make ``objects`` (of classes with a position field) client ``key``'s interest pivots."""
        if self.policy is None:
            return
        client = self._clients[key]
        ids = []
        for obj in objects:
            pid = int(self._state(type(obj)).policy_obj[obj._row])
            if pid >= 0:
                ids.append(pid)
        self.policy.set_pivots(client.policy_client, ids)

    # -- objects ------------------------------------------------------------------------------

    def object_added(self, obj: NetworkObject) -> None:
        """Track a spawned object (its row starts fresh; positional ones join the policy)."""
        state = self._state(type(obj))
        state.fit(max(self._slots, 1))
        state.reset_row(obj._row)
        if self.policy is not None and type(obj).position_field is not None:
            state.policy_obj[obj._row] = self.policy.add_object()

    def object_removed(self, cls: type[NetworkObject], row: int) -> None:
        """Forget a destroyed object's row."""
        state = self._states.get(cls)
        if state is None:
            return
        state.reset_row(row)
        pid = int(state.policy_obj[row])
        if pid >= 0 and self.policy is not None:
            self.policy.remove_object(pid)
        state.policy_obj[row] = -1

    def announcements_due(self) -> list[tuple[int, NetworkObject]]:
        """``(client key, object)`` pairs made relevant whose announcement was never sent."""
        out = []
        for state in self._states.values():
            n = state.table.size
            if n == 0:
                continue
            ns = self._slots
            due = state.want[:ns, :n] & (state.announced[:ns, :n] == 0)
            due &= (state.table.ids[:n] >= 0)[None, :]
            for slot, row in zip(*np.nonzero(due), strict=True):
                client = self._by_slot.get(int(slot))
                if client is not None:
                    out.append((client.key, state.table.objects[int(row)]))
        return out

    def mark_relevant(self, key: int, obj: NetworkObject) -> None:
        """Make ``obj`` relevant to client ``key`` now (e.g. a depending reference's target)."""
        client = self._clients.get(key)
        if client is not None:
            self._state(type(obj)).want[client.slot, obj._row] = True

    def mark_announced(self, key: int, obj: NetworkObject, *, delivered: bool) -> None:
        """Record that ``obj``'s announcement was sent (or delivered) to client ``key``.

        Only delivered announcements make the object eligible for snapshots: the client can
        parse a record only for a class it knows the object to have.
        """
        client = self._clients.get(key)
        if client is None or obj._world is not self.world:
            return
        state = self._state(type(obj))
        state.fit(self._slots)
        state.announced[client.slot, obj._row] = 2 if delivered else 1

    def announced_codes(self, key: int, obj: NetworkObject, codes: npt.NDArray[np.uint64]) -> None:
        """Set the codes client ``key`` holds for ``obj`` after its announcement was delivered."""
        client = self._clients.get(key)
        if client is None or obj._world is not self.world:
            return
        state = self._state(type(obj))
        if state.acked_seq[client.slot, obj._row] < 0:
            state.acked[client.slot, obj._row] = codes

    def announced_clients(self, cls: type[NetworkObject], row: int) -> list[int]:
        """Keys of the clients an object (by class and row) was announced to."""
        state = self._states.get(cls)
        if state is None:
            return []
        slots = np.flatnonzero(state.announced[: self._slots, row] > 0)
        return [self._by_slot[int(s)].key for s in slots if int(s) in self._by_slot]

    def is_announced(self, key: int, obj: NetworkObject) -> bool:
        """Whether ``obj``'s announcement was sent to client ``key``."""
        client = self._clients.get(key)
        if client is None:
            return False
        state = self._state(type(obj))
        state.fit(self._slots)
        return bool(state.announced[client.slot, obj._row] > 0)

    @staticmethod
    def codes_of(obj: NetworkObject) -> npt.NDArray[np.uint64]:
        """The continuous codes of one object now."""
        table = obj._table
        assert table is not None
        return type(obj).schema.encode(table.values[obj._row : obj._row + 1])[0]

    # -- acks ---------------------------------------------------------------------------------

    def on_ack(self, key: int, latest: int, bits: int, resync: Sequence[int] = ()) -> None:
        """Apply a client's acknowledgement (16-bit newest sequence, 32 earlier ones, and the
        objects whose baselines it lost: they go out in full next)."""
        client = self._clients.get(key)
        if client is None:
            return
        for ident in resync:
            obj = self.world.find(ident)
            state = self._states.get(type(obj)) if obj is not None else None
            if obj is not None and state is not None:
                row = obj._row
                state.acked_seq[client.slot, row] = -1
                state.acked[client.slot, row] = ~state.acked[client.slot, row]  # differs: dirty
                state.want[client.slot, row] = True
        if not client.log:
            return
        newest = client.seq - 1
        full = newest - ((newest - latest) % SEQ_MOD)
        slot = client.slot
        for seq in [full] + [full - 1 - i for i in range(ACK_FIELD_BITS) if bits >> i & 1]:
            tick = client.log.pop(seq, None)
            for sent in self._sent.get(tick, ()) if tick is not None else ():
                lo, hi = int(sent.bounds[slot]), int(sent.bounds[slot + 1])
                if lo == hi:
                    continue
                state, rows = sent.state, sent.rows[lo:hi]
                ok = (state.table.ids[rows] == sent.ids[lo:hi]) & (
                    state.acked_seq[slot, rows] < seq
                )
                ok &= state.announced[slot, rows] == 2
                state.acked[slot, rows[ok]] = sent.codes[lo:hi][ok]
                state.acked_seq[slot, rows[ok]] = seq
                state.acked_ms[slot, rows[ok]] = sent.time_ms

    # -- the tick -----------------------------------------------------------------------------

    def tick(self, now: float) -> dict[int, bytes]:
        """Build this tick's snapshot for every client that has something to receive.

        Args:
            now: Server time, seconds.

        Returns:
            Client key -> snapshot message bytes (send each on an unreliable channel).
        """
        ns = self._slots
        if ns == 0:
            return {}
        active = np.zeros(ns, dtype=np.bool_)
        seqs = np.zeros(ns, dtype=np.int64)
        for client in self._clients.values():
            active[client.slot] = True
            seqs[client.slot] = client.seq
        states = [s for s in self._states.values() if s.table.size and s.schema.columns]
        for state in states:
            self._observe(state, active, now)
        if self.policy is not None:
            plan = self.policy.round(now)
            if len(plan):
                self._apply_plan(plan.clients, plan.objects)
        now_ms = int(now * 1000.0) & 0xFFFFFFFF
        cands = [self._candidates(state, active, seqs, now, now_ms) for state in states]
        budget = np.full(ns, self.config.budget_bytes * 8 - HEADER_BITS, dtype=np.int64)
        while True:  # the selection estimates ID and age bits; trim until every message fits
            result = self._encode(self._select(cands, ns, budget), now)
            if isinstance(result, dict):
                return result
            budget -= result

    def _state(self, cls: type[NetworkObject]) -> _ClassState:
        state = self._states.get(cls)
        if state is None:
            state = self._states[cls] = _ClassState(self.world.tables[cls], max(self._slots, 1))
        return state

    def _observe(self, state: _ClassState, active: npt.NDArray[np.bool_], now: float) -> None:
        table = state.table
        state.fit(self._slots)
        n = table.size
        codes = state.schema.encode(table.values[:n])
        alive = table.ids[:n] >= 0
        moved = alive & (state.fresh[:n] | (codes != state.prev[:n]).any(axis=1))
        state.prev[:n] = codes
        state.fresh[:n] = False
        state.codes = codes
        if not moved.any():
            return
        rows = np.flatnonzero(moved)
        pids = state.policy_obj[rows]
        positional = pids >= 0
        if self.policy is not None and positional.any():
            cls = type(table.objects[int(rows[0])])
            assert cls.position_field is not None
            pos = cls.schema.by_name[cls.position_field]
            assert isinstance(pos, NumericField)
            sel = rows[positional]
            dims = pos.dims
            self.policy.update_received(
                pids[positional], table.values[sel, pos.slot : pos.slot + dims], None, now
            )
        others = rows[~positional]
        if others.size:
            ns = self._slots
            state.want[:ns][np.ix_(np.flatnonzero(active), others)] = True

    def _apply_plan(self, pclients: npt.NDArray[np.intp], pobjects: npt.NDArray[np.intp]) -> None:
        size = max(self._by_policy, default=-1) + 1
        slot_of = np.full(max(size, int(pclients.max()) + 1), -1, dtype=np.int64)
        for pc, slot in self._by_policy.items():
            slot_of[pc] = slot
        slots = slot_of[pclients]
        for state in self._states.values():
            have = np.flatnonzero(state.policy_obj >= 0)
            if not have.size:
                continue
            lookup = np.full(int(max(pobjects.max(), state.policy_obj.max())) + 1, -1, np.int64)
            lookup[state.policy_obj[have]] = have
            rows = lookup[pobjects]
            ok = (rows >= 0) & (slots >= 0)
            state.want[slots[ok], rows[ok]] = True

    def _candidates(
        self,
        state: _ClassState,
        active: npt.NDArray[np.bool_],
        seqs: IntArray,
        now: float,
        now_ms: int,
    ) -> _Candidates:
        n = state.table.size
        ns = self._slots
        schema = state.schema
        acked_seq = state.acked_seq[:ns, :n]
        lost = (state.sent_seq[:ns, :n] > acked_seq) & (
            now - state.sent_time[:ns, :n] > self.config.resend_interval
        )
        mask = (state.announced[:ns, :n] == 2) & (state.want[:ns, :n] | lost)
        mask &= active[:, None] & (state.table.ids[:n] >= 0)[None, :]
        slots, rows = np.nonzero(mask)
        base = state.acked[slots, rows]
        cur = state.codes[rows]
        changed_col = cur != base
        dirty = changed_col.any(axis=1)
        # a relevant pair whose client already holds the current codes needs nothing
        state.want[slots[~dirty], rows[~dirty]] = False
        slots, rows, base, cur = slots[dirty], rows[dirty], base[dirty], cur[dirty]
        changed_col = changed_col[dirty]
        age = seqs[slots] - state.acked_seq[slots, rows]
        has_base = (state.acked_seq[slots, rows] >= 0) & (age <= MAX_AGE)
        field_changed = (changed_col.astype(np.int64) @ state.col_to_field) > 0
        widths = schema.widths
        diff = cur.astype(np.int64) - base.astype(np.int64)
        if state.pred_cols.size:  # dead-reckon the baseline by its own velocity
            pc = state.pred_cols
            dt_ms = (now_ms - state.acked_ms[slots, rows]) & 0xFFFFFFFF
            diff[:, pc] -= _predicted_offset(
                base[:, schema.predict_from[pc]], dt_ms[:, None], schema.predict_scale[pc]
            )
        if state.wrap_cols.size:  # angles: the shortest way round
            wc = state.wrap_cols
            diff[:, wc] = ((diff[:, wc] + state.wrap_half) & state.wrap_mask) - state.wrap_half
        zig = _zigzag(diff)
        is_small = zig < state.small_limit
        is_medium = ~is_small & (zig < state.medium_limit)
        is_large = ~is_small & ~is_medium & (zig < state.large_limit)
        tier = is_small.view(np.int8) + 2 * is_medium.view(np.int8) + 3 * is_large.view(np.int8)
        col_changed = field_changed[:, schema.column_field]
        col_bits = (
            state.full_cost
            + is_small * state.small_gain
            + is_medium * state.medium_gain
            + is_large * state.large_gain
        )
        delta = field_changed.shape[1] + (col_bits * col_changed).sum(axis=1)
        bits = ID_ESTIMATE_BITS + 1 + np.where(has_base, 1 + delta, int(widths.sum()))
        weight = np.where(
            has_base,
            field_changed.astype(np.float64) @ schema.field_priority,
            float(schema.field_priority.sum()),
        )
        state.acc[slots, rows] += weight
        return _Candidates(
            state,
            slots,
            rows,
            cur,
            zig,
            tier,
            field_changed,
            has_base,
            np.where(has_base, age, 0),
            bits,
            state.acc[slots, rows],
        )

    def _select(self, cands: list[_Candidates], ns: int, budget: IntArray) -> list[_Candidates]:
        if not cands:
            return []
        slots = np.concatenate([c.slots for c in cands])
        if slots.size == 0:
            return []
        acc = np.concatenate([c.acc for c in cands])
        bits = np.concatenate([c.bits for c in cands])
        top = float(acc.max()) + 1.0
        order = np.argsort(slots + (top - acc) / (top + 1.0), kind="stable")
        s_sorted = slots[order]
        cum = np.cumsum(bits[order])
        first = np.searchsorted(s_sorted, np.arange(ns))
        before = np.concatenate(([0], cum))[first]
        within = cum - before[s_sorted]
        rank = np.arange(order.size) - first[s_sorted]
        keep = np.zeros(order.size, dtype=np.bool_)
        keep[order] = (within <= budget[s_sorted]) & (rank < MAX_RECORDS)
        out = []
        start = 0
        for c in cands:
            out.append(c.take(keep[start : start + c.slots.size]))
            start += c.slots.size
        return [c for c in out if c.slots.size]

    def _encode(self, chosen: list[_Candidates], now: float) -> dict[int, bytes] | IntArray:
        """Encode the chosen records; or, when a message would exceed the budget, change
        nothing and return the bits to take off each slot's selection budget."""
        if not chosen:
            return {}
        ns = self._slots
        # global record order: by client slot, then object ID (the ID gaps need it)
        r_slot = np.concatenate([c.slots for c in chosen])
        r_id = np.concatenate([c.state.table.ids[c.rows] for c in chosen])
        r_age = np.concatenate([c.age for c in chosen])
        in_order = len(chosen) == 1 and bool(
            ((np.diff(r_id) > 0) | (np.diff(r_slot) > 0)).all()
        )  # one class whose rows follow its IDs: already sorted (np.nonzero is row-major)
        order = np.arange(r_id.size) if in_order else np.lexsort((r_id, r_slot))
        s_slot, s_id = r_slot[order], r_id[order]
        new_msg = np.concatenate(([True], s_slot[1:] != s_slot[:-1]))
        gap_sorted = s_id - np.where(new_msg, 0, np.concatenate(([0], s_id[:-1])))
        gap = np.empty_like(gap_sorted)
        gap[order] = gap_sorted
        counts = np.bincount(r_slot * (MAX_AGE + 1) + r_age, minlength=ns * (MAX_AGE + 1))
        counts = counts.reshape(ns, MAX_AGE + 1)
        counts[:, 0] = 0
        common = np.argmax(counts, axis=1)
        seqs = np.zeros(ns, dtype=np.int64)
        for client in self._clients.values():
            seqs[client.slot] = client.seq
        tick_log: list[_Sent] = []
        # item pool: each class's record matrices, then headers, then padding
        vals: list[npt.NDArray[np.uint64]] = []
        wids: list[IntArray] = []
        starts: list[IntArray] = []
        lens: list[IntArray] = []
        rbits: list[IntArray] = []
        offset = 0
        at = 0
        for c in chosen:
            v, w = c.items(gap[at : at + c.slots.size], common[c.slots])
            at += c.slots.size
            words, word_bits = _combine(v, w)  # each record as a few 64-bit words
            present = word_bits > 0
            per_record = present.sum(axis=1)
            flat_v = words[present]
            vals.append(flat_v)
            wids.append(word_bits[present])
            starts.append(offset + np.cumsum(per_record) - per_record)
            lens.append(per_record)
            rbits.append(w.sum(axis=1))
            offset += flat_v.size
        rec_start = np.concatenate(starts)[order]
        rec_len = np.concatenate(lens)[order]
        rec_bits = np.concatenate(rbits)[order]
        senders = np.flatnonzero(np.bincount(s_slot, minlength=ns))
        g = senders.size
        n_records = np.bincount(s_slot, minlength=ns)[senders]
        totals = np.bincount(s_slot, weights=rec_bits, minlength=ns)[senders].astype(np.int64)
        totals += HEADER_BITS
        pad = (-totals) % 8
        excess = totals + pad - 8 * self.config.budget_bytes
        if (excess > 0).any():
            over = np.zeros(ns, dtype=np.int64)
            over[senders] = np.maximum(excess, 0) + np.where(excess > 0, 32, 0)
            return over
        time_ms = int(now * 1000.0) & 0xFFFFFFFF
        for c in chosen:
            self._log(c, now, seqs, tick_log, time_ms)
        clients = [self._by_slot[int(s)] for s in senders]
        head_v = np.zeros((g, 5), dtype=np.uint64)
        head_v[:, 0] = MSG_SNAPSHOT
        head_v[:, 1] = [c.seq & (SEQ_MOD - 1) for c in clients]
        head_v[:, 2] = time_ms
        head_v[:, 3] = common[senders]
        head_v[:, 4] = n_records
        head_w = np.tile(np.array([TYPE_BITS, SEQ_BITS, TIME_BITS, AGE_BITS, COUNT_BITS]), (g, 1))
        head_start = offset + 5 * np.arange(g, dtype=np.int64)
        pad_start = offset + 5 * g + np.arange(g, dtype=np.int64)
        values = np.concatenate([*vals, head_v.reshape(-1), np.zeros(g, dtype=np.uint64)])
        widths = np.concatenate([*wids, head_w.reshape(-1), pad])
        # segments in message order: per sender its header, its records, its padding
        group = np.searchsorted(senders, s_slot)
        first = np.searchsorted(s_slot, senders)
        last = np.concatenate((first[1:], [s_slot.size])) - 1
        n_seg = s_slot.size + 2 * g
        seg_start = np.empty(n_seg, dtype=np.int64)
        seg_len = np.empty(n_seg, dtype=np.int64)
        rec_pos = np.arange(s_slot.size) + 2 * group + 1
        seg_start[rec_pos], seg_len[rec_pos] = rec_start, rec_len
        head_pos = first + 2 * np.arange(g)
        seg_start[head_pos], seg_len[head_pos] = head_start, 5
        pad_pos = last + 2 * np.arange(g) + 2
        seg_start[pad_pos], seg_len[pad_pos] = pad_start, pad > 0
        index = _expand(seg_start, seg_len)
        packed = pack_items(values[index], widths[index])
        size = (totals + pad) // 8
        ends = np.cumsum(size)
        result: dict[int, bytes] = {}
        self._ticks += 1
        self._sent[self._ticks] = tick_log
        while len(self._sent) > SENT_LOG:
            self._sent.popitem(last=False)
        for client, lo, hi in zip(clients, (ends - size).tolist(), ends.tolist(), strict=True):
            result[client.key] = packed[lo:hi]
            client.log[client.seq] = self._ticks
            if len(client.log) > SENT_LOG:
                client.log.popitem(last=False)
            client.seq += 1
        self.records_sent += int(s_slot.size)
        self.record_bits += int(rec_bits.sum())
        self.bits_sent += int(size.sum()) * 8
        return result

    def _log(
        self, c: _Candidates, now: float, seqs: IntArray, tick: list[_Sent], time_ms: int
    ) -> None:
        state = c.state
        state.acc[c.slots, c.rows] = 0.0
        state.want[c.slots, c.rows] = False
        state.sent_time[c.slots, c.rows] = now
        state.sent_seq[c.slots, c.rows] = seqs[c.slots]
        bounds = np.searchsorted(c.slots, np.arange(self._slots + 1))
        ids = state.table.ids[c.rows]
        tick.append(_Sent(state, c.slots, c.rows, ids, c.cur, bounds, time_ms))


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    """What one snapshot message brought."""

    seq: int
    """Its sequence number, unwrapped (the first snapshot received keeps its 16-bit value)."""
    server_time: float
    """The server's time when it was built, seconds modulo 2^32 ms."""
    updated: tuple[NetworkObject, ...]
    """Objects whose state it changed (records newer than the object's newest)."""
    records: int
    """Records parsed."""


class SnapshotReader:
    """The client side: decode snapshots into a world, keep baselines, build acknowledgements.

    Args:
        world: The client's world (proxies and owned objects).
    """

    def __init__(self, world: World) -> None:
        self.world = world
        self._history: dict[int, OrderedDict[int, tuple[list[int], int]]] = {}  # codes, ms
        self._newest: dict[int, int] = {}
        self._tombstones: OrderedDict[int, type[NetworkObject]] = OrderedDict()
        self._latest: int | None = None
        self._received: set[int] = set()
        self._resync: set[int] = set()
        self.unknown_objects = 0
        """Messages cut short by a record of an object never announced."""
        self.missing_baselines = 0
        """Records skipped because their baseline was no longer held."""
        self.stale_records = 0
        """Records older than the object's newest (kept as baselines, not applied)."""

    def forget(self, ident: int, cls: type[NetworkObject]) -> None:
        """Remember a destroyed object's class (late records still parse) and drop its history."""
        self._history.pop(ident, None)
        self._newest.pop(ident, None)
        self._tombstones[ident] = cls
        while len(self._tombstones) > TOMBSTONES:
            self._tombstones.popitem(last=False)

    def ack(self) -> bytes | None:
        """The acknowledgement of everything received (None before the first snapshot)."""
        if not self._received:
            return None
        latest = max(self._received)
        bits = 0
        for i in range(ACK_FIELD_BITS):
            if latest - 1 - i in self._received:
                bits |= 1 << i
        resync = sorted(self._resync)[:MAX_RESYNC]
        self._resync.difference_update(resync)
        return encode_ack(latest, bits, resync)

    def read(self, payload: bytes) -> SnapshotInfo:
        """Decode one snapshot message and apply it to the world.

        Raises:
            DecodeError: malformed message (records before the fault stay applied).
        """
        reader = BitReader(payload)
        if reader.serialize_bits(0, TYPE_BITS) != MSG_SNAPSHOT:
            raise DecodeError("not a snapshot message")
        seq16 = reader.serialize_bits(0, SEQ_BITS)
        time_ms = reader.serialize_bits(0, TIME_BITS)
        common = reader.serialize_bits(0, AGE_BITS)
        count = reader.serialize_bits(0, COUNT_BITS)
        if self._latest is None:
            seq = seq16
        else:
            seq = self._latest + seq_diff(seq16, self._latest & (SEQ_MOD - 1))
        if self._latest is None or seq > self._latest:
            self._latest = seq
        self._received = {s for s in self._received if s >= self._latest - ACK_FIELD_BITS}
        missing = self.missing_baselines
        updated: list[NetworkObject] = []
        ident = 0
        parsed = 0
        for _ in range(count):
            ident += _read_gap(reader)
            obj = self.world.find(ident)
            cls = type(obj) if obj is not None else self._tombstones.get(ident)
            if cls is None:
                self.unknown_objects += 1
                break
            codes, ok = self._read_record(reader, cls.schema, ident, seq, common, time_ms)
            parsed += 1
            if obj is None or not ok:
                continue
            history = self._history.setdefault(ident, OrderedDict())
            history[seq] = (codes, time_ms)
            while len(history) > HISTORY:
                history.popitem(last=False)
            if seq < self._newest.get(ident, -1):
                self.stale_records += 1
                continue
            self._newest[ident] = seq
            self._apply(obj, codes)
            updated.append(obj)
        if reader.bits_remaining >= 8 and parsed == count:
            raise DecodeError("trailing bytes after the last record")
        if self.missing_baselines == missing:
            self._received.add(seq)  # a record it could not rebuild must not become a baseline
        return SnapshotInfo(seq, time_ms / 1000.0, tuple(updated), parsed)

    def _read_record(
        self, reader: BitReader, schema: Schema, ident: int, seq: int, common: int, time_ms: int
    ) -> tuple[list[int], bool]:
        ok = True
        base: list[int] | None = None
        dt_ms = 0
        if reader.serialize_bits(0, 1):
            age = common if reader.serialize_bits(0, 1) else reader.serialize_bits(0, AGE_BITS)
            if age == 0:
                raise DecodeError("baseline age 0")
            entry = self._history.get(ident, {}).get(seq - age)
            if entry is None:
                self.missing_baselines += 1
                self._resync.add(ident)
                ok = False
                base = [0] * schema.columns
            else:
                base = entry[0]
                dt_ms = (time_ms - entry[1]) & 0xFFFFFFFF
        widths = schema.widths.tolist()
        if base is None:
            return [reader.serialize_bits(0, w) for w in widths], ok
        db = schema.delta_bits.tolist()
        wraps = schema.wraps.tolist()
        predict = schema.predict_from
        scale = schema.predict_scale.tolist()
        codes = list(base)
        mask = reader.serialize_bits(0, len(schema.continuous))
        col = 0
        for index, f in enumerate(schema.continuous):
            changed = mask >> index & 1
            for _ in range(f.columns):
                if changed:
                    tier = _read_tier(reader) if db[col] else _FULL
                    if tier != _FULL:
                        d = _unzigzag(reader.serialize_bits(0, db[col] * tier))
                        value = base[col] + d
                        source = int(predict[col])
                        if source >= 0:
                            value += _offset(base[source], dt_ms, scale[col])
                        if wraps[col]:
                            value %= 1 << widths[col]
                        elif not 0 <= value < 1 << widths[col]:
                            raise DecodeError(f"{f.name}: delta leaves the code range")
                        codes[col] = value
                    else:
                        codes[col] = reader.serialize_bits(0, widths[col])
                col += 1
        return codes, ok

    def _apply(self, obj: NetworkObject, codes: list[int]) -> None:
        table = obj._table
        assert table is not None
        schema = type(obj).schema
        row = table.values[obj._row : obj._row + 1]
        keep = row.copy() if obj.role is Role.OWNER and schema.owner_fields else None
        schema.decode_into(np.array([codes], dtype=np.uint64), row)
        if keep is not None:
            for f in schema.owner_fields:
                row[0, f.slot : f.slot + f.dims] = keep[0, f.slot : f.slot + f.dims]
