"""The ram rule: the car that drives into another scores, once per crash."""

from __future__ import annotations

from lagless.demo.rules import COOLDOWN, Ram, RamReferee
from lagless.physics import CarState, CarWorld, PhysicsParams


def _crash(a: CarState, b: CarState, seconds: float = 2.0) -> tuple[RamReferee, list[Ram]]:
    world = CarWorld(PhysicsParams().car)
    world.add_car(3, a)
    world.add_car(9, b)
    referee = RamReferee()
    rams: list[Ram] = []
    dt = 1.0 / 60.0
    for n in range(1, round(seconds / dt) + 1):
        world.step(dt)
        rams += referee.judge(world, n * dt)
    return referee, rams


def test_the_moving_car_scores_against_a_parked_one() -> None:
    referee, rams = _crash(CarState(x=0.0, vx=15.0), CarState(x=12.0, y=0.3))
    assert [(r.rammer, r.victim) for r in rams] == [(3, 9)]
    assert referee.scores == {3: 1}
    assert 0.4 < rams[0].t < 0.9  # about 9 m at 15 m/s


def test_head_on_goes_to_the_faster_car() -> None:
    fast = CarState(x=30.0, heading=3.14159, vx=-18.0)
    referee, rams = _crash(CarState(x=0.0, vx=6.0), fast)
    assert [(r.rammer, r.victim) for r in rams] == [(9, 3)]
    assert referee.scores == {9: 1}


def test_side_by_side_and_slow_touches_score_nothing() -> None:
    _, rams = _crash(CarState(x=0.0, vx=15.0), CarState(x=0.0, y=2.5, vx=15.0))
    assert rams == []
    _, rams = _crash(CarState(x=0.0, vx=2.0), CarState(x=5.0))
    assert rams == []


def test_a_pushing_car_scores_once_per_cooldown_and_leavers_are_forgotten() -> None:
    world = CarWorld(PhysicsParams().car)
    world.add_car(1, CarState(x=0.0, vx=20.0))
    world.add_car(2, CarState(x=3.2))
    referee = RamReferee()
    assert [r.rammer for r in referee.judge(world, 0.0)] == [1]
    assert referee.judge(world, 0.5 * COOLDOWN) == []
    assert [r.rammer for r in referee.judge(world, 1.01 * COOLDOWN)] == [1]
    assert referee.scores == {1: 2}
    referee.forget(1)
    assert referee.scores == {}
    assert [r.rammer for r in referee.judge(world, 1.02 * COOLDOWN)] == [1]  # cooldown forgotten
