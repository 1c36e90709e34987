from __future__ import annotations

from pathlib import Path

import pytest

from lagless.errors import LocalProtocolError
from lagless.lab import bar_plot, line_plot, plots_available

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
