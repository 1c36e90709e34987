"""The peer table of a Silac node: who is known, where, and what was last heard (spec 002 §3.12).

Implements spec 002 §2.3 (never evict for capacity: no ARRG fallback cache), §3.2 (forget a node
after 10 s of silence) and the per-peer state of §2.11 (last message number received from each
peer, last number each peer reported receiving from us) and §2.9.3 (advertised bandwidth).
Decisions (spec 002 §7.4, §7.11), pinned in ``tests/gossip/test_table.py``:

* Avatar id = CRC-32 of the packed IP address followed by the big-endian u16 port
  (``test_avatar_id_is_crc32_of_address``).
* Join validation (Table 2.2) checks, in order: game id / map / type (3), a hop-0 request coming
  from its origin (5), avatar id = crc32(origin) (1), position inside the map box (2), a
  non-empty name unused by this node and every fully known peer (4)
  (``test_peer.py::test_join_reject_codes``).
* Nodes are removed only on leave or after ``forget_timeout`` of silence; a leaver is remembered
  as departed for ``forget_timeout`` so stale forwarded copies do not resurrect it
  (``test_forgets_after_timeout``, ``test_departed_not_resurrected``).
* Speed (not behaviour): positions, advertised bandwidth and addressability are mirrored in numpy
  columns (one slot per peer) so recipient selection is a few array operations instead of a scan
  of the records; `candidate_slots` returns slots in insertion order, the order of `__iter__`
  (``test_columns_follow_records``); the table also records which slots changed and bumps a
  bandwidth version, so `lagless.gossip.selection.RecipientSelector` can keep its weights between
  draws (``test_changes_are_tracked``). The silence scan runs only when the cached earliest expiry
  is reached; since ``last_heard`` only grows, the cache is a lower bound of the true one.
"""

from __future__ import annotations

import functools
import ipaddress
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless._types import Address
from lagless.errors import LocalProtocolError
from lagless.gossip.config import GossipConfig
from lagless.gossip.messages import AvatarState, Header, JoinRequest, RejectCode

__all__ = ["PeerRecord", "PeerTable", "avatar_id_for", "join_reject_code"]

_EPS: Final = 1e-9  # seconds of slack so a timer set at last_heard + timeout always expires
_GROW: Final = 64  # slots added to the column arrays at once


@functools.lru_cache(maxsize=65536)
def avatar_id_for(address: Address) -> int:
    """Return the avatar id of the participant at ``address``: crc32(ip bytes + port u16 BE).

    Args:
        address: An IPv4 or IPv6 literal and a port.

    Raises:
        LocalProtocolError: the host is not an IP literal or the port is out of range.

    Examples:
        >>> avatar_id_for(("10.0.0.1", 4000))
        1087723477
    """
    host, port = address
    try:
        raw = ipaddress.ip_address(host).packed
    except ValueError:
        raise LocalProtocolError(
            f"address host must be an IPv4 or IPv6 literal, got {host!r}"
        ) from None
    if not 0 <= port <= 0xFFFF:
        raise LocalProtocolError(f"port must be in [0, 65535], got {port}")
    return zlib.crc32(raw + port.to_bytes(2, "big"))


@dataclass(slots=True, kw_only=True)
class PeerRecord:
    """What a node knows about one other participant (mutable, owned by `PeerTable`)."""

    avatar_id: int
    """The participant's avatar id."""
    last_heard: float
    """Time (s) any information about it last arrived."""
    address: Address | None = None
    """Where it receives messages; ``None`` until learnt (it cannot be a recipient before)."""
    avatar: AvatarState | None = None
    """Its latest avatar state."""
    avatar_number: int = -1
    """Message number of ``avatar``; older copies are not applied."""
    model: int = 0
    """Avatar model id (from a join request or accept)."""
    name: str = ""
    """Participant name (from a join request or accept)."""
    full: bool = False
    """True once model and name are known (join request or accept received)."""
    free_bandwidth: int | None = None
    """Bandwidth it last advertised in a tail, bytes per second; ``None`` if never seen."""
    last_received: int = 0
    """Highest message number originated by it that we received (echoed to it, §2.11)."""
    reported: int | None = None
    """Highest number of OUR messages it reported receiving, or ``None``."""
    slot: int = -1
    """Row of this peer in the table's column arrays (internal to `PeerTable`)."""


