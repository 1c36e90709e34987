from __future__ import annotations

from pathlib import Path

import pytest

from lagless.lab import ExperimentSpec, Result, compare, render_report, run
from lagless.lab.report import MAX_CELL_CHARS, MAX_REPORT_ROWS, format_value

from .conftest import TOY_ROWS


def _spec() -> ExperimentSpec:
    return ExperimentSpec(
        id="r/s",
        title="Report test",
        entry_point=lambda ctx, params: ctx.result(),
        quick={},
        full={},
        reference={"a_ms": 100.0, "zero": 0.0, "missing": 3.0},
        description="What it measures.",
    )


def _result(**overrides: object) -> Result:
    fields: dict[str, object] = {
        "experiment": "r/s",
        "seed": 4,
        "config": {"packets": 10},
        "metrics": {"a_ms": 120.0, "zero": 0.5, "extra": 9.0},
        "tables": {},
        "reference": {"a_ms": 100.0, "zero": 0.0, "missing": 3.0},
    }
    fields.update(overrides)
    return Result(**fields)  # type: ignore[arg-type]


def test_compare_pairs_metrics_with_reference() -> None:
    rows = {row.metric: row for row in compare(_result())}
    assert [row.metric for row in compare(_result())] == ["a_ms", "zero", "missing"]
    assert rows["a_ms"].ours == 120.0
    assert rows["a_ms"].thesis == 100.0
    assert rows["a_ms"].ratio == pytest.approx(1.2)
    assert rows["a_ms"].difference == pytest.approx(20.0)
    assert rows["zero"].ratio is None
    assert rows["zero"].difference == 0.5
    assert rows["missing"].ours is None
    assert rows["missing"].ratio is None
    assert "extra" not in rows


def test_report_puts_metrics_beside_reference() -> None:
    text = render_report(_result(), _spec(), quick=True)
    assert text.startswith("# Report test\n")
    assert "Experiment `r/s`, seed 4, quick run." in text
    assert "What it measures." in text
    assert "| metric | ours | thesis | ours / thesis | ours - thesis |" in text
    assert "| `a_ms` | 120 | 100 | 1.2 | 20 |" in text
    assert "| `zero` | 0.5 | 0 | — | 0.5 |" in text
    assert "| `missing` | — | 3 | — | — |" in text
    assert "## Other metrics" in text
    assert "| `extra` | 9 |" in text
    assert "| `packets` | 10 |" in text
    assert text.endswith("\n")
    assert not text.endswith("\n\n")


def test_long_tables_are_truncated() -> None:
    rows = [{"i": i, "text": "x" * 100, "pipe": "a|b"} for i in range(MAX_REPORT_ROWS + 7)]
    text = render_report(_result(tables={"big": rows}), _spec(), quick=False)
    assert "full run" in text
    assert f"_first {MAX_REPORT_ROWS} of {MAX_REPORT_ROWS + 7} rows; full table: " in text
    assert "[tables/big.csv](tables/big.csv)" in text
    assert f"| {MAX_REPORT_ROWS - 1} |" in text
    assert f"| {MAX_REPORT_ROWS} |" not in text
    assert "x" * (MAX_CELL_CHARS - 1) + "…" in text
    assert "x" * MAX_CELL_CHARS not in text
    assert "a\\|b" in text


def test_report_of_a_run_links_files(toy_spec: ExperimentSpec, tmp_path: Path) -> None:
    result = run(toy_spec, seed=3, quick=True, out=tmp_path)
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    mean = format_value(result.metrics["noise_mean"])
    assert f"| `noise_mean` | {mean} | 0 | — | {mean} |" in text
    assert "| `toy_third` | 0.333333 | 0.3 | 1.11111 | 0.0333333 |" in text
    assert "| `never_measured` | — | 7 | — | — |" in text
    shown = min(TOY_ROWS, MAX_REPORT_ROWS)
    assert f"{shown} of {TOY_ROWS} rows; full table: [tables/rows.csv](tables/rows.csv)_" in text
    assert "- [series/trace.csv](series/trace.csv): 50 rows; columns t_s, noise" in text
    assert "![noise](plots/noise.png)" in text
    assert "![bars](plots/bars.png)" in text
    for link in ("tables/rows.csv", "series/trace.csv", "plots/noise.png", "results.json"):
        assert (tmp_path / link).is_file()


def test_format_value() -> None:
    assert format_value(1234567.0) == "1.23457e+06"
    assert format_value([1, 2.5, None]) == "1, 2.5, —"
    assert format_value({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'
    assert format_value("s") == "s"
