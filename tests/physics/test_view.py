"""Client reconstruction (spec 004 §5.2) and client-side prediction (§7.2) without a network."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.physics import (
    CarParams,
    CarSnapshot,
    CarState,
    CarView,
    CarWorld,
    Keys,
    PredictedCar,
    ViewConfig,
)

DT = 0.01


def drive(keys: Keys, seconds: float) -> tuple[list[tuple[float, CarSnapshot]], list[float]]:
    """The 20-Hz snapshots of a car driving straight with ``keys`` from 20 m/s, and its x per
    10-ms step (the truth)."""
    world = CarWorld(CarParams())
    world.add_car(0, CarState(vx=20.0))
    world.set_keys(0, keys)
    out, xs = [], []
    for n in range(round(seconds / DT) + 1):
        xs.append(world.state(0).x)
        if n % 5 == 0:
            out.append((n * DT, CarSnapshot(car_id=0, state=world.state(0), input_seq=1)))
        world.step(DT)
    return out, xs


SNAP = ViewConfig(rtt_factor=0.0, extrapolation_time=0.0)
DELAY = ViewConfig(render_delay=0.1, rtt_factor=0.0, extrapolation_time=0.0)
DR = ViewConfig(rtt_factor=0.0, extrapolation_time=1.0, use_acceleration=True)


@pytest.mark.parametrize(("config", "lag"), [(SNAP, 0.075), (DELAY, 0.1), (DR, 0.0)])
def test_views_lag_as_configured(config: ViewConfig, lag: float) -> None:
    """Updates arrive 50 ms late: snap holds them (lag 50 + 25 ms), delay renders 100 ms back
    on the spline, DR extrapolates to the present."""
    view = CarView(0, config)
    frames, xs = drive(Keys.UP, 3.0)
    lags = []
    for t, car in frames[:-2]:
        arrive = t + 0.05
        view.apply(t, car, arrive, arrive)
        for k in range(5):
            now = arrive + 0.01 * k
            shown = view.display(now)
            assert shown is not None
            if now > 1.0:
                lags.append(now - float(np.interp(shown.x, xs, np.arange(len(xs)) * DT)))
    assert float(np.mean(lags)) == pytest.approx(lag, abs=0.005)


def test_stale_snapshot_is_dropped() -> None:
    view = CarView(0, DR)
    frames, _ = drive(Keys.NONE, 0.2)
    assert view.apply(frames[1][0], frames[1][1], 1.0, 1.0)
    assert not view.apply(frames[0][0], frames[0][1], 1.01, 1.01)  # step 3: t(P3) < t(P1)


def test_rtt_factor_sets_the_delay() -> None:
    view = CarView(0, ViewConfig(rtt_factor=0.15))
    view.observe_rtt(0.2, 0.12)
    assert view.receiver.render_delay == pytest.approx(0.03)


def test_rtt_estimate_picks_the_statistic() -> None:
    """``k x RTT`` multiplies the smoothed RTT by default and the recent minimum on request."""
    smoothed = CarView(0, ViewConfig(render_delay=0.01, rtt_factor=0.5))
    minimum = CarView(0, ViewConfig(render_delay=0.01, rtt_factor=0.5, rtt_estimate="min"))
    for view in (smoothed, minimum):
        view.observe_rtt(0.2, 0.12)
    assert smoothed.receiver.render_delay == pytest.approx(0.11)
    assert minimum.receiver.render_delay == pytest.approx(0.07)
    with pytest.raises(ConfigError, match="rtt_estimate"):
        ViewConfig(rtt_estimate="mean")  # type: ignore[arg-type]


def test_prediction_acts_at_once_and_rolls_back() -> None:
    params = CarParams()
    predicted = PredictedCar(0, params, (), dt=DT, correction_time=0.1)
    server = CarWorld(params)
    server.add_car(0, CarState())
    predicted.reconcile(0.0, CarSnapshot(car_id=0, state=server.state(0), input_seq=0), 0.0)
    predicted.press(1, Keys.UP, 0.0)  # acts at once: the server gets it 80 ms later
    for _ in range(8):
        server.step(DT)
    server.set_keys(0, Keys.UP)
    mine = predicted.state(0.08)
    assert mine is not None
    assert mine.vx > 0.5
    assert server.state(0).vx == 0.0
    for _ in range(12):
        server.step(DT)
    snap = CarSnapshot(car_id=0, state=server.state(0), input_seq=1)
    predicted.reconcile(0.2, snap, 0.2)
    after = predicted.state(0.2)
    assert after is not None
    assert predicted.corrections[-1] > 0.0  # the server started 80 ms later: a correction
    assert after.x > server.state(0).x  # still ahead of the server, blended
    later = predicted.state(0.5)
    assert later is not None
    assert later.keys == Keys.UP
