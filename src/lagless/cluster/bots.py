"""The cluster's bot players: drivers that roam the whole world, so they cross cell borders.

A bot sees only what a client sees (its car's last snapshot) and answers with keys. It drives to
waypoints drawn anywhere in the world (not only its own cell), at a cruising speed drawn per leg,
so about every other leg crosses a border.

Decisions:
    * Waypoints keep ``MARGIN`` metres from the outer walls and lie at least ``MIN_LEG`` away.
    * A leg not finished within ``LEG_TIMEOUT`` is abandoned for a new waypoint; a car that has
      made less than 1 m/s of headway for ``STUCK_TIME`` reverses, steering away, for
      ``REVERSE_TIME``.
"""

from __future__ import annotations

import math
import random
from typing import Final

from lagless.cluster.grid import CellGrid
from lagless.physics import CarState, Keys

__all__ = ["WorldBot"]

MARGIN: Final = 12.0  # m
MIN_LEG: Final = 40.0  # m
REACHED: Final = 10.0  # m
LEG_TIMEOUT: Final = 15.0  # s
STUCK_TIME: Final = 1.0  # s
REVERSE_TIME: Final = 1.0  # s
_AIM: Final = 0.08  # rad of heading error tolerated
_TURN_SPEED: Final = 8.0  # m/s through sharp turns
_SHARP: Final = 0.7  # rad


class WorldBot:
    """Chooses the keys of one car from its latest known state.

    Args:
        grid: The world it roams.
        rng: Its own generator (waypoints, speeds).
    """

    def __init__(self, grid: CellGrid, rng: random.Random) -> None:
        """Start without a waypoint (the first state draws one)."""
        self._grid = grid
        self._rng = rng
        self.waypoint: tuple[float, float] | None = None
        """Where it drives, m."""
        self._speed = 15.0  # m/s
        self._deadline = 0.0  # s
        self._headway_at = 0.0  # s: the last time it moved forward
        self._reverse_until = -math.inf

    def _new_leg(self, x: float, y: float, now: float) -> tuple[float, float]:
        rng, grid = self._rng, self._grid
        wx, wy = x, y
        for _ in range(50):
            wx = rng.uniform(MARGIN, grid.width - MARGIN)
            wy = rng.uniform(MARGIN, grid.height - MARGIN)
            if math.hypot(wx - x, wy - y) >= MIN_LEG:
                break
        self.waypoint = (wx, wy)
        self._speed = rng.uniform(12.0, 22.0)
        self._deadline = now + LEG_TIMEOUT
        return wx, wy

    def keys(self, state: CarState, now: float) -> Keys:
        """Return the keys to hold from ``now`` (s) given the car's last known ``state``."""
        if self.waypoint is None:
            self._headway_at = now
            wx, wy = self._new_leg(state.x, state.y, now)
        else:
            wx, wy = self.waypoint
            if math.hypot(wx - state.x, wy - state.y) < REACHED or now >= self._deadline:
                wx, wy = self._new_leg(state.x, state.y, now)
        error = math.remainder(math.atan2(wy - state.y, wx - state.x) - state.heading, math.tau)
        forward = state.vx * math.cos(state.heading) + state.vy * math.sin(state.heading)
        if forward >= 1.0 or now < self._reverse_until:
            self._headway_at = now if forward >= 1.0 else self._headway_at
        elif now - self._headway_at > STUCK_TIME:
            self._reverse_until = now + REVERSE_TIME
            self._headway_at = now + REVERSE_TIME
        if now < self._reverse_until:
            return Keys.DOWN | (Keys.RIGHT if error > 0.0 else Keys.LEFT)
        wanted = _TURN_SPEED if abs(error) > _SHARP else self._speed
        keys = Keys.NONE
        if forward < wanted - 1.0:
            keys |= Keys.UP
        elif forward > wanted + 2.0:
            keys |= Keys.DOWN
        if error > _AIM:
            keys |= Keys.LEFT
        elif error < -_AIM:
            keys |= Keys.RIGHT
        return keys
