"""Entity integration: analytic cases, frame-time independence, braking, turning (spec 000 §3.4)."""

from __future__ import annotations

import cmath
import math
import random

import pytest

from lagless.errors import LocalProtocolError
from lagless.world import (
    PRESETS,
    Controls,
    Entity,
    Keys,
    coast_step,
    stopping_distance,
    stopping_time,
    thrust_step,
)


def _euler_thrust(v0: complex, thrust: complex, k: float, omega: float, t: float, n: int):
    """Reference: explicit Euler with n tiny steps of dv/dt = thrust·e^{iωt} - k·v."""
    h = t / n
    v, p = v0, 0j
    for i in range(n):
        a = thrust * cmath.exp(1j * omega * i * h) - k * v
        p += v * h + 0.5 * a * h * h
        v += a * h
    return p, v


@pytest.mark.parametrize(
    ("name", "keys"), [("sports", Keys.RIGHT), ("simulation", Keys.UP), ("shooter", Keys.UP)]
)
def test_thrust_reaches_terminal_speed(name: str, keys: Keys) -> None:
    preset = PRESETS[name]
    entity = Entity(preset=preset)
    t = 0.0
    while t < 20.0 * preset.time_constant:
        entity.step(0.04, Controls(keys=keys))
        t += 0.04
        expected = preset.max_speed * -math.expm1(-preset.drag * t)
        assert entity.speed == pytest.approx(expected, rel=1e-9)
    assert entity.speed == pytest.approx(preset.acceleration / preset.drag, rel=1e-6)


def test_direct_at_top_speed_moves_exactly_speed_times_dt() -> None:
    preset = PRESETS["arcade"]
    entity = Entity(preset=preset, vx=preset.max_speed)
    for dt in (0.031, 0.04, 0.047):
        x0 = entity.x
        entity.step(dt, Controls(keys=Keys.RIGHT))
        assert entity.x - x0 == pytest.approx(preset.max_speed * dt, rel=1e-12)
        assert entity.y == 0.0


def _random_keys(rng: random.Random, n: int) -> list[Keys]:
    return [Keys(rng.randrange(64)) for _ in range(n)]


@pytest.mark.parametrize("name", ["sports", "simulation", "shooter", "arcade"])
def test_frame_slicing_does_not_change_the_trajectory(name: str) -> None:
    keys = _random_keys(random.Random(7), 100)
    finals = []
    for pieces in (1, 2, 5):
        entity = Entity(preset=PRESETS[name])
        for k in keys:
            for _ in range(pieces):
                entity.step(0.04 / pieces, Controls(keys=k))
        finals.append(entity.state())
    for other in finals[1:]:
        assert other.x == pytest.approx(finals[0].x, abs=1e-9)
        assert other.y == pytest.approx(finals[0].y, abs=1e-9)
        assert other.vx == pytest.approx(finals[0].vx, abs=1e-9)
        assert other.heading == pytest.approx(finals[0].heading, abs=1e-9)


@pytest.mark.parametrize("case", range(6))
def test_thrust_step_matches_fine_euler(case: int) -> None:
    rng = random.Random(case)
    v0 = complex(rng.uniform(-5, 5), rng.uniform(-5, 5))
    thrust = complex(rng.uniform(-20, 20), rng.uniform(-20, 20))
    k = rng.choice((0.0, 0.5, 3.0, 40.0))
    omega = rng.choice((0.0, math.pi / 2, -math.pi))
    dp, v1, a1 = thrust_step(v0, thrust, k, omega, 0.5)
    errors = []
    for n in (2000, 4000):
        p_ref, v_ref = _euler_thrust(v0, thrust, k, omega, 0.5, n)
        errors.append(abs(p_ref - dp) + abs(v_ref - v1))
    assert errors[1] < 1e-2
    assert errors[1] < max(errors[0] * 0.6, 1e-9)  # the reference converges to the exact step
    assert a1 == pytest.approx(thrust * cmath.exp(1j * omega * 0.5) - k * v1)


