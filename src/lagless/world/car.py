"""A kinematic bicycle-model car and a scripted lap driver for spec 004's experiments.

Implements the test vehicle of spec 004 §5.1 (a top-down car about 3 m long, driven by recorded
inputs, §5.3.1) without a rigid-body engine: position, heading, signed speed, steering angle,
throttle/brake and a steering-rate limit. ``drive_laps`` plays the human sample drive: laps of a
stadium track at about 20 m/s on average (spec 004 §6.1 inference: "200 ms delay gives just under
4 m, so about 19-20 m/s").

Decisions:
    * The pose is the midpoint of the rear axle; ``dθ/ds = tan(δ)/L`` with wheelbase ``L``.
    * Longitudinal model, exact per frame (``lagless.world.kinematics``): throttle ``u > 0``
      drives with ``a = u·A - (A/v_max)·v`` (top speed ``u·v_max``); ``u < 0`` while rolling
      forward brakes with ``|u|·brake`` and then reverses with top speed ``|u|·v_reverse``;
      ``u = 0`` coasts with drag and ``coast_deceleration``. Braking never reverses the car
      within a frame unless the command asks for the other direction
      (``tests/world/test_car.py::test_brakes_stop_in_computed_distance``).
    * Steering: the command ``s ∈ [-1, 1]`` sets the target angle ``s·max_steer``; the wheel angle
      moves towards it at ``max_steer_rate`` (``tests/world/test_car.py::test_steering_rate``).
    * The pose follows a circular arc of the frame's exact distance with the curvature of the mean
      wheel angle, so a constant wheel angle is exact and a changing one is second order in ``dt``
      (``tests/world/test_car.py::test_halving_dt_converges``).
    * Acceleration is longitudinal plus centripetal ``v²·κ``; ``turn_rate`` is ``v·κ``.
    * Car recordings are CSV ``dt,throttle,steer`` (seconds, dimensionless commands), like the key
      recordings of ``lagless.world.recording``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError, LocalProtocolError
from lagless.world.entity import MAX_FRAME_TIME, EntityState, wrap_angle
from lagless.world.kinematics import coast_step, stopping_time, thrust_step
from lagless.world.recording import data_rows, load_recording_text, parse_float
from lagless.world.trajectory import Trajectory

__all__ = [
    "CAR_CSV_HEADER",
    "CarConfig",
    "CarFrame",
    "CarRecording",
    "KinematicCar",
    "StadiumTrack",
    "drive_laps",
    "load_car_recording",
    "simulate_car",
]

CAR_CSV_HEADER: Final = "dt,throttle,steer"
CAR_FRAME_TIME: Final = 0.02  # seconds: spec 004 §5.3.2 samples paths at 50 Hz


def _check(name: str, value: float, *, low: float, high: float = math.inf) -> None:
    if not (math.isfinite(value) and low < value <= high):
        raise ConfigError(f"{name} must be in ({low}, {high}], got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CarConfig:
    """Parameters of the kinematic car (spec 004 §5.1 ``car*`` properties; values are ours)."""

    length: float = 3.0
    """Body length, m (spec 004 §6.1.1: "a whole vehicle length (= three meters)")."""
    wheelbase: float = 2.0
    """Distance between the axles ``L``, m."""
    max_speed: float = 35.0
    """Top speed at full throttle, m/s (126 km/h)."""
    max_reverse_speed: float = 5.0
    """Top speed in reverse, m/s."""
    acceleration: float = 8.0
    """Acceleration at full throttle from standstill, m/s²."""
    brake: float = 8.0
    """Deceleration at full brake, m/s²."""
    coast_deceleration: float = 0.5
    """Rolling resistance and engine braking with no throttle, m/s²."""
    max_steer: float = 0.6
    """Largest front-wheel angle, rad (≈ 34°)."""
    max_steer_rate: float = 1.5
    """Fastest change of the wheel angle, rad/s."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        _check("length", self.length, low=0.0)
        _check("wheelbase", self.wheelbase, low=0.0, high=self.length)
        _check("max_speed", self.max_speed, low=0.0)
        _check("max_reverse_speed", self.max_reverse_speed, low=0.0)
        _check("acceleration", self.acceleration, low=0.0)
        _check("brake", self.brake, low=0.0)
        if not (math.isfinite(self.coast_deceleration) and self.coast_deceleration >= 0.0):
            raise ConfigError(
                f"coast_deceleration must be a finite number >= 0, got {self.coast_deceleration!r}"
            )
        _check("max_steer", self.max_steer, low=0.0, high=1.5)
        _check("max_steer_rate", self.max_steer_rate, low=0.0)


