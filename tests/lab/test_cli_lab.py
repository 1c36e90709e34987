from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lagless.cli.lab import app, default_out
from lagless.lab import registered
from lagless.netsim import PROFILES

runner = CliRunner()


def test_list_shows_every_experiment_with_parameters() -> None:
    result = runner.invoke(app, ["list"], terminal_width=200)
    assert result.exit_code == 0, result.output
    for experiment_id in registered():
        assert experiment_id in result.stdout
    assert "packets=300" in result.stdout
    assert "packets=20000" in result.stdout


def test_run_prints_metrics_beside_reference_and_writes_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", "netsim/profiles", "--quick", "--seed", "4", "--out", str(out)]
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "gprs_latency_ms_min" in result.stdout
    assert "umts_loss" in result.stdout
    assert "458" in result.stdout
    assert str(out / "results.json") in result.stdout
    assert str(out / "plots" / "latency.png") in result.stdout
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["seed"] == 4
    assert data["config"]["quick"] is True
    assert (out / "report.md").is_file()
    timings = json.loads((out / "timings.json").read_text(encoding="utf-8"))
    assert set(timings) == {f"run_demo.{name}" for name in PROFILES}
    assert all(seconds >= 0 for seconds in timings.values())


def test_run_defaults_to_lab_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert default_out("netsim/profiles") == Path("lab-out/netsim-profiles")
    result = runner.invoke(app, ["run", "netsim/profiles", "--quick"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "lab-out" / "netsim-profiles" / "results.json").is_file()


def test_unknown_id_is_one_line_suggesting_close_ids() -> None:
    result = runner.invoke(app, ["run", "netsim/profile"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    count = len(registered())
    assert lines == [
        "error: unknown experiment 'netsim/profile'; did you mean netsim/profiles? "
        f"('lagless lab list' shows all {count})"
    ]


def test_set_replaces_parameters_and_is_recorded(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", "netsim/profiles", "--quick", "--set", "packets=120", "--out", str(out)]
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert data["config"]["packets"] == 120
    gprs = data["tables"]["profiles"][0]
    assert gprs["received"] == pytest.approx(120 * (1 - gprs["loss"]), abs=0.5)


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("nope=1", "has no parameter 'nope'; its parameters: packets"),
        (
            "packets=abc",
            "parameter 'packets' must be a number in JSON syntax like 300, got \"abc\"",
        ),
        ("packets", "--set takes KEY=VALUE with a JSON VALUE, got 'packets'"),
        ("=5", "--set takes KEY=VALUE"),
    ],
)
def test_bad_set_is_one_error_line(setting: str, message: str) -> None:
    result = runner.invoke(app, ["run", "netsim/profiles", "--quick", "--set", setting])
    assert result.exit_code == 2
    assert message in result.output
