"""Experiment ``replication/lag-compensation``: are on-screen hits accepted, forged ones rejected?

Implements issue 13's ``replication/lag-compensation`` for ``lagless.replication.lagcomp`` (spec
000 §2.11, §5.2.4) and ``lagless.replication.rollback_hits`` (§5.2.3). Per RTT, over
``lagless.netsim``: a server moves targets (random waypoints, hit circles) at a fixed tick,
records their shapes and sends a snapshot each tick to a shooter client; the client draws the
targets interpolated ``interpolation_delay`` behind its estimate of the server clock and fires
at random frames at a target as drawn (a hit true on its screen), stamping the server time of the
state it drew; the claim crosses the link and the server judges it three ways: with the stamped
view time, with its own estimate only (unstamped, window search), and without compensation (at
its present). A cheating client sends forged claims (aim off the target, a view time from the
future, beyond the rewind cap, backdated to when the target crossed the aim, a dead shooter, a
spoofed origin, a target that does not exist). Who-shoots-whom: duels where A kills B just before
B kills C, with random uplink latencies, go through the ``KillArbiter`` for several windows.

Decisions:
    * The client's interpolation delay is ``RTT/2 + interpolation_buffer`` (its render clock is the
      synchronised server clock, so it must wait out the downlink, then keep a buffer of two
      ticks); the server is told that delay and uses the nominal mean RTT
      (``RTT x (1 + jitter/2)``) as its smoothed estimate. The client's clock estimate is off by a
      constant drawn uniformly within ``clock_error_ms`` per run.
    * When no newer snapshot has arrived the client holds the newest and stamps that snapshot's
      time: the view time is always the time of the state drawn.
    * Forged claims are judged by the stamped compensator (the library's recommended mode); each
      kind is one seventh of them. The goal is 100 % rejected.
    * A duel is resolved correctly when "A kills B" is committed and "B kills C" dropped; it is
      "within the window" when A's kill arrives at most one window after B's. The controls
      (unrelated kills) must all be committed.
"""

from __future__ import annotations

import bisect
import math
import struct
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.lab.registry import ExperimentSpec, register
from lagless.lab.result import JSONScalar, JSONValue, Result
from lagless.lab.runner import ExperimentContext
from lagless.netsim import JitterConfig, LinkConfig, Network, Scheduler, get_profile
from lagless.replication.lagcomp import (
    HitCircle,
    HitClaim,
    HitRejectReason,
    LagCompConfig,
    LagCompensator,
    ray_distance,
)
from lagless.replication.rollback_hits import DEFAULT_KILL_WINDOW, Kill, KillArbiter

__all__ = [
    "FORGERIES",
    "SPEC",
    "LagCompCell",
    "kill_round_trip",
    "lag_compensation_experiment",
    "run_duels",
]

