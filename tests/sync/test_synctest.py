"""Synctest (``lagless.sync.synctest``) passes the arena and catches non-deterministic games."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs
from lagless.sync.synctest import SyncTest, run_synctest


def _bots(game: Arena, seed: int = 4) -> list[ScriptedInputs]:
    return [ScriptedInputs(p, seed) for p in range(game.players)]


class HiddenCounterArena(Arena):
    """Reads a counter that lives outside the state: re-simulation sees another value."""

    def __init__(self, players: int) -> None:
        super().__init__(players)
        self.calls = 0

    def step(self, state: ArenaState, inputs: Sequence[bytes], frame: int) -> ArenaState:
        self.calls += 1
        state = super().step(state, inputs, frame)
        if frame >= 40:
            state.pos[0, 0] += self.calls % 3
        return state


class UnseededNoiseArena(Arena):
    """Draws from a generator seeded differently on every call (like an unseeded global)."""

    def __init__(self, players: int) -> None:
        super().__init__(players)
        self._entropy = np.random.default_rng()

    def step(self, state: ArenaState, inputs: Sequence[bytes], frame: int) -> ArenaState:
        state = super().step(state, inputs, frame)
        state.pos[1] += self._entropy.integers(0, 2, size=2)
        return state


class ShallowSaveArena(Arena):
    """``save`` hands back the working state itself, so later steps change the saved frame."""

    def save(self, state: ArenaState) -> ArenaState:
        return state

    def load(self, saved: ArenaState) -> ArenaState:
        return saved


@pytest.mark.parametrize(("players", "distance"), [(2, 1), (4, 2), (8, 8)])
def test_the_arena_passes(players: int, distance: int) -> None:
    game = Arena(players, entities=100, seed=1)
    bots = _bots(game)
    report = run_synctest(game, lambda f: [b.at_frame(f) for b in bots], 240, distance)
    assert report.ok, report.mismatch
    assert report.frames == 240
    assert report.rollbacks == 240 - distance + 1
    assert report.resimulated_frames == report.rollbacks * distance


def test_a_hidden_counter_is_caught_at_the_frame_it_starts_to_matter() -> None:
    game = HiddenCounterArena(2)
    bots = _bots(game)
    report = run_synctest(game, lambda f: [b.at_frame(f) for b in bots], 300, 2)
    assert not report.ok
    mismatch = report.mismatch
    assert mismatch is not None
    assert mismatch.cause == "step"
    assert mismatch.frame == 41  # the first state stepped from frame 40
    assert mismatch.first_checksum != mismatch.resimulated_checksum
    assert 0.0 < mismatch.divergence < 0.01  # a couple of millimetres, in metres
    assert report.frames < 300  # it stopped at the mismatch


def test_unseeded_noise_is_caught_within_a_few_frames() -> None:
    game = UnseededNoiseArena(2)
    bots = _bots(game)
    report = run_synctest(game, lambda f: [b.at_frame(f) for b in bots], 300, 1)
    assert report.mismatch is not None
    assert report.mismatch.frame < 60  # 1 in 4 draws agree by chance per frame


def test_a_save_that_shares_memory_is_caught() -> None:
    game = ShallowSaveArena(2)
    bots = _bots(game)
    report = run_synctest(game, lambda f: [b.at_frame(f) for b in bots], 100, 3)
    assert report.mismatch is not None
    assert report.mismatch.frame <= 4


def test_advance_keeps_returning_the_first_mismatch() -> None:
    game = HiddenCounterArena(2)
    session = SyncTest(game, check_distance=1)
    first = None
    for frame in range(80):
        found = session.advance([game.neutral_input, game.neutral_input])
        if found is not None and first is None:
            first = found
            assert frame == 40
    assert first is not None
    assert session.mismatch is first


def test_check_distance_must_be_positive() -> None:
    with pytest.raises(ValueError, match="check_distance"):
        SyncTest(Arena(2), check_distance=0)
