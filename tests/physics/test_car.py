"""The pymunk car (spec 004 §5.1): driving sanity, tyre friction, collisions, determinism."""

from __future__ import annotations

import math

import msgspec
import pytest

from lagless.errors import LocalProtocolError
from lagless.physics import CarParams, CarState, CarWorld, Keys, Wall

DT = 0.01


def run(world: CarWorld, seconds: float) -> None:
    for _ in range(round(seconds / DT)):
        world.step(DT)


def world_with_car(state: CarState | None = None, params: CarParams | None = None) -> CarWorld:
    world = CarWorld(params or CarParams())
    world.add_car(0, state or CarState())
    return world


def test_accelerates_to_top_speed_along_its_heading() -> None:
    world = world_with_car(CarState(heading=0.5))
    world.set_keys(0, Keys.UP)
    run(world, 1.0)
    one = world.state(0).speed
    assert 5.0 < one < 9.0  # 9000 N on 1200 kg: about 7.5 m/s² minus rolling and drag
    run(world, 9.0)
    s = world.state(0)
    assert s.speed == pytest.approx(CarParams().car_max_forward_speed, abs=0.5)
    assert math.atan2(s.vy, s.vx) == pytest.approx(0.5, abs=1e-6)  # straight: no drift
    assert s.heading == pytest.approx(0.5, abs=1e-9)


def test_steering_left_turns_counter_clockwise_within_grip() -> None:
    world = world_with_car(CarState(vx=20.0))
    world.set_keys(0, Keys.UP | Keys.LEFT)
    run(world, 2.0)
    s = world.state(0)
    assert s.steer == 1.0
    assert s.angular_velocity > 0.2
    assert s.heading > 0.3
    lateral = s.angular_velocity * s.speed  # v·ω: the centripetal acceleration
    assert lateral <= CarParams().wheel_steer_lateral_acceleration + 0.5
    world.set_keys(0, Keys.UP | Keys.RIGHT)
    run(world, 2.0)
    assert world.state(0).angular_velocity < -0.2


def test_brakes_then_reverses() -> None:
    world = world_with_car(CarState(vx=20.0))
    world.set_keys(0, Keys.DOWN)
    run(world, 1.0)
    s = world.state(0)
    assert 0.0 < s.vx < 10.0  # 14000 N: about 11.7 m/s² plus drag and rolling resistance
    run(world, 1.5)
    assert world.state(0).vx < 0.0  # stopped, then backwards
    run(world, 10.0)
    assert world.state(0).vx == pytest.approx(-CarParams().car_max_backward_speed, abs=0.3)


def test_tyres_kill_sideways_motion() -> None:
    world = world_with_car(CarState(vy=5.0))  # pushed sideways, heading +x
    run(world, 0.3)
    assert 1.0 < world.state(0).vy < 1.8  # sliding: the tyres decelerate it at μ·g = 11.8 m/s²
    run(world, 0.3)
    assert abs(world.state(0).vy) < 0.01
    slippery = msgspec.structs.replace(CarParams(), wheel_friction=0.01)
    ice = world_with_car(CarState(vy=5.0), slippery)
    run(ice, 0.6)
    assert ice.state(0).vy > 4.5  # the impulse cap μ·m·g/4·dt lets it slide


def test_wall_stops_the_car() -> None:
    world = CarWorld(CarParams(), walls=(Wall(20.0, -10.0, 20.0, 10.0),))
    world.add_car(0, CarState())
    world.set_keys(0, Keys.UP)
    run(world, 5.0)
    s = world.state(0)
    assert s.x + 1.5 < 20.0 - 0.5 + 0.2  # the bumper stays at the wall (0.2 m slop)
    assert s.x > 15.0


def test_deterministic() -> None:
    def drive() -> CarState:
        world = CarWorld(CarParams(), walls=(Wall(-50.0, 30.0, 80.0, 30.0),))
        world.add_car(0, CarState())
        world.add_car(1, CarState(x=40.0, heading=math.pi))
        for keys in (Keys.UP, Keys.UP | Keys.LEFT, Keys.DOWN | Keys.RIGHT, Keys.UP):
            world.set_keys(0, keys)
            world.set_keys(1, Keys(keys ^ Keys.LEFT))
            run(world, 1.5)
        return world.state(0)

    assert drive() == drive()


def test_restore_round_trip() -> None:
    world = world_with_car()
    world.set_keys(0, Keys.UP | Keys.LEFT)
    run(world, 1.0)
    saved = world.state(0)
    run(world, 1.0)
    world.restore(0, saved)
    assert world.state(0) == saved


def test_bad_calls_raise() -> None:
    world = world_with_car()
    with pytest.raises(LocalProtocolError, match="car_id"):
        world.add_car(0, CarState())
    with pytest.raises(LocalProtocolError, match="no car 5"):
        world.state(5)
    with pytest.raises(LocalProtocolError, match="dt"):
        world.step(0.0)
    world.remove_car(0)
    world.remove_car(0)  # unknown ids are ignored
    assert world.car_ids == []
