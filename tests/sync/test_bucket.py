"""Bucket sync (spec 000 §2.3): never stalls, diverges under loss, offset clocks agree."""

from __future__ import annotations

import random
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs, bot_script
from lagless.sync.bucket import Adu, BucketConfig, BucketPeer, decode_adu, encode_adu
from lagless.sync.harness import HarnessConfig, HarnessResult, run_keeping_peers

PERIOD = 0.04  # MiMaze: 25 buckets per second
OFFSETS = (0.0, 37.5, -1234.0, 0.013)


def _run(
    peers: int,
    *,
    profile: str = "lan",
    topology: Literal["mesh", "star"] = "mesh",
    loss: float = 0.0,
    duration: float = 3.0,
    config: BucketConfig | None = None,
    seed: int = 5,
) -> tuple[HarnessResult, list[BucketPeer[ArenaState]]]:
    game = Arena(peers, frame_rate=1.0 / PERIOD)
    bots = [ScriptedInputs(p, seed, frame_rate=1.0 / PERIOD) for p in range(peers)]

    def make(index: int, rng: random.Random) -> BucketPeer[ArenaState]:
        return BucketPeer(game, index, peers, rng=rng, frame_period=PERIOD, config=config)

    harness = HarnessConfig(
        algorithm="bucket",
        peers=peers,
        profile=profile,
        topology=topology,
        loss=loss,
        duration=duration,
        drain=1.0,
        frame_rate=1.0 / PERIOD,
        clock_offsets=OFFSETS[:peers],
        seed=seed,
    )
    return run_keeping_peers(harness, game, bot_script(bots), make)


def _processed_agreement(built: list[BucketPeer[ArenaState]]) -> tuple[int, int]:
    """(buckets every peer processed, of those the ones whose checksums differ)."""
    histories = [dict(p.processed_checksums) for p in built]
    common = set.intersection(*(set(h) for h in histories))
    differ = sum(len({h[b] for h in histories}) > 1 for b in common)
    return len(common), differ


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=100))
def test_decoder_never_raises(data: bytes) -> None:
    adu = decode_adu(data)
    if adu is not None:
        assert encode_adu(adu) == data


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.binary(max_size=64))
def test_codec_round_trip(bucket: int, data: bytes) -> None:
    encoded = encode_adu(Adu(bucket, data))
    assert decode_adu(encoded) == Adu(bucket, data)
    assert decode_adu(encoded[:-1]) is None
    assert decode_adu(encoded + b"\x00") is None


@pytest.mark.parametrize("peers", [2, 4])
def test_offset_clocks_agree_on_buckets(peers: int) -> None:
    result, built = _run(peers)
    common, differ = _processed_agreement(built)
    assert common >= 90  # 4 s of 40 ms buckets, less the start-up and the delay
    assert differ == 0
    for index, peer in enumerate(built):
        assert peer.clock.synchronised
        # the estimated offset to peer 0 cancels this peer's clock offset (LAN: within 1 ms)
        assert peer.clock.offset(0.0) == pytest.approx(-OFFSETS[index], abs=1e-3)
        assert peer.stats.late_discarded == 0
    assert result.metrics()["stall_frames"] == 0


def test_loss_diverges_but_never_stalls() -> None:
    result, built = _run(3, loss=0.1)
    common, differ = _processed_agreement(built)
    assert differ > common // 4  # a lost ADU is never corrected: the peers stay apart
    assert result.metrics()["stall_frames"] == 0
    assert result.metrics()["inconsistent_frames"] > 0
    for peer in built:
        assert peer.substituted > 0
        assert peer.processed_frame >= 3.5 / PERIOD  # kept processing through the loss


def test_local_player_is_shown_without_delay() -> None:
    result, built = _run(2, duration=2.0)
    for peer in built:
        assert peer.stats.input_delays
        assert set(peer.stats.input_delays) == {0.0}
        # the local view runs the general delay (100 ms = 2.5 buckets) ahead of the shared state
        assert 2 <= peer.displayed_frame - peer.processed_frame <= 4
    assert result.metrics()["input_delay_ms_p99"] == 0.0


def test_general_delay_below_the_latency_drops_every_adu() -> None:
    fixed, fixed_peers = _run(3, profile="umts", duration=2.0)
    adaptive, adaptive_peers = _run(
        3, profile="umts", duration=2.0, config=BucketConfig(adaptive_delay=True)
    )
    fixed_late = sum(p.stats.late_discarded for p in fixed_peers)
    adaptive_late = sum(p.stats.late_discarded for p in adaptive_peers)
    assert fixed_late > 100  # 170 ms one way > 100 ms delay: nearly every remote ADU is late
    assert adaptive_late < fixed_late / 10
    assert fixed.metrics()["stall_frames"] == adaptive.metrics()["stall_frames"] == 0
    for peer in adaptive_peers:
        assert 0.2 < peer.delay < 0.4  # 40 ms + ~170 ms one way + jitter margin


def test_eight_peers() -> None:
    result, built = _run(8, duration=1.5)
    common, differ = _processed_agreement(built)
    assert common > 30
    assert differ == 0
    assert result.metrics()["stall_frames"] == 0


def test_garbage_is_counted_not_raised() -> None:
    peer = BucketPeer(Arena(2), 0, 2)
    for junk in (b"", b"\x20", b"\x20\x00\x00\x00\x00\x05ab", b"\xc1" + bytes(24), b"\xff"):
        peer.receive(1, junk, 0.0)
    peer.receive(-1, encode_adu(Adu(0, b"\x01")), 0.0)
    peer.receive(1, encode_adu(Adu(10**6, b"\x01")), 0.0)  # far beyond MAX_AHEAD
    assert peer.garbage == 7
    peer.tick(0.0, b"\x01")
    assert peer.displayed_frame == 1


def test_star_through_a_relay() -> None:
    result, built = _run(4, profile="dsl", topology="star", duration=2.0)
    common, differ = _processed_agreement(built)
    assert common > 40
    assert differ == 0  # 30 ms one way through the relay: every ADU inside the 100 ms delay
    assert result.metrics()["stall_frames"] == 0
