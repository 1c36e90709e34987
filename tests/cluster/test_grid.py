"""The cell grid: layouts per server count, point-to-cell, distances outside cells, spawns."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lagless.cluster import CellGrid, spawn_states
from lagless.errors import ConfigError


@pytest.mark.parametrize(
    ("servers", "cols", "rows"), [(1, 1, 1), (2, 2, 1), (3, 3, 1), (4, 2, 2), (6, 3, 2), (9, 3, 3)]
)
def test_one_cell_per_server_as_square_as_divisors_allow(
    servers: int, cols: int, rows: int
) -> None:
    grid = CellGrid.for_servers(servers, 100.0, 80.0)
    assert (grid.cols, grid.rows, grid.cells) == (cols, rows, servers)
    assert (grid.width, grid.height) == (100.0 * cols, 80.0 * rows)


def test_cell_of_points_and_edges() -> None:
    grid = CellGrid(2, 2, 100.0, 50.0)
    cells = grid.cell_of(
        [10.0, 150.0, 10.0, 199.0, -5.0, 500.0], [10.0, 10.0, 60.0, 99.0, -1.0, 500.0]
    )
    assert cells.tolist() == [0, 1, 2, 3, 0, 3]
    assert grid.bounds(3) == (100.0, 50.0, 200.0, 100.0)


def test_distance_outside_each_cell() -> None:
    grid = CellGrid(2, 1, 100.0, 100.0)
    d = grid.outside([95.0, 103.0], [50.0, 50.0])
    assert d.shape == (2, 2)
    assert d[0].tolist() == [0.0, 5.0]
    assert d[1].tolist() == [3.0, 0.0]
    corner = CellGrid(2, 2, 100.0, 100.0).outside([103.0], [104.0])
    assert corner[0, 0] == pytest.approx(5.0)


def test_neighbours_include_corners() -> None:
    grid = CellGrid(3, 3, 50.0, 50.0)
    assert sorted(grid.neighbours(4)) == [0, 1, 2, 3, 5, 6, 7, 8]
    assert sorted(grid.neighbours(0)) == [1, 3, 4]


def test_walls_enclose_the_world() -> None:
    grid = CellGrid(3, 1, 100.0, 60.0)
    xs = {w.x1 for w in grid.walls()} | {w.x2 for w in grid.walls()}
    ys = {w.y1 for w in grid.walls()} | {w.y2 for w in grid.walls()}
    assert xs == {0.0, 300.0}
    assert ys == {0.0, 60.0}


def test_spawns_are_seeded_spread_and_inside() -> None:
    grid = CellGrid.for_servers(3, 120.0, 120.0)
    first = spawn_states(grid, 40, seed=5)
    assert first == spawn_states(grid, 40, seed=5)
    assert first != spawn_states(grid, 40, seed=6)
    xy = np.array([(s.x, s.y) for s in first])
    assert (xy[:, 0] > 0).all()
    assert (xy[:, 0] < grid.width).all()
    assert (xy[:, 1] > 0).all()
    assert (xy[:, 1] < grid.height).all()
    gaps = [math.dist(a, b) for i, a in enumerate(xy) for b in xy[i + 1 :]]
    assert min(gaps) >= 6.0
    assert len(set(grid.cell_of(xy[:, 0], xy[:, 1]).tolist())) == 3


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cols": 0, "rows": 1, "cell_width": 100.0, "cell_height": 100.0}, "cols"),
        ({"cols": 1, "rows": 1, "cell_width": 5.0, "cell_height": 100.0}, "cell_width"),
        ({"cols": 1, "rows": 1, "cell_width": 100.0, "cell_height": math.nan}, "cell_height"),
    ],
)
def test_bad_grid_names_the_field(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        CellGrid(**kwargs)  # type: ignore[arg-type]
