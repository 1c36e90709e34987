from __future__ import annotations

import csv
import gc
import json
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.lab import (
    ExperimentContext,
    ExperimentSpec,
    NullProgress,
    Result,
    output_files,
    run,
)
from lagless.lab.result import JSONValue
from lagless.lab.runner import override_params
from lagless.netsim import random_stream, stream

from .conftest import TOY_ROWS


def test_output_layout(toy_spec: ExperimentSpec, tmp_path: Path) -> None:
    result = run(toy_spec, seed=1, quick=True, out=tmp_path)
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert written == [
        "plots/bars.png",
        "plots/noise.png",
        "report.md",
        "results.json",
        "series/trace.csv",
        "tables/rows.csv",
    ]
    assert [p.relative_to(tmp_path).as_posix() for p in output_files(result, tmp_path)] == [
        "results.json",
        "report.md",
        "tables/rows.csv",
        "series/trace.csv",
        "plots/noise.png",
        "plots/bars.png",
    ]
    for png in tmp_path.glob("plots/*.png"):
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 5_000
    assert (tmp_path / "results.json").read_text(encoding="utf-8") == result.to_json()


def test_results_json_holds_config_metrics_tables_reference(
    toy_spec: ExperimentSpec, tmp_path: Path
) -> None:
    run(toy_spec, seed=1, quick=True, out=tmp_path)
    data = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert data["experiment"] == "test/toy"
    assert data["seed"] == 1
    assert data["config"] == {"n": 50, "quick": True, "derived": 100}
    assert data["metrics"]["toy_count"] == 50
    assert data["metrics"]["toy_third"] == 0.3333333333
    assert data["metrics"]["unmeasurable"] is None
    expected_mean = float(stream(1, "toy.noise").normal(size=50).mean())
    assert data["metrics"]["noise_mean"] == pytest.approx(expected_mean, rel=1e-9)
    assert data["reference"] == {"noise_mean": 0.0, "toy_third": 0.3, "never_measured": 7.0}
    assert len(data["tables"]["rows"]) == TOY_ROWS
    assert data["tables"]["rows"][3] == {"i": 3, "square": 3.0, "odd": True, "label": "r|3"}


def test_csv_holds_every_row_and_the_raw_series(toy_spec: ExperimentSpec, tmp_path: Path) -> None:
    run(toy_spec, seed=1, quick=False, out=tmp_path)
    with (tmp_path / "tables" / "rows.csv").open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["i", "square", "odd", "label"]
    assert len(rows) == TOY_ROWS + 1
    assert rows[2] == ["1", "0.3333333333", "true", "r|1"]
    with (tmp_path / "series" / "trace.csv").open(encoding="utf-8", newline="") as handle:
        series = list(csv.reader(handle))
    assert series[0] == ["t_s", "noise"]
    assert len(series) == 501
    noise = stream(1, "toy.noise").normal(size=500)
    assert [float(row[1]) for row in series[1:]] == pytest.approx(noise.tolist(), rel=1e-9)
    assert float(series[-1][0]) == pytest.approx(4.99)


