"""``replication/lag-compensation``: the issue 13 goals on the quick run; the duel arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.lab import run
from lagless.lab.experiments.replication_lagcomp import (
    FORGERIES,
    SPEC,
    kill_round_trip,
    run_duels,
)


def test_quick_run_meets_the_goals() -> None:
    result = run(SPEC, seed=0, quick=True, out=None)
    metrics = result.metrics
    stamped = metrics["accepted_share_stamped_min_up_to_250ms"]
    assert stamped is not None
    assert stamped >= 0.99  # issue 13 goal
    assert metrics["forged_rejected_share"] == 1.0  # issue 13 goal
    assert metrics["duels_correct_within_window_share"] == 1.0
    assert metrics["duels_controls_committed_share"] == 1.0
    without = metrics["accepted_share_none_min_up_to_250ms"]
    assert without is not None
    assert without < 0.5  # without compensation most on-screen hits miss on the server
    trip = metrics["kill_round_trip_ms_umts"]
    assert trip is not None
    assert 510.0 <= trip <= 535.0  # spec 000 §5.2.3: 170 up + 170 held + 170 down, plus jitter
    assert result.reference["kill_round_trip_ms_umts"] == 510.0
    forged = {row["kind"]: row for row in result.tables["forged"]}
    assert set(forged) == set(FORGERIES)
    assert all(row["claims"] == row["rejected"] and row["claims"] for row in forged.values())
    assert "time_mismatch" in str(forged["backdated"]["reasons"])
    assert str(forged["spoofed_origin"]["reasons"]).startswith("origin_mismatch")
    for row in result.tables["rtt"]:
        assert isinstance(row["legit_claims"], int)
        assert row["legit_claims"] > 20


def test_duels_depend_on_the_window() -> None:
    wide = run_duels(np.random.default_rng(1), duels=300, window=0.5, max_uplink=0.25)
    assert wide["correct"] == 1.0  # every earlier kill arrives within 0.5 s
    none = run_duels(np.random.default_rng(1), duels=300, window=0.0, max_uplink=0.25)
    assert none["correct"] == pytest.approx(none["within_window"])
    assert 0.3 < none["correct"] < 0.9  # B's kill often arrives first and stands
    assert none["correct_within_window"] == 1.0
    assert none["controls_committed"] == 1.0


def test_round_trip_grows_with_the_window() -> None:
    short = kill_round_trip(3, shots=50, window=0.0)
    held = kill_round_trip(3, shots=50, window=0.17)
    assert 45 <= len(held) <= 50  # 1 % loss each way
    assert min(short) >= 0.34  # one UMTS round trip at least
    assert np.mean(held) == pytest.approx(np.mean(short) + 0.17, abs=0.01)
