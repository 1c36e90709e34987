"""The physics client: the view of spec 004 §4.3 as a sans-I/O object over the transport.

Implements spec 004 §4.3.3, §5.1.1 and §5.2-§5.3: the client sends one guaranteed input event per
key change (reliable-ordered channel), reconstructs every car from the 20-Hz snapshots through the
Hermite buffer with render delay, dead reckoning and the 8-step correction (``CarView``), can
predict its own car (``PredictedCar``, spec 004 §7.2), records or replays its inputs (§5.3.1),
logs what it shows at 50 Hz at the server's log instants (§5.3.2) and applies the simulated
receive latency of §5.3.3 when the parameters ask for it.

It is a ``SansIO`` object composed around a ``lagless.transport.Client``; the same object runs
over ``lagless.io.sim`` and real UDP.

Decisions:
    * Several views can run side by side on the same snapshots (``add_view``): the lab compares
      the ten configurations of spec 004 §6.0 on one run, and a game can switch the display
      model live. View ``"main"`` comes from the parameter file.
    * Keys set before the server's ``Welcome`` are sent once it arrives; a replay
      (``readUserControls``) starts once the client is welcomed and its clock synchronised (so
      every input event carries a valid server time), and disables ``set_keys``.
    * The 50-Hz log instants are server times ``k / log_rate``; the client samples at the local
      time its synchronised clock maps to each instant (each instant at most once), so server and
      client logs pair row by row (§5.3.2 "at the same moment").
    * A car missing from the newest snapshot so far has left: its views are dropped (an older,
      reordered snapshot drops nothing).
    * The ``k x RTT`` delay uses the transport's smoothed RTT (or its recent minimum, per
      ``ViewConfig.rtt_estimate``), read at every snapshot.
    * ``timing`` sums, over the snapshots applied once the clock is synchronised, the snapshot's
      age on arrival on the synchronised clock (one-way delay plus clock error) and the RTTs the
      views read, in O(1) memory: the lab splits DeviationA into these parts (spec 004 §5.3.5,
      §6.1 "time lag").
    * Malformed server messages are counted in ``dropped_messages`` and ignored.
    * The server's ``Goodbye`` (reliable channel; issue 16 part 3) is kept in ``goodbye``, and
      the transport's end of the connection in ``ended`` (``server_disconnected``,
      ``timed_out``, ``local``): together they say why a game ended.
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from lagless._types import Address
from lagless.errors import ConfigError, LocalProtocolError
from lagless.physics.car import CarState, Keys, Wall
from lagless.physics.codec import (
    Goodbye,
    InputEvent,
    Snapshot,
    SnapshotFormat,
    Welcome,
    decode_message,
    encode_message,
)
from lagless.physics.latency import ReceiveDelay
from lagless.physics.params import PhysicsParams
from lagless.physics.recording import InputPlayer, InputRecorder, InputRecording, PathLog
from lagless.physics.view import CarView, PredictedCar, ViewConfig
from lagless.smoothing.state import DisplayState
from lagless.transport import RELIABLE, UNRELIABLE, Client, Disconnected, MessageReceived
from lagless.wire import DecodeError

__all__ = ["ClientConfig", "PhysicsClient", "SnapshotTiming", "Welcomed"]

MAIN_VIEW = "main"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConfig:
    """What a physics client must share with its server, and its own options."""

    tick_rate: float = 100.0
    """The server's physics rate, Hz (prediction steps at ``1 / tick_rate``)."""
    walls: tuple[Wall, ...] = ()
    """The server's walls (for prediction)."""
    snapshot_format: SnapshotFormat = field(default_factory=SnapshotFormat)
    """The server's snapshot ranges."""
    log_rate: float = 0.0
    """Path-log rows per car per second, Hz; 0 = no log (a game), 50 for spec 004 §5.3.2's
    test runs (the log grows without bound while it runs)."""
    predict: bool = False
    """Predict the own car (spec 004 §7.2)."""

    def __post_init__(self) -> None:
        """Validate; raise ``ConfigError`` naming the field."""
        if not (math.isfinite(self.tick_rate) and 0.0 < self.tick_rate <= 1000.0):
            raise ConfigError(f"tick_rate must be in (0, 1000] Hz, got {self.tick_rate!r}")
        if not (math.isfinite(self.log_rate) and 0.0 <= self.log_rate <= 1000.0):
            raise ConfigError(f"log_rate must be in [0, 1000] Hz, got {self.log_rate!r}")


