"""Every registered experiment is byte-for-byte reproducible from its seed (STYLE §5 "Lab").

Parametrised over ``registered()``, as Gymnasium's ``tests/envs/test_envs.py`` is over its
registry, so each new experiment module is covered as soon as it registers.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from pathlib import Path

import pytest

from lagless.lab import ExperimentContext, ExperimentSpec, Result, registered
from lagless.lab.result import JSONValue
from lagless.testing.determinism import DeterminismViolation, check_determinism

from .conftest import toy_entry


@pytest.mark.parametrize("experiment_id", registered())
def test_registered_experiment_is_deterministic(experiment_id: str, tmp_path: Path) -> None:
    check_determinism(experiment_id, seed=0, tmp_dir=tmp_path)
    assert (tmp_path / "run-a" / "results.json").read_bytes() == (
        tmp_path / "run-b" / "results.json"
    ).read_bytes()


def test_toy_experiment_is_deterministic(toy_spec: ExperimentSpec, tmp_path: Path) -> None:
    check_determinism(toy_spec, seed=11, tmp_dir=tmp_path)
    assert (tmp_path / "run-b" / "plots" / "noise.png").is_file()


def test_check_determinism_catches_a_seeded_leak(tmp_path: Path) -> None:
    calls = itertools.count()

    def leaky(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
        ctx.add_metric("calls", next(calls))  # state that survives between runs
        return ctx.result()

    spec = ExperimentSpec(
        id="test/leaky", title="leaks", entry_point=leaky, quick={}, full={}, reference={}
    )
    with pytest.raises(DeterminismViolation, match=r"results\.json differs .* line \d+"):
        check_determinism(spec, seed=0, tmp_dir=tmp_path)


def test_check_determinism_catches_a_difference_outside_results_json(tmp_path: Path) -> None:
    calls = itertools.count()

    def noisy_series(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
        ctx.add_series("s", {"v": [float(next(calls))]})
        return toy_entry(ctx, {"n": 5})

    spec = ExperimentSpec(
        id="test/noisy", title="noisy", entry_point=noisy_series, quick={}, full={}, reference={}
    )
    with pytest.raises(DeterminismViolation, match=r"series/s\.csv differs"):
        check_determinism(spec, seed=0, tmp_dir=tmp_path)
