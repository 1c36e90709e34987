"""`GossipPeer`: a sans-I/O Silac node running Algorithm 1 (spec 002 §3.2–§3.12).

Each frame the peer sends its own avatar info to a weighted random subset S of known peers
(Eq. 2.1–2.5); every accepted received message waits 1–4 frames in the pending queue (Eq. 2.7)
and is forwarded with hop + 1 unless copies from ``duplicate_threshold`` other senders arrived
meanwhile, with the α4 penalty for peers named in received tails (Eq. 2.6). A message received
with hop = ``max_hop`` is not forwarded (§2.13). Decisions (spec 002 §7), pinned in
``tests/gossip/test_peer.py`` unless noted:

* Forwarding excludes the originator and every node a copy came from (§7.6;
  ``test_forward_increments_hop_and_excludes_origin_and_senders``); distances and angles are
  measured from this node's own avatar, as "node j computes for each known node k" (Eq. 2.1).
* Duplicates are keyed by (originator avatar id, base type, message number) (§2.2;
  ``test_duplicates_from_two_other_senders_suppress_forwarding``).
* Types 0 (join request), 3 (leave) and 9 (avatar info) are forwarded; 1, 2, 10 and the flag-64
  block never are (§2.10; ``test_ttl_respected``).
* Replies go to (UDP source host, header sender port); join replies go to the request's origin.
  A peer's address is stored only if it hashes to the peer's avatar id, so a relayed or spoofed
  source never becomes a destination (``test_spoofed_source_is_not_learnt``).
* A join request whose hop is 0 must come from its origin address, else reject code 5; its
  avatar id must equal crc32(origin) (`avatar_id_for`), else code 1 (§7.4;
  ``test_join_reject_codes``).
* The first reject while joining ends the join (state REJECTED); a first accept makes the peer
  JOINED and adopts the accept's game id when joining with ``game_id=None`` (§7.15;
  ``test_join_accept_reject_flow``).
* Unknown avatar ids in a tail, or avatar info of a peer without full data, are asked for with a
  flag-64 request to the current sender. The request is "always appended to the end of another
  message" (§2.5.7): it rides on the next own avatar info whose draw S includes that sender and
  never causes a datagram of its own; unanswered requests are dropped after ``forget_timeout``,
  and a sender that is not an addressed peer (a relay, a spoof) can never be drawn, so it is
  never asked. The answer is a join accept, naming the described peer's address when it is a
  third party (``test_retransmission_request_for_unknown_peer``,
  ``test_spoofed_source_is_not_learnt``). At most 8 accepts answer one request, so a request
  cannot amplify traffic without bound. This is what sets the join time of E5: with f = 3 of
  100 peers a given sender is drawn about once in 30 frames, and the last of ~90 members learns
  a newcomer after ≈ 5 s (thesis §5.2: 5.5 s); sending the request at once as an extra datagram
  (the earlier reading) made it 1.3 s.
* A recipient set wider than the fan-out (`ImprovedPeer`'s join flood and push) goes out as
  direct copies whose tails name only their own recipient, so a flood to 1000 peers costs
  1000 small datagrams rather than 1000 copies of a tail naming a whole group
  (``test_improved.py::test_flood_copies_name_only_their_recipient``).
* The forwarding wait counts frame ticks, as Algorithm 1's loop sends once per frame: a message
  that arrives between two frames and draws a wait of i frames (Eq. 2.7) leaves with the i-th
  frame tick after its arrival, before that frame's own avatar info; i = 0 forwards at once.
  So the wait lies in ((i - 1)·frame, i·frame], mean 2 frames for i in 1..4
  (``test_forward_leaves_at_the_drawn_frame_tick``).
* Forwards due at the same tick leave in arrival order (a heap keyed by (due, arrival)); the
  peer table mirrors positions, bandwidth and addresses in numpy columns so each draw is a few
  array operations (`lagless.gossip.selection.RecipientSelector`); neither changes the law of
  the draws.
* Free bandwidth is in bytes per second; the tail carries half of ``advertise_bandwidth``'s value
  (§2.12, §7.8; ``test_tail_advertises_half_bandwidth``).
"""

from __future__ import annotations

import heapq
import logging
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, TypeVar

from lagless._types import Address
from lagless.errors import LocalProtocolError
from lagless.gossip import codec
from lagless.gossip.config import GossipConfig
from lagless.gossip.events import (
    AvatarUpdated,
    GossipEvent,
    InteractionReceived,
    InteractionRolledBack,
    JoinAccepted,
    JoinFailed,
    JoinRejected,
    LeaveReason,
    PeerJoined,
    PeerLeft,
)
from lagless.gossip.messages import (
    NO_INTERACTION,
    AvatarInfo,
    AvatarState,
    Header,
    Interaction,
    InteractionInfo,
    InteractionKind,
    JoinAccept,
    JoinReject,
    JoinRequest,
    Leave,
    MessageType,
    Packet,
    Payload,
    RetransmissionRequest,
    Tail,
    Vec3,
)
from lagless.gossip.selection import RecipientSelector
from lagless.gossip.state import (
    TRANSITIONS,
    Counters,
    DropReason,
    GossipStatistics,
    PeerInput,
    PeerState,
)
from lagless.gossip.table import PeerRecord, PeerTable, avatar_id_for, join_reject_code
from lagless.gossip.world_state import InterestPath, WorldState
from lagless.wire import DecodeError

