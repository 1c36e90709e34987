"""The avatar AI of the Silac test world: Algorithm 2 on a waypoint graph (spec 002 §3.3).

Implements spec 002 §3.3 Algorithm 2: pick a random waypoint, follow the shortest path to it,
stay there for a random time, repeat; "avatars may stray slightly from the path". Units: metres,
seconds, metres per second. Decisions (spec 002 §7.10: speed and pauses are not given), pinned
in ``tests/gossip/test_ai.py``:

* Speed 5 m/s (a brisk run; Quake's 320 units/s is about 8 m/s at 40 units/m), pause uniform in
  [0.5, 5] s (``test_pause_within_bounds``).
* Straying: each intermediate waypoint is aimed at with a uniform offset inside a disc of radius
  ``deviation`` (1 m), clipped to the map; the goal itself is reached exactly
  (``test_reaches_goal_and_stays_near_path``).
* Facing is the unit direction of the current motion; while paused it keeps the last direction
  (``test_facing_follows_motion``).
* The goal is a uniformly random waypoint other than the current one.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

from lagless.errors import ConfigError
from lagless.gossip.worldmap import WorldMap

__all__ = ["AvatarAI", "AvatarAIConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AvatarAIConfig:
    """Parameters of Algorithm 2 (spec 002 §3.3; values are decisions, §7.10).

    Raises:
        ConfigError: naming the first field out of range.
    """

    speed: float = 5.0
    """Walking speed, metres per second."""
    pause_min: float = 0.5
    """Shortest stay at a goal waypoint, seconds."""
    pause_max: float = 5.0
    """Longest stay at a goal waypoint, seconds."""
    deviation: float = 1.0
    """Largest stray from an intermediate waypoint, metres."""

    def __post_init__(self) -> None:
        if not (math.isfinite(self.speed) and self.speed > 0):
            raise ConfigError(f"speed must be a finite number of m/s > 0, got {self.speed!r}")
        if not 0 <= self.pause_min <= self.pause_max < math.inf:
            raise ConfigError(
                f"pause_min and pause_max must satisfy 0 <= min <= max, got "
                f"{self.pause_min!r}, {self.pause_max!r}"
            )
        if not (math.isfinite(self.deviation) and self.deviation >= 0):
            raise ConfigError(
                f"deviation must be a finite number of metres >= 0, got {self.deviation!r}"
            )


class AvatarAI:
    """One AI-controlled avatar walking the waypoint graph (Algorithm 2).

    Args:
        world: The map.
        config: Speed, pauses and straying.
        rng: The injected generator for goals, pauses and strays.
        start: Starting waypoint index; ``None`` draws one.
    """

    def __init__(
        self,
        world: WorldMap,
        *,
        config: AvatarAIConfig,
        rng: random.Random,
        start: int | None = None,
    ) -> None:
        self._world = world
        self._config = config
        self._rng = rng
        n = len(world.graph.vertices)
        self._vertex = rng.randrange(n) if start is None else start
        x, y = world.graph.vertices[self._vertex]
        self._x, self._y = float(x), float(y)
        self._facing = (1.0, 0.0)
        self._targets: list[tuple[float, float]] = []
        self._goal = self._vertex
        self._pause = rng.uniform(0.0, config.pause_max)

    @property
    def position(self) -> tuple[float, float]:
        """Current position (x, y), metres."""
        return (self._x, self._y)

    @property
    def facing(self) -> tuple[float, float]:
        """Current unit facing direction (x, y)."""
        return self._facing

    @property
    def goal(self) -> int:
        """The waypoint index being walked to (or stayed at)."""
        return self._goal

    @property
    def paused(self) -> bool:
        """True while staying at a goal."""
        return not self._targets

    def _plan(self) -> None:
        n = len(self._world.graph.vertices)
        goal = self._rng.randrange(n - 1) if n > 1 else 0
        if goal >= self._vertex and n > 1:
            goal += 1
        path = self._world.shortest_path(self._vertex, goal)
        vertices = self._world.graph.vertices
        size, dev = self._world.size, self._config.deviation
        targets: list[tuple[float, float]] = []
        for index in path[1:-1]:
            r = dev * math.sqrt(self._rng.random())
            a = self._rng.uniform(0.0, 2.0 * math.pi)
            x, y = vertices[index]
            targets.append(
                (
                    min(max(float(x) + r * math.cos(a), 0.0), size),
                    min(max(float(y) + r * math.sin(a), 0.0), size),
                )
            )
        gx, gy = vertices[path[-1]]
        targets.append((float(gx), float(gy)))
        self._goal = path[-1]
        self._targets = targets

    def step(self, dt: float) -> None:
        """Advance ``dt`` seconds: walk toward the next target, or pause, or plan a new goal."""
        remaining = dt
        while remaining > 0.0:
            if not self._targets:
                if self._pause > remaining:
                    self._pause -= remaining
                    return
                remaining -= self._pause
                self._pause = 0.0
                self._plan()
                continue
            tx, ty = self._targets[0]
            dx, dy = tx - self._x, ty - self._y
            dist = math.hypot(dx, dy)
            reach = self._config.speed * remaining
            if dist > 0.0:
                self._facing = (dx / dist, dy / dist)
            if reach < dist:
                self._x += dx / dist * reach
                self._y += dy / dist * reach
                return
            self._x, self._y = tx, ty
            remaining -= dist / self._config.speed
            self._targets.pop(0)
            if not self._targets:
                self._vertex = self._goal
                self._pause = self._rng.uniform(self._config.pause_min, self._config.pause_max)
