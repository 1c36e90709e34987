"""What the ``sync/*`` experiments share: parameter readers and the cells of their ``runs`` rows.

Not an experiment (it registers nothing); the ``sync/lockstep``, ``sync/bucket``,
``sync/rollback`` and ``sync/compare`` sweeps (spec 000 §2.1, §2.3, §2.14; issue 15) read their
parameters and fill their ``runs`` rows with it; their runs go through
``lagless.sync.harness``. Every reader raises ``ConfigError`` naming the experiment and the
parameter, so a bad override is one clear line.

Units: round-trip times in milliseconds (as in the tables), everything else as the caller's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from lagless.errors import ConfigError
from lagless.lab.result import JSONScalar, JSONValue
from lagless.netsim import get_profile

__all__ = [
    "cell",
    "column",
    "param_list",
    "param_number",
    "param_numbers",
    "param_profiles",
    "percent_true",
    "rounded",
    "rtt_ms",
]


def param_list(lab: str, params: Mapping[str, JSONValue], key: str) -> list[Any]:
    """The non-empty list ``params[key]`` of experiment ``lab``."""
    values = params.get(key)
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{lab} parameter {key} must be a non-empty list")
    return list(values)


def param_number(
    lab: str, params: Mapping[str, JSONValue], key: str, low: float, high: float
) -> float:
    """The number ``params[key]`` in ``[low, high]`` (booleans are not numbers)."""
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise ConfigError(
            f"{lab} parameter {key} must be a number in [{low}, {high}], got {value!r}"
        )
    return float(value)


def param_numbers(
    lab: str, params: Mapping[str, JSONValue], key: str, low: float, high: float
) -> list[float]:
    """The non-empty list of numbers ``params[key]``, each in ``[low, high)``."""
    out: list[float] = []
    for value in param_list(lab, params, key):
        if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value < high:
            raise ConfigError(f"{lab} parameter {key} entries must be in [{low}, {high})")
        out.append(float(value))
    return out


def param_profiles(lab: str, params: Mapping[str, JSONValue]) -> list[str]:
    """``params["profiles"]``: netsim profile names, each checked (an unknown one raises)."""
    profiles = [str(p) for p in param_list(lab, params, "profiles")]
    for profile in profiles:
        get_profile(profile)
    return profiles


def cell(row: Mapping[str, JSONScalar], key: str) -> float:
    """A numeric cell of a ``runs`` row as float; text and booleans raise ``TypeError``."""
    value = row[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"column {key} holds {value!r}, not a number")
    return float(value)


def column(rows: Iterable[Mapping[str, JSONScalar]], key: str) -> list[float]:
    """Column ``key`` of ``runs`` rows as floats (see `cell`)."""
    return [cell(row, key) for row in rows]


def percent_true(rows: Sequence[Mapping[str, JSONScalar]], key: str) -> float:
    """Percentage of ``rows`` whose cell ``key`` is true (e.g. ``converged``)."""
    return 100.0 * sum(bool(row[key]) for row in rows) / len(rows)


def rtt_ms(profile: str, digits: int) -> float:
    """The nominal round trip of a netsim profile (up plus down latency), ms, rounded."""
    links = get_profile(profile)
    return round((links.up.latency + links.down.latency) * 1000.0, digits)


def rounded(metrics: Mapping[str, Any], columns: Iterable[str]) -> dict[str, JSONScalar]:
    """The harness metrics named in ``columns``, as floats rounded to 3 decimals."""
    return {column: round(float(metrics[column]), 3) for column in columns}
