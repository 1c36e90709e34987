"""The simulator harness of ``lagless.sync.harness``: it runs peers over netsim and measures them.

Two tiny peers written here exercise it: ``_WaitPeer`` waits for every input of a frame (never
inconsistent, stalls on slow links) and ``_BlindPeer`` never waits and steps missing inputs as
neutral (never stalls, inconsistent whenever an input is late).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from lagless.errors import ConfigError
from lagless.sync.arena import Arena, ScriptedInputs, bot_script
from lagless.sync.contract import Outgoing, SyncStats
from lagless.sync.harness import HarnessConfig, InputScript, run_session


class _WaitPeer:
    """Sends its input for the next frame reliably; steps a frame once all inputs are in."""

    def __init__(self, game: Arena, peer: int, peers: int, *, wait: bool = True) -> None:
        self._game = game
        self._peer = peer
        self._peers = peers
        self._wait = wait
        self._state = game.initial_state()
        self._frame = 0
        self._inputs: dict[int, dict[int, bytes]] = {}
        self._sent = 0
        self._out: list[Outgoing] = []
        self._stats = SyncStats()

    peer = property(lambda self: self._peer)
    peers = property(lambda self: self._peers)
    frame_period = property(lambda self: 1 / 60)
    displayed_frame = property(lambda self: self._frame)
    displayed_state = property(lambda self: self._state)
    stats = property(lambda self: self._stats)

    def tick(self, now: float, local_input: bytes) -> None:
        frame = self._sent
        self._sent += 1
        self._inputs.setdefault(frame, {})[self._peer] = local_input
        for other in range(self._peers):
            if other != self._peer:
                payload = frame.to_bytes(4, "little") + local_input
                self._out.append(Outgoing(other, payload, reliable=True))
                self._stats.bytes_sent += len(payload)
        have = self._inputs.get(self._frame, {})
        if self._wait and len(have) < self._peers:
            self._stats.stall_frames += 1
            return
        inputs = [have.get(p, self._game.neutral_input) for p in range(self._peers)]
        self._state = self._game.step(self._state, inputs, self._frame)
        self._inputs.pop(self._frame, None)
        self._frame += 1
        self._stats.frames_simulated += 1

    def receive(self, source: int, payload: bytes, now: float) -> None:
        self._stats.bytes_received += len(payload)
        frame = int.from_bytes(payload[:4], "little")
        if frame >= self._frame:
            self._inputs.setdefault(frame, {})[source] = payload[4:]

    def outgoing(self) -> list[Outgoing]:
        out, self._out = self._out, []
        return out


def _script(seed: int) -> InputScript:
    return bot_script([ScriptedInputs(p, seed) for p in range(8)])


def _run(config: HarnessConfig, *, wait: bool) -> Any:
    game = Arena(config.peers)

    def factory(peer: int, rng: random.Random) -> _WaitPeer:
        return _WaitPeer(game, peer, config.peers, wait=wait)

    return run_session(config, game, _script(config.seed), factory)


@pytest.mark.parametrize("topology", ["mesh", "star"])
def test_waiting_peers_stay_consistent_and_stall(topology: str) -> None:
    config = HarnessConfig(
        peers=3, topology=topology, profile="intercontinental", duration=2.0, drain=1.0
    )
    result = _run(config, wait=True)
    metrics = result.metrics()
    assert result.compared_frames > 100
    assert result.inconsistent_frames == 0
    assert result.converged
    # a 75 ms one-way link (150 ms through the relay) holds every frame back by several ticks
    assert metrics["stall_frames"] > (3 if topology == "mesh" else 8)
    assert metrics["wire_bytes_per_s"] > metrics["payload_bytes_per_s"] > 0


def test_blind_peers_are_inconsistent_on_a_slow_link() -> None:
    config = HarnessConfig(peers=2, profile="umts", duration=2.0, drain=0.5)
    result = _run(config, wait=False)
    assert result.inconsistent_frames > 50
    assert result.max_divergence > 0.05
    assert result.longest_inconsistent_run > 5
    assert not result.converged
    assert result.metrics()["stall_frames"] == 0


def test_loss_knob_and_seed_change_the_run() -> None:
    base = HarnessConfig(peers=2, profile="lan", duration=1.0, drain=0.5)
    clean = _run(base, wait=True)
    lossy = _run(
        HarnessConfig(peers=2, profile="lan", loss=0.3, duration=1.0, drain=0.5), wait=True
    )
    again = _run(base, wait=True)
    assert [r.checksums for r in clean.records] == [r.checksums for r in again.records]
    assert lossy.metrics()["stall_frames"] > clean.metrics()["stall_frames"]
    assert lossy.converged


def test_clock_offsets_reach_the_peers() -> None:
    seen: list[float] = []
    game = Arena(2)

    class _Clocked(_WaitPeer):
        def tick(self, now: float, local_input: bytes) -> None:
            if self.peer == 1:
                seen.append(now)
            super().tick(now, local_input)

    config = HarnessConfig(peers=2, duration=0.2, drain=0.0, clock_offsets=(0.0, 100.0))
    result = run_session(config, game, _script(0), lambda p, _rng: _Clocked(game, p, 2, wait=True))
    assert all(100.0 <= t < 100.3 for t in seen)
    assert [t + 100.0 for t in result.records[1].times] == seen


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match="peers"):
        HarnessConfig(peers=9)
    with pytest.raises(ConfigError, match="loss"):
        HarnessConfig(loss=1.0)
    with pytest.raises(ConfigError, match="profile"):
        HarnessConfig(profile="moon")
    with pytest.raises(ConfigError, match="topology"):
        HarnessConfig(topology="ring")  # type: ignore[arg-type]
