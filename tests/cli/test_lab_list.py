"""``lagless lab list`` shows each experiment's measured quick and full run times."""

from __future__ import annotations

import pytest

from lagless.cli.app import app
from lagless.cli.common import run_app
from lagless.cli.lab import duration_text
from lagless.lab import registered
from lagless.lab.run_times import RUN_SECONDS


def test_measured_times_name_registered_experiments_and_quick_runs_are_short() -> None:
    assert set(RUN_SECONDS) <= set(registered())
    assert len(RUN_SECONDS) >= 28
    for quick, full in RUN_SECONDS.values():
        assert 0 < quick < 60  # DESIGN.md: --quick finishes in under a minute
        assert full is None or full > 0


def test_duration_text_rounds_for_a_reader() -> None:
    assert [duration_text(s) for s in (7.6, 95.0, 189.1, 900.0, None)] == [
        "8 s",
        "1.6 min",
        "3.2 min",
        "15 min",
        "> 4 min",
    ]


def test_list_shows_the_times(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(app, ["lab", "list"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "realtime/simulation" in line)
    quick, full = RUN_SECONDS["realtime/simulation"]
    assert f"{duration_text(quick)} / {duration_text(full)}" in row
