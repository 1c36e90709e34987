from __future__ import annotations

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.lab.realtime.simulator import EPOCH, run, simulator_link
from lagless.smoothing import LENGTH_UNIT, create_display_model
from lagless.world import PX_PER_M, Trajectory, load_recording, simulate


def _line(n: int = 200, dt: float = 0.04, vx: float = 3.0, vy: float = -1.5) -> Trajectory:
    t = np.arange(n) * dt
    zero = np.zeros(n)
    return Trajectory(
        t=t,
        x=vx * t,
        y=vy * t,
        heading=np.full(n, np.arctan2(vy, vx)),
        vx=np.full(n, vx),
        vy=np.full(n, vy),
        ax=zero.copy(),
        ay=zero.copy(),
        turn_rate=zero.copy(),
    )


@pytest.fixture(scope="module")
def sports() -> Trajectory:
    return simulate("sports", load_recording("sports"))


def test_zero_latency_snap_is_exact(sports: Trajectory) -> None:
    model = create_display_model("dis1", convergence="snap")
    result = run(sports, model, simulator_link(latency=0.0), rng=np.random.default_rng(0))
    update_frames = np.searchsorted(sports.t, result.send_t)
    error = result.error_m[update_frames]
    assert len(update_frames) > 50
    assert np.max(error) <= LENGTH_UNIT  # only the 0.1 mm quantisation remains
    assert result.metrics.delivered == result.metrics.updates
    assert np.max(result.error_m) > 10 * LENGTH_UNIT  # between updates DR drifts


def test_constant_velocity_dr1_error_is_quantisation_only() -> None:
    truth = _line()
    for latency in (0.0, 0.3):
        model = create_display_model("dis1", convergence="snap", time_compensation=True)
        result = run(truth, model, simulator_link(latency=latency), rng=np.random.default_rng(1))
        assert result.metrics.updates == 1  # the ghost never drifts: one update suffices
        assert result.metrics.error_m_max < 10 * LENGTH_UNIT
        assert result.metrics.frames == len(truth) - round(latency / 0.04)


def test_latency_without_tc_lags_by_speed_times_latency() -> None:
    truth = _line(vx=2.0, vy=0.0)
    model = create_display_model("dis1", convergence="snap", time_compensation=False)
    result = run(truth, model, simulator_link(latency=0.2), rng=np.random.default_rng(2))
    assert result.metrics.error_m_avg == pytest.approx(0.4, abs=1e-3)
    assert result.metrics.error_px_avg == pytest.approx(0.4 * PX_PER_M, abs=1e-2)


@pytest.mark.parametrize(
    ("name", "params", "size"),
    [
        ("dis1", {}, 25),
        ("dis1", {"time_compensation": True}, 33),
        ("dis2", {}, 33),
        ("dis2", {"time_compensation": True}, 41),
        ("phb", {}, 21),
        ("interpolation", {}, 21),
    ],
)
def test_payload_sizes_and_rates_are_exact(name: str, params: dict[str, object], size: int) -> None:
    truth = _line(n=501)  # 20 s
    model = create_display_model(name, **params)
    result = run(truth, model, simulator_link(latency=0.1), rng=np.random.default_rng(3))
    assert set(result.payload.tolist()) == {float(size)}
    m = result.metrics
    assert m.payload_kBps_avg == pytest.approx(m.updates * size / 20.0 / 1000.0)
    assert m.wire_kBps_avg == pytest.approx(m.updates * (size + 28) / 20.0 / 1000.0)


def test_loss_and_jitter(sports: Trajectory) -> None:
    model = create_display_model("interpolation", delta_time=0.8)
    link = simulator_link(latency=0.34, jitter=0.07, loss=0.2)
    result = run(sports, model, link, rng=np.random.default_rng(4))
    lost = 1 - result.metrics.delivered / result.metrics.updates
    assert 0.12 < lost < 0.28  # ~240 updates at p = 0.2
    again = run(sports, model, link, rng=np.random.default_rng(4))
    assert again.metrics == result.metrics


def test_link_and_truth_validation() -> None:
    assert simulator_link(latency=0.5, jitter=0.1).jitter.amount == pytest.approx(0.05)
    assert simulator_link(latency=0.0, jitter=0.1).jitter.kind == "none"
    with pytest.raises(ConfigError):
        simulator_link(latency=0.1, jitter=-1.0)
    with pytest.raises(ConfigError):
        run(
            _line(n=1),
            create_display_model("dis1"),
            simulator_link(latency=0.0),
            rng=np.random.default_rng(0),
        )
    assert EPOCH > 0
