"""Lockstep (spec 000 §2.14): never diverges, stalls under loss, adapts turns, drops, aborts."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs, bot_script
from lagless.sync.harness import HarnessConfig, HarnessResult, InputScript, run_session
from lagless.sync.lockstep import (
    MAX_BATCH,
    Command,
    CommandBatch,
    LockstepConfig,
    LockstepPeer,
    decode_commands,
    encode_commands,
)

FRAME_RATE = 60.0


def _script(players: int, seed: int = 1) -> InputScript:
    return bot_script([ScriptedInputs(p, seed, frame_rate=FRAME_RATE) for p in range(players)])


def _run(
    peers: int,
    *,
    profile: str = "lan",
    topology: Literal["mesh", "star"] = "mesh",
    loss: float = 0.0,
    duration: float = 3.0,
    config: LockstepConfig | None = None,
    build: Any = None,
) -> tuple[HarnessResult, list[LockstepPeer[ArenaState]]]:
    game = Arena(peers)
    built: list[LockstepPeer[ArenaState]] = []

    def factory(index: int, rng: random.Random) -> Any:
        peer = LockstepPeer(
            game, index, peers, rng=rng, frame_period=1.0 / FRAME_RATE, config=config
        )
        built.append(peer)
        return peer if build is None else build(index, peer)

    config_h = HarnessConfig(
        algorithm="lockstep",
        peers=peers,
        profile=profile,
        topology=topology,
        loss=loss,
        duration=duration,
        drain=1.0,
        clock_offsets=(0.0, 12.5, -3.25, 1000.0)[:peers],
        seed=3,
    )
    return run_session(config_h, game, _script(peers), factory), built


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_decoder_never_raises(data: bytes) -> None:
    batch = decode_commands(data)
    if batch is not None:
        assert encode_commands(batch) == data


_commands = st.builds(
    Command,
    input=st.binary(max_size=64),
    frames_per_turn=st.integers(1, 255),
    frame_rate=st.integers(1, 65535),
    checksum=st.integers(0, 2**32 - 1),
)


@settings(max_examples=100, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 2**32 - 1),
    st.lists(_commands, max_size=MAX_BATCH),
    st.lists(st.tuples(st.integers(0, 255), st.integers(0, 2**32 - 1)), max_size=8),
)
def test_codec_round_trip(
    ack: int, first: int, commands: Sequence[Command], drops: Sequence[tuple[int, int]]
) -> None:
    batch = CommandBatch(ack, first, tuple(commands), tuple(drops))
    data = encode_commands(batch)
    assert decode_commands(data) == batch
    assert decode_commands(data[:-1]) is None
    assert decode_commands(data + b"\x00") is None


@pytest.mark.parametrize("peers", [2, 4])
def test_lan_runs_in_step_without_stalls(peers: int) -> None:
    result, built = _run(peers)
    metrics = result.metrics()
    assert metrics["inconsistent_frames"] == 0
    assert result.converged
    assert result.final_frame > 200
    assert metrics["stall_frames"] <= 2  # start-up only: the first commands' acks
    assert all(p.frames_per_turn == 3 for p in built)  # min_turn 50 ms at 60 Hz
    delays = [d for p in built for d in p.stats.input_delays]
    assert delays
    assert min(delays) >= 2 * 3 / FRAME_RATE - 1e-9


def test_loss_stalls_but_never_diverges() -> None:
    clean, _ = _run(3, duration=2.5)
    lossy, built = _run(3, loss=0.4, duration=2.5)
    assert lossy.metrics()["inconsistent_frames"] == 0
    assert lossy.converged
    assert lossy.metrics()["stall_frames"] > clean.metrics()["stall_frames"] + 20
    assert all(p.stats.desyncs == [] and not p.aborted for p in built)


def test_turn_length_follows_the_slowest_rtt() -> None:
    result, built = _run(3, profile="umts", duration=3.0)
    assert result.converged
    assert result.metrics()["inconsistent_frames"] == 0
    for peer in built:
        slowest = peer.clock.max_rtt()
        assert slowest is not None
        assert 0.3 < slowest < 0.5
        assert peer.frames_per_turn == pytest.approx(slowest * FRAME_RATE, abs=3)
    delays = [d for p in built for d in p.stats.input_delays[3:]]
    assert min(delays) >= 2 * 0.3


def test_eight_peers() -> None:
    result, _ = _run(8, duration=1.5)
    assert result.converged
    assert result.metrics()["inconsistent_frames"] == 0
    assert result.final_frame > 100


class _Corrupt(Arena):
    """An arena whose step goes wrong once, at frame 40 (non-determinism on one machine)."""

    def step(self, state: ArenaState, inputs: Sequence[bytes], frame: int) -> ArenaState:
        state = super().step(state, inputs, frame)
        if frame == 40:
            state.pos[0, 0] += 1
        return state


def test_desync_is_detected_and_aborts() -> None:
    peers = 3
    game = Arena(peers)
    built: list[LockstepPeer[ArenaState]] = []

    def factory(index: int, rng: random.Random) -> Any:
        own_game = _Corrupt(peers) if index == 2 else game
        peer = LockstepPeer(own_game, index, peers, rng=rng, frame_period=1.0 / FRAME_RATE)
        built.append(peer)
        return peer

    config = HarnessConfig(algorithm="lockstep", peers=peers, duration=1.5, drain=0.5, seed=4)
    run_session(config, game, _script(peers), factory)
    assert all(p.aborted for p in built)
    assert all(p.stats.desyncs for p in built)
    assert all(40 <= p.stats.desyncs[0] <= 60 for p in built)
    assert "desync with peer" in built[0].abort_reason
    assert max(p.displayed_frame for p in built) < 80


def test_report_only_keeps_running() -> None:
    peers = 2
    game = Arena(peers)
    built: list[LockstepPeer[ArenaState]] = []
    config = LockstepConfig(abort_on_desync=False)

    def factory(index: int, rng: random.Random) -> Any:
        own_game = _Corrupt(peers) if index == 1 else game
        peer = LockstepPeer(own_game, index, peers, rng=rng, config=config)
        built.append(peer)
        return peer

    run_session(
        HarnessConfig(algorithm="lockstep", duration=1.5, drain=0.5), game, _script(2), factory
    )
    assert all(not p.aborted and p.stats.desyncs for p in built)
    assert min(p.displayed_frame for p in built) > 100


class _Crashes:
    """Wraps a peer that stops ticking, sending and receiving ``after`` s after its first tick."""

    def __init__(self, inner: LockstepPeer[ArenaState], after: float) -> None:
        self.inner = inner
        self.after = after
        self.start: float | None = None
        self.dead = False
        self.peer, self.peers = inner.peer, inner.peers

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def tick(self, now: float, local_input: bytes) -> None:
        self.start = now if self.start is None else self.start
        self.dead = self.dead or now >= self.start + self.after
        if not self.dead:
            self.inner.tick(now, local_input)

    def receive(self, source: int, payload: bytes, now: float) -> None:
        if not self.dead:
            self.inner.receive(source, payload, now)

    def outgoing(self) -> list[Any]:
        return [] if self.dead else self.inner.outgoing()


class _Recorder:
    """Wraps a peer and keeps the checksum of every frame it displays."""

    def __init__(self, inner: LockstepPeer[ArenaState], game: Arena) -> None:
        self.inner, self.game = inner, game
        self.peer, self.peers = inner.peer, inner.peers
        self.shown: dict[int, int] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def tick(self, now: float, local_input: bytes) -> None:
        self.inner.tick(now, local_input)
        self.shown.setdefault(
            self.inner.displayed_frame, self.game.checksum(self.inner.displayed_state)
        )


def test_a_crashed_peer_stalls_the_others_then_is_dropped() -> None:
    peers = 3
    game = Arena(peers)
    config = LockstepConfig(drop_timeout=0.5)
    recorders: list[_Recorder] = []

    def build(index: int, peer: LockstepPeer[ArenaState]) -> Any:
        if index == 2:
            return _Crashes(peer, after=1.0)
        recorders.append(_Recorder(peer, game))
        return recorders[-1]

    result, built = _run(peers, duration=3.0, config=config, build=build)
    survivors = built[:2]
    for peer in survivors:
        assert set(peer.drops) == {2}
        assert peer.stats.stall_frames >= 0.5 * FRAME_RATE  # waited the timeout out
        assert peer.displayed_frame > 2.0 * FRAME_RATE  # then went on
        assert not peer.aborted
        assert not peer.dropped
    assert survivors[0].drops == survivors[1].drops
    common = set(recorders[0].shown) & set(recorders[1].shown)
    assert len(common) > 150
    assert all(recorders[0].shown[f] == recorders[1].shown[f] for f in common)
    assert result.records[0].stats.stall_frames == survivors[0].stats.stall_frames


def test_garbage_is_counted_not_raised() -> None:
    peer = LockstepPeer(Arena(2), 0, 2)
    for junk in (b"", b"\x10", b"\xc0\x01", b"\x10" + bytes(20), bytes(range(40))):
        peer.receive(1, junk, 0.0)
    peer.receive(7, b"\x10", 0.0)
    assert peer.garbage == 6
    peer.tick(0.0, b"\x00")
    assert peer.displayed_frame == 1


def test_the_slowest_machine_sets_the_frame_rate() -> None:
    peers = 3
    game = Arena(peers)
    built: list[LockstepPeer[ArenaState]] = []

    def factory(index: int, rng: random.Random) -> Any:
        rate = 30 if index == 1 else 60  # peer 1 runs on a slow machine
        config = LockstepConfig(max_frame_rate=rate)
        peer = LockstepPeer(game, index, peers, rng=rng, config=config)
        built.append(peer)
        return peer

    config = HarnessConfig(algorithm="lockstep", peers=peers, duration=2.0, drain=0.5)
    result = run_session(config, game, _script(peers), factory)
    assert result.converged
    assert all(p.frame_period == pytest.approx(1 / 30) for p in built)
    ticks = [len(r.times) for r in result.records]
    assert max(ticks) < 2.5 * 30 + 30  # the fast machines slowed down to 30 Hz after turn 2
    assert all(p.frames_per_turn == 2 for p in built)  # 50 ms turns at 30 Hz


def test_star_through_a_relay() -> None:
    result, built = _run(4, profile="dsl", topology="star", loss=0.05, duration=2.0)
    assert result.converged
    assert result.metrics()["inconsistent_frames"] == 0
    slowest = built[0].clock.max_rtt()
    assert slowest is not None
    assert slowest > 0.05  # two DSL links each way: ~60 ms
