from __future__ import annotations

import math

import pytest

from lagless.errors import ConfigError
from lagless.lab.realtime.configs import (
    CAR_CONFIGS,
    CONDITIONS,
    GENRE_SETUPS,
    ModelConfig,
    sweep_models,
    tuning_grid,
)
from lagless.smoothing import DisConfig, HermiteConfig, InterpolationConfig


def test_recommended_configs() -> None:
    sports = GENRE_SETUPS["sports"].recommended["umts"]
    config = sports.create(latency=0.34).config
    assert isinstance(config, DisConfig)
    assert (config.order, config.time_compensation, config.tc_cap) == (1, True, 0.2)
    assert config.thresholds.position == pytest.approx(0.1)
    assert config.thresholds.heading == pytest.approx(math.radians(45.0))
    assert config.convergence.kind == "linear"
    assert config.convergence.position_time == pytest.approx(0.1)
    sim = GENRE_SETUPS["simulation"].recommended
    assert (sim["gprs"].tc_cap, sim["gprs"].position_time) == (0.6, 0.25)
    assert (sim["umts"].tc_cap, sim["umts"].position_time, sim["umts"].heading_time) == (
        0.4,
        0.3,
        0.1,
    )
    arcade = GENRE_SETUPS["arcade"].recommended["umts"]
    assert (arcade.tc_cap, arcade.heading_time) == (0.1, 0.001)
    assert arcade.label == "dis1-linear100-tc100-1/1"
    assert arcade.threshold == "1/1"
    assert arcade.tc_cap_ms == 100.0


def test_interpolation_delta_follows_latency() -> None:
    model = ModelConfig(model="interpolation").create(latency=0.4)
    assert isinstance(model.config, InterpolationConfig)
    assert model.config.delta_time == pytest.approx(0.7)
    assert model.config.update_interval == pytest.approx(0.25)


def test_sweep_and_tuning_labels_are_unique() -> None:
    for setup in GENRE_SETUPS.values():
        sweep = sweep_models(setup)
        assert len(sweep) == 21
        assert len({m.label for m in sweep}) == 21
        grid = tuning_grid(setup)
        assert len({m.label for m in grid}) == len(grid)
        assert any(m.model == "hermite" for m in grid)


def test_conditions_follow_the_thesis() -> None:
    umts = CONDITIONS["umts"].link()
    assert (umts.latency, umts.loss) == (0.34, 0.01)
    assert umts.jitter.amount == pytest.approx(0.34 * 0.07)
    assert CONDITIONS["gprs"].latency == 0.8


def test_car_configs() -> None:
    names = [c.name for c in CAR_CONFIGS]
    assert names == [
        "snap",
        "delay100",
        "delay150",
        "delay200",
        "rtt0.5",
        "rtt0.75",
        "dr-v",
        "dr-a",
        "dr-a+rtt0.15",
        "dr-a+rtt0.3",
    ]
    snap = CAR_CONFIGS[0].create(extrapolation_time=1.0, correction_time=0.1).config
    assert isinstance(snap, HermiteConfig)
    assert snap.extrapolation_time == 0.0
    dr = CAR_CONFIGS[8].create(extrapolation_time=1.0, correction_time=0.1).config
    assert isinstance(dr, HermiteConfig)
    assert (dr.dr_order, dr.rtt_factor, dr.extrapolation_time) == (2, 0.15, 1.0)


def test_bad_model_name() -> None:
    with pytest.raises(ConfigError, match="model must be one of"):
        ModelConfig(model="dis3")
