"""Random obstacle maps with a Voronoi waypoint graph: the Silac test world (spec 002 §3.3).

Implements spec 002 §3.3 (§2.4 of the thesis, after Jardosh et al.): a square map with randomly
placed obstacles; the Voronoi diagram of the obstacle vertices (``scipy.spatial.Voronoi``, the
``[scipy]`` extra) gives the paths; vertices are added where a diagram edge crosses an obstacle
edge (**doors**) and where it crosses the map border (which removes the infinite edges). Diagram
vertices are waypoints, diagram edges are paths. Units: metres. Decisions (spec 002 §7.10), pinned
in ``tests/gossip/test_worldmap.py``:

* Obstacles are axis-aligned rectangles, fully inside the map, with sides drawn uniformly in
  ``[min_side, max_side]``; they may overlap (``test_random_map_obstacles_inside``).
* An infinite Voronoi ridge is extended from its finite vertex away from the sites' centroid and
  clipped to the map square; every edge is clipped to the square, so all waypoints lie inside it
  and border crossings become vertices (``test_graph_inside_map_and_border_vertices``).
* Each clipped edge is split at every crossing with an obstacle edge; the crossing point is a
  vertex flagged as a door (``test_doors_lie_on_obstacle_edges``).
* Points closer than ``MERGE_DISTANCE`` are one vertex (qhull emits duplicate vertices for the four
  co-circular corners of a rectangle); only the largest connected component is kept, so every
  waypoint is reachable from every other (``test_graph_connected``).
* Shortest paths are Dijkstra over Euclidean edge lengths (``scipy.sparse.csgraph``), cached per
  source vertex (``test_shortest_path_is_shortest``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError

__all__ = ["MERGE_DISTANCE", "Obstacle", "WaypointGraph", "WorldMap", "build_waypoint_graph"]

MERGE_DISTANCE: Final = 1e-6  # metres: points closer than this are one waypoint
_EPS: Final = 1e-12  # dimensionless slack of the segment-intersection parameters

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Obstacle:
    """An axis-aligned rectangular obstacle (a building), metres."""

    x_min: float
    """Left side, metres."""
    y_min: float
    """Bottom side, metres."""
    x_max: float
    """Right side, metres."""
    y_max: float
    """Top side, metres."""

    def corners(self) -> list[tuple[float, float]]:
        """Return the four vertices (the Voronoi sites), counter-clockwise from bottom-left."""
        return [
            (self.x_min, self.y_min),
            (self.x_max, self.y_min),
            (self.x_max, self.y_max),
            (self.x_min, self.y_max),
        ]

    def edges(self) -> list[tuple[tuple[float, float], tuple[float, float]]]:
        """Return the four walls as (start, end) point pairs."""
        c = self.corners()
        return [(c[i], c[(i + 1) % 4]) for i in range(4)]


@dataclass(frozen=True, slots=True, kw_only=True)
class WaypointGraph:
    """Waypoints and the paths between them (undirected)."""

    vertices: FloatArray
    """(n, 2) waypoint positions, metres."""
    edges: IntArray
    """(m, 2) vertex index pairs, each path once, ``i < j``."""
    doors: npt.NDArray[np.bool_]
    """(n,) True where the waypoint is a crossing of a path with an obstacle wall (a door)."""


def _clip(p: FloatArray, q: FloatArray, size: float) -> tuple[FloatArray, FloatArray] | None:
    """Liang-Barsky clip of segment p-q to [0, size]^2; ``None`` when it misses the square."""
    d = q - p
    t0, t1 = 0.0, 1.0
    for pk, qk in (
        (-d[0], p[0]),
        (d[0], size - p[0]),
        (-d[1], p[1]),
        (d[1], size - p[1]),
    ):
        if pk == 0.0:
            if qk < 0.0:
                return None
            continue
        r = qk / pk
        if pk < 0.0:
            t0 = max(t0, r)
        else:
            t1 = min(t1, r)
        if t0 > t1:
            return None
    # Clamp: p + t·d can land 1e-14 m outside the square, and a float32 -1e-14 is outside the
    # [0, size] box that join requests are checked against (spec 002 §2.5.3, reject code 2).
    return np.clip(p + t0 * d, 0.0, size), np.clip(p + t1 * d, 0.0, size)


def _ridges(sites: FloatArray, size: float) -> list[tuple[FloatArray, FloatArray]]:
    """Return the Voronoi ridges of ``sites`` as finite segments (infinite ones extended)."""
    from scipy.spatial import Voronoi

    vor = Voronoi(sites)
    centre = sites.mean(axis=0)
    far = 4.0 * size
    out: list[tuple[FloatArray, FloatArray]] = []
    for (i, j), ridge in zip(vor.ridge_points, vor.ridge_vertices, strict=True):
        if -1 not in ridge:
            out.append((vor.vertices[ridge[0]], vor.vertices[ridge[1]]))
            continue
        finite = vor.vertices[ridge[1] if ridge[0] == -1 else ridge[0]]
        tangent = sites[j] - sites[i]
        normal = np.array([-tangent[1], tangent[0]])
        normal /= float(np.hypot(*normal))
        midpoint = (sites[i] + sites[j]) / 2.0
        if float(np.dot(midpoint - centre, normal)) < 0.0:
            normal = -normal
        out.append((finite, finite + far * normal))
    return out


def _crossings(p: FloatArray, q: FloatArray, walls: FloatArray) -> list[float]:
    """Return the parameters t in (0, 1) where p-q crosses the (k, 2, 2) wall segments."""
    r = q - p
    a = walls[:, 0, :]
    s = walls[:, 1, :] - a
    denom = r[0] * s[:, 1] - r[1] * s[:, 0]
    ok = np.abs(denom) > _EPS
    ap = a - p
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (ap[:, 0] * s[:, 1] - ap[:, 1] * s[:, 0]) / denom
        u = (ap[:, 0] * r[1] - ap[:, 1] * r[0]) / denom
    hit = ok & (t > _EPS) & (t < 1.0 - _EPS) & (u >= -_EPS) & (u <= 1.0 + _EPS)
    return sorted(float(x) for x in t[hit])


def build_waypoint_graph(size: float, obstacles: tuple[Obstacle, ...]) -> WaypointGraph:
    """Build the waypoint graph of a map (spec 002 §3.3): Voronoi + doors + border clipping.

    Args:
        size: Side of the square map [0, size]^2, metres.
        obstacles: At least two obstacles; their corners are the Voronoi sites.

    Returns:
        The largest connected component of the clipped, door-split Voronoi diagram.

    Raises:
        ConfigError: fewer than two obstacles, or ``size`` not positive.
    """
    if not (math.isfinite(size) and size > 0):
        raise ConfigError(f"size must be a finite number of metres > 0, got {size!r}")
    if len(obstacles) < 2:
        raise ConfigError(f"obstacles must hold at least 2 rectangles, got {len(obstacles)}")
    sites = np.unique(
        np.array([c for o in obstacles for c in o.corners()], dtype=np.float64), axis=0
    )
    walls = np.array([w for o in obstacles for w in o.edges()], dtype=np.float64)
    points: dict[tuple[int, int], int] = {}
    coords: list[tuple[float, float]] = []
    doors: list[bool] = []

    def vertex(pt: FloatArray, door: bool) -> int:
        key = (round(float(pt[0]) / MERGE_DISTANCE), round(float(pt[1]) / MERGE_DISTANCE))
        index = points.get(key)
        if index is None:
            index = points[key] = len(coords)
            coords.append((float(pt[0]), float(pt[1])))
            doors.append(door)
        elif door:
            doors[index] = True
        return index

    edges: set[tuple[int, int]] = set()
    for p, q in _ridges(sites, size):
        clipped = _clip(np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64), size)
        if clipped is None:
            continue
        a, b = clipped
        chain = [vertex(a, False)]
        chain += [vertex(a + t * (b - a), True) for t in _crossings(a, b, walls)]
        chain.append(vertex(b, False))
        for u, v in itertools.pairwise(chain):
            if u != v:
                edges.add((min(u, v), max(u, v)))
    return _largest_component(np.array(coords), np.array(sorted(edges)), np.array(doors))


def _largest_component(
    coords: FloatArray, edges: IntArray, doors: npt.NDArray[np.bool_]
) -> WaypointGraph:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    n = len(coords)
    adjacency = coo_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n)).tocsr()
    _, labels = connected_components(adjacency, directed=False)
    keep = labels == np.bincount(labels).argmax()
    renumber = np.cumsum(keep) - 1
    kept = edges[keep[edges[:, 0]] & keep[edges[:, 1]]]
    return WaypointGraph(
        vertices=coords[keep],
        edges=renumber[kept].astype(np.int64),
        doors=doors[keep],
    )


@dataclass(slots=True, kw_only=True)
class WorldMap:
    """A square map with obstacles and its waypoint graph (spec 002 §3.3).

    Build one with `WorldMap.random`, or from explicit obstacles with `WorldMap.from_obstacles`.
    """

    size: float
    """Side of the square map [0, size]^2, metres (the thesis's "map size", §3.4)."""
    obstacles: tuple[Obstacle, ...]
    """The obstacles."""
    graph: WaypointGraph
    """Waypoints and paths."""
    _matrix: object = field(default=None, repr=False)
    _paths: dict[int, IntArray] = field(default_factory=dict, repr=False)

    @classmethod
    def from_obstacles(cls, size: float, obstacles: tuple[Obstacle, ...]) -> WorldMap:
        """Build the map and its graph from explicit obstacles (see `build_waypoint_graph`)."""
        return cls(size=size, obstacles=obstacles, graph=build_waypoint_graph(size, obstacles))

    @classmethod
    def random(
        cls,
        *,
        size: float,
        obstacles: int,
        rng: np.random.Generator,
        min_side: float | None = None,
        max_side: float | None = None,
    ) -> WorldMap:
        """Draw a random obstacle map (spec 002 §3.3).

        Args:
            size: Side of the square map, metres.
            obstacles: Number of rectangles, >= 2.
            rng: The injected generator.
            min_side: Smallest obstacle side, metres (default ``size / 40``).
            max_side: Largest obstacle side, metres (default ``size / 10``).

        Raises:
            ConfigError: an argument out of range.
        """
        lo = size / 40.0 if min_side is None else min_side
        hi = size / 10.0 if max_side is None else max_side
        if not (math.isfinite(size) and size > 0):
            raise ConfigError(f"size must be a finite number of metres > 0, got {size!r}")
        if not 0 < lo <= hi < size:
            raise ConfigError(
                f"min_side and max_side must satisfy 0 < min <= max < size, got {lo}, {hi}"
            )
        if obstacles < 2:
            raise ConfigError(f"obstacles must be >= 2, got {obstacles}")
        sides = rng.uniform(lo, hi, size=(obstacles, 2))
        corners = rng.uniform(0.0, 1.0, size=(obstacles, 2)) * (size - sides)
        rects = tuple(
            Obstacle(float(x), float(y), float(x + w), float(y + h))
            for (x, y), (w, h) in zip(corners, sides, strict=True)
        )
        return cls.from_obstacles(size, rects)

    @property
    def diagonal(self) -> float:
        """The map diagonal, metres: D_max of Eq. 2.3."""
        return self.size * math.sqrt(2.0)

    def _csr(self) -> object:
        if self._matrix is None:
            from scipy.sparse import coo_matrix

            v, e = self.graph.vertices, self.graph.edges
            lengths = np.hypot(*(v[e[:, 0]] - v[e[:, 1]]).T)
            n = len(v)
            rows = np.concatenate([e[:, 0], e[:, 1]])
            cols = np.concatenate([e[:, 1], e[:, 0]])
            self._matrix = coo_matrix((np.tile(lengths, 2), (rows, cols)), shape=(n, n)).tocsr()
        return self._matrix

    def shortest_path(self, start: int, goal: int) -> list[int]:
        """Return the waypoint indices of a shortest path from ``start`` to ``goal`` (inclusive)."""
        from scipy.sparse.csgraph import dijkstra

        predecessors = self._paths.get(start)
        if predecessors is None:
            _, pred = dijkstra(self._csr(), indices=start, return_predecessors=True)
            predecessors = self._paths[start] = np.asarray(pred, dtype=np.int64)
        path = [goal]
        while path[-1] != start:
            prev = int(predecessors[path[-1]])
            if prev < 0:
                return [start]
            path.append(prev)
        return path[::-1]

    def path_length(self, path: list[int]) -> float:
        """Return the length of a waypoint path, metres."""
        v = self.graph.vertices[path]
        return float(np.hypot(*np.diff(v, axis=0).T).sum()) if len(path) > 1 else 0.0

    def nearest_vertex(self, x: float, y: float) -> int:
        """Return the index of the waypoint closest to (x, y)."""
        d = self.graph.vertices - np.array([x, y])
        return int(np.argmin(np.einsum("ij,ij->i", d, d)))
