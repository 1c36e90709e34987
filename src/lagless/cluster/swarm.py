"""The players of a cluster run: bots that read snapshots, send inputs, and measure what they see.

The client side of issue 16 part 1 (sans-I/O, like ``CellNode``): every player takes its car's
updates from whichever server's snapshot carries it and answers with ``Input`` messages; the
swarm measures what a client would notice of the cluster behind it.

Measures (all from the players' side):
    * **Hand-off gap**: when a car's updates move from one server to another, the server time
      between the last state from the old owner and the first from the new one (ticks / tick
      rate; one snapshot interval when no snapshot was missed), and the wall time between the
      two receptions (adds the processes' scheduling, so it is noisy on a loaded machine).
    * **Hand-off jump**: distance between the new owner's first position and the old owner's
      last one carried forward along its velocity, beside the same residual between consecutive
      updates of one owner (what a client sees anyway from acceleration and steering).
    * **Fail-overs**: an owner change from a server that has published nothing for
      ``SILENT_AFTER`` seconds (it died or stalled) is not a hand-off: counted apart with its gap.
    * **Recovery**: after ``server_killed``, the wall time until every car that server owned is
      updated again by another server (the slowest car).
    * **Inputs**: a snapshot's ``input_seq`` tells the client its inputs up to it are committed.
      ``inputs_lost`` counts committed inputs a later update undoes (the seq going back);
      ``inputs_unapplied`` counts inputs still not acknowledged a second after they were sent.

Decisions:
    * Inputs are the keys held (state, not deltas): one ``Input`` per key change with the next
      ``seq``; the newest unacknowledged one is resent every ``RESEND`` seconds, so a server that
      missed it (or died) cannot leave a car with stale keys.
    * An update older than the newest already seen for a car (a second owner during a conflict)
      is ignored and counted (``stale_updates``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from lagless.cluster.bots import WorldBot
from lagless.cluster.grid import CellGrid
from lagless.cluster.messages import CarRecord, Input, Snapshot, decode, encode
from lagless.cluster.node import advance
from lagless.cluster.subjects import Subjects
from lagless.physics import CarState, Keys

__all__ = ["BotSwarm", "SwarmReport"]

DECIDE_EVERY: Final = 0.05  # s between the bots' decisions
RESEND: Final = 0.2  # s
UNAPPLIED_AFTER: Final = 1.0  # s: an input not acknowledged by then is unapplied
LIVE_WITHIN: Final = 1.0  # s: a car updated this recently is live
SILENT_AFTER: Final = 0.5  # s without any snapshot: a server has stopped publishing


@dataclass(frozen=True, slots=True)
class SwarmReport:
    """What the players saw (times in ms, distances in m)."""

    players: int
    players_live: int
    """Players updated within the last ``LIVE_WITHIN`` s."""
    updates: int
    handoffs_seen: int
    handoff_gap_ms_max: float
    handoff_gap_ms_mean: float
    handoff_gap_wall_ms_max: float
    handoff_gap_wall_ms_p99: float
    update_gap_wall_ms_p99: float
    """Wall time between consecutive updates of one owner, 99th percentile (the baseline)."""
    update_gap_ms_max: float
    """Largest server-time gap between consecutive updates of one owner (a server that fell
    behind by more than its catch-up skips ticks, snapshot instants included)."""
    handoff_jump_m_max: float
    update_jump_m_p99: float
    failovers_seen: int
    """Owner changes away from a silent server that was not killed (a false alarm)."""
    failover_gap_ms_max: float
    recovery_ms: float | None
    """Slowest car of a killed server back in a snapshot, ms; ``None`` without a kill or when a
    car never came back (see ``cars_unrecovered``)."""
    cars_unrecovered: int
    inputs_sent: int
    inputs_acked: int
    inputs_lost: int
    inputs_unapplied: int
    stale_updates: int


@dataclass(slots=True)
class _Player:
    bot: WorldBot
    state: CarState | None = None
    tick: int = -1
    server: int = -1
    received: float = 0.0  # s
    acked: int = 0
    sent_seq: int = 0
    keys: Keys = Keys.NONE
    sent_at: float = 0.0  # s
    changed_at: float = 0.0  # s


@dataclass(slots=True)
class _Samples:
    handoff_ticks: list[int] = field(default_factory=list)
    handoff_wall: list[float] = field(default_factory=list)
    handoff_jump: list[float] = field(default_factory=list)
    update_wall: list[float] = field(default_factory=list)
    update_ticks_max: int = 0
    update_jump: list[float] = field(default_factory=list)
    failover_ticks: list[int] = field(default_factory=list)


def _p99(values: list[float]) -> float:
    return float(np.percentile(values, 99)) if values else 0.0


class BotSwarm:
    """``players`` bot players of a cluster (sans-I/O).

    Args:
        grid: The world.
        players: Number of players (ids ``0..players-1``).
        rng: Seeds every bot.
        tick_rate: The servers' tick rate, Hz (converts ticks to seconds).
        subjects: The cluster's subject names.
    """

    def __init__(
        self,
        grid: CellGrid,
        players: int,
        rng: random.Random,
        *,
        tick_rate: float = 60.0,
        subjects: Subjects | None = None,
    ) -> None:
        """Create the bots; they act once their car's first update arrived."""
        self.subjects = subjects or Subjects()
        self._dt = 1.0 / tick_rate
        self._players = [
            _Player(WorldBot(grid, random.Random(rng.getrandbits(64)))) for _ in range(players)
        ]
        self._samples = _Samples()
        self._out: list[tuple[str, bytes]] = []
        self._next_decision = -math.inf
        self._killed: dict[int, float] = {}  # server -> time killed, s
        self._to_recover: dict[int, int] = {}  # player -> killed server that owned it
        self._recovered: dict[int, float] = {}  # player -> s from kill to its next update
        self._heard: dict[int, float] = {}  # server -> time of its last snapshot, s
        self.updates = 0
        self.inputs_sent = 0
        self.inputs_lost = 0
        self.stale_updates = 0
        self.dropped = 0
        """Payloads that were not snapshots."""

    def subscriptions(self) -> list[str]:
        """Return the subjects the players hear."""
        return [self.subjects.snapshots]

    def server_killed(self, server: int, now: float) -> None:
        """Note that ``server`` was killed at ``now`` (s): its cars are to recover."""
        self._killed[server] = now
        for player, p in enumerate(self._players):
            if p.server == server:
                self._to_recover[player] = server

    # -- sans-I/O ------------------------------------------------------------------------------

    def receive(self, data: bytes, now: float) -> None:
        """Take one payload at ``now`` (s); only snapshots matter to players."""
        message = decode(data)
        if not isinstance(message, Snapshot):
            self.dropped += 1
            return
        for record in message.cars:
            if record.player < len(self._players):
                self._update(record.player, message.server, message.tick, record, now)
        self._heard[message.server] = now

    def _update(self, player: int, server: int, tick: int, record: CarRecord, now: float) -> None:
        p = self._players[player]
        if tick <= p.tick:
            self.stale_updates += 1
            return
        self.updates += 1
        if p.state is not None:
            gap = tick - p.tick
            expected = advance(p.state, gap * self._dt)
            jump = math.hypot(record.state.x - expected.x, record.state.y - expected.y)
            wall = now - p.received
            samples = self._samples
            if p.server == server:
                samples.update_wall.append(wall)
                samples.update_ticks_max = max(samples.update_ticks_max, gap)
                samples.update_jump.append(jump)
            elif p.server in self._killed:
                if player in self._to_recover and player not in self._recovered:
                    self._recovered[player] = now - self._killed[p.server]
            elif now - self._heard.get(p.server, now) > SILENT_AFTER:
                samples.failover_ticks.append(gap)
            else:
                samples.handoff_ticks.append(gap)
                samples.handoff_wall.append(wall)
                samples.handoff_jump.append(jump)
        if record.input_seq < p.acked:
            self.inputs_lost += p.acked - record.input_seq
        else:
            p.acked = record.input_seq
        p.state, p.tick, p.server, p.received = record.state, tick, server, now

    def handle_timer(self, now: float) -> None:
        """Let every bot with a known car decide; resend unacknowledged inputs."""
        if now < self._next_decision:
            return
        self._next_decision = now + DECIDE_EVERY
        for player, p in enumerate(self._players):
            if p.state is None:
                continue
            keys = p.bot.keys(p.state, now)
            if keys != p.keys:
                p.keys, p.sent_seq, p.changed_at = keys, p.sent_seq + 1, now
                self._send(player, p, now)
            elif p.acked < p.sent_seq and now - p.sent_at >= RESEND:
                self._send(player, p, now)

    def _send(self, player: int, p: _Player, now: float) -> None:
        p.sent_at = now
        self.inputs_sent += 1
        self._out.append((self.subjects.input, encode(Input(player, p.sent_seq, p.keys))))

    def next_timer(self) -> float:
        """Return the time of the bots' next decision, s."""
        return self._next_decision

    def messages_to_send(self) -> list[tuple[str, bytes]]:
        """Return and forget the ``(subject, payload)`` pairs to publish."""
        out, self._out = self._out, []
        return out

    # -- results -------------------------------------------------------------------------------

    def report(self, now: float) -> SwarmReport:
        """Return the measures so far at ``now`` (s)."""
        s = self._samples
        players = self._players
        unapplied = sum(
            p.sent_seq - p.acked
            for p in players
            if p.sent_seq > p.acked and now - p.changed_at > UNAPPLIED_AFTER
        )
        unrecovered = len(set(self._to_recover) - set(self._recovered))
        recovery = (
            1000.0 * max(self._recovered.values(), default=0.0)
            if self._killed and not unrecovered
            else None
        )
        gap_ms = [1000.0 * t * self._dt for t in s.handoff_ticks]
        return SwarmReport(
            players=len(players),
            players_live=sum(1 for p in players if p.state and now - p.received <= LIVE_WITHIN),
            updates=self.updates,
            handoffs_seen=len(s.handoff_ticks),
            handoff_gap_ms_max=max(gap_ms, default=0.0),
            handoff_gap_ms_mean=float(np.mean(gap_ms)) if gap_ms else 0.0,
            handoff_gap_wall_ms_max=1000.0 * max(s.handoff_wall, default=0.0),
            handoff_gap_wall_ms_p99=1000.0 * _p99(s.handoff_wall),
            update_gap_wall_ms_p99=1000.0 * _p99(s.update_wall),
            update_gap_ms_max=1000.0 * self._dt * s.update_ticks_max,
            handoff_jump_m_max=max(s.handoff_jump, default=0.0),
            update_jump_m_p99=_p99(s.update_jump),
            failovers_seen=len(s.failover_ticks),
            failover_gap_ms_max=1000.0 * self._dt * max(s.failover_ticks, default=0),
            recovery_ms=recovery,
            cars_unrecovered=unrecovered,
            inputs_sent=self.inputs_sent,
            inputs_acked=sum(p.acked for p in players),
            inputs_lost=self.inputs_lost,
            inputs_unapplied=unapplied,
            stale_updates=self.stale_updates,
        )