__all__ = ["GossipPeer"]

_log = logging.getLogger("lagless.gossip")

MAX_RETRANSMIT_ANSWERS: Final = 8  # join accepts sent in answer to one flag-64 request
RETRANSMIT_BACKOFF: Final = 1.0  # seconds before the same avatar id is asked for again
SEEN_MEMORY: Final = 5.0  # seconds a message key is remembered for duplicate detection
MAX_SEEN: Final = 65536  # message keys remembered at most (bounded memory)
_FORWARDED: Final = frozenset(
    {MessageType.JOIN_REQUEST, MessageType.LEAVE, MessageType.AVATAR_INFO}
)


@dataclass(slots=True, kw_only=True)
class _Pending:
    packet: Packet
    due: int
    seq: int
    senders: set[Address]
    penalised: set[int]


class _Drop(Exception):
    def __init__(self, reason: DropReason) -> None:
        self.reason = reason


K = TypeVar("K")


def _forget_older(stamps: dict[K, float], cutoff: float, *, keep: int | None = None) -> None:
    """Drop entries stamped before ``cutoff`` (s), and any beyond ``keep``, from the front.

    ``stamps`` must be insertion-ordered by time (re-inserted on update).
    """
    while stamps:
        oldest = next(iter(stamps))
        if (keep is None or len(stamps) <= keep) and stamps[oldest] > cutoff:
            return
        del stamps[oldest]


