from __future__ import annotations

import json
from pathlib import Path

import pytest

from lagless.lab import run
from lagless.lab.realtime.runs import REQUIRED_COLUMNS

EXPERIMENTS = (
    "realtime/sports",
    "realtime/simulation",
    "realtime/shooter",
    "realtime/arcade",
    "realtime/kinematic-car",
    "realtime/adaptive",
)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    for experiment in (*EXPERIMENTS, "realtime/payload-sizes"):
        directory = tmp_path_factory.mktemp(experiment.replace("/", "-"))
        run(experiment, seed=0, quick=True, out=directory)
        out[experiment] = json.loads((Path(directory) / "results.json").read_text())
    return out


@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_runs_table_has_required_columns(
    results: dict[str, dict[str, object]], experiment: str
) -> None:
    rows = results[experiment]["tables"]["runs"]  # type: ignore[index]
    assert rows
    for row in rows:
        missing = [c for c in REQUIRED_COLUMNS if c not in row]
        assert not missing, missing
        assert row["error_px_avg"] == pytest.approx(10.0 * row["error_m_avg"])
        assert row["wire_kBps_avg"] > row["payload_kBps_avg"] > 0


def test_payload_sizes(results: dict[str, dict[str, object]]) -> None:
    metrics = results["realtime/payload-sizes"]["metrics"]
    assert metrics == {
        "payload_bytes_dis1": 25,
        "payload_bytes_dis1_tc": 33,
        "payload_bytes_dis2": 33,
        "payload_bytes_dis2_tc": 41,
        "payload_bytes_interp": 21,
        "payload_bytes_phb": 21,
    }


def test_car_rows_are_named(results: dict[str, dict[str, object]]) -> None:
    rows = results["realtime/kinematic-car"]["tables"]["runs"]  # type: ignore[index]
    configs = [r["config"] for r in rows if r["profile"] == "l80j40"]
    assert configs == [
        "snap",
        "delay100",
        "delay150",
        "delay200",
        "rtt0.5",
        "rtt0.75",
        "dr-v",
        "dr-a",
        "dr-a+rtt0.15",
        "dr-a+rtt0.3",
    ]
    by = {(r["profile"], r["config"]): r for r in rows}
    for profile in ("l40j20", "l80j40"):
        # pure delay lags by about delay x speed: DeviationA grows with the delay
        a = [by[(profile, f"delay{d}")]["deviation_a_m"] for d in (100, 150, 200)]
        assert a[0] < a[1] < a[2]
        assert by[(profile, "snap")]["freezes"] > by[(profile, "delay200")]["freezes"]


def test_best_is_no_rougher_than_recommended(results: dict[str, dict[str, object]]) -> None:
    for experiment in EXPERIMENTS[:4]:
        best = results[experiment]["tables"]["best"]  # type: ignore[index]
        rec = [r for r in best if r["kind"] == "thesis-recommended"]
        ours = [r for r in best if r["kind"] == "ours-best"]
        assert len(rec) == len(ours) >= 1
        for thesis, mine in zip(rec, ours, strict=True):
            assert mine["error_px_avg"] <= thesis["error_px_avg"]
            assert mine["deviation_b"] <= thesis["deviation_b"]
            assert mine["jumps"] <= thesis["jumps"]


def test_references_hold_thesis_numbers(results: dict[str, dict[str, object]]) -> None:
    sports = results["realtime/sports"]["reference"]
    assert sports["umts_recommended_error_px_avg"] == 4.5  # type: ignore[index]
    shooter = results["realtime/shooter"]["reference"]
    assert shooter["umts_model3_error_px_max"] == 19.65  # type: ignore[index]
    assert "umts_model3_error_px_max" in results["realtime/shooter"]["metrics"]  # type: ignore[operator]


def test_adaptive_runs_table(results: dict[str, dict[str, object]]) -> None:
    result = results["realtime/adaptive"]
    rows = result["tables"]["runs"]  # type: ignore[index]
    comparison = result["tables"]["comparison"]  # type: ignore[index]
    metrics = result["metrics"]
    assert {(r["genre"], r["profile"]) for r in comparison} == {
        ("sports", "umts"),
        ("simulation", "umts"),
    }
    for entry in comparison:
        cells = [
            r for r in rows if (r["genre"], r["profile"]) == (entry["genre"], entry["profile"])
        ]
        assert sorted(r["role"] for r in cells) == ["adaptive", "best", "recommended"]
        by_role = {r["role"]: r for r in cells}
        best, rec = by_role["best"], by_role["recommended"]
        # "best" is no rougher than the recommendation and at most its error, on both recordings.
        assert best["error_px_avg"] <= rec["error_px_avg"]
        assert best["jumps"] <= rec["jumps"]
        assert best["heldout_error_px_avg"] <= rec["heldout_error_px_avg"]
        for role, row in by_role.items():
            assert row["adaptive_vs_this_error_ratio"] == pytest.approx(
                by_role["adaptive"]["error_px_avg"] / row["error_px_avg"]
            )
            assert entry[f"{role}_error_px_avg"] == row["error_px_avg"]
            assert entry[f"heldout_{role}_error_px_avg"] == row["heldout_error_px_avg"]
            assert row["heldout_error_px_avg"] != row["error_px_avg"]  # another recording
        assert entry["adaptive_vs_best_error_ratio"] == pytest.approx(
            entry["adaptive_error_px_avg"] / entry["best_error_px_avg"]
        )
    assert metrics["adaptive_vs_best_error_ratio_max"] == pytest.approx(
        max(e["adaptive_vs_best_error_ratio"] for e in comparison)
    )
    assert metrics["heldout_adaptive_vs_best_error_ratio_max"] == pytest.approx(
        max(e["heldout_adaptive_vs_best_error_ratio"] for e in comparison)
    )
    # Simulation at UMTS: 2nd-order DR with blending beats the thesis's DIS1 recommendation
    # by far on both recordings (about 0.45 of its error in the full and quick runs).
    simulation = next(e for e in comparison if e["genre"] == "simulation")
    assert simulation["adaptive_vs_recommended_error_ratio"] < 0.7
    assert simulation["heldout_adaptive_vs_recommended_error_ratio"] < 0.7
    assert metrics["adaptive_vs_recommended_error_ratio_max"] == pytest.approx(
        max(
            e[f"{k}adaptive_vs_recommended_error_ratio"]
            for e in comparison
            for k in ("", "heldout_")
        )
    )
    assert len(result["tables"]["all_runs"]) == 2 * 2 * (21 + 2)  # type: ignore[index]
