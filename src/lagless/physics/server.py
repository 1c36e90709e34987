"""The physics server: the game logic of spec 004 §4.3 as a sans-I/O object over the transport.

Implements spec 004 §4.3.3 and §5.1.1: the server runs all physics (``CarWorld``), gives each
connecting client a car, applies each client's input events (guaranteed, reliable-ordered channel)
as they arrive, and 20 times a second broadcasts a snapshot of every car (non-guaranteed,
unreliable channel). It logs every car's true position at 50 Hz (§5.3.2) and applies the
simulated receive latency of §5.3.3 (Gl. 5.1) when the parameters ask for it.

It is a ``SansIO`` object (DESIGN.md "The sans-I/O contract"), composed around a
``lagless.transport.Server``: the same object runs over ``lagless.io.sim`` and real UDP.

Decisions:
    * Fixed physics step ``1 / tick_rate`` (default 100 Hz, so the 20-Hz snapshots and the
      50-Hz log instants fall on ticks); tick ``n`` is at server time ``start + n / tick_rate``;
      a late ``handle_timer`` runs the missed ticks at once (catch-up, no extra snapshots).
    * A snapshot's time is the server time of the tick whose state it holds.
    * Log rows are at server times ``k / log_rate`` (a grid the client shares), interpolated
      linearly between the two ticks around them (heading on the shorter arc).
    * Car ids are the lowest free id; a client beyond ``MAX_CARS`` cars is disconnected.
    * An input's delay is measured against the time the client stamped on it (its estimate of
      server time at the key change), so it includes the client's clock error; a delay outside
      [0, ``MAX_INPUT_DELAY``] (a stamp from before the client's clock was synchronised) is left
      out of the statistics.
    * A message that does not decode, is not an input event or comes on another channel than
      ``RELIABLE`` is counted in ``dropped_messages`` and ignored; it never raises.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.physics.car import CarState, CarWorld, Wall
from lagless.physics.codec import (
    MAX_CARS,
    CarSnapshot,
    InputEvent,
    Snapshot,
    SnapshotFormat,
    Welcome,
    decode_message,
    encode_message,
)
from lagless.physics.latency import ReceiveDelay
from lagless.physics.params import PhysicsParams
from lagless.physics.recording import PathLog
from lagless.smoothing.state import angle_difference, wrap_angle
from lagless.transport import (
    RELIABLE,
    UNRELIABLE,
    ClientConnected,
    ClientDisconnected,
    MessageReceived,
    Server,
)
from lagless.wire import DecodeError

__all__ = ["MAX_INPUT_DELAY", "CarJoined", "CarLeft", "PhysicsServer", "ServerConfig"]

MAX_INPUT_DELAY = 10.0  # s: input delays beyond this come from unsynchronised stamps


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    """Rates, map and spawn points of a physics server."""

    tick_rate: float = 100.0
    """Physics steps per second, Hz."""
    snapshot_rate: float = 20.0
    """Snapshots per second, Hz (spec 004 §5.1.1: 20)."""
    log_rate: float = 0.0
    """Path-log rows per car per second, Hz; 0 = no log (a game server), 50 for spec 004
    §5.3.2's test runs (the log grows without bound while it runs)."""
    walls: tuple[Wall, ...] = ()
    """Static walls."""
    spawns: tuple[CarState, ...] = ()
    """Start state of car id ``k`` is ``spawns[k]``; beyond them cars start 10 m apart on y."""
    snapshot_format: SnapshotFormat = field(default_factory=SnapshotFormat)
    """Ranges of the snapshot fields."""

    def __post_init__(self) -> None:
        """Validate; raise ``ConfigError`` naming the field."""
        for name in ("tick_rate", "snapshot_rate"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 < value <= 1000.0):
                raise ConfigError(f"{name} must be in (0, 1000] Hz, got {value!r}")
        if not (math.isfinite(self.log_rate) and 0.0 <= self.log_rate <= 1000.0):
            raise ConfigError(f"log_rate must be in [0, 1000] Hz, got {self.log_rate!r}")
        if self.snapshot_rate > self.tick_rate:
            raise ConfigError("snapshot_rate must be <= tick_rate")


