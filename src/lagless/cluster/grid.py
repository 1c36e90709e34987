"""The world of a cluster: a grid of rectangular cells over one walled arena (issue 16 part 1).

Each cell is owned by one cell server at a time (``lagless.cluster.node``); the grid answers the
geometric questions the servers ask every snapshot: which cell a car is in, how far outside a
cell it is, and which other cells lie within the replication halo of it. Everything is in metres
and vectorised over the cars with numpy.

Decisions:
    * Cells are equal rectangles, ``cols`` x ``rows``, cell ``c`` at column ``c % cols`` and row
      ``c // cols``; x grows with the column, y with the row.
    * A cluster of ``n`` servers gets ``n`` cells laid out as square as the divisors of ``n``
      allow (1 x 1, 2 x 1, 3 x 1, 2 x 2, 3 x 2, ...), so adding servers adds area at the same
      density of players per cell.
    * The arena's only walls are its outer edges; cell borders are invisible to the cars.
    * Players start at positions drawn from the seed (``spawn_states``), the same on every process.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError
from lagless.physics import CarState, Wall

__all__ = ["CellGrid", "spawn_states"]

_SPAWN_MARGIN = 8.0  # m from the outer walls
_SPAWN_SPACING = 6.0  # m between two spawned cars


@dataclass(frozen=True, slots=True)
class CellGrid:
    """``cols`` x ``rows`` cells of ``cell_width`` x ``cell_height`` metres."""

    cols: int
    rows: int
    cell_width: float
    """m"""
    cell_height: float
    """m"""

    def __post_init__(self) -> None:
        """Validate; raise ``ConfigError`` naming the field."""
        for name in ("cols", "rows"):
            value = getattr(self, name)
            if not 1 <= value <= 64:
                raise ConfigError(f"{name} must be in [1, 64], got {value}")
        for name in ("cell_width", "cell_height"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 20.0 <= value <= 10_000.0):
                raise ConfigError(f"{name} must be in [20, 10000] m, got {value!r}")

    @classmethod
    def for_servers(cls, servers: int, cell_width: float, cell_height: float) -> CellGrid:
        """Return the grid of one cell per server, as square as ``servers``' divisors allow."""
        if not 1 <= servers <= 64:
            raise ConfigError(f"servers must be in [1, 64], got {servers}")
        rows = max(d for d in range(1, math.isqrt(servers) + 1) if servers % d == 0)
        return cls(servers // rows, rows, cell_width, cell_height)

    @property
    def cells(self) -> int:
        """Return the number of cells."""
        return self.cols * self.rows

    @property
    def width(self) -> float:
        """Return the world's width, m."""
        return self.cols * self.cell_width

    @property
    def height(self) -> float:
        """Return the world's height, m."""
        return self.rows * self.cell_height

    def walls(self) -> tuple[Wall, ...]:
        """Return the four outer walls."""
        w, h = self.width, self.height
        return (
            Wall(0.0, 0.0, w, 0.0),
            Wall(w, 0.0, w, h),
            Wall(w, h, 0.0, h),
            Wall(0.0, h, 0.0, 0.0),
        )

    def bounds(self, cell: int) -> tuple[float, float, float, float]:
        """Return ``(x0, y0, x1, y1)`` of ``cell``, m."""
        row, col = divmod(cell, self.cols)
        x0, y0 = col * self.cell_width, row * self.cell_height
        return x0, y0, x0 + self.cell_width, y0 + self.cell_height

    def cell_of(self, x: npt.ArrayLike, y: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Return the cell of each point (points beyond the edges count to the nearest cell)."""
        col = np.clip(np.floor(np.asarray(x) / self.cell_width), 0, self.cols - 1).astype(np.int64)
        row = np.clip(np.floor(np.asarray(y) / self.cell_height), 0, self.rows - 1).astype(np.int64)
        return row * self.cols + col

    def outside(self, x: npt.ArrayLike, y: npt.ArrayLike) -> npt.NDArray[np.float64]:
        """Return the distance (m) of each point outside each cell: shape ``(points, cells)``.

        Zero where the point lies in the cell.
        """
        px = np.asarray(x, dtype=np.float64).reshape(-1, 1)
        py = np.asarray(y, dtype=np.float64).reshape(-1, 1)
        cells = np.arange(self.cells)
        x0 = (cells % self.cols) * self.cell_width
        y0 = (cells // self.cols) * self.cell_height
        dx = np.maximum(np.maximum(x0 - px, px - (x0 + self.cell_width)), 0.0)
        dy = np.maximum(np.maximum(y0 - py, py - (y0 + self.cell_height)), 0.0)
        return np.hypot(dx, dy)

    def neighbours(self, cell: int) -> list[int]:
        """Return the cells sharing an edge or a corner with ``cell``."""
        row, col = divmod(cell, self.cols)
        return [
            r * self.cols + c
            for r in range(max(0, row - 1), min(self.rows, row + 2))
            for c in range(max(0, col - 1), min(self.cols, col + 2))
            if (r, c) != (row, col)
        ]


def spawn_states(grid: CellGrid, players: int, seed: int) -> list[CarState]:
    """Return the start state of players ``0..players-1``: spread over the world, at rest.

    Drawn from ``seed`` alone, so every server and the bots agree without a message. Cars keep
    ``_SPAWN_SPACING`` m apart where the area allows (after 200 tries a position is taken anyway).
    """
    rng = random.Random(seed)
    placed: list[tuple[float, float]] = []
    states: list[CarState] = []
    for _ in range(players):
        for _attempt in range(200):
            x = rng.uniform(_SPAWN_MARGIN, grid.width - _SPAWN_MARGIN)
            y = rng.uniform(_SPAWN_MARGIN, grid.height - _SPAWN_MARGIN)
            if all(math.hypot(x - a, y - b) >= _SPAWN_SPACING for a, b in placed):
                break
        placed.append((x, y))
        states.append(CarState(x=x, y=y, heading=rng.uniform(-math.pi, math.pi)))
    return states
