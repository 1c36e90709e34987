"""The in-process match: the display model shapes what is shown, the profile shapes the link."""

from __future__ import annotations

import math

import pytest

from lagless.demo.arena import DISPLAY_MODELS
from lagless.demo.match import SimMatch
from lagless.errors import ConfigError
from lagless.physics import Keys


def test_each_display_model_shows_the_remote_cars_its_own_way() -> None:
    match = SimMatch(bots=6, seed=2, profile="lte", model="snap", autopilot=True)
    match.advance(6.0)
    truth = match.server.server.world.states()
    shown = {}
    for model in DISPLAY_MODELS:
        match.set_model(model)
        shown[model] = match.advance(6.0)  # same instant: only the model differs
        assert set(shown[model]) == set(truth)

    def error(model: str) -> float:
        return max(math.hypot(s.x - truth[k].x, s.y - truth[k].y) for k, s in shown[model].items())

    # LTE: ~25 ms one way and 50 ms between snapshots; interpolating 100 ms in the past puts
    # delay100 furthest behind, dead reckoning brings the cars closest to where they are
    assert error("delay100") > error("snap") + 0.5
    assert error("snap") > error("dr") + 0.5


def test_switching_the_profile_changes_the_round_trip_live() -> None:
    match = SimMatch(bots=2, seed=3, profile="wifi", model="dr", autopilot=True)
    match.advance(4.0)
    fast = match.status(3)
    assert fast.connected
    assert fast.rtt_ms < 40.0
    match.set_profile("gprs")
    match.advance(12.0)
    slow = match.status(3)
    assert slow.profile == "gprs"
    assert slow.rtt_ms > 700.0  # GPRS: RTT 916 ms
    match.set_profile("none")
    assert match.profile == "none"
    with pytest.raises(ConfigError, match="unknown profile 'dialup'; valid: none, gprs"):
        match.set_profile("dialup")


def test_the_own_car_is_predicted_until_prediction_is_switched_off() -> None:
    match = SimMatch(bots=1, seed=4, profile="gprs", model="snap", autopilot=False)
    match.advance(8.0)  # connected, clock synchronised over ~0.9 s round trips
    own = match.client.car_id
    assert own is not None
    match.set_keys(Keys.UP)
    shown = match.advance(8.3)
    assert shown[own].vx > 1.0  # keys act at once on the predicted car
    assert match.server.server.world.state(own).vx == 0.0  # the input is still on its way
    match.set_predict(False)
    assert match.advance(8.3)[own].vx == 0.0  # through the model: a round trip late
    assert not match.status(2).predict