SHOOTER: Final = 0
_PORT: Final = 5000
_CLAIM: Final = struct.Struct("<BBBddddd")  # forged flag, shooter, target, origin, direction, t
FORGERIES: Final = (
    "miss",
    "future",
    "too_old",
    "backdated",
    "dead_shooter",
    "spoofed_origin",
    "ghost_target",
)
_GOALS: Final = {
    "accepted_share_stamped_min_up_to_250ms": 0.99,
    "forged_rejected_share": 1.0,
    "duels_correct_within_window_share": 1.0,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class LagCompCell:
    """The settings of one RTT run."""

    rtt: float
    """Round-trip time (s)."""
    seed: int
    """Root seed of the simulated network."""
    clock_error: float
    """The client's constant server-clock error (s)."""


class _Targets:
    """Targets walking between random waypoints in a square arena (m, m/s)."""

    def __init__(self, rng: np.random.Generator, count: int, arena: float, speed: float) -> None:
        self._rng, self._arena, self._speed = rng, arena, speed
        self.pos = rng.uniform(-arena, arena, size=(count, 2))
        self._goal = rng.uniform(-arena, arena, size=(count, 2))
        # keep every target at least 5 m from the shooter at the origin
        self.pos += np.sign(self.pos) * 5.0
        self._goal += np.sign(self._goal) * 5.0

    def step(self, dt: float) -> None:
        delta = self._goal - self.pos
        dist = np.hypot(delta[:, 0], delta[:, 1])
        reach = self._speed * dt
        arrived = dist <= reach
        move = np.where(arrived[:, None], delta, delta / np.maximum(dist, 1e-12)[:, None] * reach)
        self.pos = self.pos + move
        if arrived.any():
            fresh = self._rng.uniform(-self._arena, self._arena, size=(int(arrived.sum()), 2))
            self._goal[arrived] = fresh + np.sign(fresh) * 5.0


@dataclass(slots=True)
class _Client:
    """The shooter client's snapshot buffer."""

    times: list[float]
    snaps: list[np.ndarray]

    def view(self, render: float) -> tuple[float, np.ndarray] | None:
        """Return (time drawn, positions) for render time ``render``, holding the newest."""
        if not self.times or render < self.times[0]:
            return None
        if render >= self.times[-1]:
            return self.times[-1], self.snaps[-1]
        i = bisect.bisect_right(self.times, render)
        t0, t1 = self.times[i - 1], self.times[i]
        f = (render - t0) / (t1 - t0)
        return render, self.snaps[i - 1] + (self.snaps[i] - self.snaps[i - 1]) * f


def _float(params: Mapping[str, JSONValue], key: str, *, positive: bool = True) -> float:
    value = params.get(key)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not (value > 0 if positive else value >= 0)
    ):
        raise ConfigError(f"{key} must be a number {'>' if positive else '>='} 0, got {value!r}")
    return float(value)


def _floats(params: Mapping[str, JSONValue], key: str) -> list[float]:
    value = params.get(key)
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in value)
    ):
        raise ConfigError(f"{key} must be a non-empty list of numbers >= 0, got {value!r}")
    return [float(v) for v in value]  # type: ignore[arg-type]


