from __future__ import annotations

import json

import numpy as np
import pytest

from lagless.errors import LocalProtocolError
from lagless.lab import Plot, Result
from lagless.lab.result import SIGNIFICANT_DIGITS, normalise, round_float


def _result(**overrides: object) -> Result:
    fields: dict[str, object] = {
        "experiment": "x/y",
        "seed": 7,
        "config": {"b": 1, "a": [1.5, "s"]},
        "metrics": {"m": 2.0},
        "tables": {"t": [{"k": 1}]},
        "reference": {"m": 2},
    }
    fields.update(overrides)
    return Result(**fields)  # type: ignore[arg-type]


def test_json_has_exactly_the_design_keys() -> None:
    data = json.loads(_result().to_json())
    assert set(data) == {"experiment", "seed", "config", "metrics", "tables", "reference"}
    assert data["experiment"] == "x/y"
    assert data["seed"] == 7
    assert data["tables"] == {"t": [{"k": 1}]}
    assert data["reference"] == {"m": 2.0}


def test_json_is_sorted_and_plain() -> None:
    result = _result(
        config={"zeta": np.int64(3), "alpha": np.float32(0.5), "flag": np.bool_(True)},
        metrics={"b": np.float64(1.25), "a": np.int32(4)},
        tables={"t": [{"z": 1, "a": np.float64(2.0)}]},
    )
    text = result.to_json()
    assert text.endswith("}\n")
    assert text.index('"config"') < text.index('"experiment"') < text.index('"metrics"')
    assert text.index('"alpha"') < text.index('"flag"') < text.index('"zeta"')
    assert '"a": 2.0,\n' in text
    assert text.index('"a": 2.0') < text.index('"z": 1')
    data = json.loads(text)
    assert data["config"] == {"zeta": 3, "alpha": 0.5, "flag": True}
    assert type(data["config"]["zeta"]) is int
    assert data["metrics"] == {"a": 4, "b": 1.25}


def test_floats_are_rounded_to_significant_digits() -> None:
    assert SIGNIFICANT_DIGITS == 10
    assert round_float(1.0 / 3.0) == 0.3333333333
    assert round_float(123456.78901234) == 123456.789
    assert round_float(-0.0) == 0.0
    assert str(round_float(-0.0)) == "0.0"
    # Two values that differ only past the kept digits give the same bytes.
    a = _result(metrics={"m": 0.1 + 0.2}).to_json()
    b = _result(metrics={"m": 0.3}).to_json()
    assert a == b
    assert '"m": 0.3' in a


def test_non_finite_becomes_null() -> None:
    result = _result(
        metrics={"nan": float("nan"), "inf": float("inf"), "none": None},
        tables={"t": [{"v": float("-inf")}]},
        config={"c": float("nan")},
    )
    text = result.to_json()
    assert "NaN" not in text
    assert "Infinity" not in text
    data = json.loads(text)
    assert data["metrics"] == {"nan": None, "inf": None, "none": None}
    assert data["tables"]["t"] == [{"v": None}]
    assert data["config"] == {"c": None}


def test_bad_values_name_the_field() -> None:
    with pytest.raises(LocalProtocolError, match=r"metrics\.m must be a number"):
        _result(metrics={"m": "fast"})
    with pytest.raises(LocalProtocolError, match=r"metrics\.m must be a number"):
        _result(metrics={"m": True})
    with pytest.raises(LocalProtocolError, match=r"tables\.t\[0\]\.k must be a scalar"):
        _result(tables={"t": [{"k": [1, 2]}]})
    with pytest.raises(LocalProtocolError, match=r"reference\.m must be a finite number"):
        _result(reference={"m": float("nan")})
    with pytest.raises(LocalProtocolError, match="table name must match"):
        _result(tables={"../evil": []})
    with pytest.raises(LocalProtocolError, match="seed must be a non-negative int"):
        _result(seed=-1)
    with pytest.raises(LocalProtocolError, match=r"config\.o must be JSON data"):
        normalise({"o": object()}, "config")
    with pytest.raises(LocalProtocolError, match="keys must be str"):
        normalise({1: 2}, "config")


def test_series_and_plots_stay_out_of_json() -> None:
    plot = Plot(
        name="p", kind="line", x=(0, 1), series={"s": (1.0, 2.0)}, xlabel="x", ylabel="y", title="t"
    )
    result = _result(series={"raw": {"a": [1.0, 2.0], "b": np.array([3, 4])}}, plots=(plot,))
    assert result.series["raw"]["b"] == (3.0, 4.0)
    assert "raw" not in result.to_json()
    assert _result().to_json() == result.to_json()


def test_series_columns_must_have_equal_lengths() -> None:
    with pytest.raises(LocalProtocolError, match="equal lengths"):
        _result(series={"raw": {"a": [1.0], "b": [1.0, 2.0]}})


def test_plot_validation() -> None:
    with pytest.raises(LocalProtocolError, match="has 1 values, x has 2"):
        Plot(name="p", kind="line", x=(0, 1), series={"s": (1.0,)}, xlabel="", ylabel="", title="")
    with pytest.raises(LocalProtocolError, match="kind must be"):
        Plot(name="p", kind="pie", x=(0,), series={"s": (1,)}, xlabel="", ylabel="", title="")  # type: ignore[arg-type]
    with pytest.raises(LocalProtocolError, match="at least one series"):
        Plot(name="p", kind="bar", x=("a",), series={}, xlabel="", ylabel="", title="")
    p = Plot(name="p", kind="bar", x=("a",), series={"s": (1,)}, xlabel="", ylabel="", title="")
    with pytest.raises(LocalProtocolError, match="plot names must be unique"):
        _result(plots=(p, p))


def test_equal_inputs_give_equal_results() -> None:
    assert _result() == _result()
    assert _result(seed=8) != _result()
