from __future__ import annotations

import math

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.netsim import PROFILES, Link, LinkConfig, Profile, get_profile, profiles, stream

NAMES = [
    "gprs", "umts", "edge", "hspa", "lte", "5g", "wifi", "dsl", "lan",
    "intercontinental", "l40j20", "l80j40", "rtt1s",
]  # fmt: skip


def test_all_named_profiles_exist_and_are_valid() -> None:
    assert list(PROFILES) == NAMES
    assert profiles.PROFILES is PROFILES
    for name, profile in PROFILES.items():
        assert isinstance(profile, Profile)
        assert profile.name == name == name.lower()
        assert profile.source.strip()
        assert profile.description.strip()
        for link in (profile.up, profile.down):
            assert isinstance(link, LinkConfig)
            assert link.with_overrides() == link  # re-validates
        assert 0 < profile.rtt <= profile.rtt_mean


def test_get_profile_is_case_insensitive_and_lists_names_on_error() -> None:
    assert get_profile("UMTS") is PROFILES["umts"]
    with pytest.raises(ConfigError) as info:
        get_profile("gsm")
    message = str(info.value)
    assert "\n" not in message
    assert all(name in message for name in NAMES)


def test_gprs_and_umts_follow_table_2_2() -> None:
    for name, rtt, loss, jitter in (("gprs", 0.916, 0.05, 0.15), ("umts", 0.340, 0.01, 0.07)):
        profile = get_profile(name)
        assert profile.rtt == pytest.approx(rtt)
        for link in (profile.up, profile.down):
            assert link.latency == pytest.approx(rtt / 2)
            assert link.loss == loss
            assert link.jitter.kind == "uniform"
            assert link.jitter.amount == pytest.approx(jitter * rtt / 2)
            assert link.bandwidth is None  # spec 000 §3.7: bandwidth not simulated


def measured_delays(config: LinkConfig, n: int) -> np.ndarray:
    link = Link(config, rng=stream(0, "profile"))
    out = []
    for k in range(n):
        outcome = link.send(100, k * 0.02)
        if outcome.arrivals:
            out.append(outcome.arrivals[0] - k * 0.02)
    return np.array(out)


def test_spec004_settings_are_uniform_around_the_mean() -> None:
    for name, mean, width in (("l40j20", 0.040, 0.020), ("l80j40", 0.080, 0.040)):
        profile = get_profile(name)
        assert profile.rtt_mean == pytest.approx(2 * mean)
        for link in (profile.up, profile.down):
            delays = measured_delays(link, 20_000)
            assert delays.size == 20_000
            assert delays.min() >= mean - width / 2 - 1e-12
            assert delays.max() <= mean + width / 2 + 1e-12
            assert abs(delays.mean() - mean) < 5 * width / math.sqrt(12 * 20_000)


def test_rtt1s_is_the_spec003_ns2_link() -> None:
    profile = get_profile("rtt1s")
    assert profile.rtt == pytest.approx(1.0)
    assert profile.up.bandwidth == profile.down.bandwidth == pytest.approx(10e6 / 8)


@pytest.mark.parametrize("name", NAMES)
def test_every_profile_delivers_its_configured_mean_delay_and_loss(name: str) -> None:
    # 128 wire bytes at 50 Hz (6.4 kB/s): below every profile's bandwidth, so no queue builds
    n = 20_000
    for link in (get_profile(name).up, get_profile(name).down):
        delays = measured_delays(link, n)
        loss = 1 - delays.size / n
        p = link.expected_loss
        if p == 0.0:
            assert loss == 0.0
        else:
            # a burst chain correlates losses: variance inflation (1 + lam) / (1 - lam)
            lam = (
                0.0
                if link.burst is None
                else 1 - link.burst.p_good_to_bad - link.burst.p_bad_to_good
            )
            assert abs(loss - p) <= 5 * math.sqrt(p * (1 - p) / n * (1 + lam) / (1 - lam))
        serialisation = 0.0 if link.bandwidth is None else link.wire_size(100) / link.bandwidth
        assert delays.min() >= link.latency + serialisation - 1e-12
        spread = link.jitter.amount * 2 + 1e-9  # >= standard deviation of every jitter shape
        assert abs(delays.mean() - link.mean_delay - serialisation) < 5 * spread / math.sqrt(
            delays.size
        )
