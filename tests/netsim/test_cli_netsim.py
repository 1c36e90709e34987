from __future__ import annotations

import json

from typer.testing import CliRunner

from lagless.cli.netsim import app
from lagless.netsim import PROFILES

runner = CliRunner()


def test_profiles_lists_every_profile_with_its_numbers() -> None:
    result = runner.invoke(app, ["profiles"])
    assert result.exit_code == 0, result.output
    for name in PROFILES:
        assert name in result.stdout
    assert "916/984.7" in result.stdout  # gprs: min RTT / mean RTT with uniform jitter
    assert "U 68.7" in result.stdout
    assert "Table 2.2" in result.stdout


def test_demo_prints_measured_beside_configured() -> None:
    result = runner.invoke(app, ["demo", "--profile", "umts"])
    assert result.exit_code == 0, result.output
    assert "umts" in result.stdout
    assert "latency ms mean" in result.stdout
    assert "175.95" in result.stdout  # configured mean one-way delay


def test_demo_json_is_one_object_with_plausible_values() -> None:
    result = runner.invoke(
        app, ["demo", "--profile", "gprs", "--count", "4000", "--seed", "2", "--json"]
    )
    assert result.exit_code == 0, result.output
    values = json.loads(result.stdout)
    assert isinstance(values, dict)
    for key in (
        "loss",
        "latency_ms_mean",
        "latency_ms_p50",
        "latency_ms_p99",
        "burst_mean",
        "throughput_kBps",
    ):
        assert isinstance(values[key], float), key
    profile = PROFILES["gprs"].down
    assert abs(values["loss"] - profile.loss) < 0.02
    assert (
        profile.latency * 1000
        <= values["latency_ms_p50"]
        <= (profile.latency + profile.jitter.amount) * 1000
    )
    assert values["latency_ms_mean"] == values["latency_ms_mean"]  # not NaN
    assert abs(values["latency_ms_mean"] - profile.mean_delay * 1000) < 2.0
    assert values["packets_sent"] == 4000
    again = runner.invoke(
        app, ["demo", "--profile", "gprs", "--count", "4000", "--seed", "2", "--json"]
    )
    assert again.stdout == result.stdout


def test_bad_profile_name_is_one_line_and_nonzero() -> None:
    result = runner.invoke(app, ["demo", "--profile", "gsm"])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: unknown profile 'gsm'")
    assert "umts" in lines[0]


def test_bad_direction_is_one_line_and_nonzero() -> None:
    result = runner.invoke(app, ["demo", "--profile", "lan", "--direction", "sideways"])
    assert result.exit_code == 2
    assert "direction" in result.stderr
