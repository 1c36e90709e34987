"""A small toy experiment that exercises every recorder of ``ExperimentContext``."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest

from lagless.lab import ExperimentContext, ExperimentSpec, Result
from lagless.lab.result import JSONValue

TOY_ROWS = 30


def toy_entry(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    n = params["n"]
    assert isinstance(n, int)
    noise = ctx.rng("toy.noise").normal(size=n)
    t = np.arange(n, dtype=np.float64) * 0.01
    ctx.add_series("trace", {"t_s": t, "noise": noise})
    ctx.add_table(
        "rows",
        [
            {"i": i, "square": float(i * i) / 3.0, "odd": i % 2 == 1, "label": f"r|{i}"}
            for i in ctx.track(range(TOY_ROWS), description="rows")
        ],
    )
    with ctx.timer("metrics"):
        ctx.add_metric("noise_mean", float(noise.mean()))
        ctx.add_metric("unmeasurable", float("nan"))
        ctx.add_metrics({"count": n, "third": 1.0 / 3.0}, prefix="toy_")
    ctx.line_plot("noise", t, {"noise": noise}, xlabel="t (s)", ylabel="noise (1)", title="noise")
    ctx.bar_plot("bars", ["a", "b"], {"v": [1.0, 2.0]}, xlabel="k", ylabel="v", title="bars")
    return ctx.result(config={"derived": n * 2})


@pytest.fixture
def toy_spec() -> ExperimentSpec:
    return ExperimentSpec(
        id="test/toy",
        title="Toy experiment",
        entry_point=toy_entry,
        quick={"n": 50},
        full={"n": 500},
        reference={"noise_mean": 0.0, "toy_third": 0.3, "never_measured": 7.0},
        description="A toy for the lab tests.",
    )