class PeerTable:
    """Participants by avatar id, with address lookup and a silence timeout.

    Args:
        self_id: This node's own avatar id (never stored).
        forget_timeout: Seconds of silence before a peer is forgotten.
        max_peers: Capacity; `touch` of a new id beyond it returns ``None``.
    """

    def __init__(self, *, self_id: int, forget_timeout: float, max_peers: int) -> None:
        self._self_id = self_id
        self._timeout = forget_timeout
        self._max = max_peers
        self._peers: dict[int, PeerRecord] = {}
        self._by_address: dict[Address, int] = {}
        self._departed: dict[int, float] = {}
        self._check: float | None = None
        self._records: list[PeerRecord | None] = []
        self._free: list[int] = []
        self._seq = 0
        self._order = np.zeros(0, dtype=np.int64)
        self._ids = np.zeros(0, dtype=np.int64)
        self._live = np.zeros(0, dtype=bool)
        self._addressed = np.zeros(0, dtype=bool)
        self._has_pos = np.zeros(0, dtype=bool)
        self._pos = np.zeros((0, 3))
        self._bw = np.zeros(0)
        self._changed: set[int] = set()
        self._bw_version = 0

    def __len__(self) -> int:
        """Return the number of known peers."""
        return len(self._peers)

    def __iter__(self) -> Iterator[PeerRecord]:
        """Iterate over the records in insertion order."""
        return iter(list(self._peers.values()))

    def __contains__(self, avatar_id: object) -> bool:
        """Return True when ``avatar_id`` is known."""
        return avatar_id in self._peers

    def get(self, avatar_id: int) -> PeerRecord | None:
        """Return the record of ``avatar_id`` or ``None``."""
        return self._peers.get(avatar_id)

    def by_address(self, address: Address) -> PeerRecord | None:
        """Return the record of the peer receiving at ``address`` or ``None``."""
        aid = self._by_address.get(address)
        return None if aid is None else self._peers.get(aid)

    def is_departed(self, avatar_id: int, now: float) -> bool:
        """Return True if ``avatar_id`` left less than ``forget_timeout`` seconds ago."""
        left = self._departed.get(avatar_id)
        return left is not None and now - left < self._timeout

    def revive(self, avatar_id: int) -> None:
        """Forget that ``avatar_id`` departed (it sent a new join request)."""
        self._departed.pop(avatar_id, None)

    def touch(self, avatar_id: int, now: float) -> PeerRecord | None:
        """Return the record of ``avatar_id``, creating it, and mark it heard at ``now``.

        Returns ``None`` for this node's own id, a recently departed id, or a new id when the
        table is full.
        """
        if avatar_id == self._self_id or self.is_departed(avatar_id, now):
            return None
        record = self._peers.get(avatar_id)
        if record is None:
            if len(self._peers) >= self._max:
                return None
            record = PeerRecord(avatar_id=avatar_id, last_heard=now)
            self._peers[avatar_id] = record
            self._occupy(record)
            if self._check is None:
                self._check = now + self._timeout
        record.last_heard = max(record.last_heard, now)
        return record

    def _occupy(self, record: PeerRecord) -> None:
        if not self._free:
            old = len(self._records)
            new = old + max(_GROW, old)
            self._records.extend([None] * (new - old))
            self._free = list(range(new - 1, old - 1, -1))
            self._order = np.resize(self._order, new)
            self._ids = np.resize(self._ids, new)
            self._live = np.concatenate([self._live, np.zeros(new - old, dtype=bool)])
            self._addressed = np.concatenate([self._addressed, np.zeros(new - old, dtype=bool)])
            self._has_pos = np.concatenate([self._has_pos, np.zeros(new - old, dtype=bool)])
            self._pos = np.concatenate([self._pos, np.zeros((new - old, 3))])
            self._bw = np.concatenate([self._bw, np.zeros(new - old)])
        slot = self._free.pop()
        record.slot = slot
        self._records[slot] = record
        self._order[slot] = self._seq
        self._seq += 1
        self._ids[slot] = record.avatar_id
        self._live[slot] = True
        self._addressed[slot] = False
        self._has_pos[slot] = False
        self._bw[slot] = np.nan
        self._changed.add(slot)
        self._bw_version += 1

    def set_avatar(self, record: PeerRecord, avatar: AvatarState, number: int | None) -> None:
        """Store ``record``'s latest avatar (and its message number unless ``None``)."""
        record.avatar = avatar
        if number is not None:
            record.avatar_number = number
        if record.slot >= 0:
            self._pos[record.slot] = avatar.position
            self._has_pos[record.slot] = True
            self._changed.add(record.slot)

    def set_bandwidth(self, record: PeerRecord, free_bandwidth: int) -> None:
        """Store the free bandwidth ``record``'s peer advertised, bytes per second (§2.9.3)."""
        if record.free_bandwidth == free_bandwidth:
            return
        record.free_bandwidth = free_bandwidth
        if record.slot >= 0:
            self._bw[record.slot] = free_bandwidth
            self._bw_version += 1

    def candidate_slots(self, exclude: Iterable[int]) -> npt.NDArray[np.int64]:
        """Return the slots of addressed peers not in ``exclude``, in insertion order."""
        mask = self._live & self._addressed
        for aid in exclude:
            record = self._peers.get(aid)
            if record is not None:
                mask[record.slot] = False
        idx = np.flatnonzero(mask)
        return idx[np.argsort(self._order[idx], kind="stable")]

    def addressable(self) -> npt.NDArray[np.bool_]:
        """Return a new per-slot mask: True where a live peer has an address (a candidate)."""
        return self._live & self._addressed

    def take_changed(self) -> set[int]:
        """Return and clear the slots whose position, address or presence changed since."""
        changed, self._changed = self._changed, set()
        return changed

    @property
    def bandwidth_version(self) -> int:
        """A counter that grows whenever an advertised bandwidth or the set of slots changes."""
        return self._bw_version

    def record_at(self, slot: int) -> PeerRecord:
        """Return the record stored in ``slot`` (from `candidate_slots`)."""
        record = self._records[slot]
        assert record is not None  # invariant: candidate slots are occupied
        return record

    def columns(
        self,
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.float64]]:
        """Return the (positions m, position known, advertised bandwidth B/s or nan) columns.

        The arrays are the table's own, indexed by slot; callers must not modify them.
        """
        return self._pos, self._has_pos, self._bw

    def slot_ids(self) -> npt.NDArray[np.int64]:
        """Return the avatar id column, indexed by slot (read-only by convention)."""
        return self._ids

    def set_address(self, record: PeerRecord, address: Address) -> None:
        """Record where ``record``'s participant receives messages."""
        if record.address is not None and self._by_address.get(record.address) == record.avatar_id:
            del self._by_address[record.address]
        record.address = address
        self._by_address[address] = record.avatar_id
        if record.slot >= 0 and self._peers.get(record.avatar_id) is record:
            self._addressed[record.slot] = True
            self._changed.add(record.slot)

    def remove(self, avatar_id: int, now: float, *, departed: bool) -> PeerRecord | None:
        """Forget ``avatar_id``; with ``departed`` also ignore it for ``forget_timeout`` seconds."""
        record = self._peers.pop(avatar_id, None)
        if (
            record is not None
            and record.address is not None
            and (self._by_address.get(record.address) == avatar_id)
        ):
            del self._by_address[record.address]
        if record is not None and record.slot >= 0:
            self._live[record.slot] = False
            self._addressed[record.slot] = False
            self._bw[record.slot] = np.nan
            self._records[record.slot] = None
            self._free.append(record.slot)
            self._changed.add(record.slot)
            self._bw_version += 1
            record.slot = -1
        if departed:
            self._departed[avatar_id] = now
            limit = now + self._timeout
            self._check = limit if self._check is None else min(self._check, limit)
        return record

    def expire(self, now: float) -> list[int]:
        """Forget every peer silent for ``forget_timeout`` seconds; return their ids."""
        if self._check is None or now < self._check - _EPS:
            return []
        limit = self._timeout - _EPS
        gone = [r.avatar_id for r in self._peers.values() if now - r.last_heard >= limit]
        for aid in gone:
            self.remove(aid, now, departed=False)
        for aid in [a for a, t in self._departed.items() if now - t >= self._timeout]:
            del self._departed[aid]
        self._check = (
            min(r.last_heard for r in self._peers.values()) + self._timeout if self._peers else None
        )
        return gone

    def next_expiry(self) -> float | None:
        """Return a lower bound of the earliest time (s) a peer would be forgotten, or ``None``.

        The bound is exact after `expire` and after the first `touch` of an empty table.
        """
        if not self._peers:
            return None
        return self._check


