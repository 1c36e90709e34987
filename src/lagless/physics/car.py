"""A top-down 3-m car on pymunk with per-wheel tyre friction, and the world the server runs.

Implements spec 004 §5.1 (a top-down 2D driving simulation on a rigid-body engine, "approximately
realistic driving", a 3-m car with ``car*`` / ``wheel*`` properties) on pymunk instead of JBox2D
(checklist 8.1 names both). The same ``CarWorld`` runs as the server's logic, locally, and inside
a client that predicts its own car (spec 004 §7.2).

The car is one rigid box; its four wheels are points on it. Per physics step, for each car:

1. The steering fraction ``s`` moves towards its keys' target (+1 LEFT, -1 RIGHT, 0 otherwise) at
   ``wheelSteerSpeed`` per second; the front-wheel angle is ``s`` times the speed-sensitive lock
   ``min(wheelMaxSteerAngle, atan(carWheelbase·wheelSteerLateralAcceleration / v²))``.
2. Tyre friction: each wheel cancels the velocity of its contact point along the wheel's lateral
   axis with one impulse, ``j = -v_lat / (1/m + (r x n)²/I)``, capped at
   ``wheelFriction·m·g/4·dt`` (beyond it the tyre slides: drifts, spins).
3. Drive: UP pushes with ``carEngineForce`` below ``carMaxForwardSpeed``; DOWN brakes with
   ``carBrakeForce`` while rolling forward faster than ``REVERSE_THRESHOLD`` and then reverses
   with ``carReverseForce`` up to ``carMaxBackwardSpeed``; rolling resistance and braking never
   reverse the car within a step; air drag ``-c·|v|·v``.
4. ``space.step(dt)``: integration and collisions (walls, other cars).

Decisions:
    * Keys (``Keys``) are the whole input, as the thesis's key events are; UP and DOWN together
      brake.
    * Headings are the body angle wrapped to ``(-π, π]``, velocities world-frame (m/s).
    * ``restore`` sets a car's full state (pose, velocities, steering, keys) for client-side
      prediction's rewind; it re-indexes the shape so collisions see the new pose.
    * Determinism: the same calls in the same order give bit-identical states
      (``tests/physics/test_car.py::test_deterministic``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

import pymunk

from lagless.errors import LocalProtocolError
from lagless.physics.params import CarParams

__all__ = ["GRAVITY", "Car", "CarState", "CarWorld", "Keys", "Wall"]

GRAVITY: Final = 9.81  # m/s²: the tyre load m·g/4 per wheel
REVERSE_THRESHOLD: Final = 0.5  # m/s: DOWN brakes above this forward speed, reverses below
WALL_RADIUS: Final = 0.5  # m: half-thickness of a wall segment


class Keys(enum.IntFlag):
    """The driving keys held (spec 004 §5.1.1: one input event per key change)."""

    NONE = 0
    UP = 1
    DOWN = 2
    LEFT = 4
    RIGHT = 8


ALL_KEYS: Final = 15  # the four key bits


@dataclass(frozen=True, slots=True, kw_only=True)
class CarState:
    """One car's full simulation state (SI units, world frame, y up)."""

    x: float = 0.0
    """Centre x, m."""
    y: float = 0.0
    """Centre y, m."""
    heading: float = 0.0
    """Orientation, rad in (-π, π]."""
    vx: float = 0.0
    """Velocity x, m/s."""
    vy: float = 0.0
    """Velocity y, m/s."""
    angular_velocity: float = 0.0
    """Turn rate, rad/s (counter-clockwise)."""
    steer: float = 0.0
    """Steering fraction in [-1, 1] (+1 = full left lock)."""
    keys: Keys = Keys.NONE
    """Keys held."""

    @property
    def speed(self) -> float:
        """Return ``|v|``, m/s."""
        return math.hypot(self.vx, self.vy)


@dataclass(frozen=True, slots=True)
class Wall:
    """A static wall segment from ``(x1, y1)`` to ``(x2, y2)`` (m), ``WALL_RADIUS`` thick."""

    x1: float
    y1: float
    x2: float
    y2: float


def _wrap(angle: float) -> float:
    wrapped = math.remainder(angle, 2.0 * math.pi)
    return math.pi if wrapped == -math.pi else wrapped


