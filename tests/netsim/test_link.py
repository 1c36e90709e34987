"""Statistical and exact checks of every Link stage against its configuration.

Bounds are Z = 5 standard errors computed from the configured distribution (binomial for rates),
with fixed seeds: a correct implementation passes with overwhelming margin on any seed, while the
wrong distribution, a wrong mean or a missing stage fails by far more.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.netsim import Fate, GilbertElliott, JitterConfig, Link, LinkConfig, stream
from lagless.netsim.demo import lost_runs

Z = 5.0


def run_link(
    config: LinkConfig, n: int, *, interval: float = 0.001, size: int = 100, seed: int = 1
) -> tuple[list[Fate], np.ndarray, list[tuple[float, ...]]]:
    link = Link(config, rng=stream(seed, "test.link"))
    fates: list[Fate] = []
    arrivals: list[tuple[float, ...]] = []
    sent = np.arange(n) * interval
    for now in sent.tolist():
        outcome = link.send(size, now)
        fates.append(outcome.fate)
        arrivals.append(outcome.arrivals)
    return fates, sent, arrivals


def first_delays(sent: np.ndarray, arrivals: list[tuple[float, ...]]) -> np.ndarray:
    return np.array([a[0] - s for s, a in zip(sent.tolist(), arrivals, strict=True) if a])


def assert_rate(count: int, n: int, p: float) -> None:
    se = math.sqrt(p * (1 - p) / n)
    assert abs(count / n - p) < Z * se, (count / n, p, se)


def test_default_link_delivers_everything_at_latency_exactly() -> None:
    fates, sent, arrivals = run_link(LinkConfig(latency=0.123), 1000)
    assert set(fates) == {Fate.DELIVERED}
    assert all(a == (s + 0.123,) for s, a in zip(sent.tolist(), arrivals, strict=True))


def test_bernoulli_loss_rate() -> None:
    n = 200_000
    fates, _, arrivals = run_link(LinkConfig(loss=0.1), n)
    lost = sum(f is Fate.LOST for f in fates)
    assert_rate(lost, n, 0.1)
    assert all(not a for f, a in zip(fates, arrivals, strict=True) if f is Fate.LOST)
    runs = lost_runs(np.array([f is Fate.LOST for f in fates]))
    # independent loss: mean run length 1 / (1 - p)
    assert abs(runs.mean() - 1 / 0.9) < 0.02


def test_uniform_jitter_bounds_and_mean() -> None:
    n, latency, amount = 100_000, 0.05, 0.02
    config = LinkConfig(latency=latency, jitter=JitterConfig(kind="uniform", amount=amount))
    _, sent, arrivals = run_link(config, n)
    jitter = first_delays(sent, arrivals) - latency
    assert jitter.min() >= -1e-12
    assert jitter.max() < amount + 1e-12
    assert abs(jitter.mean() - amount / 2) < Z * amount / math.sqrt(12 * n)
    for q in (0.1, 0.25, 0.5, 0.75, 0.9):  # the CDF is a straight line
        assert_rate(int((jitter < q * amount).sum()), n, q)


def test_normal_jitter_is_half_normal() -> None:
    n, amount = 100_000, 0.01
    config = LinkConfig(latency=0.02, jitter=JitterConfig(kind="normal", amount=amount))
    _, sent, arrivals = run_link(config, n)
    jitter = first_delays(sent, arrivals) - 0.02
    assert jitter.min() >= -1e-12
    mean = amount * math.sqrt(2 / math.pi)
    assert abs(jitter.mean() - mean) < Z * amount * math.sqrt(1 - 2 / math.pi) / math.sqrt(n)
    assert config.jitter.mean == pytest.approx(mean)
    # P(|N(0, s)| > s) = 2 (1 - Phi(1)) = erfc(1 / sqrt 2)
    assert_rate(int((jitter > amount).sum()), n, math.erfc(1 / math.sqrt(2)))


def test_pareto_jitter_mean() -> None:
    n, amount = 200_000, 0.01
    config = LinkConfig(jitter=JitterConfig(kind="pareto", amount=amount))
    _, sent, arrivals = run_link(config, n)
    jitter = first_delays(sent, arrivals)
    assert jitter.min() >= -1e-12
    # Lomax, shape 3, scale 2 * amount: mean amount, standard deviation sqrt(3) * amount
    assert abs(jitter.mean() - amount) < Z * math.sqrt(3) * amount / math.sqrt(n)
    # survival (1 + x / scale)^-3: P(X > 2 amount) = 1/8, P(X > 6 amount) = 1/64 (heavy tail)
    assert_rate(int((jitter > 2 * amount).sum()), n, 1 / 8)
    assert_rate(int((jitter > 6 * amount).sum()), n, 1 / 64)


def test_jitter_reorders_unless_preserve_order() -> None:
    n = 20_000
    jitter = JitterConfig(kind="uniform", amount=0.05)
    _, _, free = run_link(LinkConfig(latency=0.01, jitter=jitter), n)
    free_times = np.array([a[0] for a in free])
    assert (np.diff(free_times) < 0).sum() > n / 4
    ordered = JitterConfig(kind="uniform", amount=0.05, preserve_order=True)
    config = LinkConfig(latency=0.01, jitter=ordered, duplicate=0.2)
    _, sent, arrivals = run_link(config, n)
    flat = np.array([t for a in arrivals for t in a])
    assert (np.diff(flat) >= 0).all()
    assert (first_delays(sent, arrivals) >= 0.01).all()


def test_gilbert_elliott_burst_length_and_rate() -> None:
    n, loss, burst = 200_000, 0.1, 4.0
    model = GilbertElliott.from_loss_and_burst(loss, burst)
    assert model.stationary_loss == pytest.approx(loss)
    assert model.mean_burst == pytest.approx(burst)
    fates, _, _ = run_link(LinkConfig(burst=model), n)
    lost = np.array([f is Fate.BURST_LOST for f in fates])
    assert set(fates) == {Fate.DELIVERED, Fate.BURST_LOST}
    # loss indicators of a 2-state chain are correlated: variance inflation (1 + lam) / (1 - lam)
    lam = 1 - model.p_good_to_bad - model.p_bad_to_good
    se = math.sqrt(loss * (1 - loss) / n * (1 + lam) / (1 - lam))
    assert abs(lost.mean() - loss) < Z * se
    runs = lost_runs(lost)
    # bad-state stays are geometric with p = 1 / burst: variance (1 - p) / p^2
    p = 1 / burst
    assert abs(runs.mean() - burst) < Z * math.sqrt((1 - p) / p**2 / runs.size)
    assert_rate(int((runs == 1).sum()), runs.size, p)
    # a Bernoulli loss of the same rate would give mean runs of 1 / (1 - loss) = 1.11


def test_gilbert_elliott_with_partial_loss_states() -> None:
    n = 200_000
    model = GilbertElliott(p_good_to_bad=0.05, p_bad_to_good=0.2, loss_good=0.01, loss_bad=0.5)
    fates, _, _ = run_link(LinkConfig(burst=model, loss=0.02), n)
    expected = LinkConfig(burst=model, loss=0.02).expected_loss
    assert expected == pytest.approx(1 - (1 - (0.8 * 0.01 + 0.2 * 0.5)) * 0.98)
    dropped = sum(f in (Fate.BURST_LOST, Fate.LOST) for f in fates)
    lam = 1 - 0.05 - 0.2
    se = math.sqrt(expected * (1 - expected) / n * (1 + lam) / (1 - lam))
    assert abs(dropped / n - expected) < Z * se
    # Bernoulli loss is drawn only for what the burst chain let through
    assert_rate(
        sum(f is Fate.LOST for f in fates), n - sum(f is Fate.BURST_LOST for f in fates), 0.02
    )


def test_duplication_rate() -> None:
    n = 100_000
    fates, sent, arrivals = run_link(
        LinkConfig(latency=0.03, duplicate=0.05, jitter=JitterConfig(kind="uniform", amount=0.01)),
        n,
    )
    assert set(fates) == {Fate.DELIVERED}
    doubles = [a for a in arrivals if len(a) == 2]
    assert_rate(len(doubles), n, 0.05)
    assert all(len(a) in (1, 2) for a in arrivals)
    # the copy gets its own jitter draw, within the same bounds
    copies = np.array(
        [a[1] - s for s, a in zip(sent.tolist(), arrivals, strict=True) if len(a) == 2]
    )
    assert copies.min() >= 0.03 - 1e-12
    assert copies.max() < 0.04 + 1e-12
    assert any(a[0] != a[1] for a in doubles)


def test_reordering_rate_and_delay() -> None:
    n, interval = 100_000, 0.001
    config = LinkConfig(latency=0.02, reorder=0.03, reorder_delay=0.0055)
    _, sent, arrivals = run_link(config, n, interval=interval)
    delays = first_delays(sent, arrivals)
    held = np.isclose(delays, 0.02 + 0.0055)
    assert np.isclose(delays[~held], 0.02).all()
    assert_rate(int(held.sum()), n, 0.03)
    times = np.array([a[0] for a in arrivals])
    order = np.argsort(times, kind="stable")
    # each held datagram is overtaken by the 5 sent within 5.5 ms after it
    overtaken = np.flatnonzero(order[:-1] > order[1:])
    assert len(overtaken) == pytest.approx(held.sum(), rel=0.05)
    assert config.mean_delay == pytest.approx(0.02 + 0.03 * 0.0055)


def test_mtu_counts_headers() -> None:
    link = Link(LinkConfig(mtu=1500), rng=stream(0, "mtu"))
    assert link.send(1472, 0.0).fate is Fate.DELIVERED
    assert link.send(1473, 0.0) == link.send(5000, 0.0)
    assert link.send(1473, 0.0).fate is Fate.MTU_DROPPED
    raw = Link(LinkConfig(mtu=1500, count_headers=False), rng=stream(0, "mtu"))
    assert raw.send(1500, 0.0).fate is Fate.DELIVERED
    assert raw.send(1501, 0.0).fate is Fate.MTU_DROPPED


def test_throughput_matches_bandwidth() -> None:
    bandwidth, size = 50_000.0, 472  # 500 bytes on the wire
    # under load: each datagram waits only its own serialisation time
    link = Link(LinkConfig(latency=0.01, bandwidth=bandwidth), rng=stream(0, "bw"))
    for k in range(100):
        outcome = link.send(size, k * 0.02)
        assert outcome.arrivals == pytest.approx((k * 0.02 + 500 / bandwidth + 0.01,))
    # overload at 4x: the link delivers exactly its rate, the queue absorbs and then tail-drops
    n, interval = 20_000, 0.0025
    config = LinkConfig(latency=0.01, bandwidth=bandwidth, queue_limit=10_000)
    fates, sent, arrivals = run_link(config, n, interval=interval, size=size)
    times = np.array([a[0] for a in arrivals if a])
    steady = times[times > 1.0]
    rate = 500 * (steady.size - 1) / (steady[-1] - steady[0])
    assert rate == pytest.approx(bandwidth, rel=1e-9)
    assert (np.diff(times) >= 500 / bandwidth - 1e-9).all()
    delivered = len(times)
    span = sent[-1]
    # everything serialised during the run plus at most the final backlog
    assert delivered == pytest.approx((span * bandwidth + 10_000) / 500, abs=2)
    assert sum(f is Fate.QUEUE_DROPPED for f in fates) == n - delivered


def test_queue_tail_drop() -> None:
    limit, bandwidth = 4_000, 10_000.0
    link = Link(LinkConfig(bandwidth=bandwidth, queue_limit=limit), rng=stream(0, "q"))
    drops = 0
    for k in range(5_000):
        now = k * 0.004  # 128 wire bytes every 4 ms = 32 kB/s offered against 10 kB/s
        before = link.queued_bytes(now)
        outcome = link.send(100, now)
        if outcome.fate is Fate.QUEUE_DROPPED:
            drops += 1
            assert before + 128 > limit
        else:
            assert outcome.fate is Fate.DELIVERED
            assert link.queued_bytes(now) <= max(limit, 128) + 1e-6  # float rounding
    assert drops / 5_000 == pytest.approx(1 - 10_000 / 32_000, abs=0.01)
    # an idle link accepts a datagram larger than the queue
    big = Link(LinkConfig(bandwidth=bandwidth, queue_limit=100), rng=stream(0, "q"))
    assert big.send(1000, 0.0).fate is Fate.DELIVERED
    assert big.send(10, 0.0).fate is Fate.QUEUE_DROPPED


def test_same_seed_same_outcomes_different_seed_differs() -> None:
    config = LinkConfig(
        latency=0.05,
        jitter=JitterConfig(kind="pareto", amount=0.01),
        loss=0.05,
        burst=GilbertElliott.from_loss_and_burst(0.05, 3),
        duplicate=0.02,
        reorder=0.02,
        reorder_delay=0.01,
        bandwidth=200_000.0,
    )
    a = run_link(config, 5_000, seed=11)
    b = run_link(config, 5_000, seed=11)
    c = run_link(config, 5_000, seed=12)
    assert a[0] == b[0]
    assert a[2] == b[2]
    assert a[2] != c[2]


def test_time_going_backwards_raises() -> None:
    link = Link(LinkConfig(), rng=stream(0, "t"))
    link.send(10, 5.0)
    with pytest.raises(LocalProtocolError, match="now"):
        link.send(10, 4.0)
    with pytest.raises(LocalProtocolError, match="size"):
        link.send(-1, 6.0)
    with pytest.raises(LocalProtocolError, match="now"):
        link.send(1, math.inf)


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"latency": -0.1}, "latency"),
        ({"latency": math.nan}, "latency"),
        ({"loss": 1.5}, "loss"),
        ({"duplicate": -0.1}, "duplicate"),
        ({"reorder": 0.1}, "reorder_delay"),
        ({"bandwidth": 0.0}, "bandwidth"),
        ({"queue_limit": 0}, "queue_limit"),
        ({"mtu": 20}, "mtu"),
        ({"count_headers": 1}, "count_headers"),
        ({"jitter": "uniform"}, "jitter"),
        ({"burst": 0.1}, "burst"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_config_validation_names_the_field(changes: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        LinkConfig().with_overrides(**changes)


def test_with_overrides_keeps_the_rest() -> None:
    base = LinkConfig(latency=0.1, loss=0.2)
    changed = base.with_overrides(loss=0.3)
    assert (changed.latency, changed.loss, base.loss) == (0.1, 0.3, 0.2)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kind": "gauss"}, "jitter.kind"),
        ({"kind": "none", "amount": 0.1}, "jitter.amount"),
        ({"kind": "uniform", "amount": -1.0}, "jitter.amount"),
    ],
)
def test_jitter_validation(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        JitterConfig(**kwargs)  # type: ignore[arg-type]


def test_gilbert_elliott_validation() -> None:
    with pytest.raises(ConfigError, match="p_bad_to_good"):
        GilbertElliott(p_good_to_bad=0.1, p_bad_to_good=0.0)
    with pytest.raises(ConfigError, match="loss_bad"):
        GilbertElliott(p_good_to_bad=0.1, p_bad_to_good=0.5, loss_bad=2.0)
    with pytest.raises(ConfigError, match="mean_burst"):
        GilbertElliott.from_loss_and_burst(0.1, 0.5)
    with pytest.raises(ConfigError, match="loss"):
        GilbertElliott.from_loss_and_burst(1.0, 2.0)
    with pytest.raises(ConfigError, match="p_good_to_bad"):
        GilbertElliott.from_loss_and_burst(0.9, 1.0)
