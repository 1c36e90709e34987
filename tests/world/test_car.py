"""Kinematic bicycle car and scripted laps for spec 004's experiments (§5.1, §5.3.1)."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.world import (
    CarConfig,
    CarFrame,
    CarRecording,
    KinematicCar,
    StadiumTrack,
    drive_laps,
    simulate_car,
    stopping_time,
)


def test_full_throttle_approaches_top_speed() -> None:
    cfg = CarConfig()
    car = KinematicCar(config=cfg)
    t = 0.0
    for _ in range(1000):
        car.step(0.02, 1.0, 0.0)
        t += 0.02
        expected = cfg.max_speed * -math.expm1(-cfg.acceleration / cfg.max_speed * t)
        assert car.speed == pytest.approx(expected, rel=1e-9)
    assert car.x == pytest.approx(
        cfg.max_speed * (t + math.expm1(-cfg.acceleration / cfg.max_speed * t) * 4.375), rel=1e-9
    )


def test_brakes_stop_in_computed_distance() -> None:
    cfg = CarConfig()
    drag = cfg.acceleration / cfg.max_speed
    car = KinematicCar(config=cfg, speed=20.0)
    t_stop = stopping_time(20.0, drag, cfg.brake)
    for _ in range(50):
        car.step(t_stop / 50, -1.0, 0.0)
    analytic = 20.0 / drag - cfg.brake / drag**2 * math.log1p(drag * 20.0 / cfg.brake)
    assert car.x == pytest.approx(analytic, rel=1e-9)
    assert abs(car.speed) < 1e-9
    car.step(0.5, 0.0, 0.0)  # coasting never reverses
    assert car.speed == 0.0
    car.step(0.5, -1.0, 0.0)  # a held brake at standstill reverses
    assert car.speed < 0.0


def test_reverse_top_speed_and_throttle_brakes_reverse() -> None:
    cfg = CarConfig()
    car = KinematicCar(config=cfg)
    for _ in range(500):
        car.step(0.02, -1.0, 0.0)
    assert car.speed == pytest.approx(-cfg.max_reverse_speed, rel=1e-6)
    car.step(1.0, 1.0, 0.0)  # brake to zero within the frame, then drive forward
    assert car.speed > 0.0


def test_steering_rate() -> None:
    cfg = CarConfig()
    car = KinematicCar(config=cfg)
    for i in range(1, 30):
        car.step(0.01, 0.0, 1.0)
        assert car.steer_angle == pytest.approx(min(cfg.max_steer_rate * 0.01 * i, cfg.max_steer))
    for _ in range(100):
        car.step(0.01, 0.0, 0.0)
    assert car.steer_angle == 0.0


def test_constant_steering_drives_a_circle() -> None:
    cfg = CarConfig()
    delta = 0.3
    radius = cfg.wheelbase / math.tan(delta)
    car = KinematicCar(config=cfg, speed=10.0, steer_angle=delta)
    for _ in range(300):
        car.step(0.037, 0.3, delta / cfg.max_steer)
        assert math.hypot(car.x, car.y - radius) == pytest.approx(radius, rel=1e-9)
    state = car.state()
    assert state.turn_rate == pytest.approx(car.speed / radius)


def _drive(dt: float) -> tuple[float, float]:
    commands = [(1.0, 0.5), (0.4, -1.0), (0.0, 0.2), (-0.6, 1.0), (1.0, -0.3)] * 4
    car = KinematicCar(speed=8.0)
    for throttle, steer in commands:
        for _ in range(round(0.2 / dt)):
            car.step(dt, throttle, steer)
    return car.x, car.y


def test_halving_dt_converges() -> None:
    reference = _drive(0.0025)
    errors = [math.dist(_drive(dt), reference) for dt in (0.04, 0.02, 0.01)]
    assert errors[0] > errors[1] > errors[2]
    assert errors[0] / errors[1] > 2.5  # second order: about 4
    assert errors[2] < 0.01


def test_state_velocity_and_acceleration() -> None:
    car = KinematicCar(speed=10.0, heading=0.5, steer_angle=0.1)
    car.step(0.02, 0.5, 0.1 / CarConfig().max_steer)
    state = car.state()
    assert state.speed == pytest.approx(car.speed)
    assert math.atan2(state.vy, state.vx) == pytest.approx(car.heading)
    lateral = car.speed**2 * math.tan(car.steer_angle) / CarConfig().wheelbase
    assert math.hypot(state.ax, state.ay) == pytest.approx(math.hypot(car.acceleration, lateral))


@pytest.mark.parametrize(("dt", "throttle", "steer"), [(-1.0, 0, 0), (0.02, 1.5, 0), (0.02, 0, -2)])
def test_bad_commands_raise(dt: float, throttle: float, steer: float) -> None:
    with pytest.raises(LocalProtocolError):
        KinematicCar().step(dt, throttle, steer)


@pytest.mark.parametrize(
    ("field", "value"), [("wheelbase", 4.0), ("max_speed", 0.0), ("coast_deceleration", -1.0)]
)
def test_bad_config_raises(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field):
        dataclasses.replace(CarConfig(), **{field: value})


def test_track_geometry() -> None:
    track = StadiumTrack()
    for s in np.linspace(0.0, track.length, 97, endpoint=False):
        x, y = track.point(float(s))
        back, distance = track.project(x, y)
        assert distance == pytest.approx(0.0, abs=1e-9)
        assert math.cos(2 * math.pi * (back - s) / track.length) == pytest.approx(1.0)
    assert track.curvature(0.0) == 0.0
    assert track.curvature(track.straight / 2 + 1.0) == pytest.approx(1 / track.radius)


def test_laps_are_deterministic_and_realistic() -> None:
    recording = drive_laps(duration=60.0, rng=random.Random(1))
    assert recording == drive_laps(duration=60.0, rng=random.Random(1))
    assert recording != drive_laps(duration=60.0, rng=random.Random(2))
    tr = simulate_car(recording)
    track = StadiumTrack()
    off_line = max(track.project(float(x), float(y))[1] for x, y in zip(tr.x, tr.y, strict=True))
    assert off_line < 1.0
    assert 15.0 <= float(np.mean(tr.speed[tr.t > 10.0])) <= 24.0  # spec 004: about 19-20 m/s
    lateral = np.abs(tr.turn_rate * tr.speed)
    assert lateral.max() < 7.5
    distance = float(np.sum(tr.speed[1:] * np.diff(tr.t)))
    assert distance > 1.5 * track.length


def test_car_csv_round_trip_and_garbage() -> None:
    recording = drive_laps(duration=2.0, rng=random.Random(0))
    assert CarRecording.from_csv(recording.to_csv()) == recording
    with pytest.raises(ConfigError, match=r"line 3: .*throttle"):
        CarRecording.from_csv("dt,throttle,steer\n0.02,0,0\n0.02,2,0\n")
    with pytest.raises(ConfigError, match=r"line 2: .*steer"):
        CarRecording.from_csv("dt,throttle,steer\n0.02,0,x\n")
    with pytest.raises(ConfigError, match="dt"):
        CarFrame(dt=0.0)