class Car:
    """One car: a pymunk body and shape, its keys and steering (spec 004 §5.1).

    Args:
        params: The ``car*`` / ``wheel*`` properties.
        state: The starting state.
    """

    def __init__(self, params: CarParams, state: CarState) -> None:
        """Create the body and shape (not yet in a space)."""
        self.params = params
        size = (params.car_length, params.car_width)
        self.body = pymunk.Body(params.car_mass, pymunk.moment_for_box(params.car_mass, size))
        self.shape = pymunk.Poly.create_box(self.body, size)
        self.shape.elasticity = params.car_elasticity
        self.shape.friction = params.car_friction
        half_b, half_t = 0.5 * params.car_wheelbase, 0.5 * params.car_track
        self._wheels: tuple[tuple[float, float, bool], ...] = (
            (half_b, half_t, True),
            (half_b, -half_t, True),
            (-half_b, half_t, False),
            (-half_b, -half_t, False),
        )
        self.keys = Keys.NONE
        self.steer = 0.0
        self.set_state(state)

    def set_state(self, state: CarState) -> None:
        """Set pose, velocities, steering and keys (the shape is re-indexed by ``CarWorld``)."""
        body = self.body
        body.position = (state.x, state.y)
        body.angle = state.heading
        body.velocity = (state.vx, state.vy)
        body.angular_velocity = state.angular_velocity
        self.steer = state.steer
        self.keys = Keys(state.keys)

    def state(self) -> CarState:
        """Return the current state."""
        body = self.body
        pos, vel = body.position, body.velocity
        return CarState(
            x=float(pos.x),
            y=float(pos.y),
            heading=_wrap(float(body.angle)),
            vx=float(vel.x),
            vy=float(vel.y),
            angular_velocity=float(body.angular_velocity),
            steer=self.steer,
            keys=self.keys,
        )

    def steer_angle(self) -> float:
        """Return the front-wheel angle now, rad (steering fraction x speed-sensitive lock)."""
        p = self.params
        vel = self.body.velocity
        v2 = vel.x * vel.x + vel.y * vel.y
        lock = p.wheel_max_steer_angle
        if v2 > 1e-9:
            lock = min(lock, math.atan(p.car_wheelbase * p.wheel_steer_lateral_acceleration / v2))
        return self.steer * lock

    def apply_controls(self, dt: float) -> None:
        """Steer, apply tyre friction impulses and drive/brake/drag forces for one step of ``dt``.

        Args:
            dt: The step, s (> 0).
        """
        p, body, keys = self.params, self.body, self.keys
        target = float(bool(keys & Keys.LEFT)) - float(bool(keys & Keys.RIGHT))
        move = p.wheel_steer_speed * dt
        self.steer += max(-move, min(move, target - self.steer))
        delta = self.steer_angle()
        inv_m, inv_i = 1.0 / body.mass, 1.0 / body.moment
        cap = p.wheel_friction * body.mass * GRAVITY * 0.25 * dt
        angle = body.angle
        c, s = math.cos(angle), math.sin(angle)
        cf, sf = math.cos(angle + delta), math.sin(angle + delta)
        velocity = body.velocity
        vx, vy, w = float(velocity.x), float(velocity.y), float(body.angular_velocity)
        for lx, ly, front in self._wheels:  # impulses at the contact points, one after another
            rx, ry = lx * c - ly * s, lx * s + ly * c  # from the centre of gravity, world frame
            nx, ny = (-sf, cf) if front else (-s, c)  # the wheel's lateral axis
            lateral = (vx - w * ry) * nx + (vy + w * rx) * ny
            rn = rx * ny - ry * nx
            j = max(-cap, min(cap, -lateral / (inv_m + rn * rn * inv_i)))
            vx += j * nx * inv_m
            vy += j * ny * inv_m
            w += j * rn * inv_i
        forward = vx * c + vy * s
        impulse = 0.0  # along the body's forward axis, N·s
        up, down = bool(keys & Keys.UP), bool(keys & Keys.DOWN)
        if down and forward > REVERSE_THRESHOLD:
            impulse -= min(p.car_brake_force * dt, forward / inv_m)
        elif down and forward > -p.car_max_backward_speed:
            impulse -= p.car_reverse_force * dt
        elif up and forward < p.car_max_forward_speed:
            impulse += p.car_engine_force * dt
        rolling = min(p.car_rolling_resistance * dt, abs(forward) / inv_m)
        impulse -= math.copysign(rolling, forward)
        vx += impulse * c * inv_m
        vy += impulse * s * inv_m
        drag = min(1.0, p.car_drag_coefficient * math.hypot(vx, vy) * dt * inv_m)
        body.velocity = (vx - drag * vx, vy - drag * vy)  # never reverses the velocity
        body.angular_velocity = w


