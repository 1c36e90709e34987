"""Experiment ``physics/car``: spec 004 E1-E6 on the pymunk car through the real lagless stack.

Implements spec 004 §8.2 (E1-E6) and the §7.2 extensions (loss sweeps, collision scenarios,
client-side prediction of the local car) for issue 14: a ``PhysicsServer`` and ``PhysicsClient``
(``lagless.physics``) as sans-I/O objects over ``lagless.transport`` on the simulator
(``lagless.io.SimEndpoint``), with spec 004's receive-side latency model (Gl. 5.1: every datagram
held ``max(0, L + (random() - 0.5)·V)`` on receipt, at both ends) inside the objects. A bot's
sample drive (``lagless.physics.drive_course``) is recorded once (series ``input-recording``,
CSV) and replayed by the
client, which sends one guaranteed input event per key change; the server runs the physics,
logs the true path at 50 Hz and sends 20-Hz snapshots; the client shows its car in each of the
ten configurations of spec 004 §6.0 (rows ``config``: ``snap``, ``delay100`` … ``dr-a+rtt0.3``,
the names of ``realtime/kinematic-car``) side by side on the same snapshots and logs each at the
server's 50-Hz instants. DeviationA (Gl. 5.2) and DeviationB (Gl. 5.4-5.6) pair the logs row by
row.

Decisions (spec 004 §8.2 "record your choice"):
    * Extrapolation time 1 s (the thesis's example), correction time 100 ms, physics 100 Hz, the
      ``drive_course`` bot (16-26 m/s legs, about 19.5 m/s on average as spec 004 §6.1
      infers from "just under 4 m" at 200 ms) with the seed stream ``physics.drive``.
    * ``k x RTT`` uses the transport's smoothed RTT as the client measures it (both receive
      delays, acks and pacing included), as the thesis used its measured RTT.
    * The server's clock runs ``SERVER_CLOCK_OFFSET`` ahead of the clients', so render times go
      through spec 004's clock sync (``lagless.transport``) as on a real network.
    * Metrics start ``warmup`` seconds after the start (connection, clock sync); rows are paired
      on the server's log instants.
    * ``lag_ms`` is the time shift (20-ms steps, ±1 s) that best aligns the shown path with the
      true one: positive = shown behind (delay), negative = ahead (prediction).
    * Loss sweeps (spec 004 tested none) use the simulator's independent loss on both links, on
      top of the L80 receive latency.
    * Collision scenarios: ``wall`` (the car drives into a wall at about 20 m/s and bounces) and
      ``cars`` (a second client's car and the first drive head-on into each other); errors
      within ±1 s of the first impact are reported separately (``impact_error_m_max``).
    * Prediction (§7.2): the driving client also predicts its own car (``ClientConfig.predict``);
      row ``predicted`` compares it with the server's path like the views, plus the corrections.
    * ``l80j40_dr_a_rtt0_15_delay_floor_m`` = mean speed x 0.15 x measured RTT: the DeviationA
      the render delay alone costs (a car drawn that long behind), whatever the prediction.
    * ``input_to_display_ms`` of the own car (spec 004 §7.1.1 problem 1): the server's mean
      input delay (key change to application, ``PhysicsServer.input_delay_mean``) plus the view's
      ``lag_ms``; 0 for ``predicted``, whose keys act on the local physics at once.
    * "As smooth as X" / "not rougher than X" mean DeviationB ≤ X's DeviationB +
      ``SMOOTH_TOLERANCE`` (5 mm): the smooth configurations all measure about a millimetre
      (sampling noise, far below a visible stutter), the hold-and-jump ones tenths of a metre; a
      strict ``≤`` would rank noise.
    * Table ``checks`` states each claim of the thesis (spec 004 §6.1, §8.2: E1-E6 including the
      smoothness claims of E2 and E3), issue 14's goals and the extensions' claims with whether
      it holds in this run; failures are results, not errors. "Stutters visibly" means at least
      one jump or freeze (``count_jumps`` / ``count_freezes``), as §8.2 suggests.
    * Every session's transport runs without congestion throttling (``unthrottled_connection``):
      spec 004's runs send 20-Hz snapshots with no send-rate control, and the stock BAD mode
      (15 packets/s, entered after a start-up packet goes unacknowledged) delayed snapshots.
    * ``k x RTT`` reads the smoothed RTT (``ViewConfig.rtt_estimate``); table ``rtt_estimate``
      reruns the RTT-scaled rows on the recent minimum RTT as a measured alternative.
    * Time-lag diagnostics per profile: ``rtt_ms`` / ``rtt_min_ms`` are the means of the RTTs
      the views read, ``snapshot_age_ms`` the mean age of a snapshot on arrival on the client's
      synchronised clock, ``clock_error_ms`` the mean error of that clock (sampled every 0.1 s
      against the true server clock, which only the lab knows), ``render_delay_ms`` each row's
      mean render delay.

Why the numbers differ from the thesis (measured on the 60-s run, seed 0; spec 004 §6.1):
    * The stack follows the spec's latency model: snapshots arrive 78.9 ms old at L80 (the model's
      80 ms), the client clock errs by -0.9 ms on average, the smoothed RTT is 158.5 ms (2 x 80).
    * ``snap`` shows the newest snapshot, so its lag is the age plus half the 50-ms interval:
      103.9 ms predicted, 104.0 ms measured (DeviationA / speed), 2.00 m at 19.3 m/s, the spec's
      own estimate (about 2.1 m). "> 2.5 m" needs 130 ms at this speed, while delay200 at
      "just under 4 m" fixes the speed at about 19-20 m/s.
    * The combination draws the car ``0.15 x RTT`` = 23.8 ms behind: 0.46 m at 19.3 m/s, less
      than the thesis's bound (< 1/5 of delay200, 0.77 m). Issue 14's 0.4 m needs an RTT of at
      most 139 ms, below the 160-ms round trip of the latency model itself; the recent minimum RTT
      (132 ms) gets there (0.38 m), but that is not the "current RTT" of the thesis.
    * The thesis's own observations all point to 20-50 ms more snapshot age than its stated
      model: Point-to-Point above 2.5 m (+26 ms), 100 ms at L40 and 150 ms at L80 visibly
      stuttering (with the model's largest age of 100 and 150 ms they are exactly on the edge,
      and smooth here), and 0.75·RTT smooth at L80 (needs an RTT of at least 200 ms, not 160),
      while 200 ms stayed smooth (at most +50 ms). The spec does not say where that time came
      from, so the lab does not add it; those checks fail here for that reason, and the 0.4 m
      goal, which needs less delay rather than more, is out of reach of the same model.
    * Pure DR is as smooth as delay200 here (E4, E6 fail): its mean error is 1.3 cm at L80,
      because the car's lateral acceleration is capped at 9 m/s² and steering ramps in 0.125 s,
      so over the 105-ms horizon a prediction errs by centimetres; the thesis's paths show visible
      DR errors at every change of direction from a car and inputs the spec does not describe.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import msgspec
import numpy as np

from lagless._types import Address, SansIO
from lagless.errors import ConfigError
from lagless.io import SimEndpoint
from lagless.lab.realtime.car import metric_name
from lagless.lab.realtime.configs import CAR_CONFIGS
from lagless.lab.realtime.metrics import (
    count_freezes,
    count_jumps,
    deviation_a,
    deviation_b,
    position_error,
    step_lengths,
)
from lagless.lab.registry import ExperimentSpec, register
from lagless.lab.result import JSONScalar, JSONValue, Result
from lagless.lab.runner import ExperimentContext
from lagless.netsim import LinkConfig, Network, Scheduler
from lagless.physics import (
    CarState,
    ClientConfig,
    InputRecording,
    Keys,
    PathLog,
    PhysicsClient,
    PhysicsParams,
    PhysicsServer,
    ServerConfig,
    SnapshotTiming,
    ViewConfig,
    Wall,
)
from lagless.physics.driver import drive_course
from lagless.transport import (
    Client,
    ConnectionConfig,
    NetcodeClientConfig,
    NetcodeServerConfig,
    Server,
)

__all__ = ["PROFILES", "SPEC", "Driver", "SessionResult", "physics_car_experiment", "run_session"]

PROFILES: Final = {"l40j20": (0.04, 0.02), "l80j40": (0.08, 0.04)}  # (latency, variance) s
SERVER_CLOCK_OFFSET: Final = 1000.0  # s: the server's clock runs this far ahead
CAR_LENGTH: Final = 3.0  # m
LOG_RATE: Final = 50.0  # Hz
_PORT: Final = 9000
Row = dict[str, JSONScalar]
_PROTOCOL: Final = 0x5004
SMOOTH_TOLERANCE: Final = 0.005  # m: DeviationB differences below this are sampling noise
CLOCK_SAMPLE_INTERVAL: Final = 0.1  # s between samples of a client's clock error
SNAPSHOT_INTERVAL: Final = 0.05  # s: the server's 20-Hz snapshots (spec 004 §5.1.1)
_MAX_LAG_STEPS: Final = 50  # 50 x 20 ms = ±1 s
_IMPACT_WINDOW: Final = 1.0  # s either side of the first impact
_REFERENCE: Final = {
    "l80j40_snap_deviation_a_m": 2.5,
    "l40j20_snap_deviation_a_m": 1.25,
    "l40j20_delay200_deviation_a_m": 4.0,
    "l80j40_delay200_deviation_a_m": 4.0,
    "l80j40_dr_a_rtt0_15_deviation_a_m": 0.8,
    "l80j40_dr_a_rtt0_15_vs_delay200_deviation_a": 0.2,
    "goal_l80j40_dr_a_rtt0_15_deviation_a_m": 0.4,
    "car_length_m": 3.0,
    "snapshot_rate_hz": 20.0,
    "sample_rate_hz": 50.0,
}


def unthrottled_connection() -> ConnectionConfig:
    """The transport settings of every lab session: congestion control never paces a connection
    below its good-mode rate (``bad_send_rate = good_send_rate``), so the 20-Hz snapshots leave
    on time as in spec 004's test runs (§5.1.1, §6.0: no send-rate control, no loss).

    Measured cause: a new connection's first server packet goes unacknowledged (declared lost
    about 0.3 s after it was sent at L80), which puts the loss fraction of the first dozen packets
    above the 10 % threshold, so the server's connection ran in BAD mode at 15 packets/s, below
    the 20-Hz snapshot stream, from 0.8 s to 8.8 s of the quick L80 run: two snapshots shared a
    packet and their mean age rose from 80 ms to 103-111 ms (snap's DeviationA 2.50 m quick,
    2.14 m on the 60-s run, where that stretch weighs less).
    """
    default = ConnectionConfig()
    congestion = dataclasses.replace(
        default.congestion, bad_send_rate=default.congestion.good_send_rate
    )
    return dataclasses.replace(default, congestion=congestion)


class _ShiftedClock:
    """Runs a sans-I/O object on a clock ``offset`` seconds ahead of the driver's."""

    def __init__(self, obj: SansIO, offset: float) -> None:
        self.obj = obj
        self._offset = offset

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        self.obj.receive_datagram(data, addr, now + self._offset)

    def handle_timer(self, now: float) -> None:
        self.obj.handle_timer(now + self._offset)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        return self.obj.datagrams_to_send(now + self._offset)

    def next_timer(self) -> float | None:
        due = self.obj.next_timer()
        return None if due is None else due - self._offset

    def next_event(self) -> object | None:
        return self.obj.next_event()


