"""The ``bench`` fixture: the benchmark script a test module names in ``BENCH``, imported once."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest


@pytest.fixture(scope="module")
def bench(request: pytest.FixtureRequest) -> ModuleType:
    """Import the script at the module's ``BENCH`` path (benchmarks/ is not a package)."""
    path: Path = request.module.BENCH
    spec = importlib.util.spec_from_file_location(f"lagless_bench_{path.stem}", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