class CarWorld:
    """A pymunk space with cars and static walls: the game logic of spec 004 §4.3.

    Args:
        params: The ``car*`` / ``wheel*`` properties of every car.
        walls: Static wall segments.
    """

    def __init__(self, params: CarParams, walls: Iterable[Wall] = ()) -> None:
        """Create an empty world without gravity (top-down)."""
        self.params = params
        self.space = pymunk.Space()
        self.space.gravity = (0.0, 0.0)
        self.walls: tuple[Wall, ...] = tuple(walls)
        for w in self.walls:
            segment = pymunk.Segment(
                self.space.static_body, (w.x1, w.y1), (w.x2, w.y2), WALL_RADIUS
            )
            segment.elasticity = 0.5
            segment.friction = 0.8
            self.space.add(segment)
        self._cars: dict[int, Car] = {}
        self.time = 0.0
        """Simulated time, s (sum of the steps)."""

    @property
    def car_ids(self) -> list[int]:
        """Return the car ids, ascending."""
        return sorted(self._cars)

    def add_car(self, car_id: int, state: CarState) -> Car:
        """Add a car.

        Args:
            car_id: Its id, 0..255 (one byte on the wire).
            state: Its starting state.

        Returns:
            The car.

        Raises:
            LocalProtocolError: The id is out of range or taken.
        """
        if not 0 <= car_id <= 255 or car_id in self._cars:
            raise LocalProtocolError(f"car_id must be a free id in [0, 255], got {car_id}")
        car = Car(self.params, state)
        self.space.add(car.body, car.shape)
        self._cars[car_id] = car
        return car

    def remove_car(self, car_id: int) -> None:
        """Remove a car; unknown ids are ignored."""
        car = self._cars.pop(car_id, None)
        if car is not None:
            self.space.remove(car.body, car.shape)

    def car(self, car_id: int) -> Car:
        """Return a car.

        Raises:
            LocalProtocolError: Unknown id.
        """
        try:
            return self._cars[car_id]
        except KeyError:
            raise LocalProtocolError(f"no car {car_id}") from None

    def set_keys(self, car_id: int, keys: Keys) -> None:
        """Set the keys a car holds from now on."""
        self.car(car_id).keys = Keys(keys)

    def state(self, car_id: int) -> CarState:
        """Return one car's state."""
        return self.car(car_id).state()

    def states(self) -> dict[int, CarState]:
        """Return every car's state, by id."""
        return {cid: car.state() for cid, car in sorted(self._cars.items())}

    def restore(self, car_id: int, state: CarState) -> None:
        """Set one car's full state (client-side prediction's rewind)."""
        car = self.car(car_id)
        car.set_state(state)
        self.space.reindex_shapes_for_body(car.body)

    def step(self, dt: float) -> None:
        """Advance the world by ``dt`` seconds (controls of every car, then ``space.step``).

        Raises:
            LocalProtocolError: ``dt`` is not in (0, 0.1].
        """
        if not (math.isfinite(dt) and 0.0 < dt <= 0.1):
            raise LocalProtocolError(f"dt must be in (0, 0.1] s, got {dt!r}")
        for _, car in sorted(self._cars.items()):
            car.apply_controls(dt)
        self.space.step(dt)
        self.time += dt


def spawn_states(count: int, *, spacing: float = 10.0) -> Sequence[CarState]:
    """Return ``count`` starting states in a column along y, heading +x, at rest.

    Args:
        count: Number of cars.
        spacing: Distance between neighbours, m.
    """
    return [CarState(y=spacing * k) for k in range(count)]
