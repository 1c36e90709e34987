"""Adaptive policy: model, thresholds and delay from RTT, jitter, loss and a payload budget."""

from __future__ import annotations

import math

import pytest

from lagless.errors import ConfigError
from lagless.smoothing import (
    AdaptiveConfig,
    AdaptivePolicy,
    DisConfig,
    HermiteConfig,
    InterpolationConfig,
    LinkConditions,
    choose_display_model,
)

RICH = AdaptiveConfig(budget=2000.0)


def test_low_rtt_picks_spec004_hermite() -> None:
    choice = choose_display_model(LinkConditions(rtt=0.08, jitter=0.02), RICH)
    assert choice.name == "hermite"
    model = choice.create()
    assert isinstance(model.config, HermiteConfig)
    assert model.config.rtt_factor == pytest.approx(0.15)
    assert model.config.render_delay == pytest.approx(0.02)
    assert choice.expected_rate == pytest.approx(20 * 29)


def test_loss_or_budget_excludes_hermite() -> None:
    lossy = choose_display_model(LinkConditions(rtt=0.08, loss=0.05), RICH)
    poor = choose_display_model(LinkConditions(rtt=0.08), AdaptiveConfig(budget=300.0))
    assert lossy.name == poor.name == "dis1"


@pytest.mark.parametrize(("inertia", "cap", "conv"), [(0.0, 0.1, 0.1), (1.0, 0.6, 0.3)])
def test_umts_dis1_scaled_by_inertia(inertia: float, cap: float, conv: float) -> None:
    cfg = AdaptiveConfig(budget=2000.0, inertia=inertia)
    choice = choose_display_model(LinkConditions(rtt=0.34, jitter=0.024, loss=0.01), cfg)
    model = choice.create()
    assert isinstance(model.config, DisConfig)
    assert model.config.order == 1
    assert model.config.time_compensation
    assert model.config.tc_cap == pytest.approx(cap)
    assert model.config.convergence.kind == "linear"
    assert model.config.convergence.position_time == pytest.approx(conv)
    assert model.config.thresholds.position == pytest.approx(0.1)
    assert model.config.thresholds.heading == pytest.approx(math.radians(1))


def test_high_rtt_snap_without_tc() -> None:
    agile = choose_display_model(LinkConditions(rtt=0.6), AdaptiveConfig(budget=2000, inertia=0.2))
    inert = choose_display_model(LinkConditions(rtt=0.6), AdaptiveConfig(budget=2000, inertia=0.8))
    very = choose_display_model(LinkConditions(rtt=1.0), AdaptiveConfig(budget=2000, inertia=0.8))
    assert agile.params["time_compensation"] is False
    assert agile.params["convergence"] == "snap"
    assert inert.params["time_compensation"] is True
    assert very.params["time_compensation"] is False
    assert agile.create().payload_size == 25


def test_budget_loosens_thresholds() -> None:
    link = LinkConditions(rtt=0.34)
    strict = choose_display_model(link, AdaptiveConfig(budget=1000.0))
    tight = choose_display_model(link, AdaptiveConfig(budget=55.0))
    assert strict.params["position_threshold"] == pytest.approx(0.1)
    assert tight.params["position_threshold"] == pytest.approx(0.1 * 5 * 33 / 55)
    assert tight.expected_rate == pytest.approx(55.0)
    floor = choose_display_model(link, AdaptiveConfig(budget=1.0))
    assert floor.params["position_threshold"] == pytest.approx(1.0)  # capped at 10x


def test_prefer_smoothness_interpolation() -> None:
    cfg = AdaptiveConfig(budget=84.0, prefer_smoothness=True)
    choice = choose_display_model(LinkConditions(rtt=0.3, jitter=0.01, loss=0.01), cfg)
    model = choice.create()
    assert isinstance(model.config, InterpolationConfig)
    assert model.config.update_interval == pytest.approx(0.25)  # 21 B / 84 B/s
    assert model.config.delta_time == pytest.approx(0.52)  # 2 intervals (loss) + 2 x jitter
    assert choice.expected_rate == pytest.approx(84.0)


def test_hysteresis() -> None:
    policy = AdaptivePolicy(RICH, hold=3)
    assert policy.current is None
    assert policy.observe(LinkConditions(rtt=0.05)).name == "hermite"
    assert policy.observe(LinkConditions(rtt=0.4)).name == "hermite"
    assert policy.observe(LinkConditions(rtt=0.4)).name == "hermite"
    assert policy.observe(LinkConditions(rtt=0.05)).name == "hermite"  # resets the votes
    for _ in range(2):
        assert policy.observe(LinkConditions(rtt=0.4)).name == "hermite"
    assert policy.observe(LinkConditions(rtt=0.4)).name == "dis1"
    # Same model, new parameters (TC off above 850 ms): adopted at once.
    slow = policy.observe(LinkConditions(rtt=0.9))
    assert slow.name == "dis1"
    assert slow.params["time_compensation"] is False
    assert policy.current is slow


def test_validation() -> None:
    with pytest.raises(ConfigError, match="budget"):
        AdaptiveConfig(budget=0.0)
    with pytest.raises(ConfigError, match="loss"):
        LinkConditions(rtt=0.1, loss=2.0)
    with pytest.raises(ConfigError, match="hold"):
        AdaptivePolicy(RICH, hold=0)
