"""Kinematic samples, displayed states and the dead-reckoning formulas every display model shares.

Implements spec 000 §2.7 "DR models" (``D(t)`` of order 0, 1 and 2, orientation extrapolated from
the angular velocity or held) and spec 004 §3.1.2 (Gl. 3.1-3.3). 2D only, as both theses are.

Decisions:

* Headings are radians, wrapped to ``(-π, π]`` wherever two headings are compared or blended;
  blends take the shorter arc (``test_state.py::test_blend_heading_takes_short_arc``).
* Order 0 holds the heading too; orders 1 and 2 extrapolate it with the angular velocity only when
  ``rotate`` is true (spec 000 §2.7 advice for direct steering: set it to the last update's
  heading) (``test_state.py::test_extrapolate_orders``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Protocol

from lagless.errors import ConfigError

__all__ = [
    "DR_ORDERS",
    "DisplayState",
    "KinematicState",
    "Trajectory",
    "angle_difference",
    "blend_heading",
    "extrapolate",
    "wrap_angle",
]

DR_ORDERS: Final = (0, 1, 2)  # the dead-reckoning orders of spec 000 §2.7 (D(t) of order 0..2)
_TWO_PI: Final = 2.0 * math.pi


def wrap_angle(angle: float) -> float:
    """Wrap an angle to ``(-π, π]``.

    Args:
        angle: Radians, any finite value.

    Returns:
        The equivalent angle in ``(-π, π]`` (radians).
    """
    wrapped = math.remainder(angle, _TWO_PI)
    return math.pi if wrapped == -math.pi else wrapped


def angle_difference(a: float, b: float) -> float:
    """Return the signed shortest rotation from ``b`` to ``a``.

    Args:
        a: Target heading (radians).
        b: Start heading (radians).

    Returns:
        ``wrap(a - b)`` in ``(-π, π]`` (radians).
    """
    return wrap_angle(a - b)


def blend_heading(start: float, end: float, fraction: float) -> float:
    """Blend two headings along the shorter arc.

    Args:
        start: Heading at ``fraction = 0`` (radians).
        end: Heading at ``fraction = 1`` (radians).
        fraction: Blend weight, normally in ``[0, 1]``.

    Returns:
        The blended heading, wrapped to ``(-π, π]`` (radians).
    """
    return wrap_angle(start + angle_difference(end, start) * fraction)


@dataclass(frozen=True, slots=True, kw_only=True)
class KinematicState:
    """The true state of an entity at one instant (the sender's sample, spec 000 §3.4 "Entity").

    Every field is SI; ``t`` is in synchronised server time wherever it goes on the wire.
    """

    t: float = 0.0
    """Sample time (s)."""
    x: float = 0.0
    """Position x (m)."""
    y: float = 0.0
    """Position y (m)."""
    vx: float = 0.0
    """Velocity x (m/s)."""
    vy: float = 0.0
    """Velocity y (m/s)."""
    ax: float = 0.0
    """Acceleration x (m/s²)."""
    ay: float = 0.0
    """Acceleration y (m/s²)."""
    heading: float = 0.0
    """Orientation (rad), counter-clockwise from +x."""
    angular_velocity: float = 0.0
    """Turn rate (rad/s); the theses have no angular acceleration (spec 000 §3.4)."""

    @property
    def speed(self) -> float:
        """Return the speed ``|v|`` (m/s)."""
        return math.hypot(self.vx, self.vy)


@dataclass(frozen=True, slots=True, kw_only=True)
class DisplayState:
    """Where a receiver draws a remote entity in one render frame."""

    t: float
    """Local time of the frame (s)."""
    x: float
    """Displayed position x (m)."""
    y: float
    """Displayed position y (m)."""
    vx: float = 0.0
    """Displayed velocity x (m/s): the derivative of the displayed path."""
    vy: float = 0.0
    """Displayed velocity y (m/s)."""
    ax: float = 0.0
    """Acceleration x of the displayed path (m/s²) where the model knows it, else 0."""
    ay: float = 0.0
    """Acceleration y of the displayed path (m/s²) where the model knows it, else 0."""
    heading: float = 0.0
    """Displayed orientation (rad)."""
    converged: bool = True
    """False while a convergence or correction is still under way (spec 000 §3.5: red point)."""


class Trajectory(Protocol):
    """A path a receiver can follow: the dead-reckoned track of the newest update."""

    def at(self, t: float) -> DisplayState:
        """Return the state on the path at local time ``t`` (s)."""
        ...


def extrapolate(state: KinematicState, dt: float, *, order: int, rotate: bool) -> KinematicState:
    """Dead-reckon ``state`` forward by ``dt`` (spec 000 §2.7, spec 004 Gl. 3.1-3.3).

    Args:
        state: The reference sample (the last update).
        dt: Time since the sample (s); may be negative (backwards evaluation).
        order: 0 (hold), 1 (constant velocity) or 2 (constant acceleration).
        rotate: Extrapolate the heading with the angular velocity (orders 1 and 2 only).

    Returns:
        The sample at ``state.t + dt``. Velocity is unchanged for order 1, ``v + a·dt`` for order
        2 and zero for order 0; the acceleration is kept for order 2 and zero otherwise.

    Raises:
        ConfigError: ``order`` is not 0, 1 or 2.
    """
    if order == 0:
        return KinematicState(t=state.t + dt, x=state.x, y=state.y, heading=state.heading)
    heading = state.heading + state.angular_velocity * dt if rotate else state.heading
    omega = state.angular_velocity if rotate else 0.0
    if order == 1:
        return KinematicState(
            t=state.t + dt,
            x=state.x + state.vx * dt,
            y=state.y + state.vy * dt,
            vx=state.vx,
            vy=state.vy,
            heading=wrap_angle(heading),
            angular_velocity=omega,
        )
    if order == 2:
        half = 0.5 * dt * dt
        return KinematicState(
            t=state.t + dt,
            x=state.x + state.vx * dt + state.ax * half,
            y=state.y + state.vy * dt + state.ay * half,
            vx=state.vx + state.ax * dt,
            vy=state.vy + state.ay * dt,
            ax=state.ax,
            ay=state.ay,
            heading=wrap_angle(heading),
            angular_velocity=omega,
        )
    raise ConfigError(f"order must be one of {DR_ORDERS}, got {order}")