def test_run_without_out_writes_nothing(
    toy_spec: ExperimentSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run(toy_spec, seed=2, quick=True, out=None)
    assert result.seed == 2
    assert list(tmp_path.iterdir()) == []


def test_named_streams(toy_spec: ExperimentSpec) -> None:
    ctx = ExperimentContext(toy_spec, seed=5, quick=True)
    first = ctx.rng("a").random(3)
    assert first.tolist() == stream(5, "a").random(3).tolist()
    # Cached: a second call continues the same stream instead of replaying it.
    assert ctx.rng("a").random(3).tolist() == stream(5, "a").random(6)[3:].tolist()
    assert ctx.random("a").random() == random_stream(5, "a").random()
    assert ctx.rng("b").random() != stream(5, "a").random()
    assert ctx.seed_for("x") == ExperimentContext(toy_spec, seed=5, quick=False).seed_for("x")
    assert ctx.seed_for("x") != ctx.seed_for("y")
    assert ctx.seed_for("x") != ExperimentContext(toy_spec, seed=6, quick=True).seed_for("x")
    assert 0 <= ctx.seed_for("x") < 2**63


def test_seed_changes_results(toy_spec: ExperimentSpec) -> None:
    a = run(toy_spec, seed=1, quick=True, out=None)
    b = run(toy_spec, seed=2, quick=True, out=None)
    assert a.metrics["noise_mean"] != b.metrics["noise_mean"]


def test_timings_stay_out_of_results(toy_spec: ExperimentSpec, tmp_path: Path) -> None:
    ticks = iter(np.arange(0.0, 100.0, 0.25).tolist())
    run(toy_spec, seed=1, quick=True, out=tmp_path / "timed", clock=lambda: next(ticks))
    run(toy_spec, seed=1, quick=True, out=tmp_path / "plain")
    timings = json.loads((tmp_path / "timed" / "timings.json").read_text(encoding="utf-8"))
    assert timings == {"metrics": 0.25}
    assert not (tmp_path / "plain" / "timings.json").exists()
    for name in ("results.json", "report.md"):
        assert (tmp_path / "timed" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes()


def test_progress_reporter_counts_steps(toy_spec: ExperimentSpec, tmp_path: Path) -> None:
    progress = NullProgress()
    silent = run(toy_spec, seed=1, quick=True, out=None, progress=progress)
    assert progress.descriptions == {0: "rows"}
    assert progress.steps == {0: TOY_ROWS}
    with_bars = run(toy_spec, seed=1, quick=True, out=None, progress=True)
    assert with_bars == silent


def test_missing_matplotlib_skips_plots(
    toy_spec: ExperimentSpec,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with caplog.at_level("WARNING", logger="lagless.lab"):
        result = run(toy_spec, seed=1, quick=True, out=tmp_path)
    assert not (tmp_path / "plots").exists()
    assert (tmp_path / "results.json").is_file()
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "Plots skipped: matplotlib is not installed" in report
    assert "](plots/" not in report
    assert "matplotlib is not installed" in caplog.text
    assert all(path.suffix != ".png" for path in output_files(result, tmp_path, plots=False))


def test_entry_point_must_return_its_result(toy_spec: ExperimentSpec) -> None:
    other = ExperimentSpec(
        id="test/other",
        title="t",
        entry_point=lambda ctx, params: None,  # type: ignore[arg-type,return-value]
        quick={},
        full={},
        reference={},
    )
    with pytest.raises(LocalProtocolError, match=r"must return ctx\.result"):
        run(other, seed=0, quick=True, out=None)
    with pytest.raises(ConfigError, match="unknown experiment 'test/toy'"):
        run("test/toy", seed=0, quick=True, out=None)
    with pytest.raises(LocalProtocolError, match="seed must be a non-negative int"):
        run(toy_spec, seed=-1, quick=True, out=None)


def test_recorders_reject_repeats(toy_spec: ExperimentSpec) -> None:
    ctx = ExperimentContext(toy_spec, seed=0, quick=True)
    ctx.add_metric("m", 1.0)
    with pytest.raises(LocalProtocolError, match="metric 'm' was already recorded"):
        ctx.add_metric("m", 2.0)
    ctx.add_table("t", [])
    with pytest.raises(LocalProtocolError, match="table 't' was already recorded"):
        ctx.add_table("t", [])
    with pytest.raises(LocalProtocolError, match="series name must match"):
        ctx.add_series("a/b", {"x": [1.0]})
    ctx.bar_plot("p", ["a"], {"s": [1.0]}, xlabel="", ylabel="", title="")
    with pytest.raises(LocalProtocolError, match="plot 'p' was already recorded"):
        ctx.line_plot("p", [0.0], {"s": [1.0]}, xlabel="", ylabel="", title="")
    with pytest.raises(LocalProtocolError, match="config key 'n' repeats a parameter"):
        ctx.result(config={"n": 3})
    assert ctx.timings == {}
    with ctx.timer("nothing"):
        pass
    assert ctx.timings == {}


def test_overrides_keep_names_and_kinds() -> None:
    params = {"peers": 100, "rate": 0.5, "sizes": [25, 50], "name": "x", "flag": True}
    merged = override_params(params, {"peers": 1000.0, "rate": 2, "sizes": [1000]}, "toy/x")
    assert merged == {**params, "peers": 1000.0, "rate": 2, "sizes": [1000]}
    assert params["peers"] == 100  # the spec's parameters are not modified
    for bad in ({"peers": True}, {"sizes": 5}, {"name": 3}, {"flag": 1}):
        with pytest.raises(ConfigError, match="must be a"):
            override_params(params, bad, "toy/x")
    with pytest.raises(ConfigError, match="no parameter 'nope'; its parameters: peers, rate"):
        override_params(params, {"nope": 1}, "toy/x")


def test_collector_settings_are_restored() -> None:
    before = gc.get_threshold()
    seen = []

    def probe(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
        seen.append(gc.get_threshold())
        raise RuntimeError("boom")

    spec = ExperimentSpec(
        id="test/probe", title="probe", entry_point=probe, quick={}, full={}, reference={}
    )
    with pytest.raises(RuntimeError, match="boom"):
        run(spec, seed=0, quick=True, out=None)
    assert seen == [(200_000, before[1], before[2])]
    assert gc.get_threshold() == before
