"""``sync/bucket`` runs with ``--quick``: never stalls; a delay below the latency loses ADUs."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.lab import run
from lagless.lab.experiments.sync_bucket import SPEC, delay_config


def test_quick_run() -> None:
    result = run(SPEC, seed=0, quick=True, out=None)
    rows = {(r["profile"], r["loss"], r["delay"]): r for r in result.tables["runs"]}
    assert len(rows) == 8
    assert result.metrics["stall_frames_max"] == 0
    assert result.metrics["bucket_period_ms"] == 40.0
    assert result.metrics["general_delay_ms"] == 100.0
    lan = rows[("lan", 0.0, "fixed-100")]
    assert lan["late_pct"] == 0.0
    assert lan["diverged_buckets_pct"] == 0.0
    assert lan["input_delay_ms_p50"] == 0.0  # the local player is shown without delay
    # 5 % loss: ADUs go missing and the shared states part for good
    assert float(rows[("lan", 0.05, "fixed-100")]["diverged_buckets_pct"]) > 50.0
    # UMTS (170 ms one way): a fixed 100 ms delay drops most ADUs, the adaptive one keeps them
    assert float(rows[("umts", 0.0, "fixed-100")]["late_pct"]) > 50.0
    adaptive = rows[("umts", 0.0, "adaptive")]
    assert float(adaptive["late_pct"]) < 5.0
    assert 200.0 < float(adaptive["remote_delay_ms"]) < 400.0


@pytest.mark.parametrize("policy", ["fixed", "fixed-99999", "auto"])
def test_bad_delay_policy(policy: str) -> None:
    with pytest.raises(ConfigError, match="sync/bucket delay"):
        delay_config(policy)
