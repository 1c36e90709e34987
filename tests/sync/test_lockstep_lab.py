"""``sync/lockstep`` with ``--quick``: never inconsistent, stalls where turns are too short."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.lab import run
from lagless.lab.experiments.sync_lockstep import SPEC, policy_config


def test_quick_run() -> None:
    result = run(SPEC, seed=0, quick=True, out=None)
    rows = {(r["profile"], r["loss"], r["policy"]): r for r in result.tables["runs"]}
    assert len(rows) == 8
    assert result.metrics["inconsistent_frames_max"] == 0
    assert result.metrics["converged_pct"] == 100.0
    assert all(r["desyncs"] == 0 for r in rows.values())
    # the adaptive turn follows the UMTS RTT (~340 ms) and does not stall; 100 ms turns do
    adaptive, fixed = rows[("umts", 0.0, "adaptive")], rows[("umts", 0.0, "fixed-100")]
    assert 300.0 <= float(adaptive["turn_ms"]) <= 450.0
    assert adaptive["stall_pct"] == 0.0
    assert float(fixed["stall_pct"]) > 20.0
    # loss makes the short LAN turns wait for resent commands
    assert float(rows[("lan", 0.1, "adaptive")]["stall_frames"]) > 0
    assert rows[("lan", 0.0, "adaptive")]["stall_frames"] == 0.0


@pytest.mark.parametrize("policy", ["fixed", "fixed-5", "slow", "fixed-abc"])
def test_bad_policy(policy: str) -> None:
    with pytest.raises(ConfigError, match="sync/lockstep policy"):
        policy_config(policy)
