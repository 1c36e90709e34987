"""Exact per-frame integration of the entity's equations of motion (spec 000 §3.4 "Entity").

Implements the ``cycle(dt)`` step of spec 000 §3.4 (acceleration → velocity → position, 2D, no
angular acceleration) with the force model the spec suggests, ``a = A·u - k·v - b·v̂``, where
``A`` is the maximum linear acceleration, ``u`` the unit thrust direction, ``k`` the linear drag
coefficient and ``b`` the braking deceleration (only while not thrusting).

Velocities and positions are complex numbers ``x + iy`` in metres (per second); headings are
radians counter-clockwise from +x.

Decisions:
    * Drag is **linear** in velocity (spec 000 §3.4 "[not in thesis] a natural model"), so the top
      speed is ``A / k`` (``tests/world/test_entity.py::test_thrust_reaches_terminal_speed``).
    * Integration is **exact** for inputs held constant over the frame (zero-order hold), not the
      thesis's explicit Euler. Euler oscillates once ``k·dt > 1`` and diverges at ``k·dt > 2``; the
      Arcade preset has ``k = 40 /s`` with 40 ms frames (``k·dt = 1.6``). Exactness also makes a
      trajectory independent of how a held input is sliced into frames
      (``tests/world/test_entity.py::test_frame_slicing_does_not_change_the_trajectory``).
    * A thrust direction that turns at a constant rate during the frame (Thrust and 3D-Action while
      a turn key is held) is integrated exactly too, with complex exponentials.
    * Braking is a constant-magnitude deceleration against the velocity; it stops the entity and
      never reverses it (``tests/world/test_entity.py::test_braking_stops_in_computed_distance``).
"""

from __future__ import annotations

import cmath
import math
from typing import Final

__all__ = [
    "coast_step",
    "stopping_distance",
    "stopping_time",
    "terminal_speed",
    "thrust_step",
]

_SERIES_LIMIT: Final = 1e-3  # below this |argument|, the kernels switch to their Taylor series


def _phi(x: complex) -> complex:
    """``(e^x - 1) / x``, analytic at 0."""
    if abs(x) < _SERIES_LIMIT:
        return 1 + x / 2 + x * x / 6 + x * x * x / 24
    return (cmath.exp(x) - 1) / x


def _phi_real(x: float) -> float:
    """Real ``(e^x - 1) / x`` without cancellation."""
    if x == 0.0:
        return 1.0
    return math.expm1(x) / x


def _phi2(a: complex, b: complex) -> complex:
    """Divided difference ``(phi(a) - phi(b)) / (a - b)``, analytic where ``a == b``."""
    if abs(a - b) < _SERIES_LIMIT and abs(a) < _SERIES_LIMIT and abs(b) < _SERIES_LIMIT:
        h1 = a + b
        h2 = a * a + a * b + b * b
        h3 = a * a * a + a * a * b + a * b * b + b * b * b
        return 0.5 + h1 / 6 + h2 / 24 + h3 / 120
    if abs(a - b) < _SERIES_LIMIT:
        m = (a + b) / 2
        # phi'(m) = (m e^m - e^m + 1) / m^2, the limit of the divided difference
        return (m * cmath.exp(m) - cmath.exp(m) + 1) / (m * m)
    return (_phi(a) - _phi(b)) / (a - b)


def thrust_step(
    v0: complex, thrust: complex, drag: float, turn_rate: float, dt: float
) -> tuple[complex, complex, complex]:
    """Advance one frame under thrust whose direction turns at a constant rate.

    Solves ``dv/dt = thrust·e^{iωt} - k·v`` exactly over ``[0, dt]``.

    Args:
        v0: Velocity at the start of the frame, m/s (complex ``vx + i·vy``).
        thrust: Thrust acceleration vector at the start of the frame, m/s² (complex).
        drag: Linear drag coefficient ``k`` ≥ 0, 1/s.
        turn_rate: Rate ``ω`` at which the thrust direction turns, rad/s (CCW positive).
        dt: Frame time ≥ 0, s.

    Returns:
        ``(displacement, v1, a1)``: displacement over the frame (m), velocity (m/s) and total
        acceleration ``thrust·e^{iω·dt} - k·v1`` (m/s²) at the end of the frame.

    Example:
        >>> dp, v, a = thrust_step(0j, 2 + 0j, 0.0, 0.0, 1.0)
        >>> (dp, v, a)
        ((1+0j), (2+0j), (2+0j))
    """
    a = 1j * turn_rate * dt
    b = complex(-drag * dt)
    decay = math.exp(-drag * dt)
    v1 = v0 * decay + thrust * decay * dt * _phi(a - b)
    dp = v0 * dt * _phi_real(-drag * dt) + thrust * dt * dt * _phi2(a, b)
    a1 = thrust * cmath.exp(a) - drag * v1
    return dp, v1, a1


