from __future__ import annotations

import pytest

from lagless.lab import make, run
from lagless.netsim import PROFILES

FIGURES = ("loss", "latency_ms_min", "latency_ms_mean", "latency_ms_p99", "burst_mean")
FIGURES += ("throughput_kBps",)


def test_reference_follows_table_2_2() -> None:
    spec = make("netsim/profiles")
    assert dict(spec.reference) == {
        "gprs_loss": 0.05,
        "gprs_latency_ms_min": 458.0,  # RTT 916 ms / 2
        "gprs_latency_ms_mean": pytest.approx(458.0 * 1.075),  # + half of 15 % jitter
        "umts_loss": 0.01,
        "umts_latency_ms_min": 170.0,  # RTT 340 ms / 2
        "umts_latency_ms_mean": pytest.approx(170.0 * 1.035),  # + half of 7 % jitter
    }
    # The reference is what lagless.netsim configures for the two thesis profiles.
    for name in ("gprs", "umts"):
        link = PROFILES[name].down
        assert spec.reference[f"{name}_loss"] == link.loss
        assert spec.reference[f"{name}_latency_ms_min"] == pytest.approx(link.latency * 1000)
        assert spec.reference[f"{name}_latency_ms_mean"] == pytest.approx(link.mean_delay * 1000)
    assert spec.quick["packets"] == 300
    assert spec.full["packets"] == 20_000


def test_quick_run_measures_every_profile_near_its_configuration() -> None:
    result = run("netsim/profiles", seed=0, quick=True, out=None)
    assert set(result.metrics) == {f"{p}_{f}" for p in PROFILES for f in FIGURES}
    rows = result.tables["profiles"]
    assert [row["profile"] for row in rows] == list(PROFILES)
    for row in rows:
        link = PROFILES[str(row["profile"])].down
        assert row["configured_loss"] == pytest.approx(link.expected_loss)
        assert row["received"] + round(float(row["loss"]) * 300) == 300  # type: ignore[operator]
        # Every datagram takes at least the configured minimum latency.
        assert float(row["latency_ms_min"]) >= link.latency * 1000 - 1e-6  # type: ignore[arg-type]
    for name in ("gprs", "umts"):
        link = PROFILES[name].down
        # 300 uniform jitter draws: the mean is within 3 % of the configured mean delay.
        mean = result.metrics[f"{name}_latency_ms_mean"]
        assert mean == pytest.approx(link.mean_delay * 1000, rel=0.03)
        assert (
            result.metrics[f"{name}_latency_ms_p99"] <= (link.latency + link.jitter.amount) * 1000
        )
    assert result.metrics["lan_loss"] == 0.0
    assert [plot.name for plot in result.plots] == ["latency"]
    assert result.plots[0].x == tuple(PROFILES)


def test_seed_changes_measurements() -> None:
    a = run("netsim/profiles", seed=0, quick=True, out=None)
    b = run("netsim/profiles", seed=1, quick=True, out=None)
    assert a.metrics["gprs_latency_ms_mean"] != b.metrics["gprs_latency_ms_mean"]
    assert a.config == b.config
