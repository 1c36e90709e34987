"""``lagless lab``: list the registered experiments and run one into an output directory.

Thin commands over ``lagless.lab`` (STYLE §5 "CLI"): they parse, call ``registered``/``make`` or
``run`` and print. The default output directory is ``lab-out/<id with '/' replaced by '-'>``.
An unknown id (or any other ``ConfigError``) prints one ``error: ...`` line listing the valid ids
on stderr and exits with status 2, the same status the root app gives every ``LaglessError``.
The CLI injects ``time.perf_counter`` as the run's clock, so ``ctx.timer`` timings land in
``timings.json`` and the run's wall time is printed; neither reaches ``results.json``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from lagless.errors import ConfigError
from lagless.lab import compare, make, output_files, plots_available, registered, run
from lagless.lab.report import format_value
from lagless.lab.result import JSONValue

app = typer.Typer(
    help="Lab experiments: run on the simulator, write results.json, CSV, PNG and report.md.",
    no_args_is_help=True,
    add_completion=False,
)


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
            raise ConfigError(f"--set takes KEY=VALUE, got {item!r}")
        try:
            value: JSONValue = json.loads(raw)
        except json.JSONDecodeError:
            value = raw
        out[key.strip()] = value
    return out


@app.command("list")
def list_experiments() -> None:
    """List every registered experiment with its quick and full parameters."""
    table = Table(box=box.SIMPLE_HEAD, title="lagless lab experiments")
    table.add_column("id", no_wrap=True, style="bold")
    table.add_column("title")
    table.add_column("--quick")
    table.add_column("full")
    for experiment_id in registered():
        spec = make(experiment_id)
        table.add_row(spec.id, spec.title, _summary(spec.quick), _summary(spec.full))
    Console().print(table)


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
        spec = make(experiment_id)
        overrides = parse_settings(settings or [])
        target = out if out is not None else default_out(spec.id)
        started = time.perf_counter()
        result = run(
            spec,
            seed=seed,
            quick=quick,
            out=target,
            progress=True,
            clock=time.perf_counter,
            overrides=overrides,
        )
        elapsed = time.perf_counter() - started
    except ConfigError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
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
