"""GGPO-style rollback (``lagless.sync.rollback``): prediction, window, time sync, spectators."""

from __future__ import annotations

import heapq
import random
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs, arena_input
from lagless.sync.harness import HarnessConfig, run_session
from lagless.sync.inputs import InputPacket, decode_rollback_packet, encode_drop_notice
from lagless.sync.registry import make_peer
from lagless.sync.rollback import RollbackPeer, RollbackSpectator, make_rollback_peer

PERIOD = 1.0 / 60.0


class Loop:
    """A tiny lossy, delayed network between peers, each ticking on its own start time."""

    def __init__(
        self,
        peers: Sequence[Any],
        *,
        delay: float,
        loss: float = 0.0,
        jitter: float = 0.0,
        starts: Sequence[float] = (),
        seed: int = 0,
        inputs: Any = None,
    ) -> None:
        self.peers = list(peers)
        self.delay = delay
        self.loss = loss
        self.jitter = jitter
        self.rng = random.Random(seed)
        self.inputs = inputs or (lambda peer, tick: b"\x00")
        self.events: list[tuple[float, int, int, Any]] = []
        self.order = 0
        self.ticks = [0] * len(self.peers)
        for index, _ in enumerate(self.peers):
            start = starts[index] if index < len(starts) else 0.0
            self._push(start, ("tick", index))
        self.log: list[tuple[float, int, int]] = []

    def _push(self, when: float, what: Any) -> None:
        self.order += 1
        heapq.heappush(self.events, (when, self.order, 0, what))

    def run(self, until: float) -> None:
        while self.events and self.events[0][0] <= until:
            now, _, _, what = heapq.heappop(self.events)
            if what[0] == "tick":
                index = what[1]
                peer = self.peers[index]
                peer.tick(now, self.inputs(index, self.ticks[index]))
                self.ticks[index] += 1
                self.log.append((now, index, peer.displayed_frame))
                for out in peer.outgoing():
                    if self.rng.random() >= self.loss:
                        lag = self.delay + self.rng.uniform(0.0, self.jitter)
                        self._push(now + lag, ("deliver", out.destination, index, out.payload))
                self._push(now + peer.frame_period, ("tick", index))
            else:
                _, dst, src, payload = what
                self.peers[dst].receive(src, payload, now)


def _bots(seed: int) -> Any:
    bots = [ScriptedInputs(p, seed) for p in range(8)]
    return lambda peer, tick: bots[peer].at_frame(tick)


def _players(game: Arena, peers: int | None = None, **knobs: Any) -> list[RollbackPeer[ArenaState]]:
    total = peers or game.players
    return [RollbackPeer(game, peer=p, peers=total, **knobs) for p in range(game.players)]


def _common_sums(peers: Sequence[Any]) -> dict[int, set[int]]:
    """Per frame every peer published a checksum for, the set of checksums (1 when agreeing)."""
    tables = [p.confirmed_checksums if isinstance(p, RollbackPeer) else p.checksums for p in peers]
    frames = set(tables[0]).intersection(*tables[1:])
    return {f: {t[f] for t in tables} for f in frames}


def test_prediction_repeats_the_last_input_and_rolls_back_when_wrong() -> None:
    game = Arena(2)
    a, b = _players(game, input_delay=0, max_prediction=8)
    press = arena_input(right=True)
    # b presses right from its first tick; a sees it only 3 frames later.
    pending: list[bytes] = []
    for tick in range(3):
        a.tick(tick * PERIOD, game.neutral_input)
        b.tick(tick * PERIOD, press)
        pending.extend(o.payload for o in b.outgoing())
        a.outgoing()
    assert a.displayed_frame == 3
    assert a.stats.rollback_depths == []
    x_before = int(a.displayed_state.pos[1, 0])
    for payload in pending:
        a.receive(1, payload, 3 * PERIOD)
    a.tick(3 * PERIOD, game.neutral_input)
    assert a.stats.rollback_depths == [3]
    assert a.stats.frames_resimulated == 3
    # after the rollback b has moved on all 4 frames, as on b's own screen
    assert int(a.displayed_state.pos[1, 0]) - x_before == 4 * game.player_step_mm
    b.tick(3 * PERIOD, press)
    assert game.checksum(a.displayed_state) == game.checksum(b.displayed_state)