class GossipPeer:
    """One Silac participant as a sans-I/O state machine (spec 002 §3).

    Args:
        config: The validated parameters.
        rng: Source of every random draw (recipients, forwarding delays, game id).
        address: Where this peer receives datagrams: an IP literal and a port. The avatar id is
            `avatar_id_for(address)`.
        position: Initial avatar position, metres.
        facing: Initial facing direction.
        name: Participant name (at most 64 UTF-8 bytes).
        model: Avatar model id.

    Raises:
        LocalProtocolError: ``address`` is not an IP literal with a valid port, or an avatar field
            is out of range.
    """

    def __init__(
        self,
        *,
        config: GossipConfig,
        rng: random.Random,
        address: Address,
        position: Vec3 = (0.0, 0.0, 0.0),
        facing: Vec3 = (1.0, 0.0, 0.0),
        name: str = "",
        model: int = 0,
    ) -> None:
        self._config = config
        self._rng = rng
        self._address = address
        self._id = avatar_id_for(address)
        self._avatar = AvatarState(avatar_id=self._id, position=position, facing=facing)
        self._join_template = JoinRequest(
            avatar=self._avatar, model=model, name=name, origin=address
        )
        self._name = name
        self._model = model
        self._state = PeerState.IDLE
        self._game_id = 0
        self._clock = 0
        self._free_bandwidth = 0
        self._table = PeerTable(
            self_id=self._id, forget_timeout=config.forget_timeout, max_peers=config.max_peers
        )
        self._selector = RecipientSelector(self._table, config)
        self._interest = InterestPath(
            transient_decay=config.transient_decay,
            important_decay=config.important_decay,
            correction_limit=config.correction_limit,
            carry_frames=config.carry_frames,
        )
        self._world = WorldState(self_id=self._id, memory=config.conflict_memory)
        self._serial = 0
        self._rollbacks: list[tuple[Interaction, float]] = []
        self._pending: dict[tuple[int, int, int], _Pending] = {}
        self._due: list[tuple[int, int, tuple[int, int, int]]] = []
        self._due_seq = 0
        self._frames = 0
        self._seen: dict[tuple[int, int, int], float] = {}
        self._requests: dict[Address, set[int]] = {}
        self._requested_at: dict[Address, float] = {}
        self._asked: dict[int, float] = {}
        self._contacts: tuple[Address, ...] = ()
        self._join_attempts = 0
        self._join_deadline: float | None = None
        self._next_frame: float | None = None
        self._expiry: float | None = None
        self._outbox: list[tuple[bytes, Address]] = []
        self._events: deque[GossipEvent] = deque()
        self._counters = Counters()

    # -- introspection ----------------------------------------------------------------------

    @property
    def state(self) -> PeerState:
        """The membership state."""
        return self._state

    @property
    def avatar_id(self) -> int:
        """This peer's avatar id (crc32 of its address)."""
        return self._id

    @property
    def address(self) -> Address:
        """Where this peer receives datagrams."""
        return self._address

    @property
    def game_id(self) -> int:
        """The game id (0 until hosted or accepted)."""
        return self._game_id

    @property
    def avatar(self) -> AvatarState:
        """This peer's own avatar."""
        return self._avatar

    def known_peers(self) -> list[int]:
        """Return the avatar ids in the peer table."""
        return [r.avatar_id for r in self._table]

    def peer_avatar(self, avatar_id: int) -> AvatarState | None:
        """Return the latest known avatar of ``avatar_id``, or ``None``."""
        record = self._table.get(avatar_id)
        return None if record is None else record.avatar

    def items(self) -> dict[int, int]:
        """Return the local world's items: {item id: holder avatar id}."""
        return self._world.items()

    def statistics(self) -> GossipStatistics:
        """Return a frozen snapshot of the counters."""
        c = self._counters
        return GossipStatistics(
            dropped=MappingProxyType(dict(c.dropped)),
            datagrams_received=c.datagrams_received,
            bytes_received=c.bytes_received,
            datagrams_sent=c.datagrams_sent,
            bytes_sent=c.bytes_sent,
            originated=c.originated,
            forwarded=c.forwarded,
            suppressed=c.suppressed,
            received_by_hop=MappingProxyType(dict(sorted(c.by_hop.items()))),
            peers=len(self._table),
        )

    # -- application verbs ------------------------------------------------------------------

    def _transition(self, event: PeerInput) -> bool:
        new = TRANSITIONS.get((self._state, event))
        if new is None:
            return False
        self._state = new
        return True

    def join(self, contacts: Sequence[Address], now: float, *, game_id: int | None = None) -> None:
        """Join a game through ``contacts``, or host a new one when ``contacts`` is empty.

        Args:
            contacts: Addresses of participants to send the join request to (§3.12).
            now: Current time, seconds.
            game_id: The game to join (from the info server); ``None`` accepts the first
                accepter's game. When hosting, ``None`` draws a random non-zero u32 (§2.2).

        Raises:
            LocalProtocolError: the peer is not idle, rejected or failed, or ``game_id`` is not a
                u32.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if game_id is not None and not 0 <= game_id < (1 << 32):
            raise LocalProtocolError(f"game_id must be in [0, 2**32), got {game_id}")
        event = PeerInput.JOIN if contacts else PeerInput.HOST
        if TRANSITIONS.get((self._state, event)) is None:
            raise LocalProtocolError(
                f"join() needs state IDLE, REJECTED or JOIN_FAILED, not {self._state.name}"
            )
        self._transition(event)
        if not contacts:
            self._game_id = game_id if game_id is not None else self._rng.randrange(1, 1 << 32)
            self._next_frame = now
            return
        self._game_id = 0 if game_id is None else game_id
        self._contacts = tuple(contacts)
        self._join_attempts = 0
        self._send_join_request(now)

    def leave(self, now: float) -> None:
        """Send the leave message to a random subset and finish (§2.5.6).

        Raises:
            LocalProtocolError: the peer is neither joining nor joined.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        was_joined = self._state is PeerState.JOINED
        if not self._transition(PeerInput.LEAVE):
            raise LocalProtocolError(
                f"leave() needs state JOINING or JOINED, not {self._state.name}"
            )
        if was_joined:
            number = self._tick()
            self._send_own(Leave(avatar_id=self._id), number, self._select(set(), set()))
        self._pending.clear()
        self._due.clear()
        self._next_frame = None
        self._join_deadline = None

    def set_avatar(
        self,
        *,
        position: Vec3 | None = None,
        facing: Vec3 | None = None,
        state: int | None = None,
        weapon: int | None = None,
    ) -> None:
        """Change the own avatar; the next frame's avatar info carries it.

        Args:
            position: New position, metres.
            facing: New facing direction.
            state: New application state, u8.
            weapon: New active weapon id, u24.

        Raises:
            LocalProtocolError: a value is out of range or not finite.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        a = self._avatar
        self._avatar = AvatarState(
            avatar_id=self._id,
            position=a.position if position is None else position,
            facing=a.facing if facing is None else facing,
            state=a.state if state is None else state,
            weapon=a.weapon if weapon is None else weapon,
        )

    def send_interaction(
        self, kind: InteractionKind, now: float, *, target: int = 0
    ) -> Interaction:
        """Perform an interaction (shot, item pickup); it rides on the next avatar infos.

        Args:
            kind: SHOT or PICKUP.
            now: Current time, seconds.
            target: Item id for pickups, an application value for shots; in [0, 2**20).

        Returns:
            The interaction with its wire code.

        Raises:
            LocalProtocolError: not joined, kind NONE, target out of range, or the item is held.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if self._state is not PeerState.JOINED:
            raise LocalProtocolError(
                f"send_interaction() needs state JOINED, not {self._state.name}"
            )
        if kind is InteractionKind.NONE:
            raise LocalProtocolError("kind must be SHOT or PICKUP, not NONE")
        interaction = Interaction(kind=kind, serial=self._serial, target=target)
        self._world.local(interaction, now)
        self._serial = (self._serial + 1) & 0xFF
        self._interest.add(interaction, now, self._avatar.position, self._avatar.facing)
        return interaction

    def advertise_bandwidth(self, free_bytes_per_second: int) -> None:
        """Set the measured free uplink; tails advertise half of it (§2.12).

        Args:
            free_bytes_per_second: Unused link bandwidth, bytes per second, in [0, 2**33).

        Raises:
            LocalProtocolError: out of range.
        """
        if not 0 <= free_bytes_per_second < (1 << 33):
            raise LocalProtocolError(
                f"free_bytes_per_second must be in [0, 2**33), got {free_bytes_per_second}"
            )
        self._free_bandwidth = free_bytes_per_second // 2

    # -- sans-I/O outputs -------------------------------------------------------------------

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return and clear the queued datagrams."""
        out = self._outbox
        if not out:
            return out
        self._outbox = []
        self._counters.datagrams_sent += len(out)
        self._counters.bytes_sent += sum(len(d) for d, _ in out)
        return out

    def next_event(self) -> GossipEvent | None:
        """Return the oldest pending event, or ``None``."""
        return self._events.popleft() if self._events else None

    def next_timer(self) -> float | None:
        """Return the next deadline (s): frame, forward, join retry or peer expiry."""
        if self._state is PeerState.LEFT:
            return None
        # The expiry is refreshed in handle_timer; last_heard only grows in between, so the cached
        # value is never later than the true one (an early handle_timer is harmless).
        # Forwards leave at frame ticks, so the frame deadline covers them.
        first: float | None = None
        for t in (self._next_frame, self._join_deadline, self._expiry):
            if t is not None and (first is None or t < first):
                first = t
        return first

    def handle_timer(self, now: float) -> None:
        """Run what is due at ``now``: expiries, forwards, join retries and the own frame.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        for aid in self._table.expire(now):
            self._events.append(PeerLeft(avatar_id=aid, reason=LeaveReason.TIMED_OUT))
        next_frame = self._next_frame
        if next_frame is not None and now >= next_frame:
            self._frames += 1
            self._forward_due()
        if self._join_deadline is not None and now >= self._join_deadline:
            if self._join_attempts >= self._config.join_attempts:
                self._transition(PeerInput.JOIN_TIMED_OUT)
                self._join_deadline = None
                self._events.append(JoinFailed(attempts=self._join_attempts))
            else:
                self._send_join_request(now)
        if next_frame is not None and now >= next_frame:
            self._frame(now)
            next_frame += self._config.frame_time
            self._next_frame = next_frame if next_frame > now else now + self._config.frame_time
        self._world.forget_old(now)
        # both dicts are (re)inserted in time order, so the oldest entries sit at the front
        _forget_older(self._asked, now - RETRANSMIT_BACKOFF)
        _forget_older(self._seen, now - SEEN_MEMORY, keep=MAX_SEEN)
        self._expiry = self._table.next_expiry()

    # -- sans-I/O input ---------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; bad or unwanted input is counted by `DropReason`, never raised.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._counters.datagrams_received += 1
        self._counters.bytes_received += len(data)
        try:
            packet = codec.decode(data)
            self._receive(packet, addr, now)
        except DecodeError:
            self._drop(DropReason.MALFORMED)
        except _Drop as drop:
            self._drop(drop.reason)

    def _drop(self, reason: DropReason) -> None:
        self._counters.dropped[reason] += 1
        _log.debug("peer %08x dropped a datagram: %s", self._id, reason.value)

    def _receive(self, packet: Packet, addr: Address, now: float) -> None:
        h = packet.header
        mtype = packet.message_type
        if not mtype.has_tail:
            raise _Drop(DropReason.NOT_FOR_PEER)
        if h.hop > self._config.max_hop:
            raise _Drop(DropReason.HOP_EXCEEDED)
        reply = (addr[0], h.sender_port)
        if self._state is PeerState.JOINING:
            if mtype not in (MessageType.JOIN_ACCEPT, MessageType.JOIN_REJECT):
                raise _Drop(DropReason.NOT_IN_GAME)
            if self._game_id and h.game_id != self._game_id:
                raise _Drop(DropReason.WRONG_GAME)
        elif self._state is PeerState.JOINED:
            wildcard = mtype is MessageType.JOIN_REQUEST and h.game_id == 0
            if h.game_id != self._game_id and not wildcard:
                raise _Drop(DropReason.WRONG_GAME)
        else:
            raise _Drop(DropReason.NOT_IN_GAME)
        origin = self._origin_of(packet.payload)
        if origin == self._id and mtype is not MessageType.JOIN_REJECT:
            raise _Drop(DropReason.OWN_MESSAGE)
        if mtype is MessageType.JOIN_REQUEST:
            self._table.revive(origin)
        elif self._table.is_departed(origin, now) and mtype is not MessageType.JOIN_REJECT:
            raise _Drop(DropReason.DEPARTED)
        key = (origin, int(mtype), h.message_number)
        if key in self._seen:
            self._duplicate(key, packet, addr)
            raise _Drop(DropReason.DUPLICATE)
        self._seen[key] = now
        self._counters.by_hop[h.hop] = self._counters.by_hop.get(h.hop, 0) + 1
        self._read_tail(packet, reply, now)
        match packet.payload:
            case JoinRequest() as p:
                accepted = self._on_join_request(p, h, reply, now)
            case JoinAccept() as p:
                accepted = self._on_join_accept(p, h, reply, now)
            case JoinReject() as p:
                accepted = self._on_join_reject(p)
            case Leave() as p:
                accepted = self._on_leave(p, now)
            case AvatarInfo() as p:
                accepted = self._on_avatar_info(p, h, reply, now)
            case InteractionInfo() as p:
                accepted = self._on_interaction_info(p, h, now)
            case _:  # pragma: no cover - info-server types were dropped above
                accepted = False
        if packet.retransmission is not None and self._state is PeerState.JOINED:
            self._answer_retransmission(packet.retransmission, reply)
        if accepted and mtype in _FORWARDED and h.hop < self._config.max_hop:
            self._enqueue_forward(key, packet, addr)

    @staticmethod
    def _origin_of(payload: Payload) -> int:
        match payload:
            case JoinRequest(avatar=a) | JoinAccept(avatar=a) | AvatarInfo(avatar=a):
                return a.avatar_id
            case Leave(avatar_id=aid) | InteractionInfo(avatar_id=aid):
                return aid
            case JoinReject(rejecter_id=rid):
                return rid
        return 0  # pragma: no cover - info-server payloads never reach here

    def _read_tail(self, packet: Packet, reply: Address, now: float) -> None:
        tail = packet.tail
        assert tail is not None  # invariant: game messages always decode with a tail
        sender = self._table.by_address(reply)
        if sender is not None:
            sender.last_heard = max(sender.last_heard, now)
            self._table.set_bandwidth(sender, tail.free_bandwidth)
            reported = packet.header.last_received
            if sender.reported is None or reported > sender.reported:
                sender.reported = reported
                self._correct(sender, reported)
        if self._state is not PeerState.JOINED:
            return
        for rid in tail.recipients:
            record = self._table.get(rid)
            if rid != self._id and (record is None or not record.full):
                self._ask(reply, rid, now)

    def _duplicate(self, key: tuple[int, int, int], packet: Packet, addr: Address) -> None:
        pending = self._pending.get(key)
        if pending is None:
            return
        if packet.tail is not None:
            pending.penalised.update(packet.tail.recipients)
        pending.senders.add(addr)
        if len(pending.senders) - 1 >= self._config.duplicate_threshold:
            del self._pending[key]
            self._counters.suppressed += 1

    def _enqueue_forward(self, key: tuple[int, int, int], packet: Packet, addr: Address) -> None:
        if len(self._pending) >= self._config.max_pending:
            self._drop(DropReason.PENDING_FULL)
            return
        lo, hi = self._config.forward_delay_frames
        due = self._frames + self._rng.randint(lo, hi)
        tail = packet.tail
        self._due_seq += 1
        self._pending[key] = _Pending(
            packet=packet,
            due=due,
            seq=self._due_seq,
            senders={addr},
            penalised=set(tail.recipients) if tail is not None else set(),
        )
        heapq.heappush(self._due, (due, self._due_seq, key))
        if due <= self._frames:  # a wait of 0 frames: no frame to wait for
            self._forward_due()

    def _forward_due(self) -> None:
        """Forward every pending message whose wait ends at frame tick ``_frames``."""
        ready: list[tuple[int, tuple[int, int, int]]] = []
        while self._due and self._due[0][0] <= self._frames:
            _, seq, key = heapq.heappop(self._due)
            pending = self._pending.get(key)
            if pending is not None and pending.seq == seq:
                ready.append((seq, key))
        # Insertion order among the due forwards, as the pending dict holds them.
        for _, key in sorted(ready):
            self._forward(self._pending.pop(key))

    # -- message handlers -------------------------------------------------------------------

    def _on_join_request(self, p: JoinRequest, h: Header, reply: Address, now: float) -> bool:
        code = join_reject_code(
            p,
            h,
            reply,
            config=self._config,
            game_id=self._game_id,
            name=self._name,
            table=self._table,
        )
        if code is not None:
            self._send_direct(JoinReject(code=code, rejecter_id=self._id), p.origin, self._tick())
            return False
        record = self._learn(p.avatar.avatar_id, now)
        self._table.set_address(record, p.origin)
        self._apply_avatar(record, p.avatar, h, now)
        self._complete(record, p.model, p.name)
        accept = JoinAccept(avatar=self._avatar, model=self._model, name=self._name)
        self._send_direct(accept, p.origin, self._tick(), last_received=record.last_received)
        return True

    def _on_join_accept(self, p: JoinAccept, h: Header, reply: Address, now: float) -> bool:
        record = self._learn(p.avatar.avatar_id, now)
        self._learn_address(record, reply if p.origin is None else p.origin)
        if p.origin is None:
            self._apply_avatar(record, p.avatar, h, now)
        elif record.avatar is None:
            # A third party's answer: its message number is the responder's clock, not X's.
            self._table.set_avatar(record, p.avatar, None)
        self._complete(record, p.model, p.name)
        if self._state is PeerState.JOINING and p.origin is None:
            self._transition(PeerInput.ACCEPT_RECEIVED)
            self._game_id = h.game_id
            self._join_deadline = None
            self._next_frame = now
            self._events.append(JoinAccepted(game_id=h.game_id, accepted_by=record.avatar_id))
        return False

    def _on_join_reject(self, p: JoinReject) -> bool:
        if self._state is PeerState.JOINING:
            self._transition(PeerInput.REJECT_RECEIVED)
            self._join_deadline = None
        self._events.append(JoinRejected(code=p.code, rejected_by=p.rejecter_id))
        return False

    def _on_leave(self, p: Leave, now: float) -> bool:
        if self._table.remove(p.avatar_id, now, departed=True) is not None:
            self._events.append(PeerLeft(avatar_id=p.avatar_id, reason=LeaveReason.LEFT))
        return True

    def _on_avatar_info(self, p: AvatarInfo, h: Header, reply: Address, now: float) -> bool:
        record = self._learn(p.avatar.avatar_id, now)
        if h.hop == 0:
            self._learn_address(record, reply)
        if not record.full:
            self._ask(reply, record.avatar_id, now)
        self._apply_avatar(record, p.avatar, h, now)
        if p.rollback.kind is not InteractionKind.NONE and self._world.rollback(
            record.avatar_id, p.rollback, now
        ):
            self._events.append(
                InteractionRolledBack(avatar_id=record.avatar_id, interaction=p.rollback)
            )
        self._apply_interaction(record.avatar_id, p.interaction, now, corrected=False)
        return True

    def _on_interaction_info(self, p: InteractionInfo, h: Header, now: float) -> bool:
        record = self._learn(p.avatar_id, now)
        record.last_received = max(record.last_received, h.message_number)
        for r in p.records:
            self._apply_interaction(p.avatar_id, r.interaction, now, corrected=True)
        return False

    def _learn(self, avatar_id: int, now: float) -> PeerRecord:
        record = self._table.touch(avatar_id, now)
        if record is None:
            raise _Drop(DropReason.TABLE_FULL)
        return record

    def _learn_address(self, record: PeerRecord, address: Address) -> None:
        # §2.5.3: the avatar id is f(address); an address that does not hash to it is not the
        # owner's (a relay, a NAT or a spoof) and is never used as a destination.
        if record.address == address:
            return
        try:
            matches = avatar_id_for(address) == record.avatar_id
        except LocalProtocolError:
            matches = False
        if matches:
            self._table.set_address(record, address)

    def _complete(self, record: PeerRecord, model: int, name: str) -> None:
        was_full = record.full
        record.model, record.name, record.full = model, name, True
        self._asked.pop(record.avatar_id, None)
        if not was_full and record.address is not None:
            self._events.append(
                PeerJoined(
                    avatar_id=record.avatar_id, address=record.address, name=name, model=model
                )
            )

    def _apply_avatar(self, record: PeerRecord, avatar: AvatarState, h: Header, now: float) -> None:
        record.last_received = max(record.last_received, h.message_number)
        if h.message_number > record.avatar_number or record.avatar is None:
            self._table.set_avatar(record, avatar, h.message_number)
            self._events.append(
                AvatarUpdated(avatar=avatar, message_number=h.message_number, hop=h.hop)
            )

    def _apply_interaction(
        self, avatar_id: int, interaction: Interaction, now: float, *, corrected: bool
    ) -> None:
        applied, undone = self._world.remote(avatar_id, interaction, now)
        if applied:
            self._events.append(
                InteractionReceived(
                    avatar_id=avatar_id, interaction=interaction, corrected=corrected
                )
            )
        for aid, lost in undone:
            self._events.append(InteractionRolledBack(avatar_id=aid, interaction=lost))
            if aid == self._id:
                # §2.7: our own pickup lost the conflict; stop re-sending it and announce it.
                self._interest.remove(lost)
                self._rollbacks.append((lost, now))

    # -- retransmission and correction --------------------------------------------------------

    def _ask(self, reply: Address, avatar_id: int, now: float) -> None:
        last = self._asked.get(avatar_id)
        if last is not None and now - last < RETRANSMIT_BACKOFF:
            return
        self._asked.pop(avatar_id, None)
        self._asked[avatar_id] = now
        ids = self._requests.get(reply)
        if ids is None:
            if len(self._requests) >= self._config.max_peers:
                return
            ids = self._requests[reply] = set()
            self._requested_at[reply] = now
        if len(ids) < 64:
            ids.add(avatar_id)

    def _answer_retransmission(self, request: RetransmissionRequest, reply: Address) -> None:
        answered = 0
        for aid in request.avatar_ids:
            if answered >= MAX_RETRANSMIT_ANSWERS:
                break
            if aid == self._id:
                accept = JoinAccept(avatar=self._avatar, model=self._model, name=self._name)
            else:
                r = self._table.get(aid)
                if r is None or not r.full or r.avatar is None or r.address is None:
                    continue
                accept = JoinAccept(avatar=r.avatar, model=r.model, name=r.name, origin=r.address)
            self._send_direct(accept, reply, self._tick())
            answered += 1

    def _correct(self, sender: PeerRecord, reported: int) -> None:
        if self._state is not PeerState.JOINED or sender.address is None:
            return
        records = self._interest.corrections_for(sender.avatar_id, reported)
        if records:
            number = self._tick()
            self._send_direct(
                InteractionInfo(avatar_id=self._id, records=tuple(records)),
                sender.address,
                number,
                last_received=sender.last_received,
            )
            self._interest.note_correction(sender.avatar_id, records, number)

    # -- sending ----------------------------------------------------------------------------

    def _tick(self) -> int:
        self._clock = (self._clock + 1) & 0xFFFFFFFF
        self._counters.originated += 1
        return self._clock

    def _tail(self, recipients: Sequence[int]) -> Tail:
        return Tail(
            free_bandwidth=min(self._free_bandwidth, 0xFFFFFFFF), recipients=tuple(recipients)
        )

    def _send_direct(
        self, payload: Payload, to: Address, number: int, *, last_received: int = 0
    ) -> None:
        header = Header(
            sender_port=self._address[1],
            game_id=self._game_id,
            message_number=number,
            last_received=last_received,
        )
        record = self._table.by_address(to)
        packet = Packet(
            header=header,
            payload=payload,
            tail=self._tail([] if record is None else [record.avatar_id]),
        )
        self._outbox.append((codec.encode(packet), to))

    def _select(self, exclude: set[int], penalised: set[int]) -> list[PeerRecord]:
        return self._selector.select(self._avatar, exclude, penalised, rng=self._rng)

    def _recipients_for(
        self, payload: Payload, hop: int, exclude: set[int], penalised: set[int]
    ) -> list[PeerRecord]:
        """Return S for ``payload`` sent with ``hop`` (0: own frame); a strategy hook.

        The Silac rule is the weighted draw of Eq. 2.1-2.6 (`_select`); subclasses such as
        `lagless.gossip.improved.ImprovedPeer` widen or narrow it. An empty list sends nothing.
        """
        return self._select(exclude, penalised)

    def _direct_copies(self, payload: AvatarInfo, drawn: list[PeerRecord]) -> list[PeerRecord]:
        """Return peers that get this frame's avatar info as a terminal copy; a strategy hook.

        Silac sends none. A terminal copy carries hop = ``max_hop``, so its receivers apply it
        and never forward it (§2.13); `lagless.gossip.improved.ImprovedPeer` pushes its
        interactions to the neighbourhood this way. ``drawn`` is this frame's S.
        """
        return []

    def _requests_due(self, recipients: list[PeerRecord]) -> list[Address]:
        """Return the addresses whose pending retransmission requests ride this frame; a hook.

        Silac attaches a request to the frame's copy for that peer, so it waits until the draw
        picks the peer (§2.10). A subclass may send more: a request to an address outside S
        (``recipients``) goes out on a terminal copy (hop = ``max_hop``).
        """
        return [a for r in recipients if (a := r.address) is not None and a in self._requests]

    def _emit_groups(self, header: Header, payload: Payload, recipients: list[PeerRecord]) -> None:
        # S up to the fan-out shares one tail naming all of S (§2.6). A wider set (a subclass's
        # flood or push) goes out as direct copies whose tails name only their own recipient:
        # a tail naming hundreds of peers would make every copy ~1 kB.
        if len(recipients) <= max(self._config.fanout, 1):
            tail = self._tail([r.avatar_id for r in recipients])
            self._emit(Packet(header=header, payload=payload, tail=tail), recipients)
            return
        self._emit_wide(header, payload, recipients)

    def _emit_wide(self, header: Header, payload: Payload, recipients: list[PeerRecord]) -> None:
        """Queue `_wide_copies` at once; a hook.

        Silac never sends a set wider than the fan-out; a subclass may pace the copies instead
        (`lagless.gossip.improved.ImprovedPeer`).
        """
        self._outbox.extend(self._wide_copies(header, payload, recipients))

    def _wide_copies(
        self, header: Header, payload: Payload, recipients: list[PeerRecord]
    ) -> list[tuple[bytes, Address]]:
        """Return one datagram per recipient, each tail naming only its own recipient."""
        out = []
        for r in recipients:
            assert r.address is not None  # invariant: recipient sets hold addressed peers only
            packet = Packet(header=header, payload=payload, tail=self._tail([r.avatar_id]))
            out.append((codec.with_last_received(codec.encode(packet), r.last_received), r.address))
        return out

    def _emit(self, packet: Packet, recipients: list[PeerRecord]) -> None:
        data = codec.encode(packet)
        for r in recipients:
            assert r.address is not None  # invariant: _select returns addressed peers only
            self._outbox.append((codec.with_last_received(data, r.last_received), r.address))

    def _send_own(self, payload: Payload, number: int, recipients: list[PeerRecord]) -> None:
        header = Header(sender_port=self._address[1], game_id=self._game_id, message_number=number)
        tail = self._tail([r.avatar_id for r in recipients])
        self._emit(Packet(header=header, payload=payload, tail=tail), recipients)

    def _forward(self, pending: _Pending) -> None:
        p = pending.packet
        origin = self._origin_of(p.payload)
        exclude = {origin}
        for addr in pending.senders:
            r = self._table.by_address(addr)
            if r is not None:
                exclude.add(r.avatar_id)
        h = p.header
        recipients = self._recipients_for(p.payload, h.hop + 1, exclude, pending.penalised)
        if not recipients:
            return
        header = Header(
            hop=h.hop + 1,
            sender_port=self._address[1],
            game_id=h.game_id,
            message_number=h.message_number,
        )
        self._emit_groups(header, p.payload, recipients)
        self._counters.forwarded += 1

    def _send_join_request(self, now: float) -> None:
        self._join_attempts += 1
        self._join_deadline = now + self._config.join_retry_interval
        request = JoinRequest(
            avatar=self._avatar,
            model=self._model,
            name=self._name,
            map_id=self._config.map_id,
            game_type=self._config.game_type,
            origin=self._address,
        )
        number = self._tick()
        for contact in self._contacts:
            self._send_direct(request, contact, number)

    def _frame(self, now: float) -> None:
        """Algorithm 1, own part: this frame's avatar info to S, plus pending requests."""
        number = self._tick()
        interaction = self._interest.take(now, number) or NO_INTERACTION
        self._rollbacks = [
            (i, t) for i, t in self._rollbacks if now - t < self._config.transient_decay
        ]
        rollbacks = self._rollbacks
        rollback = rollbacks[number % len(rollbacks)][0] if rollbacks else NO_INTERACTION
        payload = AvatarInfo(avatar=self._avatar, interaction=interaction, rollback=rollback)
        recipients = self._recipients_for(payload, 0, set(), set())
        direct = self._direct_copies(payload, recipients)
        requests = {to: self._requests.pop(to) for to in self._requests_due(recipients)}
        for to in requests:
            del self._requested_at[to]
        # Requests are created in time order and never re-inserted: the oldest are at the front.
        horizon = now - self._config.forget_timeout
        while self._requested_at:
            to = next(iter(self._requested_at))
            if self._requested_at[to] > horizon:
                break
            del self._requests[to], self._requested_at[to]
        plain = [r for r in recipients if r.address not in requests]
        header = Header(sender_port=self._address[1], game_id=self._game_id, message_number=number)
        ids = [r.avatar_id for r in recipients]
        self._emit(Packet(header=header, payload=payload, tail=self._tail(ids)), plain)
        drawn = {r.address for r in recipients} if requests else set()
        for to, wanted in requests.items():
            record = self._table.by_address(to)
            in_s = to in drawn
            packet = Packet(
                header=Header(
                    hop=0 if in_s else self._config.max_hop,
                    sender_port=self._address[1],
                    game_id=self._game_id,
                    message_number=number,
                    last_received=0 if record is None else record.last_received,
                ),
                payload=payload,
                tail=self._tail(ids if in_s or record is None else [record.avatar_id]),
                retransmission=RetransmissionRequest(avatar_ids=tuple(sorted(wanted))),
            )
            self._outbox.append((codec.encode(packet), to))
        direct = [r for r in direct if r.address not in requests]
        if direct:
            terminal = Header(
                hop=self._config.max_hop,
                sender_port=self._address[1],
                game_id=self._game_id,
                message_number=number,
            )
            self._emit_groups(terminal, payload, direct)