def run_lagcomp_cell(
    ctx: ExperimentContext, params: Mapping[str, JSONValue], cell: LagCompCell
) -> tuple[dict[str, JSONScalar], Counter[str], Counter[str]]:
    """Simulate one RTT: legit and forged claims over netsim, judged three ways.

    Args:
        ctx: The run's context (random streams per RTT).
        params: The experiment parameters.
        cell: RTT, network seed and clock error.

    Returns:
        The row of table ``rtt`` and the forged claims (by kind) and their rejections (by
        ``kind:reason``).
    """
    tick, duration = _float(params, "tick"), _float(params, "duration")
    radius, fps = _float(params, "radius"), _float(params, "client_fps")
    one_way = cell.rtt / 2.0
    jitter = _float(params, "jitter_fraction", positive=False) * one_way
    interp = one_way + _float(params, "interpolation_buffer")
    rtt_estimate = cell.rtt + jitter  # 2 x (one way + mean of U(0, jitter))
    config = LagCompConfig()
    judges = {
        "stamped": LagCompensator(config),
        "unstamped": LagCompensator(config),
        "none": LagCompensator(LagCompConfig(time_tolerance=0.0)),
    }
    tag = f"lagcomp.rtt{cell.rtt}"
    targets = _Targets(
        ctx.rng(f"{tag}.targets"),
        int(_float(params, "targets")),
        _float(params, "arena"),
        _float(params, "target_speed"),
    )
    shots = ctx.rng(f"{tag}.shots")
    scheduler = Scheduler()
    network = Network(scheduler, seed=cell.seed)
    link = LinkConfig(
        latency=one_way,
        jitter=JitterConfig(kind="uniform", amount=jitter) if jitter > 0 else JitterConfig(),
        loss=_float(params, "loss", positive=False),
    )
    client_host, server_host = network.add_host("client"), network.add_host("server")
    network.set_link(client_host, server_host, link)
    network.set_link(server_host, client_host, link)
    client = _Client([], [])
    legit: Counter[str] = Counter()
    forged: Counter[str] = Counter()
    rejected: Counter[str] = Counter()

    def on_snapshot(data: bytes, addr: Address, now: float) -> None:
        values = np.frombuffer(data, dtype="<f8")
        t = float(values[0])
        if t in client.times:
            return
        i = bisect.bisect(client.times, t)
        client.times.insert(i, t)
        client.snaps.insert(i, values[1:].reshape(-1, 2).copy())

    def on_claim(data: bytes, addr: Address, now: float) -> None:
        kind, shooter, target, ox, oy, dx, dy, view = _CLAIM.unpack(data)
        claim = HitClaim(shooter, target, (ox, oy), (dx, dy), view)
        args = {"rtt": rtt_estimate, "interpolation_delay": interp}
        if kind:
            name = FORGERIES[kind - 1]
            forged[name] += 1
            verdict = judges["stamped"].evaluate(claim, now, **args)
            if not verdict.accepted and verdict.reason is not None:
                rejected[f"{name}:{verdict.reason.value}"] += 1
            return
        legit["claims"] += 1
        legit["stamped"] += judges["stamped"].evaluate(claim, now, **args).accepted
        unstamped = HitClaim(shooter, target, (ox, oy), (dx, dy))
        legit["unstamped"] += judges["unstamped"].evaluate(unstamped, now, **args).accepted
        legit["none"] += (
            judges["none"].evaluate(unstamped, now, rtt=0.0, interpolation_delay=0.0).accepted
        )

    client_addr = client_host.bind(_PORT, on_snapshot)
    server_addr = server_host.bind(_PORT, on_claim)

    def server_tick() -> None:
        now = scheduler.now
        targets.step(tick)
        shapes = {SHOOTER: HitCircle(0.0, 0.0, radius)}
        shapes |= {
            i + 1: HitCircle(float(x), float(y), radius) for i, (x, y) in enumerate(targets.pos)
        }
        for judge in judges.values():
            judge.record(now, shapes)
        snapshot = np.concatenate(([now], targets.pos.ravel())).astype("<f8").tobytes()
        server_host.send(snapshot, server_addr, client_addr)
        if now + tick <= duration:
            scheduler.call_at(now + tick, server_tick)

    def send_claim(
        kind: int, target: int, origin: tuple[float, float], aim: np.ndarray, t: float
    ) -> None:
        data = _CLAIM.pack(kind, SHOOTER, target, *origin, float(aim[0]), float(aim[1]), t)
        client_host.send(data, client_addr, server_addr)

    def forge(kind: str, now: float, drawn: float, positions: np.ndarray) -> None:
        index = int(shots.integers(len(positions)))
        centre = positions[index]
        code = FORGERIES.index(kind) + 1
        server_now = now + cell.clock_error
        if kind == "miss":
            normal = np.array([-centre[1], centre[0]]) / np.hypot(*centre)
            send_claim(code, index + 1, (0.0, 0.0), centre + 3.0 * normal, drawn)
        elif kind == "future":
            send_claim(code, index + 1, (0.0, 0.0), centre, server_now + 0.2)
        elif kind == "too_old":
            send_claim(code, index + 1, (0.0, 0.0), centre, server_now - 1.2)
        elif kind == "backdated":
            past = client.view(drawn - float(shots.uniform(0.2, 0.6)))
            if past is not None:
                send_claim(code, index + 1, (0.0, 0.0), past[1][index], past[0])
        elif kind == "dead_shooter":
            data = _CLAIM.pack(code, 99, index + 1, 0.0, 0.0, *map(float, centre), drawn)
            client_host.send(data, client_addr, server_addr)
        elif kind == "spoofed_origin":
            origin = centre * (1.0 + 2.0 / np.hypot(*centre))  # 2 m behind the target
            send_claim(
                code, index + 1, (float(origin[0]), float(origin[1])), centre - origin, drawn
            )
        else:
            send_claim(code, 77, (0.0, 0.0), centre, drawn)

    shot_chance = _float(params, "shots_per_s") / fps
    forge_chance = _float(params, "forged_per_s") / fps

    def client_frame() -> None:
        now = scheduler.now
        seen = client.view(now + cell.clock_error - interp)
        if seen is not None:
            drawn, positions = seen
            if shots.random() < shot_chance:
                index = int(shots.integers(len(positions)))
                centre = positions[index]
                normal = np.array([-centre[1], centre[0]]) / np.hypot(*centre)
                aim = centre + normal * float(shots.uniform(-0.95, 0.95)) * radius
                shape = HitCircle(float(centre[0]), float(centre[1]), radius)
                if ray_distance(shape, (0.0, 0.0), (float(aim[0]), float(aim[1]))) is not None:
                    send_claim(0, index + 1, (0.0, 0.0), aim, drawn)
            if shots.random() < forge_chance:
                forge(FORGERIES[int(shots.integers(len(FORGERIES)))], now, drawn, positions)
        if now + 1.0 / fps <= duration:
            scheduler.call_at(now + 1.0 / fps, client_frame)

    scheduler.call_at(0.0, server_tick)
    scheduler.call_at(0.5 / fps, client_frame)
    scheduler.run(until=duration + 2.0 * cell.rtt + 1.0)
    claims = legit["claims"]
    row: dict[str, JSONScalar] = {
        "rtt_ms": round(cell.rtt * 1000.0, 6),
        "interpolation_delay_ms": round(interp * 1000.0, 6),
        "clock_error_ms": round(cell.clock_error * 1000.0, 6),
        "legit_claims": claims,
    }
    for mode in ("stamped", "unstamped", "none"):
        row[f"accepted_share_{mode}"] = legit[mode] / claims if claims else None
    for reason in HitRejectReason:
        row[f"stamped_rejected_{reason.value}"] = judges["stamped"].rejected().get(reason, 0)
    row["forged_claims"] = sum(forged.values())
    row["forged_rejected"] = sum(rejected.values())
    return row, forged, rejected


