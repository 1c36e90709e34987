"""The outcome of one lab run and its deterministic JSON form (DESIGN.md "Lab", ``results.json``).

Implements the ``results.json`` shape of DESIGN.md "Lab": ``{"experiment", "seed", "config",
"metrics", "tables", "reference"}``, written so that one seed gives the same bytes on every run.

Decisions:
    * Floats are rounded to ``SIGNIFICANT_DIGITS`` significant digits and ``-0.0`` becomes ``0.0``
      before they are written, so tiny libm or BLAS differences between machines do not change
      the bytes (``test_result.py::test_floats_are_rounded_to_significant_digits``).
    * NaN and ±inf are written as JSON ``null``: strict JSON (RFC 8259) has no such numbers and a
      ``null`` metric reads as "not measurable" (``test_result.py::test_non_finite_becomes_null``).
    * Keys are sorted, the indent is 2 and the file ends with a newline; numpy scalars and arrays
      become plain JSON numbers and lists (``test_result.py::test_json_is_sorted_and_plain``).
    * Raw series and plot descriptions travel with the ``Result`` but stay out of
      ``results.json``: series go to CSV and plots to PNG (``test_runner.py::test_output_layout``).
"""

from __future__ import annotations

import json
import math
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, TypeAlias, cast

import numpy as np

from lagless.errors import LaglessError, LocalProtocolError

__all__ = [
    "SIGNIFICANT_DIGITS",
    "JSONScalar",
    "JSONValue",
    "Metric",
    "Plot",
    "Result",
    "check_name",
    "normalise",
    "round_float",
]

SIGNIFICANT_DIGITS: Final = 10  # digits kept in every float written to results.json and CSV

JSONScalar: TypeAlias = str | int | float | bool | None
"""A JSON scalar as it appears in ``results.json`` and CSV cells."""
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
"""Any JSON value (config entries may nest)."""
Metric: TypeAlias = int | float | None
"""A metric value: a number, or ``None`` when it is not finite (NaN, inf)."""

_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


def check_name(name: object, what: str, error: type[LaglessError] = LocalProtocolError) -> str:
    """Return ``name`` if it is safe as a file name stem, else raise ``error``.

    Args:
        name: The table, series or plot name to check.
        what: What the name is for, used in the message (e.g. ``"table name"``).
        error: The exception class to raise.

    Returns:
        The name, unchanged.

    Raises:
        LaglessError: (of class ``error``) the name is empty or has characters other than letters,
            digits and ``_ . + -`` (or starts with one of the punctuation characters).
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise error(f"{what} must match [A-Za-z0-9][A-Za-z0-9_.+-]*, got {name!r}")
    return name


def round_float(value: float) -> float | None:
    """Round ``value`` to ``SIGNIFICANT_DIGITS`` significant digits; ``None`` if not finite.

    Examples:
        >>> round_float(2.0 / 3.0)
        0.6666666667
        >>> round_float(float("nan")) is None
        True
    """
    if not math.isfinite(value):
        return None
    rounded = float(f"{value:.{SIGNIFICANT_DIGITS}g}")
    return 0.0 if rounded == 0.0 else rounded


def normalise(
    value: object, where: str, error: type[LaglessError] = LocalProtocolError
) -> JSONValue:
    """Turn ``value`` into plain, rounded JSON data (dicts, lists, str, int, float, bool, None).

    Args:
        value: Python or numpy data: scalars, mappings with string keys, sequences, arrays.
        where: Dotted path of the value, used in the message (e.g. ``"config.packets"``).
        error: The exception class to raise.

    Returns:
        The same data with floats rounded (``round_float``) and containers as dict/list.

    Raises:
        LaglessError: (of class ``error``) a value that JSON cannot hold, or a non-string key.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return round_float(float(value))
    if isinstance(value, Mapping):
        out: dict[str, JSONValue] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise error(f"{where} keys must be str, got {key!r}")
            out[key] = normalise(item, f"{where}.{key}", error)
        return out
    if isinstance(value, np.ndarray):
        return [normalise(item, f"{where}[]", error) for item in value.tolist()]
    if isinstance(value, list | tuple):
        return [normalise(item, f"{where}[{i}]", error) for i, item in enumerate(value)]
    raise error(f"{where} must be JSON data (str, number, bool, None, list, dict), got {value!r}")


