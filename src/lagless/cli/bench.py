"""``lagless bench``: run the benchmarks in ``benchmarks/`` (they print ratios against competitors).

The benchmarks live beside the package in a source checkout (they import competitors such as
msgpack that the library itself does not need), so this command finds them relative to the
installed package (or, for a package installed as a wheel, in the current directory) and runs
one by name. Arguments after the name go to the benchmark
(``lagless bench server --quick --json``). The first SIGINT or SIGTERM ends a benchmark with exit
status 130 or 143 and one line on stderr, without a traceback or asyncio's complaints about the
tasks it interrupted. While a benchmark runs, stderr shows a progress line: refreshed every second
with the elapsed time on a terminal, printed once when stderr is not a terminal.

The signal raises `Interrupted` wherever the benchmark is, and the benchmark unwinds from there.
Code can swallow that: asyncio's ``wait_for`` of Python 3.11 returns its result instead of raising
when the task is cancelled just as the awaited future completes, so a benchmark's main task,
cancelled by ``asyncio.run`` after the interrupt escaped from a callback, can go on to its next
stages (the likely cause of ``lagless bench transport`` still running 12 s after the signal, once
in five CI runs of ``tests/cli/test_signals.py``). So a watchdog thread started by the signal ends
the process `FORCE_AFTER` seconds later if it is still unwinding: it prints the interrupted line,
the stacks of every thread (``faulthandler``, to find what held it) and exits with the same
status.
"""

from __future__ import annotations

import faulthandler
import logging
import os
import runpy
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType

import typer

from lagless.cli.common import STOP_SIGNALS, Interrupted
from lagless.errors import ConfigError

PROGRESS_PERIOD: float = 1.0  # seconds between refreshes of the progress line on a terminal
FORCE_AFTER: float = 1.5  # seconds a benchmark may take to unwind after the first signal
HELP: frozenset[str] = frozenset({"--help", "-h"})  # our help; after a name, the script's


def benchmarks_dir() -> Path:
    """Return the ``benchmarks/`` folder to run from, that of a source checkout.

    The checkout this package runs from (an editable install) comes first; a package installed
    as a wheel (``pip install .``, which compiles the transport core) is not in one, so then
    the ``benchmarks/`` of the current directory, as when the command is run in the checkout it
    was installed from. When neither exists the first is returned (and lists nothing).
    """
    beside = Path(__file__).resolve().parents[3] / "benchmarks"
    here = Path.cwd() / "benchmarks"
    if not beside.is_dir() and here.is_dir():
        return here
    return beside


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
        shown = names or "(none: run it in a source checkout, where benchmarks/ is)"
        raise ConfigError(f"benchmark must be one of {shown}, got {name!r}")
    path = benchmarks_dir() / f"{name}.py"
    sys.argv = [str(path), *ctx.args]
    caught: list[int] = []
    unwound = threading.Event()
    started = time.monotonic()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if caught:
            return
        caught.append(signum)
        # tasks cut short by the interrupt are reported when collected; they are not errors here
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        threading.Thread(
            target=_force_exit, args=(name, signum, started, unwound), daemon=True
        ).start()
        raise Interrupted(signum)

    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}
    progress = _Progress(f"bench {name}")
    try:
        progress.start()
        runpy.run_path(str(path), run_name="__main__")
    except Exception:
        if not caught:
            raise
    except KeyboardInterrupt:
        caught.append(int(signal.SIGINT))
    finally:
        progress.stop()
        for sig, old in previous.items():
            signal.signal(sig, old)
    if caught:
        unwound.set()
        elapsed = time.monotonic() - started
        typer.echo(f"bench {name}: interrupted after {elapsed:.1f} s", err=True)
        raise typer.Exit(128 + caught[0])


def _force_exit(name: str, signum: int, started: float, unwound: threading.Event) -> None:
    """End the process if the benchmark has not unwound `FORCE_AFTER` seconds after ``signum``."""
    if unwound.wait(FORCE_AFTER):
        return
    elapsed = time.monotonic() - started
    sys.stderr.write(
        f"bench {name}: interrupted after {elapsed:.1f} s (it did not stop within "
        f"{FORCE_AFTER:g} s of the signal; where each thread was:)\n"
    )
    sys.stderr.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    os._exit(128 + signum)


class _Progress:
    """The progress line on stderr: a refreshed elapsed time on a terminal, else one line."""

    def __init__(self, label: str) -> None:
        self._label = label
        self._done = threading.Event()
        self._tty = sys.stderr.isatty()
        self._thread = threading.Thread(target=self._refresh, daemon=True)

    def start(self) -> None:
        """Show the line (and start refreshing it on a terminal)."""
        if self._tty:
            self._thread.start()
        else:
            print(f"{self._label}: running (Ctrl-C stops it)", file=sys.stderr, flush=True)

    def stop(self) -> None:
        """Stop refreshing and clear the line on a terminal."""
        if self._tty:
            self._done.set()
            self._thread.join()
            print("\r\033[K", end="", file=sys.stderr, flush=True)

    def _refresh(self) -> None:
        started = time.monotonic()
        while not self._done.wait(PROGRESS_PERIOD):
            elapsed = time.monotonic() - started
            line = f"{self._label}: running, {elapsed:.0f} s (Ctrl-C stops it)"
            print(f"\r{line}\033[K", end="", file=sys.stderr, flush=True)


bench_settings: dict[str, object] = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    "help_option_names": [],  # `bench` answers --help itself, so `bench NAME --help` reaches NAME
}
"""Typer context settings for `bench`: unknown options and extra arguments reach the script."""
