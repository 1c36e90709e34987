"""PNG plots for lab reports, drawn with matplotlib's Agg canvas (DESIGN.md "Lab": "PNG plots").

matplotlib is the optional ``[plots]`` extra; ``plots_available()`` says whether it can be used
and the runner skips plots with a logged warning when it cannot.

Decisions:
    * Figures are built with ``matplotlib.figure.Figure`` on a ``FigureCanvasAgg``, never through
      ``pyplot``: the library does not switch the user's global backend or keep figures alive.
    * PNG metadata is cleared (no "Software" version string), so the bytes depend only on the data
      and the matplotlib build (``test_plots.py::test_same_data_gives_same_png``).
    * ``None`` values are drawn as gaps (NaN), not as zeros.
    * No two series of a plot look alike: up to 10 take the ``tab10`` colours, more take
      ``tab20``, and past 20 the line style (bars: hatch) changes with each round of colours
      (``test_plots.py::test_eleven_series_have_eleven_styles``).
    * The legend sits outside the axes, to their right, so it never covers data; the figure is
      ``LEGEND_WIDTH`` wider for it (``test_plots.py::test_legend_is_outside_the_axes``).
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

__all__ = [
    "bar_figure",
    "bar_plot",
    "line_figure",
    "line_plot",
    "plots_available",
    "render_plot",
    "series_styles",
]

FIGSIZE: Final = (7.0, 4.2)  # inches, without the legend
LEGEND_WIDTH: Final = 2.6  # inches added on the right for the legend outside the axes
DPI: Final = 110  # dots per inch
# Distinct colours before a palette repeats: tab10 up to 10 series, tab20 beyond; past 20 the
# colours repeat with the next line style (bars: hatch), so every series keeps its own pair.
LINESTYLES: Final = ("-", "--", ":", "-.")
HATCHES: Final = ("", "//", "..", "xx")


def plots_available() -> bool:
    """Return whether matplotlib (the ``[plots]`` extra) can be imported."""
    try:
        return importlib.util.find_spec("matplotlib") is not None
    except (ImportError, ValueError):
        return False


def series_styles(count: int) -> list[tuple[str, int]]:
    """Return a (colour, variant) pair per series, no two alike.

    Up to 10 series take matplotlib's ``tab10`` colours, so small plots keep the default look;
    more take ``tab20``. Series 20 and on reuse the colours with the next variant (a line style
    in ``LINESTYLES`` or a hatch in ``HATCHES``, by index).

    Args:
        count: Number of series, >= 0.

    Returns:
        ``count`` pairs of a ``#rrggbb`` colour and a variant index in ``[0, len(LINESTYLES))``.

    Raises:
        LocalProtocolError: ``count`` is negative or needs more than 80 distinct pairs.

    Examples:
        >>> series_styles(2)
        [('#1f77b4', 0), ('#ff7f0e', 0)]
        >>> len(set(series_styles(11)))
        11
    """
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    limit = 20 * len(LINESTYLES)
    if not 0 <= count <= limit:
        raise LocalProtocolError(f"a plot takes 0..{limit} series, got {count}; split it")
    palette = colormaps["tab10" if count <= 10 else "tab20"]
    size = len(palette.colors)
    return [(to_hex(palette.colors[i % size]), i // size) for i in range(count)]


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
    """Check the data, then return a new Agg figure and its single axes.

    The figure uses matplotlib's constrained layout and is ``LEGEND_WIDTH`` wider than
    ``FIGSIZE``, leaving the axes their usual size beside the legend.
    """
    _check(x, series)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    width, height = FIGSIZE
    figure = Figure(figsize=(width + LEGEND_WIDTH, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(figure)
    return figure, figure.add_subplot()


def _finish(
    figure: Figure, axes: Axes, *, xlabel: str, ylabel: str, title: str, logy: bool
) -> Figure:
    """Label the axes, add the grid and a legend outside the axes (never over data)."""
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    if logy:
        axes.set_yscale("log")
    axes.grid(visible=True, alpha=0.3)
    figure.legend(loc="outside right upper", fontsize="small")
    return figure


def _save(figure: Figure, path: Path) -> None:
    """Write the PNG (parent directories created), without a "Software" metadata entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", metadata={"Software": None})


def line_figure(
    x: Sequence[float],
    series: Mapping[str, Sequence[float | None]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
) -> Figure:
    """Return a figure with one line per series over ``x`` (see ``line_plot``).

    Each series has its own (colour, line style) pair from ``series_styles``; the legend sits
    outside the axes on the right.

    Raises:
        LocalProtocolError: a series is not as long as ``x``, or there is no series.
        ImportError: matplotlib is not installed (check ``plots_available()`` first).
    """
    figure, axes = _axes(x, series)
    xs = _values(list(x))
    marker = "." if len(xs) <= 50 else None
    for (label, values), (colour, variant) in zip(
        series.items(), series_styles(len(series)), strict=True
    ):
        axes.plot(
            xs,
            _values(values),
            color=colour,
            linestyle=LINESTYLES[variant],
            marker=marker,
            label=label,
        )
    return _finish(figure, axes, xlabel=xlabel, ylabel=ylabel, title=title, logy=logy)


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
    figure = line_figure(x, series, xlabel=xlabel, ylabel=ylabel, title=title, logy=logy)
    _save(figure, path)


def bar_figure(
    labels: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    xlabel: str,
    ylabel: str,
    title: str,
    logy: bool = False,
) -> Figure:
    """Return a figure of grouped bars, one group per label and one bar per series.

    Each series has its own (colour, hatch) pair from ``series_styles``; the legend sits
    outside the axes on the right.

    Raises:
        LocalProtocolError: a series is not as long as ``labels``, or there is no series.
        ImportError: matplotlib is not installed (check ``plots_available()`` first).
    """
    figure, axes = _axes(labels, series)
    positions = np.arange(len(labels), dtype=np.float64)
    width = 0.8 / len(series)
    styles = series_styles(len(series))
    for index, ((label, values), (colour, variant)) in enumerate(
        zip(series.items(), styles, strict=True)
    ):
        offset = (index - (len(series) - 1) / 2.0) * width
        axes.bar(
            positions + offset,
            _values(values),
            width=width,
            color=colour,
            hatch=HATCHES[variant] or None,
            label=label,
        )
    axes.set_xticks(positions, [str(label) for label in labels], rotation=45, ha="right")
    return _finish(figure, axes, xlabel=xlabel, ylabel=ylabel, title=title, logy=logy)


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
    figure = bar_figure(labels, series, xlabel=xlabel, ylabel=ylabel, title=title, logy=logy)
    _save(figure, path)


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
