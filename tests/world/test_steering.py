"""Steering models of spec 000 §3.4: Direct, Thrust, 3D-Action, Point & Click, and the BRAKE key."""

from __future__ import annotations

import dataclasses
import math

import pytest

from lagless.errors import ConfigError
from lagless.world import (
    ARRIVAL_RADIUS,
    PRESETS,
    Controls,
    Entity,
    Keys,
    SteeringModel,
)

EIGHT = [
    (Keys.RIGHT, 0),
    (Keys.UP | Keys.RIGHT, 45),
    (Keys.UP, 90),
    (Keys.UP | Keys.LEFT, 135),
    (Keys.LEFT, 180),
    (Keys.DOWN | Keys.LEFT, -135),
    (Keys.DOWN, -90),
    (Keys.DOWN | Keys.RIGHT, -45),
    (Keys.UP | Keys.DOWN | Keys.RIGHT, 0),
    (Keys.LEFT | Keys.RIGHT | Keys.DOWN, -90),
]


@pytest.mark.parametrize(("keys", "deg"), EIGHT)
def test_direct_8_directions(keys: Keys, deg: float) -> None:
    entity = Entity(preset=PRESETS["sports"])
    entity.step(0.04, Controls(keys=keys))
    heading = math.radians(deg)
    assert math.cos(entity.heading) == pytest.approx(math.cos(heading), abs=1e-12)
    assert math.sin(entity.heading) == pytest.approx(math.sin(heading), abs=1e-12)
    direction = math.atan2(entity.vy, entity.vx)
    assert math.cos(direction - entity.heading) == pytest.approx(1.0, abs=1e-12)
    assert entity.speed > 0.0


@pytest.mark.parametrize("keys", [Keys.UP | Keys.DOWN, Keys.LEFT | Keys.RIGHT, Keys.STRAFE_LEFT])
def test_direct_opposite_or_unknown_keys_do_not_move(keys: Keys) -> None:
    entity = Entity(preset=PRESETS["sports"], heading=1.0)
    entity.step(0.04, Controls(keys=keys))
    assert entity.speed == 0.0
    assert entity.heading == 1.0


@pytest.mark.parametrize("keys", [Keys.DOWN, Keys.STRAFE_LEFT, Keys.STRAFE_RIGHT])
def test_thrust_ignores_down_and_strafe(keys: Keys) -> None:
    entity = Entity(preset=PRESETS["simulation"], heading=0.3)
    entity.step(0.5, Controls(keys=keys))
    assert entity.speed == 0.0
    entity.step(0.5, Controls(keys=keys | Keys.UP))
    assert math.atan2(entity.vy, entity.vx) == pytest.approx(0.3)


def test_3d_action_diagonal_is_normalised() -> None:
    preset = PRESETS["shooter"]
    entity = Entity(preset=preset, heading=0.2)
    for _ in range(100):
        entity.step(0.04, Controls(keys=Keys.UP | Keys.STRAFE_LEFT))
    assert entity.speed == pytest.approx(preset.max_speed, rel=1e-6)
    assert math.atan2(entity.vy, entity.vx) == pytest.approx(0.2 + math.pi / 4)


@pytest.mark.parametrize(
    ("keys", "offset"),
    [(Keys.DOWN, math.pi), (Keys.STRAFE_LEFT, math.pi / 2), (Keys.STRAFE_RIGHT, -math.pi / 2)],
)
def test_3d_action_reverse_and_strafe(keys: Keys, offset: float) -> None:
    preset = PRESETS["shooter"]
    entity = Entity(preset=preset, heading=0.5)
    for _ in range(50):
        entity.step(0.04, Controls(keys=keys))
    direction = math.atan2(entity.vy, entity.vx)
    assert math.cos(direction - 0.5 - offset) == pytest.approx(1.0)
    assert entity.heading == pytest.approx(0.5)
    assert entity.speed == pytest.approx(preset.max_speed, rel=1e-4)


def test_brake_key_overrides_thrust() -> None:
    preset = PRESETS["shooter"]
    entity = Entity(preset=preset, vx=3.0)
    entity.step(0.04, Controls(keys=Keys.UP | Keys.BRAKE | Keys.LEFT))
    assert entity.heading == pytest.approx(math.pi * 0.04)
    sports = Entity(preset=PRESETS["sports"], vx=3.0)
    sports.step(1.0, Controls(keys=Keys.RIGHT | Keys.BRAKE))
    assert sports.speed == 0.0
    decay = math.exp(-preset.drag * 0.04)
    braked = 3.0 * decay - preset.acceleration * (1.0 - decay) / preset.drag
    assert entity.speed == pytest.approx(braked, rel=1e-12)


@pytest.mark.parametrize("name", ["sports", "arcade", "shooter"])
def test_point_and_click_arrives_and_stops(name: str) -> None:
    preset = dataclasses.replace(PRESETS[name], model=SteeringModel.POINT_AND_CLICK)
    entity = Entity(preset=preset)
    target = (6.0, -4.0)
    for _ in range(400):
        entity.step(0.04, Controls(target=target))
    assert math.hypot(entity.x - target[0], entity.y - target[1]) < 3 * ARRIVAL_RADIUS
    assert entity.speed < 0.05
    entity.step(0.04, Controls())
    assert entity.speed < 0.05


def test_point_and_click_heads_for_the_target() -> None:
    preset = dataclasses.replace(PRESETS["sports"], model=SteeringModel.POINT_AND_CLICK)
    entity = Entity(preset=preset)
    entity.step(0.04, Controls(target=(-3.0, 3.0)))
    assert entity.heading == pytest.approx(3 * math.pi / 4)
    assert entity.vx < 0.0 < entity.vy


@pytest.mark.parametrize(
    "kwargs", [{"keys": Keys(128)}, {"target": (math.nan, 0.0)}, {"target": (1.0, math.inf)}]
)
def test_bad_controls_raise(kwargs: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        Controls(**kwargs)  # type: ignore[arg-type]