@dataclass(frozen=True, slots=True, kw_only=True)
class Driver:
    """One client of a session: what it replays, and whether it predicts its own car."""

    recording: InputRecording
    """The key changes it replays from its Welcome."""
    predict: bool = False
    """Predict the own car (spec 004 §7.2)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionResult:
    """The logs of one simulated session."""

    server: PathLog
    """The server's 50-Hz log of every car (server time)."""
    clients: tuple[dict[str, PathLog], ...]
    """Per client, the 50-Hz log of each view (and ``predicted``)."""
    corrections: tuple[tuple[float, ...], ...]
    """Per client, the prediction corrections (m)."""
    rtt: tuple[float, ...]
    """Per client, the smoothed RTT at the end, s."""
    start: float
    """Server time of the start, s."""
    payload_bytes: int
    """UDP payload bytes the server host sent."""
    input_delay: float | None
    """Mean time from a key change at a client to its application on the server, s."""
    timing: tuple[SnapshotTiming, ...]
    """Per client, the snapshot ages and RTTs its views read."""
    clock_error: tuple[tuple[tuple[float, float], ...], ...]
    """Per client, ``(true server time, estimate - truth)`` every ``CLOCK_SAMPLE_INTERVAL``, s."""


def run_session(
    *,
    params: PhysicsParams,
    drivers: Sequence[Driver],
    views: Mapping[str, ViewConfig],
    duration: float,
    seed: int,
    link: LinkConfig,
    server_config: ServerConfig,
) -> SessionResult:
    """Run a server and clients over the simulator for ``duration`` seconds.

    Args:
        params: The parameter file (receive latency, view ``main``, car).
        drivers: One entry per client; client ``k`` gets car ``k``.
        views: Extra views every client runs (name → settings).
        duration: Simulated seconds.
        seed: Root seed of the network and the latency draws.
        link: Impairments of every link (loss sweeps).
        server_config: Rates, walls and spawns.

    Returns:
        The logs.
    """
    scheduler = Scheduler(start=0.0)
    network = Network(scheduler, seed=seed, default_link=link)
    network.add_host("server")
    rng = random.Random(seed)
    connection = unthrottled_connection()
    transport = Server(
        config=NetcodeServerConfig(
            protocol_id=_PROTOCOL, public_address=("server", _PORT), insecure=True
        ),
        connection=connection,
        random_bytes=random.Random(rng.random()).randbytes,
    )
    start = SERVER_CLOCK_OFFSET
    server = PhysicsServer(
        transport=transport,
        params=params,
        config=server_config,
        rng=random.Random(rng.random()),
        start=start,
    )
    SimEndpoint(_ShiftedClock(server, SERVER_CLOCK_OFFSET), network.host("server"), _PORT)
    clients: list[PhysicsClient] = []
    for k, driver in enumerate(drivers):
        host = network.add_host(f"client{k}")
        client = PhysicsClient(
            transport=Client(config=NetcodeClientConfig(insecure=True), connection=connection),
            params=params,
            config=ClientConfig(
                walls=server_config.walls, predict=driver.predict, log_rate=LOG_RATE
            ),
            rng=random.Random(rng.random()),
            replay=driver.recording,
        )
        for name, view in views.items():
            client.add_view(name, view)
        endpoint = SimEndpoint(client, host)
        client.transport.connect_insecure(
            server_addresses=[("server", _PORT)],
            protocol_id=_PROTOCOL,
            client_id=k + 1,
            now=scheduler.now,
        )
        endpoint.flush()
        clients.append(client)
        scheduler.run(until=scheduler.now + 0.3)  # one at a time: client k gets car k
    clock_error: list[list[tuple[float, float]]] = [[] for _ in clients]
    while scheduler.now < duration:  # the lab alone knows the true server clock
        scheduler.run(until=min(duration, scheduler.now + CLOCK_SAMPLE_INTERVAL))
        truth = scheduler.now + SERVER_CLOCK_OFFSET
        for client, errors in zip(clients, clock_error, strict=True):
            if client.transport.synchronized:
                errors.append((truth, client.transport.server_time(scheduler.now) - truth))
    return SessionResult(
        server=server.path_log,
        clients=tuple(c.path_logs for c in clients),
        corrections=tuple(tuple(c.corrections) for c in clients),
        rtt=tuple(c.transport.connection_statistics().rtt for c in clients),
        start=start,
        payload_bytes=network.stats("server").payload_bytes_sent,
        input_delay=server.input_delay_mean,
        timing=tuple(c.timing for c in clients),
        clock_error=tuple(tuple(e) for e in clock_error),
    )


