"""The demo's game rule: ramming. A car that drives into another scores a point.

Judged on the server from the cars' true states after the physics ticks, vectorised over all
pairs with numpy (17 cars: 136 pairs).

Decisions:
    * A ram is two cars whose centres are within ``CONTACT`` metres while closing at more than
      ``RAM_SPEED`` m/s (relative velocity along the line of centres).
    * The rammer is the car whose own velocity points harder at the other (the larger component
      towards it); a head-on crash goes to the faster car. Only the rammer scores.
    * The same pair scores again only after ``COOLDOWN`` seconds (one crash, one point).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

import numpy as np

from lagless.physics import CarWorld

__all__ = ["CONTACT", "COOLDOWN", "RAM_SPEED", "Ram", "RamReferee"]

CONTACT: Final = 3.4  # m between centres: about a car length
RAM_SPEED: Final = 4.0  # m/s of closing speed
COOLDOWN: Final = 1.0  # s before the same pair scores again


@dataclass(frozen=True, slots=True)
class Ram:
    """Car ``rammer`` rammed car ``victim`` at server time ``t`` (s)."""

    t: float
    rammer: int
    victim: int


class RamReferee:
    """Keeps the ram score of every car."""

    def __init__(self) -> None:
        """Start with no points."""
        self.scores: dict[int, int] = {}
        """Car id -> rams scored (cars that never scored are absent)."""
        self._last: dict[tuple[int, int], float] = {}  # (low id, high id) -> time of last ram

    def judge(self, world: CarWorld, now: float) -> list[Ram]:
        """Score the rams among the cars of ``world`` at server time ``now`` (s); return them.

        Reads the pymunk bodies directly (a quarter of the cost of ``CarWorld.states``).
        """
        ids = world.car_ids
        if len(ids) < 2:
            return []
        bodies = [world.car(k).body for k in ids]
        rows = np.array([(*b.position, *b.velocity) for b in bodies])
        p, v = rows[:, :2], rows[:, 2:]
        d = p[None, :, :] - p[:, None, :]  # d[i, j]: from i to j, m
        dist = np.hypot(d[..., 0], d[..., 1])
        i, j = np.nonzero(np.triu(dist < CONTACT, k=1))
        if i.size == 0:
            return []
        unit = d[i, j] / np.maximum(dist[i, j], 1e-9)[:, None]
        towards_i = np.einsum("ij,ij->i", v[i], unit)  # i's speed towards j
        towards_j = -np.einsum("ij,ij->i", v[j], unit)  # j's speed towards i
        closing = towards_i + towards_j
        rams: list[Ram] = []
        for a, b, close, ai, bj in zip(i, j, closing, towards_i, towards_j, strict=True):
            if close <= RAM_SPEED:
                continue
            key = (int(ids[a]), int(ids[b]))
            if now - self._last.get(key, -np.inf) < COOLDOWN:
                continue
            self._last[key] = now
            rammer, victim = key if ai >= bj else key[::-1]
            self.scores[rammer] = self.scores.get(rammer, 0) + 1
            rams.append(Ram(now, rammer, victim))
        return rams

    def forget(self, car_id: int) -> None:
        """Drop a car that left (its score and cooldowns)."""
        self.scores.pop(car_id, None)
        self._last = {k: t for k, t in self._last.items() if car_id not in k}
