"""Run a registered experiment from one seed and write its output directory (DESIGN.md "Lab").

Implements DESIGN.md "Lab" (``results.json``, CSV, PNG, ``report.md``) and STYLE §5 "Randomness"
(every generator of a run is a named stream of its root seed). Output directory layout::

    results.json          the six keys of DESIGN.md; byte-identical for one seed
    report.md             metrics beside the thesis, tables, plot links
    tables/<name>.csv     every table of results.json, all rows
    series/<name>.csv     raw series (not in results.json)
    plots/<name>.png      plots (only with matplotlib, the [plots] extra)
    timings.json          wall-clock timings, only when a clock was injected and timed

Decisions:
    * The lab never reads a clock (DESIGN.md "sans-I/O contract"): timings exist only when the
      caller injects ``clock`` (the CLI passes ``time.perf_counter``), and they go to
      ``timings.json``, never to ``results.json`` or ``report.md``
      (``test_runner.py::test_timings_stay_out_of_results``).
    * ``ctx.rng(name)`` is ``lagless.netsim.stream(seed, name)`` and is cached per name, so asking
      twice continues one stream instead of replaying it (``test_runner.py::test_named_streams``).
    * Without matplotlib the run still succeeds: plots are skipped with a logged warning and
      ``report.md`` says so (``test_runner.py::test_missing_matplotlib_skips_plots``).
    * Files already in the output directory under other names are left alone; files of this run
      are overwritten. CSV uses ``\\n`` line ends, ``true``/``false`` and empty cells for ``None``.
    * Speed, not results: the entry point runs with a young-generation threshold of 200 000
      allocations instead of 700 (`gc_for_simulations`). A 300-peer gossip swarm holds hundreds
      of thousands of long-lived objects that the default collector keeps re-scanning: 26.6 s
      of wall time per simulated second against 21.5 s with the raised threshold (measured on
      the busy 2-core machine). The thresholds are restored afterwards
      (``test_runner.py::test_collector_settings_are_restored``).
"""

from __future__ import annotations

import csv
import gc
import io
import json
import logging
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Final, Literal, TypeVar, cast

import numpy as np

from lagless.errors import ConfigError, LocalProtocolError
from lagless.lab.plots import plots_available, render_plot
from lagless.lab.progress import NullProgress, Progress, RichProgress, track
from lagless.lab.registry import ExperimentSpec, make
from lagless.lab.report import render_report
from lagless.lab.result import JSONScalar, JSONValue, Metric, Plot, Result, check_name, round_float
from lagless.netsim.seeds import random_stream, stream

__all__ = ["ExperimentContext", "output_files", "override_params", "run", "write_outputs"]

_log = logging.getLogger("lagless.lab")

T = TypeVar("T")

PLOTS_MISSING: Final = "Plots skipped: matplotlib is not installed (pip install 'lagless[plots]')."


