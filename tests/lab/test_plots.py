from __future__ import annotations

from pathlib import Path

import pytest

from lagless.errors import LocalProtocolError
from lagless.lab import bar_plot, line_plot, plots_available
from lagless.lab.plots import bar_figure, line_figure, series_styles

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_matplotlib_is_available_in_dev() -> None:
    assert plots_available()


def test_line_and_bar_plots_write_png(tmp_path: Path) -> None:
    line = tmp_path / "deep" / "line.png"
    line_plot(
        line, [0, 1, 2], {"a": [1, 2, None], "b": [3, 2, 1]}, xlabel="x", ylabel="y", title="t"
    )
    bars = tmp_path / "bars.png"
    bar_plot(
        bars, ["p", "q"], {"a": [1, 10], "b": [2, 20]}, xlabel="k", ylabel="v", title="t", logy=True
    )
    for path in (line, bars):
        data = path.read_bytes()
        assert data[:8] == PNG_MAGIC
        assert b"Software" not in data


def test_same_data_gives_same_png(tmp_path: Path) -> None:
    for name in ("a.png", "b.png"):
        line_plot(tmp_path / name, [0.0, 1.0], {"s": [1.0, 4.0]}, xlabel="x", ylabel="y", title="t")
    line_plot(tmp_path / "c.png", [0.0, 1.0], {"s": [1.0, 5.0]}, xlabel="x", ylabel="y", title="t")
    a, b, c = ((tmp_path / n).read_bytes() for n in ("a.png", "b.png", "c.png"))
    assert a == b
    assert a != c


def test_series_length_must_match(tmp_path: Path) -> None:
    with pytest.raises(LocalProtocolError, match="has 1 values, x has 2"):
        line_plot(tmp_path / "x.png", [0, 1], {"s": [1]}, xlabel="", ylabel="", title="")
    with pytest.raises(LocalProtocolError, match="at least one"):
        bar_plot(tmp_path / "x.png", ["a"], {}, xlabel="", ylabel="", title="")
    assert not (tmp_path / "x.png").exists()


def _many(count: int) -> dict[str, list[float | None]]:
    return {f"s{i}": [float(i), float(i) + 1.0] for i in range(count)}


@pytest.mark.parametrize("count", [11, 20, 25])
def test_eleven_series_have_eleven_styles(count: int) -> None:
    from matplotlib.colors import to_hex

    lines = line_figure([0.0, 1.0], _many(count), xlabel="x", ylabel="y", title="t").axes[0]
    pairs = {(to_hex(line.get_color()), line.get_linestyle()) for line in lines.get_lines()}
    assert len(pairs) == count
    bars = bar_figure(["a", "b"], _many(count), xlabel="x", ylabel="y", title="t").axes[0]
    looks = {
        (to_hex(c.patches[0].get_facecolor()), c.patches[0].get_hatch()) for c in bars.containers
    }
    assert len(looks) == count


def test_up_to_ten_series_keep_the_default_colours() -> None:
    from matplotlib import colormaps
    from matplotlib.colors import to_hex

    tab10 = [to_hex(c) for c in colormaps["tab10"].colors]
    assert series_styles(10) == [(colour, 0) for colour in tab10]


def test_too_many_series_is_refused() -> None:
    with pytest.raises(LocalProtocolError, match=r"0\.\.80 series, got 81"):
        series_styles(81)


@pytest.mark.parametrize("kind", ["line", "bar"])
def test_legend_is_outside_the_axes(kind: str) -> None:
    series = _many(11)
    if kind == "line":
        figure = line_figure([0.0, 1.0], series, xlabel="x", ylabel="y", title="t")
    else:
        figure = bar_figure(["a", "b"], series, xlabel="x", ylabel="y", title="t")
    figure.draw_without_rendering()
    (legend,) = figure.legends
    legend_box = legend.get_window_extent()
    axes_box = figure.axes[0].get_window_extent()
    assert not legend_box.overlaps(axes_box)
    assert legend_box.x0 >= axes_box.x1
    figure_box = figure.bbox
    assert legend_box.x1 <= figure_box.x1
    assert legend_box.y0 >= figure_box.y0