def test_a_correct_prediction_costs_no_rollback() -> None:
    game = Arena(2)
    a, b = _players(game, input_delay=0)
    for tick in range(5):
        a.tick(tick * PERIOD, game.neutral_input)
        b.tick(tick * PERIOD, game.neutral_input)
        payloads = [o.payload for o in b.outgoing()]
        a.outgoing()
        if tick == 4:
            for payload in payloads:
                a.receive(1, payload, tick * PERIOD)
    a.tick(5 * PERIOD, game.neutral_input)
    assert a.stats.rollback_depths == []
    assert a.confirmed_frame == 4


def test_the_prediction_window_stalls_instead_of_rolling_back_further() -> None:
    game = Arena(2)
    a, _ = _players(game, input_delay=0, max_prediction=5)
    for tick in range(20):
        a.tick(tick * PERIOD, arena_input(up=True))
    assert a.displayed_frame == 5
    assert a.stats.stall_frames == 15


def test_a_stall_adds_to_the_felt_delay() -> None:
    game = Arena(2)
    a, b = _players(game, input_delay=0, max_prediction=3)
    for tick in range(10):  # frames 0-2 advance, then the window is full: ticks 3-9 stall
        a.tick(tick * PERIOD, arena_input(up=True) if tick >= 5 else game.neutral_input)
        a.outgoing()
    assert (a.displayed_frame, a.stats.stall_frames) == (3, 7)
    for tick in range(10):
        b.tick(tick * PERIOD, game.neutral_input)
    for out in b.outgoing():
        a.receive(1, out.payload, 10 * PERIOD)
    a.tick(10 * PERIOD, arena_input(up=True))
    # pressed on tick 5, applied on tick 10 when the peer could advance again
    assert a.stats.input_delays == [pytest.approx(5 * PERIOD)]


