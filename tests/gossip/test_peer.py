"""GossipPeer (spec 002 §3.2-§3.12): Algorithm 1, forwarding, TTL, join flows, corrections."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.gossip import (
    TRANSITIONS,
    AvatarInfo,
    AvatarState,
    AvatarUpdated,
    DropReason,
    GossipConfig,
    GossipPeer,
    Header,
    InteractionKind,
    InteractionReceived,
    InteractionRolledBack,
    JoinAccept,
    JoinAccepted,
    JoinFailed,
    JoinReject,
    JoinRejected,
    JoinRequest,
    Leave,
    LeaveReason,
    MessageType,
    Packet,
    PeerInput,
    PeerJoined,
    PeerLeft,
    PeerState,
    RejectCode,
    Tail,
    avatar_id_for,
    decode,
    encode,
)
from lagless.testing.sansio import check_sans_io

from .harness import Swarm
from .strategies import packet

T0 = 1000.0
FRAME = 0.05


def _addr(i: int) -> tuple[str, int]:
    return (f"192.0.2.{i}", 5000)


def _avatar(i: int, pos=(0.0, 0.0, 0.0)) -> AvatarState:
    return AvatarState(avatar_id=avatar_id_for(_addr(i)), position=pos, facing=(1.0, 0.0, 0.0))


def _host(seed: int = 0, **config: object) -> GossipPeer:
    peer = GossipPeer(
        config=GossipConfig(**config),  # type: ignore[arg-type]
        rng=random.Random(seed),
        address=("192.0.2.100", 4000),
    )
    peer.join([], T0, game_id=77)
    return peer


def _join_request(i: int, *, hop: int = 0, number: int = 1, name: str = "", **kw) -> bytes:
    req = JoinRequest(avatar=_avatar(i, **kw), name=name, origin=_addr(i))
    header = Header(hop=hop, sender_port=5000, game_id=77, message_number=number)
    return encode(Packet(header=header, payload=req, tail=Tail()))


def _avatar_info(i: int, number: int, *, hop: int = 0, recipients=(), game: int = 77) -> bytes:
    header = Header(hop=hop, sender_port=5000, game_id=game, message_number=number)
    payload = AvatarInfo(avatar=_avatar(i, pos=(float(i), 0.0, 0.0)))
    return encode(Packet(header=header, payload=payload, tail=Tail(recipients=tuple(recipients))))


def _known(peer: GossipPeer, ids: range, now: float = T0) -> None:
    for i in ids:
        peer.receive_datagram(_join_request(i), _addr(i), now)
    peer.datagrams_to_send(now)
    while peer.next_event() is not None:
        pass


def _decoded(peer: GossipPeer, now: float) -> list[tuple[Packet, tuple[str, int]]]:
    return [(decode(d), a) for d, a in peer.datagrams_to_send(now)]


def _advance_to(peer: GossipPeer, until: float) -> list[tuple[float, Packet, tuple[str, int]]]:
    out = []
    while (t := peer.next_timer()) is not None and t <= until:
        peer.handle_timer(t)
        out.extend((t, p, a) for p, a in _decoded(peer, t))
    return out


def _forwards_of(sent, origin: int):
    return [
        (t, p, a)
        for t, p, a in sent
        if p.header.hop > 0
        and isinstance(p.payload, AvatarInfo)
        and p.payload.avatar.avatar_id == origin
    ]


def test_check_sans_io_hosted_and_idle() -> None:
    check_sans_io(lambda now: _joined_factory(now), rng=random.Random(0))
    check_sans_io(
        lambda now: GossipPeer(
            config=GossipConfig(), rng=random.Random(1), address=("10.0.0.9", 1)
        ),
        rng=random.Random(0),
    )


def _joined_factory(now: float) -> GossipPeer:
    peer = GossipPeer(config=GossipConfig(), rng=random.Random(2), address=("192.0.2.100", 4000))
    peer.join([], now, game_id=77)
    _known(peer, range(1, 4), now)
    return peer


def test_sends_own_avatar_info_every_frame_to_fanout_peers() -> None:
    peer = _host(fanout=3)
    _known(peer, range(1, 9))
    sent = _advance_to(peer, T0 + 10 * FRAME + 1e-9)
    own = [(t, p, a) for t, p, a in sent if p.message_type is MessageType.AVATAR_INFO]
    times = sorted({t for t, _, _ in own})
    assert len(times) == 11
    assert all(abs(b - a - FRAME) < 1e-9 for a, b in itertools.pairwise(times))
    for t in times:
        batch = [(p, a) for tt, p, a in own if tt == t]
        assert len(batch) == 3
        assert len({a for _, a in batch}) == 3
        assert all(p.header.hop == 0 for p, _ in batch)
        assert {p.tail.recipients for p, _ in batch} == {tuple(avatar_id_for(a) for _, a in batch)}
    numbers = [{p.header.message_number for tt, p, _ in own if tt == t} for t in times]
    assert all(len(n) == 1 for n in numbers)
    flat = [next(iter(n)) for n in numbers]
    assert flat == sorted(flat)
    assert len(set(flat)) == len(flat)


def test_tail_advertises_half_bandwidth() -> None:
    peer = _host()
    _known(peer, range(1, 3))
    peer.advertise_bandwidth(10_001)
    sent = _advance_to(peer, T0 + 1e-9)
    assert sent
    assert all(p.tail.free_bandwidth == 5000 for _, p, _ in sent)
    with pytest.raises(LocalProtocolError):
        peer.advertise_bandwidth(-1)


def test_forward_leaves_at_the_drawn_frame_tick() -> None:
    # Eq. 2.7 in Algorithm 1's frame loop: a message arriving between frame ticks 0 and 1 with
    # a wait of i frames leaves with tick i, together with that tick's own avatar info.
    ticks = Counter()
    for seed in range(400):
        peer = _host(seed)
        _known(peer, range(1, 8))
        _advance_to(peer, T0 + 1e-9)  # tick 0 ran
        t = T0 + 0.0123
        peer.receive_datagram(_avatar_info(1, 50), _addr(1), t)
        peer.datagrams_to_send(t)
        sent = _advance_to(peer, t + 1.0)
        fwd = _forwards_of(sent, avatar_id_for(_addr(1)))
        assert fwd, "the message must be forwarded"
        assert len({ft for ft, _, _ in fwd}) == 1
        tick = round((fwd[0][0] - T0) / FRAME, 6)
        own = [p for ft, p, _ in sent if ft == fwd[0][0] and p.header.hop == 0]
        assert own, "a forward leaves at a frame tick, with the own avatar info"
        ticks[tick] += 1
    assert set(ticks) == {1.0, 2.0, 3.0, 4.0}
    for k in (1.0, 2.0, 3.0, 4.0):
        assert 0.18 < ticks[k] / 400 < 0.32  # sigma ~0.022 around 0.25


def test_zero_frame_wait_forwards_at_once() -> None:
    peer = _host(forward_delay_frames=(0, 0))
    _known(peer, range(1, 8))
    t = T0 + 0.0123
    peer.receive_datagram(_avatar_info(1, 50), _addr(1), t)
    sent = [p for p, _ in _decoded(peer, t)]
    assert [p.header.hop for p in sent] == [1, 1, 1]


def test_forward_increments_hop_and_excludes_origin_and_senders() -> None:
    peer = _host()
    _known(peer, range(1, 12))
    peer.receive_datagram(_avatar_info(1, 9, hop=0), _addr(1), T0)
    peer.receive_datagram(_avatar_info(1, 9, hop=1), _addr(2), T0)
    sent = _forwards_of(_advance_to(peer, T0 + 0.5), avatar_id_for(_addr(1)))
    assert len(sent) == 3  # default fan-out
    dests = {a for _, _, a in sent}
    assert _addr(1) not in dests
    assert _addr(2) not in dests
    assert {p.header.hop for _, p, _ in sent} == {1}
    assert {p.header.message_number for _, p, _ in sent} == {9}
    assert peer.statistics().dropped[DropReason.DUPLICATE] == 1


def test_duplicates_from_two_other_senders_suppress_forwarding() -> None:
    peer = _host()
    _known(peer, range(1, 12))
    peer.receive_datagram(_avatar_info(1, 9), _addr(1), T0)
    peer.receive_datagram(_avatar_info(1, 9, hop=1), _addr(2), T0 + 0.001)
    peer.receive_datagram(_avatar_info(1, 9, hop=1), _addr(2), T0 + 0.002)  # same sender again
    peer.receive_datagram(_avatar_info(1, 9, hop=1), _addr(3), T0 + 0.003)
    sent = _advance_to(peer, T0 + 0.5)
    assert _forwards_of(sent, avatar_id_for(_addr(1))) == []
    stats = peer.statistics()
    assert stats.suppressed == 1
    assert stats.dropped[DropReason.DUPLICATE] == 3
    events = [e for e in iter(peer.next_event, None) if isinstance(e, AvatarUpdated)]
    assert len(events) == 1  # processed once


def test_tail_penalty_applies_to_forwarding() -> None:
    """Nodes named in a received tail are chosen less often (Eq. 2.6), measured over seeds."""
    listed = Counter()
    for seed in range(600):
        peer = _host(seed, fanout=1)
        _known(peer, range(1, 7))
        tail_ids = [avatar_id_for(_addr(i)) for i in (2, 3)]
        peer.receive_datagram(_avatar_info(1, 9, recipients=tail_ids), _addr(1), T0)
        for _, _p, a in _forwards_of(_advance_to(peer, T0 + 0.5), avatar_id_for(_addr(1))):
            listed[a in (_addr(2), _addr(3))] += 1
    # All avatars co-located: v = 1 + 1 + 0.5 * 0.5 = 2.25, listed v' = 1.25 (Eq. 2.6), so
    # P(listed) = 2.5 / 9.25 = 0.27; without the penalty it would be 2 / 5 = 0.40.
    assert sum(listed.values()) == 600
    assert listed[True] / 600 == pytest.approx(2.5 / 9.25, abs=0.06)


def test_ttl_respected() -> None:
    peer = _host()
    _known(peer, range(1, 12))
    peer.receive_datagram(_avatar_info(1, 5, hop=2), _addr(2), T0)
    peer.receive_datagram(_avatar_info(3, 5, hop=3), _addr(2), T0)
    sent = _advance_to(peer, T0 + 0.5)
    assert _forwards_of(sent, avatar_id_for(_addr(1))) == []
    assert _forwards_of(sent, avatar_id_for(_addr(3))) == []
    assert peer.statistics().dropped[DropReason.HOP_EXCEEDED] == 1
    updates = [e for e in iter(peer.next_event, None) if isinstance(e, AvatarUpdated)]
    assert [(e.avatar.avatar_id, e.hop) for e in updates] == [(avatar_id_for(_addr(1)), 2)]
    peer.receive_datagram(_avatar_info(1, 6, hop=1), _addr(2), T0 + 0.5)
    fwd = _forwards_of(_advance_to(peer, T0 + 1.0), avatar_id_for(_addr(1)))
    assert fwd
    assert {p.header.hop for _, p, _ in fwd} == {2}


def test_accepts_and_rejects_are_never_forwarded() -> None:
    peer = _host()
    _known(peer, range(1, 12))
    accept = JoinAccept(avatar=_avatar(20), model=1, name="x")
    peer.receive_datagram(
        encode(
            Packet(
                header=Header(game_id=77, message_number=3, sender_port=5000),
                payload=accept,
                tail=Tail(),
            )
        ),
        _addr(20),
        T0,
    )
    sent = _advance_to(peer, T0 + 0.5)
    assert not [p for _, p, _ in sent if p.message_type is MessageType.JOIN_ACCEPT]


def test_wrong_game_and_garbage_are_counted() -> None:
    peer = _host()
    peer.receive_datagram(_avatar_info(1, 1, game=78), _addr(1), T0)
    peer.receive_datagram(b"\x09garbage", _addr(1), T0)
    stats = peer.statistics()
    assert stats.dropped[DropReason.WRONG_GAME] == 1
    assert stats.dropped[DropReason.MALFORMED] == 1


def test_join_reject_codes() -> None:
    peer = GossipPeer(
        config=GossipConfig(map_id=5, world_min=(0, 0, 0), world_max=(100, 100, 100)),
        rng=random.Random(0),
        address=("192.0.2.100", 4000),
        name="host",
    )
    peer.join([], T0, game_id=77)

    def reply_to(data: bytes, src) -> RejectCode | None:
        peer.receive_datagram(data, src, T0)
        out = _decoded(peer, T0)
        rejects = [p.payload.code for p, _ in out if isinstance(p.payload, JoinReject)]
        return rejects[0] if rejects else None

    def request(i, **kw):
        fields = {"avatar": _avatar(i, pos=(1.0, 1.0, 1.0)), "map_id": 5, "origin": _addr(i)} | kw
        h = Header(sender_port=5000, game_id=77, message_number=1)
        return encode(Packet(header=h, payload=JoinRequest(**fields), tail=Tail()))

    assert reply_to(request(1), _addr(1)) is None
    assert reply_to(request(2, avatar=_avatar(3)), _addr(2)) is RejectCode.INVALID_AVATAR
    assert (
        reply_to(request(4, avatar=_avatar(4, pos=(500.0, 0.0, 0.0))), _addr(4))
        is RejectCode.OUTSIDE_MAP
    )
    assert reply_to(request(5, map_id=6), _addr(5)) is RejectCode.INVALID_GAME
    assert reply_to(request(6, name="host"), _addr(6)) is RejectCode.NAME_TAKEN
    assert reply_to(request(7), _addr(8)) is RejectCode.INVALID_ADDRESS


def test_join_accept_reject_flow() -> None:
    swarm = Swarm()
    a = swarm.add(1, name="a")
    b = swarm.add(2, name="b")
    c = swarm.add(3, name="c")
    a.join([], swarm.now, game_id=99)
    b.join([a.address], swarm.now)
    swarm.pump(a)
    swarm.pump(b)
    swarm.run(0.3)
    assert b.state is PeerState.JOINED
    assert b.game_id == 99
    assert swarm.of(b, JoinAccepted)[0].accepted_by == a.avatar_id
    assert [e.avatar_id for e in swarm.of(a, PeerJoined)] == [b.avatar_id]
    c.join([b.address], swarm.now, game_id=99)
    swarm.pump(c)
    swarm.run(0.5)
    # B forwards C's request to A, which answers C directly (Fig. 3.6)
    assert c.state is PeerState.JOINED
    assert {e.avatar_id for e in swarm.of(c, PeerJoined)} == {a.avatar_id, b.avatar_id}
    assert c.avatar_id in a.known_peers()
    d = swarm.add(4, name="a")
    d.join([c.address], swarm.now, game_id=99)
    swarm.pump(d)
    swarm.run(0.3)
    assert d.state is PeerState.REJECTED
    assert swarm.of(d, JoinRejected)[0].code is RejectCode.NAME_TAKEN


def test_join_times_out() -> None:
    swarm = Swarm()
    a = swarm.add(1, config=GossipConfig(join_attempts=3, join_retry_interval=0.5))
    a.join([("10.9.9.9", 1)], swarm.now, game_id=1)
    swarm.pump(a)
    swarm.run(1.6)
    assert a.state is PeerState.JOIN_FAILED
    assert swarm.of(a, JoinFailed) == [JoinFailed(attempts=3)]
    requests = [
        d for _, d, src, _ in swarm.sent if decode(d).message_type is MessageType.JOIN_REQUEST
    ]
    assert len(requests) == 3


def test_peer_table_forgets_silent_peer_after_10_s() -> None:
    peer = _host()
    _known(peer, range(1, 3))
    aid = avatar_id_for(_addr(1))
    peer.receive_datagram(_avatar_info(2, 100), _addr(2), T0 + 5.0)
    _advance_to(peer, T0 + 9.99)
    assert aid in peer.known_peers()
    _advance_to(peer, T0 + 10.0)
    assert aid not in peer.known_peers()
    assert avatar_id_for(_addr(2)) in peer.known_peers()
    left = [e for e in iter(peer.next_event, None) if isinstance(e, PeerLeft)]
    assert left == [PeerLeft(avatar_id=aid, reason=LeaveReason.TIMED_OUT)]
    _advance_to(peer, T0 + 15.0)
    assert peer.known_peers() == []


def test_leave_is_gossiped_and_removes_peer() -> None:
    swarm = Swarm()
    peers = [swarm.add(i) for i in range(1, 7)]
    peers[0].join([], swarm.now, game_id=5)
    for p in peers[1:]:
        p.join([peers[0].address], swarm.now)
        swarm.pump(p)
    swarm.run(2.0)
    assert all(len(p.known_peers()) == 5 for p in peers)
    peers[3].leave(swarm.now)
    swarm.pump(peers[3])
    swarm.run(0.6)
    gone = peers[3].avatar_id
    for p in peers[:3] + peers[4:]:
        assert gone not in p.known_peers()
        assert PeerLeft(avatar_id=gone, reason=LeaveReason.LEFT) in swarm.of(p, PeerLeft)
    assert peers[3].state is PeerState.LEFT
    assert peers[3].next_timer() is None


def test_retransmission_request_for_unknown_peer() -> None:
    swarm = Swarm()
    a, b, c = (swarm.add(i) for i in (1, 2, 3))
    a.join([], swarm.now, game_id=5)
    b.join([a.address], swarm.now)
    swarm.pump(b)
    swarm.run(0.3)
    # C joins through B while A and C cannot talk and B cannot reach A: only B learns C.
    cut = {(a.address, c.address), (c.address, a.address)}
    swarm.block = lambda data, src, dst, now: (src, dst) in cut | {(b.address, a.address)}
    c.join([b.address], swarm.now)
    swarm.pump(c)
    swarm.run(0.3)
    assert c.avatar_id in b.known_peers()
    assert c.avatar_id not in a.known_peers()
    # B's datagrams to A now list C in their tails; A must ask B (flag 64) and learn C's data.
    swarm.block = lambda data, src, dst, now: (src, dst) in cut
    mark = len(swarm.sent)
    swarm.run(1.0)
    asks = [decode(d) for _, d, src, dst in swarm.sent[mark:] if src == a.address and d[0] & 64]
    assert asks
    assert all(
        dst == b.address for _, d, src, dst in swarm.sent[mark:] if src == a.address and d[0] & 64
    )
    assert any(c.avatar_id in p.retransmission.avatar_ids for p in asks)
    answers = [
        decode(d)
        for _, d, src, dst in swarm.sent[mark:]
        if src == b.address and dst == a.address and d[0] == MessageType.JOIN_ACCEPT
    ]
    assert any(
        p.payload.avatar.avatar_id == c.avatar_id and p.payload.origin == c.address for p in answers
    )
    assert [e.address for e in swarm.of(a, PeerJoined) if e.avatar_id == c.avatar_id] == [c.address]


def test_conflicting_pickups_roll_back_both() -> None:
    swarm = Swarm()
    a, b, c = (swarm.add(i) for i in (1, 2, 3))
    a.join([], swarm.now, game_id=5)
    for p in (b, c):
        p.join([a.address], swarm.now)
        swarm.pump(p)
    swarm.run(1.0)
    ia = a.send_interaction(InteractionKind.PICKUP, swarm.now, target=7)
    ib = b.send_interaction(InteractionKind.PICKUP, swarm.now, target=7)
    assert a.items() == {7: a.avatar_id}
    swarm.run(1.0)
    for p in (a, b, c):
        assert 7 not in p.items(), p.address
    assert InteractionRolledBack(avatar_id=a.avatar_id, interaction=ia) in swarm.of(
        a, InteractionRolledBack
    )
    assert InteractionRolledBack(avatar_id=b.avatar_id, interaction=ib) in swarm.of(
        b, InteractionRolledBack
    )
    # the item can be picked up again afterwards and then everyone agrees
    swarm.run(4.0)
    a.send_interaction(InteractionKind.PICKUP, swarm.now, target=7)
    swarm.run(0.5)
    assert all(p.items() == {7: a.avatar_id} for p in (a, b, c))


def test_correction_after_missed_carriers() -> None:
    swarm = Swarm()
    a, b = swarm.add(1), swarm.add(2)
    a.join([], swarm.now, game_id=5)
    b.join([a.address], swarm.now)
    swarm.pump(b)
    swarm.run(1.0)
    start = swarm.now
    a.send_interaction(InteractionKind.PICKUP, swarm.now, target=3)
    # Every carrier is lost: since the carriers are carry_frames = 20 consecutive own frames
    # (spec 002 §2.8, Fig. 2.8: first message + length in frames), the block spans 1.1 s.
    swarm.block = lambda data, src, dst, now: src == a.address and now < start + 1.1
    swarm.run(2.0)
    assert b.items() == {3: a.avatar_id}
    corrections = [
        decode(d)
        for _, d, src, _ in swarm.sent
        if src == a.address and d[0] == MessageType.INTERACTION_INFO
    ]
    assert corrections
    assert corrections[0].payload.records[0].interaction.target == 3
    received = swarm.of(b, InteractionReceived)
    assert received[0].corrected
    assert received[0].interaction.target == 3


def test_shots_are_delivered_once_and_never_corrected() -> None:
    swarm = Swarm()
    a, b = swarm.add(1), swarm.add(2)
    a.join([], swarm.now, game_id=5)
    b.join([a.address], swarm.now)
    swarm.pump(b)
    swarm.run(1.0)
    shot = a.send_interaction(InteractionKind.SHOT, swarm.now, target=1)
    swarm.run(1.0)
    got = [e for e in swarm.of(b, InteractionReceived) if e.avatar_id == a.avatar_id]
    assert got == [InteractionReceived(avatar_id=a.avatar_id, interaction=shot, corrected=False)]
    assert not [d for _, d, src, _ in swarm.sent if d[0] == MessageType.INTERACTION_INFO]


def test_transition_table_and_verbs() -> None:
    assert TRANSITIONS[(PeerState.IDLE, PeerInput.JOIN)] is PeerState.JOINING
    assert TRANSITIONS[(PeerState.JOINING, PeerInput.REJECT_RECEIVED)] is PeerState.REJECTED
    assert all(s is not PeerState.LEFT for (s, _) in TRANSITIONS)
    peer = _host()
    with pytest.raises(LocalProtocolError, match="join"):
        peer.join([], T0)
    idle = GossipPeer(config=GossipConfig(), rng=random.Random(0), address=("10.0.0.1", 1))
    with pytest.raises(LocalProtocolError, match="leave"):
        idle.leave(T0)
    with pytest.raises(LocalProtocolError, match="send_interaction"):
        idle.send_interaction(InteractionKind.SHOT, T0)
    with pytest.raises(LocalProtocolError, match="IPv4 or IPv6"):
        GossipPeer(config=GossipConfig(), rng=random.Random(0), address=("host", 1))


def test_leave_payload_names_leaver() -> None:
    peer = _host()
    _known(peer, range(1, 4))
    peer.leave(T0 + 0.01)
    out = _decoded(peer, T0 + 0.01)
    assert out
    assert all(p.payload == Leave(avatar_id=peer.avatar_id) for p, _ in out)


def _in_state(state: PeerState) -> GossipPeer:
    peer = GossipPeer(
        config=GossipConfig(join_attempts=1),
        rng=random.Random(0),
        address=("192.0.2.100", 4000),
    )
    if state is PeerState.JOINED or state is PeerState.LEFT:
        peer.join([], T0, game_id=77)
    if state is PeerState.LEFT:
        peer.leave(T0)
    if state in (PeerState.JOINING, PeerState.REJECTED, PeerState.JOIN_FAILED):
        peer.join([_addr(1)], T0, game_id=77)
    if state is PeerState.REJECTED:
        reject = JoinReject(code=RejectCode.INVALID_GAME, rejecter_id=avatar_id_for(_addr(1)))
        header = Header(sender_port=5000, game_id=77, message_number=1)
        peer.receive_datagram(
            encode(Packet(header=header, payload=reject, tail=Tail())), _addr(1), T0
        )
    if state is PeerState.JOIN_FAILED:
        peer.handle_timer(T0 + 5.0)
    assert peer.state is state
    return peer


@pytest.mark.parametrize("state", list(PeerState))
@pytest.mark.parametrize("verb", [PeerInput.JOIN, PeerInput.HOST, PeerInput.LEAVE])
def test_application_verbs_follow_the_table(state: PeerState, verb: PeerInput) -> None:
    peer = _in_state(state)
    allowed = (state, verb) in TRANSITIONS

    def act() -> None:
        if verb is PeerInput.LEAVE:
            peer.leave(T0 + 6.0)
        else:
            peer.join([_addr(2)] if verb is PeerInput.JOIN else [], T0 + 6.0, game_id=77)

    if allowed:
        act()
        assert peer.state is TRANSITIONS[(state, verb)]
    else:
        with pytest.raises(LocalProtocolError):
            act()
        assert peer.state is state


@given(st.lists(packet, min_size=1, max_size=5), st.integers(0, 3))
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
def test_any_valid_datagram_is_processed_or_counted(packets: list[Packet], flip: int) -> None:
    peer = _joined_factory(T0)
    for i, p in enumerate(packets):
        data = bytearray(encode(p))
        if flip and data:
            data[(i * 7) % len(data)] ^= flip
        peer.receive_datagram(bytes(data), _addr(1 + i % 3), T0 + 0.001 * i)
        peer.handle_timer(T0 + 0.001 * i)
        peer.datagrams_to_send(T0 + 0.001 * i)
    stats = peer.statistics()
    assert stats.datagrams_received == len(packets) + 3
    while peer.next_event() is not None:
        pass


def test_spoofed_source_is_not_learnt() -> None:
    peer = _host()
    peer.receive_datagram(_avatar_info(1, 3), ("192.0.2.99", 5000), T0)  # not 1's address
    peer.receive_datagram(_avatar_info(2, 3), ("not-an-ip", 5000), T0)
    peer.receive_datagram(_avatar_info(4, 3), _addr(4), T0)
    sent = _advance_to(peer, T0 + 0.2)
    plain = {a for _, p, a in sent if p.retransmission is None}
    assert plain == {_addr(4)}
    # Spec 002 §2.5.7: the flag-64 request is "always appended to the end of another message",
    # so it rides only on an own avatar info drawn to that node; unaddressed sources (spoofed or
    # relayed) are never destinations, hence never asked.
    asked = {a for _, p, a in sent if p.retransmission is not None}
    assert asked == {_addr(4)}
    assert peer.peer_avatar(avatar_id_for(_addr(1))) is not None  # its state is still applied
