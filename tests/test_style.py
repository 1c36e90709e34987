"""House style enforced by tools: ``ruff check`` and ``ruff format --check`` are clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args", [["check"], ["format", "--check"]], ids=["check", "format"])
def test_ruff_is_clean(args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "src", "tests", "benchmarks"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
