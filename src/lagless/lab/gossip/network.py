"""A per-node uplink model for gossip swarms on ``lagless.netsim`` (spec 002 §5.0, §6.2).

Implements the network the Silac experiments need (spec 002 §6.2: "per-hop delay so that one hop
≈ 70–100 ms"; §6.1: "per-link latency and loss and per-node bandwidth"): a ``route_packet`` hook
for `lagless.netsim.Network` in which every host has **one** uplink FIFO serialising at
``bandwidth`` bytes per second (on-wire size, 28 header bytes included), then Bernoulli loss, then
a uniform one-hop latency. ``netsim.Link`` models one direction of one host *pair*; with hundreds
of peers that is up to N² queues and generators, and it is not what "per-node bandwidth" means.
Decisions, pinned in ``tests/lab/gossip/test_network.py``:

* A datagram that would wait more than ``queue_time`` seconds in the uplink is tail-dropped
  (``test_uplink_serialises_and_tail_drops``).
* Latency is drawn per datagram from U(latency_min, latency_max) and added after the datagram
  leaves the uplink; datagrams may reorder (``test_latency_within_bounds``).
* Draws come from one injected generator in blocks, so the run is a pure function of the seed
  and the order of sends.
* ``drop`` (optional) is asked first for every datagram: the experiments use it to induce
  targeted loss (spec 002 E10).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import numpy as np

from lagless.errors import ConfigError
from lagless.netsim import UDP_IPV4_HEADER, Datagram, Network

__all__ = ["UplinkConfig", "UplinkRouter"]

_BLOCK: Final = 8192  # uniform draws fetched from the generator at once


@dataclass(frozen=True, slots=True, kw_only=True)
class UplinkConfig:
    """Per-node uplink, loss and one-hop latency (spec 002 §6.2).

    Raises:
        ConfigError: naming the first field out of range.
    """

    bandwidth: float = 250_000.0
    """Uplink of every node, bytes per second on the wire (2 Mbit/s; the thesis gives none)."""
    queue_time: float = 0.5
    """Largest uplink backlog, seconds of serialisation; beyond it datagrams are tail-dropped."""
    latency_min: float = 0.070
    """Shortest one-hop latency, seconds (spec 002 §3.2: one hop ≈ 70–100 ms)."""
    latency_max: float = 0.100
    """Longest one-hop latency, seconds."""
    loss: float = 0.0
    """Independent loss probability per datagram."""

    def __post_init__(self) -> None:
        if not (np.isfinite(self.bandwidth) and self.bandwidth > 0):
            raise ConfigError(
                f"bandwidth must be a finite number of bytes/s > 0, got {self.bandwidth!r}"
            )
        if not (np.isfinite(self.queue_time) and self.queue_time > 0):
            raise ConfigError(
                f"queue_time must be a finite number of seconds > 0, got {self.queue_time!r}"
            )
        if not 0.0 <= self.latency_min <= self.latency_max < np.inf:
            raise ConfigError(
                "latency_min and latency_max must satisfy 0 <= min <= max (seconds), got "
                f"{self.latency_min!r}, {self.latency_max!r}"
            )
        if not 0.0 <= self.loss <= 1.0:
            raise ConfigError(f"loss must be a probability in [0, 1], got {self.loss!r}")


class UplinkRouter:
    """The ``route_packet`` hook: per-host uplink queue, loss, one-hop latency.

    Args:
        network: The network whose ``route_packet`` this replaces (call `install`).
        config: Bandwidth, queue, latency and loss.
        rng: The injected generator of loss and latency draws.
        on_send: Called with every datagram as it is handed to the network (for metrics).
        drop: Optional predicate; a datagram it accepts is lost (induced loss).
    """

    def __init__(
        self,
        network: Network,
        *,
        config: UplinkConfig,
        rng: np.random.Generator,
        on_send: Callable[[Datagram], None] | None = None,
        drop: Callable[[Datagram], bool] | None = None,
    ) -> None:
        self._network = network
        self._config = config
        self._rng = rng
        self._draws = rng.random(_BLOCK)
        self._next = 0
        self._busy: dict[str, float] = {}
        self.on_send = on_send
        """Metrics hook, called for every datagram sent."""
        self.drop = drop
        """Induced-loss predicate (``None``: no induced loss)."""
        self.queue_dropped = 0
        """Datagrams tail-dropped by an uplink queue."""
        self.lost = 0
        """Datagrams lost by Bernoulli loss or ``drop``."""

    def install(self) -> None:
        """Make this router the network's ``route_packet``."""
        self._network.route_packet = self

    def _uniform(self) -> float:
        if self._next == _BLOCK:
            self._draws = self._rng.random(_BLOCK)
            self._next = 0
        value = float(self._draws[self._next])
        self._next += 1
        return value

    def __call__(self, datagram: Datagram) -> None:
        """Carry ``datagram``: queue on its sender's uplink, then loss, then latency."""
        if self.on_send is not None:
            self.on_send(datagram)
        c = self._config
        now = self._network.scheduler.now
        host = datagram.src[0]
        start = max(now, self._busy.get(host, now))
        if start - now > c.queue_time:
            self.queue_dropped += 1
            return
        depart = start + (len(datagram.data) + UDP_IPV4_HEADER) / c.bandwidth
        self._busy[host] = depart
        if (self.drop is not None and self.drop(datagram)) or (
            c.loss > 0.0 and self._uniform() < c.loss
        ):
            self.lost += 1
            return
        latency = c.latency_min + (c.latency_max - c.latency_min) * self._uniform()
        self._network.deliver_at(datagram, depart + latency)
