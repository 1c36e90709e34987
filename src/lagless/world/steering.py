"""Steering models: turn the held keys (or a clicked target) into thrust, braking and turning.

Implements spec 000 §3.4 "Steering models" (``SteeringModelDirect``, ``SteeringModelThrust``,
``SteeringModel3dAction``; Point & Click as commands) and the key state of §3.6 "Record Mode" (a
bit array of pressed keys per frame).

World frame: x right, y **up** (SI, counter-clockwise headings); a screen with y down flips y at
the edge. Body frame: ``forward`` along the heading, ``left`` 90° counter-clockwise from it.

Decisions:
    * Direct: UP/DOWN/LEFT/RIGHT are world directions; opposite keys cancel, so digital input gives
      at most 8 directions. A held direction snaps the heading and thrusts along it at full
      acceleration (spec 000 §3.4: "instantly sets the orientation and accelerates"), so velocity
      follows with the preset's inertia
      (``tests/world/test_steering.py::test_direct_8_directions``).
    * Thrust: LEFT/RIGHT turn at ``turn_speed``; UP thrusts along the heading; there is no reverse
      (DOWN and the strafe keys do nothing), as in the thesis where reverse is a 3D-Action addition
      (``tests/world/test_steering.py::test_thrust_ignores_down_and_strafe``).
    * 3D-Action: Thrust plus DOWN (reverse) and STRAFE_LEFT/STRAFE_RIGHT; the body-frame direction
      is normalised, so a diagonal (forward + strafe) is not faster
      (``tests/world/test_steering.py::test_3d_action_diagonal_is_normalised``).
    * Point & Click (not in the thesis's simulator; spec 000 §3.4 "sending commands suffices"): the
      entity snaps its heading to the target and thrusts straight at it, and brakes with
      ``max(brake_force, acceleration)`` once its stopping distance (plus one frame of travel)
      reaches the remaining distance; inside ``ARRIVAL_RADIUS`` it only brakes. No path finding
      (``tests/world/test_steering.py::test_point_and_click_arrives_and_stops``).
    * Auto-brake (``brake_force``) acts whenever the entity is not thrusting (spec 000 §3.4 "when
      not accelerating"); turning alone is not thrusting.
    * BRAKE (not in the thesis) overrides thrust in every model (turning still works) and
      decelerates with ``max(brake_force, acceleration)``: a player can brake as hard as they can
      accelerate (``tests/world/test_steering.py::test_brake_key_overrides_thrust``).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Final, Protocol

from lagless.errors import ConfigError
from lagless.world.kinematics import stopping_distance

__all__ = [
    "ALL_KEYS",
    "ARRIVAL_RADIUS",
    "Controls",
    "Keys",
    "Steering",
    "SteeringModel",
    "SteeringParams",
    "steer",
]

ARRIVAL_RADIUS: Final = 0.05  # metres (half a pixel at PX_PER_M = 10): Point & Click "arrived"


class Keys(enum.IntFlag):
    """Bit array of held keys, one frame of spec 000 §3.6 "Record Mode"."""

    NONE = 0
    UP = 1
    DOWN = 2
    LEFT = 4
    RIGHT = 8
    STRAFE_LEFT = 16
    STRAFE_RIGHT = 32
    BRAKE = 64


ALL_KEYS: Final = Keys(127)
"""Every defined key bit; a bitmask with other bits set is invalid."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Controls:
    """The player's input for one frame: held keys and an optional Point & Click target."""

    keys: Keys = Keys.NONE
    """Held keys (``Keys`` bitmask)."""
    target: tuple[float, float] | None = None
    """Point & Click target ``(x, y)`` in metres, or ``None``; read only by Point & Click."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        if int(self.keys) & ~int(ALL_KEYS):
            raise ConfigError(f"keys must be a Keys bitmask in [0, 127], got {int(self.keys)}")
        if self.target is not None and (
            len(self.target) != 2 or not all(math.isfinite(c) for c in self.target)
        ):
            raise ConfigError(f"target must be None or two finite metres, got {self.target!r}")


class SteeringModel(enum.StrEnum):
    """The steering models of spec 000 §3.4."""

    DIRECT = "direct"
    """``SteeringModelDirect``: keys are world directions; the heading snaps."""
    THRUST = "thrust"
    """``SteeringModelThrust``: turn at the turn speed, thrust along the heading."""
    ACTION_3D = "3d-action"
    """``SteeringModel3dAction``: Thrust plus reverse and strafing."""
    POINT_AND_CLICK = "point-and-click"
    """Move straight towards a clicked target and stop there (commands, no path finding)."""


class SteeringParams(Protocol):
    """The entity parameters a steering model reads (``Preset`` provides them)."""

    @property
    def acceleration(self) -> float:
        """Maximum linear acceleration while a direction is held, m/s²."""
        ...

    @property
    def drag(self) -> float:
        """Linear drag coefficient, 1/s."""
        ...

    @property
    def brake_force(self) -> float:
        """Automatic braking deceleration while not thrusting, m/s²."""
        ...

    @property
    def turn_speed(self) -> float:
        """Constant turn rate while a turn key is held, rad/s."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Steering:
    """What a steering model asks of the entity for one frame (body frame, held constant)."""

    heading: float
    """Heading at the start of the frame, after any snap, rad."""
    turn_rate: float = 0.0
    """Constant turn rate over the frame, rad/s (CCW positive)."""
    forward: float = 0.0
    """Thrust direction along the heading (unit vector component, dimensionless)."""
    left: float = 0.0
    """Thrust direction 90° CCW from the heading (unit vector component, dimensionless)."""
    brake: float = 0.0
    """Braking deceleration while not thrusting, m/s²."""

    @property
    def thrusting(self) -> bool:
        """Whether the frame applies thrust."""
        return self.forward != 0.0 or self.left != 0.0