def run_duels(
    rng: np.random.Generator, *, duels: int, window: float, max_uplink: float
) -> dict[str, float]:
    """Resolve ``duels`` conflicting kill pairs (and as many controls) through a ``KillArbiter``.

    Args:
        rng: Draws the kill times and uplink latencies.
        duels: Number of duels.
        window: The arbiter's hold window (s).
        max_uplink: Uplink one-way latencies are uniform in [10 ms, max_uplink] (s).

    Returns:
        Shares ``correct`` (all duels), ``correct_within_window`` (A's kill arrived at most one
        window after B's), ``within_window`` and ``controls_committed``.
    """
    correct = within = correct_within = controls = 0
    for _ in range(duels):
        arbiter = KillArbiter(window)
        t_a = float(rng.uniform(0.0, 100.0))
        t_b = t_a + float(rng.uniform(0.0, 0.1))
        up_a, up_b, up_c = (float(rng.uniform(0.01, max_uplink)) for _ in range(3))
        events = sorted(
            [
                (t_a + up_a, 0, Kill(1, 2, t_a)),
                (t_b + up_b, 1, Kill(2, 3, t_b)),
                (t_b + up_c, 2, Kill(4, 5, t_b)),  # control: unrelated players
            ],
            key=lambda e: (e[0], e[1]),
        )
        decisions = []
        for arrival, _, kill in events:
            decisions += arbiter.release(arrival)
            arbiter.submit(kill, arrival)
        decisions += arbiter.release(math.inf)
        outcome = {d.kill.shooter: d.committed for d in decisions}
        ok = outcome[1] and not outcome[2]
        inside = (t_a + up_a) - (t_b + up_b) <= window
        correct += ok
        within += inside
        correct_within += ok and inside
        controls += outcome[4]
    return {
        "correct": correct / duels,
        "within_window": within / duels,
        "correct_within_window": correct_within / within if within else math.nan,
        "controls_committed": controls / duels,
    }


