"""The 2D kinematic entity of the Realtime Simulator, stepped with a variable frame time.

Implements spec 000 §3.4 "Entity" (position, orientation, velocity, acceleration, max acceleration,
drag, brake force, turn speed; ``cycle(dt)`` called every loop with the last loop duration; 2D,
no angular acceleration) on top of ``lagless.world.steering`` and ``lagless.world.kinematics``.

Decisions:
    * ``step(dt, controls)`` asks the preset's steering model for a command, then integrates it
      exactly over the frame (zero-order hold of the input; see ``kinematics``)
      (``tests/world/test_entity.py::test_frame_slicing_does_not_change_the_trajectory``).
    * The stored acceleration is the total acceleration (thrust, drag and brake) at the end of the
      frame, the value a 2nd-order dead-reckoning update carries; ``turn_rate`` is the frame's
      rate, 0 for direct steering whose heading snaps (spec 000 §4.2: "don't extrapolate angular
      velocity" with direct steering) (``tests/world/test_entity.py::test_turn_rate``).
    * Headings are wrapped to [-π, π).
    * ``dt`` must be finite and in [0, ``MAX_FRAME_TIME``]; anything else is a caller mistake
      (``LocalProtocolError``) (``tests/world/test_entity.py::test_bad_dt_raises``).
"""

from __future__ import annotations

import cmath
import math
from dataclasses import dataclass
from typing import Final

from lagless.errors import LocalProtocolError
from lagless.world.kinematics import coast_step, thrust_step
from lagless.world.presets import Preset
from lagless.world.steering import Controls, steer

__all__ = ["IDLE", "MAX_FRAME_TIME", "Entity", "EntityState", "wrap_angle"]

MAX_FRAME_TIME: Final = 1.0  # seconds: longest accepted frame (a 1 fps hiccup)
IDLE: Final = Controls()
"""No keys held, no target."""


def wrap_angle(angle: float) -> float:
    """Wrap an angle to [-π, π).

    Args:
        angle: Angle in radians.

    Returns:
        The equivalent angle in [-π, π).

    Example:
        >>> round(wrap_angle(3 * math.pi / 2), 6)
        -1.570796
    """
    return (angle + math.pi) % (2.0 * math.pi) - math.pi


@dataclass(frozen=True, slots=True, kw_only=True)
class EntityState:
    """An immutable snapshot of an entity's kinematic state (SI units, world frame, y up)."""

    x: float = 0.0
    """Position x, m."""
    y: float = 0.0
    """Position y, m."""
    heading: float = 0.0
    """Orientation, rad in [-π, π), counter-clockwise from +x."""
    vx: float = 0.0
    """Velocity x, m/s."""
    vy: float = 0.0
    """Velocity y, m/s."""
    ax: float = 0.0
    """Total acceleration x at the end of the last frame, m/s²."""
    ay: float = 0.0
    """Total acceleration y at the end of the last frame, m/s²."""
    turn_rate: float = 0.0
    """Angular velocity during the last frame, rad/s."""

    @property
    def speed(self) -> float:
        """Magnitude of the velocity, m/s."""
        return math.hypot(self.vx, self.vy)


@dataclass(slots=True, kw_only=True)
class Entity:
    """A locally steered entity: a preset plus mutable kinematic state (spec 000 §3.4)."""

    preset: Preset
    """Steering model and motion parameters."""
    x: float = 0.0
    """Position x, m."""
    y: float = 0.0
    """Position y, m."""
    heading: float = 0.0
    """Orientation, rad in [-π, π)."""
    vx: float = 0.0
    """Velocity x, m/s."""
    vy: float = 0.0
    """Velocity y, m/s."""
    ax: float = 0.0
    """Total acceleration x at the end of the last frame, m/s²."""
    ay: float = 0.0
    """Total acceleration y at the end of the last frame, m/s²."""
    turn_rate: float = 0.0
    """Angular velocity during the last frame, rad/s."""

    @classmethod
    def from_state(cls, preset: Preset, state: EntityState) -> Entity:
        """Create an entity with a preset and a starting state.

        Args:
            preset: Steering model and parameters.
            state: Starting kinematic state.

        Returns:
            A new entity.
        """
        return cls(
            preset=preset,
            x=state.x,
            y=state.y,
            heading=wrap_angle(state.heading),
            vx=state.vx,
            vy=state.vy,
            ax=state.ax,
            ay=state.ay,
            turn_rate=state.turn_rate,
        )

    @property
    def speed(self) -> float:
        """Magnitude of the velocity, m/s."""
        return math.hypot(self.vx, self.vy)

    def state(self) -> EntityState:
        """Return an immutable snapshot of the current state."""
        return EntityState(
            x=self.x,
            y=self.y,
            heading=self.heading,
            vx=self.vx,
            vy=self.vy,
            ax=self.ax,
            ay=self.ay,
            turn_rate=self.turn_rate,
        )

    def step(self, dt: float, controls: Controls = IDLE) -> None:
        """Advance one game-loop frame (``cycle(dt)`` of spec 000 §3.4).

        Args:
            dt: Duration of the last loop, s, in [0, ``MAX_FRAME_TIME``].
            controls: Keys held (and target clicked) during the frame.

        Raises:
            LocalProtocolError: ``dt`` is not finite or out of range.
        """
        if not (math.isfinite(dt) and 0.0 <= dt <= MAX_FRAME_TIME):
            raise LocalProtocolError(f"dt must be in [0, {MAX_FRAME_TIME}] s, got {dt!r}")
        preset = self.preset
        command = steer(
            preset.model,
            controls,
            preset,
            x=self.x,
            y=self.y,
            heading=self.heading,
            speed=self.speed,
            dt=dt,
        )
        v0 = complex(self.vx, self.vy)
        if command.thrusting:
            body = complex(command.forward, command.left)
            thrust = preset.acceleration * body * cmath.exp(1j * command.heading)
            dp, v1, a1 = thrust_step(v0, thrust, preset.drag, command.turn_rate, dt)
        else:
            dp, v1, a1 = coast_step(v0, preset.drag, command.brake, dt)
        self.x += dp.real
        self.y += dp.imag
        self.vx, self.vy = v1.real, v1.imag
        self.ax, self.ay = a1.real, a1.imag
        self.heading = wrap_angle(command.heading + command.turn_rate * dt)
        self.turn_rate = command.turn_rate
