"""The arena's bots stay in the arena and keep moving; the server's stopwatch charges ticks."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from lagless.demo.arena import (
    ARENA_HEIGHT,
    ARENA_WIDTH,
    DISPLAY_MODELS,
    MAX_BOTS,
    WALLS,
    ArenaBot,
    BotServer,
    make_server,
    spawn,
    view_name,
)
from lagless.errors import ConfigError
from lagless.physics import MAX_CARS, CarWorld, PhysicsParams


def test_bots_roam_the_whole_arena_without_getting_stuck() -> None:
    world = CarWorld(PhysicsParams().car, WALLS)
    rng = random.Random(4)
    bots = {k: ArenaBot(random.Random(rng.getrandbits(64)), spawn(k)) for k in range(8)}
    for k in bots:
        world.add_car(k, spawn(k))
    dt = 1.0 / 60.0
    visited: set[tuple[int, int]] = set()
    slow = 0
    for n in range(60 * 60):
        now = n * dt
        if n % 3 == 0:
            for k, bot in bots.items():
                world.set_keys(k, bot.keys(world.state(k), now))
        world.step(dt)
        for state in world.states().values():
            assert 0.0 < state.x < ARENA_WIDTH
            assert 0.0 < state.y < ARENA_HEIGHT
            visited.add((int(state.x // 40), int(state.y // 40)))
            slow += state.speed < 1.0
    assert len(visited) >= 20  # of the 6 x 4 cells of 40 m
    assert slow / (8 * 60 * 60) < 0.1


def test_stopwatch_charges_the_ticks_a_call_ran() -> None:
    server = make_server(("server", 1), bots=2, rng=random.Random(1), start=0.0)
    counter, cpu = itertools.count(), itertools.count()
    watched = BotServer(
        server.server,
        bots=0,
        rng=random.Random(2),
        clock=lambda: 0.001 * next(counter),
        cpu_clock=lambda: 0.0005 * next(cpu),
    )
    assert watched.tick_stats().ticks == 0
    watched.handle_timer(0.05)  # ticks at 1/60, 2/60, 3/60 s: 1 ms shared by three
    stats = watched.tick_stats()
    assert stats.ticks == 3
    assert stats.avg_ms == pytest.approx(1.0 / 3.0)
    assert watched.tick_stats(cpu=True).avg_ms == pytest.approx(0.5 / 3.0)
    watched.datagrams_to_send(0.05)  # no tick: carried to the next one
    watched.handle_timer(0.05 + 1.0 / 60.0)
    stats = watched.tick_stats()
    assert stats.ticks == 4
    assert stats.max_ms == pytest.approx(2.0)
    assert stats.p99_ms == pytest.approx(2.0)


def test_bots_take_ids_from_the_top_and_drive() -> None:
    server = make_server(("server", 1), bots=5, rng=random.Random(1), start=0.0)
    assert server.server.world.car_ids == list(range(MAX_CARS - 5, MAX_CARS))
    for n in range(1, 121):
        server.handle_timer(n / 60.0)
    assert all(server.server.world.state(k).speed > 3.0 for k in server.bots)


def test_bad_bot_count_and_model_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="bots must be in"):
        make_server(("s", 1), bots=MAX_BOTS + 1, rng=random.Random(1), start=0.0)
    with pytest.raises(ConfigError, match="unknown display model 'x'; valid: dr"):
        view_name("x")
    assert view_name(next(iter(DISPLAY_MODELS))) == "main"
    assert view_name("snap") == "snap"
    assert math.isfinite(spawn(63).x)