def join_reject_code(
    request: JoinRequest,
    header: Header,
    reply: Address,
    *,
    config: GossipConfig,
    game_id: int,
    name: str,
    table: PeerTable,
) -> RejectCode | None:
    """Validate a join request (spec 002 §2.5.3, Table 2.2); ``None`` means accept.

    Args:
        request: The join request.
        header: Its header.
        reply: (UDP source host, header sender port) of the copy received.
        config: This node's map, game type and map box.
        game_id: This node's game id.
        name: This node's own participant name.
        table: This node's peers (for name uniqueness).

    Returns:
        The reject code of the first failed check, or ``None``.
    """
    c = config
    same_game = (request.map_id, request.game_type) == (c.map_id, c.game_type)
    if header.game_id not in (0, game_id) or not same_game:
        return RejectCode.INVALID_GAME
    if header.hop == 0 and reply != request.origin:
        return RejectCode.INVALID_ADDRESS
    try:
        expected = avatar_id_for(request.origin)
    except LocalProtocolError:
        return RejectCode.INVALID_ADDRESS
    if expected != request.avatar.avatar_id:
        return RejectCode.INVALID_AVATAR
    pos = request.avatar.position
    if not all(lo <= x <= hi for lo, x, hi in zip(c.world_min, pos, c.world_max, strict=True)):
        return RejectCode.OUTSIDE_MAP
    taken = request.name == name or any(
        r.full and r.name == request.name and r.avatar_id != request.avatar.avatar_id for r in table
    )
    if request.name and taken:
        return RejectCode.NAME_TAKEN
    return None
