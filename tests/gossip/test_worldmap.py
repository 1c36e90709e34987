"""The Silac test world: random obstacles, Voronoi waypoint graph, doors, border clipping."""

from __future__ import annotations

import heapq
import itertools
import math

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.gossip.worldmap import Obstacle, WorldMap, build_waypoint_graph


@pytest.fixture(scope="module")
def world() -> WorldMap:
    return WorldMap.random(size=500.0, obstacles=20, rng=np.random.default_rng(3))


def test_random_map_obstacles_inside(world: WorldMap) -> None:
    assert len(world.obstacles) == 20
    for o in world.obstacles:
        assert 0 <= o.x_min < o.x_max <= 500
        assert 0 <= o.y_min < o.y_max <= 500
        assert 500 / 40 - 1e-9 <= o.x_max - o.x_min <= 500 / 10 + 1e-9


def test_graph_inside_map_and_border_vertices(world: WorldMap) -> None:
    v = world.graph.vertices
    assert v.min() >= 0.0  # exactly: a float32 -1e-14 would make a join request OUTSIDE_MAP
    assert v.max() <= 500.0
    on_border = (np.isclose(v, 0.0) | np.isclose(v, 500.0)).any(axis=1)
    assert on_border.sum() >= 3  # infinite ridges were clipped at the map edges


def test_doors_lie_on_obstacle_edges(world: WorldMap) -> None:
    doors = world.graph.vertices[world.graph.doors]
    assert len(doors) > 0
    for x, y in doors:
        on_wall = any(
            (
                (math.isclose(x, o.x_min, abs_tol=1e-6) or math.isclose(x, o.x_max, abs_tol=1e-6))
                and o.y_min - 1e-6 <= y <= o.y_max + 1e-6
            )
            or (
                (math.isclose(y, o.y_min, abs_tol=1e-6) or math.isclose(y, o.y_max, abs_tol=1e-6))
                and o.x_min - 1e-6 <= x <= o.x_max + 1e-6
            )
            for o in world.obstacles
        )
        assert on_wall


def test_graph_connected(world: WorldMap) -> None:
    n = len(world.graph.vertices)
    for goal in range(0, n, max(1, n // 20)):
        path = world.shortest_path(0, goal)
        assert path[0] == 0
        assert path[-1] == goal
        edges = {tuple(e) for e in world.graph.edges.tolist()}
        assert all((min(a, b), max(a, b)) in edges for a, b in itertools.pairwise(path))


def _dijkstra(world: WorldMap, start: int) -> list[float]:
    v = world.graph.vertices
    adj: dict[int, list[tuple[int, float]]] = {}
    for a, b in world.graph.edges.tolist():
        w = float(np.hypot(*(v[a] - v[b])))
        adj.setdefault(a, []).append((b, w))
        adj.setdefault(b, []).append((a, w))
    dist = [math.inf] * len(v)
    dist[start] = 0.0
    heap = [(0.0, start)]
    while heap:
        d, u = heapq.heappop(heap)
        if d > dist[u]:
            continue
        for nb, w in adj.get(u, []):
            if d + w < dist[nb]:
                dist[nb] = d + w
                heapq.heappush(heap, (d + w, nb))
    return dist


def test_shortest_path_is_shortest(world: WorldMap) -> None:
    dist = _dijkstra(world, 5)
    for goal in (0, 17, len(dist) - 1):
        assert world.path_length(world.shortest_path(5, goal)) == pytest.approx(dist[goal])


def test_hand_made_map_has_doors_and_rejects_bad_input() -> None:
    obstacles = (Obstacle(10, 10, 40, 40), Obstacle(60, 55, 90, 90), Obstacle(15, 60, 35, 85))
    graph = build_waypoint_graph(100.0, obstacles)
    assert graph.doors.any()
    assert len(graph.edges) >= len(graph.vertices) - 1
    with pytest.raises(ConfigError, match="obstacles"):
        build_waypoint_graph(100.0, obstacles[:1])
    with pytest.raises(ConfigError, match="size"):
        WorldMap.random(size=-1.0, obstacles=3, rng=np.random.default_rng(0))
    assert WorldMap.from_obstacles(100.0, obstacles).diagonal == pytest.approx(100 * math.sqrt(2))


@pytest.mark.parametrize("seed", range(12))
def test_every_waypoint_is_inside_the_map_box(seed: int) -> None:
    # Border crossings computed as p + t·d used to land at -3e-14 m; an avatar starting there
    # was rejected with OUTSIDE_MAP (a float32 -3e-14 is below 0) by every peer it asked.
    world = WorldMap.random(size=1000.0, obstacles=40, rng=np.random.default_rng(seed))
    v = world.graph.vertices
    assert v.min() >= 0.0
    assert v.max() <= 1000.0
