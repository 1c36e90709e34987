"""ImprovedPeer: the join flood and the interest-scoped interaction push."""

from __future__ import annotations

import random

import pytest

from lagless.errors import ConfigError
from lagless.gossip import (
    GossipConfig,
    InteractionKind,
    MessageType,
    PeerJoined,
    PeerState,
    decode,
)
from lagless.gossip.improved import ImprovedConfig, ImprovedPeer

from .harness import Swarm

CONFIG = GossipConfig(d_max=1500.0)


def _add(
    swarm: Swarm, index: int, position: tuple[float, float, float], **kw: object
) -> ImprovedPeer:
    addr = (f"10.0.{index // 250}.{index % 250 + 1}", 4000)
    peer = ImprovedPeer(
        config=CONFIG,
        rng=random.Random(index),
        address=addr,
        position=position,
        name=f"p{index}",
        **kw,  # type: ignore[arg-type]
    )
    swarm.peers[addr] = peer
    swarm.events[addr] = []
    return peer


def _built(n: int, improved: ImprovedConfig) -> tuple[Swarm, list[ImprovedPeer]]:
    swarm = Swarm(latency=0.04)
    rng = random.Random(7)
    peers = [
        _add(swarm, i, (rng.uniform(0, 1000), rng.uniform(0, 1000), 0.0), improved=improved)
        for i in range(n)
    ]
    peers[0].join([], swarm.now, game_id=99)
    swarm.pump(peers[0])
    for i, p in enumerate(peers[1:], start=1):
        p.join([peers[rng.randrange(i)].address], swarm.now)
        swarm.pump(p)
        swarm.run(0.1)
    swarm.run(2.0)
    return swarm, peers


def test_contact_floods_join_and_copies_stop() -> None:
    swarm, peers = _built(15, ImprovedConfig())
    assert all(len(p.known_peers()) == 14 for p in peers)
    newcomer = _add(swarm, 40, (500.0, 500.0, 0.0))
    contact = peers[3]
    swarm.sent.clear()
    newcomer.join([contact.address], swarm.now)
    swarm.pump(newcomer)
    swarm.run(0.5)  # 40 ms links + at most 4 frames of forwarding wait + the accepts
    joins = [(src, dst, decode(d).header.hop) for _, d, src, dst in swarm.sent if d[0] == 0]
    flood = [dst for src, dst, hop in joins if hop == 1]
    assert all(src == contact.address for src, _, hop in joins if hop == 1)
    assert sorted(flood) == sorted(p.address for p in peers if p is not contact)
    assert not [j for j in joins if j[2] >= 2]  # flood copies are not forwarded again
    assert newcomer.state is PeerState.JOINED
    assert len(newcomer.known_peers()) == 15
    for p in peers:
        assert any(e.avatar_id == newcomer.avatar_id for e in swarm.of(p, PeerJoined))


def _frame_recipients(swarm: Swarm, peer: ImprovedPeer) -> list[tuple[str, int]]:
    swarm.sent.clear()
    swarm.run(0.05)
    return [
        dst
        for _, d, src, dst in swarm.sent
        if src == peer.address
        and decode(d).message_type is MessageType.AVATAR_INFO
        and decode(d).header.hop == 0
    ]


def test_interaction_frames_reach_the_neighbourhood() -> None:
    swarm, peers = _built(30, ImprovedConfig(push_radius=300.0))
    sender = peers[5]
    x, y, _ = sender.avatar.position
    near = {
        p.address
        for p in peers
        if p is not sender
        and (p.avatar.position[0] - x) ** 2 + (p.avatar.position[1] - y) ** 2 <= 300.0**2
    }
    assert len(near) >= 3
    sender.send_interaction(InteractionKind.SHOT, swarm.now, target=1)
    got = _frame_recipients(swarm, sender)
    assert near <= set(got)
    assert len(got) == len(set(got)) >= len(near)


def test_plain_frames_keep_the_silac_fanout() -> None:
    swarm, peers = _built(30, ImprovedConfig(push_radius=300.0))
    got = _frame_recipients(swarm, peers[5])
    assert len(got) == CONFIG.fanout


def test_config_validation() -> None:
    with pytest.raises(ConfigError, match="push_radius"):
        ImprovedConfig(push_radius=-1.0)
    with pytest.raises(ConfigError, match="push_limit"):
        ImprovedConfig(push_limit=300)
    assert ImprovedConfig().join_flood
