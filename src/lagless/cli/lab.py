"""``lagless lab``: list the registered experiments and run one into an output directory.

Thin commands over ``lagless.lab`` (STYLE §5 "CLI"): they parse, call ``registered``/``make`` or
``run`` and print. The default output directory is ``lab-out/<id with '/' replaced by '-'>``.
An unknown id (or any other ``ConfigError``) prints one ``error: ...`` line
on stderr and exits with status 2, the same status the root app gives every ``LaglessError``.
The CLI injects ``time.perf_counter`` as the run's clock, so ``ctx.timer`` timings land in
``timings.json`` and the run's wall time is printed; neither reaches ``results.json``.

Decisions (``tests/cli/test_errors.py``): an unknown id suggests the closest ids (``difflib``);
``--set`` values are checked before the run starts, so their errors come before any progress
bar; progress bars are drawn only when stderr is a terminal (a pipe gets no blank line left
behind by them); an output directory that cannot be created is one ``error:`` line before the
run; SIGINT or SIGTERM stops a run with one line on stderr and exit status 130 or 143.
``lab list`` shows the measured run times of ``lagless.lab.run_times``.
"""

from __future__ import annotations

import difflib
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from lagless.cli.common import Interrupted, fail, interruptible, make_app
from lagless.errors import ConfigError
from lagless.lab import compare, make, output_files, plots_available, registered, run
from lagless.lab.registry import ExperimentSpec
from lagless.lab.report import format_value
from lagless.lab.result import JSONValue
from lagless.lab.run_times import FULL_CAP, RUN_SECONDS
from lagless.lab.runner import override_params

PIPE_WIDTH = 200  # columns of ``lab list`` when stdout is not a terminal

app = make_app("Lab experiments: run on the simulator, write results.json, CSV, PNG and report.md.")


def _summary(params: Mapping[str, JSONValue]) -> str:
    return ", ".join(f"{key}={format_value(value)}" for key, value in params.items()) or "-"


def default_out(experiment_id: str) -> Path:
    """Return ``lab-out/<id with '/' replaced by '-'>``, the default output directory."""
    return Path("lab-out") / experiment_id.replace("/", "-")


def parse_settings(settings: list[str]) -> dict[str, JSONValue]:
    """Parse ``KEY=VALUE`` strings; VALUE is JSON, or a plain string when it is not JSON.

    Raises:
        ConfigError: a setting without ``=`` or with an empty key.
    """
    out: dict[str, JSONValue] = {}
    for item in settings:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set takes KEY=VALUE with a JSON VALUE, got {item!r}")
        try:
            value: JSONValue = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[key.strip()] = value
    return out


def duration_text(seconds: float | None) -> str:
    """Return a rounded run time for ``lab list``: ``"8 s"``, ``"2.5 min"``, or ``"> 4 min"``
    for a run longer than the measuring cap (``None``)."""
    if seconds is None:
        return f"> {FULL_CAP / 60:.0f} min"
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.2g} min" if seconds < 600 else f"{seconds / 60:.0f} min"


def _find(experiment_id: str) -> ExperimentSpec:
    ids = registered()
    if experiment_id not in ids:
        close = difflib.get_close_matches(experiment_id, ids, n=3, cutoff=0.6)
        close += [i for i in ids if experiment_id and experiment_id in i and i not in close][:3]
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise ConfigError(
            f"unknown experiment {experiment_id!r}; {hint}('lagless lab list' shows all {len(ids)})"
        )
    return make(experiment_id)


@app.command("list")
def list_experiments() -> None:
    """List every experiment with its quick and full parameters and measured run times."""
    table = Table(
        box=box.SIMPLE_HEAD,
        title="lagless lab experiments",
        caption="time: measured wall time of --quick / full runs on a 2-core machine",
    )
    table.add_column("id", no_wrap=True, style="bold")
    table.add_column("title")
    table.add_column("time", no_wrap=True)
    table.add_column("--quick")
    table.add_column("full")
    for experiment_id in registered():
        spec = make(experiment_id)
        measured = RUN_SECONDS.get(spec.id)
        times = "not measured" if measured is None else " / ".join(map(duration_text, measured))
        table.add_row(spec.id, spec.title, times, _summary(spec.quick), _summary(spec.full))
    console = Console()
    if not console.is_terminal:
        console = Console(width=max(console.width, PIPE_WIDTH))  # a pipe gets whole parameters
    console.print(table)


@app.command("run")
def run_experiment(
    experiment_id: Annotated[str, typer.Argument(metavar="ID", help="experiment id, see 'list'")],
    quick: Annotated[bool, typer.Option("--quick", help="small parameters (< 1 min)")] = False,
    seed: Annotated[int, typer.Option(help="root seed of every random stream", min=0)] = 0,
    out: Annotated[
        Path | None, typer.Option(help="output directory [default: lab-out/<id>]")
    ] = None,
    settings: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="replace one parameter; VALUE is JSON (--set peers=1000 --set sizes=[100,1000])",
        ),
    ] = None,
) -> None:
    """Run one experiment; print its metrics beside the thesis and where the files went."""
    try:
        spec = _find(experiment_id)
        overrides = parse_settings(settings or [])
        override_params(spec.quick if quick else spec.full, overrides, spec.id)
    except ConfigError as exc:
        fail(str(exc))
    target = out if out is not None else default_out(spec.id)
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail(f"--out {target} cannot be created: {exc.strerror or exc}")
    started = time.perf_counter()
    try:
        with interruptible():
            mode = "quick" if quick else "full"
            typer.echo(f"running {spec.id} ({mode}, seed {seed}) into {target}", err=True)
            result = run(
                spec,
                seed=seed,
                quick=quick,
                out=target,
                progress=sys.stderr.isatty(),
                clock=time.perf_counter,
                overrides=overrides,
            )
    except Interrupted as exc:
        elapsed = time.perf_counter() - started
        typer.echo(f"lab run {spec.id}: interrupted after {elapsed:.1f} s", err=True)
        raise typer.Exit(128 + exc.signum) from None
    except OSError as exc:
        fail(f"cannot write the results to {target}: {exc.strerror or exc}")
    elapsed = time.perf_counter() - started
    console = Console()
    table = Table(title=f"{spec.id}: {spec.title} (seed {seed}, {'quick' if quick else 'full'})")
    table.add_column("metric", no_wrap=True)
    table.add_column("ours", justify="right", no_wrap=True)
    table.add_column("thesis", justify="right", no_wrap=True)
    table.add_column("ours / thesis", justify="right", no_wrap=True)
    for row in compare(result):
        table.add_row(
            row.metric, format_value(row.ours), format_value(row.thesis), format_value(row.ratio)
        )
    others = len(set(result.metrics) - set(result.reference))
    if table.row_count:
        console.print(table)
    console.print(f"{others} further metrics without a thesis value are in report.md.")
    files = output_files(result, target, plots=plots_available())
    # Plain echo, not rich: paths must not be wrapped at the terminal width.
    typer.echo(f"wrote {len(files)} files to {target} in {elapsed:.1f} s:")
    for path in files:
        typer.echo(f"  {path}")
