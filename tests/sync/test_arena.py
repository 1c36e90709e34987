"""The arena game of ``lagless.sync.arena``: deterministic, copy-safe, and actually playing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs, arena_input


def _run(game: Arena, frames: int, seed: int) -> tuple[ArenaState, list[int]]:
    bots = [ScriptedInputs(p, seed) for p in range(game.players)]
    state = game.initial_state()
    sums = []
    for frame in range(frames):
        state = game.step(state, [bot.at_frame(frame) for bot in bots], frame)
        sums.append(game.checksum(state))
    return state, sums


@pytest.mark.parametrize("players", [2, 4, 8])
def test_same_inputs_same_checksums(players: int) -> None:
    game = Arena(players, entities=50, seed=3)
    _, first = _run(game, 300, seed=7)
    _, second = _run(Arena(players, entities=50, seed=3), 300, seed=7)
    assert first == second
    assert len(set(first)) > 250  # the state changes nearly every frame


def test_different_inputs_diverge() -> None:
    game = Arena(2)
    a, _ = _run(game, 120, seed=1)
    b, _ = _run(game, 120, seed=2)
    assert game.checksum(a) != game.checksum(b)
    assert game.divergence(a, b) > 0.1


def test_save_and_load_are_independent_copies() -> None:
    game = Arena(2, entities=10)
    state = game.initial_state()
    saved = game.save(state)
    before = game.checksum(saved)
    inputs = [arena_input(right=True, shoot=True), arena_input(down=True)]
    for frame in range(5):
        state = game.step(state, inputs, frame)
    assert game.checksum(saved) == before
    working = game.load(saved)
    game.step(working, inputs, 0)
    assert game.checksum(saved) == before
    again = game.load(saved)
    for frame in range(5):
        again = game.step(again, inputs, frame)
    assert game.checksum(again) == game.checksum(state)


def test_movement_speed_and_walls() -> None:
    game = Arena(2, frame_rate=60.0, player_speed=6.0)
    state = game.initial_state()
    start = state.pos.copy()
    state = game.step(state, [arena_input(right=True), arena_input(up=True)], 0)
    assert state.pos[0, 0] - start[0, 0] == 100  # 6 m/s at 60 Hz = 100 mm per frame
    assert state.pos[1, 1] - start[1, 1] == -100
    for frame in range(1, 2000):
        state = game.step(state, [arena_input(right=True), arena_input(up=True)], frame)
    assert state.pos[0, 0] == game.size_mm
    assert state.pos[1, 1] == 0


def test_a_bullet_hits_the_player_in_front() -> None:
    game = Arena(2)
    state = game.initial_state()
    # Put player 1 two metres to the right of player 0, who faces right.
    state.pos[1] = state.pos[0] + np.array([2000, 0])
    shoot = [arena_input(shoot=True), game.neutral_input]
    state = game.step(state, shoot, 0)
    for frame in range(1, 30):
        state = game.step(state, [game.neutral_input, game.neutral_input], frame)
    assert state.health[1] == 4
    assert state.health[0] == 5
    assert (state.bullet_ttl == 0).all()  # the bullet was spent on the hit


def test_five_hits_respawn() -> None:
    game = Arena(2)
    state = game.initial_state()
    spawn = state.pos[1].copy()
    frame = 0
    while state.deaths[1] == 0 and frame < 2000:
        state.pos[1] = state.pos[0] + np.array([1500, 0])
        state = game.step(state, [arena_input(shoot=True), game.neutral_input], frame)
        frame += 1
    assert state.deaths[1] == 1
    assert state.health[1] == 5
    assert (state.pos[1] == spawn).all()


def test_entities_stay_inside() -> None:
    game = Arena(2, entities=200, seed=5)
    state = game.initial_state()
    for frame in range(1500):
        state = game.step(state, [b"", b""], frame)
    assert state.entity_pos.min() >= 0
    assert state.entity_pos.max() <= game.size_mm


def test_divergence_is_metres_of_the_farthest_player() -> None:
    game = Arena(3)
    a = game.initial_state()
    b = game.save(a)
    assert game.divergence(a, b) == 0.0
    b.pos[2] += np.array([3000, 4000])
    assert game.divergence(a, b) == pytest.approx(5.0)


def test_scripted_inputs_do_not_depend_on_query_order() -> None:
    forward = ScriptedInputs(1, seed=9)
    backward = ScriptedInputs(1, seed=9)
    ahead = [forward.at_frame(f) for f in range(600)]
    behind = [backward.at_frame(f) for f in reversed(range(600))][::-1]
    assert ahead == behind
    changes = sum(1 for a, b in itertools.pairwise(ahead) if a != b)
    assert 15 <= changes <= 60  # about 4 changes a second for 10 s, some repeats
    assert [ScriptedInputs(2, seed=9).at_frame(f) for f in range(600)] != ahead


@pytest.mark.parametrize("players", [1, 9])
def test_player_count_is_checked(players: int) -> None:
    with pytest.raises(ValueError, match="players"):
        Arena(players)