def kill_round_trip(seed: int, *, shots: int, window: float) -> list[float]:
    """Measure the shot round trip of spec 000 §5.2.3 over the UMTS profile (netsim).

    The shooter sends a kill claim every 250 ms; the server holds it in a ``KillArbiter`` for
    ``window`` and sends the committed kill back; the shooter notes when it arrives.

    Args:
        seed: Root seed of the simulated network.
        shots: Claims sent.
        window: The arbiter's hold window (s).

    Returns:
        Round trips (s) of the confirmations that arrived (claims and confirmations are
        unreliable: the 1 % UMTS loss per direction drops some).
    """
    scheduler = Scheduler()
    network = Network(scheduler, seed=seed)
    shooter, server = network.add_host("shooter"), network.add_host("server")
    network.set_profile(shooter, server, get_profile("umts"))
    arbiter = KillArbiter(window)
    fired: dict[int, float] = {}
    trips: list[float] = []
    index = struct.Struct("<I")

    def release() -> None:
        for decision in arbiter.release(scheduler.now):
            if decision.committed:
                data = index.pack(decision.kill.victim)
                server.send(data, server_addr, shooter_addr)

    def on_claim(data: bytes, addr: Address, now: float) -> None:
        (victim,) = index.unpack(data)
        arbiter.submit(Kill(0, victim, fired[victim]), now)
        scheduler.call_at(now + window, release)

    def on_kill(data: bytes, addr: Address, now: float) -> None:
        trips.append(now - fired[index.unpack(data)[0]])

    shooter_addr = shooter.bind(_PORT, on_kill)
    server_addr = server.bind(_PORT, on_claim)
    for i in range(shots):
        fired[i + 1] = 0.25 * i
        scheduler.call_at(0.25 * i, shooter.send, index.pack(i + 1), shooter_addr, server_addr)
    scheduler.run()
    return trips


def lag_compensation_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """Sweep RTT for hit acceptance and forged-claim rejection; sweep windows for duels.

    Args:
        ctx: The run's context.
        params: ``duration``, ``tick``, ``client_fps``, ``rtts_ms``, ``loss``,
            ``jitter_fraction``, ``interpolation_buffer`` (s), ``clock_error_ms``, ``targets``,
            ``arena`` (m), ``target_speed`` (m/s), ``radius`` (m), ``shots_per_s``,
            ``forged_per_s``, ``duels``, ``windows_ms``, ``max_uplink_ms``,
            ``round_trip_shots``.

    Returns:
        Tables ``rtt``, ``forged`` and ``duels``; goal metrics and plot ``accepted-share``.
    """
    rtts = [ms / 1000.0 for ms in _floats(params, "rtts_ms")]
    clock = _float(params, "clock_error_ms", positive=False) / 1000.0
    rows = []
    forged: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    for rtt in ctx.track(rtts, description="lag compensation RTTs"):
        cell = LagCompCell(
            rtt=rtt,
            seed=ctx.seed_for(f"lagcomp.rtt{rtt}"),
            clock_error=float(ctx.rng(f"lagcomp.rtt{rtt}.clock").uniform(-clock, clock)),
        )
        row, kinds, reasons = run_lagcomp_cell(ctx, params, cell)
        rows.append(row)
        forged += kinds
        rejected += reasons
    ctx.add_table("rtt", rows)
    up_to = [r for r in rows if float(r["rtt_ms"]) <= 250.0]  # type: ignore[arg-type]
    for mode in ("stamped", "unstamped", "none"):
        shares = [v for r in up_to if isinstance(v := r[f"accepted_share_{mode}"], float)]
        ctx.add_metric(f"accepted_share_{mode}_min_up_to_250ms", min(shares, default=None))
    total_forged = sum(forged.values())
    ctx.add_metric("forged_claims", float(total_forged))
    ctx.add_metric(
        "forged_rejected_share", sum(rejected.values()) / total_forged if total_forged else None
    )
    forged_rows: list[dict[str, JSONScalar]] = []
    for kind in FORGERIES:
        why = {k.split(":", 1)[1]: v for k, v in rejected.items() if k.startswith(kind + ":")}
        forged_rows.append(
            {
                "kind": kind,
                "claims": forged[kind],
                "rejected": sum(why.values()),
                "reasons": ", ".join(f"{r} {n}" for r, n in sorted(why.items())),
            }
        )
    ctx.add_table("forged", forged_rows)
    duel_rows: list[dict[str, JSONScalar]] = []
    duels = int(_float(params, "duels"))
    max_uplink = _float(params, "max_uplink_ms") / 1000.0
    for ms in _floats(params, "windows_ms"):
        duel = run_duels(
            ctx.rng(f"lagcomp.duels.{ms}"), duels=duels, window=ms / 1000.0, max_uplink=max_uplink
        )
        duel_rows.append({"window_ms": ms, "kill_delay_added_ms": ms, **duel})
        if ms == 170.0:
            ctx.add_metric("duels_correct_share_window170", duel["correct"])
    ctx.add_table("duels", duel_rows)
    inside = [r["correct_within_window"] for r in duel_rows]
    ctx.add_metric(
        "duels_correct_within_window_share",
        min((v for v in inside if isinstance(v, float) and not math.isnan(v)), default=None),
    )
    ctx.add_metric(
        "duels_controls_committed_share",
        min(float(r["controls_committed"]) for r in duel_rows),  # type: ignore[arg-type]
    )
    trips = kill_round_trip(
        ctx.seed_for("lagcomp.round_trip"),
        shots=int(_float(params, "round_trip_shots")),
        window=DEFAULT_KILL_WINDOW,
    )
    ctx.add_metric("kill_round_trip_ms_umts", float(np.mean(trips)) * 1000.0 if trips else None)
    ctx.line_plot(
        "accepted-share",
        [float(r["rtt_ms"]) for r in rows],  # type: ignore[arg-type]
        {
            f"{mode}": [r[f"accepted_share_{mode}"] for r in rows]  # type: ignore[misc]
            for mode in ("stamped", "unstamped", "none")
        },
        xlabel="RTT (ms)",
        ylabel="share of on-screen hits accepted",
        title="Lag compensation: on-screen hits the server accepts",
    )
    return ctx.result(config={"lagcomp": "LagCompConfig() defaults", "goals": dict(_GOALS)})


