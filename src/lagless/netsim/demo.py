"""Send a paced stream across one profile's link in simulated time and measure what arrived.

Implements the measurement side of spec 000 §3.7 / §4.1 (loss, latency and throughput of a
simulated mobile link, compared with the configured Table 2.2 values) for ``lagless netsim demo``.

Decisions:
    * The stream goes server → client (``profile.down``) unless ``direction="up"``; datagram ``i``
      is sent at ``i / rate`` seconds and carries its sequence number in its first 4 bytes.
    * Latency is measured on the first copy of each datagram; duplicates are counted, not measured
      (``test_demo.py::test_demo_matches_profile``).
    * ``burst_mean`` is the mean length of runs of consecutive lost sequence numbers (0 when nothing
      was lost) (``test_demo.py::test_burst_mean_counts_runs``).
    * ``throughput_kBps`` is unique payload bytes delivered (kB = 1000 bytes) divided by the time
      from the first send to the last arrival; headers are excluded, as in spec 000 §4.1
      ``avrgDataSent``.
    * Latency values are ``None`` when nothing arrived (JSON ``null``, never ``NaN``).
"""

from __future__ import annotations

import math
import struct
from dataclasses import asdict, dataclass
from typing import Final, Literal

import numpy as np

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.netsim.link import LinkConfig
from lagless.netsim.network import Network
from lagless.netsim.profiles import Profile, get_profile
from lagless.netsim.scheduler import Scheduler

__all__ = ["DemoResult", "lost_runs", "run_demo"]

_SEQ: Final = struct.Struct(">I")
_PORT: Final = 5000  # arbitrary port of both demo hosts


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoResult:
    """Measured and configured figures of one demo run (SI units unless a suffix says otherwise)."""

    profile: str
    """Profile name."""
    direction: str
    """``"down"`` (server → client) or ``"up"``."""
    seed: int
    """Root seed of the run."""
    packets_sent: int
    """Datagrams sent."""
    packets_received: int
    """Distinct datagrams that arrived at least once."""
    duplicates: int
    """Extra copies that arrived."""
    reordered: int
    """Datagrams that arrived after a higher sequence number."""
    loss: float
    """Fraction of datagrams that never arrived."""
    latency_ms_mean: float | None
    """Mean one-way delay (ms) of arrived datagrams."""
    latency_ms_p50: float | None
    """Median one-way delay (ms)."""
    latency_ms_p99: float | None
    """99th percentile one-way delay (ms)."""
    latency_ms_min: float | None
    """Smallest one-way delay (ms)."""
    latency_ms_max: float | None
    """Largest one-way delay (ms)."""
    burst_mean: float
    """Mean length of runs of consecutive losses (datagrams); 0 when none were lost."""
    throughput_kBps: float
    """Delivered payload rate (kB/s, 1 kB = 1000 bytes)."""
    configured_loss: float
    """Long-run loss the link is configured for (queue and MTU drops excluded)."""
    configured_latency_ms_min: float
    """Configured minimum one-way delay (ms)."""
    configured_latency_ms_mean: float
    """Configured mean one-way delay (ms), queueing excluded."""
    configured_bandwidth_kBps: float | None
    """Configured link rate (kB/s), ``None`` when unlimited."""

    def as_dict(self) -> dict[str, float | int | str | None]:
        """Return the fields as a JSON-ready dict (keys as the field names)."""
        return asdict(self)


def lost_runs(lost: np.ndarray) -> np.ndarray:
    """Return the lengths of runs of ``True`` in a boolean array (e.g. lost sequence numbers).

    Examples:
        >>> lost_runs(np.array([True, False, True, True, False, True])).tolist()
        [1, 2, 1]
    """
    edges = np.diff(np.concatenate(([0], lost.astype(np.int8), [0])))
    return np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)


def _ms(value: float) -> float:
    return round(value * 1000.0, 6)


