"""Lab ``sync/rollback``: the quick sweep runs, meets the issue's goals, and its trends hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from lagless.errors import ConfigError
from lagless.lab import Result, run
from lagless.lab.experiments.sync_rollback import SPEC


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Result:
    return run(SPEC, seed=0, quick=True, out=tmp_path_factory.mktemp("sync-rollback"))


def _rows(result: Result, **match: object) -> list[dict[str, object]]:
    return [dict(r) for r in result.tables["runs"] if all(r[k] == v for k, v in match.items())]


def test_every_combination_is_a_row(result: Result) -> None:
    quick = SPEC.quick
    expected = (
        len(quick["profiles"])  # type: ignore[arg-type]
        * len(quick["losses"])  # type: ignore[arg-type]
        * len(quick["input_delays"])  # type: ignore[arg-type]
        * len(quick["max_predictions"])  # type: ignore[arg-type]
    )
    assert len(result.tables["runs"]) == expected
    assert result.metrics["runs"] == expected


def test_the_goals_hold(result: Result) -> None:
    assert result.metrics["depth_over_window_max"] <= 0
    assert result.metrics["desyncs_total"] == 0
    assert result.metrics["converged_pct"] == 100.0
    assert result.metrics["synctest_mismatches"] == 0
    for row in result.tables["runs"]:
        assert float(row["rollback_depth_max"]) <= float(row["max_prediction"])  # type: ignore[arg-type]


def test_felt_delay_is_the_input_delay_plus_stalls(result: Result) -> None:
    for row in result.tables["runs"]:
        delay_ms = float(row["input_delay_frames"]) * 1000 / 60  # type: ignore[arg-type]
        felt = float(row["input_delay_ms_p50"])  # type: ignore[arg-type]
        if float(row["stall_frames"]) == 0:  # type: ignore[arg-type]
            assert felt == pytest.approx(delay_ms, abs=0.5)
        else:
            assert felt >= delay_ms - 0.5


def test_a_longer_rtt_costs_more_rollback_and_stalls(result: Result) -> None:
    near = _rows(result, profile="wifi", input_delay_frames=0, max_prediction=8)[0]
    far = _rows(result, profile="intercontinental", input_delay_frames=0, max_prediction=8)[0]
    assert float(far["resimulated_per_s"]) > float(near["resimulated_per_s"])  # type: ignore[arg-type]
    assert float(far["rollback_depth_p50"]) > float(near["rollback_depth_p50"])  # type: ignore[arg-type]
    narrow = _rows(result, profile="intercontinental", input_delay_frames=0, max_prediction=4)[0]
    assert float(narrow["stall_frames"]) > float(far["stall_frames"])  # type: ignore[arg-type]


def test_outputs_are_written(tmp_path: Path) -> None:
    run(
        SPEC,
        seed=1,
        quick=True,
        out=tmp_path,
        overrides={"profiles": ["lan"], "input_delays": [1], "max_predictions": [2]},
    )
    assert (tmp_path / "results.json").is_file()
    assert (tmp_path / "tables" / "runs.csv").read_text().count("\n") == 2


def test_a_bad_parameter_is_one_clear_error() -> None:
    with pytest.raises(ConfigError, match="input_delays"):
        run(SPEC, seed=0, quick=True, out=None, overrides={"input_delays": [99]})
