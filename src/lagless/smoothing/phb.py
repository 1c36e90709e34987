"""Position-history-based dead reckoning (PHB-DR, Singhal & Cheriton) with adaptive convergence.

Implements spec 000 §2.8 (§2.7.2 of the thesis): updates carry only position, orientation and a
timestamp; the receiver keeps the last three, fits a curve through them to predict the
convergence point (tracking step) and converges onto it (convergence step), choosing both curves
from the angle of embrace (Table 2.3). The angular velocity is derived from the last two
orientations, as the Realtime Simulator does.

Payload (21 B, Abb. 3.13): ``id u8 | x i32 | y i32 | heading u32 | t i64`` (units in
``lagless.smoothing.codec``). It always carries the timestamp, so time compensation adds no bytes.

Decisions (the thesis gives no numbers, spec 000 §7):

* Angle of embrace = angle at the middle point between (p2→p1) and (p2→p3); 180° is straight.
  Below ``sharp_angle`` (default 90°, an acute angle) the curve is SHARP: linear extrapolation
  through the last two points, quadratic convergence. From ``straight_angle`` (default 170°) it is
  STRAIGHT: quadratic extrapolation, linear convergence. In between SOFT: quadratic / quadratic.
  With fewer than three updates or a zero-length segment (a stop), extrapolation and convergence
  are linear (``test_phb.py::test_angle_classes``).
* The quadratic convergence path is the Bézier ``c0 → c0 + v0·T/2 → convergence point``
  (``lagless.smoothing.convergence``).
* The convergence point is the fitted curve at receipt + ``position_time``; beyond it the entity
  continues along the fit's tangent there, so a parabola never runs away
  (``test_phb.py::test_track_is_linear_after_convergence_point``).
* The sender ghost is the same track with zero latency
  (``test_phb.py::test_ghost_matches_receiver``).
"""

from __future__ import annotations

import enum
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Final

from lagless.errors import ConfigError
from lagless.smoothing.base import (
    DropReason,
    Receiver,
    ThresholdSender,
    check_time_compensation,
    compensated_age,
)
from lagless.smoothing.codec import DecodedUpdate, ModelCode, UpdateLayout
from lagless.smoothing.convergence import (
    DEFAULT_CONVERGENCE_TIME,
    Convergence,
    ConvergenceConfig,
    create_convergence,
)
from lagless.smoothing.state import (
    DisplayState,
    KinematicState,
    angle_difference,
    wrap_angle,
)
from lagless.smoothing.thresholds import ThresholdConfig

__all__ = [
    "PHB_LAYOUT",
    "CurveClass",
    "PhbConfig",
    "PhbReceiver",
    "PhbSender",
    "PhbTrack",
    "angle_of_embrace",
]

PHB_LAYOUT: Final = UpdateLayout(
    velocity=False, acceleration=False, angular_velocity=False, timestamp=True
)
DEFAULT_SHARP_ANGLE: Final = math.radians(90.0)  # radians: acute = abrupt turn (spec 000 §2.8)
DEFAULT_STRAIGHT_ANGLE: Final = math.radians(170.0)  # radians: near-straight motion
_HISTORY: Final = 3  # updates kept (spec 000 §2.8: "the last 2-3 updates")


class CurveClass(enum.Enum):
    """Table 2.3 classes of the angle between the last three updates."""

    SHARP = "sharp"
    """Small angle: 1st-degree extrapolation, 2nd-degree convergence."""
    SOFT = "soft"
    """Medium angle: 2nd-degree extrapolation and convergence."""
    STRAIGHT = "straight"
    """Large angle: 2nd-degree extrapolation, 1st-degree convergence."""
    DEGENERATE = "degenerate"
    """Fewer than three updates or a zero-length segment: linear extrapolation and convergence."""


def angle_of_embrace(history: tuple[KinematicState, ...]) -> float | None:
    """Return the angle at the middle of the last three positions (rad; π = straight).

    Args:
        history: Updates, oldest first.

    Returns:
        The angle in [0, π], or ``None`` with fewer than three points or a zero-length segment.
    """
    if len(history) < 3:
        return None
    p1, p2, p3 = history[-3:]
    ax, ay = p1.x - p2.x, p1.y - p2.y
    bx, by = p3.x - p2.x, p3.y - p2.y
    na, nb = math.hypot(ax, ay), math.hypot(bx, by)
    if na == 0.0 or nb == 0.0:
        return None
    cos = max(-1.0, min(1.0, (ax * bx + ay * by) / (na * nb)))
    return math.acos(cos)


