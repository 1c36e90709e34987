"""The demo's arena: a walled 240 m x 160 m field, its bots, display models and the server wrapper.

Both ends of a demo (one process, or ``--server`` and ``--connect`` on two machines) build the
same arena from the constants here, so the server and its clients agree on the walls, the tick
rate and the snapshot ranges without negotiating them.

Decisions:
    * Simulation at 60 Hz (the issue's measure), snapshots at 20 Hz (spec 004 §5.1.1), so each
      snapshot holds the state of every third tick.
    * Snapshot ranges fit the arena: positions within ±256 m at 1 mm (19 bits), velocities
      within ±40 m/s at 1 cm/s (13 bits); 17 cars cost about 300 bytes per snapshot.
    * Bots run on the server: their cars live in the server's ``CarWorld`` with ids from
      ``MAX_CARS - 1`` downwards (players get the lowest free ids from 0 up), and ``BotServer``
      sets their keys every ``BOT_REACTION`` seconds of server time. They cost no network
      traffic of their own; a player's kB/s is what a real client of a 17-car match receives.
    * ``BotServer`` measures the wall time (``time.perf_counter``) and the thread's CPU time
      (``time.thread_time``) of every call into the server (datagrams in, timers, bots, physics
      ticks, the ram rule, datagrams out) and charges them to the physics ticks those calls
      ran: one sample per tick, the time since the previous tick divided by the ticks run. Wall
      time is the demo's headline measure of the server tick (ms); on a loaded machine it
      includes time the process was preempted, so it is an upper bound, and the CPU time
      beside it is the server's own work.
    * A bot drives to random waypoints inside the arena (at least 50 m apart, ``ArenaBot``);
      a leg not reached within ``LEG_TIMEOUT`` (circling a waypoint inside its turning circle,
      pinned to a wall) is abandoned and a new waypoint drawn; a bot that has made less than
      1 m/s forward for ``STUCK_TIME`` (nose against a wall or a car) backs up, steering the other
      way, for ``BACK_UP_TIME``.
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from lagless._types import Address
from lagless.demo.rules import RamReferee
from lagless.errors import ConfigError
from lagless.physics import (
    MAX_CARS,
    CarLeft,
    CarState,
    ClientConfig,
    Keys,
    PhysicsClient,
    PhysicsParams,
    PhysicsServer,
    ServerConfig,
    SnapshotFormat,
    ViewConfig,
    Wall,
)
from lagless.transport import Client, NetcodeClientConfig, NetcodeServerConfig, Server

__all__ = [
    "ARENA_HEIGHT",
    "ARENA_WIDTH",
    "DISPLAY_MODELS",
    "MAX_BOTS",
    "PROTOCOL_ID",
    "SNAPSHOT_FORMAT",
    "TICK_RATE",
    "WALLS",
    "ArenaBot",
    "BotServer",
    "TickStats",
    "make_client",
    "make_server",
    "spawn",
    "view_name",
]

MAIN_VIEW: Final = "main"  # the view a PhysicsClient builds from its parameter file

ARENA_WIDTH: Final = 240.0  # m
ARENA_HEIGHT: Final = 160.0  # m
TICK_RATE: Final = 60.0  # Hz: physics steps per second
SNAPSHOT_RATE: Final = 20.0  # Hz
PROTOCOL_ID: Final = 0x1A61E55D
MAX_BOTS: Final = 48  # bots take ids 63..16, leaving 16 player ids
BOT_REACTION: Final = 0.05  # s between a bot's decisions
LEG_TIMEOUT: Final = 12.0  # s: a waypoint not reached by then is abandoned
_MARGIN: Final = 20.0  # m: waypoints keep this far from the walls
_MIN_LEG: Final = 50.0  # m
_REACHED: Final = 12.0  # m
_DEAD_BAND: Final = 0.06  # rad
_SHARP: Final = 0.6  # rad: above this heading error a bot slows down
_SHARP_SPEED: Final = 9.0  # m/s
STUCK_TIME: Final = 1.0  # s
BACK_UP_TIME: Final = 1.2  # s
TICK_SAMPLES: Final = 60 * 600  # tick timings kept (the last 10 minutes at 60 Hz)

WALLS: Final = (
    Wall(0.0, 0.0, ARENA_WIDTH, 0.0),
    Wall(ARENA_WIDTH, 0.0, ARENA_WIDTH, ARENA_HEIGHT),
    Wall(ARENA_WIDTH, ARENA_HEIGHT, 0.0, ARENA_HEIGHT),
    Wall(0.0, ARENA_HEIGHT, 0.0, 0.0),
)

SNAPSHOT_FORMAT: Final = SnapshotFormat(position_limit=256.0, velocity_min=-40.0, velocity_max=40.0)

DISPLAY_MODELS: Final[dict[str, ViewConfig]] = {
    "dr+0.15rtt": ViewConfig(rtt_factor=0.15, extrapolation_time=1.0, use_acceleration=True),
    "snap": ViewConfig(rtt_factor=0.0, extrapolation_time=0.0),
    "delay100": ViewConfig(render_delay=0.1, rtt_factor=0.0, extrapolation_time=0.0),
    "dr": ViewConfig(rtt_factor=0.0, extrapolation_time=1.0, use_acceleration=True),
}
"""Display models of the remote cars (spec 004 §6.0 rows): the Hermite buffer with a render delay
of 0.15 x RTT and second-order dead reckoning (the thesis's winner, first), the newest snapshot
as it comes (``snap``), interpolation 100 ms in the past, and dead reckoning alone."""


def spawn(car_id: int) -> CarState:
    """Return where car ``car_id`` (0..63) starts: an 8 x 8 grid 28 m by 20 m apart, heading +x."""
    row, col = divmod(car_id % MAX_CARS, 8)
    return CarState(x=20.0 + 28.0 * col, y=10.0 + 20.0 * row)


def view_name(model: str) -> str:
    """Return the ``PhysicsClient`` view that shows display model ``model``.

    Raises:
        ConfigError: Unknown model; the message lists the valid names.
    """
    if model not in DISPLAY_MODELS:
        raise ConfigError(f"unknown display model {model!r}; valid: {', '.join(DISPLAY_MODELS)}")
    return MAIN_VIEW if model == next(iter(DISPLAY_MODELS)) else model


class ArenaBot:
    """A bot that drives to random waypoints inside the arena with the four keys.

    Args:
        rng: The only source of randomness (waypoints, leg speeds).
        start: Where the car starts.
    """

    def __init__(self, rng: random.Random, start: CarState) -> None:
        """Draw the first waypoint."""
        self._rng = rng
        self.waypoint = (start.x, start.y)
        """The waypoint being driven to, m."""
        self.target_speed = 0.0
        """The leg's cruising speed, m/s."""
        self._leg_deadline = -math.inf
        self._moving_at = 0.0  # last time the car made headway, s
        self._back_up_until = -math.inf
        self._next_waypoint(start.x, start.y, 0.0)

    def _next_waypoint(self, x: float, y: float, now: float) -> None:
        rng = self._rng
        while True:
            wx = rng.uniform(_MARGIN, ARENA_WIDTH - _MARGIN)
            wy = rng.uniform(_MARGIN, ARENA_HEIGHT - _MARGIN)
            if math.hypot(wx - x, wy - y) >= _MIN_LEG:
                break
        self.waypoint = (wx, wy)
        self.target_speed = rng.uniform(12.0, 22.0)
        self._leg_deadline = now + LEG_TIMEOUT

    def keys(self, state: CarState, now: float) -> Keys:
        """Return the keys to hold from ``now`` (s) for the car in ``state``."""
        wx, wy = self.waypoint
        if math.hypot(wx - state.x, wy - state.y) < _REACHED or now >= self._leg_deadline:
            self._next_waypoint(state.x, state.y, now)
            wx, wy = self.waypoint
        bearing = math.atan2(wy - state.y, wx - state.x)
        error = math.remainder(bearing - state.heading, 2.0 * math.pi)
        wanted = _SHARP_SPEED if abs(error) > _SHARP else self.target_speed
        forward = state.vx * math.cos(state.heading) + state.vy * math.sin(state.heading)
        if forward >= 1.0:
            self._moving_at = now
        elif now - self._moving_at > STUCK_TIME and now >= self._back_up_until:
            self._back_up_until = now + BACK_UP_TIME
        if now < self._back_up_until:
            self._moving_at = now
            return Keys.DOWN | (Keys.RIGHT if error > 0.0 else Keys.LEFT)
        keys = Keys.NONE
        if forward < wanted - 1.0:
            keys |= Keys.UP
        elif forward > wanted + 2.0:
            keys |= Keys.DOWN
        if error > _DEAD_BAND:
            keys |= Keys.LEFT
        elif error < -_DEAD_BAND:
            keys |= Keys.RIGHT
        return keys


@dataclass(frozen=True, slots=True)
class TickStats:
    """Server time per physics tick, ms (wall time, see ``BotServer``)."""

    ticks: int
    """Ticks measured."""
    avg_ms: float
    """Mean time per tick, ms."""
    p99_ms: float
    """99th percentile, ms."""
    max_ms: float
    """Largest, ms."""


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Return the ``q`` quantile (0..1) of sorted values, nearest rank."""
    index = min(len(sorted_values) - 1, max(0, math.ceil(q * len(sorted_values)) - 1))
    return sorted_values[index]


class BotServer:
    """A ``PhysicsServer`` with bots in its world and a stopwatch on every call (sans-I/O).

    Args:
        server: The physics server (owned from now on).
        bots: Number of bot cars, 0..``MAX_BOTS``.
        rng: Seeds each bot's own generator.
        clock: The wall-time stopwatch, s (``time.perf_counter``); only durations are used.
        cpu_clock: The CPU-time stopwatch of the calling thread, s (``time.thread_time``).
    """

    def __init__(
        self,
        server: PhysicsServer,
        *,
        bots: int,
        rng: random.Random,
        clock: Callable[[], float] = time.perf_counter,
        cpu_clock: Callable[[], float] = time.thread_time,
    ) -> None:
        """Add the bot cars to the server's world."""
        if not 0 <= bots <= MAX_BOTS:
            raise ConfigError(f"bots must be in [0, {MAX_BOTS}], got {bots}")
        self.server = server
        self._clocks = (clock, cpu_clock)
        self.bots: dict[int, ArenaBot] = {}
        """Bot car id -> its driver."""
        for k in range(bots):
            car_id = MAX_CARS - 1 - k
            start = spawn(car_id)
            server.world.add_car(car_id, start)
            self.bots[car_id] = ArenaBot(random.Random(rng.getrandbits(64)), start)
        self._next_decision = -math.inf
        self._busy = [0.0, 0.0]  # wall and CPU s spent in the server since the last tick
        self._ticks = 0
        self._samples: tuple[deque[float], deque[float]] = (
            deque(maxlen=TICK_SAMPLES),
            deque(maxlen=TICK_SAMPLES),
        )
        self.referee = RamReferee()
        """The ram scores (the demo's game rule, ``lagless.demo.rules``)."""
        self.bytes_sent = 0
        """UDP payload bytes the server handed out, bytes."""
        self.datagrams_sent = 0
        """Datagrams the server handed out."""

    def _ticks_run(self) -> int:
        return round(self.server.world.time * self.server.config.tick_rate)

    def _start(self) -> tuple[float, float]:
        return self._clocks[0](), self._clocks[1]()

    def _charge(self, started: tuple[float, float]) -> None:
        for k in (0, 1):
            self._busy[k] += self._clocks[k]() - started[k]
        ticks = self._ticks_run()
        if ticks > self._ticks:
            for k in (0, 1):
                share = self._busy[k] / (ticks - self._ticks)
                self._samples[k].extend([share] * (ticks - self._ticks))
                self._busy[k] = 0.0
            self._ticks = ticks

    def tick_stats(self, *, cpu: bool = False) -> TickStats:
        """Return the wall time (or with ``cpu`` the thread's CPU time) per tick so far.

        Zeros before the first tick. CPU time leaves out what other processes took while the
        server ran (a shared machine); wall time includes it.
        """
        samples = self._samples[1 if cpu else 0]
        if not samples:
            return TickStats(0, 0.0, 0.0, 0.0)
        ordered = sorted(samples)
        return TickStats(
            ticks=len(ordered),
            avg_ms=1000.0 * sum(ordered) / len(ordered),
            p99_ms=1000.0 * _percentile(ordered, 0.99),
            max_ms=1000.0 * ordered[-1],
        )

    # -- sans-I/O interface ---------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Feed the server one datagram at ``now`` (s)."""
        started = self._start()
        self.server.receive_datagram(data, addr, now)
        self._charge(started)

    def handle_timer(self, now: float) -> None:
        """Let the bots decide when due, run the server's timers and ticks, judge the rams."""
        started = self._start()
        world = self.server.world
        if now >= self._next_decision:
            for car_id, bot in self.bots.items():
                world.set_keys(car_id, bot.keys(world.state(car_id), now))
            self._next_decision = now + BOT_REACTION
        ticks = self._ticks_run()
        self.server.handle_timer(now)
        if self._ticks_run() > ticks:
            self.referee.judge(world, now)
        self._charge(started)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return the server's datagrams."""
        started = self._start()
        out = self.server.datagrams_to_send(now)
        self._charge(started)
        self.datagrams_sent += len(out)
        self.bytes_sent += sum(len(data) for data, _ in out)
        return out

    def next_timer(self) -> float | None:
        """Return the earlier of the server's next deadline and the bots' next decision."""
        due = self.server.next_timer()
        return self._next_decision if due is None else min(due, self._next_decision)

    def next_event(self) -> object | None:
        """Return the server's next event (``CarJoined`` / ``CarLeft``), or ``None``."""
        event = self.server.next_event()
        if isinstance(event, CarLeft):
            self.referee.forget(event.car_id)
        return event


def make_server(
    address: Address,
    *,
    bots: int,
    rng: random.Random,
    start: float,
    transport_type: type[Server] = Server,
) -> BotServer:
    """Build the arena's server with ``bots`` bots, insecure transport (a local demo).

    Args:
        address: The server's public address (what clients send to).
        bots: Number of bots.
        rng: Seeds the transport's random bytes, the bots and the server.
        start: Server time of tick 0, s.
        transport_type: The transport server class (``lagless.web``'s ``HybridServer`` adds
            WebSocket links).
    """
    transport = transport_type(
        config=NetcodeServerConfig(protocol_id=PROTOCOL_ID, public_address=address, insecure=True),
        random_bytes=random.Random(rng.getrandbits(64)).randbytes,
    )
    server = PhysicsServer(
        transport=transport,
        params=PhysicsParams(),
        config=ServerConfig(
            tick_rate=TICK_RATE,
            snapshot_rate=SNAPSHOT_RATE,
            walls=WALLS,
            spawns=tuple(spawn(k) for k in range(MAX_CARS - MAX_BOTS)),
            snapshot_format=SNAPSHOT_FORMAT,
        ),
        rng=random.Random(rng.getrandbits(64)),
        start=start,
    )
    return BotServer(server, bots=bots, rng=rng)


def make_client(rng: random.Random) -> PhysicsClient:
    """Build a player's client with one view per display model (``DISPLAY_MODELS``) that also
    predicts its own car (spec 004 §7.2; ``lagless.demo.session.shown_cars`` picks which to show).

    Connect it with ``client.transport.connect_insecure(..., protocol_id=PROTOCOL_ID, ...)``.
    """
    first, *others = DISPLAY_MODELS.items()
    params = PhysicsParams(
        render_delay=first[1].render_delay,
        render_delay_rtt_factor=first[1].rtt_factor,
        dead_reckoning_extrapolation_time=first[1].extrapolation_time,
        dead_reckoning_use_acceleration=first[1].use_acceleration,
    )
    client = PhysicsClient(
        transport=Client(config=NetcodeClientConfig(insecure=True)),
        params=params,
        config=ClientConfig(
            tick_rate=TICK_RATE, walls=WALLS, snapshot_format=SNAPSHOT_FORMAT, predict=True
        ),
        rng=random.Random(rng.getrandbits(64)),
    )
    for name, config in others:
        client.add_view(name, config)
    return client
