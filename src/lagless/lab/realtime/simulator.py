"""The Realtime Simulator as a lab: one recorded entity replicated over a simulated link.

Implements spec 000 §3.2-§3.3 and §3.6 "Local Loopback" / "TestRun": a ground-truth trajectory
(a recording replayed through an entity, ``lagless.world``) feeds a display model's sender once
per game-loop frame; each update crosses one simulated link (spec 000 §3.7: minimum latency,
jitter in % of the latency, loss per event, ``lagless.netsim.Link``) to the receiver, which draws
the entity in the same frame loop; per frame the distance between the true and the shown position
is measured (``lagless.lab.realtime.metrics``). The same loop runs spec 004's car at 50 Hz
(§5.3.2: server and client sample the same instants).

Decisions:
    * One clock: sender and receiver share the frame times and server time equals local time
      (Local Loopback, spec 000 §3.6; spec 004's clock sync assumed converged). Times are offset
      by ``EPOCH`` so nothing depends on a clock starting at 0 (STYLE §3)
      (``test_simulator.py::test_zero_latency_snap_is_exact``).
    * Order within a frame: the sender samples the true state and may send; the link draws the
      update's fate; then every update that has arrived by the frame time is processed, in arrival
      order, with ``now`` = the frame time (the display model "checks for new updates" each loop,
      spec 000 §3.5); then the receiver draws. So with zero latency an update is shown in the
      frame that sent it.
    * No init payload: every model's first update is self-contained (``lagless.smoothing.base``),
      and frames before the first shown state are left out of the error metrics. Updates are the
      only traffic counted.
    * ``rtt`` given to the receiver (``observe_link``) defaults to twice the link's mean delay.
"""

from __future__ import annotations

import heapq
import itertools
import math
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError
from lagless.lab.realtime.metrics import (
    count_freezes,
    count_jumps,
    deviation_a,
    deviation_b,
    position_error,
    send_rate,
    step_lengths,
    wire_sizes,
)
from lagless.netsim import JitterConfig, Link, LinkConfig
from lagless.smoothing import DisplayModel, KinematicState
from lagless.world import ENTITY_LENGTH, PX_PER_M, Trajectory

__all__ = [
    "EPOCH",
    "JUMP_FLOOR_FRACTION",
    "RunMetrics",
    "SimulatorRun",
    "run",
    "simulator_link",
    "truth_state",
]

FloatArray = npt.NDArray[np.float64]

EPOCH: Final = 1000.0  # seconds: local/server time of the trajectory's t = 0
JUMP_FLOOR_FRACTION: Final = 0.05  # jump/freeze floor as a fraction of the entity length


def simulator_link(*, latency: float, jitter: float = 0.0, loss: float = 0.0) -> LinkConfig:
    """Return the Realtime Simulator's one-way link (spec 000 §3.7).

    Args:
        latency: Minimum client-to-client delay, s (the thesis's "latency").
        jitter: Extra delay as a fraction of ``latency``: uniform in ``[0, jitter x latency]``
            (the §3.7 reading ``latency x (1 + U(0, jitter%))``), e.g. 0.07 for UMTS.
        loss: Probability that an update is dropped (per event).

    Returns:
        The link configuration (headers counted for the wire size).

    Raises:
        ConfigError: A value out of range.
    """
    if not (math.isfinite(jitter) and jitter >= 0):
        raise ConfigError(f"jitter must be a fraction >= 0, got {jitter!r}")
    amount = jitter * latency
    shape = JitterConfig(kind="uniform", amount=amount) if amount > 0 else JitterConfig()
    return LinkConfig(latency=latency, jitter=shape, loss=loss)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunMetrics:
    """The statistics of one run (spec 000 §4.1 overlay, spec 004 §5.3.5)."""

    updates: int
    """Updates the sender sent."""
    delivered: int
    """Update datagrams that reached the receiver (duplicates included)."""
    frames: int
    """Frames measured (those with a shown state)."""
    payload_kBps_avg: float
    """Average payload rate, kB/s (``avrgDataSent``; 1 kB = 1000 bytes)."""
    payload_kBps_max: float
    """Largest payload rate over 1-s windows, kB/s (``maxDataSent``)."""
    wire_kBps_avg: float
    """Average rate with 28 bytes of IPv4 + UDP header per update, kB/s."""
    wire_kBps_max: float
    """Largest 1-s rate with headers, kB/s."""
    error_m_avg: float
    """Mean per-frame position error, m (``avgDistanceError``; = DeviationA)."""
    error_m_max: float
    """Largest per-frame position error, m (``maxDistanceError``)."""
    deviation_b_m: float
    """Spec 004 DeviationB, m: |std of true step lengths - std of shown step lengths|."""
    jumps: int
    """Shown steps over 2 x the median of their neighbours plus 5 % of the entity length."""
    freezes: int
    """Shown steps under half the median of their (moving) neighbours: stutter."""

    @property
    def error_px_avg(self) -> float:
        """Mean position error in thesis pixels (``PX_PER_M`` = 10 px per m)."""
        return self.error_m_avg * PX_PER_M

    @property
    def error_px_max(self) -> float:
        """Largest position error in thesis pixels."""
        return self.error_m_max * PX_PER_M


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class SimulatorRun:
    """A run's per-frame series (SI units, local time) and its metrics."""

    t: FloatArray
    """Frame times, s (trajectory time, without ``EPOCH``)."""
    true_x: FloatArray
    """True x per frame, m."""
    true_y: FloatArray
    """True y per frame, m."""
    shown_x: FloatArray
    """Displayed x per frame, m (NaN before the first shown state)."""
    shown_y: FloatArray
    """Displayed y per frame, m (NaN before the first shown state)."""
    send_t: FloatArray
    """Send time of every update, s."""
    payload: FloatArray
    """Payload bytes of every update."""
    metrics: RunMetrics
    """The statistics."""

    @property
    def error_m(self) -> FloatArray:
        """Per-frame error, m (NaN before the first shown state)."""
        return position_error(self.true_x, self.true_y, self.shown_x, self.shown_y)