@pytest.mark.parametrize(("speed", "drag", "brake"), [(6.0, 40.0, 240.0), (5.0, 3.0, 15.0)])
def test_braking_stops_in_computed_distance(speed: float, drag: float, brake: float) -> None:
    analytic = speed / drag - brake / drag**2 * math.log(1.0 + drag * speed / brake)
    assert stopping_distance(speed, drag, brake) == pytest.approx(analytic, rel=1e-12)
    assert stopping_time(speed, drag, brake) == pytest.approx(
        math.log(1.0 + drag * speed / brake) / drag, rel=1e-12
    )
    v, travelled = complex(0.0, speed), 0j
    for _ in range(1000):
        dp, v, _ = coast_step(v, drag, brake, 0.001)
        travelled += dp
    assert v == 0j
    assert travelled.real == 0.0
    assert travelled.imag == pytest.approx(analytic, rel=1e-9)


def test_braking_without_drag_is_uniform_deceleration() -> None:
    assert stopping_distance(10.0, 0.0, 5.0) == pytest.approx(10.0)
    assert stopping_time(10.0, 0.0, 5.0) == pytest.approx(2.0)
    assert stopping_distance(4.0, 2.0, 0.0) == pytest.approx(2.0)
    assert math.isinf(stopping_time(4.0, 2.0, 0.0))


def test_arcade_auto_brake_stops_within_one_frame() -> None:
    preset = PRESETS["arcade"]
    entity = Entity(preset=preset, vx=preset.max_speed)
    entity.step(0.04)
    assert entity.speed == 0.0
    assert entity.x == pytest.approx(stopping_distance(preset.max_speed, preset.drag, 240.0))


def test_sports_coasts_without_auto_brake() -> None:
    preset = PRESETS["sports"]
    entity = Entity(preset=preset, vx=preset.max_speed)
    entity.step(0.5)
    assert entity.speed == pytest.approx(preset.max_speed * math.exp(-preset.drag * 0.5))
    assert entity.ax == pytest.approx(-preset.drag * entity.speed)


@pytest.mark.parametrize(("name", "deg_per_s"), [("simulation", 90.0), ("shooter", 180.0)])
def test_turn_rate(name: str, deg_per_s: float) -> None:
    entity = Entity(preset=PRESETS[name])
    for _ in range(10):
        entity.step(0.05, Controls(keys=Keys.LEFT))
    assert entity.turn_rate == pytest.approx(math.radians(deg_per_s))
    assert entity.heading == pytest.approx(math.radians(deg_per_s) * 0.5)
    entity.step(0.05, Controls(keys=Keys.RIGHT))
    assert entity.turn_rate == pytest.approx(-math.radians(deg_per_s))
    entity.step(0.05)
    assert entity.turn_rate == 0.0


def test_direct_heading_snaps_and_reports_no_turn_rate() -> None:
    entity = Entity(preset=PRESETS["sports"])
    entity.step(0.04, Controls(keys=Keys.DOWN))
    assert entity.heading == pytest.approx(-math.pi / 2)
    assert entity.turn_rate == 0.0


def test_thrust_while_turning_curves_the_velocity() -> None:
    preset = PRESETS["simulation"]
    entity = Entity(preset=preset, vx=preset.max_speed)
    for _ in range(50):
        entity.step(0.04, Controls(keys=Keys.UP | Keys.LEFT))
    assert entity.heading == pytest.approx(math.pi)
    assert entity.vy > 1.0


@pytest.mark.parametrize("dt", [math.nan, -0.01, 1.5, math.inf])
def test_bad_dt_raises(dt: float) -> None:
    entity = Entity(preset=PRESETS["sports"])
    with pytest.raises(LocalProtocolError, match="dt"):
        entity.step(dt)
    assert entity.state() == Entity(preset=PRESETS["sports"]).state()
