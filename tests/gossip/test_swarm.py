"""A 20-peer in-memory Silac swarm: joins converge and avatar updates reach (almost) everyone."""

from __future__ import annotations

import random

from lagless.gossip import AvatarUpdated, GossipConfig, PeerState

from .harness import Swarm

N = 20


def _build(seed: int, *, latency: float = 0.04) -> Swarm:
    rng = random.Random(seed)
    swarm = Swarm(latency=latency)
    config = GossipConfig(d_max=300.0)
    peers = [
        swarm.add(
            i,
            config=config,
            seed=seed * 100 + i,
            position=(rng.uniform(0, 200), rng.uniform(0, 200), 0.0),
            facing=(rng.uniform(-1, 1), rng.uniform(-1, 1), 0.0),
        )
        for i in range(N)
    ]
    peers[0].join([], swarm.now, game_id=1234)
    swarm.pump(peers[0])
    for i, p in enumerate(peers[1:], start=1):
        p.join([peers[rng.randrange(i)].address], swarm.now)  # one random earlier contact
        swarm.pump(p)
        swarm.run(0.1)
    return swarm


def test_swarm_spreads_avatar_updates() -> None:
    swarm = _build(2)
    swarm.run(3.0)
    peers = list(swarm.peers.values())
    assert all(p.state is PeerState.JOINED for p in peers)
    assert all(len(p.known_peers()) == N - 1 for p in peers)  # every join reached everyone
    for p in peers:
        swarm.events[p.address].clear()
        p.set_avatar(state=99)
    swarm.run(0.4)  # 40 ms links: at most 3 links and two 1-4 frame waits
    reached = sum(
        len(
            {
                e.avatar.avatar_id
                for e in swarm.events[p.address]
                if isinstance(e, AvatarUpdated) and e.avatar.state == 99
            }
        )
        for p in peers
    )
    assert reached / (N * (N - 1)) >= 0.97, reached / (N * (N - 1))
    # forwarding really happens: hop 1 and hop 2 copies arrive as first copies (spec 002 §3.5)
    by_hop: dict[int, int] = {}
    for p in peers:
        for hop, n in p.statistics().received_by_hop.items():
            by_hop[hop] = by_hop.get(hop, 0) + n
    assert set(by_hop) == {0, 1, 2}
    assert min(by_hop.values()) > 0


def test_swarm_survives_loss_with_few_misses() -> None:
    swarm = _build(3)
    swarm.run(1.0)
    rng = random.Random(9)
    swarm.block = lambda data, src, dst, now: rng.random() < 0.2  # 20 % loss everywhere
    peers = list(swarm.peers.values())
    for p in peers:
        swarm.events[p.address].clear()
        p.set_avatar(state=7)
    swarm.run(0.6)
    reached = sum(
        len(
            {
                e.avatar.avatar_id
                for e in swarm.events[p.address]
                if isinstance(e, AvatarUpdated) and e.avatar.state == 7
            }
        )
        for p in peers
    )
    assert reached / (N * (N - 1)) >= 0.95
    assert all(len(p.known_peers()) == N - 1 for p in peers)
