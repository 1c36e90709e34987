"""Beyond the thesis: a Silac peer with a join flood, an interaction push and address lookup.

Spec 002 §5.2 measures 5.5 s until a newcomer is known to all of 100 peers and §5.4 up to 2 % of
interactions lost within 1/5 of the map; §5.7 asks for "stronger conditions in recipient
selection ... perhaps deterministic". `ImprovedPeer` keeps the wire format and every Silac rule,
changes *who receives* two kinds of message through the ``_recipients_for`` and
``_direct_copies`` hooks of `GossipPeer`, and learns addresses sooner:

1. **Join flood.** The contact that receives a join request directly (hop 0) forwards it to
   *every* peer it has an address for, instead of three weighted draws; every receiver validates
   it and answers the newcomer directly (§2.5.3), so both sides know each other after about two
   one-hop latencies plus the 1–4 frame wait. Copies received from the flood (hop 1) are not
   forwarded again. Cost: one join request per member, once per join, on the contact's uplink.
2. **Interest-scoped push.** An own avatar info that *carries an interaction* goes, besides the
   weighted draws, directly to every peer whose last known avatar lies within ``push_radius``
   metres, nearest first, at most ``push_limit`` of them, as a *terminal* copy (hop =
   ``max_hop``, the `GossipPeer._direct_copies` hook): receivers apply it and never forward it,
   while the three drawn copies gossip on as in Silac. Plain position updates (over 90 % of
   frames) keep the thesis's fan-out. An interaction rides in ``carry_frames`` consecutive
   frames (`lagless.gossip.world_state`); only its first ``push_repeats`` carriers are pushed,
   so the extra upload is the interaction rate times the neighbourhood size times
   ``push_repeats`` datagrams. (Pushing hop-0 copies instead, as a first version did, made every
   neighbour a new gossip source: at 1000 peers the swarm carried about twice the datagrams.)
3. **Address lookup.** The push can only reach peers whose address this node knows, and Silac learns
   an address only from a hop-0 copy or a join message, forgets it with the record after 10 s of
   silence, and asks a third party for an unknown peer (flag 64, §2.10) only on the copy that the
   next draw happens to send to that party. In a diagnostic 400-peer run every interaction lost
   within 1/5 of the map (0.75 %) was a neighbour the pusher had no address for when it pushed: one
   whose join flood crossed its own during start-up, or one whose record had expired while it was
   far away. `ImprovedPeer` therefore (a) keeps every address it has verified (avatar id =
   crc32(address), §2.5.3) in a book of ``max_peers`` entries and gives it back to a record that is
   created again, (b) learns the originator's address from a terminal copy it sent itself, like a
   hop-0 copy (the crc32 check tells an originator from a forwarder), and (c) sends every pending
   retransmission request with the next frame, on a terminal copy to the asked peer when the draw
   did not pick it. With the three, the same 400-peer run lost nothing and every table was full when
   measuring began.
4. **Paced wide sends.** The flood and the push leave as one-recipient copies through a queue that
   releases ``wide_rate`` bytes per frame time (120 kB/s by default, under half of the lab's 250
   kB/s uplink), nearest neighbours first, instead of all at once: at 1000 peers a contact's flood
   is ~1000 datagrams and a push in a crowded place several hundred, and sent at once they
   overflowed the 0.5 s uplink queue, which tail-dropped the end of the flood, the farthest pushes
   and the node's own frames behind them. The queue holds at most ``wide_backlog`` seconds of
   copies; beyond that new copies are dropped and counted (`ImprovedPeer.wide_dropped`). With pacing
   the push needs no small cap: ``push_limit`` is 1000 (it was 250: in a diagnostic 1000-peer run
   3.5 % of the interactions within 1/5 of the map were lost, nearly all to neighbours that the
   pusher knew within 250 m but that the cap cut off in crowded places).

Decisions, pinned in ``tests/gossip/test_improved.py``:

* The flood goes to addressed peers minus the originator and the copy's sender
  (``test_contact_floods_join_and_copies_stop``); the forwarding wait of Eq. 2.7 still applies.
* The push set is computed from this node's replicas (last known positions), so it can be one
  update stale; the default radius (250 m on the lab's 1000 m map) leaves a margin over the
  1/5-map circle the loss metric uses (``test_interaction_frames_reach_the_neighbourhood``).
* The book drops its oldest entry when it holds ``max_peers`` addresses; a departed peer's
  address stays in it (the same address means the same avatar id, §2.5.3)
  (``test_address_book_restores_an_expired_neighbour``,
  ``test_terminal_copy_teaches_the_originators_address``,
  ``test_an_unknown_peer_is_looked_up_at_once``).
* Pacing is a token bucket refilled by ``wide_rate`` × frame time at each frame tick and capped
  at one frame's worth; the copy that overdraws it still leaves; ``wide_rate = 0`` sends every
  copy at once (``test_wide_copies_leave_at_wide_rate``, ``test_pacing_queue_is_bounded``).
* Frames without an interaction and every forwarded avatar info use the Silac draw unchanged
  (``test_plain_frames_keep_the_silac_fanout``); so do the carriers of an interaction after its
  first ``push_repeats`` (``test_push_stops_after_push_repeats``).
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass
from typing import Final

import numpy as np

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.gossip.config import GossipConfig
from lagless.gossip.messages import (
    AvatarInfo,
    Header,
    InteractionKind,
    JoinRequest,
    Payload,
    Vec3,
)
from lagless.gossip.peer import GossipPeer
from lagless.gossip.table import PeerRecord

__all__ = ["ImprovedConfig", "ImprovedPeer"]

_PUSH_MEMORY: Final = 256  # interaction codes whose push count is remembered (oldest dropped)


@dataclass(frozen=True, slots=True, kw_only=True)
class ImprovedConfig:
    """Parameters of the four mechanisms of `ImprovedPeer`.

    Raises:
        ConfigError: naming the first field out of range.
    """

    join_flood: bool = True
    """The contact forwards a direct join request to every addressed peer."""
    push_radius: float = 250.0
    """Radius of the interaction push, metres (0 disables it)."""
    push_limit: int = 1000
    """Most peers one interaction-carrying frame is pushed to (nearest first)."""
    push_repeats: int = 2
    """Carriers of one interaction that are pushed (the first ones); later carriers are not."""
    address_lookup: bool = True
    """The address book, addresses from terminal copies and requests sent at once (mech. 3)."""
    wide_rate: float = 120_000.0
    """Bytes per second (datagram sizes) at which flood and push copies leave; 0: all at once."""
    wide_backlog: float = 2.0
    """Seconds of ``wide_rate`` the pacing queue holds; copies beyond it are dropped."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.push_radius) and self.push_radius >= 0):
            raise ConfigError(
                f"push_radius must be a finite number of metres >= 0, got {self.push_radius!r}"
            )
        if not 0 <= self.push_limit <= 65535:
            raise ConfigError(f"push_limit must be in [0, 65535], got {self.push_limit}")
        if not 1 <= self.push_repeats <= 255:
            raise ConfigError(f"push_repeats must be in [1, 255], got {self.push_repeats}")
        for name in ("wide_rate", "wide_backlog"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")


class ImprovedPeer(GossipPeer):
    """A `GossipPeer` with the join flood, the interaction push, address lookup and pacing.

    Args:
        config: The Silac parameters (unchanged meaning).
        rng: Source of every random draw.
        address: Where this peer receives datagrams.
        improved: Parameters of the four mechanisms.
        position: Initial avatar position, metres.
        facing: Initial facing direction.
        name: Participant name.
        model: Avatar model id.
    """

    def __init__(
        self,
        *,
        config: GossipConfig,
        rng: random.Random,
        address: Address,
        improved: ImprovedConfig | None = None,
        position: Vec3 = (0.0, 0.0, 0.0),
        facing: Vec3 = (1.0, 0.0, 0.0),
        name: str = "",
        model: int = 0,
    ) -> None:
        super().__init__(
            config=config,
            rng=rng,
            address=address,
            position=position,
            facing=facing,
            name=name,
            model=model,
        )
        self._improved = improved if improved is not None else ImprovedConfig()
        self._pushed: dict[int, int] = {}
        self._book: dict[int, Address] = {}
        self._paced: deque[tuple[bytes, Address]] = deque()
        self._paced_bytes = 0
        self._credit = 0.0
        self._wide_dropped = 0

    @property
    def improved(self) -> ImprovedConfig:
        """The mechanisms' parameters."""
        return self._improved

    @property
    def wide_queued(self) -> int:
        """Flood and push copies waiting for their turn (mechanism 4)."""
        return len(self._paced)

    @property
    def wide_dropped(self) -> int:
        """Flood and push copies dropped because the pacing queue held ``wide_backlog`` s."""
        return self._wide_dropped

    def _emit_wide(self, header: Header, payload: Payload, recipients: list[PeerRecord]) -> None:
        c = self._improved
        if c.wide_rate <= 0:
            super()._emit_wide(header, payload, recipients)
            return
        limit = c.wide_rate * c.wide_backlog
        for data, to in self._wide_copies(header, payload, recipients):
            if self._paced_bytes + len(data) > limit:
                self._wide_dropped += 1
                continue
            self._paced.append((data, to))
            self._paced_bytes += len(data)

    def _frame(self, now: float) -> None:
        super()._frame(now)
        budget = self._improved.wide_rate * self._config.frame_time
        paced = self._paced
        if not paced:
            self._credit = 0.0
            return
        self._credit = min(self._credit + budget, budget)
        while paced and self._credit > 0:
            data, to = paced.popleft()
            self._paced_bytes -= len(data)
            self._credit -= len(data)
            self._outbox.append((data, to))

    def _learn(self, avatar_id: int, now: float) -> PeerRecord:
        record = super()._learn(avatar_id, now)
        address = record.address
        if not self._improved.address_lookup:
            return record
        if address is None:
            address = self._book.get(avatar_id)
            if address is not None:
                self._table.set_address(record, address)
        elif avatar_id not in self._book:
            self._book[avatar_id] = address
            if len(self._book) > self._config.max_peers:
                del self._book[next(iter(self._book))]
        return record

    def _on_avatar_info(self, p: AvatarInfo, h: Header, reply: Address, now: float) -> bool:
        accepted = super()._on_avatar_info(p, h, reply, now)
        if self._improved.address_lookup and h.hop == self._config.max_hop:
            record = self._table.get(p.avatar.avatar_id)
            if record is not None and record.address is None:
                self._learn_address(record, reply)
        return accepted

    def _requests_due(self, recipients: list[PeerRecord]) -> list[Address]:
        if not self._improved.address_lookup:
            return super()._requests_due(recipients)
        return list(self._requests)

    def _recipients_for(
        self, payload: Payload, hop: int, exclude: set[int], penalised: set[int]
    ) -> list[PeerRecord]:
        c = self._improved
        if isinstance(payload, JoinRequest) and c.join_flood:
            if hop != 1:
                return []
            return [self._table.record_at(int(i)) for i in self._table.candidate_slots(exclude)]
        return super()._recipients_for(payload, hop, exclude, penalised)

    def _direct_copies(self, payload: AvatarInfo, drawn: list[PeerRecord]) -> list[PeerRecord]:
        c = self._improved
        if payload.interaction.kind is InteractionKind.NONE or c.push_radius <= 0:
            return []
        code = payload.interaction.code
        pushed = self._pushed.get(code, 0)
        if pushed >= c.push_repeats or c.push_limit == 0:
            return []
        self._pushed[code] = pushed + 1
        while len(self._pushed) > _PUSH_MEMORY:
            del self._pushed[next(iter(self._pushed))]
        return self._neighbourhood({r.avatar_id for r in drawn})

    def _neighbourhood(self, taken: set[int]) -> list[PeerRecord]:
        table = self._table
        slots = table.candidate_slots(taken)
        pos, has_pos, _ = table.columns()
        slots = slots[has_pos[slots]]
        x, y, z = self.avatar.position
        p = pos[slots]
        dx, dy, dz = p[:, 0] - x, p[:, 1] - y, p[:, 2] - z
        d2 = dx * dx + dy * dy + dz * dz
        near = d2 <= self._improved.push_radius**2
        slots, d2 = slots[near], d2[near]
        order = np.lexsort((table.slot_ids()[slots], d2))[: self._improved.push_limit]
        return [table.record_at(int(slots[i])) for i in order]