@dataclass(frozen=True, slots=True, kw_only=True)
class PhbConfig:
    """A PHB-DR display model (spec 000 §2.8)."""

    time_compensation: bool = True
    """Extrapolate from the send timestamp (always on the wire); False uses the receipt time."""
    tc_cap: float | None = None
    """Largest compensated age (s); ``None`` = uncapped."""
    rotate: bool = True
    """Extrapolate the heading with the angular velocity derived from the last two updates."""
    thresholds: ThresholdConfig = field(default_factory=ThresholdConfig)
    """Sender rules (same px/° thresholds as DIS-DR)."""
    position_time: float = DEFAULT_CONVERGENCE_TIME
    """Position convergence time (s); the convergence point lies this far ahead."""
    heading_time: float = DEFAULT_CONVERGENCE_TIME
    """Orientation convergence time (s)."""
    sharp_angle: float = DEFAULT_SHARP_ANGLE
    """Angles of embrace below this are SHARP (rad)."""
    straight_angle: float = DEFAULT_STRAIGHT_ANGLE
    """Angles of embrace from this on are STRAIGHT (rad)."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        check_time_compensation(self.tc_cap)
        for name in ("position_time", "heading_time"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0 s, got {value}")
        if not 0 <= self.sharp_angle <= self.straight_angle <= math.pi:
            raise ConfigError(
                "angles must satisfy 0 <= sharp_angle <= straight_angle <= π, got "
                f"{self.sharp_angle}, {self.straight_angle}"
            )

    @property
    def payload_size(self) -> int:
        """Return the update payload size (bytes): 21."""
        return PHB_LAYOUT.size

    def classify(self, history: tuple[KinematicState, ...]) -> CurveClass:
        """Return the Table 2.3 class of the last three updates.

        Args:
            history: Updates, oldest first.

        Returns:
            The curve class.
        """
        angle = angle_of_embrace(history)
        if angle is None:
            return CurveClass.DEGENERATE
        if angle < self.sharp_angle:
            return CurveClass.SHARP
        if angle >= self.straight_angle:
            return CurveClass.STRAIGHT
        return CurveClass.SOFT


def _fit(
    points: tuple[KinematicState, ...], tau: float
) -> tuple[float, float, float, float, float, float]:
    """Lagrange polynomial through ``points`` at ``tau``: (x, y, vx, vy, ax, ay)."""
    if len(points) == 1:
        p = points[0]
        return p.x, p.y, 0.0, 0.0, 0.0, 0.0
    if len(points) == 2:
        a, b = points
        span = b.t - a.t
        vx, vy = (b.x - a.x) / span, (b.y - a.y) / span
        return b.x + vx * (tau - b.t), b.y + vy * (tau - b.t), vx, vy, 0.0, 0.0
    x = y = vx = vy = ax = ay = 0.0
    for i, pi in enumerate(points):
        others = [pj.t for j, pj in enumerate(points) if j != i]
        denom = (pi.t - others[0]) * (pi.t - others[1])
        weight = (tau - others[0]) * (tau - others[1]) / denom
        d_weight = (2 * tau - others[0] - others[1]) / denom
        dd_weight = 2.0 / denom
        x, y = x + pi.x * weight, y + pi.y * weight
        vx, vy = vx + pi.x * d_weight, vy + pi.y * d_weight
        ax, ay = ax + pi.x * dd_weight, ay + pi.y * dd_weight
    return x, y, vx, vy, ax, ay


@dataclass(frozen=True, slots=True)
class PhbTrack:
    """The PHB-DR tracking curve in local time (a ``Trajectory``).

    Args:
        points: The updates the curve fits (1-3, oldest first; timestamps in server time).
        anchor: Local time (s) corresponding to the newest update's timestamp.
        switch: Local time (s) of the convergence point; beyond it the track is linear.
        rotate: Extrapolate the heading with the derived angular velocity.
    """

    points: tuple[KinematicState, ...]
    anchor: float
    switch: float
    rotate: bool

    def at(self, t: float) -> DisplayState:
        """Return the state on the track at local time ``t`` (s)."""
        last = self.points[-1]
        tau = last.t + (min(t, self.switch) - self.anchor)
        x, y, vx, vy, ax, ay = _fit(self.points, tau)
        if t > self.switch:
            extra = t - self.switch
            x, y, ax, ay = x + vx * extra, y + vy * extra, 0.0, 0.0
        omega = 0.0
        if self.rotate and len(self.points) >= 2:
            prev = self.points[-2]
            omega = angle_difference(last.heading, prev.heading) / (last.t - prev.t)
        heading = wrap_angle(last.heading + omega * (t - self.anchor))
        return DisplayState(t=t, x=x, y=y, vx=vx, vy=vy, ax=ax, ay=ay, heading=heading)


def _track_points(
    config: PhbConfig, history: tuple[KinematicState, ...]
) -> tuple[CurveClass, tuple[KinematicState, ...]]:
    kind = config.classify(history)
    if kind in (CurveClass.SHARP, CurveClass.DEGENERATE):
        return kind, history[-2:]
    return kind, history[-3:]


class PhbSender(ThresholdSender):
    """PHB-DR sender: ghost = the receiver's tracking curve without latency.

    Args:
        config: The model configuration.
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: PhbConfig, *, entity_id: int = 0) -> None:
        """Create a sender that has sent nothing."""
        super().__init__(
            entity_id=entity_id,
            model=ModelCode.PHB,
            layout=PHB_LAYOUT,
            time_compensation=config.time_compensation,
            thresholds=config.thresholds,
        )
        self.config = config
        self._sent: deque[KinematicState] = deque(maxlen=_HISTORY)

    def ghost(self, t: float) -> DisplayState | None:
        """Return the ghost at sample time ``t`` (s, server time), or ``None`` before a send."""
        if not self._sent:
            return None
        history = tuple(self._sent)
        _, points = _track_points(self.config, history)
        last = history[-1]
        track = PhbTrack(points, last.t, last.t + self.config.position_time, self.config.rotate)
        return track.at(t)

    def _ghost_state(self, t: float) -> KinematicState | None:
        ghost = self.ghost(t)
        if ghost is None:
            return None
        return KinematicState(t=t, x=ghost.x, y=ghost.y, heading=ghost.heading)

    def _record(self, sent: KinematicState) -> None:
        self._sent.append(sent)


