"""The per-node uplink router: serialisation, tail drop, one-hop latency, induced loss."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.lab.gossip.network import UplinkConfig, UplinkRouter
from lagless.netsim import Network, Scheduler


def _net(config: UplinkConfig) -> tuple[Scheduler, Network, UplinkRouter, list[float]]:
    scheduler = Scheduler()
    network = Network(scheduler, seed=1)
    router = UplinkRouter(network, config=config, rng=np.random.default_rng(2))
    router.install()
    network.add_host("a")
    arrivals: list[float] = []
    network.add_host("b").bind(9, lambda data, src, now: arrivals.append(now))
    return scheduler, network, router, arrivals


def test_uplink_serialises_and_tail_drops() -> None:
    config = UplinkConfig(bandwidth=1000.0, queue_time=0.5, latency_min=0.0, latency_max=0.0)
    scheduler, network, router, arrivals = _net(config)
    for _ in range(10):  # 72 + 28 = 100 wire bytes = 0.1 s each at 1000 B/s
        network.send(bytes(72), ("a", 1), ("b", 9))
    scheduler.run(5.0)
    assert arrivals == pytest.approx([0.1 * (k + 1) for k in range(6)])
    assert router.queue_dropped == 4


def test_latency_within_bounds() -> None:
    config = UplinkConfig(bandwidth=1e9, latency_min=0.07, latency_max=0.1)
    scheduler, network, _router, arrivals = _net(config)
    for _ in range(2000):
        network.send(b"x", ("a", 1), ("b", 9))
    scheduler.run(1.0)
    delays = np.array(arrivals)
    assert len(delays) == 2000
    assert delays.min() >= 0.07
    assert delays.max() <= 0.1 + 1e-4
    assert delays.mean() == pytest.approx(0.085, abs=0.002)


def test_loss_and_induced_drop() -> None:
    scheduler, network, router, arrivals = _net(UplinkConfig(loss=0.25))
    router.drop = lambda d: d.data == b"drop"
    for _ in range(4000):
        network.send(b"x", ("a", 1), ("b", 9))
    network.send(b"drop", ("a", 1), ("b", 9))
    scheduler.run(10.0)
    assert 0.23 < 1 - len(arrivals) / 4000 < 0.27
    assert router.lost == 4001 - len(arrivals)
    with pytest.raises(ConfigError, match="loss"):
        UplinkConfig(loss=2.0)
