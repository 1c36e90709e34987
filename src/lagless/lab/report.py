"""``report.md`` for a lab run: measured metrics beside the thesis's numbers (DESIGN.md "Lab").

Implements DESIGN.md "Lab": a Markdown report "that puts the measured numbers beside the thesis's
numbers", with every table rendered and the plots linked. Also used by ``lagless lab run`` to print
the same comparison.

Decisions:
    * The comparison lists every metric that has a reference, then every reference without a
      metric (so a missing measurement is visible), then the other metrics in a second table
      (``test_report.py::test_report_puts_metrics_beside_reference``).
    * The ratio is ours / thesis (empty when the thesis value is 0 or ours is missing) and the
      difference is ours - thesis; both in the metric's own unit.
    * Tables show at most ``MAX_REPORT_ROWS`` rows and cells at most ``MAX_CELL_CHARS`` characters;
      the line under each table links the CSV that holds all of it
      (``test_report.py::test_long_tables_are_truncated``).
    * Numbers print with ``REPORT_DIGITS`` significant digits; missing or non-finite values print
      as an em dash. Nothing machine- or time-dependent goes into the report, so it is as
      reproducible as ``results.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from lagless.lab.registry import ExperimentSpec
from lagless.lab.result import JSONScalar, JSONValue, Metric, Result

__all__ = [
    "MAX_CELL_CHARS",
    "MAX_REPORT_ROWS",
    "REPORT_DIGITS",
    "Comparison",
    "compare",
    "format_value",
    "render_report",
]

MAX_REPORT_ROWS: Final = 25  # rows of a table shown in report.md; the CSV has all of them
MAX_CELL_CHARS: Final = 60  # characters of one table cell shown in report.md
REPORT_DIGITS: Final = 6  # significant digits of numbers in report.md and on the CLI
MISSING: Final = "—"  # shown for a missing or non-finite value


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """One metric beside its thesis value, in the metric's own unit."""

    metric: str
    """Metric name, e.g. ``"umts_latency_ms_mean"``."""
    ours: Metric
    """The measured value; ``None`` when not measured or not finite."""
    thesis: float | None
    """The reference value; ``None`` when the thesis has no number for this metric."""
    ratio: float | None
    """``ours / thesis``; ``None`` when either is missing or the thesis value is 0."""
    difference: float | None
    """``ours - thesis``; ``None`` when either is missing."""


def compare(result: Result) -> list[Comparison]:
    """Return the metrics that have a reference (sorted), then references nobody measured.

    Metrics without a reference are not included; they are ``result.metrics`` minus these names.
    """
    rows: list[Comparison] = []
    for name in sorted(result.reference, key=lambda n: (n not in result.metrics, n)):
        thesis = result.reference[name]
        ours = result.metrics.get(name)
        ratio = difference = None
        if ours is not None:
            ratio = ours / thesis if thesis != 0 else None
            difference = ours - thesis
        rows.append(
            Comparison(metric=name, ours=ours, thesis=thesis, ratio=ratio, difference=difference)
        )
    return rows


def format_value(value: JSONValue) -> str:
    """Format a value for Markdown or a terminal table.

    Examples:
        >>> format_value(2 / 3), format_value(None), format_value(12), format_value(True)
        ('0.666667', '—', '12', 'true')
    """
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.{REPORT_DIGITS}g}"
    if isinstance(value, list):
        return ", ".join(format_value(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def _cell(value: JSONValue) -> str:
    text = format_value(value).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= MAX_CELL_CHARS else text[: MAX_CELL_CHARS - 1] + "…"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool]) -> str:
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if n else "---" for n in numeric) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)


def _comparison_section(result: Result) -> list[str]:
    rows = [
        [f"`{c.metric}`", _cell(c.ours), _cell(c.thesis), _cell(c.ratio), _cell(c.difference)]
        for c in compare(result)
    ]
    lines = ["## Metrics beside the thesis", ""]
    if rows:
        header = ["metric", "ours", "thesis", "ours / thesis", "ours - thesis"]
        lines += [_table(header, rows, [False, True, True, True, True]), ""]
    else:
        lines += ["_This experiment has no thesis reference numbers._", ""]
    others = sorted(set(result.metrics) - set(result.reference))
    if others:
        rows = [[f"`{name}`", _cell(result.metrics[name])] for name in others]
        lines += ["## Other metrics", "", _table(["metric", "ours"], rows, [False, True]), ""]
    return lines


def _rows_section(name: str, rows: Sequence[Mapping[str, JSONScalar]], link: str) -> list[str]:
    columns = Result.table_columns(rows)
    shown = rows[:MAX_REPORT_ROWS]
    lines = [f"### {name}", ""]
    note = f"{len(rows)} rows; full table: [{link}]({link})"
    if len(rows) > len(shown):
        note = f"first {len(shown)} of " + note
    lines += [f"_{note}_", ""]
    if columns:
        body = [[_cell(row.get(column)) for column in columns] for row in shown]
        numeric = [
            all(isinstance(row.get(c), int | float | None) for row in shown) for c in columns
        ]
        lines += [_table([_cell(c) for c in columns], body, numeric), ""]
    return lines


def render_report(
    result: Result, spec: ExperimentSpec, *, quick: bool, plots_note: str | None = None
) -> str:
    """Return the text of ``report.md`` for ``result``.

    Args:
        result: The run's result.
        spec: The experiment's spec (title and description).
        quick: Whether the run used the ``quick`` parameters.
        plots_note: Shown instead of the plot images, e.g. why plots were skipped; ``None`` links
            ``plots/<name>.png`` for every plot in ``result.plots``.

    Returns:
        Markdown text ending with a newline; links are relative to the output directory.
    """
    lines = [f"# {spec.title}", ""]
    mode = "quick" if quick else "full"
    lines += [f"Experiment `{result.experiment}`, seed {result.seed}, {mode} run.", ""]
    if spec.description:
        lines += [spec.description.strip(), ""]
    lines += ["Raw numbers: [results.json](results.json).", ""]
    lines += _comparison_section(result)
    config_rows = [[f"`{k}`", _cell(v)] for k, v in sorted(result.config.items())]
    if config_rows:
        lines += [
            "## Configuration",
            "",
            _table(["parameter", "value"], config_rows, [False, True]),
        ]
        lines += [""]
    if result.tables:
        lines += ["## Tables", ""]
        for name, rows in sorted(result.tables.items()):
            lines += _rows_section(name, rows, f"tables/{name}.csv")
    if result.series:
        lines += ["## Series", ""]
        for name, columns in sorted(result.series.items()):
            length = len(next(iter(columns.values()), ()))
            link = f"series/{name}.csv"
            lines.append(f"- [{link}]({link}): {length} rows; columns {', '.join(columns)}")
        lines += [""]
    if result.plots:
        lines += ["## Plots", ""]
        if plots_note is not None:
            lines += [f"_{plots_note}_", ""]
        else:
            for plot in result.plots:
                lines += [f"![{plot.title}](plots/{plot.name}.png)", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