def stopping_time(speed: float, drag: float, brake: float) -> float:
    """Time until braking with drag stops an entity; ``inf`` without a brake.

    Args:
        speed: Initial speed ≥ 0, m/s.
        drag: Linear drag coefficient ≥ 0, 1/s.
        brake: Constant braking deceleration ≥ 0, m/s².

    Returns:
        Seconds until the speed reaches 0 (``ln(1 + k·s/b)/k``, or ``s/b`` without drag).

    Example:
        >>> stopping_time(10.0, 0.0, 5.0)
        2.0
    """
    if speed <= 0.0:
        return 0.0
    if brake <= 0.0:
        return math.inf
    if drag == 0.0:
        return speed / brake
    return math.log1p(drag * speed / brake) / drag


def _braked_distance(speed: float, drag: float, brake: float, t: float) -> float:
    """Distance covered in ``t`` seconds of braking with drag (``t`` ≤ the stopping time)."""
    x = -drag * t
    chi = 0.5 + x / 6 + x * x / 24 if abs(x) < _SERIES_LIMIT else (math.expm1(x) - x) / (x * x)
    return speed * t * _phi_real(x) - brake * t * t * chi


def stopping_distance(speed: float, drag: float, brake: float) -> float:
    """Distance an entity travels until braking with drag stops it; ``inf`` if it never does.

    Args:
        speed: Initial speed ≥ 0, m/s.
        drag: Linear drag coefficient ≥ 0, 1/s.
        brake: Constant braking deceleration ≥ 0, m/s².

    Returns:
        Metres: ``s/k - (b/k²)·ln(1 + k·s/b)``; ``s²/(2b)`` without drag; ``s/k`` without a brake
        (reached only asymptotically).

    Example:
        >>> stopping_distance(10.0, 0.0, 5.0)
        10.0
    """
    if speed <= 0.0:
        return 0.0
    if brake <= 0.0:
        return speed / drag if drag > 0.0 else math.inf
    return _braked_distance(speed, drag, brake, stopping_time(speed, drag, brake))


def coast_step(
    v0: complex, drag: float, brake: float, dt: float
) -> tuple[complex, complex, complex]:
    """Advance one frame without thrust: drag plus an optional constant brake.

    The velocity keeps its direction; its magnitude follows ``ds/dt = -b - k·s`` until it reaches
    zero, where the entity stays.

    Args:
        v0: Velocity at the start of the frame, m/s (complex).
        drag: Linear drag coefficient ≥ 0, 1/s.
        brake: Braking deceleration ≥ 0, m/s².
        dt: Frame time ≥ 0, s.

    Returns:
        ``(displacement, v1, a1)`` in m, m/s and m/s² at the end of the frame.

    Example:
        >>> coast_step(4 + 0j, 0.0, 2.0, 5.0)
        ((4+0j), 0j, 0j)
    """
    speed = abs(v0)
    if speed == 0.0:
        return 0j, 0j, 0j
    direction = v0 / speed
    t_stop = stopping_time(speed, drag, brake)
    if t_stop <= dt:
        return direction * _braked_distance(speed, drag, brake, t_stop), 0j, 0j
    distance = _braked_distance(speed, drag, brake, dt)
    speed1 = max(0.0, speed * math.exp(-drag * dt) - brake * dt * _phi_real(-drag * dt))
    return direction * distance, direction * speed1, -direction * (brake + drag * speed1)


def terminal_speed(acceleration: float, drag: float) -> float:
    """Top speed where thrust and linear drag balance (spec 000 §3.4 "drag ... sets the top speed").

    Args:
        acceleration: Maximum linear acceleration ``A`` > 0, m/s².
        drag: Linear drag coefficient ``k`` ≥ 0, 1/s.

    Returns:
        ``A / k`` in m/s (``inf`` without drag).

    Example:
        >>> terminal_speed(15.0, 3.0)
        5.0
    """
    return acceleration / drag if drag > 0.0 else math.inf