def _paired(
    server: PathLog, shown: PathLog, car_id: int, since: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return times and (true, shown) x/y paired on the log instants ``≥ since``."""
    truth = {round(s.t * LOG_RATE): s for s in server.for_car(car_id) if s.t >= since}
    rows = [(truth[k], s) for s in shown.for_car(car_id) if (k := round(s.t * LOG_RATE)) in truth]
    t = np.array([a.t for a, _ in rows])
    return (
        t,
        np.array([a.x for a, _ in rows]),
        np.array([a.y for a, _ in rows]),
        np.array([b.x for _, b in rows]),
        np.array([b.y for _, b in rows]),
    )


def _lag(tx: np.ndarray, ty: np.ndarray, sx: np.ndarray, sy: np.ndarray) -> float:
    """Best time shift (s) of the shown path behind the true one, in 20-ms steps within ±1 s."""
    n = tx.size
    best, best_shift = math.inf, 0
    for shift in range(-_MAX_LAG_STEPS, _MAX_LAG_STEPS + 1):
        lo, hi = max(0, shift), min(n, n + shift)
        if hi - lo < n // 2:
            continue
        err = float(
            np.mean(
                np.hypot(
                    sx[lo:hi] - tx[lo - shift : hi - shift], sy[lo:hi] - ty[lo - shift : hi - shift]
                )
            )
        )
        if err < best:
            best, best_shift = err, shift
    return best_shift / LOG_RATE


def _metrics(
    server: PathLog, shown: PathLog, car_id: int, since: float, impact: float | None = None
) -> dict[str, JSONScalar]:
    t, tx, ty, sx, sy = _paired(server, shown, car_id, since)
    if t.size < 10:
        raise ConfigError("too few paired samples: lengthen duration or shorten warmup")
    error = position_error(tx, ty, sx, sy)
    floor = 0.05 * CAR_LENGTH
    row: dict[str, JSONScalar] = {
        "samples": int(t.size),
        "deviation_a_m": round(deviation_a(error), 6),
        "deviation_b": round(deviation_b(tx, ty, sx, sy), 6),
        "error_m_max": round(float(np.max(error)), 6),
        "jumps": count_jumps(step_lengths(sx, sy), floor=floor),
        "freezes": count_freezes(step_lengths(sx, sy), floor=floor),
        "lag_ms": round(_lag(tx, ty, sx, sy) * 1000.0, 3),
        "truth_speed_mps_avg": round(float(np.mean(step_lengths(tx, ty))) * LOG_RATE, 6),
    }
    if impact is not None:
        near = np.abs(t - impact) <= _IMPACT_WINDOW
        row["impact_error_m_max"] = round(float(np.max(error[near])), 6) if near.any() else None
    return row


def _views(extrapolation: float, correction: float) -> dict[str, ViewConfig]:
    return {
        spec.name: ViewConfig(
            render_delay=spec.render_delay,
            rtt_factor=spec.rtt_factor,
            extrapolation_time=extrapolation if spec.dr_order else 0.0,
            correction_time=correction,
            use_acceleration=spec.dr_order == 2,
        )
        for spec in CAR_CONFIGS
    }


def _first_impact(server: PathLog, car_id: int, since: float) -> float | None:
    """Server time of the first sudden velocity change (> 15 m/s² over 20 ms) of a car."""
    rows = [s for s in server.for_car(car_id) if s.t >= since]
    for a, b, c in zip(rows, rows[1:], rows[2:], strict=False):
        ax = (c.x - 2.0 * b.x + a.x) * LOG_RATE * LOG_RATE
        ay = (c.y - 2.0 * b.y + a.y) * LOG_RATE * LOG_RATE
        if math.hypot(ax, ay) > 15.0 * 2.0:
            return b.t
    return None


def _float(cell: JSONScalar) -> float | None:
    """A table cell as a metric value (``None`` unless it is a number)."""
    return float(cell) if isinstance(cell, int | float) and not isinstance(cell, bool) else None


def _number(params: Mapping[str, JSONValue], key: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ConfigError(f"physics/car parameter {key} must be a number >= 0, got {value!r}")
    return float(value)


def _checks(rows: list[dict[str, JSONScalar]]) -> list[dict[str, JSONScalar]]:
    def val(profile: str, config: str, column: str) -> float:
        for row in rows:
            if row["profile"] == profile and row["config"] == config:
                cell = row[column]
                return float(cell) if isinstance(cell, int | float) else math.nan
        return math.nan

    out: list[dict[str, JSONScalar]] = []

    def check(exp: str, profile: str, claim: str, ok: bool) -> None:
        out.append({"experiment": exp, "profile": profile, "claim": claim, "holds": bool(ok)})

    names = [c.name for c in CAR_CONFIGS]
    a = {(p, c): val(p, c, "deviation_a_m") for p in PROFILES for c in names}
    b = {(p, c): val(p, c, "deviation_b") for p in PROFILES for c in names}
    check("E1", "l80j40", "snap DeviationA > 2.5 m at L80", a[("l80j40", "snap")] > 2.5)
    ratio = a[("l40j20", "snap")] / a[("l80j40", "snap")]
    check(
        "E1", "both", "snap DeviationA at L40 is about half of L80 (0.35-0.65)", 0.35 < ratio < 0.65
    )
    for p in PROFILES:
        delays = ("delay100", "delay150", "delay200", "rtt0.5", "rtt0.75")
        smooth = b[(p, "delay200")] + SMOOTH_TOLERANCE
        check(
            "E1",
            p,
            "snap has the largest DeviationB",
            b[(p, "snap")] == max(b[(p, c)] for c in names),
        )
        check(
            "E2",
            p,
            "DeviationA rises with delay 100 < 150 < 200 ms",
            a[(p, "delay100")] < a[(p, "delay150")] < a[(p, "delay200")],
        )
        check(
            "E3",
            p,
            "DeviationA follows the effective delay: 0.5 RTT < 0.75 RTT",
            a[(p, "rtt0.5")] < a[(p, "rtt0.75")],
        )
        check(
            "E4",
            p,
            "pure DR beats every time delay on DeviationA",
            min(a[(p, "dr-v")], a[(p, "dr-a")]) < min(a[(p, d)] for d in delays),
        )
        check(
            "E4",
            p,
            "DR a=const beats v=const on both metrics",
            a[(p, "dr-a")] < a[(p, "dr-v")] and b[(p, "dr-a")] <= b[(p, "dr-v")] + SMOOTH_TOLERANCE,
        )
        check(
            "E4",
            p,
            "neither pure DR reaches the delay200 smoothness",
            min(b[(p, "dr-v")], b[(p, "dr-a")]) > smooth,
        )
        check(
            "E5",
            p,
            "DR a=const + 0.15 RTT: DeviationA < 1/5 of delay200",
            a[(p, "dr-a+rtt0.15")] < 0.2 * a[(p, "delay200")],
        )
        check(
            "E5",
            p,
            "DR a=const + 0.15 RTT is as smooth as delay200",
            b[(p, "dr-a+rtt0.15")] <= smooth,
        )
        check(
            "E5",
            p,
            "0.3 RTT: larger DeviationA, not rougher than 0.15 RTT",
            a[(p, "dr-a+rtt0.3")] > a[(p, "dr-a+rtt0.15")]
            and b[(p, "dr-a+rtt0.3")] <= b[(p, "dr-a+rtt0.15")] + SMOOTH_TOLERANCE,
        )
        smooth_enough = [c for c in names if b[(p, c)] <= smooth]
        best = min(smooth_enough, key=lambda c: a[(p, c)]) if smooth_enough else None
        check(
            "E6",
            p,
            "combined DR a=const + 0.15 RTT is the most accurate of the smooth ones",
            best == "dr-a+rtt0.15",
        )
        check(
            "E6",
            p,
            "snap is the roughest configuration",
            b[(p, "snap")] == max(b[(p, c)] for c in names),
        )
    steps = {
        (p, c): val(p, c, "jumps") + val(p, c, "freezes")
        for p in PROFILES
        for c in ("delay100", "delay150", "delay200")
    }
    for p in PROFILES:
        check("E2", p, "delay200 moves smoothly: no jump, no freeze", steps[(p, "delay200")] == 0)
    check(
        "E2",
        "l80j40",
        "delay100 at L80 is almost as rough as snap (DeviationB >= half of snap's)",
        b[("l80j40", "delay100")] >= 0.5 * b[("l80j40", "snap")],
    )
    check(
        "E2",
        "l40j20",
        "delay150 at L40 is as smooth as delay200",
        b[("l40j20", "delay150")] <= b[("l40j20", "delay200")] + SMOOTH_TOLERANCE,
    )
    for p, config in (("l40j20", "delay100"), ("l80j40", "delay150")):
        check("E2", p, f"{config} stutters visibly (jumps or freezes)", steps[(p, config)] > 0)
    check(
        "E3",
        "l80j40",
        "0.75 RTT at L80 is as smooth as delay200",
        b[("l80j40", "rtt0.75")] <= b[("l80j40", "delay200")] + SMOOTH_TOLERANCE,
    )
    goal = a[("l80j40", "dr-a+rtt0.15")]
    check("goal", "l80j40", "DR(a)+0.15 RTT DeviationA <= 0.4 m", goal <= 0.4)
    check(
        "goal",
        "l80j40",
        "DR(a)+0.15 RTT DeviationB no worse than delay200",
        b[("l80j40", "dr-a+rtt0.15")] <= b[("l80j40", "delay200")] + SMOOTH_TOLERANCE,
    )
    return out


_PLOTTED: Final = ("snap", "delay200", "dr-a", "dr-a+rtt0.15")
_PLOT_SECONDS: Final = 6.0  # s of the L80 drive in the error plot


def _error_plot(ctx: ExperimentContext, result: SessionResult, since: float) -> None:
    """Plot the L80 distance error over time of a few configurations (the first 6 s)."""
    truth = {round(s.t * LOG_RATE): s for s in result.server.for_car(0) if s.t >= since}
    shown = {
        name: {round(s.t * LOG_RATE): s for s in result.clients[0][name].for_car(0)}
        for name in _PLOTTED
    }
    end = since + _PLOT_SECONDS
    keys = sorted(k for k in truth if truth[k].t <= end and all(k in v for v in shown.values()))
    ctx.line_plot(
        "error-l80j40",
        [truth[k].t - result.start for k in keys],
        {
            name: [
                math.hypot(shown[name][k].x - truth[k].x, shown[name][k].y - truth[k].y)
                for k in keys
            ]
            for name in _PLOTTED
        },
        xlabel="time (s)",
        ylabel="distance shown - true (m)",
        title="L80/J40: error of the shown car over time",
    )


def _extension_checks(loss_rows: list[Row], collision_rows: list[Row]) -> list[Row]:
    """The §7.2 extensions' claims: the combination under loss and at collisions."""

    def cell(rows: list[Row], column: str, **match: JSONScalar) -> float:
        for row in rows:
            if all(row.get(k) == v for k, v in match.items()):
                value = row.get(column)
                return float(value) if isinstance(value, int | float) else math.nan
        return math.nan

    out: list[Row] = []
    worst = max((float(r["loss"]) for r in loss_rows if isinstance(r["loss"], float)), default=0.0)
    combined = cell(loss_rows, "deviation_b", loss=worst, config="dr-a+rtt0.15")
    delay = cell(loss_rows, "deviation_b", loss=worst, config="delay200")
    out.append(
        {
            "experiment": "loss",
            "profile": f"l80j40 loss {worst:g}",
            "claim": "DR a=const + 0.15 RTT stays smoother than delay200 under loss",
            "holds": combined < delay,
        }
    )
    for scenario in ("wall", "cars"):
        dr = cell(collision_rows, "impact_error_m_max", scenario=scenario, config="dr-a")
        mixed = cell(collision_rows, "impact_error_m_max", scenario=scenario, config="dr-a+rtt0.15")
        out.append(
            {
                "experiment": "collision",
                "profile": scenario,
                "claim": "DR errs by more than 1 m at an impact (spec 004 §7.1.1)",
                "holds": dr > 1.0,
            }
        )
        out.append(
            {
                "experiment": "collision",
                "profile": scenario,
                "claim": "the 0.15 RTT delay shrinks the impact error of pure DR a=const",
                "holds": mixed < dr,
            }
        )
    return out


def _params(base: PhysicsParams, latency: float, variance: float) -> PhysicsParams:
    return msgspec.structs.replace(
        base, network_simulated_latency=latency, network_simulated_variance=variance
    )


def _prediction_row(result: SessionResult, since: float, impact: float | None = None) -> Row:
    row: Row = {"config": "predicted"}
    row |= _metrics(result.server, result.clients[0]["predicted"], 0, since, impact)
    corrections = result.corrections[0]
    row["corrections"] = len(corrections)
    row["correction_m_avg"] = round(float(np.mean(corrections)), 6) if corrections else None
    row["correction_m_max"] = round(float(np.max(corrections)), 6) if corrections else None
    return row


_WALL_SCENARIO: Final = (
    ServerConfig(walls=(Wall(45.0, -40.0, 45.0, 40.0),), log_rate=LOG_RATE),
    ((0.0, Keys.UP), (5.0, Keys.DOWN), (6.5, Keys.UP | Keys.LEFT)),
)
_CARS_SCENARIO: Final = ServerConfig(
    spawns=(CarState(), CarState(x=90.0, heading=math.pi)),
    log_rate=LOG_RATE,
)


_MIN_RTT_SUFFIX: Final = "@min-rtt"
_MIN_RTT_CONFIGS: Final = ("rtt0.75", "dr-a+rtt0.15")  # the RTT-scaled rows the table compares


def _min_rtt_views(views: Mapping[str, ViewConfig]) -> dict[str, ViewConfig]:
    """The RTT-scaled views again, with ``k x RTT`` on the smallest recent RTT (table
    ``rtt_estimate``)."""
    return {
        name + _MIN_RTT_SUFFIX: dataclasses.replace(views[name], rtt_estimate="min")
        for name in _MIN_RTT_CONFIGS
    }


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000.0, 3)