def truth_state(truth: Trajectory, i: int, t: float) -> KinematicState:
    """Return sample ``i`` of a ground-truth trajectory as the state a sender is given.

    Args:
        truth: The ground truth (metres, m/s, m/s², radians, rad/s).
        i: Sample index.
        t: Time to stamp on the state, seconds (the sender's clock, e.g. ``EPOCH + truth.t[i]``).

    Returns:
        The kinematic state, with the turn rate as angular velocity.
    """
    return KinematicState(
        t=t,
        x=float(truth.x[i]),
        y=float(truth.y[i]),
        vx=float(truth.vx[i]),
        vy=float(truth.vy[i]),
        ax=float(truth.ax[i]),
        ay=float(truth.ay[i]),
        heading=float(truth.heading[i]),
        angular_velocity=float(truth.turn_rate[i]),
    )


def _metrics(
    truth: Trajectory,
    shown_x: FloatArray,
    shown_y: FloatArray,
    send_t: FloatArray,
    payload: FloatArray,
    *,
    delivered: int,
    entity_length: float,
) -> RunMetrics:
    start, duration = float(truth.t[0]), float(truth.t[-1] - truth.t[0])
    pay_avg, pay_max = send_rate(send_t, payload, start=start, duration=duration)
    wire_avg, wire_max = send_rate(send_t, wire_sizes(payload), start=start, duration=duration)
    shown = ~np.isnan(shown_x)
    first = int(np.argmax(shown)) if shown.any() else len(shown)
    tx, ty, sx, sy = truth.x[first:], truth.y[first:], shown_x[first:], shown_y[first:]
    error = position_error(tx, ty, sx, sy)
    floor = JUMP_FLOOR_FRACTION * entity_length
    shown_steps = step_lengths(sx, sy)
    return RunMetrics(
        updates=len(send_t),
        delivered=delivered,
        frames=len(error),
        payload_kBps_avg=pay_avg,
        payload_kBps_max=pay_max,
        wire_kBps_avg=wire_avg,
        wire_kBps_max=wire_max,
        error_m_avg=deviation_a(error),
        error_m_max=float(np.max(error)) if error.size else math.nan,
        deviation_b_m=deviation_b(tx, ty, sx, sy) if error.size else math.nan,
        jumps=count_jumps(shown_steps, floor=floor),
        freezes=count_freezes(shown_steps, floor=floor),
    )


def run(
    truth: Trajectory,
    model: DisplayModel,
    link: LinkConfig,
    *,
    rng: np.random.Generator,
    rtt: float | None = None,
    entity_length: float = ENTITY_LENGTH,
) -> SimulatorRun:
    """Replicate ``truth`` through ``model`` over ``link`` and measure the shown path.

    Args:
        truth: The sender's true states, one per frame (``lagless.world.simulate``).
        model: The display model (sender and receiver are created from it).
        link: The one-way link updates cross (``simulator_link`` or a profile direction).
        rng: The link's random stream (jitter and loss draws).
        rtt: Round trip time given to the receiver, s (default: 2 x the link's mean delay).
        entity_length: Entity length, m (sets the jump/freeze floor).

    Returns:
        The series and metrics of the run.

    Raises:
        ConfigError: ``truth`` has fewer than two samples.
    """
    n = len(truth)
    if n < 2:
        raise ConfigError(f"truth must have at least 2 samples, got {n}")
    sender = model.create_sender(entity_id=1)
    receiver = model.create_receiver(entity_id=1)
    receiver.observe_link(rtt=2.0 * link.mean_delay if rtt is None else rtt)
    channel = Link(link, rng=rng)
    pending: list[tuple[float, int, bytes]] = []
    send_t: list[float] = []
    payload: list[float] = []
    shown_x = np.full(n, np.nan)
    shown_y = np.full(n, np.nan)
    delivered = 0
    order = itertools.count()
    times = truth.t.tolist()
    for i, t in enumerate(times):
        now = EPOCH + t
        update = sender.update(now, truth_state(truth, i, now))
        if update is not None:
            data = update.payload
            send_t.append(t)
            payload.append(float(len(data)))
            for arrival in channel.send(len(data), now).arrivals:
                heapq.heappush(pending, (arrival, next(order), data))
        while pending and pending[0][0] <= now:
            _, _, data = heapq.heappop(pending)
            receiver.process_update(data, now, now)
            delivered += 1
        shown = receiver.display(now)
        if shown is not None:
            shown_x[i], shown_y[i] = shown.x, shown.y
    send_array = np.asarray(send_t, dtype=np.float64)
    payload_array = np.asarray(payload, dtype=np.float64)
    metrics = _metrics(
        truth,
        shown_x,
        shown_y,
        send_array,
        payload_array,
        delivered=delivered,
        entity_length=entity_length,
    )
    return SimulatorRun(
        t=truth.t,
        true_x=truth.x,
        true_y=truth.y,
        shown_x=shown_x,
        shown_y=shown_y,
        send_t=send_array,
        payload=payload_array,
        metrics=metrics,
    )
