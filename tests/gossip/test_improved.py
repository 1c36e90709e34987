"""ImprovedPeer: join flood, interaction push, address lookup and paced wide sends."""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable

import pytest

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.gossip import (
    AvatarInfo,
    AvatarState,
    GossipConfig,
    GossipPeer,
    Header,
    InteractionKind,
    JoinAccept,
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
        ImprovedConfig(push_limit=70000)
    with pytest.raises(ConfigError, match="wide_rate"):
        ImprovedConfig(wide_rate=-1.0)
    with pytest.raises(ConfigError, match="wide_backlog"):
        ImprovedConfig(wide_backlog=math.inf)
    with pytest.raises(ConfigError, match="push_repeats"):
        ImprovedConfig(push_repeats=0)
    assert ImprovedConfig().join_flood


def _flooding_host(members: int, improved: ImprovedConfig) -> tuple[ImprovedPeer, list[Address]]:
    """A host that knows ``members`` addresses and has just received a newcomer's join."""
    host = ImprovedPeer(
        config=CONFIG, rng=random.Random(1), address=("10.9.0.1", 4000), improved=improved
    )
    host.join([], 0.0, game_id=77)
    addresses = [("10.8.1.1", 6000 + i) for i in range(members)]
    newcomer = ("10.8.2.1", 7000)

    def avatar(addr: tuple[str, int]) -> AvatarState:
        return AvatarState(avatar_id=avatar_id_for(addr), position=(1, 1, 0), facing=(1, 0, 0))

    for addr in addresses:  # hop-0 avatar infos teach the host every member's address
        header = Header(sender_port=addr[1], game_id=77, message_number=1)
        info = Packet(header=header, payload=AvatarInfo(avatar=avatar(addr)), tail=Tail())
        host.receive_datagram(encode(info), addr, 0.0)
    request = JoinRequest(avatar=avatar(newcomer), origin=newcomer)
    header = Header(sender_port=newcomer[1], game_id=77, message_number=1)
    host.receive_datagram(
        encode(Packet(header=header, payload=request, tail=Tail())), newcomer, 0.0
    )
    return host, addresses


def _run_host(host: ImprovedPeer, until: float) -> list[list[tuple[bytes, Address]]]:
    """Run ``host``'s timers until ``until`` s; return the datagrams of each wake-up."""
    sent = [host.datagrams_to_send(0.0)]
    while (t := host.next_timer()) is not None and t <= until:
        host.handle_timer(t)
        sent.append(host.datagrams_to_send(t))
    return sent


def _floods(sent: list[tuple[bytes, Address]]) -> list[tuple[Packet, Address]]:
    return [(decode(d), a) for d, a in sent if d[0] == MessageType.JOIN_REQUEST and d[1] == 1]


def test_flood_copies_name_only_their_recipient() -> None:
    # A flood to 300 members: 300 datagrams, each tail naming its own recipient (not a group).
    host, members = _flooding_host(300, ImprovedConfig())
    floods = _floods([x for batch in _run_host(host, 2.0) for x in batch])
    assert {a for _, a in floods} == set(members)
    assert len(floods) == len(members)
    assert all(p.tail is not None and p.tail.recipients == (avatar_id_for(a),) for p, a in floods)
    assert host.wide_queued == 0
    assert host.wide_dropped == 0


def test_wide_copies_leave_at_wide_rate() -> None:
    rate = 20_000.0
    host, members = _flooding_host(300, ImprovedConfig(wide_rate=rate))
    batches = [_floods(batch) for batch in _run_host(host, 3.0)]
    sizes = [sum(len(encode(p)) for p, _ in b) for b in batches if b]
    budget = rate * CONFIG.frame_time
    biggest = max(len(encode(p)) for b in batches for p, _ in b)
    assert len(sizes) > 1  # paced over several frames, not sent at once
    assert all(size <= budget + biggest for size in sizes)
    assert sum(len(b) for b in batches) == len(members)
    # wide_rate 0 sends the whole flood with one frame tick
    host, members = _flooding_host(300, ImprovedConfig(wide_rate=0.0))
    assert [len(b) for b in map(_floods, _run_host(host, 3.0)) if b] == [len(members)]


def test_pacing_queue_is_bounded() -> None:
    improved = ImprovedConfig(wide_rate=20_000.0, wide_backlog=0.25)  # 5000 bytes queued at most
    host, members = _flooding_host(300, improved)
    floods = _floods([x for batch in _run_host(host, 3.0) for x in batch])
    assert 0 < len(floods) < len(members)
    assert host.wide_dropped == len(members) - len(floods)
    assert host.wide_queued == 0


_SILAC_ADDRESSING = functools.partial(ImprovedPeer, improved=ImprovedConfig(address_lookup=False))


def _hosting(peer_factory: Callable[..., GossipPeer] = ImprovedPeer) -> GossipPeer:
    host = peer_factory(config=CONFIG, rng=random.Random(3), address=("10.9.0.1", 4000))
    host.join([], 0.0, game_id=77)
    return host


def _info_from(origin: tuple[str, int], sender: tuple[str, int], hop: int, number: int) -> bytes:
    avatar = AvatarState(
        avatar_id=avatar_id_for(origin), position=(10.0, 10.0, 0.0), facing=(1.0, 0.0, 0.0)
    )
    header = Header(hop=hop, sender_port=sender[1], game_id=77, message_number=number)
    return encode(Packet(header=header, payload=AvatarInfo(avatar=avatar), tail=Tail()))


def _frame_destinations(host: GossipPeer, now: float) -> set[tuple[str, int]]:
    host.datagrams_to_send(now)
    host.handle_timer(now)
    return {a for d, a in host.datagrams_to_send(now) if d[0] & 0x3F == MessageType.AVATAR_INFO}


@pytest.mark.parametrize("factory", [ImprovedPeer, GossipPeer, _SILAC_ADDRESSING])
def test_address_book_restores_an_expired_neighbour(factory: Callable[..., GossipPeer]) -> None:
    host = _hosting(factory)
    x, forwarder = ("10.8.0.1", 5000), ("10.8.0.2", 5000)
    host.receive_datagram(_info_from(x, x, 0, 1), x, 0.0)
    host.receive_datagram(_info_from(x, x, 0, 2), x, 0.05)
    assert x in _frame_destinations(host, 0.1)
    # x falls silent: its record (and, in Silac, its address) is forgotten after 10 s
    assert x not in _frame_destinations(host, 10.2)
    assert avatar_id_for(x) not in host.known_peers()
    # a forwarded copy brings x back; only the improved peer can address it again
    host.receive_datagram(_info_from(x, forwarder, 1, 300), forwarder, 10.3)
    assert avatar_id_for(x) in host.known_peers()
    assert (x in _frame_destinations(host, 10.35)) is (factory is ImprovedPeer)


def test_terminal_copy_teaches_the_originators_address() -> None:
    host = _hosting()
    x, forwarder = ("10.8.0.1", 5000), ("10.8.0.2", 5000)
    # a last-hop copy relayed by someone else teaches nothing: the relay is not x
    host.receive_datagram(_info_from(x, forwarder, CONFIG.max_hop, 1), forwarder, 0.0)
    assert avatar_id_for(x) in host.known_peers()
    assert x not in _frame_destinations(host, 0.05)
    # x's own terminal copy (the push) does: crc32(x) is x's avatar id
    host.receive_datagram(_info_from(x, x, CONFIG.max_hop, 2), x, 0.1)
    assert x in _frame_destinations(host, 0.15)


def _frame_packets(host: GossipPeer, now: float) -> list[tuple[Packet, tuple[str, int]]]:
    host.datagrams_to_send(now)
    host.handle_timer(now)
    return [(decode(d), a) for d, a in host.datagrams_to_send(now)]


@pytest.mark.parametrize("factory", [ImprovedPeer, GossipPeer, _SILAC_ADDRESSING])
def test_an_unknown_peer_is_looked_up_at_once(factory: Callable[..., GossipPeer]) -> None:
    host = _hosting(factory)
    x, relay = ("10.8.0.1", 5000), ("10.8.0.2", 5000)
    host.receive_datagram(_info_from(x, relay, 1, 1), relay, 0.0)
    asks = [
        (p, a)
        for p, a in _frame_packets(host, 0.05)
        if p.retransmission is not None and avatar_id_for(x) in p.retransmission.avatar_ids
    ]
    if factory is not ImprovedPeer:  # Silac waits until the draw picks the relay (§2.10)
        assert not asks
        return
    assert [a for _, a in asks] == [relay]
    assert asks[0][0].header.hop == CONFIG.max_hop  # a terminal copy: the relay never forwards it
    # the relay answers with x's record and address (a third party's join accept)
    avatar = AvatarState(
        avatar_id=avatar_id_for(x), position=(10.0, 10.0, 0.0), facing=(1.0, 0.0, 0.0)
    )
    header = Header(sender_port=relay[1], game_id=77, message_number=9)
    answer = JoinAccept(avatar=avatar, origin=x)
    host.receive_datagram(encode(Packet(header=header, payload=answer, tail=Tail())), relay, 0.1)
    assert x in {a for _, a in _frame_packets(host, 0.15)}