def _check_command(name: str, value: float) -> None:
    if not (math.isfinite(value) and -1.0 <= value <= 1.0):
        raise LocalProtocolError(f"{name} must be in [-1, 1], got {value!r}")


def _sinc(x: float) -> float:
    return 1.0 - x * x / 6.0 if abs(x) < 1e-4 else math.sin(x) / x


@dataclass(slots=True, kw_only=True)
class KinematicCar:
    """A kinematic bicycle-model car with mutable state (SI units, world frame, y up)."""

    config: CarConfig = CarConfig()
    """Vehicle parameters."""
    x: float = 0.0
    """Rear-axle midpoint x, m."""
    y: float = 0.0
    """Rear-axle midpoint y, m."""
    heading: float = 0.0
    """Orientation, rad in [-π, π)."""
    speed: float = 0.0
    """Signed speed along the heading, m/s (negative = reversing)."""
    steer_angle: float = 0.0
    """Front-wheel angle, rad (positive turns left)."""
    acceleration: float = 0.0
    """Longitudinal acceleration at the end of the last frame, m/s²."""

    def _longitudinal(self, u: float, dt: float) -> tuple[float, float, float]:
        """Exact distance, end speed and end acceleration over ``dt`` for throttle ``u``."""
        cfg = self.config
        v = self.speed
        drag = cfg.acceleration / cfg.max_speed
        if u == 0.0:
            dp, v1, a1 = coast_step(complex(v), drag, cfg.coast_deceleration, dt)
            return dp.real, v1.real, a1.real
        if u * v < 0.0:
            brake = abs(u) * cfg.brake
            t_stop = stopping_time(abs(v), drag, brake)
            dp, v1, a1 = coast_step(complex(v), drag, brake, min(dt, t_stop))
            if t_stop >= dt:
                return dp.real, v1.real, a1.real
            self.speed = 0.0
            rest, v2, a2 = self._longitudinal(u, dt - t_stop)
            return dp.real + rest, v2, a2
        if u > 0.0:
            dp, v1, a1 = thrust_step(complex(v), complex(u * cfg.acceleration), drag, 0.0, dt)
        else:
            reverse_drag = cfg.acceleration / cfg.max_reverse_speed
            dp, v1, a1 = thrust_step(
                complex(v), complex(u * cfg.acceleration), reverse_drag, 0.0, dt
            )
        return dp.real, v1.real, a1.real

    def step(self, dt: float, throttle: float, steer: float) -> None:
        """Advance one frame with throttle and steering commands held constant.

        Args:
            dt: Frame time, s, in [0, ``MAX_FRAME_TIME``].
            throttle: ``+1`` full throttle, ``-1`` full brake / reverse, dimensionless.
            steer: ``+1`` full left, ``-1`` full right (target wheel angle fraction).

        Raises:
            LocalProtocolError: ``dt`` or a command is out of range.
        """
        if not (math.isfinite(dt) and 0.0 <= dt <= MAX_FRAME_TIME):
            raise LocalProtocolError(f"dt must be in [0, {MAX_FRAME_TIME}] s, got {dt!r}")
        _check_command("throttle", throttle)
        _check_command("steer", steer)
        cfg = self.config
        target = steer * cfg.max_steer
        limit = cfg.max_steer_rate * dt
        delta0 = self.steer_angle
        delta1 = delta0 + max(-limit, min(limit, target - delta0))
        distance, v1, a1 = self._longitudinal(throttle, dt)
        curvature = math.tan(0.5 * (delta0 + delta1)) / cfg.wheelbase
        turn = distance * curvature
        chord = distance * _sinc(0.5 * turn)
        mid = self.heading + 0.5 * turn
        self.x += chord * math.cos(mid)
        self.y += chord * math.sin(mid)
        self.heading = wrap_angle(self.heading + turn)
        self.speed = v1
        self.acceleration = a1
        self.steer_angle = delta1

    def state(self) -> EntityState:
        """Return the car's state as an ``EntityState`` (world-frame velocity and acceleration)."""
        c, s = math.cos(self.heading), math.sin(self.heading)
        curvature = math.tan(self.steer_angle) / self.config.wheelbase
        lateral = self.speed * self.speed * curvature
        return EntityState(
            x=self.x,
            y=self.y,
            heading=self.heading,
            vx=self.speed * c,
            vy=self.speed * s,
            ax=self.acceleration * c - lateral * s,
            ay=self.acceleration * s + lateral * c,
            turn_rate=self.speed * curvature,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CarFrame:
    """One recorded frame of car input."""

    dt: float
    """Frame time, s, in (0, ``MAX_FRAME_TIME``]."""
    throttle: float = 0.0
    """Throttle (+) or brake/reverse (-) command in [-1, 1]."""
    steer: float = 0.0
    """Steering command in [-1, 1], positive = left."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        if not (math.isfinite(self.dt) and 0.0 < self.dt <= MAX_FRAME_TIME):
            raise ConfigError(f"dt must be in (0, {MAX_FRAME_TIME}] s, got {self.dt!r}")
        for name in ("throttle", "steer"):
            value = getattr(self, name)
            if not (math.isfinite(value) and -1.0 <= value <= 1.0):
                raise ConfigError(f"{name} must be in [-1, 1], got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CarRecording:
    """A recorded car drive: frames of (dt, throttle, steer) (spec 004 §5.3.1 input replay)."""

    frames: tuple[CarFrame, ...]
    """The frames in play order."""

    def __len__(self) -> int:
        """Number of frames."""
        return len(self.frames)

    @property
    def duration(self) -> float:
        """Total recorded time, s."""
        return math.fsum(f.dt for f in self.frames)

    def to_csv(self) -> str:
        """Serialise as CSV ``dt,throttle,steer`` (floats written with ``repr``)."""
        lines = ["# lagless.world car recording: dt [s], throttle, steer in [-1, 1]"]
        lines.append(CAR_CSV_HEADER)
        lines.extend(f"{f.dt!r},{f.throttle!r},{f.steer!r}" for f in self.frames)
        return "\n".join(lines) + "\n"

    @classmethod
    def from_csv(cls, text: str) -> CarRecording:
        """Parse CSV ``dt,throttle,steer``.

        Args:
            text: CSV text.

        Returns:
            The recording.

        Raises:
            ConfigError: A malformed line; the message names the line and the field.
        """
        frames = []
        for lineno, fields in data_rows(text, CAR_CSV_HEADER, 3):
            values = [
                parse_float(lineno, n, f)
                for n, f in zip(("dt", "throttle", "steer"), fields, strict=True)
            ]
            try:
                frames.append(CarFrame(dt=values[0], throttle=values[1], steer=values[2]))
            except ConfigError as exc:
                raise ConfigError(f"recording line {lineno}: {exc}") from None
        return cls(frames=tuple(frames))


def load_car_recording(name: str) -> CarRecording:
    """Load a shipped car recording (``car-laps``).

    Args:
        name: A name from ``lagless.world.recording.available_recordings()``.

    Returns:
        The recording.

    Raises:
        ConfigError: Unknown name or malformed file.
    """
    return CarRecording.from_csv(load_recording_text(name))


def simulate_car(
    recording: CarRecording,
    *,
    config: CarConfig | None = None,
    start: KinematicCar | None = None,
) -> Trajectory:
    """Replay a car recording into a ground-truth trajectory.

    Args:
        recording: Frames of (dt, throttle, steer).
        config: Vehicle parameters (default ``CarConfig()``); ignored when ``start`` is given.
        start: A car to copy the starting state from (default: at rest at the origin, heading 0).

    Returns:
        ``len(recording) + 1`` samples: the start state, then the state after every frame.
    """
    if start is None:
        car = KinematicCar(config=CarConfig() if config is None else config)
    else:
        car = KinematicCar(
            config=start.config,
            x=start.x,
            y=start.y,
            heading=start.heading,
            speed=start.speed,
            steer_angle=start.steer_angle,
            acceleration=start.acceleration,
        )
    times = [0.0]
    states = [car.state()]
    t = 0.0
    for frame in recording.frames:
        car.step(frame.dt, frame.throttle, frame.steer)
        t += frame.dt
        times.append(t)
        states.append(car.state())
    return Trajectory.from_states(times, states)


@dataclass(frozen=True, slots=True, kw_only=True)
class StadiumTrack:
    """A closed stadium-shaped track (two straights, two half circles), driven counter-clockwise.

    Arc length 0 is the origin, in the middle of the bottom straight, heading +x.
    """

    straight: float = 200.0
    """Length of each straight, m."""
    radius: float = 50.0
    """Radius of the half circles (centre line), m."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        _check("straight", self.straight, low=0.0)
        _check("radius", self.radius, low=0.0)

    @property
    def length(self) -> float:
        """Lap length, m."""
        return 2.0 * self.straight + 2.0 * math.pi * self.radius

    def point(self, s: float) -> tuple[float, float]:
        """Centre-line point at arc length ``s`` (any real; wraps per lap), m."""
        half, r = 0.5 * self.straight, self.radius
        s %= self.length
        if s < half:
            return s, 0.0
        s -= half
        if s < math.pi * r:
            a = s / r - 0.5 * math.pi
            return half + r * math.cos(a), r + r * math.sin(a)
        s -= math.pi * r
        if s < self.straight:
            return half - s, 2.0 * r
        s -= self.straight
        if s < math.pi * r:
            a = s / r + 0.5 * math.pi
            return -half + r * math.cos(a), r + r * math.sin(a)
        return -half + (s - math.pi * r), 0.0

    def curvature(self, s: float) -> float:
        """Centre-line curvature at arc length ``s``, 1/m (0 on the straights)."""
        half, r = 0.5 * self.straight, self.radius
        s %= self.length
        on_right = half <= s < half + math.pi * r
        on_left = half + math.pi * r + self.straight <= s < self.length - half
        return 1.0 / r if on_right or on_left else 0.0

    def project(self, x: float, y: float) -> tuple[float, float]:
        """Nearest centre-line point of ``(x, y)``: arc length in [0, length) and distance, m."""
        half, r = 0.5 * self.straight, self.radius
        if x > half:
            a = min(0.5 * math.pi, max(-0.5 * math.pi, math.atan2(y - r, x - half)))
            s = half + r * (a + 0.5 * math.pi)
        elif x < -half:
            a = math.atan2(y - r, x + half)
            a = a if a > 0.0 else a + 2.0 * math.pi
            a = min(1.5 * math.pi, max(0.5 * math.pi, a))
            s = half + math.pi * r + self.straight + r * (a - 0.5 * math.pi)
        elif y < r:
            s = x % self.length
        else:
            s = half + math.pi * r + (half - x)
        px, py = self.point(s)
        return s % self.length, math.hypot(x - px, y - py)


_LOOKAHEAD_MIN: Final = 6.0  # metres: pure-pursuit look-ahead at low speed
_LOOKAHEAD_TIME: Final = 0.5  # seconds: look-ahead grows with speed
_PLAN_DECELERATION: Final = 5.0  # m/s²: how hard the driver plans to brake for a bend
_PLAN_HORIZON: Final = 100.0  # metres: how far ahead the driver looks for bends
_SPEED_GAIN: Final = 0.8  # throttle per m/s of speed error


def drive_laps(
    *,
    duration: float,
    rng: random.Random,
    frame_time: float = CAR_FRAME_TIME,
    config: CarConfig | None = None,
    track: StadiumTrack | None = None,
) -> CarRecording:
    """Record a scripted driver lapping a stadium track (spec 004 §5.3.1 sample drive).

    Pure pursuit on the centre line for steering; per lap the driver draws a straight-line speed
    (24-30 m/s) and a cornering lateral acceleration (4.5-6.5 m/s²), and now and then lifts off
    on a straight as if behind traffic. Commands are quantised (throttle 0.05, steer 0.01).

    Args:
        duration: Recording length, s, in (0, 3600].
        rng: The only source of randomness.
        frame_time: Constant frame time, s (default 20 ms, spec 004's 50 Hz).
        config: Vehicle parameters (default ``CarConfig()``).
        track: The track (default ``StadiumTrack()``); the car starts at its origin, at rest.

    Returns:
        The recording (replay it with ``simulate_car`` from the default start).

    Raises:
        ConfigError: Bad duration or frame time.
    """
    _check("duration", duration, low=0.0, high=3600.0)
    _check("frame_time", frame_time, low=0.0, high=MAX_FRAME_TIME)
    cfg = CarConfig() if config is None else config
    road = StadiumTrack() if track is None else track
    car = KinematicCar(config=cfg)
    frames: list[CarFrame] = []
    progress, lap = 0.0, -1
    cruise, lateral, lift_until, lift_speed = 0.0, 0.0, -1.0, 0.0
    elapsed = 0.0
    while elapsed < duration:
        s, _ = road.project(car.x, car.y)
        progress += (s - progress + 0.5 * road.length) % road.length - 0.5 * road.length
        if int(progress // road.length) != lap:
            lap = int(progress // road.length)
            cruise, lateral = rng.uniform(24.0, 30.0), rng.uniform(4.5, 6.5)
        if elapsed >= lift_until and road.curvature(progress) == 0.0 and rng.random() < 0.002:
            lift_until, lift_speed = elapsed + rng.uniform(1.0, 3.0), rng.uniform(8.0, 15.0)
        wanted = lift_speed if elapsed < lift_until else cruise
        for ahead in range(0, int(_PLAN_HORIZON) + 1, 5):
            k = road.curvature(progress + ahead)
            if k > 0.0:
                bend = math.sqrt(lateral / k)
                wanted = min(wanted, math.sqrt(bend * bend + 2.0 * _PLAN_DECELERATION * ahead))
        throttle = round(max(-1.0, min(1.0, _SPEED_GAIN * (wanted - car.speed))) * 20.0) / 20.0
        lookahead = max(_LOOKAHEAD_MIN, _LOOKAHEAD_TIME * car.speed)
        tx, ty = road.point(progress + lookahead)
        dx, dy = tx - car.x, ty - car.y
        local_y = -math.sin(car.heading) * dx + math.cos(car.heading) * dy
        delta = math.atan(2.0 * local_y * cfg.wheelbase / (dx * dx + dy * dy))
        steer = round(max(-1.0, min(1.0, delta / cfg.max_steer)) * 100.0) / 100.0
        frame = CarFrame(dt=frame_time, throttle=throttle + 0.0, steer=steer + 0.0)
        frames.append(frame)
        car.step(frame_time, frame.throttle, frame.steer)
        elapsed += frame_time
    return CarRecording(frames=tuple(frames))
