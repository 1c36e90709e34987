"""Display models by name: every built-in round-trips sender -> receiver with its payload size."""

from __future__ import annotations

import math

import pytest

from lagless.errors import ConfigError
from lagless.smoothing import (
    ConvergenceConfig,
    DisConfig,
    DisplayModel,
    KinematicState,
    create_display_model,
    display_model_names,
    register_display_model,
)

SIZES = {
    "dis0": 13,
    "dis1": 25,
    "dis2": 33,
    "phb": 21,
    "interpolation": 21,
    "hermite": 29,
    "x4": 33,
}


def test_names() -> None:
    assert set(SIZES) <= set(display_model_names())


@pytest.mark.parametrize("name", sorted(SIZES))
def test_round_trip_every_model(name: str) -> None:
    model = create_display_model(name)
    assert model.payload_size == SIZES[name]
    sender, receiver = model.create_sender(entity_id=9), model.create_receiver(entity_id=9)
    assert receiver.display(0.0) is None
    for k in range(30):
        t = k * 0.05
        update = sender.update(t, KinematicState(t=t, x=t, y=0.5 * t, vx=1.0, vy=0.5))
        if update is not None:
            assert len(update.payload) == SIZES[name]
            assert receiver.process_update(update.payload, t, t)
    shown = receiver.display(1.5)
    assert shown is not None
    assert math.isfinite(shown.x)
    assert receiver.statistics().applied >= 1
    # The init payload carries the last state; a fresh receiver starts from it.
    fresh = model.create_receiver(entity_id=9)
    assert fresh.process_init(sender.create_init(), 1.5, 1.5)
    started = fresh.display(1.5)
    assert started is not None
    assert started.y == pytest.approx(0.5 * 1.45, abs=0.1)


def test_tc_and_shortcuts() -> None:
    model = create_display_model(
        "dis1",
        time_compensation=True,
        tc_cap=0.2,
        convergence="cubic",
        position_time=0.3,
        heading_time=0.05,
        position_threshold=0.5,
        heartbeat=1.0,
    )
    assert model.payload_size == 33
    assert isinstance(model.config, DisConfig)
    assert model.config.convergence == ConvergenceConfig(
        kind="cubic", position_time=0.3, heading_time=0.05
    )
    assert model.config.thresholds.position == 0.5
    assert model.config.thresholds.heartbeat == 1.0
    assert create_display_model("dis2", time_compensation=True).payload_size == 41


def test_unknown_name_and_param() -> None:
    with pytest.raises(ConfigError, match="display model must be one of"):
        create_display_model("teleport")
    with pytest.raises(ConfigError, match="unknown parameter 'bogus'"):
        create_display_model("hermite", bogus=1)
    with pytest.raises(ConfigError, match="order is fixed"):
        create_display_model("dis1", order=2)
    with pytest.raises(ConfigError, match="convergence kind"):
        create_display_model("dis1", convergence="warp")


def test_register() -> None:
    def factory(**params: object) -> DisplayModel:
        return create_display_model("dis0", **params)

    register_display_model("test-hold", factory)
    assert create_display_model("test-hold").payload_size == 13
    with pytest.raises(ConfigError, match="already registered"):
        register_display_model("test-hold", factory)
    register_display_model("test-hold", factory, replace=True)