@dataclass(slots=True)
class SnapshotTiming:
    """Running sums over the snapshots a client applied with a synchronised clock (SI units)."""

    count: int = 0
    """Snapshots counted."""
    age_total: float = 0.0
    """Sum of ``server_time(arrival) - t``, s: the one-way delay plus the clock error."""
    rtt_total: float = 0.0
    """Sum of the smoothed RTT read at each snapshot, s."""
    rtt_min_total: float = 0.0
    """Sum of the smallest recent RTT read at each snapshot, s."""

    def add(self, age: float, rtt: float, rtt_min: float) -> None:
        """Count one snapshot."""
        self.count += 1
        self.age_total += age
        self.rtt_total += rtt
        self.rtt_min_total += rtt_min

    def mean(self, total: float) -> float | None:
        """Return ``total / count`` (one of the sums), or ``None`` before the first snapshot."""
        return total / self.count if self.count else None


@dataclass(frozen=True, slots=True)
class Welcomed:
    """The server assigned this client car ``car_id``."""

    car_id: int


class PhysicsClient:
    """Sends inputs and shows the cars of a ``PhysicsServer`` (spec 004 §5), sans-I/O.

    Args:
        transport: The transport client (owned from now on; connect it through ``transport``).
        params: The parameter file (view settings, simulated latency, car properties).
        config: Shared settings and options.
        rng: Draws the simulated receive latency (Gl. 5.1).
        replay: Inputs to replay (``readUserControls``), or ``None`` for manual control.
    """

    def __init__(
        self,
        *,
        transport: Client,
        params: PhysicsParams,
        config: ClientConfig,
        rng: random.Random,
        replay: InputRecording | None = None,
    ) -> None:
        """Create a client that has not been welcomed yet."""
        self.transport = transport
        self.params = params
        self.config = config
        self._delay = ReceiveDelay(
            params.network_simulated_latency, params.network_simulated_variance, rng
        )
        self._view_configs: dict[str, ViewConfig] = {MAIN_VIEW: ViewConfig.from_params(params)}
        self._views: dict[str, dict[int, CarView]] = {MAIN_VIEW: {}}
        self.path_logs: dict[str, PathLog] = {MAIN_VIEW: PathLog()}
        """The 50-Hz log of each view (spec 004 §5.3.2), plus ``"predicted"`` when predicting."""
        self._replay = replay
        self._player: InputPlayer | None = None
        self._recorder: InputRecorder | None = None
        self._keys = Keys.NONE
        self._sent_keys = Keys.NONE
        self._seq = 0
        self.car_id: int | None = None
        """The own car, once welcomed."""
        self._predictor: PredictedCar | None = None
        self._events: deque[Welcomed] = deque()
        self._log_index: int | None = None
        self._now = -math.inf
        self.dropped_messages = 0
        """Server messages that did not decode or made no sense (counted, ignored)."""
        self.snapshots = 0
        """Snapshots applied."""
        self._newest_snapshot = -math.inf  # server time of the newest snapshot, s
        self.timing = SnapshotTiming()
        """Snapshot age and RTT sums (diagnostics of the time lag)."""
        self.goodbye: str | None = None
        """The reason the server gave in its ``Goodbye`` (``server shutting down``), if any."""
        self.ended: str | None = None
        """How the transport connection ended (a ``ClientDisconnectReason`` value), if it did."""

    # -- application verbs ----------------------------------------------------------------------

    def add_view(self, name: str, config: ViewConfig) -> None:
        """Show the cars a second way too (its own Hermite buffers, the same snapshots).

        Raises:
            LocalProtocolError: The name is taken.
        """
        if name in self._view_configs or name == "predicted":
            raise LocalProtocolError(f"view {name!r} already exists")
        self._view_configs[name] = config
        self._views[name] = {}
        self.path_logs[name] = PathLog()

    @property
    def views(self) -> list[str]:
        """Return the view names."""
        return list(self._view_configs)

    def set_keys(self, keys: Keys, now: float) -> None:
        """Hold ``keys`` from ``now`` (s) on; one input event is sent per change.

        Raises:
            LocalProtocolError: Inputs are being replayed (manual control is disabled).
        """
        if self._replay is not None:
            raise LocalProtocolError("manual control is disabled while inputs are replayed")
        self._keys = Keys(keys)
        self._flush_keys(now)

    def recorded(self) -> InputRecording:
        """Return the key changes sent so far (``writeUserControls``), times from the Welcome."""
        if self._recorder is None:
            return InputRecording(events=())
        return self._recorder.recording()

    def display(self, now: float, view: str = MAIN_VIEW) -> dict[int, DisplayState]:
        """Return where to draw every car at local time ``now`` (s) in one view.

        Raises:
            LocalProtocolError: Unknown view.
        """
        if view not in self._views:
            raise LocalProtocolError(f"unknown view {view!r}")
        out: dict[int, DisplayState] = {}
        for car_id, car_view in self._views[view].items():
            shown = car_view.display(now)
            if shown is not None:
                out[car_id] = shown
        return out

    def predicted(self, now: float) -> CarState | None:
        """Return the predicted own car at local time ``now`` (s), or ``None``."""
        if self._predictor is None:
            return None
        return self._predictor.state(self.transport.server_time(now))

    @property
    def corrections(self) -> Sequence[float]:
        """Return the size (m) of every prediction correction so far."""
        return self._predictor.corrections if self._predictor is not None else ()

    # -- sans-I/O interface ---------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram at ``now`` (s); held first when a receive latency is simulated."""
        self._now = max(self._now, now)
        if self._delay.active:
            self._delay.hold(data, addr, now)
            return
        self.transport.receive_datagram(data, addr, now)
        self._drain(now)

    def handle_timer(self, now: float) -> None:
        """Release held datagrams, run the transport, the replay and the path log."""
        self._now = max(self._now, now)
        for data, addr in self._delay.release(now):
            self.transport.receive_datagram(data, addr, now)
        self.transport.handle_timer(now)
        self._drain(now)
        if self._player is not None:
            for keys in self._player.due(now):
                self._keys = keys
                self._flush_keys(now)
        self._log(now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return the transport's datagrams."""
        return self.transport.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """Return the earliest of the transport's timer, a held datagram, a replayed change and
        the next log instant."""
        due = [self.transport.next_timer(), self._delay.next_release()]
        if self._player is not None:
            due.append(self._player.next_time())
        due.append(self._next_log())
        times = [t for t in due if t is not None]
        return min(times) if times else None

    def next_event(self) -> Welcomed | None:
        """Return the next ``Welcomed``, or ``None``."""
        return self._events.popleft() if self._events else None

    # -- internals ------------------------------------------------------------------------------

    def _flush_keys(self, now: float) -> None:
        if self.car_id is None or self._keys == self._sent_keys:
            return
        self._seq = (self._seq + 1) & 0xFFFF
        server_now = self.transport.server_time(now)
        event = InputEvent(seq=self._seq, keys=self._keys, t=server_now)
        self.transport.send(RELIABLE, encode_message(event, self.config.snapshot_format))
        self._sent_keys = self._keys
        if self._recorder is not None:
            self._recorder.record(now, self._keys)
        if self._predictor is not None:
            self._predictor.press(self._seq, self._keys, server_now)

    def _drain(self, now: float) -> None:
        event = self.transport.next_event()
        while event is not None:
            if isinstance(event, MessageReceived):
                self._on_message(event.channel, event.payload, now)
            elif isinstance(event, Disconnected):
                self.ended = event.reason.value
            event = self.transport.next_event()
        replay = self._replay
        waiting = replay is not None and self._player is None and self.car_id is not None
        if replay is not None and waiting and self.transport.synchronized:
            self._player = InputPlayer(replay, now)

    def _on_message(self, channel: int, payload: bytes, now: float) -> None:
        try:
            message = decode_message(payload, self.config.snapshot_format)
        except DecodeError:
            self.dropped_messages += 1
            return
        if isinstance(message, Welcome) and channel == RELIABLE and self.car_id is None:
            self._welcome(message.car_id, now)
        elif isinstance(message, Snapshot) and channel == UNRELIABLE:
            self._snapshot(message, now)
        elif isinstance(message, Goodbye) and channel == RELIABLE:
            self.goodbye = message.reason
        else:
            self.dropped_messages += 1

    def _welcome(self, car_id: int, now: float) -> None:
        self.car_id = car_id
        if self.config.predict:
            self._predictor = PredictedCar(
                car_id,
                self.params.car,
                self.config.walls,
                dt=1.0 / self.config.tick_rate,
                correction_time=self.params.dead_reckoning_interpolation_time,
            )
            self.path_logs["predicted"] = PathLog()
        if self._replay is None and self.params.write_user_controls:
            self._recorder = InputRecorder(now)
        self._events.append(Welcomed(car_id))
        self._flush_keys(now)

    def _snapshot(self, snapshot: Snapshot, now: float) -> None:
        server_now = self.transport.server_time(now)
        stats = self.transport.connection_statistics()
        if self.transport.synchronized:
            self.timing.add(server_now - snapshot.t, stats.rtt, stats.rtt_min)
        newest = snapshot.t > self._newest_snapshot
        self._newest_snapshot = max(self._newest_snapshot, snapshot.t)
        present = {car.car_id for car in snapshot.cars}
        for name, views in self._views.items():
            config = self._view_configs[name]
            for gone in views.keys() - present if newest else ():
                del views[gone]
            for car in snapshot.cars:
                view = views.get(car.car_id)
                if view is None:
                    view = views[car.car_id] = CarView(car.car_id, config)
                view.observe_rtt(stats.rtt, stats.rtt_min)
                view.apply(snapshot.t, car, now, server_now)
        if self._predictor is not None:
            for car in snapshot.cars:
                if car.car_id == self.car_id:
                    self._predictor.reconcile(snapshot.t, car, server_now)
        self.snapshots += 1

    def _next_log(self) -> float | None:
        rate = self.config.log_rate
        if not rate or not self.transport.synchronized or self.car_id is None:
            return None
        if self._log_index is None:
            offset = self.transport.server_time(self._now) - self._now
            self._log_index = math.floor((self._now + offset) * rate) + 1
        offset = self.transport.server_time(self._now) - self._now
        return self._log_index / rate - offset

    def _log(self, now: float) -> None:
        due = self._next_log()
        while due is not None and self._log_index is not None and due <= now + 1e-9:
            tau = self._log_index / self.config.log_rate
            self._log_index += 1
            for name in self._views:
                for car_id, shown in self.display(now, name).items():
                    self.path_logs[name].record(tau, car_id, shown.x, shown.y, shown.heading)
            predicted = self.predicted(now)
            if predicted is not None and self.car_id is not None:
                self.path_logs["predicted"].record(
                    tau, self.car_id, predicted.x, predicted.y, predicted.heading
                )
            due = self._next_log()