def _metric(value: object, where: str) -> Metric:
    if isinstance(value, bool) or not isinstance(
        value, int | float | np.integer | np.floating | None
    ):
        raise LocalProtocolError(f"{where} must be a number or None, got {value!r}")
    if value is None:
        return None
    return int(value) if isinstance(value, int | np.integer) else round_float(float(value))


def _scalar(value: object, where: str) -> JSONScalar:
    result = normalise(value, where)
    if isinstance(result, list | dict):
        raise LocalProtocolError(
            f"{where} must be a scalar (str, number, bool, None), got {value!r}"
        )
    return result


def _column(values: object, where: str) -> tuple[float | None, ...]:
    array = np.asarray(values)
    if array.ndim != 1 or not (
        np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.bool_)
    ):
        raise LocalProtocolError(f"{where} must be a 1-D sequence of numbers, got {values!r}")
    return tuple(round_float(float(item)) for item in array.astype(np.float64))


@dataclass(frozen=True, slots=True, kw_only=True)
class Plot:
    """A plot to draw into ``plots/<name>.png`` after the run (needs the ``[plots]`` extra).

    Values are stored rounded like everything else, so the PNG depends only on the seed.
    """

    name: str
    """File stem of the PNG (letters, digits, ``_ . + -``)."""
    kind: Literal["line", "bar"]
    """``"line"``: one line per series over numeric ``x``; ``"bar"``: grouped bars per label."""
    x: tuple[float | str, ...]
    """X values (``"line"``, numbers) or category labels (``"bar"``, strings)."""
    series: Mapping[str, tuple[float | None, ...]]
    """Legend label -> y values, each as long as ``x``; ``None`` leaves a gap."""
    xlabel: str
    """X axis label, with its unit."""
    ylabel: str
    """Y axis label, with its unit."""
    title: str
    """Plot title."""
    logy: bool = False
    """Logarithmic y axis."""

    def __post_init__(self) -> None:
        """Validate and freeze the fields; raise ``LocalProtocolError`` naming the bad one."""
        check_name(self.name, "plot name")
        if self.kind not in ("line", "bar"):
            raise LocalProtocolError(f"plot kind must be 'line' or 'bar', got {self.kind!r}")
        if self.kind == "bar":
            x: tuple[float | str, ...] = tuple(str(label) for label in self.x)
        else:
            x = tuple(value if value is not None else math.nan for value in _column(self.x, "x"))
        if not self.series:
            raise LocalProtocolError(f"plot {self.name!r} needs at least one series, got none")
        series: dict[str, tuple[float | None, ...]] = {}
        for label, values in self.series.items():
            column = _column(values, f"plot {self.name!r} series {label!r}")
            if len(column) != len(x):
                raise LocalProtocolError(
                    f"plot {self.name!r} series {label!r} has {len(column)} values, "
                    f"x has {len(x)}; they must be equal"
                )
            series[str(label)] = column
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "series", types.MappingProxyType(series))


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    """Everything one experiment run produced; ``to_json()`` gives the ``results.json`` bytes.

    Build it with ``ExperimentContext.result()`` inside an entry point; every field is normalised
    (rounded, plain JSON data) on construction, so two equal runs compare equal.
    """

    experiment: str
    """The experiment id, e.g. ``"netsim/profiles"``."""
    seed: int
    """Root seed every random stream of the run derives from."""
    config: Mapping[str, JSONValue]
    """The parameters the run used (the spec's ``quick`` or ``full`` mapping and any extras)."""
    metrics: Mapping[str, Metric]
    """Headline numbers by name; names say the unit (``umts_latency_ms_mean``)."""
    tables: Mapping[str, tuple[Mapping[str, JSONScalar], ...]]
    """Named tables as lists of row dicts; written to ``tables/<name>.csv`` too."""
    reference: Mapping[str, float]
    """The thesis numbers the metrics are compared against, keyed like ``metrics``."""
    series: Mapping[str, Mapping[str, tuple[float | None, ...]]] = field(
        default_factory=lambda: types.MappingProxyType({})
    )
    """Raw series: name -> column -> values; written to ``series/<name>.csv``, not to JSON."""
    plots: tuple[Plot, ...] = ()
    """Plots to draw into ``plots/<name>.png``; not in JSON."""

    def __post_init__(self) -> None:
        """Normalise every field; raise ``LocalProtocolError`` naming the bad value."""
        if not isinstance(self.experiment, str) or not self.experiment:
            raise LocalProtocolError(f"experiment must be a non-empty str, got {self.experiment!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise LocalProtocolError(f"seed must be a non-negative int, got {self.seed!r}")
        config = cast("dict[str, JSONValue]", normalise(dict(self.config), "config"))
        metrics = {str(k): _metric(v, f"metrics.{k}") for k, v in self.metrics.items()}
        tables: dict[str, tuple[Mapping[str, JSONScalar], ...]] = {}
        for name, rows in self.tables.items():
            check_name(name, "table name")
            tables[name] = tuple(
                types.MappingProxyType(
                    {str(k): _scalar(v, f"tables.{name}[{i}].{k}") for k, v in row.items()}
                )
                for i, row in enumerate(rows)
            )
        reference: dict[str, float] = {}
        for name, value in self.reference.items():
            number = _metric(value, f"reference.{name}")
            if number is None:
                raise LocalProtocolError(f"reference.{name} must be a finite number, got {value!r}")
            reference[str(name)] = float(number)
        series: dict[str, Mapping[str, tuple[float | None, ...]]] = {}
        for name, columns in self.series.items():
            check_name(name, "series name")
            converted = {str(c): _column(v, f"series.{name}.{c}") for c, v in columns.items()}
            if len({len(v) for v in converted.values()}) > 1:
                raise LocalProtocolError(f"series.{name} columns must have equal lengths")
            series[name] = types.MappingProxyType(converted)
        names = [plot.name for plot in self.plots]
        if len(set(names)) != len(names):
            raise LocalProtocolError(f"plot names must be unique, got {names}")
        object.__setattr__(self, "config", types.MappingProxyType(config))
        object.__setattr__(self, "metrics", types.MappingProxyType(metrics))
        object.__setattr__(self, "tables", types.MappingProxyType(tables))
        object.__setattr__(self, "reference", types.MappingProxyType(reference))
        object.__setattr__(self, "series", types.MappingProxyType(series))
        object.__setattr__(self, "plots", tuple(self.plots))

    def as_dict(self) -> dict[str, JSONValue]:
        """Return the six ``results.json`` keys as plain JSON data (no series, no plots)."""
        return {
            "experiment": self.experiment,
            "seed": self.seed,
            "config": dict(self.config),
            "metrics": dict(self.metrics),
            "tables": {name: [dict(row) for row in rows] for name, rows in self.tables.items()},
            "reference": dict(self.reference),
        }

    def to_json(self) -> str:
        """Return the exact text of ``results.json``: sorted keys, indent 2, trailing newline."""
        return (
            json.dumps(
                self.as_dict(), sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False
            )
            + "\n"
        )

    @staticmethod
    def table_columns(rows: Sequence[Mapping[str, JSONScalar]]) -> list[str]:
        """Return the column names of ``rows`` in first-seen order (rows may differ in keys)."""
        columns: dict[str, None] = {}
        for row in rows:
            columns.update(dict.fromkeys(row))
        return list(columns)
