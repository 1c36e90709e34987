"""Lab experiments ``replication/ids`` and ``replication/bandwidth`` (issue 13 "Lab")."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.lab import make, run
from lagless.lab.experiments.replication_bandwidth import SPEC as BANDWIDTH
from lagless.lab.experiments.replication_ids import SPEC as IDS


def test_ids_quick_run_holds_every_claim() -> None:
    result = run(IDS, seed=0, quick=True, out=None)
    checks = result.tables["checks"]
    assert all(row["holds"] for row in checks), [r["claim"] for r in checks if not r["holds"]]
    metrics = result.metrics
    assert metrics["checks_holding"] == metrics["checks_total"] == 9
    assert metrics["churn_wrong_target_bare_id"] > 0  # the thesis's hazard happens
    assert metrics["churn_wrong_target_idref"] == 0  # and generations catch every case
    assert metrics["churn_ids_reused"] == 0
    assert metrics["days_to_exhaust_32bit_at_1000_per_s"] == pytest.approx(49.71, abs=0.01)
    assert make("replication/ids") is IDS


def test_bandwidth_quick_run_meets_the_goal() -> None:
    result = run(BANDWIDTH, seed=0, quick=True, out=None)
    metrics = result.metrics
    delta = metrics["bits_per_moving_entity_update"]
    full = metrics["bits_per_moving_entity_update_full"]
    assert delta is not None
    assert full is not None
    assert delta <= 40.0
    assert delta < full < metrics["raw_float32_bits_per_entity_update"]  # type: ignore[operator]
    assert metrics["max_error_m"] is not None
    assert metrics["max_error_m"] <= 0.0051  # replicas within the 1 cm quantisation
    assert metrics["goal_met"] == 1.0
    rows = result.tables["runs"]
    assert {(r["state"], r["mode"]) for r in rows} == {
        ("pos+heading", "delta"),
        ("pos+heading", "full"),
        ("pos+vel+heading", "delta"),
        ("pos+vel+heading", "full"),
    }
    assert result.reference["gaffer_uncompressed_bits_per_cube"] == 321.0


def test_bandwidth_rejects_bad_parameters() -> None:
    with pytest.raises(ConfigError):
        run(BANDWIDTH, seed=0, quick=True, out=None, overrides={"losses": [1.5]})
