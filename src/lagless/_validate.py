"""Config-field checks shared by the frozen config dataclasses (STYLE §6.5).

Each raises `ConfigError` with one line naming the field and the allowed values.
"""

from __future__ import annotations

import math

from lagless.errors import ConfigError


def require_positive(name: str, value: float) -> None:
    """Raise unless ``value`` is a finite number > 0."""
    if not (math.isfinite(value) and value > 0):
        raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")


def require_non_negative(name: str, value: float) -> None:
    """Raise unless ``value`` is a finite number >= 0."""
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")


def require_int_range(name: str, value: int, lo: int, hi: int) -> None:
    """Raise unless ``lo <= value <= hi``."""
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be in [{lo}, {hi}], got {value}")
