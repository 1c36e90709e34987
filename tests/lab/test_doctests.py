"""Runs the doctests of the lab modules that carry examples (rounding, formatting, plot styles)."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize("name", ["plots", "result", "report"])
def test_doctests(name: str) -> None:
    module = importlib.import_module(f"lagless.lab.{name}")
    result = doctest.testmod(module)
    assert result.failed == 0
    assert result.attempted > 0, f"lagless.lab.{name} has no doctests"
