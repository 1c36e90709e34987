"""RTT / jitter / loss / byte-rate estimators (spec 004 §4.4.2, DESIGN.md transport stats)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import ConfigError, LocalProtocolError
from lagless.transport.rtt import (
    BandwidthConfig,
    BandwidthMeter,
    LinkStatistics,
    LossEstimator,
    RttConfig,
    RttEstimator,
    link_statistics,
)


def _rfc6298(samples: list[float]) -> tuple[float, float]:
    """Reference RFC 6298 §2 computation, written independently of the implementation."""
    srtt = samples[0]
    rttvar = samples[0] / 2
    for r in samples[1:]:
        rttvar = 0.75 * rttvar + 0.25 * abs(srtt - r)
        srtt = 0.875 * srtt + 0.125 * r
    return srtt, rttvar


def test_rfc6298_known_sequence() -> None:
    est = RttEstimator()
    assert not est.has_samples
    assert est.rtt == est.jitter == est.rtt_min == est.rtt_max == 0.0
    est.on_sample(0.100)
    assert est.rtt == pytest.approx(0.100)
    assert est.jitter == pytest.approx(0.050)
    est.on_sample(0.200)
    # rttvar = 0.75*0.05 + 0.25*|0.1-0.2| = 0.0625; srtt = 0.875*0.1 + 0.125*0.2 = 0.1125
    assert est.jitter == pytest.approx(0.0625)
    assert est.rtt == pytest.approx(0.1125)
    assert est.rtt_min == pytest.approx(0.100)
    assert est.rtt_max == pytest.approx(0.200)
    assert est.samples == 2


@given(st.lists(st.floats(min_value=0.0, max_value=10.0), min_size=1, max_size=200))
def test_matches_reference(samples: list[float]) -> None:
    est = RttEstimator()
    for s in samples:
        assert est.on_sample(s)
    srtt, rttvar = _rfc6298(samples)
    assert est.rtt == pytest.approx(srtt, abs=1e-12)
    assert est.jitter == pytest.approx(rttvar, abs=1e-12)
    assert min(samples) <= est.rtt <= max(samples)


def test_constant_rtt_converges_jitter_to_zero() -> None:
    est = RttEstimator()
    for _ in range(200):
        est.on_sample(0.080)
    assert est.rtt == pytest.approx(0.080)
    assert est.jitter < 1e-9


def test_alternating_rtt_jitter_is_mean_deviation() -> None:
    # Samples alternate 60/100 ms: srtt settles near 80 ms, |srtt - R| ~ 20 ms, so RTTVAR ~ 20 ms.
    est = RttEstimator()
    for i in range(2000):
        est.on_sample(0.060 if i % 2 else 0.100)
    assert est.rtt == pytest.approx(0.080, abs=0.003)
    assert est.jitter == pytest.approx(0.020, abs=0.003)


def test_min_max_window_slides() -> None:
    est = RttEstimator(config=RttConfig(minmax_window=4))
    for s in (0.5, 0.1, 0.2, 0.3):
        est.on_sample(s)
    assert (est.rtt_min, est.rtt_max) == (0.1, 0.5)
    est.on_sample(0.25)  # 0.5 leaves the window
    assert (est.rtt_min, est.rtt_max) == (0.1, 0.3)
    est.on_sample(0.25)  # 0.1 leaves
    assert est.rtt_min == 0.2


@pytest.mark.parametrize("bad", [-0.001, math.nan, math.inf, -math.inf])
def test_bad_samples_ignored(bad: float) -> None:
    est = RttEstimator()
    est.on_sample(0.1)
    assert not est.on_sample(bad)
    assert est.rejected == 1
    assert est.samples == 1
    assert est.rtt == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"alpha": 0.0}, "alpha"), ({"beta": 1.5}, "beta"), ({"minmax_window": 0}, "minmax_window")],
)
def test_rtt_config_validated(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        RttConfig(**kwargs)  # type: ignore[arg-type]


def test_loss_window() -> None:
    loss = LossEstimator(window=4)
    assert loss.loss == 0.0
    for lost in (True, False, False, False):
        loss.on_outcome(lost=lost)
    assert loss.loss == 0.25
    loss.on_outcome(lost=False)  # the loss slides out
    assert loss.loss == 0.0
    for _ in range(3):
        loss.on_outcome(lost=True)
    assert loss.loss == 0.75
    assert loss.count == 4


@given(st.lists(st.booleans(), max_size=300), st.integers(min_value=1, max_value=50))
def test_loss_matches_tail_fraction(outcomes: list[bool], window: int) -> None:
    loss = LossEstimator(window=window)
    for o in outcomes:
        loss.on_outcome(lost=o)
    tail = outcomes[-window:]
    expected = sum(tail) / len(tail) if tail else 0.0
    assert loss.loss == pytest.approx(expected)


@given(
    st.lists(st.booleans(), max_size=80),
    st.integers(min_value=1, max_value=50),
    st.integers(min_value=0, max_value=64),
)
def test_loss_over_divides_by_at_least_min_count(
    outcomes: list[bool], window: int, min_count: int
) -> None:
    loss = LossEstimator(window=window)
    for o in outcomes:
        loss.on_outcome(lost=o)
    tail = outcomes[-window:]
    expected = sum(tail) / max(len(tail), min_count, 1)
    assert loss.loss_over(min_count) == pytest.approx(expected)


def test_loss_window_validated() -> None:
    with pytest.raises(ConfigError, match="window"):
        LossEstimator(window=0)


def test_bandwidth_constant_rate() -> None:
    meter = BandwidthMeter(config=BandwidthConfig(window=1.0, buckets=20))
    t0 = 5000.0
    # 1000 bytes sent every 10 ms = 100 kB/s; 500 received every 20 ms = 25 kB/s.
    for i in range(300):
        now = t0 + i * 0.010
        meter.on_sent(now, 1000)
        if i % 2 == 0:
            meter.on_received(now, 500)
        if i % 4 == 0:
            meter.on_acked(now, 1000)
    now = t0 + 299 * 0.010 + 0.005
    assert meter.sent_bps(now) == pytest.approx(100_000, rel=0.03)
    assert meter.received_bps(now) == pytest.approx(25_000, rel=0.05)
    assert meter.acked_bps(now) == pytest.approx(25_000, rel=0.06)


def test_bandwidth_window_expires() -> None:
    meter = BandwidthMeter(config=BandwidthConfig(window=1.0, buckets=10))
    meter.on_sent(100.0, 4000)
    assert meter.sent_bps(100.5) > 0
    assert meter.sent_bps(101.2) == 0.0
    meter.on_sent(110.0, 100)  # reusing the same ring slots long after
    assert meter.sent_bps(110.05) == pytest.approx(100 / (1.0 - 0.05), rel=1e-6)


def test_bandwidth_startup_underestimates() -> None:
    meter = BandwidthMeter()
    meter.on_sent(0.0, 1000)
    # Only 0.05 s elapsed but the rate divides by ~a full window: 1000 B/s, not 20 kB/s.
    assert meter.sent_bps(0.049) == pytest.approx(1000 / (1.0 - 0.001), rel=1e-6)


def test_bandwidth_memory_bounded() -> None:
    meter = BandwidthMeter(config=BandwidthConfig(window=1.0, buckets=5))
    for i in range(10_000):
        meter.on_sent(i * 1e-5, 1)
    assert meter.sent_bps(0.1) == pytest.approx(10_000 / (1.0 - 0.1), rel=1e-6)
    assert len(meter._sent._bytes) == 5  # the memory bound itself


def test_bandwidth_rejects_negative_size() -> None:
    with pytest.raises(LocalProtocolError, match="size"):
        BandwidthMeter().on_sent(0.0, -1)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"window": 0.0}, "window"), ({"window": math.nan}, "window"), ({"buckets": 0}, "buckets")],
)
def test_bandwidth_config_validated(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        BandwidthConfig(**kwargs)  # type: ignore[arg-type]


def test_link_statistics_snapshot() -> None:
    rtt = RttEstimator()
    for s in (0.05, 0.07):
        rtt.on_sample(s)
    loss = LossEstimator(window=10)
    loss.on_outcome(lost=True)
    loss.on_outcome(lost=False)
    bw = BandwidthMeter()
    bw.on_sent(10.0, 300)
    bw.on_received(10.0, 200)
    bw.on_acked(10.0, 100)
    snap = link_statistics(10.5, rtt=rtt, loss=loss, bandwidth=bw)
    assert isinstance(snap, LinkStatistics)
    assert snap.rtt == rtt.rtt
    assert snap.jitter == rtt.jitter
    assert (snap.rtt_min, snap.rtt_max) == (0.05, 0.07)
    assert snap.loss == 0.5
    assert snap.sent_bps == pytest.approx(3 * snap.acked_bps)
    assert snap.received_bps == pytest.approx(2 * snap.acked_bps)
    with pytest.raises(AttributeError):
        snap.rtt = 1.0  # type: ignore[misc]


@given(st.lists(st.tuples(st.booleans(), st.integers(min_value=0, max_value=40)), max_size=30))
def test_batched_acks_equal_single_outcomes(steps: list[tuple[bool, int]]) -> None:
    """``on_acked(n)`` is ``n`` times ``on_outcome(lost=False)``, losses ageing out included."""
    one, batch = LossEstimator(window=16), LossEstimator(window=16)
    for lost, acked in steps:
        one.on_outcome(lost=lost)
        batch.on_outcome(lost=lost)
        for _ in range(acked):
            one.on_outcome(lost=False)
        batch.on_acked(acked)
        assert (batch.loss, batch.count) == (one.loss, one.count)
