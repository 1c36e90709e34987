"""PNG plots for lab reports, drawn with matplotlib's Agg canvas (DESIGN.md "Lab": "PNG plots").

matplotlib is the optional ``[plots]`` extra; ``plots_available()`` says whether it can be used
and the runner skips plots with a logged warning when it cannot.

Decisions:
    * Figures are built with ``matplotlib.figure.Figure`` on a ``FigureCanvasAgg``, never through
      ``pyplot``: the library does not switch the user's global backend or keep figures alive.
    * PNG metadata is cleared (no "Software" version string), so the bytes depend only on the data
      and the matplotlib build (``test_plots.py::test_same_data_gives_same_png``).
    * ``None`` values are drawn as gaps (NaN), not as zeros.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Final

import numpy as np

from lagless.errors import LocalProtocolError
from lagless.lab.result import Plot

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["bar_plot", "line_plot", "plots_available", "render_plot"]

FIGSIZE: Final = (7.0, 4.2)  # inches
DPI: Final = 110  # dots per inch


def plots_available() -> bool:
    """Return whether matplotlib (the ``[plots]`` extra) can be imported."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        return False


def _values(values: Sequence[float | None]) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def _check(x: Sequence[object], series: Mapping[str, Sequence[float | None]]) -> None:
    if not series:
        raise LocalProtocolError("series must hold at least one label -> values entry, got none")
    for label, values in series.items():
        if len(values) != len(x):
            raise LocalProtocolError(
                f"series {label!r} has {len(values)} values, x has {len(x)}; they must be equal"
            )


def _axes(x: Sequence[object], series: Mapping[str, Sequence[float | None]]) -> tuple[Figure, Axes]:
    """Check the data, then return a new Agg figure and its single axes."""
    _check(x, series)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=FIGSIZE, dpi=DPI)
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _save(
    figure: Figure, axes: Axes, path: Path, *, xlabel: str, ylabel: str, title: str, logy: bool
) -> None:
    """Label the axes, add grid and legend, and write the PNG (parent directories created)."""
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    if logy:
        axes.set_yscale("log")
    axes.grid(visible=True, alpha=0.3)
    axes.legend(fontsize="small")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", metadata={"Software": None})


def line_plot(
    path: Path,
    x: Sequence[float],
    series: Mapping[str, Sequence[float | None]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
) -> None:
    """Draw one line per series over ``x`` and save it as a PNG.

    Args:
        path: Where to write the PNG (parent directories are created).
        x: The x values, in the unit ``xlabel`` names.
        series: Legend label -> y values, each as long as ``x``; ``None`` is a gap.
        xlabel: X axis label, with its unit.
        ylabel: Y axis label, with its unit.
        title: Plot title.
        logy: Use a logarithmic y axis.

    Raises:
        LocalProtocolError: a series is not as long as ``x``, or there is no series.
        ImportError: matplotlib is not installed (check ``plots_available()`` first).
    """
    figure, axes = _axes(x, series)
    xs = _values(list(x))
    for label, values in series.items():
        axes.plot(xs, _values(values), marker="." if len(xs) <= 50 else None, label=label)
    _save(figure, axes, path, xlabel=xlabel, ylabel=ylabel, title=title, logy=logy)


def bar_plot(
    path: Path,
    labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
) -> None:
    """Draw grouped bars (one group per label, one bar per series) and save them as a PNG.

    Args:
        path: Where to write the PNG (parent directories are created).
        labels: Category names along the x axis.
        series: Legend label -> one value per category; ``None`` leaves the bar out.
        xlabel: X axis label.
        ylabel: Y axis label, with its unit.
        title: Plot title.
        logy: Use a logarithmic y axis.

    Raises:
        LocalProtocolError: a series is not as long as ``labels``, or there is no series.
        ImportError: matplotlib is not installed (check ``plots_available()`` first).
    """
    figure, axes = _axes(labels, series)
    positions = np.arange(len(labels), dtype=np.float64)
    width = 0.8 / len(series)
    for index, (label, values) in enumerate(series.items()):
        offset = (index - (len(series) - 1) / 2.0) * width
        axes.bar(positions + offset, _values(values), width=width, label=label)
    axes.set_xticks(positions, [str(label) for label in labels], rotation=45, ha="right")
    _save(figure, axes, path, xlabel=xlabel, ylabel=ylabel, title=title, logy=logy)


def render_plot(plot: Plot, path: Path) -> None:
    """Draw a recorded ``Plot`` into ``path`` with ``line_plot`` or ``bar_plot``.

    Raises:
        ImportError: matplotlib is not installed (check ``plots_available()`` first).
    """
    if plot.kind == "bar":
        labels = [str(label) for label in plot.x]
        bar_plot(
            path,
            labels,
            plot.series,
            xlabel=plot.xlabel,
            ylabel=plot.ylabel,
            title=plot.title,
            logy=plot.logy,
        )
        return
    x = [float(value) for value in plot.x]
    line_plot(
        path,
        x,
        plot.series,
        xlabel=plot.xlabel,
        ylabel=plot.ylabel,
        title=plot.title,
        logy=plot.logy,
    )
