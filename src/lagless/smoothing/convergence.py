"""Convergence: how a displayed entity moves from where it is drawn onto a new dead-reckoned track.

Implements spec 000 §2.7 "Convergence algorithms" and §3.5 (``ConvergenceModel`` with ``Snap`` and
``CmLinear``, convergence time set separately for position and orientation; on reaching the
convergence point, follow the update's DR), spec 004 §3.1.2 (zero-order "snapping" vs blending),
spec 003 §4.4 (cubic-spline convergence after Van Caldwell) and, beyond the theses, projective
velocity blending (Murphy, Game Engine Gems 2). The quadratic path is the PHB-DR convergence path
of spec 000 §2.8.

Every model starts at local time ``t0`` from the displayed state ``c0`` (position, velocity,
heading) and ends on the track at ``t0 + T`` (``T`` = ``position_time``; headings use
``heading_time``), after which it is exactly the track:

* ``snap``: the track at once.
* ``linear``: ``c0 + (track(t0+T) - c0)·s`` with ``s = (t - t0)/T``.
* ``quadratic``: quadratic Bézier ``c0 → c0 + v0·T/2 → track(t0+T)`` (starts with velocity ``v0``).
* ``cubic``: cubic Hermite from ``(c0, v0)`` to ``(track(t0+T), track'(t0+T))``; the Bézier form has
  control points ``c0 + v0·T/3`` and ``P3 - v3·T/3``.
* ``pvb``: ``Q = P + (P' - P)·s`` with ``P = c0 + v_b·(t - t0) + ½·a'·(t - t0)²``,
  ``v_b = v0 + (v' - v0)·s`` and ``P' = track(t)``.
* Headings (linear, quadratic, cubic, pvb): the shorter arc from ``h0`` to ``track(t0+Th)``.

Decisions:

* Cubic control points sit at ``T/3``, not Van Caldwell's ``T``: only then does the displayed
  velocity equal ``v0`` at the start and the track's velocity at the end (C¹); full-``T`` control
  points overshoot (``test_convergence.py::test_cubic_is_c1``).
* A convergence time of 0 is snap for that quantity (``test_convergence.py::test_zero_time_snaps``).
* The convergence point is the track at ``t0 + T``: the K-th-update lookahead of spec 000 §2.7 is
  expressed by choosing ``T = K x expected update interval``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Final, Literal

from lagless.errors import ConfigError
from lagless.smoothing.state import DisplayState, Trajectory, blend_heading

__all__ = [
    "CONVERGENCE_KINDS",
    "Convergence",
    "ConvergenceConfig",
    "ConvergenceKind",
    "create_convergence",
    "hermite",
]

ConvergenceKind = Literal["snap", "linear", "quadratic", "cubic", "pvb"]
CONVERGENCE_KINDS: Final = ("snap", "linear", "quadratic", "cubic", "pvb")
DEFAULT_CONVERGENCE_TIME: Final = 0.1  # seconds: sports/arcade recommendation (spec 000 §4.6)
_TIME_EPSILON: Final = 1e-9  # seconds: a path ending within this of now has ended (float noise)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConvergenceConfig:
    """Which convergence path to use and how long it takes."""

    kind: ConvergenceKind = "linear"
    """One of ``CONVERGENCE_KINDS``."""
    position_time: float = DEFAULT_CONVERGENCE_TIME
    """Position convergence time (s), ≥ 0."""
    heading_time: float = DEFAULT_CONVERGENCE_TIME
    """Orientation convergence time (s), ≥ 0 (spec 000 §3.5: set separately)."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: Unknown kind or a negative / non-finite time.
        """
        if self.kind not in CONVERGENCE_KINDS:
            raise ConfigError(
                f"convergence kind must be one of {CONVERGENCE_KINDS}, got {self.kind!r}"
            )
        for name in ("position_time", "heading_time"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0 s, got {value}")


class Convergence(ABC):
    """A convergence path from the displayed state onto a track.

    Args:
        config: Kind and times.
    """

    def __init__(self, config: ConvergenceConfig) -> None:
        """Create a convergence that has no track yet."""
        self.config = config
        self._track: Trajectory | None = None
        self._t0 = 0.0
        self._c0: DisplayState | None = None
        self._p_end: DisplayState | None = None
        self._h_end = 0.0

    def begin(self, now: float, current: DisplayState | None, track: Trajectory) -> None:
        """Start converging from ``current`` onto ``track`` (``calculateConvergencePath``).

        Args:
            now: Local time (s) the path starts.
            current: What is drawn now; ``None`` (nothing drawn yet) snaps.
            track: The new track to end on.
        """
        self._track = track
        self._t0 = now
        self._c0 = current
        self._p_end = track.at(now + self.config.position_time)
        self._h_end = track.at(now + self.config.heading_time).heading

    def sample(self, now: float) -> DisplayState | None:
        """Return the displayed state at local time ``now`` (s), or ``None`` before ``begin``."""
        track = self._track
        if track is None:
            return None
        on_track = track.at(now)
        c0, end = self._c0, self._p_end
        cfg = self.config
        if c0 is None or end is None:
            return on_track
        dt = now - self._t0
        pos_done = dt >= cfg.position_time - _TIME_EPSILON
        head_done = dt >= cfg.heading_time - _TIME_EPSILON
        if pos_done:
            x, y, vx, vy = on_track.x, on_track.y, on_track.vx, on_track.vy
        else:
            x, y, vx, vy = self._position(dt, c0, end, on_track)
        heading = (
            on_track.heading
            if head_done
            else blend_heading(c0.heading, self._h_end, dt / cfg.heading_time)
        )
        return DisplayState(
            t=now, x=x, y=y, vx=vx, vy=vy, heading=heading, converged=pos_done and head_done
        )

    @abstractmethod
    def _position(
        self, dt: float, c0: DisplayState, end: DisplayState, on_track: DisplayState
    ) -> tuple[float, float, float, float]:
        """Return (x, y, vx, vy) at ``dt`` < ``position_time`` into the path ending at ``end``."""


class _Snap(Convergence):
    def begin(self, now: float, current: DisplayState | None, track: Trajectory) -> None:
        super().begin(now, None, track)

    def _position(
        self, dt: float, c0: DisplayState, end: DisplayState, on_track: DisplayState
    ) -> tuple[float, float, float, float]:
        return on_track.x, on_track.y, on_track.vx, on_track.vy


class _Linear(Convergence):
    def _position(
        self, dt: float, c0: DisplayState, end: DisplayState, on_track: DisplayState
    ) -> tuple[float, float, float, float]:
        span = self.config.position_time
        s = dt / span
        vx, vy = (end.x - c0.x) / span, (end.y - c0.y) / span
        return c0.x + (end.x - c0.x) * s, c0.y + (end.y - c0.y) * s, vx, vy


class _Quadratic(Convergence):
    def _position(
        self, dt: float, c0: DisplayState, end: DisplayState, on_track: DisplayState
    ) -> tuple[float, float, float, float]:
        span = self.config.position_time
        s = dt / span
        cx, cy = c0.x + c0.vx * span / 2, c0.y + c0.vy * span / 2
        u = 1.0 - s
        x = u * u * c0.x + 2 * u * s * cx + s * s * end.x
        y = u * u * c0.y + 2 * u * s * cy + s * s * end.y
        vx = (2 * u * (cx - c0.x) + 2 * s * (end.x - cx)) / span
        vy = (2 * u * (cy - c0.y) + 2 * s * (end.y - cy)) / span
        return x, y, vx, vy


def hermite(
    s: float, delta: float, p0: float, v0: float, p1: float, v1: float
) -> tuple[float, float]:
    """Evaluate a cubic Hermite segment and its time derivative (spec 004 §5.2.1).

    Args:
        s: Curve parameter in [0, 1] (extrapolates outside).
        delta: Segment duration (s), > 0.
        p0: Start value (m).
        v0: Start velocity (m/s).
        p1: End value (m).
        v1: End velocity (m/s).

    Returns:
        ``(p(s), dp/dt(s))`` in m and m/s.
    """
    s2, s3 = s * s, s * s * s
    p = (
        (2 * s3 - 3 * s2 + 1) * p0
        + (s3 - 2 * s2 + s) * delta * v0
        + (-2 * s3 + 3 * s2) * p1
        + (s3 - s2) * delta * v1
    )
    dp = (
        (6 * s2 - 6 * s) * p0
        + (3 * s2 - 4 * s + 1) * delta * v0
        + (-6 * s2 + 6 * s) * p1
        + (3 * s2 - 2 * s) * delta * v1
    ) / delta
    return p, dp


class _Cubic(Convergence):
    def _position(
        self, dt: float, c0: DisplayState, end: DisplayState, on_track: DisplayState
    ) -> tuple[float, float, float, float]:
        span = self.config.position_time
        s = dt / span
        x, vx = hermite(s, span, c0.x, c0.vx, end.x, end.vx)
        y, vy = hermite(s, span, c0.y, c0.vy, end.y, end.vy)
        return x, y, vx, vy


class _ProjectiveVelocityBlending(Convergence):
    def _position(
        self, dt: float, c0: DisplayState, end: DisplayState, on_track: DisplayState
    ) -> tuple[float, float, float, float]:
        span = self.config.position_time
        s = dt / span
        ax, ay = on_track.ax, on_track.ay
        out: list[float] = []
        for p0, v0, pt, vt, a in (
            (c0.x, c0.vx, on_track.x, on_track.vx, ax),
            (c0.y, c0.vy, on_track.y, on_track.vy, ay),
        ):
            vb = v0 + (vt - v0) * s
            projected = p0 + vb * dt + 0.5 * a * dt * dt
            value = projected + (pt - projected) * s
            # d/dt of the blend, with dvb/dt = (vt - v0)/T + a·s (vt itself grows by a).
            d_vb = (vt - v0) / span + a * s
            d_projected = vb + d_vb * dt + a * dt
            d_value = d_projected * (1 - s) + vt * s + (pt - projected) / span
            out.extend((value, d_value))
        return out[0], out[2], out[1], out[3]


_KINDS: Final[dict[str, type[Convergence]]] = {
    "snap": _Snap,
    "linear": _Linear,
    "quadratic": _Quadratic,
    "cubic": _Cubic,
    "pvb": _ProjectiveVelocityBlending,
}


def create_convergence(config: ConvergenceConfig) -> Convergence:
    """Create the convergence model ``config.kind`` names.

    Args:
        config: Kind and times.

    Returns:
        A fresh convergence model.
    """
    return _KINDS[config.kind](config)
