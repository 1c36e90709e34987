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
SHOOTER, SPORTS, SIMULATION, ARCADE = 0.125, 0.33, 2.0, 0.025  # preset time constants (s)


def _config(tau: float, budget: float = 1000.0) -> AdaptiveConfig:
    return AdaptiveConfig(budget=budget, time_constant=tau)


def test_short_path_agile_entity_picks_spec004_hermite() -> None:
    choice = choose_display_model(LinkConditions(rtt=0.2, jitter=0.02), _config(SHOOTER))
    assert choice.name == "hermite"
    model = choice.create()
    assert isinstance(model.config, HermiteConfig)
    assert model.config.rtt_factor == pytest.approx(0.15)
    assert model.config.render_delay == pytest.approx(0.02)
    assert model.config.dr_order == 2
    assert choice.expected_rate == pytest.approx(20 * 29)


def test_hermite_excluded_by_loss_budget_inertia_and_reversals() -> None:
    link = LinkConditions(rtt=0.2)
    lossy = choose_display_model(LinkConditions(rtt=0.2, loss=0.05), _config(SHOOTER))
    poor = choose_display_model(link, _config(SHOOTER, budget=300.0))
    inert = choose_display_model(link, _config(SIMULATION))
    instant = choose_display_model(link, _config(ARCADE))  # reverses faster than 20 Hz
    assert lossy.name == poor.name == "dis1"
    assert inert.name == "dis2"
    assert instant.name == "dis1"


def test_rtt_is_round_trip() -> None:
    # 0.2 s round trip = 0.1 s one way: Hermite; 0.4 s round trip = 0.2 s one way: too long.
    assert LinkConditions(rtt=0.4).delay == pytest.approx(0.2)
    assert choose_display_model(LinkConditions(rtt=0.3), _config(SPORTS)).name == "hermite"
    assert choose_display_model(LinkConditions(rtt=0.4), _config(SPORTS)).name == "dis2"


@pytest.mark.parametrize(
    ("tau", "rtt", "name", "kind", "cap", "conv"),
    [
        (SIMULATION, 0.2, "dis2", "pvb", 0.4, 0.175),
        (SIMULATION, 0.7, "dis2", "pvb", 0.4, 0.25),
        (SIMULATION, 1.8, "dis2", "pvb", 0.63, 0.5),
        (SPORTS, 0.7, "dis2", "linear", 0.1, 0.5),
        (SHOOTER, 0.7, "dis1", "linear", 0.1, 0.125),
        (ARCADE, 0.2, "dis1", "linear", 0.2, 0.175),
        (ARCADE, 0.38, "dis1", "linear", 0.21, 0.175),
        (ARCADE, 1.8, "dis1", "linear", 0.1, 0.125),
    ],
)
def test_dis_rules_by_time_constant_and_delay(
    tau: float, rtt: float, name: str, kind: str, cap: float, conv: float
) -> None:
    choice = choose_display_model(LinkConditions(rtt=rtt, jitter=0.01, loss=0.01), _config(tau))
    assert choice.name == name
    model = choice.create()
    assert isinstance(model.config, DisConfig)
    assert model.config.time_compensation
    assert model.config.tc_cap == pytest.approx(cap)
    assert model.config.convergence.kind == kind
    assert model.config.convergence.position_time == pytest.approx(conv)
    assert model.config.thresholds.position == pytest.approx(0.1)
    assert model.config.thresholds.heading == pytest.approx(math.radians(1))
    assert choice.expected_rate == pytest.approx(5 * model.payload_size)


def test_budget_loosens_thresholds() -> None:
    link = LinkConditions(rtt=0.68)
    strict = choose_display_model(link, _config(ARCADE, budget=1000.0))
    tight = choose_display_model(link, _config(ARCADE, budget=55.0))
    assert strict.params["position_threshold"] == pytest.approx(0.1)
    assert tight.params["position_threshold"] == pytest.approx(0.1 * 5 * 33 / 55)
    assert tight.expected_rate == pytest.approx(55.0)
    floor = choose_display_model(link, _config(ARCADE, budget=1.0))
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
    policy = AdaptivePolicy(_config(SPORTS), hold=3)
    assert policy.current is None
    assert policy.observe(LinkConditions(rtt=0.1)).name == "hermite"
    assert policy.observe(LinkConditions(rtt=0.8)).name == "hermite"
    assert policy.observe(LinkConditions(rtt=0.8)).name == "hermite"
    assert policy.observe(LinkConditions(rtt=0.1)).name == "hermite"  # resets the votes
    for _ in range(2):
        assert policy.observe(LinkConditions(rtt=0.8)).name == "hermite"
    assert policy.observe(LinkConditions(rtt=0.8)).name == "dis2"
    # Same model, new parameters (longer convergence past 200 ms one way): adopted at once.
    slow = policy.observe(LinkConditions(rtt=1.6))
    assert slow.name == "dis2"
    assert slow.params["position_time"] == pytest.approx(0.5)
    assert policy.current is slow


def test_validation() -> None:
    with pytest.raises(ConfigError, match="budget"):
        AdaptiveConfig(budget=0.0)
    with pytest.raises(ConfigError, match="loss"):
        LinkConditions(rtt=0.1, loss=2.0)
    with pytest.raises(ConfigError, match="time_constant"):
        AdaptiveConfig(budget=1.0, time_constant=0.0)
    with pytest.raises(ConfigError, match="agile_time_constant"):
        AdaptiveConfig(budget=1.0, agile_time_constant=2.0, inert_time_constant=1.0)
    with pytest.raises(ConfigError, match="hold"):
        AdaptivePolicy(RICH, hold=0)
