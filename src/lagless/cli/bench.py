"""``lagless bench``: run the benchmarks in ``benchmarks/`` (they print ratios against competitors).

The benchmarks live beside the package in a source checkout (they import competitors such as
msgpack that the library itself does not need), so this command finds them relative to the
installed package and runs one by name. Arguments after the name go to the benchmark
(``lagless bench server --quick --json``). Ctrl-C ends a benchmark with exit status 130 and one
line on stderr, without a traceback or asyncio's complaints about the tasks it interrupted.
"""

from __future__ import annotations

import logging
import runpy
import sys
from pathlib import Path

import typer

from lagless.errors import ConfigError

INTERRUPTED: int = 130  # exit status of a program ended by SIGINT (128 + 2)
HELP: frozenset[str] = frozenset({"--help", "-h"})  # our help; after a name, the script's


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
    ctx: typer.Context,
    name: str = typer.Argument("", help="benchmark to run, e.g. 'wire'; empty lists them"),
) -> None:
    """Run a benchmark from benchmarks/ and print its ratios against competitors.

    Extra arguments are passed to the benchmark, e.g. ``lagless bench server --quick --json``
    (``lagless bench server --help`` shows the benchmark's own options).
    """
    names = available()
    if name in HELP or (not name and HELP & set(ctx.args)):
        typer.echo(ctx.get_help())
        return
    if not name:
        for entry in names:
            typer.echo(entry)
        return
    if name not in names:
        shown = names or "(none: benchmarks/ ships with a source checkout)"
        raise ConfigError(f"benchmark must be one of {shown}, got {name!r}")
    path = benchmarks_dir() / f"{name}.py"
    sys.argv = [str(path), *ctx.args]
    try:
        runpy.run_path(str(path), run_name="__main__")
    except KeyboardInterrupt:
        # tasks cut short by the interrupt are reported when collected; they are not errors here
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        typer.echo(f"bench {name}: interrupted", err=True)
        raise typer.Exit(INTERRUPTED) from None


bench_settings: dict[str, object] = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    "help_option_names": [],  # `bench` answers --help itself, so `bench NAME --help` reaches NAME
}
"""Typer context settings for `bench`: unknown options and extra arguments reach the script."""
