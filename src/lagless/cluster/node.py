"""A cell server: owns the cars in its cells, hands them on at the borders, takes over dead cells.

The sans-I/O core of issue 16 part 1 (DESIGN.md "The sans-I/O contract", with NATS subjects in
place of addresses): ``receive(data, now)`` takes any cluster payload, ``handle_timer(now)`` runs
the physics ticks due, ``messages_to_send()`` returns ``(subject, payload)`` pairs, and
``next_timer()`` / ``next_event()`` as everywhere else. ``lagless.apps.cluster`` pumps it over
NATS; ``lagless.cluster.sim`` pumps several of them over an in-memory bus in virtual time.

Each node runs the demo's car physics (``lagless.physics.CarWorld``, the arena's car) for the cars
it owns plus *ghosts*: copies of the cars near its cells that other servers own, kept from their
border messages, so its cars collide with the cars across a border.

Decisions:
    * **One tick grid.** Tick ``k`` is at time ``k / tick_rate`` of the shared monotonic clock
      (the servers of one host share ``CLOCK_MONOTONIC``); snapshots go out on every
      ``snapshot_every``-th tick, so all servers publish on the same instants and a car handed on
      after one snapshot is in the new owner's next one.
    * **Hand-off** (after each snapshot): an owned car whose cell belongs to another server and
      that is more than ``margin`` metres outside all of this server's cells is sent to that
      cell's owner with its full state at this tick and ``generation + 1``; it stays here as a
      ghost. The receiver applies it at the same tick of its own grid (held if it is behind,
      extrapolated along the velocity if it is ahead), with the newer of the carried input and
      the newest input it heard itself. A hand-off that arrives after the receiver already
      published the snapshot instant following it (the sender ran late) is made up for at once:
      the receiver publishes that car's state at the missed instant (the hand-off's state carried
      along its velocity, as the receiver places it), a one-car snapshot with that older tick,
      which peers do not take as the server's last full snapshot. The sender keeps the hand-off
      *pending* until it sees the car in the receiver's snapshot: it resends it every
      ``resend`` seconds (with the state and tick of the first send), and takes the car back
      (generation + 2) if the receiver dies first. Every node remembers the highest generation
      it has heard of per car and ignores hand-offs and border copies older than it (a resend
      arriving after the car was taken and passed on must not bring back an old copy).
    * **Failure detection**: a server whose snapshot (the heartbeat) has not arrived for
      ``dead_after`` seconds (1 s: twenty missed snapshots) is dead. Servers never heard from are
      not judged. A node that was itself stalled that long does not judge the others on its
      return (``handle_timer``), nor does one whose own snapshots have not come back from the
      bus for as long (a stalled broker silences everyone at once). 0.5 s recovered twice as
      fast, but on the loaded 2-core development machine a live server once went that long
      unheard; the false alarm was resolved (one owner per car, no input lost) but its cars
      jumped back to the adopted snapshot, about 5 m.
    * **Take-over**: the successor of a dead server is the live server owning the fewest cells
      (ties: the lowest id), as every node computes it from what it has heard. It claims the dead
      server's cells with ``epoch + 1`` and adopts the cars of its last snapshot at their last
      state (a pause of about ``dead_after``, no jump), with ``generation + 1`` and the newest
      input it heard; a car that a live server already shows with a higher generation is left
      to it. A server that died before it ever published a non-empty snapshot leaves its
      cars where they spawned.
    * **Conflicts** (two owners after a false alarm or a race): claims order by (epoch, lower
      server id), cars by (generation, lower server id); the loser drops its copy when it sees
      the winner's snapshot.
    * Player ids are the ``CarWorld`` car ids, so a cluster holds at most 256 players.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from lagless.cluster.grid import CellGrid
from lagless.cluster.messages import (
    Border,
    CarRecord,
    ClusterMessage,
    Handoff,
    Input,
    Snapshot,
    Stop,
    decode,
    encode,
)
from lagless.cluster.subjects import Subjects
from lagless.errors import ConfigError
from lagless.physics import CarParams, CarState, CarWorld, Keys

__all__ = ["CarAdopted", "CellNode", "HandoffAccepted", "NodeConfig", "ServerDown"]

MAX_PLAYERS = 256


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeConfig:
    """Rates and distances of a cell server."""

    tick_rate: float = 60.0
    """Physics ticks per second, Hz (the demo's 60)."""
    snapshot_every: int = 3
    """Ticks between snapshots (3 at 60 Hz: the demo's 20-Hz snapshots)."""
    halo: float = 15.0
    """Cars this close to another server's cell are copied to it, m."""
    margin: float = 2.0
    """A car is handed on this far past the border (hysteresis against ping-pong), m."""
    dead_after: float = 1.0
    """A server silent this long is dead, s."""
    ghost_ttl: float = 0.3
    """A ghost not refreshed this long is removed, s."""
    resend: float = 0.25
    """A pending hand-off not yet seen in the receiver's snapshot is resent after this, s."""
    max_catch_up: int = 30
    """At most this many ticks run in one call; beyond it ticks are skipped and counted."""

    def __post_init__(self) -> None:
        """Validate; raise ``ConfigError`` naming the field."""
        if not (math.isfinite(self.tick_rate) and 1.0 <= self.tick_rate <= 1000.0):
            raise ConfigError(f"tick_rate must be in [1, 1000] Hz, got {self.tick_rate!r}")
        if not 1 <= self.snapshot_every <= 1000:
            raise ConfigError(f"snapshot_every must be in [1, 1000], got {self.snapshot_every}")
        for name in ("halo", "margin", "dead_after", "ghost_ttl", "resend"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0.0):
                raise ConfigError(f"{name} must be a positive number, got {value!r}")
        if self.halo <= self.margin:
            raise ConfigError("halo must be larger than margin (a car is a ghost before it moves)")
        if self.max_catch_up < 1:
            raise ConfigError(f"max_catch_up must be >= 1, got {self.max_catch_up}")

    @property
    def snapshot_interval(self) -> float:
        """Return the time between snapshots, s."""
        return self.snapshot_every / self.tick_rate


@dataclass(frozen=True, slots=True)
class HandoffAccepted:
    """Player ``player``'s car came from server ``source`` at ``tick``."""

    player: int
    source: int
    tick: int


@dataclass(frozen=True, slots=True)
class ServerDown:
    """Server ``server`` was silent for ``dead_after``; ``successor`` takes its cells."""

    server: int
    successor: int
    now: float


@dataclass(frozen=True, slots=True)
class CarAdopted:
    """A dead server's car (``player``) was restored here from its last snapshot."""

    player: int
    dead: int


Event = HandoffAccepted | ServerDown | CarAdopted


@dataclass(slots=True)
class _Owned:
    generation: int
    input_seq: int


@dataclass(slots=True)
class _Pending:
    target: int
    record: CarRecord
    sent: float  # s
    tick: int  # the tick of the record's state


def advance(state: CarState, dt: float) -> CarState:
    """Return ``state`` carried ``dt`` seconds ahead (a few ticks) along its velocity.

    A straight line: carrying the velocity round with the turn rate predicted the next
    snapshot worse (50-ms residual p99 0.05-0.07 m against 0.03 m in the same runs), as the
    cars slide.
    """
    return CarState(
        x=state.x + state.vx * dt,
        y=state.y + state.vy * dt,
        heading=math.remainder(state.heading + state.angular_velocity * dt, 2.0 * math.pi),
        vx=state.vx,
        vy=state.vy,
        angular_velocity=state.angular_velocity,
        steer=state.steer,
        keys=state.keys,
    )


class CellNode:
    """One cell server of a cluster of ``servers`` (sans-I/O).

    Args:
        server: This server's id, 0..servers-1; it starts owning cells ``c`` with
            ``c % servers == server``.
        servers: Number of servers in the cluster.
        grid: The cells.
        spawns: Start state of every player (``grid.spawn_states``); this node adds those in
            its cells.
        now: Current time, s (the shared monotonic clock).
        config: Rates and distances.
        car: The car properties (the demo's default car).
        subjects: The cluster's subject names.
    """

    def __init__(
        self,
        server: int,
        servers: int,
        grid: CellGrid,
        spawns: Sequence[CarState],
        now: float,
        *,
        config: NodeConfig | None = None,
        car: CarParams | None = None,
        subjects: Subjects | None = None,
    ) -> None:
        """Build the world and add the players spawned in this server's cells."""
        if not 1 <= servers <= 64 or not 0 <= server < servers:
            raise ConfigError(
                f"server must be in [0, servers) with servers in [1, 64], got {server}"
            )
        if len(spawns) > MAX_PLAYERS:
            raise ConfigError(f"players must be <= {MAX_PLAYERS}, got {len(spawns)}")
        self.server = server
        self.servers = servers
        self.grid = grid
        self.config = config or NodeConfig()
        self.subjects = subjects or Subjects()
        self.world = CarWorld(car or CarParams(), grid.walls())
        self._spawns = tuple(spawns)
        self._owners: dict[int, tuple[int, int]] = {c: (0, c % servers) for c in range(grid.cells)}
        self._owned: dict[int, _Owned] = {}
        self._ghosts: dict[int, float] = {}  # player -> time of its last border copy, s
        self._inputs: dict[int, tuple[int, Keys]] = {}  # player -> newest (seq, keys) heard
        self._last_seen: dict[int, float] = {}  # server -> time of its last snapshot, s
        self._last_snapshot: dict[int, Snapshot] = {}
        self._dead: set[int] = set()
        self._pending_out: dict[int, _Pending] = {}
        self._generation: dict[int, int] = {}  # player -> highest generation known anywhere
        self._full_seen: set[int] = set()  # servers heard speaking for cells or cars
        self._pending_in: list[Handoff] = []
        self._out: list[tuple[str, bytes]] = []
        self._events: deque[Event] = deque()
        self._dt = 1.0 / self.config.tick_rate
        self.tick = math.floor(now * self.config.tick_rate + 1e-9)
        """The last tick run."""
        self.stopped = False
        """A ``Stop`` arrived."""
        self.dropped = 0
        """Payloads that were not valid cluster messages."""
        self.handoffs_sent = 0
        self.handoffs_accepted = 0
        self.takeovers = 0
        """Cells taken over from dead servers."""
        self.cars_adopted = 0
        """Cars restored from a dead server's last snapshot."""
        self.cars_reclaimed = 0
        """Pending hand-offs taken back because the receiver died."""
        self.duplicates_dropped = 0
        self.ticks_skipped = 0
        self.ticks_run = 0
        self.stalls = 0
        """Times this node itself went ``dead_after`` without a ``handle_timer`` call."""
        self._last_call = now
        self._echo = now  # when the bus last brought back one of our own snapshots, s
        self._fenced_until_echo: int | None = None  # fenced until our snapshot of this tick echoes
        self.stale_handoffs = 0
        """Resent hand-offs that arrived after the car had been taken (and maybe passed on)."""
        self.late_handoffs = 0
        """Hand-offs that arrived after this server had published the snapshot they belonged in
        (a busy machine); each was made up for by a snapshot of that car at the missed tick."""
        for player, state in enumerate(spawns):
            cell = int(grid.cell_of(state.x, state.y))
            if self._owners[cell][1] == server:
                self.world.add_car(player, state)
                self._owned[player] = _Owned(generation=0, input_seq=0)

    # -- queries -------------------------------------------------------------------------------

    @property
    def owned(self) -> list[int]:
        """Return the players whose cars this server owns, ascending."""
        return sorted(self._owned)

    @property
    def ghosts(self) -> list[int]:
        """Return the players held here as ghosts (owned elsewhere), ascending."""
        return sorted(self._ghosts)

    @property
    def cells(self) -> list[int]:
        """Return the cells this server owns."""
        return [c for c, (_, owner) in self._owners.items() if owner == self.server]

    def owner(self, cell: int) -> int:
        """Return the server owning ``cell`` as this node knows it."""
        return self._owners[cell][1]

    @property
    def dead(self) -> set[int]:
        """Return the servers this node holds dead."""
        return set(self._dead)

    def subscriptions(self) -> list[str]:
        """Return the subjects this node must hear."""
        s = self.subjects
        return [s.input, s.snapshots, s.borders, s.handoff(self.server), s.stop]

    # -- sans-I/O interface --------------------------------------------------------------------

    def receive(self, data: bytes, now: float) -> None:
        """Take one payload from the bus at ``now`` (s); invalid payloads are counted, ignored."""
        message = decode(data)
        if message is None:
            self.dropped += 1
            return
        self._on_message(message, now)

    def handle_timer(self, now: float) -> None:
        """Run every tick due by ``now`` (s), with snapshots, hand-offs and failure detection.

        After a stall of this node itself (no call for half of ``dead_after``: the others may
        have taken it for dead), it *fences* itself: the others' heartbeats get a fresh grace
        period, and until the bus brings back one of its own snapshots sent after the stall it
        publishes only empty snapshots (heartbeats that claim nothing) and hands nothing on, so
        that it has read everything that queued up meanwhile (a take-over of its cells, the
        adopted copies of its cars) before it speaks for its cars again.
        """
        stalled = now - self._last_call > 0.5 * self.config.dead_after
        self._last_call = now
        due = math.floor(now * self.config.tick_rate + 1e-9)
        if stalled:
            self.stalls += 1
            self._fenced_until_echo = due
            for server in self._last_seen:
                self._last_seen[server] = now
        if due - self.tick > self.config.max_catch_up:
            skipped = due - self.tick - self.config.max_catch_up
            self.ticks_skipped += skipped
            self.tick += skipped
            self.world.time += skipped * self._dt
        while self.tick < due:
            self._apply_pending_in()
            self.world.step(self._dt)
            self.tick += 1
            self.ticks_run += 1
            if self.tick % self.config.snapshot_every == 0:
                self._snapshot_tick(now)

    def next_timer(self) -> float:
        """Return the time of the next tick, s."""
        return (self.tick + 1) * self._dt

    def messages_to_send(self) -> list[tuple[str, bytes]]:
        """Return and forget the ``(subject, payload)`` pairs to publish."""
        out, self._out = self._out, []
        return out

    def next_event(self) -> Event | None:
        """Return the next ``HandoffAccepted`` / ``ServerDown`` / ``CarAdopted``, or ``None``."""
        return self._events.popleft() if self._events else None

    # -- receiving -----------------------------------------------------------------------------

    def _on_message(self, message: ClusterMessage, now: float) -> None:
        match message:
            case Input(player=player, seq=seq, keys=keys):
                self._heard_input(player, seq, keys)
            case Snapshot() if message.server == self.server:
                self._echo = now
                if self._fenced_until_echo is not None and message.tick >= self._fenced_until_echo:
                    self._fenced_until_echo = None
            case Snapshot() if message.server < self.servers:
                self._on_snapshot(message, now)
            case Border(cell=cell) if message.server != self.server and self._mine(cell):
                self._on_border(message, now)
            case Handoff(target=target) if target == self.server:
                self._pending_in.append(message)
                self._apply_pending_in()
            case Stop():
                self.stopped = True
            case _:
                pass

    def _mine(self, cell: int) -> bool:
        return cell in self._owners and self._owners[cell][1] == self.server

    def _heard_input(self, player: int, seq: int, keys: Keys) -> None:
        if player >= len(self._spawns):
            self.dropped += 1
            return
        known = self._inputs.get(player)
        if known is not None and known[0] >= seq:
            return
        self._inputs[player] = (seq, keys)
        owned = self._owned.get(player)
        if owned is not None:
            owned.input_seq = seq
            self.world.set_keys(player, keys)

    def _on_snapshot(self, snap: Snapshot, now: float) -> None:
        source = snap.server
        self._last_seen[source] = now
        self._dead.discard(source)
        previous = self._last_snapshot.get(source)
        fencing = not snap.claims and not snap.cars  # nothing to restore from it
        if not fencing:
            self._full_seen.add(source)
        if previous is None or (snap.tick > previous.tick and not fencing):
            self._last_snapshot[source] = snap
        for cell, epoch in snap.claims:
            if cell in self._owners:
                known_epoch, known_owner = self._owners[cell]
                if (epoch, -source) > (known_epoch, -known_owner):
                    self._owners[cell] = (epoch, source)
        for record in snap.cars:
            player = record.player
            if player >= len(self._spawns):
                continue
            self._heard_input(player, record.input_seq, record.state.keys)
            self._saw(player, record.generation)
            pending = self._pending_out.get(player)
            if pending is not None and record.generation >= pending.record.generation:
                del self._pending_out[player]
            owned = self._owned.get(player)
            if owned is not None and (record.generation, -source) > (
                owned.generation,
                -self.server,
            ):
                del self._owned[player]
                self.world.remove_car(player)
                self.duplicates_dropped += 1

    def _on_border(self, border: Border, now: float) -> None:
        lag = (self.tick - border.tick) * self._dt
        for record in border.cars:
            player = record.player
            if player >= len(self._spawns) or player in self._owned:
                continue
            if record.generation < self._generation.get(player, -1):
                continue  # an older owner's copy, overtaken by a hand-off
            self._saw(player, record.generation)
            state = advance(record.state, lag) if lag > 0.0 else record.state
            self._place(player, state)
            self._ghosts[player] = now

    def _saw(self, player: int, generation: int) -> None:
        if generation > self._generation.get(player, -1):
            self._generation[player] = generation

    def _place(self, player: int, state: CarState) -> None:
        if player in self.world.car_ids:
            self.world.restore(player, state)
        else:
            self.world.add_car(player, state)

    def _apply_pending_in(self) -> None:
        if not self._pending_in:
            return
        waiting: list[Handoff] = []
        for handoff in self._pending_in:
            if handoff.tick > self.tick:
                waiting.append(handoff)
            else:
                self._accept(handoff)
        self._pending_in = waiting

    def _accept(self, handoff: Handoff) -> None:
        record = handoff.car
        player = record.player
        if player >= len(self._spawns):
            return
        if record.generation <= self._generation.get(player, -1):
            self.stale_handoffs += 1  # a resend of a hand-off already applied (and maybe passed on)
            return
        state = advance(record.state, (self.tick - handoff.tick) * self._dt)
        self._own(player, state, record, record.generation)
        self.handoffs_accepted += 1
        every = self.config.snapshot_every
        missed = (handoff.tick // every + 1) * every
        if missed <= self.tick:
            owned = self._owned[player]
            late = advance(record.state, (missed - handoff.tick) * self._dt)
            car = CarRecord(player, owned.generation, owned.input_seq, late)
            self._publish_snapshot([car], tick=missed)
            self.late_handoffs += 1
        self._events.append(HandoffAccepted(player, handoff.source, handoff.tick))

    def _own(self, player: int, state: CarState, record: CarRecord, generation: int) -> None:
        """Make ``player``'s car ours at ``state`` with the newest input we know of."""
        seq, keys = record.input_seq, record.state.keys
        heard = self._inputs.get(player)
        if heard is not None and heard[0] > seq:
            seq, keys = heard
        self._place(player, state)
        self.world.set_keys(player, keys)
        self._ghosts.pop(player, None)
        self._pending_out.pop(player, None)
        self._owned[player] = _Owned(generation=generation, input_seq=seq)
        self._saw(player, generation)

    # -- every snapshot tick -------------------------------------------------------------------

    def _snapshot_tick(self, now: float) -> None:
        if self._fenced_until_echo is not None:
            self._out.append(
                (
                    self.subjects.snapshot(self.server),
                    encode(Snapshot(self.server, self.tick, (), ())),
                )
            )
            return
        self._detect_failures(now)
        records = self._records()
        self._publish_snapshot(records)
        if records:
            self._publish_borders(records)
            self._hand_off(records, now)
        self._resend_or_reclaim(now)
        for player, seen in list(self._ghosts.items()):
            if now - seen > self.config.ghost_ttl:
                del self._ghosts[player]
                self.world.remove_car(player)

    def _records(self) -> list[CarRecord]:
        return [
            CarRecord(player, owned.generation, owned.input_seq, self.world.state(player))
            for player, owned in sorted(self._owned.items())
        ]

    def _publish_snapshot(self, records: list[CarRecord], *, tick: int | None = None) -> None:
        claims = tuple(
            (c, epoch) for c, (epoch, owner) in self._owners.items() if owner == self.server
        )
        snap = Snapshot(self.server, self.tick if tick is None else tick, claims, tuple(records))
        self._out.append((self.subjects.snapshot(self.server), encode(snap)))

    def _publish_borders(self, records: list[CarRecord]) -> None:
        xs = np.array([r.state.x for r in records])
        ys = np.array([r.state.y for r in records])
        near = self.grid.outside(xs, ys) <= self.config.halo
        for cell in range(self.grid.cells):
            if self._mine(cell):
                continue
            rows = np.flatnonzero(near[:, cell])
            if rows.size:
                cars = tuple(records[i] for i in rows)
                message = Border(self.server, self.tick, cell, cars)
                self._out.append((self.subjects.border(cell), encode(message)))

    def _hand_off(self, records: list[CarRecord], now: float) -> None:
        xs = np.array([r.state.x for r in records])
        ys = np.array([r.state.y for r in records])
        cells = self.grid.cell_of(xs, ys)
        mine = np.array([self._mine(c) for c in range(self.grid.cells)])
        outside = self.grid.outside(xs, ys)
        past = (
            outside[:, mine].min(axis=1) > self.config.margin
            if mine.any()
            else np.ones(len(records), dtype=bool)
        )
        for i in np.flatnonzero(~mine[cells] & past):
            target = self.owner(int(cells[i]))
            if target in self._dead:
                continue
            record = records[i]
            moved = CarRecord(record.player, record.generation + 1, record.input_seq, record.state)
            self._saw(record.player, moved.generation)
            self._send_handoff(target, moved, now, self.tick)
            del self._owned[record.player]
            self._ghosts[record.player] = now
            self.handoffs_sent += 1

    def _send_handoff(self, target: int, record: CarRecord, now: float, tick: int) -> None:
        self._pending_out[record.player] = _Pending(target, record, now, tick)
        message = Handoff(self.server, target, tick, record)
        self._out.append((self.subjects.handoff(target), encode(message)))

    def _resend_or_reclaim(self, now: float) -> None:
        for player, pending in list(self._pending_out.items()):
            if pending.target in self._dead:
                del self._pending_out[player]
                if player not in self._owned:
                    record = pending.record
                    generation = record.generation + 1
                    self._own(player, self._state_or(player, record.state), record, generation)
                    self.cars_reclaimed += 1
            elif now - pending.sent >= self.config.resend:
                self._send_handoff(pending.target, pending.record, now, pending.tick)

    def _state_or(self, player: int, fallback: CarState) -> CarState:
        return self.world.state(player) if player in self.world.car_ids else fallback

    def _detect_failures(self, now: float) -> None:
        if now - self._echo > self.config.dead_after:
            return  # the bus itself is silent: nobody's silence means anything
        for server, seen in list(self._last_seen.items()):
            if server in self._dead or now - seen <= self.config.dead_after:
                continue
            self._dead.add(server)
            successor = self._successor()
            self._events.append(ServerDown(server, successor, now))
            if successor == self.server:
                self._take_over(server)

    def _successor(self) -> int:
        load = {s: 0 for s in range(self.servers) if s not in self._dead}
        for _, owner in self._owners.values():
            if owner in load:
                load[owner] += 1
        return min(load, key=lambda s: (load[s], s))

    def _take_over(self, dead: int) -> None:
        for cell, (epoch, owner) in list(self._owners.items()):
            if owner == dead:
                self._owners[cell] = (epoch + 1, self.server)
                self.takeovers += 1
        snap = self._last_snapshot.get(dead)
        if snap is None or dead not in self._full_seen:
            # it died before it ever spoke for its cars: they are still where they spawned
            spawned = (
                CarRecord(p, 0, 0, state)
                for p, state in enumerate(self._spawns)
                if int(self.grid.cell_of(state.x, state.y)) % self.servers == dead
            )
            snap = Snapshot(dead, self.tick, (), tuple(spawned))
        elsewhere: dict[int, int] = {}
        for server, other in self._last_snapshot.items():
            if server not in self._dead:
                for record in other.cars:
                    elsewhere[record.player] = max(
                        elsewhere.get(record.player, -1), record.generation
                    )
        for record in snap.cars:
            player = record.player
            if player >= len(self._spawns) or player in self._owned:
                continue
            if elsewhere.get(player, -1) >= record.generation:
                continue
            self._own(player, record.state, record, record.generation + 1)
            self.cars_adopted += 1
            self._events.append(CarAdopted(player, dead))
