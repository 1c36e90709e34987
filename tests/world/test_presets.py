"""Genre preset calibration (spec 000 §3.6, §4.2-§4.5, §7): each documented number is pinned."""

from __future__ import annotations

import dataclasses
import math

import pytest

from lagless.errors import ConfigError
from lagless.world import (
    ENTITY_LENGTH,
    PRESETS,
    PX_PER_M,
    Controls,
    Entity,
    Keys,
    SteeringModel,
    from_px,
    get_preset,
    to_px,
)

TABLE = {
    # name: (model, top speed px/s, turn speed deg/s, auto-brake)
    "sports": (SteeringModel.DIRECT, 50.0, 0.0, False),
    "simulation": (SteeringModel.THRUST, 80.0, 90.0, False),
    "shooter": (SteeringModel.ACTION_3D, 40.0, 180.0, False),
    "arcade": (SteeringModel.DIRECT, 60.0, 0.0, True),
}


def test_scale_maps_the_10px_entity_to_one_metre() -> None:
    assert PX_PER_M == 10.0
    assert to_px(ENTITY_LENGTH) == 10.0
    assert from_px(4.5) == pytest.approx(0.45)


@pytest.mark.parametrize("name", sorted(TABLE))
def test_calibration_table(name: str) -> None:
    preset = get_preset(name)
    model, top_px, turn_deg, brakes = TABLE[name]
    assert preset.model is model
    assert to_px(preset.max_speed) == pytest.approx(top_px)
    assert math.degrees(preset.turn_speed) == pytest.approx(turn_deg)
    assert (preset.brake_force > 0.0) is brakes


def _measured_reversal(name: str) -> float:
    preset = PRESETS[name]
    entity = Entity(preset=preset, vx=preset.max_speed)
    t, dt = 0.0, 0.001
    while entity.vx > -0.9 * preset.max_speed:
        entity.step(dt, Controls(keys=Keys.LEFT))
        t += dt
    return t


def test_sports_reversal_takes_one_second() -> None:
    assert PRESETS["sports"].reversal_time == pytest.approx(1.0, abs=1e-12)
    assert _measured_reversal("sports") == pytest.approx(1.0, abs=0.002)


def test_inertia_order_follows_the_thesis() -> None:
    sports, shooter, arcade, sim = (
        PRESETS[n] for n in ("sports", "shooter", "arcade", "simulation")
    )
    # §4.4 shooter "even lower inertia than sports"; §4.5 arcade "no inertia"; §3.6 sim "high"
    assert arcade.time_constant < shooter.time_constant < sports.time_constant < sim.time_constant
    assert _measured_reversal("arcade") < 2 * 0.04  # "instant reversal": within two frames
    assert shooter.reversal_time < 0.5
    assert sim.time_constant >= 2.0
    # §3.6: turn speed of simulation is half of 3D-Action's
    assert sim.turn_speed == pytest.approx(shooter.turn_speed / 2)


@pytest.mark.parametrize(
    ("field", "value"),
    [("drag", 0.0), ("acceleration", -1.0), ("brake_force", math.nan), ("turn_speed", -0.1)],
)
def test_invalid_preset_fields_raise(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field):
        dataclasses.replace(PRESETS["sports"], **{field: value})


def test_unknown_preset_raises() -> None:
    with pytest.raises(ConfigError, match="sports"):
        get_preset("racing")
    with pytest.raises(ConfigError, match="model"):
        dataclasses.replace(PRESETS["sports"], model="direct")  # type: ignore[arg-type]
