from __future__ import annotations

import math

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.netsim import LinkConfig, Profile, get_profile, run_demo
from lagless.netsim.demo import lost_runs

KEYS = {
    "loss",
    "latency_ms_mean",
    "latency_ms_p50",
    "latency_ms_p99",
    "burst_mean",
    "throughput_kBps",
}


def test_demo_matches_profile() -> None:
    n = 20_000
    result = run_demo("umts", packets=n, seed=3)
    values = result.as_dict()
    assert set(values) >= KEYS
    assert values["profile"] == "umts"
    assert values["packets_sent"] == n
    # UMTS one way: 170 ms + U(0, 11.9 ms), 1 % loss
    assert abs(result.loss - 0.01) < 5 * math.sqrt(0.01 * 0.99 / n)
    assert result.latency_ms_min is not None
    assert result.latency_ms_min >= 170.0
    assert result.latency_ms_max is not None
    assert result.latency_ms_max < 181.9
    se = 11.9 / math.sqrt(12 * n)
    assert result.latency_ms_mean == pytest.approx(175.95, abs=5 * se)
    assert result.latency_ms_p50 == pytest.approx(175.95, abs=0.3)
    assert result.latency_ms_p99 == pytest.approx(170 + 0.99 * 11.9, abs=0.1)
    assert result.burst_mean == pytest.approx(1 / 0.99, abs=0.02)
    # 100 bytes at 50 Hz is 5 kB/s offered; what is lost is not delivered
    assert result.throughput_kBps == pytest.approx(5.0 * (1 - result.loss), rel=0.01)
    assert result.configured_loss == pytest.approx(0.01)
    assert result.configured_latency_ms_mean == pytest.approx(175.95)
    assert result.duplicates == 0


def test_burst_mean_counts_runs() -> None:
    runs = lost_runs(np.array([False, True, True, True, False, False, True, False, True, True]))
    assert runs.tolist() == [3, 1, 2]
    assert lost_runs(np.zeros(5, dtype=bool)).size == 0
    assert lost_runs(np.ones(4, dtype=bool)).tolist() == [4]
    # wifi: Gilbert-Elliott with 1 % loss in bursts of mean 3
    result = run_demo("wifi", packets=60_000, seed=1, rate=1000.0)
    assert result.burst_mean == pytest.approx(3.0, rel=0.15)
    assert result.loss == pytest.approx(0.01, rel=0.3)


def test_bandwidth_limits_throughput() -> None:
    slow = Profile(
        name="slow",
        description="test",
        source="test",
        up=LinkConfig(),
        down=LinkConfig(latency=0.05, bandwidth=2_000.0, queue_limit=2_000),
    )
    result = run_demo(slow, packets=2_000, size=72, rate=100.0)  # 10 kB/s offered on the wire
    # delivered payload = link rate * 72 / 100 on-wire bytes
    assert result.throughput_kBps == pytest.approx(2.0 * 72 / 100, rel=0.02)
    assert result.loss == pytest.approx(0.8, abs=0.02)
    assert result.configured_bandwidth_kBps == 2.0


def test_demo_is_deterministic_and_seeded() -> None:
    assert run_demo("gprs", packets=500, seed=4) == run_demo("gprs", packets=500, seed=4)
    assert run_demo("gprs", packets=500, seed=4) != run_demo("gprs", packets=500, seed=5)


def test_demo_up_direction_and_total_loss() -> None:
    lossy = Profile(
        name="dead", description="d", source="s", up=LinkConfig(loss=1.0), down=LinkConfig()
    )
    result = run_demo(lossy, packets=10, direction="up")
    assert result.loss == 1.0
    assert result.latency_ms_mean is None
    assert result.burst_mean == 10.0
    assert result.throughput_kBps == 0.0
    assert run_demo(lossy, packets=10).loss == 0.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"packets": 0}, "packets"),
        ({"size": 3}, "size"),
        ({"rate": 0.0}, "rate"),
        ({"direction": "x"}, "direction"),
    ],
)
def test_demo_rejects_bad_arguments(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        run_demo(get_profile("lan"), **kwargs)  # type: ignore[arg-type]
