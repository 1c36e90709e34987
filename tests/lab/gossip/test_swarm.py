"""A small measured swarm: every table fills, avatars and interactions arrive, metrics are sane."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lagless.lab.gossip.metrics import LOSS_BINS, measure_swarm
from lagless.lab.gossip.swarm import SwarmConfig


@pytest.fixture(scope="module")
def measured():
    config = SwarmConfig(peers=12, join_window=1.0, shot_rate=2.0, pickup_rate=0.5)
    return measure_swarm(config, seed=3, warmup=2.5, duration=2.0, capacity=13)


def test_swarm_converges(measured) -> None:
    swarm, _m = measured
    assert len(swarm.members()) == 12
    assert all(len(swarm.peers[i].known_peers()) == 11 for i in range(12))
    assert _m.table_fill_min == 1.0
    assert np.all(np.isfinite(swarm.joined_at[:12]))


def test_table_fill_is_measured_when_measuring_begins() -> None:
    # A warm-up shorter than the join window leaves the last joiners with partial tables.
    config = SwarmConfig(peers=12, join_window=1.0, shot_rate=0.0, pickup_rate=0.0)
    _, early = measure_swarm(config, seed=3, warmup=0.6, duration=0.25)
    assert early.table_fill_min < 0.5


def test_loss_by_distance(measured) -> None:
    swarm, m = measured
    assert len(m.loss_total) == LOSS_BINS
    assert m.loss_total.sum() > 100
    assert (m.loss_lost <= m.loss_total).all()
    assert 0.0 <= m.loss_within_fifth_map <= 1.0
    scored = [r for r in swarm.interactions if r.time <= 4.5 - 1.0]
    assert m.loss_total.sum() == sum(int(r.present.sum()) for r in scored)


def test_delays_hops_upload(measured) -> None:
    _, m = measured
    assert sum(m.hop_share) == pytest.approx(1.0)
    assert all(s > 0 for s in m.hop_share)
    assert 70.0 <= m.delay_near_ms <= 600.0  # at least one 70 ms hop
    assert m.upload_kBps.shape == (12,)
    assert (m.upload_kBps > 1.0).all()
    assert 0.9 < m.avatar_info_share <= 1.0
    assert np.isfinite(m.inc).all()
    assert (m.inc >= 0).all()
    assert (m.inj >= 0).all()


def test_newcomer_join_times(measured) -> None:
    from lagless.lab.gossip.metrics import join_times

    swarm, _ = measured
    start = swarm.scheduler.now
    members = swarm.members()
    swarm.watch(12)
    swarm.join(12, 1)
    swarm.run(start + 2.0)
    known, learnt = join_times(swarm, 12, start, members)
    assert 0.07 < known < 2.0
    assert 0.07 < learnt < 2.0
    assert not math.isnan(known)


def test_join_times_need_every_member() -> None:
    from types import SimpleNamespace

    from lagless.lab.gossip.metrics import join_times

    fake = SimpleNamespace(known_at={7: {1: 3.0, 2: 5.0}}, learnt_at={7: {1: 4.0}})
    known, learnt = join_times(fake, 7, 1.0, [1, 2])  # type: ignore[arg-type]
    assert known == 4.0
    assert math.isnan(learnt)  # member 2 was never learnt: nan, not the max of the others
    assert all(math.isnan(x) for x in join_times(fake, 7, 1.0, []))  # type: ignore[arg-type]
