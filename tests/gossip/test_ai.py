"""Algorithm 2: random goal, shortest path with small strays, random pause."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.gossip.ai import AvatarAI, AvatarAIConfig
from lagless.gossip.worldmap import WorldMap


@pytest.fixture(scope="module")
def world() -> WorldMap:
    return WorldMap.random(size=300.0, obstacles=12, rng=np.random.default_rng(5))


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    ab = b - a
    t = 0.0 if not ab.any() else float(np.clip(np.dot(p - a, ab) / np.dot(ab, ab), 0, 1))
    return float(np.hypot(*(p - (a + t * ab))))


def test_reaches_goal_and_stays_near_path(world: WorldMap) -> None:
    config = AvatarAIConfig(speed=10.0, pause_min=0.5, pause_max=0.5, deviation=1.0)
    ai = AvatarAI(world, config=config, rng=random.Random(1), start=0)
    v, e = world.graph.vertices, world.graph.edges
    goals = 0
    was_paused = ai.paused
    for _ in range(4000):
        ai.step(0.05)
        p = np.array(ai.position)
        # never further than the stray radius (+ a little) from some path of the graph
        assert min(_segment_distance(p, v[a], v[b]) for a, b in e) <= 1.0 + 1e-6
        if ai.paused and not was_paused:
            goals += 1
            assert np.allclose(p, v[ai.goal])
        was_paused = ai.paused
    assert goals >= 3


def test_pause_within_bounds(world: WorldMap) -> None:
    config = AvatarAIConfig(speed=50.0, pause_min=1.0, pause_max=2.0, deviation=0.0)
    ai = AvatarAI(world, config=config, rng=random.Random(2), start=3)
    ai.step(3.0)  # the first pause is U(0, pause_max)
    pauses, run, dt = [], 0.0, 0.01
    for _ in range(6000):
        before = ai.paused
        ai.step(dt)
        if ai.paused:
            run += dt
        elif before:
            pauses.append(run)
            run = 0.0
    assert len(pauses) >= 5
    assert all(1.0 - 2 * dt <= p <= 2.0 + 2 * dt for p in pauses[1:])


def test_facing_follows_motion(world: WorldMap) -> None:
    ai = AvatarAI(world, config=AvatarAIConfig(pause_max=0.0, pause_min=0.0), rng=random.Random(4))
    moves = 0
    for _ in range(200):
        x0, y0 = ai.position
        ai.step(0.01)
        x1, y1 = ai.position
        d = math.hypot(x1 - x0, y1 - y0)
        fx, fy = ai.facing
        assert math.hypot(fx, fy) == pytest.approx(1.0)
        if d > 0.04:  # moved in a straight line this step
            moves += 1
            assert (x1 - x0) / d * fx + (y1 - y0) / d * fy > 0.99
    assert moves > 100


def test_config_validation() -> None:
    with pytest.raises(ConfigError, match="speed"):
        AvatarAIConfig(speed=0.0)
    with pytest.raises(ConfigError, match="pause"):
        AvatarAIConfig(pause_min=3.0, pause_max=1.0)