class PhbReceiver(Receiver):
    """PHB-DR receiver: fits the last three updates and converges adaptively (Table 2.3).

    Args:
        config: The model configuration (must equal the sender's).
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: PhbConfig, *, entity_id: int = 0) -> None:
        """Create a receiver with nothing received."""
        super().__init__(
            entity_id=entity_id,
            model=ModelCode.PHB,
            layout=PHB_LAYOUT,
            time_compensation=config.time_compensation,
        )
        self.config = config
        self._history: deque[KinematicState] = deque(maxlen=_HISTORY)
        self._linear = create_convergence(
            ConvergenceConfig(
                kind="linear", position_time=config.position_time, heading_time=config.heading_time
            )
        )
        self._quadratic = create_convergence(
            ConvergenceConfig(
                kind="quadratic",
                position_time=config.position_time,
                heading_time=config.heading_time,
            )
        )
        self._active: Convergence = self._linear
        self.curve_class: CurveClass | None = None

    def _apply(
        self, decoded: DecodedUpdate, now: float, server_time_now: float
    ) -> DropReason | None:
        cfg = self.config
        state = decoded.state
        if self._history and state.t <= self._history[-1].t:
            return DropReason.STALE
        self._history.append(state)
        age = compensated_age(
            state.t, server_time_now, time_compensation=cfg.time_compensation, cap=cfg.tc_cap
        )
        kind, points = _track_points(cfg, tuple(self._history))
        self.curve_class = kind
        current = self.display(now)
        track = PhbTrack(points, now - age, now + cfg.position_time, cfg.rotate)
        self._active = (
            self._quadratic if kind in (CurveClass.SHARP, CurveClass.SOFT) else self._linear
        )
        self._active.begin(now, current, track)
        return None

    def display(self, now: float) -> DisplayState | None:
        """Return where to draw the entity at local time ``now`` (s), or ``None`` before data."""
        return self._active.sample(now)
