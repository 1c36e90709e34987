"""Metrics of the Silac experiments from a measured `Swarm` (spec 002 §3.13, §5.2–§5.6).

Implements the quantities of spec 002 §6.2 E5–E9: join propagation, per-node upload and message
mix, loss vs distance (the thesis's "objects" are interactions, §3.4), hop shares and delay vs
distance (§3.5), and Inc / Inj (Eq. 1.1–1.6). Decisions, pinned in
``tests/lab/gossip/test_swarm.py``:

* "Map size" is the side of the square map; an interaction is lost for node n when n was in the
  game when it was performed and never applied it by the end of the run; interactions of the last
  ``settle`` (1) seconds are not scored (``test_loss_by_distance``).
* Hop shares count the first copy of every message each node received, by header hop field
  (``GossipStatistics.received_by_hop``, §3.11: the hop-field reading).
* "Far" delay is the mean delay of avatar updates between avatars at least 0.6 map sizes apart
  ("the other side of the map", §3.5); "near" is below 0.1.
* Inc and Inj use distances in metres with d_min = 1 m and a replica is in a wrong state when it
  is more than 1 m from the true avatar position; both are time averages per node, then a mean
  over nodes (Eq. 1.3, 1.6).
* Join times are nan unless every member got there within the window; a missing member is never
  skipped (``test_swarm.py::test_join_times_need_every_member``).
* Upload counts on-wire bytes (payload + 28 header bytes) per node per second; kB = 1000 bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lagless.gossip import GossipPeer
from lagless.lab.gossip.swarm import DELAY_BINS, Swarm, SwarmConfig, host_name

__all__ = ["LOSS_BINS", "SwarmMeasurement", "join_times", "loss_by_distance", "measure_swarm"]

LOSS_BINS = 14
"""Distance bins of 0.1 map size for loss (0 .. 1.4 map sizes)."""


def loss_by_distance(
    swarm: Swarm, *, until: float, settle: float = 1.0
) -> tuple[np.ndarray, np.ndarray, float]:
    """Return (lost per bin, scored per bin, loss fraction within 1/5 map size).

    Args:
        swarm: A swarm that measured interactions.
        until: End of the run, seconds.
        settle: Interactions performed in the last ``settle`` seconds are not scored.
    """
    lost = np.zeros(LOSS_BINS, dtype=np.int64)
    total = np.zeros(LOSS_BINS, dtype=np.int64)
    near_lost = near_total = 0
    size = swarm.config.map_size
    for record in swarm.interactions:
        if record.time > until - settle:
            continue
        got = np.zeros(len(record.present), dtype=bool)
        got[list(record.received)] = True
        scored = record.present
        bins = np.minimum((record.distances / size * 10.0).astype(np.int64), LOSS_BINS - 1)
        np.add.at(total, bins[scored], 1)
        np.add.at(lost, bins[scored & ~got], 1)
        near = scored & (record.distances <= size / 5.0)
        near_total += int(near.sum())
        near_lost += int((near & ~got).sum())
    return lost, total, (near_lost / near_total if near_total else math.nan)


def join_times(
    swarm: Swarm, newcomer: int, start: float, members: list[int]
) -> tuple[float, float]:
    """Return (s until all ``members`` knew ``newcomer``, s until it knew them all).

    Either is nan when some member never got there (or ``members`` is empty).
    """
    known = swarm.known_at.get(newcomer, {})
    learnt = swarm.learnt_at.get(newcomer, {})

    def last(times: dict[int, float]) -> float:
        if not members or any(i not in times for i in members):
            return math.nan
        return max(times[i] for i in members) - start

    return last(known), last(learnt)


@dataclass(frozen=True, slots=True, kw_only=True)
class SwarmMeasurement:
    """What one measured swarm run gives (spec 002 §5.3–§5.6)."""

    peers: int
    """Peers in the game."""
    duration: float
    """Measured window, seconds."""
    upload_kBps: np.ndarray
    """(peers,) on-wire upload per node, kB/s."""
    avatar_info_share: float
    """Fraction of sent datagrams that are avatar info (type 9)."""
    hop_share: tuple[float, float, float]
    """Shares of first copies received with hop field 0, 1, 2."""
    delay_ms: np.ndarray
    """(DELAY_BINS,) mean delay per 0.1-map distance bin, ms (nan where empty)."""
    delay_count: np.ndarray
    """(DELAY_BINS,) samples per bin."""
    delay_far_ms: float
    """Mean delay at distance >= 0.6 map sizes, ms."""
    delay_near_ms: float
    """Mean delay at distance < 0.1 map sizes, ms."""
    loss_lost: np.ndarray
    """(LOSS_BINS,) lost (interaction, node) pairs per 0.1-map bin."""
    loss_total: np.ndarray
    """(LOSS_BINS,) scored pairs per bin."""
    loss_within_fifth_map: float
    """Loss fraction within 1/5 of the map size."""
    inc: np.ndarray
    """(peers,) Inc_n (Eq. 1.2), wrong-state replicas weighted 1/d² (d in m), time average."""
    inj: np.ndarray
    """(peers,) Inj_n (Eq. 1.5), s/m², time average."""
    queue_dropped: int
    """Datagrams tail-dropped by uplinks during the run."""
    table_fill_min: float
    """Smallest share of the other peers that any peer's table held when measuring began."""