def _timing_columns(result: SessionResult, since: float) -> Row:
    """The driving client's time-lag parts (ms): the mean smoothed and minimum RTT its views
    read and the mean snapshot age on arrival (from clock synchronisation on), and its mean
    clock error (estimate - truth) from ``since`` on."""
    timing = result.timing[0]
    errors = [e for t, e in result.clock_error[0] if t >= since]
    return {
        "rtt_ms": _ms(timing.mean(timing.rtt_total)),
        "rtt_min_ms": _ms(timing.mean(timing.rtt_min_total)),
        "snapshot_age_ms": _ms(timing.mean(timing.age_total)),
        "clock_error_ms": _ms(float(np.mean(errors)) if errors else None),
    }


def _lag_budget(
    ctx: ExperimentContext, by: Mapping[tuple[JSONScalar, JSONScalar], Row], estimates: list[Row]
) -> None:
    """Record the metrics that split L80's DeviationA of ``snap`` and of the combination.

    ``snap`` shows the newest snapshot, so its lag is the snapshot's age on arrival plus half
    the 50-ms interval on average; ``> 2.5 m`` needs ``2.5 m / speed`` of lag. The combination
    draws the car ``0.15 x RTT`` behind, so ``<= 0.4 m`` needs ``RTT <= 0.4 m / (0.15 x speed)``;
    0.75·RTT smooth at L80 (spec 004 §6.1) needs ``0.75 x RTT >=`` the largest snapshot age
    (latency + variance / 2 + one interval).
    """
    snap, combined = by[("l80j40", "snap")], by[("l80j40", "dr-a+rtt0.15")]
    speed, a_snap = _float(snap["truth_speed_mps_avg"]), _float(snap["deviation_a_m"])
    age, rtt = _float(snap["snapshot_age_ms"]), _float(combined["rtt_ms"])
    latency, variance = PROFILES["l80j40"]
    speed = speed if speed is not None and speed > 0.0 else None
    ctx.add_metric(
        "l80j40_snap_lag_from_deviation_ms",
        a_snap / speed * 1000.0 if speed is not None and a_snap is not None else None,
    )
    ctx.add_metric(
        "l80j40_snap_lag_model_ms",
        None if age is None else age + 0.5 * SNAPSHOT_INTERVAL * 1000.0,
    )
    ctx.add_metric("l80j40_snap_needs_lag_ms", 2.5 / speed * 1000.0 if speed is not None else None)
    ctx.add_metric(
        "l80j40_dr_a_rtt0_15_delay_floor_m",
        speed * 0.15 * rtt / 1000.0 if speed is not None and rtt is not None else None,
    )
    ctx.add_metric(
        "l80j40_goal_needs_rtt_ms", 0.4 / (0.15 * speed) * 1000.0 if speed is not None else None
    )
    ctx.add_metric(
        "l80j40_e3_needs_rtt_ms",
        (latency + 0.5 * variance + SNAPSHOT_INTERVAL) / 0.75 * 1000.0,
    )
    for row in estimates:
        if (row["profile"], row["config"], row["rtt_estimate"]) == (
            "l80j40",
            "dr-a+rtt0.15",
            "min",
        ):
            ctx.add_metric(
                "l80j40_dr_a_rtt0_15_min_rtt_deviation_a_m", _float(row["deviation_a_m"])
            )


