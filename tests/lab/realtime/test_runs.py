from __future__ import annotations

import pytest

from lagless.lab.realtime.configs import ModelConfig
from lagless.lab.realtime.runs import (
    NEUTRON_EVENT_OVERHEAD,
    RunIndex,
    difference,
    increase,
    metric_columns,
    model_columns,
    ratio,
)
from lagless.lab.realtime.simulator import RunMetrics


def _metrics(updates: int) -> RunMetrics:
    return RunMetrics(
        updates=updates,
        delivered=updates,
        frames=100,
        payload_kBps_avg=0.1,
        payload_kBps_max=0.2,
        wire_kBps_avg=0.15,
        wire_kBps_max=0.25,
        error_m_avg=0.45,
        error_m_max=0.9,
        deviation_b_m=0.01,
        jumps=3,
        freezes=1,
    )


def test_neutron_estimate() -> None:
    # the thesis's sports interpolation: 4 updates/s of 21 B measured as 0.28 kB/s
    row = metric_columns(_metrics(240), payload_size=21, duration=60.0)
    assert row["updates_per_s"] == pytest.approx(4.0)
    assert row["neutron_kBps_avg"] == pytest.approx(0.28)
    assert NEUTRON_EVENT_OVERHEAD == 49
    assert row["error_px_avg"] == pytest.approx(4.5)
    assert row["deviation_a_m"] == row["error_m_avg"]


def test_index_and_helpers() -> None:
    cfg = ModelConfig(model="dis1", convergence="snap")
    row = {"profile": "sweep", "latency_ms": 400.0, **model_columns(cfg), "error_px_avg": 7.0}
    other = {**row, "latency_ms": 200.0, "error_px_avg": 5.0}
    index = RunIndex([row, other])
    assert index.get("sweep", 400, cfg.label, "error_px_avg") == 7.0
    assert index.get("sweep", 300, cfg.label, "error_px_avg") is None
    assert index.mean("sweep", [200, 300, 400], cfg.label, "error_px_avg") == 6.0
    assert len(index.rows("sweep")) == 2
    assert ratio(1.0, 4.0) == 0.25
    assert ratio(1.0, 0.0) is None
    assert ratio(None, 1.0) is None
    assert increase(3.0, 2.0) == pytest.approx(0.5)
    assert difference(3.0, None) is None
    assert difference(3.0, 1.0) == 2.0
