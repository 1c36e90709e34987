"""Experiment ``netsim/profiles``: every network profile measured beside its configured values.

Implements spec 000 §3.7 (network property simulation with the Table 2.2 GPRS/UMTS settings) as a
lab experiment: one paced stream per profile of ``lagless.netsim.PROFILES`` through
``lagless.netsim.run_demo``, measured loss, latency, p99, loss bursts and throughput tabulated
beside the configured figures.

Decisions:
    * The reference is what the thesis configured (spec 000 Table 2.2 and §3.7): GPRS RTT 916 ms,
      loss 5 %, jitter 15 %; UMTS RTT 340 ms, loss 1 %, jitter 7 %. One way is RTT/2 (458 and
      170 ms) and is the *minimum* delay, since §3.7 draws ``latency · (1 + U(0, jitter%))``; the
      mean reference adds half the jitter (492.35 and 175.95 ms)
      (``test_netsim_profiles.py::test_reference_follows_table_2_2``).
    * Each profile gets its own simulated network seed, ``ctx.seed_for("netsim.profiles.<name>")``,
      so profiles draw independently and adding a profile leaves the others' numbers unchanged.
    * Metric names are ``<profile>_<figure>`` with the unit in the figure name (``umts_loss`` is a
      fraction, ``umts_latency_ms_mean`` milliseconds, ``umts_throughput_kBps`` kB/s of payload).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from lagless.errors import ConfigError
from lagless.lab.registry import ExperimentSpec, register
from lagless.lab.result import JSONScalar, JSONValue, Result
from lagless.lab.runner import ExperimentContext
from lagless.netsim import PROFILES, DemoResult, run_demo

__all__ = ["SPEC", "profiles_experiment"]

_FIGURES: Final = (
    "loss",
    "latency_ms_min",
    "latency_ms_mean",
    "latency_ms_p99",
    "burst_mean",
    "throughput_kBps",
)

_THESIS: Final = {
    # spec 000 Table 2.2: (RTT in ms, loss bound, jitter as a fraction of the one-way latency)
    "gprs": (916.0, 0.05, 0.15),
    "umts": (340.0, 0.01, 0.07),
}


def _reference() -> dict[str, float]:
    reference: dict[str, float] = {}
    for name, (rtt_ms, loss, jitter) in _THESIS.items():
        one_way = rtt_ms / 2.0
        reference[f"{name}_loss"] = loss
        reference[f"{name}_latency_ms_min"] = one_way
        reference[f"{name}_latency_ms_mean"] = round(one_way * (1.0 + jitter / 2.0), 6)
    return reference


def _positive_int(params: Mapping[str, JSONValue], key: str) -> int:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"netsim/profiles parameter {key} must be an int >= 1, got {value!r}")
    return value


def _positive_float(params: Mapping[str, JSONValue], key: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"netsim/profiles parameter {key} must be a number > 0, got {value!r}")
    return float(value)


def _row(demo: DemoResult) -> dict[str, JSONScalar]:
    return {
        "profile": demo.profile,
        "loss": demo.loss,
        "configured_loss": demo.configured_loss,
        "latency_ms_min": demo.latency_ms_min,
        "configured_latency_ms_min": demo.configured_latency_ms_min,
        "latency_ms_mean": demo.latency_ms_mean,
        "configured_latency_ms_mean": demo.configured_latency_ms_mean,
        "latency_ms_p99": demo.latency_ms_p99,
        "burst_mean": demo.burst_mean,
        "throughput_kBps": demo.throughput_kBps,
        "configured_bandwidth_kBps": demo.configured_bandwidth_kBps,
        "received": demo.packets_received,
        "duplicates": demo.duplicates,
        "reordered": demo.reordered,
    }


def profiles_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """Run ``run_demo`` on every profile and record measured beside configured figures.

    Args:
        ctx: The run's context.
        params: ``packets`` (datagrams per profile), ``size`` (payload bytes), ``rate``
            (datagrams per second).

    Returns:
        Metrics ``<profile>_<figure>``, table ``profiles`` and bar plot ``latency``.

    Raises:
        ConfigError: a parameter is missing or out of range.
    """
    packets = _positive_int(params, "packets")
    size = _positive_int(params, "size")
    rate = _positive_float(params, "rate")
    demos: list[DemoResult] = []
    for name in ctx.track(list(PROFILES), description="netsim profiles"):
        with ctx.timer(f"run_demo.{name}"):
            demo = run_demo(
                name,
                packets=packets,
                seed=ctx.seed_for(f"netsim.profiles.{name}"),
                size=size,
                rate=rate,
            )
        figures = demo.as_dict()
        for figure in _FIGURES:
            value = figures[figure]
            ctx.add_metric(f"{name}_{figure}", None if isinstance(value, str) else value)
        demos.append(demo)
    ctx.add_table("profiles", [_row(demo) for demo in demos])
    ctx.bar_plot(
        "latency",
        [demo.profile for demo in demos],
        {
            "configured mean": [demo.configured_latency_ms_mean for demo in demos],
            "measured mean": [demo.latency_ms_mean for demo in demos],
            "measured p99": [demo.latency_ms_p99 for demo in demos],
        },
        xlabel="profile",
        ylabel="one-way latency (ms, log scale)",
        title=f"One-way latency per profile ({packets} datagrams each)",
        logy=True,
    )
    return ctx.result(config={"profiles": list(PROFILES), "direction": "down"})


SPEC: Final = register(
    ExperimentSpec(
        id="netsim/profiles",
        title="Network profiles: measured loss and latency beside the configured values",
        entry_point=profiles_experiment,
        quick={"packets": 300, "size": 100, "rate": 50.0},
        full={"packets": 20_000, "size": 100, "rate": 50.0},
        reference=_reference(),
        description=(
            "For every profile in `lagless.netsim.PROFILES`, a paced stream of datagrams "
            "(server to client, `rate` per second, `size` payload bytes) crosses the simulated "
            "link and the arrivals are measured: loss fraction, one-way latency (min, mean, p99, "
            "in ms), mean loss-burst length and payload throughput (kB/s). The thesis numbers "
            "are the GPRS and UMTS settings of spec 000 Table 2.2 / §3.7: one-way latency RTT/2 "
            "as the minimum, plus half the uniform jitter for the mean, and the loss bound."
        ),
    )
)
"""The registered spec of ``netsim/profiles``."""