def physics_car_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """Run E1-E6 at L40/L80, the loss sweep, the collision scenarios and prediction.

    Args:
        ctx: The run's context.
        params: ``duration`` (s of driving), ``warmup`` (s before metrics), ``extrapolation_time``
            (s), ``correction_time`` (s), ``losses`` (fractions for the L80 sweep),
            ``collision_duration`` (s per collision scenario).

    Returns:
        Tables ``runs`` (E1-E6: profile x config, and ``predicted``), ``checks`` (the thesis's
        claims and issue 14's goal), ``loss`` (L80 sweep), ``collisions``; metrics per row;
        series of the L80 paths; bar plots.
    """
    duration = _number(params, "duration")
    warmup = _number(params, "warmup")
    extrapolation = _number(params, "extrapolation_time")
    correction = _number(params, "correction_time")
    collision_duration = _number(params, "collision_duration")
    losses = params.get("losses")
    if not isinstance(losses, list) or not all(
        isinstance(x, int | float) and not isinstance(x, bool) and 0 <= x < 1 for x in losses
    ):
        raise ConfigError(
            f"physics/car parameter losses must be fractions in [0, 1), got {losses!r}"
        )
    base = PhysicsParams(
        dead_reckoning_extrapolation_time=extrapolation,
        dead_reckoning_interpolation_time=correction,
    )
    recording = drive_course(base.car, duration=duration, rng=ctx.random("physics.drive"))
    ctx.add_series(
        "input-recording",
        {
            "t": [t for t, _ in recording.events],
            **{
                name: [float(bool(k & key)) for _, k in recording.events]
                for name, key in (
                    ("up", Keys.UP),
                    ("down", Keys.DOWN),
                    ("left", Keys.LEFT),
                    ("right", Keys.RIGHT),
                )
            },
        },
    )
    views = _views(extrapolation, correction)
    min_rtt_views = _min_rtt_views(views)
    tests = {c.name: c.test for c in CAR_CONFIGS}
    rows: list[Row] = []
    estimate_rows: list[Row] = []
    for profile in ctx.track(list(PROFILES), description="physics/car profiles"):
        latency, variance = PROFILES[profile]
        with ctx.timer(f"run.{profile}"):
            result = run_session(
                params=_params(base, latency, variance),
                drivers=[Driver(recording=recording, predict=True)],
                views=views | min_rtt_views,
                duration=duration,
                seed=ctx.seed_for(f"physics.{profile}"),
                link=LinkConfig(),
                server_config=ServerConfig(log_rate=LOG_RATE),
            )
        since = result.start + warmup
        delay = result.input_delay
        head: Row = {"profile": profile} | _timing_columns(result, since)
        head["input_delay_ms"] = None if delay is None else round(delay * 1000.0, 3)
        for name, view in (views | min_rtt_views).items():
            rtt = head["rtt_min_ms" if view.rtt_estimate == "min" else "rtt_ms"]
            render_delay = (
                None
                if not isinstance(rtt, float)
                else round(view.render_delay * 1000.0 + view.rtt_factor * rtt, 3)
            )
            if name in min_rtt_views:
                entry = {"profile": profile, "config": name.removesuffix(_MIN_RTT_SUFFIX)}
                entry |= {"rtt_estimate": "min", "render_delay_ms": render_delay}
                entry |= _metrics(result.server, result.clients[0][name], 0, since)
                estimate_rows.append(entry)
                continue
            row = head | {"config": name, "test": tests[name], "render_delay_ms": render_delay}
            row |= _metrics(result.server, result.clients[0][name], 0, since)
            lag = row["lag_ms"]
            row["input_to_display_ms"] = (
                None
                if delay is None or not isinstance(lag, float)
                else round(delay * 1000.0 + lag, 3)
            )
            rows.append(row)
        predicted = head | {"test": None} | _prediction_row(result, since)
        predicted["input_to_display_ms"] = 0.0  # the key acts on the local car at once
        rows.append(predicted)
        ctx.add_metric(f"{profile}_server_payload_bytes", result.payload_bytes)
        if profile == "l80j40":
            logs = result.clients[0]
            truth = result.server.for_car(0)
            series: dict[str, list[float]] = {
                "t": [s.t - result.start for s in truth],
                "server_x": [s.x for s in truth],
                "server_y": [s.y for s in truth],
            }
            ctx.add_series("paths-l80j40-server", series)
            for name in ("snap", "delay200", "dr-a+rtt0.15", "predicted"):
                shown = logs[name].for_car(0)
                ctx.add_series(
                    f"paths-l80j40-{name.replace('+', '-').replace('.', '_')}",
                    {
                        "t": [s.t - result.start for s in shown],
                        "x": [s.x for s in shown],
                        "y": [s.y for s in shown],
                    },
                )
            _error_plot(ctx, result, since)
    for row in rows:
        if row["config"] in _MIN_RTT_CONFIGS:
            entry = {k: row[k] for k in ("profile", "config")} | {"rtt_estimate": "smoothed"}
            entry |= {k: v for k, v in row.items() if k in estimate_rows[0]}
            estimate_rows.append(entry)
    estimate_rows.sort(key=lambda r: (str(r["profile"]), str(r["config"]), str(r["rtt_estimate"])))
    ctx.add_table("rtt_estimate", estimate_rows)
    for row in rows:
        for column in ("deviation_a_m", "deviation_b", "jumps", "freezes", "lag_ms"):
            cell = row[column]
            ctx.add_metric(
                metric_name(str(row["profile"]), str(row["config"]), column),
                _float(cell),
            )
    by = {(r["profile"], r["config"]): r for r in rows}
    a_dr = by[("l80j40", "dr-a+rtt0.15")]["deviation_a_m"]
    a_200 = by[("l80j40", "delay200")]["deviation_a_m"]
    if isinstance(a_dr, float) and isinstance(a_200, float) and a_200 > 0:
        ctx.add_metric("l80j40_dr_a_rtt0_15_vs_delay200_deviation_a", a_dr / a_200)
    ctx.add_metric(
        "goal_l80j40_dr_a_rtt0_15_deviation_a_m", a_dr if isinstance(a_dr, float) else None
    )
    _lag_budget(ctx, by, estimate_rows)
    ctx.add_table("runs", rows)
    loss_rows: list[Row] = []
    latency, variance = PROFILES["l80j40"]
    sweep = [float(x) for x in losses if isinstance(x, int | float)]
    for loss in ctx.track(sweep, description="physics/car loss sweep"):
        result = run_session(
            params=_params(base, latency, variance),
            drivers=[Driver(recording=recording, predict=True)],
            views=views,
            duration=duration,
            seed=ctx.seed_for(f"physics.loss.{loss}"),
            link=LinkConfig(loss=loss),
            server_config=ServerConfig(log_rate=LOG_RATE),
        )
        since = result.start + warmup
        for name in [*views, "predicted"]:
            entry: Row = {"profile": "l80j40", "loss": loss, "config": name}
            if name == "predicted":
                entry |= _prediction_row(result, since)
            else:
                entry |= _metrics(result.server, result.clients[0][name], 0, since)
            loss_rows.append(entry)
            if name in ("snap", "delay200", "dr-a+rtt0.15", "predicted"):
                ctx.add_metric(
                    metric_name("loss", f"{loss:g}", name, "deviation_a_m"),
                    _float(entry["deviation_a_m"]),
                )
    ctx.add_table("loss", loss_rows)

    collision_rows: list[Row] = []
    wall_config, wall_events = _WALL_SCENARIO
    scenarios = (
        (
            "wall",
            wall_config,
            [Driver(recording=InputRecording(events=wall_events), predict=True)],
            0,
        ),
        (
            "cars",
            _CARS_SCENARIO,
            [
                Driver(recording=InputRecording(events=((0.3, Keys.UP),)), predict=True),
                Driver(recording=InputRecording(events=((0.0, Keys.UP),))),
            ],
            1,
        ),
    )
    for scenario, config, drivers, observed in scenarios:
        result = run_session(
            params=_params(base, latency, variance),
            drivers=drivers,
            views=views,
            duration=collision_duration,
            seed=ctx.seed_for(f"physics.collision.{scenario}"),
            link=LinkConfig(),
            server_config=config,
        )
        since = result.start + warmup
        impact = _first_impact(result.server, observed, since)
        for name in ("snap", "delay200", "dr-v", "dr-a", "dr-a+rtt0.15", "predicted"):
            row = {"scenario": scenario, "observed_car": observed}
            if name == "predicted":  # the driving client's own car
                row |= {"observed_car": 0} | _prediction_row(result, since, impact)
            else:
                row["config"] = name
                row |= _metrics(result.server, result.clients[0][name], observed, since, impact)
            row["impact_s"] = None if impact is None else round(impact - result.start, 3)
            collision_rows.append(row)
            ctx.add_metric(
                metric_name(scenario, name, "impact_error_m_max"),
                _float(row.get("impact_error_m_max")),
            )
    ctx.add_table("collisions", collision_rows)
    checks = _checks(rows) + _extension_checks(loss_rows, collision_rows)
    ctx.add_table("checks", checks)
    ctx.add_metric("checks_holding", sum(1 for c in checks if c["holds"]))
    ctx.add_metric("checks_total", len(checks))

    labels = [c.name for c in CAR_CONFIGS] + ["predicted"]
    for column, unit in (("deviation_a_m", "DeviationA (m)"), ("deviation_b", "DeviationB (m)")):
        ctx.bar_plot(
            column.replace("_", "-"),
            labels,
            {p: [_float(by[(p, c)][column]) for c in labels] for p in PROFILES},
            xlabel="configuration (spec 004 test-1 ... test-10, and client-side prediction)",
            ylabel=unit,
            title=f"pymunk car over the lagless stack: {unit} per configuration",
        )
    ctx.add_metric("car_length_m", CAR_LENGTH)
    ctx.add_metric("snapshot_rate_hz", 20.0)
    ctx.add_metric("sample_rate_hz", LOG_RATE)
    return ctx.result(
        config={
            "profiles": {k: list(v) for k, v in PROFILES.items()},
            "server_clock_offset_s": SERVER_CLOCK_OFFSET,
            "tick_rate_hz": 100.0,
            "input_events": len(recording.events),
        }
    )


