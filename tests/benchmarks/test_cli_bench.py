"""``lagless bench``: lists the benchmarks, rejects unknown names, passes arguments through."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from lagless.cli import bench

ROOT = Path(__file__).resolve().parents[2]


def _lagless(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lagless", path=str(Path(sys.executable).parent))
    assert exe is not None
    return subprocess.run(
        [exe, *args], capture_output=True, text=True, timeout=60, cwd=ROOT, check=False
    )


def test_no_name_lists_the_benchmarks() -> None:
    done = _lagless("bench")
    assert done.returncode == 0, done.stderr
    names = done.stdout.split()
    assert {"server", "transport", "wire"} <= set(names)
    assert names == sorted(names)


def test_unknown_name_is_one_line_and_status_2() -> None:
    done = _lagless("bench", "nope")
    assert done.returncode == 2
    assert done.stderr.startswith("error: benchmark must be one of")
    assert "Traceback" not in done.stderr


def test_options_after_the_name_reach_the_script() -> None:
    done = _lagless("bench", "server", "--help")  # argparse in the script answers, not typer
    assert done.returncode == 0, done.stderr
    assert "usage: lagless bench server" in done.stdout
    assert "--no-pygase" in done.stdout


def test_help_before_a_name_is_the_commands_own() -> None:
    done = _lagless("bench", "--help")
    assert done.returncode == 0, done.stderr
    assert "Usage: lagless bench" in done.stdout


def test_a_package_installed_as_a_wheel_runs_the_benchmarks_of_the_current_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    site = tmp_path / "site-packages" / "lagless" / "cli"
    site.mkdir(parents=True)
    checkout = tmp_path / "checkout"
    (checkout / "benchmarks").mkdir(parents=True)
    (checkout / "benchmarks" / "wire.py").write_text("")
    monkeypatch.setattr(bench, "__file__", str(site / "bench.py"))
    monkeypatch.chdir(tmp_path)
    assert bench.available() == []  # neither beside the package nor here
    monkeypatch.chdir(checkout)
    assert bench.benchmarks_dir() == checkout / "benchmarks"
    assert bench.available() == ["wire"]


def test_the_checkout_the_package_runs_from_comes_before_the_current_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    checkout = tmp_path / "checkout"  # an editable install: src/lagless/cli/bench.py in it
    (checkout / "src" / "lagless" / "cli").mkdir(parents=True)
    (checkout / "benchmarks").mkdir()
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "benchmarks").mkdir(parents=True)
    monkeypatch.setattr(bench, "__file__", str(checkout / "src" / "lagless" / "cli" / "bench.py"))
    monkeypatch.chdir(elsewhere)
    assert bench.benchmarks_dir() == checkout / "benchmarks"