def run_demo(
    profile: str | Profile,
    *,
    packets: int = 1000,
    seed: int = 0,
    size: int = 100,
    rate: float = 50.0,
    direction: Literal["up", "down"] = "down",
) -> DemoResult:
    """Send ``packets`` datagrams of ``size`` bytes at ``rate`` per second and measure them.

    Args:
        profile: A ``Profile`` or the name of a built-in one.
        packets: Number of datagrams, >= 1.
        seed: Root seed of the simulated network.
        size: Payload bytes per datagram, >= 4 (the sequence number).
        rate: Datagrams per second, > 0.
        direction: ``"down"`` uses ``profile.down``, ``"up"`` uses ``profile.up``.

    Returns:
        The measured figures beside the configured ones.

    Raises:
        ConfigError: an unknown profile name or an argument out of range.
    """
    chosen = get_profile(profile) if isinstance(profile, str) else profile
    if isinstance(packets, bool) or not isinstance(packets, int) or packets < 1:
        raise ConfigError(f"packets must be an int >= 1, got {packets!r}")
    if isinstance(size, bool) or not isinstance(size, int) or size < _SEQ.size:
        raise ConfigError(f"size must be an int >= {_SEQ.size} bytes, got {size!r}")
    if not (isinstance(rate, int | float) and math.isfinite(rate) and rate > 0):
        raise ConfigError(f"rate must be > 0 datagrams/s, got {rate!r}")
    if direction not in ("up", "down"):
        raise ConfigError(f"direction must be 'up' or 'down', got {direction!r}")

    scheduler = Scheduler()
    network = Network(scheduler, seed=seed)
    client = network.add_host("client")
    server = network.add_host("server")
    network.set_profile(client, server, chosen)
    sender, receiver = (server, client) if direction == "down" else (client, server)
    src = sender.bind(_PORT, lambda data, addr, now: None)
    send_times = np.arange(packets, dtype=np.float64) / rate
    arrivals = np.full(packets, np.nan)
    counts = {"duplicates": 0, "reordered": 0, "highest": -1}

    def on_datagram(data: bytes, addr: Address, now: float) -> None:
        (seq,) = _SEQ.unpack_from(data)
        if not math.isnan(arrivals[seq]):
            counts["duplicates"] += 1
            return
        arrivals[seq] = now
        if seq < counts["highest"]:
            counts["reordered"] += 1
        counts["highest"] = max(counts["highest"], seq)

    dst = receiver.bind(_PORT, on_datagram)
    padding = bytes(size - _SEQ.size)
    for seq in range(packets):
        scheduler.call_at(float(send_times[seq]), network.send, _SEQ.pack(seq) + padding, src, dst)
    scheduler.run()

    arrived = ~np.isnan(arrivals)
    received = int(arrived.sum())
    delays_ms = (arrivals[arrived] - send_times[arrived]) * 1000.0
    runs = lost_runs(~arrived)
    span = float(arrivals[arrived].max()) if received else 0.0
    link: LinkConfig = chosen.down if direction == "down" else chosen.up

    latency: list[float | None] = [None] * 5
    if received:
        p50, p99 = np.percentile(delays_ms, [50, 99])
        figures = (delays_ms.mean(), p50, p99, delays_ms.min(), delays_ms.max())
        latency = [round(float(value), 6) for value in figures]

    return DemoResult(
        profile=chosen.name,
        direction=direction,
        seed=seed,
        packets_sent=packets,
        packets_received=received,
        duplicates=counts["duplicates"],
        reordered=counts["reordered"],
        loss=(packets - received) / packets,
        latency_ms_mean=latency[0],
        latency_ms_p50=latency[1],
        latency_ms_p99=latency[2],
        latency_ms_min=latency[3],
        latency_ms_max=latency[4],
        burst_mean=float(runs.mean()) if runs.size else 0.0,
        throughput_kBps=round(received * size / span / 1000.0, 6) if span > 0 else 0.0,
        configured_loss=link.expected_loss,
        configured_latency_ms_min=_ms(link.latency),
        configured_latency_ms_mean=_ms(link.mean_delay),
        configured_bandwidth_kBps=None if link.bandwidth is None else link.bandwidth / 1000.0,
    )