class ExperimentContext:
    """What an entry point gets: seed, mode, named random streams, progress and recorders.

    Entry points record metrics, tables, series and plots here and finish with
    ``return ctx.result()``.

    Args:
        spec: The experiment being run.
        seed: Root seed (non-negative int).
        quick: Whether the ``quick`` parameters are used.
        out: The output directory, or ``None`` when nothing is written.
        progress: Where progress goes (default: silent).
        clock: A monotonic clock (seconds) for ``timer``; ``None`` disables timing.
        overrides: Parameters replacing the spec's (see `override_params`).

    Raises:
        ConfigError: an override names an unknown parameter or has the wrong kind of value.
    """

    def __init__(
        self,
        spec: ExperimentSpec,
        *,
        seed: int,
        quick: bool,
        out: Path | None = None,
        progress: Progress | None = None,
        clock: Callable[[], float] | None = None,
        overrides: Mapping[str, JSONValue] | None = None,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise LocalProtocolError(f"seed must be a non-negative int, got {seed!r}")
        self.spec = spec
        """The experiment being run."""
        self.seed = seed
        """Root seed of the run."""
        self.quick = quick
        """``True`` for ``--quick``."""
        self.out = out
        """Output directory (``None``: nothing is written). Entry points do not write into it."""
        self.progress: Progress = progress if progress is not None else NullProgress()
        """The progress reporter; prefer ``track``."""
        self._clock = clock
        self._params = override_params(spec.params(quick=quick), overrides or {}, spec.id)
        self._rngs: dict[str, np.random.Generator] = {}
        self._randoms: dict[str, random.Random] = {}
        self._metrics: dict[str, Metric] = {}
        self._tables: dict[str, list[Mapping[str, JSONScalar]]] = {}
        self._series: dict[str, Mapping[str, Sequence[float] | np.ndarray]] = {}
        self._plots: dict[str, Plot] = {}
        self._timings: dict[str, float] = {}

    @property
    def params(self) -> Mapping[str, JSONValue]:
        """The parameters of this run (``spec.quick`` or ``spec.full``, then the overrides)."""
        return self._params

    def rng(self, name: str) -> np.random.Generator:
        """Return the numpy stream ``name`` of this run's seed (cached: one generator per name).

        Equal to ``lagless.netsim.stream(seed, name)`` on first use (STYLE §5 "Randomness").
        """
        if name not in self._rngs:
            self._rngs[name] = stream(self.seed, name)
        return self._rngs[name]

    def random(self, name: str) -> random.Random:
        """Return the ``random.Random`` stream ``name`` of this run's seed (cached per name)."""
        if name not in self._randoms:
            self._randoms[name] = random_stream(self.seed, name)
        return self._randoms[name]

    def seed_for(self, name: str) -> int:
        """Return a root seed in [0, 2**63) for a lower layer that takes ``seed: int``.

        It depends only on this run's seed and ``name``; use one name per independent part (e.g.
        one simulated network per profile).
        """
        return int(stream(self.seed, f"seed_for.{name}").integers(0, 2**63 - 1))

    def track(
        self, items: Iterable[T], *, description: str, total: int | None = None
    ) -> Iterator[T]:
        """Yield ``items`` and advance a progress bar per item (silent unless the CLI runs it)."""
        return track(self.progress, items, description=description, total=total)

    @contextmanager
    def timer(self, name: str) -> Iterator[None]:
        """Add the wall-clock time (s) of the ``with`` body to timing ``name``.

        A no-op without an injected clock. Timings go to ``timings.json`` only.
        """
        if self._clock is None:
            yield
            return
        start = self._clock()
        try:
            yield
        finally:
            self._timings[name] = self._timings.get(name, 0.0) + self._clock() - start

    @property
    def timings(self) -> Mapping[str, float]:
        """Timings recorded so far, seconds by name (empty without a clock)."""
        return dict(self._timings)

    def add_metric(self, name: str, value: float | None) -> None:
        """Record metric ``name`` (units in the name, e.g. ``_ms``); NaN/inf are stored as None.

        Raises:
            LocalProtocolError: the name was recorded before.
        """
        if not isinstance(name, str) or not name:
            raise LocalProtocolError(f"metric name must be a non-empty str, got {name!r}")
        if name in self._metrics:
            raise LocalProtocolError(f"metric {name!r} was already recorded")
        self._metrics[name] = value

    def add_metrics(self, values: Mapping[str, float | None], *, prefix: str = "") -> None:
        """Record several metrics, each named ``prefix + key``.

        Raises:
            LocalProtocolError: a name was recorded before.
        """
        for key, value in values.items():
            self.add_metric(prefix + key, value)

    def add_table(self, name: str, rows: Iterable[Mapping[str, JSONScalar]]) -> None:
        """Record table ``name`` (list of row dicts): in results.json and ``tables/<name>.csv``.

        Raises:
            LocalProtocolError: a bad or repeated name.
        """
        check_name(name, "table name")
        if name in self._tables:
            raise LocalProtocolError(f"table {name!r} was already recorded")
        self._tables[name] = [dict(row) for row in rows]

    def add_series(self, name: str, columns: Mapping[str, Sequence[float] | np.ndarray]) -> None:
        """Record raw series ``name`` (column -> equal-length numbers): ``series/<name>.csv`` only.

        Raises:
            LocalProtocolError: a bad or repeated name.
        """
        check_name(name, "series name")
        if name in self._series:
            raise LocalProtocolError(f"series {name!r} was already recorded")
        self._series[name] = dict(columns)

    def _add_plot(self, plot: Plot) -> None:
        if plot.name in self._plots:
            raise LocalProtocolError(f"plot {plot.name!r} was already recorded")
        self._plots[plot.name] = plot

    def line_plot(
        self,
        name: str,
        x: Sequence[float] | np.ndarray,
        series: Mapping[str, Sequence[float | None] | np.ndarray],
        *,
        xlabel: str,
        ylabel: str,
        title: str,
        logy: bool = False,
    ) -> None:
        """Record a line plot drawn into ``plots/<name>.png`` (see ``plots.line_plot``).

        Raises:
            LocalProtocolError: a bad or repeated name, or series not as long as ``x``.
        """
        x_values = tuple(np.asarray(x, dtype=np.float64).tolist())
        self._add_plot(_plot(name, "line", x_values, series, (xlabel, ylabel, title), logy))

    def bar_plot(
        self,
        name: str,
        labels: Sequence[str],
        series: Mapping[str, Sequence[float | None] | np.ndarray],
        *,
        xlabel: str,
        ylabel: str,
        title: str,
        logy: bool = False,
    ) -> None:
        """Record a grouped bar plot drawn into ``plots/<name>.png`` (see ``plots.bar_plot``).

        Raises:
            LocalProtocolError: a bad or repeated name, or series not as long as ``labels``.
        """
        x_labels = tuple(str(label) for label in labels)
        self._add_plot(_plot(name, "bar", x_labels, series, (xlabel, ylabel, title), logy))

    def result(self, *, config: Mapping[str, JSONValue] | None = None) -> Result:
        """Return the ``Result`` of everything recorded.

        Args:
            config: Extra entries for ``results.json`` ``config`` (e.g. derived settings); they
                must not repeat a parameter name.

        Returns:
            A ``Result`` whose config is the parameters plus ``quick`` plus ``config``, and whose
            reference is the spec's.

        Raises:
            LocalProtocolError: ``config`` repeats a parameter name or holds non-JSON data.
        """
        merged: dict[str, JSONValue] = {**self.params, "quick": self.quick}
        for key, value in (config or {}).items():
            if key in merged:
                raise LocalProtocolError(f"config key {key!r} repeats a parameter; rename it")
            merged[key] = value
        return Result(
            experiment=self.spec.id,
            seed=self.seed,
            config=merged,
            metrics=self._metrics,
            tables={name: tuple(rows) for name, rows in self._tables.items()},
            reference=self.spec.reference,
            series=cast("Mapping[str, Mapping[str, tuple[float | None, ...]]]", self._series),
            plots=tuple(self._plots.values()),
        )


def _plot(
    name: str,
    kind: Literal["line", "bar"],
    x: tuple[float | str, ...],
    series: Mapping[str, Sequence[float | None] | np.ndarray],
    texts: tuple[str, str, str],
    logy: bool,
) -> Plot:
    """Build a ``Plot``, every series as float64; ``texts`` is ``(xlabel, ylabel, title)``."""
    xlabel, ylabel, title = texts
    return Plot(
        name=name,
        kind=kind,
        x=x,
        series={k: tuple(np.asarray(v, dtype=np.float64).tolist()) for k, v in series.items()},
        xlabel=xlabel,
        ylabel=ylabel,
        title=title,
        logy=logy,
    )


def _csv_text(columns: Sequence[str], rows: Iterable[Sequence[JSONScalar]]) -> str:
    def cell(value: JSONScalar) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return "true" if value else "false"
        return repr(value) if isinstance(value, float) else str(value)

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([cell(v) for v in row] for row in rows)
    return buffer.getvalue()


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write(text)


def output_files(result: Result, out: Path, *, plots: bool = True) -> list[Path]:
    """Return the files ``write_outputs`` writes for ``result`` into ``out``, in writing order.

    ``timings.json`` is not listed (it depends on the clock, not on the result).
    """
    files = [out / "results.json", out / "report.md"]
    files += [out / "tables" / f"{name}.csv" for name in sorted(result.tables)]
    files += [out / "series" / f"{name}.csv" for name in sorted(result.series)]
    if plots:
        files += [out / "plots" / f"{plot.name}.png" for plot in result.plots]
    return files


def write_outputs(
    result: Result,
    spec: ExperimentSpec,
    out: Path,
    *,
    quick: bool,
    timings: Mapping[str, float] | None = None,
) -> list[Path]:
    """Write ``results.json``, ``report.md``, CSVs, PNGs (and ``timings.json``) into ``out``.

    Args:
        result: The run's result.
        spec: Its spec (title and description for the report).
        quick: Whether the run used the ``quick`` parameters.
        out: The output directory; created if missing.
        timings: Wall-clock timings in seconds; written to ``timings.json`` when non-empty.

    Returns:
        The paths written, in ``output_files`` order (plus ``timings.json`` last if written).
    """
    draw = bool(result.plots) and plots_available()
    note = None
    if result.plots and not draw:
        _log.warning("%s: %s", result.experiment, PLOTS_MISSING)
        note = PLOTS_MISSING
    out.mkdir(parents=True, exist_ok=True)
    _write(out / "results.json", result.to_json())
    _write(out / "report.md", render_report(result, spec, quick=quick, plots_note=note))
    for name, rows in result.tables.items():
        columns = Result.table_columns(rows)
        body = ([row.get(c) for c in columns] for row in rows)
        _write(out / "tables" / f"{name}.csv", _csv_text(columns, body))
    for name, series in result.series.items():
        columns = list(series)
        _write(
            out / "series" / f"{name}.csv", _csv_text(columns, zip(*series.values(), strict=True))
        )
    if draw:
        for plot in result.plots:
            render_plot(plot, out / "plots" / f"{plot.name}.png")
    files = output_files(result, out, plots=draw)
    if timings:
        rounded = {name: round_float(seconds) for name, seconds in timings.items()}
        _write(out / "timings.json", json.dumps(rounded, sort_keys=True, indent=2) + "\n")
        files.append(out / "timings.json")
    return files


_YOUNG_THRESHOLD: Final = 200_000  # allocations between young-generation collections


@contextmanager
def gc_for_simulations() -> Iterator[None]:
    """Run the body with the young-generation threshold raised to `_YOUNG_THRESHOLD`.

    Restores the previous thresholds on exit, also on error. Reference counting still frees
    every object as soon as it is unreachable; only reference cycles wait longer.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(_YOUNG_THRESHOLD, thresholds[1], thresholds[2])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


def _kind(value: JSONValue) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


def override_params(
    params: Mapping[str, JSONValue], overrides: Mapping[str, JSONValue], experiment_id: str
) -> Mapping[str, JSONValue]:
    """Return ``params`` with ``overrides`` applied (``lagless lab run --set KEY=VALUE``).

    An override must name an existing parameter and keep its kind (number, bool, str, list or
    dict); an int may replace a float and the reverse, as JSON does not tell them apart. The
    merged parameters land in ``results.json``'s config, so a run with overrides says so.

    Raises:
        ConfigError: an unknown name (the message lists the valid ones) or a value of another kind.
    """
    for key, value in overrides.items():
        if key not in params:
            raise ConfigError(
                f"{experiment_id} has no parameter {key!r}; its parameters: {', '.join(params)}"
            )
        if _kind(value) != _kind(params[key]):
            raise ConfigError(
                f"{experiment_id} parameter {key!r} must be a {_kind(params[key])} in JSON "
                f"syntax like {json.dumps(params[key])}, got {json.dumps(value)}"
            )
    return {**params, **overrides}


def run(
    experiment: str | ExperimentSpec,
    *,
    seed: int,
    quick: bool,
    out: Path | None,
    progress: bool | Progress = False,
    clock: Callable[[], float] | None = None,
    overrides: Mapping[str, JSONValue] | None = None,
) -> Result:
    """Run an experiment from ``seed`` and, when ``out`` is given, write its output directory.

    Args:
        experiment: A registered id (``"netsim/profiles"``) or a spec (registered or not).
        seed: Root seed; every random stream of the run derives from it.
        quick: Use the spec's ``quick`` parameters instead of ``full``.
        out: Output directory, or ``None`` to only return the result.
        progress: ``True`` for rich progress bars on stderr, ``False`` for silence, or a
            ``Progress`` reporter.
        clock: A monotonic clock (seconds) for ``ctx.timer``; timings go to ``timings.json``.
        overrides: Parameters replacing the spec's ones (`override_params`).

    Returns:
        The run's ``Result``.

    Raises:
        ConfigError: an unknown experiment id (the message lists the valid ids), or a bad
            override.
        LocalProtocolError: a bad seed, or the entry point returned something other than this
            run's ``Result``.
    """
    spec = experiment if isinstance(experiment, ExperimentSpec) else make(experiment)
    bars = RichProgress() if progress is True else None
    reporter: Progress | None = bars
    if not isinstance(progress, bool):
        reporter = progress
    with bars if bars is not None else nullcontext():
        ctx = ExperimentContext(
            spec,
            seed=seed,
            quick=quick,
            out=out,
            progress=reporter,
            clock=clock,
            overrides=overrides,
        )
        with gc_for_simulations():
            result = spec.entry_point(ctx, ctx.params)
    if not isinstance(result, Result) or result.experiment != spec.id or result.seed != seed:
        raise LocalProtocolError(
            f"entry point of {spec.id!r} must return ctx.result() (a Result for this id and seed), "
            f"got {type(result).__name__}"
        )
    if out is not None:
        write_outputs(result, spec, out, quick=quick, timings=ctx.timings)
    return result