SPEC: Final = register(
    ExperimentSpec(
        id="physics/car",
        title="Spec 004 E1-E6 on a pymunk car through the lagless stack, with loss, collisions "
        "and prediction",
        entry_point=physics_car_experiment,
        quick={
            "duration": 12.0,
            "warmup": 2.0,
            "extrapolation_time": 1.0,
            "correction_time": 0.1,
            "losses": [0.05, 0.2],
            "collision_duration": 7.0,
        },
        full={
            "duration": 60.0,
            "warmup": 2.0,
            "extrapolation_time": 1.0,
            "correction_time": 0.1,
            "losses": [0.0, 0.01, 0.05, 0.1, 0.2],
            "collision_duration": 10.0,
        },
        reference=_REFERENCE,
        description=(
            "A pymunk car (3 m, per-wheel tyre friction, `lagless.physics`) driven by a bot's "
            "recorded key presses (one guaranteed input event per change) on a "
            "`PhysicsServer`; a `PhysicsClient` over the lagless transport on the simulator "
            "shows it in the ten configurations of spec 004 §6.0 (rows `config`) side by side, "
            "with spec 004's receive-side latency (Gl. 5.1) at both ends: `l40j20` = 40 ms "
            "mean, 20 ms variance; `l80j40` = 80/40 ms. Server and client log at the same 50-Hz "
            "server instants; DeviationA is the mean distance (m), DeviationB the difference "
            "of the step-length standard deviations (m), `lag_ms` the best-aligning time "
            "shift. Row `predicted` is the client's own prediction of its car (spec 004 §7.2). "
            "Table `loss` sweeps independent loss at L80; table `collisions` drives into a wall "
            "and head-on into a second client's car. The server clock runs 1000 s ahead, so "
            "render times go through the transport's clock sync. Extrapolation 1 s and "
            "correction 100 ms are our choices (the thesis gives none)."
        ),
    )
)
"""The registered ``physics/car`` spec."""