def measure_swarm(
    config: SwarmConfig,
    *,
    seed: int,
    warmup: float,
    duration: float,
    peer_factory: Callable[..., GossipPeer] = GossipPeer,
    sample_every: float = 0.25,
    capacity: int | None = None,
) -> tuple[Swarm, SwarmMeasurement]:
    """Start a swarm, warm it up, measure ``duration`` seconds and summarise (spec 002 §5).

    Args:
        config: World, network and workload.
        seed: Root seed.
        warmup: Seconds before measuring (joins happen in ``config.join_window``).
        duration: Measured seconds.
        peer_factory: Builds each peer.
        sample_every: Period of the Inc / Inj samples, seconds.
        capacity: Peers that may exist (for later newcomers); default ``config.peers``.

    Returns:
        The swarm (still runnable) and the measurement.
    """
    swarm = Swarm(config, seed=seed, peer_factory=peer_factory, capacity=capacity)
    swarm.start()
    swarm.run(warmup)
    n = config.peers
    fill = min(len(p.known_peers()) for p in swarm.peers[:n]) / (n - 1)
    before_wire = [swarm.network.stats(host_name(i)).wire_bytes_sent for i in range(n)]
    before_hops = [dict(p.statistics().received_by_hop) for p in swarm.peers[:n]]
    swarm.measuring = True
    t = warmup
    end = warmup + duration
    while t < end - 1e-9:
        t = min(t + sample_every, end)
        swarm.run(t)
        swarm.sample_consistency()
    swarm.measuring = False
    wire = np.array(
        [swarm.network.stats(host_name(i)).wire_bytes_sent - before_wire[i] for i in range(n)],
        dtype=np.float64,
    )
    hops = np.zeros(3)
    for p, before in zip(swarm.peers[:n], before_hops, strict=True):
        for hop, count in p.statistics().received_by_hop.items():
            if hop < 3:
                hops[hop] += count - before.get(hop, 0)
    sent = sum(swarm.sent_types.values())
    bins = np.arange(DELAY_BINS) / 10.0
    with np.errstate(invalid="ignore", divide="ignore"):
        delay = swarm.delay_sum / swarm.delay_count * 1000.0
        far = bins >= 0.6 - 1e-9
        delay_far = swarm.delay_sum[far].sum() / swarm.delay_count[far].sum() * 1000.0
        delay_near = swarm.delay_sum[0] / swarm.delay_count[0] * 1000.0
    lost, total, near = loss_by_distance(swarm, until=end)
    samples = max(swarm.samples, 1)
    measurement = SwarmMeasurement(
        peers=n,
        duration=duration,
        upload_kBps=wire / duration / 1000.0,
        avatar_info_share=swarm.sent_types.get(9, 0) / sent if sent else math.nan,
        hop_share=tuple(float(x) for x in hops / max(hops.sum(), 1.0)),  # type: ignore[arg-type]
        delay_ms=delay,
        delay_count=swarm.delay_count.copy(),
        delay_far_ms=float(delay_far),
        delay_near_ms=float(delay_near),
        loss_lost=lost,
        loss_total=total,
        loss_within_fifth_map=near,
        inc=swarm.inc_sum[:n] / samples,
        inj=swarm.inj_sum[:n] / samples,
        queue_dropped=swarm.router.queue_dropped,
        table_fill_min=fill,
    )
    return swarm, measurement
