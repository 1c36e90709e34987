"""Time Warp and local rollback (``lagless.sync.timewarp``): stragglers, anti-messages, the hold.

A hand-written loop delivers each peer's datagrams to the others after a fixed number of ticks
per direction, so every test knows exactly which message is late.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import ConfigError
from lagless.sync.arena import SHOOT, Arena, ArenaState, ScriptedInputs
from lagless.sync.harness import HarnessConfig, run_session
from lagless.sync.registry import make_peer
from lagless.sync.timewarp import LocalRollbackPeer, TimeWarpPeer
from lagless.sync.timewarp_codec import (
    MAX_CHECKS,
    MAX_INPUT,
    MAX_MESSAGES,
    Message,
    Packet,
    decode,
    encode,
)

PERIOD = 1 / 60


def _peers(algorithm: str, n: int, **knobs: Any) -> tuple[Arena, list[Any]]:
    game = Arena(n)
    peers = [
        make_peer(algorithm, game, i, n, random.Random(i), frame_period=PERIOD, **knobs)
        for i in range(n)
    ]
    return game, peers


def _run(
    peers: list[Any],
    ticks: int,
    delay: dict[tuple[int, int], int],
    *,
    quiet_after: int | None = None,
    drop: set[tuple[int, int]] | None = None,
) -> None:
    """Tick every peer ``ticks`` times; datagrams from i to j arrive ``delay[(i, j)]`` ticks later
    (default 1); pairs in ``drop`` never arrive; inputs go neutral after ``quiet_after``."""
    bots = [ScriptedInputs(p, 5, changes_per_second=6.0) for p in range(len(peers))]
    flight: dict[int, list[tuple[int, int, bytes]]] = {}
    for tick in range(ticks):
        now = tick * PERIOD
        for dst, src, payload in flight.pop(tick, []):
            peers[dst].receive(src, payload, now)
        for i, peer in enumerate(peers):
            raw = bots[i].at_frame(tick) if quiet_after is None or tick < quiet_after else b"\0"
            peer.tick(now, raw)
            for out in peer.outgoing():
                if drop and (i, out.destination) in drop:
                    continue
                when = tick + delay.get((i, out.destination), 1)
                flight.setdefault(when, []).append((out.destination, i, out.payload))


def _checksums(game: Arena, peers: list[Any]) -> set[int]:
    return {game.checksum(p.displayed_state) for p in peers}


@pytest.mark.parametrize("algorithm", ["time-warp", "local-rollback"])
def test_a_straggler_rolls_back_and_the_peers_converge(algorithm: str) -> None:
    game, peers = _peers(algorithm, 2)
    _run(peers, 400, {(1, 0): 9, (0, 1): 1}, quiet_after=300)
    slow_side = peers[0].stats
    assert slow_side.rollback_depths, "peer 0 never rolled back"
    assert max(slow_side.rollback_depths) >= 9
    assert slow_side.frames_resimulated >= sum(slow_side.rollback_depths)
    assert peers[0].displayed_frame == peers[1].displayed_frame == 400
    assert len(_checksums(game, peers)) == 1


def test_without_stragglers_there_is_no_rollback() -> None:
    game, peers = _peers("time-warp", 3)
    # every input reaches the others before they execute its frame: delay_frames covers it
    for peer in peers:
        peer._delay = 2
    _run(peers, 200, {})
    assert all(not p.stats.rollback_depths for p in peers)
    assert len(_checksums(game, peers)) == 1


def _push(peer: Any, source: int, messages: tuple[Message, ...], first: int) -> None:
    peer.receive(source, encode(Packet(0, 0, first, messages)), 0.0)


def test_an_anti_message_annihilates_an_unprocessed_message_without_rollback() -> None:
    _, (peer, _) = _peers("time-warp", 2)
    for tick in range(10):
        peer.tick(tick * PERIOD, b"\0")
    _push(peer, 1, (Message(50, b"\x01"),), 0)
    _push(peer, 1, (Message(50, b"\x01", anti=True),), 1)
    peer.tick(10 * PERIOD, b"\0")
    assert peer.annihilated == 1
    assert peer.cascades == 0
    assert not peer.stats.rollback_depths


def test_an_anti_message_for_a_processed_message_rolls_back() -> None:
    game, (peer, _) = _peers("time-warp", 2)
    _, reference = _peers("time-warp", 2)
    _push(peer, 1, (Message(3, b"\x08"),), 0)  # player 1 holds right from frame 3
    for tick in range(20):
        peer.tick(tick * PERIOD, b"\0")
        reference[1].tick(tick * PERIOD, b"\0")
    moved = game.checksum(peer.displayed_state)
    _push(peer, 1, (Message(3, b"\x08", anti=True),), 1)
    peer.tick(20 * PERIOD, b"\0")
    reference[1].tick(20 * PERIOD, b"\0")
    assert peer.cascades == 1
    assert peer.stats.rollback_depths == [17]  # frames 3..19 redone
    assert game.checksum(peer.displayed_state) != moved
    # after the annihilation the history is that of a peer that never got the message
    assert game.checksum(peer.displayed_state) == game.checksum(reference[1].displayed_state)


def test_events_far_in_the_future_are_refused() -> None:
    _, (peer, _) = _peers("time-warp", 2, window=30)
    peer.tick(0.0, b"\0")
    _push(peer, 1, tuple(Message(10_000 + i, b"\x01") for i in range(MAX_MESSAGES)), 0)
    _push(peer, 1, (Message(100, b"\x01"),), MAX_MESSAGES)
    assert peer.garbage == MAX_MESSAGES
    assert peer._inputs.frames[1] == [100]


def test_an_unmatched_anti_message_is_counted_and_changes_nothing() -> None:
    _, (peer, _) = _peers("time-warp", 2)
    peer.tick(0.0, b"\0")
    _push(peer, 1, (Message(5, b"\x01", anti=True),), 0)
    assert peer.garbage == 1
    assert peer.annihilated == 0


def _react(state: ArenaState, frame: int, player: int, raw: bytes) -> bytes:
    """Fire only on some positions of the others: an input derived from (mispredictable) state."""
    others = sum(int(state.pos[q][0]) for q in range(len(state.pos)) if q != player)
    bits = raw[0] if raw else 0
    if (others // 200) % 2:
        bits &= ~SHOOT
    return bytes((bits,))


def test_time_warp_sends_anti_messages_and_still_converges() -> None:
    game, peers = _peers("time-warp", 3, react=_react)
    _run(peers, 500, {(0, 1): 12, (1, 2): 7, (2, 0): 4}, quiet_after=400)
    assert sum(p.anti_messages_sent for p in peers) > 0
    assert sum(p.annihilated for p in peers) > 0
    assert sum(p.cascades for p in peers) > 0
    assert len(_checksums(game, peers)) == 1


def test_local_rollback_sends_no_anti_messages_and_converges() -> None:
    game, peers = _peers("local-rollback", 3, react=_react)
    _run(peers, 500, {(0, 1): 12, (1, 2): 7, (2, 0): 4}, quiet_after=400)
    assert sum(p.anti_messages_sent for p in peers) == 0
    assert sum(p.annihilated for p in peers) == 0
    assert all(p.hold_times for p in peers)
    assert len(_checksums(game, peers)) == 1


def test_the_pain_threshold_bounds_the_hold() -> None:
    pain = 0.1
    _, peers = _peers("local-rollback", 2, pain_threshold=pain)
    # peer 1 never hears from peer 0, so it never learns that a frame is safe
    _run(peers, 120, {}, drop={(0, 1)})
    lonely, heard = peers[1], peers[0]
    assert lonely.hold_times
    assert max(lonely.hold_times) <= pain + PERIOD + 1e-9
    assert max(lonely.hold_times) >= pain - 1e-9
    assert max(heard.hold_times) < pain  # its partner's timestamps release it earlier


def test_force_majeure_keeps_a_sent_event() -> None:
    game, peers = _peers("local-rollback", 2, react=_react, pain_threshold=PERIOD)
    _run(peers, 400, {(0, 1): 20, (1, 0): 20}, quiet_after=300)
    assert sum(p.force_majeure for p in peers) > 0
    assert len(_checksums(game, peers)) == 1


def test_the_window_stalls_a_peer_that_hears_nothing() -> None:
    _, (peer, _) = _peers("time-warp", 2, window=30)
    for tick in range(100):
        peer.tick(tick * PERIOD, b"\0")
    assert peer.displayed_frame == 29
    assert peer.stats.stall_frames == 71


class _Flawed(Arena):
    """The arena with a hidden difference: player 0 moves 1 mm once, on frame 40."""

    def step(self, state: ArenaState, inputs: Any, frame: int) -> ArenaState:
        state = super().step(state, inputs, frame)
        if frame == 40:
            state.pos[0, 0] += 1
        return state


@pytest.mark.parametrize("flawed", [False, True])
def test_final_checksums_reveal_a_desync(flawed: bool) -> None:
    games = [Arena(2), _Flawed(2) if flawed else Arena(2)]
    peers = [
        TimeWarpPeer(
            games[i],
            peer=i,
            peers=2,
            rng=random.Random(i),
            frame_period=PERIOD,
            window=20,
            check_every=30,
        )
        for i in range(2)
    ]
    _run(peers, 200, {(0, 1): 3, (1, 0): 3}, quiet_after=150)
    if flawed:
        # frames 0 and 30 agree; the first check after the flaw (60) and every later one differ
        assert peers[0].stats.desyncs[0] == 60
        assert peers[1].stats.desyncs[0] == 60
        assert len(peers[0].stats.desyncs) >= 3
    else:
        assert peers[0].stats.desyncs == peers[1].stats.desyncs == []
        assert peers[0]._own_checks == peers[1]._own_checks != {}


def test_garbage_is_counted_not_raised() -> None:
    _, (peer, _) = _peers("local-rollback", 2)
    for junk in (b"", b"\xa7", b"\x00" * 14, bytes(range(40))):
        peer.receive(1, junk, 0.0)
    peer.receive(0, encode(Packet(1, 0, 0, ())), 0.0)  # claims to be from itself
    assert peer.garbage == 5


def test_bad_knobs_are_config_errors() -> None:
    game = Arena(2)
    with pytest.raises(ConfigError, match="window"):
        TimeWarpPeer(game, peer=0, peers=2, rng=random.Random(0), frame_period=PERIOD, window=1)
    with pytest.raises(ConfigError, match="pain_threshold"):
        LocalRollbackPeer(
            game, peer=0, peers=2, rng=random.Random(0), frame_period=PERIOD, pain_threshold=0
        )
    with pytest.raises(ConfigError, match="unknown algorithm"):
        make_peer("warp-speed", game, 0, 2, random.Random(0))


_messages = st.builds(
    Message,
    st.integers(0, 2**32 - 1),
    st.binary(max_size=MAX_INPUT),
    st.booleans(),
)
_u32 = st.integers(0, 2**32 - 1)
_packets = st.builds(
    Packet,
    _u32,
    _u32,
    _u32,
    st.lists(_messages, max_size=MAX_MESSAGES).map(tuple),
    st.lists(st.tuples(_u32, _u32), max_size=MAX_CHECKS).map(tuple),
)


@given(_packets)
def test_codec_round_trip(packet: Packet) -> None:
    assert decode(encode(packet)) == packet


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_decode_never_raises(data: bytes) -> None:
    packet = decode(data)
    if packet is not None:
        assert encode(packet) == data


@given(_packets, st.integers(0, 400), st.integers(0, 255))
def test_decode_rejects_corruption_or_reads_it_exactly(packet: Packet, at: int, byte: int) -> None:
    data = bytearray(encode(packet))
    data[at % len(data)] = byte
    decoded = decode(bytes(data))
    assert decoded is None or encode(decoded) == bytes(data)
    assert decode(encode(packet)[:-1]) is None  # a valid packet cut short never decodes


@pytest.mark.parametrize(
    ("algorithm", "topology"), [("time-warp", "mesh"), ("local-rollback", "star")]
)
def test_eight_peers_over_the_simulator_converge(algorithm: str, topology: str) -> None:
    bots = [ScriptedInputs(p, 2) for p in range(8)]
    config = HarnessConfig(
        algorithm=algorithm,
        peers=8,
        topology=topology,
        profile="wifi",
        loss=0.05,
        duration=1.5,
        drain=1.0,
        knobs={"react": _react},
    )
    result = run_session(config, Arena(8), lambda peer, tick: bots[peer].at_frame(tick))
    assert result.converged
    assert result.final_frame >= 140
    assert result.metrics()["rollbacks_per_s"] > 0
    assert result.metrics()["desyncs"] == 0
