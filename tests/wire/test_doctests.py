"""Runs the doctests of every lagless.wire module (STYLE §5: error bounds shown as doctests)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["bitstream", "buffer", "compress", "errors", "quantize", "seq"]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(f"lagless.wire.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if name != "errors":
        assert result.attempted > 0, f"lagless.wire.{name} has no doctests"