def test_input_delay_is_felt_as_delay_frames() -> None:
    game = Arena(2)
    for delay in (0, 3):
        peers = _players(game, input_delay=delay)
        loop = Loop(peers, delay=0.005, inputs=lambda p, t: bytes(((t // 20) % 2 * 8,)))
        loop.run(2.0)
        felt = peers[0].stats.input_delays
        assert len(felt) >= 5
        assert max(felt) == pytest.approx(delay * PERIOD, abs=1e-9)


@pytest.mark.parametrize(("players", "loss"), [(2, 0.2), (4, 0.1)])
def test_peers_converge_over_a_lossy_delayed_loop(players: int, loss: float) -> None:
    game = Arena(players, entities=20)
    peers = _players(game, input_delay=1, max_prediction=8)
    loop = Loop(peers, delay=0.04, jitter=0.02, loss=loss, seed=players, inputs=_bots(5))
    loop.run(4.0)
    common = _common_sums(peers)
    assert len(common) > 20
    assert all(len(sums) == 1 for sums in common.values())
    for peer in peers:
        assert peer.stats.desyncs == []
        assert peer.stats.rollback_depths  # mispredictions happened and were repaired
        assert max(peer.stats.rollback_depths) <= 8
        assert peer.displayed_frame > 200


def test_inputs_are_resent_until_acknowledged() -> None:
    game = Arena(2)
    a, b = _players(game, input_delay=2)
    for tick in range(4):
        a.tick(tick * PERIOD, arena_input(left=True))
        sent = a.outgoing()
    # nothing was acknowledged: the last datagram carries every input from frame 0
    packet = decode_rollback_packet(sent[0].payload)
    assert isinstance(packet, InputPacket)
    assert packet.start == 0
    assert len(packet.inputs) == 4 + 2
    b.receive(0, sent[0].payload, 4 * PERIOD)
    b.tick(4 * PERIOD, game.neutral_input)
    for out in b.outgoing():
        a.receive(1, out.payload, 5 * PERIOD)
    a.tick(5 * PERIOD, arena_input(left=True))
    packet = decode_rollback_packet(a.outgoing()[0].payload)
    assert isinstance(packet, InputPacket)
    assert packet.start == 6  # frames 0..5 acknowledged
    assert len(packet.inputs) == 1
    assert a.rtt(1) == pytest.approx(2 * PERIOD, abs=1e-9)  # frame 5 was sent at tick 3


def test_the_peer_that_is_ahead_slows_down() -> None:
    game = Arena(2)
    peers = _players(game, input_delay=2, max_prediction=30)
    # peer 1 starts ten frames late: without time sync peer 0 would stay ten frames ahead
    loop = Loop(peers, delay=0.03, starts=(0.0, 10 * PERIOD))
    loop.run(1.0)
    assert peers[0].frame_period > PERIOD
    assert peers[1].frame_period == PERIOD
    loop.run(8.0)
    assert abs(_final_gap(loop, 7.0)) <= 2
    assert peers[0].frame_advantage < 1.5


def _final_gap(loop: Loop, after: float) -> int:
    last: dict[int, int] = {}
    for now, index, frame in loop.log:
        if now > after:
            last[index] = frame
    return last[0] - last[1]


@pytest.mark.parametrize(
    ("mode", "deaf", "stays"), [("period", True, True), ("off", False, True), ("skip", True, False)]
)
def test_time_sync_modes(mode: str, deaf: bool, stays: bool) -> None:
    """Peer 1 starts ten frames late; ``skip`` repairs it even for a driver deaf to the period."""
    game = Arena(2)
    players = _players(game, input_delay=2, max_prediction=30, time_sync=mode)
    peers = [_FixedRate(p) for p in players] if deaf else players
    loop = Loop(peers, delay=0.03, starts=(0.0, 10 * PERIOD))
    loop.run(8.0)
    gap = _final_gap(loop, 7.0)
    if stays:
        assert gap >= 8
        assert players[0].skipped_ticks == 0
    else:
        assert abs(gap) <= 2
        assert 4 <= players[0].skipped_ticks <= 14
        assert players[1].skipped_ticks <= 2
        assert players[0].frame_period == PERIOD


class _FixedRate:
    """Wraps a peer and reports the nominal period, as a driver deaf to time sync would use."""

    def __init__(self, inner: RollbackPeer[ArenaState]) -> None:
        self.inner = inner
        self.frame_period = PERIOD

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _Crashing:
    """Wraps a peer that stops ticking (and so sending) after ``crash_at`` seconds.

    From ``mute_at`` on, its datagrams to the peers in ``muted`` are lost, so the survivors hold
    different amounts of its inputs when it falls silent.
    """

    def __init__(
        self,
        inner: RollbackPeer[ArenaState],
        crash_at: float,
        *,
        mute_at: float = 0.0,
        muted: Sequence[int] = (),
    ) -> None:
        self.inner = inner
        self.crash_at = crash_at
        self.mute_at = mute_at
        self.muted = set(muted)
        self.frame_period = PERIOD
        self.now = 0.0

    def tick(self, now: float, local_input: bytes) -> None:
        self.now = now
        if now < self.crash_at:
            self.inner.tick(now, local_input)

    def outgoing(self) -> list[Any]:
        out = self.inner.outgoing()
        if self.now < self.mute_at:
            return out
        return [o for o in out if o.destination not in self.muted]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_silent_player_is_reported_interrupted_then_dropped() -> None:
    game = Arena(3)
    a, b, c = _players(game, input_delay=1, max_prediction=8)
    loop = Loop([a, b, _Crashing(c, crash_at=1.0)], delay=0.02, inputs=_bots(4))
    loop.run(1.5)
    assert a.interrupted == []
    assert b.disconnected == []
    loop.run(2.5)
    assert a.interrupted == [2]
    assert b.interrupted == [2]
    assert a.disconnected == []
    assert a.dropped == {}
    stalls = a.stats.stall_frames
    assert stalls > 60  # the window filled a few frames after the crash
    loop.run(3.5)
    assert a.disconnected == b.disconnected == [2]
    assert a.dropped == b.dropped
    assert set(a.dropped) == {2}
    assert a.interrupted == b.interrupted == []


def _drop_run(
    game: Arena, crash: _Crashing, peers: Sequence[RollbackPeer[ArenaState]], until: float
) -> tuple[Loop, list[tuple[float, int, int]]]:
    """Run until ``until``; return the loop and (time, stalls, frame of peer 0) every 0.1 s."""
    loop = Loop([*peers, crash], delay=0.03, jitter=0.01, loss=0.05, inputs=_bots(6))
    trace: list[tuple[float, int, int]] = []
    for step in range(1, round(until * 10) + 1):
        loop.run(step / 10)
        trace.append((step / 10, peers[0].stats.stall_frames, peers[0].displayed_frame))
    return loop, trace


def test_the_others_drop_a_silent_player_by_agreement_and_go_on() -> None:
    """Three players; the third falls silent at 1.5 s, its last 0.2 s never reached peer 1.

    Peer 0 holds about 12 more frames of its inputs than peer 1: they agree on the frame after
    the highest (peer 0 relays the rest), converge to equal checksums and never stall again.
    """
    game = Arena(3, entities=20)
    a, b, c = _players(game, input_delay=2, max_prediction=8)
    crash = _Crashing(c, crash_at=1.5, mute_at=1.3, muted=[1])
    _, trace = _drop_run(game, crash, [a, b], until=7.0)
    assert a.dropped == b.dropped
    drop_frame = a.dropped[2]
    assert 1.45 * 60 <= drop_frame <= 1.6 * 60  # after the last input peer 0 held, not peer 1's
    assert a.disconnected == b.disconnected == [2]
    # no stall once the drop settled (2 s of silence plus a round trip, well before 4 s)
    after = [(stalls, frame) for when, stalls, frame in trace if when >= 4.0]
    assert after[-1][0] == after[0][0]
    assert after[-1][1] - after[0][1] >= 0.95 * 3.0 * 60  # full speed again: a frame per tick
    sums = _common_sums([a, b])
    assert max(sums) > drop_frame + 120
    assert all(len(s) == 1 for s in sums.values())
    assert a.stats.desyncs == b.stats.desyncs == []
    # the survivors' states agree frame for frame after the drop, as they show them
    frame = max(sums)
    assert a.confirmed_checksums[frame] == b.confirmed_checksums[frame]


def test_the_last_player_standing_goes_on_alone() -> None:
    game = Arena(2)
    a, b = _players(game, input_delay=1, max_prediction=8)
    loop = Loop([a, _Crashing(b, crash_at=1.0)], delay=0.02, inputs=_bots(2))
    loop.run(3.2)
    assert set(a.dropped) == {1}
    stalled = a.stats.stall_frames
    frame = a.displayed_frame
    loop.run(5.2)
    assert a.stats.stall_frames == stalled
    assert a.displayed_frame - frame >= 110


def test_a_drop_notice_from_one_peer_makes_the_others_join() -> None:
    """Peer 0 alone stops hearing peer 2 (a one-way cut); peer 1 still does, but joins the drop."""
    game = Arena(3)
    a, b, c = _players(game, input_delay=1, max_prediction=8)
    cut = _Crashing(c, crash_at=99.0, mute_at=1.0, muted=[0])
    loop = Loop([a, b, cut], delay=0.02, inputs=_bots(3))
    loop.run(4.0)
    assert a.dropped == b.dropped
    assert set(a.dropped) == {2}
    before = b.rejected
    loop.run(4.5)
    assert b.rejected > before  # peer 2's datagrams are ignored once it is frozen
    sums = _common_sums([a, b])
    assert max(sums) > a.dropped[2] + 60
    assert all(len(s) == 1 for s in sums.values())


def test_drop_notices_about_oneself_or_from_strangers_are_counted() -> None:
    game = Arena(3)
    a, _, _ = _players(game)
    about_me, _ = encode_drop_notice(player=0, done=False, last=3, start=0, inputs=[])
    about_sender, _ = encode_drop_notice(player=1, done=False, last=3, start=0, inputs=[])
    too_far, _ = encode_drop_notice(player=2, done=False, last=10_000, start=0, inputs=[])
    for payload in (about_me, about_sender, too_far):
        a.receive(1, payload, 0.0)
    assert a.rejected == 3
    assert a.disconnected == []


@settings(max_examples=150, deadline=None)
@given(
    notices=st.lists(
        st.tuples(
            st.integers(1, 2),
            st.integers(0, 7),
            st.booleans(),
            st.integers(-1, 400),
            st.integers(0, 400),
            st.lists(st.binary(max_size=4), max_size=30),
        ),
        max_size=12,
    )
)
def test_any_drop_notices_keep_a_peer_bounded(
    notices: list[tuple[int, int, bool, int, int, list[bytes]]],
) -> None:
    game = Arena(3)
    a, _, _ = _players(game, input_delay=1, max_prediction=8)
    for index, (source, player, done, last, start, inputs) in enumerate(notices):
        payload, _ = encode_drop_notice(
            player=player, done=done, last=last, start=start, inputs=inputs
        )
        a.receive(source, payload, index / 60)
        a.tick(index / 60, game.neutral_input)
        a.outgoing()
    assert a.displayed_frame <= len(notices)
    assert all(len(a._inputs[p]) <= 2 + 400 for p in range(3))  # bounded by what was sent


def test_a_desync_is_detected_by_exchanged_checksums() -> None:
    honest = Arena(2)
    cheat = _DriftArena(2)
    peers = [
        RollbackPeer(honest, peer=0, peers=2, input_delay=1),
        RollbackPeer(cheat, peer=1, peers=2, input_delay=1),
    ]
    loop = Loop(peers, delay=0.02, inputs=_bots(2))
    loop.run(2.0)
    assert peers[0].stats.desyncs
    assert peers[1].stats.desyncs
    assert min(peers[0].stats.desyncs) > 60  # the drift starts at frame 60


class _DriftArena(Arena):
    def step(self, state: ArenaState, inputs: Sequence[bytes], frame: int) -> ArenaState:
        state = super().step(state, inputs, frame)
        if frame >= 60:
            state.deaths[0] += 1
        return state


def test_a_spectator_sees_the_players_confirmed_states() -> None:
    game = Arena(2, entities=10)
    players = _players(game, peers=4, input_delay=1, max_prediction=8)
    spectators = [RollbackSpectator(game, peer=s, peers=4) for s in (2, 3)]
    loop = Loop([*players, *spectators], delay=0.03, jitter=0.02, loss=0.1, inputs=_bots(8))
    loop.run(4.0)
    common = _common_sums([*players, *spectators])
    assert len(common) > 20
    assert all(len(sums) == 1 for sums in common.values())
    for spectator in spectators:
        assert spectator.displayed_frame > 180
        assert spectator.stats.desyncs == []
        assert spectator.stats.frames_resimulated == 0
        assert all(out.destination == 0 for out in spectator.outgoing())
    # spectators never send inputs: only 5-byte acknowledgements, one per tick
    assert spectators[0].stats.bytes_sent == 5 * loop.ticks[2]


@pytest.mark.parametrize(
    ("peers", "profile", "loss", "topology"),
    [(2, "wifi", 0.1, "mesh"), (4, "dsl", 0.05, "star"), (8, "wifi", 0.05, "mesh")],
)
def test_harness_sessions_converge(peers: int, profile: str, loss: float, topology: str) -> None:
    game = Arena(peers)
    config = HarnessConfig(
        algorithm="rollback",
        peers=peers,
        topology=topology,  # type: ignore[arg-type]
        profile=profile,
        loss=loss,
        duration=3.0 if peers < 8 else 1.5,
        drain=1.0,
        seed=peers,
        knobs={"input_delay": 1, "max_prediction": 6},
    )
    result = run_session(config, game, _bots(11))
    metrics = result.metrics()
    assert result.converged
    assert metrics["desyncs"] == 0
    assert 0 < metrics["rollback_depth_max"] <= 6
    assert metrics["input_delay_ms_p50"] == pytest.approx(1000 / 60, rel=0.05)


def test_the_registry_builds_players_and_spectators() -> None:
    game = Arena(2)
    rng = random.Random(1)
    player = make_peer("rollback", game, 1, 3, rng, input_delay=4)
    spectator = make_peer("rollback", game, 2, 3, rng, input_delay=4)
    assert isinstance(player, RollbackPeer)
    assert player.input_delay == 4
    assert isinstance(spectator, RollbackSpectator)
    assert isinstance(make_rollback_peer(game, peer=0, peers=2), RollbackPeer)


def test_garbage_is_counted_not_raised() -> None:
    game = Arena(2)
    a, _ = _players(game)
    for junk in (b"", b"\xb1", b"\xb1" + bytes(30), b"\xff" * 40, b"\xb3\x00\x00\x00\x00"):
        a.receive(1, junk, 0.0)
    a.receive(5, b"\xb1", 0.0)
    assert a.rejected == 6
    a.tick(0.0, game.neutral_input)
    assert a.displayed_frame == 1


@pytest.mark.parametrize(
    "knobs",
    [
        {"input_delay": -1},
        {"input_delay": 31},
        {"max_prediction": 61},
        {"frame_period": 0.0},
        {"time_sync": "faster"},
    ],
)
def test_bad_knobs_are_refused(knobs: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(knobs))):
        RollbackPeer(Arena(2), peer=0, peers=2, **knobs)
