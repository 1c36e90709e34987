"""``lagless bench``: run the benchmarks in ``benchmarks/`` (they print ratios against competitors).

The benchmarks live beside the package in a source checkout (they import competitors such as
msgpack that the library itself does not need), so this command finds them relative to the
installed package and runs one by name.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

import typer

from lagless.errors import ConfigError


def benchmarks_dir() -> Path:
    """Return the ``benchmarks/`` folder of the source checkout this package was installed from."""
    return Path(__file__).resolve().parents[3] / "benchmarks"


def available() -> list[str]:
    """Return the names of the benchmarks that can be run (file stems in ``benchmarks/``)."""
    folder = benchmarks_dir()
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))


def bench(
    name: str = typer.Argument("", help="benchmark to run, e.g. 'wire'; empty lists them"),
) -> None:
    """Run a benchmark from benchmarks/ and print its ratios against competitors."""
    names = available()
    if not name:
        for entry in names:
            typer.echo(entry)
        return
    if name not in names:
        shown = names or "(none: benchmarks/ ships with a source checkout)"
        raise ConfigError(f"benchmark must be one of {shown}, got {name!r}")
    path = benchmarks_dir() / f"{name}.py"
    sys.argv = [str(path)]
    runpy.run_path(str(path), run_name="__main__")