_COMMON: Final[dict[str, JSONValue]] = {
    "tick": 1.0 / 30.0,
    "client_fps": 60.0,
    "loss": 0.01,
    "jitter_fraction": 0.1,
    "interpolation_buffer": 2.0 / 30.0,
    "clock_error_ms": 5.0,
    "targets": 4,
    "arena": 20.0,
    "target_speed": 5.0,
    "radius": 0.5,
    "shots_per_s": 10.0,
    "forged_per_s": 10.0,
    "max_uplink_ms": 250.0,
}

SPEC: Final = register(
    ExperimentSpec(
        id="replication/lag-compensation",
        title="Lag compensation: on-screen hits accepted vs RTT, forged claims, who-shoots-whom",
        entry_point=lag_compensation_experiment,
        quick={
            **_COMMON,
            "duration": 6.0,
            "rtts_ms": [50.0, 150.0, 250.0],
            "duels": 400,
            "windows_ms": [0.0, 100.0, 170.0],
            "round_trip_shots": 200,
        },
        full={
            **_COMMON,
            "duration": 60.0,
            "rtts_ms": [0.0, 50.0, 100.0, 150.0, 200.0, 250.0, 300.0, 400.0, 500.0],
            "duels": 5000,
            "windows_ms": [0.0, 50.0, 100.0, 170.0, 250.0, 400.0],
            "round_trip_shots": 2000,
        },
        reference={"kill_round_trip_ms_umts": 510.0},
        description=(
            "Per RTT over `lagless.netsim` (10 % jitter, 1 % loss each way): 4 targets walk "
            "between random waypoints at 5 m/s (hit circles of 0.5 m); the server records them at "
            "30 Hz and sends snapshots; the shooter client at the origin draws them "
            "interpolated RTT/2 + 67 ms behind its server-clock estimate (±5 ms error) and fires "
            "10 shots/s at targets as drawn, each a true hit on its screen. The server judges "
            "every claim with the stamped view time, with its own estimate only (window search) "
            "and without compensation. Goals (issue 13): ≥ 99 % of on-screen hits accepted up "
            "to 250 ms RTT (`accepted_share_stamped_min_up_to_250ms`); 100 % of forged claims "
            "rejected (`forged_rejected_share`; 7 kinds, table `forged`); who-shoots-whom "
            "resolved correctly whenever the earlier kill arrives within the window "
            "(`duels_correct_within_window_share`, table `duels`, default window 170 ms). "
            "Thesis number: spec 000 §5.2.3's shot round trip with the 170-ms window over UMTS, "
            "≈ 510 ms (170 up + 170 held + 170 down), measured as `kill_round_trip_ms_umts`: "
            "kill claims over the `umts` profile (one way 170 ms + U(0, 7 %)), held by a "
            "`KillArbiter`, the committed kill sent back."
        ),
    )
)
"""The registered spec of ``replication/lag-compensation``."""