@dataclass(frozen=True, slots=True)
class CarJoined:
    """A client connected and drives car ``car_id``."""

    connection_id: int
    car_id: int


@dataclass(frozen=True, slots=True)
class CarLeft:
    """A client disconnected; its car was removed."""

    connection_id: int
    car_id: int


class PhysicsServer:
    """Authoritative car physics with 20-Hz snapshots (spec 004 §5.1), sans-I/O.

    Args:
        transport: The transport server it speaks through (owned from now on).
        params: The parameter file (car properties, simulated latency).
        config: Rates, map and spawns.
        rng: Draws the simulated receive latency (Gl. 5.1).
        start: Server time of tick 0, s.
    """

    def __init__(
        self,
        *,
        transport: Server,
        params: PhysicsParams,
        config: ServerConfig,
        rng: random.Random,
        start: float,
    ) -> None:
        """Create a server with an empty world."""
        self.transport = transport
        self.params = params
        self.config = config
        self.world = CarWorld(params.car, config.walls)
        self.path_log = PathLog()
        """The 50-Hz log of every car's true position (spec 004 §5.3.2)."""
        self._delay = ReceiveDelay(
            params.network_simulated_latency, params.network_simulated_variance, rng
        )
        self._dt = 1.0 / config.tick_rate
        self._start = start
        self._tick = 0
        self._ticks_per_snapshot = config.tick_rate / config.snapshot_rate
        self._next_snapshot = 0.0  # in ticks
        self._log_index = math.ceil(start * config.log_rate - 1e-9) if config.log_rate else 0
        self._cars: dict[int, int] = {}  # connection id -> car id
        self._seq: dict[int, int] = {}  # car id -> last applied input seq
        self._events: deque[CarJoined | CarLeft] = deque()
        self.dropped_messages = 0
        """Messages from clients that were not valid input events (counted, ignored)."""
        self.inputs_applied = 0
        """Input events applied."""
        self.inputs_timed = 0
        """Applied input events whose time stamp was plausible (see ``MAX_INPUT_DELAY``)."""
        self.input_delay_total = 0.0
        """Sum over applied input events of (server time applied - the event's ``t``), s: the
        input lag of a client without prediction (spec 004 §7.1.1 problem 1) before rendering."""
        self.input_delay_max = 0.0
        """Largest such delay, s."""
        self.snapshots_sent = 0
        """Snapshots broadcast."""

    @property
    def cars(self) -> dict[int, int]:
        """Return ``{connection id: car id}`` of the connected clients."""
        return dict(self._cars)

    def _tick_time(self, tick: int) -> float:
        return self._start + tick * self._dt

    # -- sans-I/O interface ---------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram at ``now`` (s); held first when a receive latency is simulated."""
        if self._delay.active:
            self._delay.hold(data, addr, now)
            return
        self.transport.receive_datagram(data, addr, now)
        self._drain(now)

    def handle_timer(self, now: float) -> None:
        """Release held datagrams, run the transport's timers and every physics tick due."""
        for data, addr in self._delay.release(now):
            self.transport.receive_datagram(data, addr, now)
        self.transport.handle_timer(now)
        self._drain(now)
        while self._tick_time(self._tick + 1) <= now + 1e-9:
            self._step()

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return the transport's datagrams."""
        return self.transport.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """Return the earliest of the next tick, a held datagram's release and the transport."""
        due = [self._tick_time(self._tick + 1)]
        for t in (self._delay.next_release(), self.transport.next_timer()):
            if t is not None:
                due.append(t)
        return min(due)

    def next_event(self) -> CarJoined | CarLeft | None:
        """Return the next ``CarJoined`` / ``CarLeft``, or ``None``."""
        return self._events.popleft() if self._events else None

    # -- internals ------------------------------------------------------------------------------

    def _spawn(self, car_id: int) -> CarState:
        spawns = self.config.spawns
        return spawns[car_id] if car_id < len(spawns) else CarState(y=10.0 * car_id)

    def _drain(self, now: float) -> None:
        fmt = self.config.snapshot_format
        event = self.transport.next_event()
        while event is not None:
            match event:
                case ClientConnected(connection_id=cid):
                    used = set(self._cars.values())
                    free = next((k for k in range(MAX_CARS) if k not in used), None)
                    if free is None:
                        self.transport.disconnect(cid)
                    else:
                        self._cars[cid] = free
                        self._seq[free] = 0
                        self.world.add_car(free, self._spawn(free))
                        self.transport.send(
                            cid, RELIABLE, encode_message(Welcome(car_id=free), fmt)
                        )
                        self._events.append(CarJoined(cid, free))
                case ClientDisconnected(connection_id=cid):
                    car_id = self._cars.pop(cid, None)
                    if car_id is not None:
                        self.world.remove_car(car_id)
                        self._seq.pop(car_id, None)
                        self._events.append(CarLeft(cid, car_id))
                case MessageReceived(connection_id=cid, channel=channel, payload=payload):
                    self._on_message(cid, channel, payload, now)
                case _:
                    pass
            event = self.transport.next_event()

    @property
    def input_delay_mean(self) -> float | None:
        """Mean delay (s) from a key change at the client to its application here, or ``None``."""
        return self.input_delay_total / self.inputs_timed if self.inputs_timed else None

    def _on_message(self, cid: int, channel: int, payload: bytes, now: float) -> None:
        car_id = self._cars.get(cid)
        try:
            message = decode_message(payload, self.config.snapshot_format)
        except DecodeError:
            message = None
        if car_id is None or channel != RELIABLE or not isinstance(message, InputEvent):
            self.dropped_messages += 1
            return
        self.world.set_keys(car_id, message.keys)
        self._seq[car_id] = message.seq
        self.inputs_applied += 1
        delay = now - message.t
        if 0.0 <= delay <= MAX_INPUT_DELAY:
            self.inputs_timed += 1
            self.input_delay_total += delay
            self.input_delay_max = max(self.input_delay_max, delay)

    def _step(self) -> None:
        before = self.world.states() if self.config.log_rate else {}
        self.world.step(self._dt)
        self._tick += 1
        now = self._tick_time(self._tick)
        if self.config.log_rate:
            self._log(before, now)
        if self._tick >= self._next_snapshot - 1e-9:
            self._next_snapshot += self._ticks_per_snapshot
            self._broadcast(now)

    def _log(self, before: dict[int, CarState], now: float) -> None:
        rate = self.config.log_rate
        t0 = now - self._dt
        after = self.world.states()
        while (tau := self._log_index / rate) <= now + 1e-9:
            self._log_index += 1
            if tau < t0 - 1e-9:
                continue
            f = min(1.0, max(0.0, (tau - t0) / self._dt))
            for car_id, b in after.items():
                a = before.get(car_id, b)
                self.path_log.record(
                    tau,
                    car_id,
                    a.x + (b.x - a.x) * f,
                    a.y + (b.y - a.y) * f,
                    wrap_angle(a.heading + angle_difference(b.heading, a.heading) * f),
                )

    def _broadcast(self, now: float) -> None:
        cars = tuple(
            CarSnapshot(car_id=cid, state=state, input_seq=self._seq.get(cid, 0))
            for cid, state in self.world.states().items()
        )
        payload = encode_message(Snapshot(t=now, cars=cars), self.config.snapshot_format)
        self.transport.broadcast(UNRELIABLE, payload)
        self.snapshots_sent += 1
