"""Local lag (spec 000 §2.1): one moment on every peer when latency < delay; conflicts reported."""

from __future__ import annotations

import random
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs, bot_script
from lagless.sync.harness import HarnessConfig, HarnessResult, PeerRecord, run_keeping_peers
from lagless.sync.local_lag import (
    MAX_REDUNDANCY,
    InputRun,
    LocalLagConfig,
    LocalLagPeer,
    decode_inputs,
    encode_inputs,
)

FRAME_RATE = 60.0
PERIOD = 1.0 / FRAME_RATE
OFFSETS = (0.0, -7.25, 300.0, 0.5)


def _run(
    peers: int,
    *,
    profile: str = "dsl",
    loss: float = 0.0,
    duration: float = 2.5,
    config: LocalLagConfig | None = None,
) -> tuple[HarnessResult, list[LocalLagPeer[ArenaState]]]:
    game = Arena(peers)
    bots = [ScriptedInputs(p, 9, frame_rate=FRAME_RATE) for p in range(peers)]

    def make(index: int, rng: random.Random) -> LocalLagPeer[ArenaState]:
        return LocalLagPeer(game, index, peers, rng=rng, frame_period=PERIOD, config=config)

    harness = HarnessConfig(
        algorithm="local-lag",
        peers=peers,
        profile=profile,
        loss=loss,
        duration=duration,
        drain=1.0,
        clock_offsets=OFFSETS[:peers],
        seed=6,
    )
    return run_keeping_peers(harness, game, bot_script(bots), make)


def _first_shown(record: PeerRecord) -> dict[int, float]:
    """Frame -> true time at which this peer first displayed it."""
    shown: dict[int, float] = {}
    for time, frame in zip(record.times, record.frames, strict=True):
        shown.setdefault(frame, time)
    return shown


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_decoder_never_raises(data: bytes) -> None:
    run = decode_inputs(data)
    if run is not None:
        assert encode_inputs(run) == data


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.binary(max_size=64), max_size=MAX_REDUNDANCY))
def test_codec_round_trip(first: int, inputs: Sequence[bytes]) -> None:
    run = InputRun(first, tuple(inputs))
    data = encode_inputs(run)
    assert decode_inputs(data) == run
    assert decode_inputs(data[:-1]) is None
    assert decode_inputs(data + b"\x00") is None


@pytest.mark.parametrize("peers", [2, 4])
def test_latency_below_the_delay_shows_actions_at_one_moment(peers: int) -> None:
    result, built = _run(peers)
    metrics = result.metrics()
    assert metrics["inconsistent_frames"] == 0
    assert result.converged
    assert result.compared_frames > 150
    for peer in built:
        assert not peer.conflict
        assert peer.min_delay is not None
        assert 0.014 < peer.min_delay < 0.02  # DSL: 15 ms one way, 4 ms jitter
        assert peer.min_delay <= peer.delay <= peer.config.max_delay
        assert peer.stats.late_discarded == 0
        need = peer.min_delay + max(peer.clock.rtt_deviation(i) for i in range(peers))
        assert peer.delay >= (need + peer.config.max_delay) / 2 - 0.01  # headroom 0.5
        delays = sorted(peer.stats.input_delays)
        assert delays[0] >= peer.delay - 1e-9
        assert delays[len(delays) // 2] <= peer.delay + 2 * PERIOD + 1e-9
        assert delays[-1] <= peer.config.max_delay + 3 * PERIOD + 1e-9  # start-up, draining
    # every peer shows each frame at the same true moment, whatever its clock reads
    shown = [_first_shown(r) for r in result.records]
    common = set.intersection(*(set(s) for s in shown)) - {0}
    spread = max(max(s[f] for s in shown) - min(s[f] for s in shown) for f in common)
    assert spread <= PERIOD + 0.005  # tick phases and the clock sync's error


def test_conflict_is_reported_and_leaves_inconsistencies() -> None:
    result, built = _run(3, profile="umts", duration=2.0)
    assert result.metrics()["inconsistent_frames"] > 50
    for peer in built:
        assert peer.conflict
        assert peer.min_delay is not None
        assert peer.min_delay > peer.config.max_delay
        assert peer.delay == peer.config.max_delay  # default policy keeps interactivity
        assert any(choice.conflict for choice in peer.choices)
        assert peer.stats.late_discarded > 0


def test_min_delay_policy_keeps_consistency() -> None:
    config = LocalLagConfig(conflict_policy="min_delay")
    result, built = _run(3, profile="umts", duration=2.0, config=config)
    for peer in built:
        assert peer.conflict
        assert peer.delay >= 0.17
    late = sum(p.stats.late_discarded for p in built)
    assert late < 10  # only before the first RTT samples (the delay starts at max_delay)
    assert result.metrics()["stall_frames"] == 0


def test_rollback_repairs_what_local_lag_leaves() -> None:
    result, built = _run(3, profile="umts", duration=2.0, config=LocalLagConfig(rollback=True))
    assert result.converged
    for peer in built:
        assert peer.stats.late_discarded == 0
        assert peer.stats.rollback_depths
        assert max(peer.stats.rollback_depths) <= peer.config.max_rollback
        assert peer.stats.frames_resimulated >= len(peer.stats.rollback_depths)


def test_eight_peers() -> None:
    result, _ = _run(8, profile="lan", duration=1.0)
    assert result.metrics()["inconsistent_frames"] == 0
    assert result.converged


def test_garbage_is_counted_not_raised() -> None:
    peer = LocalLagPeer(Arena(2), 0, 2)
    for junk in (b"", b"\x30", b"\x30\x00\x00\x00\x00\x01\x05a", b"\xc0", b"\x77"):
        peer.receive(1, junk, 0.0)
    peer.receive(2, encode_inputs(InputRun(0, (b"\x01",))), 0.0)
    peer.receive(1, encode_inputs(InputRun(10**6, (b"\x01",))), 0.0)  # far beyond MAX_AHEAD
    assert peer.garbage == 7
    peer.tick(0.0, b"\x01")
    peer.tick(PERIOD, b"\x01")
    assert peer.displayed_frame == 1
