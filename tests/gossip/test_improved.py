"""ImprovedPeer: the join flood and the interest-scoped interaction push."""

from __future__ import annotations

import random

import pytest

from lagless.errors import ConfigError
from lagless.gossip import (
    AvatarInfo,
    AvatarState,
    GossipConfig,
    Header,
    InteractionKind,
    JoinRequest,
    MessageType,
    Packet,
    PeerJoined,
    PeerState,
    Tail,
    avatar_id_for,
    decode,
    encode,
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


def _frame_copies(swarm: Swarm, peer: ImprovedPeer) -> list[tuple[tuple[str, int], int]]:
    """(destination, hop) of every copy of ``peer``'s own avatar info sent in the next frame."""
    swarm.sent.clear()
    swarm.run(0.05)
    out = []
    for _, d, src, dst in swarm.sent:
        packet = decode(d)
        if (
            src == peer.address
            and isinstance(packet.payload, AvatarInfo)
            and packet.payload.avatar.avatar_id == peer.avatar_id
        ):
            out.append((dst, packet.header.hop))
    return out


def test_interaction_frames_reach_the_neighbourhood_as_terminal_copies() -> None:
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
    copies = _frame_copies(swarm, sender)
    drawn = {dst for dst, hop in copies if hop == 0}
    pushed = {dst for dst, hop in copies if hop == CONFIG.max_hop}
    assert len(drawn) == CONFIG.fanout
    assert len(copies) == len(drawn) + len(pushed)  # nobody gets two copies
    assert near <= drawn | pushed
    assert not drawn & pushed
    # A terminal copy is applied but never forwarded: the gossip goes on from the drawn three.
    number = sender.statistics().originated  # the pushed carrier's message number
    swarm.sent.clear()
    swarm.run(0.5)
    forwarders = set()
    for _, d, src, _ in swarm.sent:
        packet = decode(d)
        if (
            isinstance(packet.payload, AvatarInfo)
            and packet.payload.avatar.avatar_id == sender.avatar_id
            and packet.header.message_number == number
            and src != sender.address
        ):
            forwarders.add(src)
    assert forwarders
    assert not forwarders & pushed


def test_plain_frames_keep_the_silac_fanout() -> None:
    swarm, peers = _built(30, ImprovedConfig(push_radius=300.0))
    copies = _frame_copies(swarm, peers[5])
    assert [hop for _, hop in copies] == [0] * CONFIG.fanout


def test_push_stops_after_push_repeats() -> None:
    swarm, peers = _built(30, ImprovedConfig(push_radius=300.0, push_repeats=2))
    sender = peers[5]
    sender.send_interaction(InteractionKind.SHOT, swarm.now, target=1)
    sizes = [len(_frame_copies(swarm, sender)) for _ in range(5)]
    # carriers 1 and 2 are pushed to the neighbourhood, carriers 3.. keep the Silac fan-out
    assert min(sizes[:2]) > CONFIG.fanout
    assert sizes[2:] == [CONFIG.fanout] * 3


def test_config_validation() -> None:
    with pytest.raises(ConfigError, match="push_radius"):
        ImprovedConfig(push_radius=-1.0)
    with pytest.raises(ConfigError, match="push_limit"):
        ImprovedConfig(push_limit=300)
    with pytest.raises(ConfigError, match="push_repeats"):
        ImprovedConfig(push_repeats=0)
    assert ImprovedConfig().join_flood


def test_flood_copies_name_only_their_recipient() -> None:
    # A flood to 300 members: 300 datagrams, each tail naming its own recipient (not a group).
    host = ImprovedPeer(config=CONFIG, rng=random.Random(1), address=("10.9.0.1", 4000))
    host.join([], 0.0, game_id=77)
    members = [("10.8.1.1", 6000 + i) for i in range(300)]
    newcomer = ("10.8.2.1", 7000)

    def avatar(addr: tuple[str, int]) -> AvatarState:
        return AvatarState(avatar_id=avatar_id_for(addr), position=(1, 1, 0), facing=(1, 0, 0))

    for addr in members:  # hop-0 avatar infos teach the host every member's address
        header = Header(sender_port=addr[1], game_id=77, message_number=1)
        info = Packet(header=header, payload=AvatarInfo(avatar=avatar(addr)), tail=Tail())
        host.receive_datagram(encode(info), addr, 0.0)
    request = JoinRequest(avatar=avatar(newcomer), origin=newcomer)
    header = Header(sender_port=newcomer[1], game_id=77, message_number=1)
    host.receive_datagram(
        encode(Packet(header=header, payload=request, tail=Tail())), newcomer, 0.0
    )
    sent = host.datagrams_to_send(0.0)
    while (t := host.next_timer()) is not None and t <= 0.3:
        host.handle_timer(t)
        sent += host.datagrams_to_send(t)
    floods = [(decode(d), a) for d, a in sent if d[0] == MessageType.JOIN_REQUEST and d[1] == 1]
    assert {a for _, a in floods} == set(members)
    assert len(floods) == len(members)
    assert all(p.tail is not None and p.tail.recipients == (avatar_id_for(a),) for p, a in floods)