def _axis(keys: Keys, plus: Keys, minus: Keys) -> int:
    return (1 if keys & plus else 0) - (1 if keys & minus else 0)


def _active_brake(params: SteeringParams) -> float:
    return max(params.brake_force, params.acceleration)


def _direct(keys: Keys, heading: float, params: SteeringParams) -> Steering:
    dx = _axis(keys, Keys.RIGHT, Keys.LEFT)
    dy = _axis(keys, Keys.UP, Keys.DOWN)
    if dx == 0 and dy == 0:
        return Steering(heading=heading, brake=params.brake_force)
    return Steering(heading=math.atan2(dy, dx), forward=1.0)


def _turning(keys: Keys, heading: float, params: SteeringParams, *, reverse: bool) -> Steering:
    turn_rate = _axis(keys, Keys.LEFT, Keys.RIGHT) * params.turn_speed
    forward = float(_axis(keys, Keys.UP, Keys.DOWN) if reverse else _axis(keys, Keys.UP, Keys.NONE))
    left = float(_axis(keys, Keys.STRAFE_LEFT, Keys.STRAFE_RIGHT)) if reverse else 0.0
    norm = math.hypot(forward, left)
    if norm == 0.0:
        return Steering(heading=heading, turn_rate=turn_rate, brake=params.brake_force)
    return Steering(heading=heading, turn_rate=turn_rate, forward=forward / norm, left=left / norm)


def _point_and_click(
    controls: Controls,
    params: SteeringParams,
    *,
    x: float,
    y: float,
    heading: float,
    speed: float,
    dt: float,
) -> Steering:
    if controls.target is None:
        return Steering(heading=heading, brake=params.brake_force)
    dx = controls.target[0] - x
    dy = controls.target[1] - y
    distance = math.hypot(dx, dy)
    brake = _active_brake(params)
    if distance <= ARRIVAL_RADIUS:
        return Steering(heading=heading, brake=brake)
    if distance <= stopping_distance(speed, params.drag, brake) + speed * dt:
        return Steering(heading=heading, brake=brake)
    return Steering(heading=math.atan2(dy, dx), forward=1.0)


def steer(
    model: SteeringModel,
    controls: Controls,
    params: SteeringParams,
    *,
    x: float,
    y: float,
    heading: float,
    speed: float,
    dt: float,
) -> Steering:
    """Map one frame's controls to a ``Steering`` command (spec 000 §3.4).

    Args:
        model: The steering model.
        controls: Held keys and optional target for this frame.
        params: Entity parameters (acceleration m/s², drag 1/s, brake_force m/s², turn_speed rad/s).
        x: Entity position x at the start of the frame, m.
        y: Entity position y at the start of the frame, m.
        heading: Entity heading at the start of the frame, rad.
        speed: Entity speed at the start of the frame, m/s (Point & Click braking decision).
        dt: Frame time, s (Point & Click looks one frame ahead).

    Returns:
        The frame's heading, turn rate, body-frame thrust direction and braking deceleration.
    """
    keys = controls.keys
    braking = bool(keys & Keys.BRAKE)
    if model is SteeringModel.DIRECT:
        if braking:
            return Steering(heading=heading, brake=_active_brake(params))
        return _direct(keys, heading, params)
    if model is SteeringModel.POINT_AND_CLICK:
        if braking:
            return Steering(heading=heading, brake=_active_brake(params))
        return _point_and_click(controls, params, x=x, y=y, heading=heading, speed=speed, dt=dt)
    steering = _turning(keys, heading, params, reverse=model is SteeringModel.ACTION_3D)
    if braking:
        # BRAKE cancels thrust but not turning
        return Steering(heading=heading, turn_rate=steering.turn_rate, brake=_active_brake(params))
    return steering
