"""Collision geometry for the game server: AABB broad phase, convex-polygon SAT narrow phase.

Implements spec 000 §5.2.1 (entity collision "from axis-aligned bounding boxes to exact polygon
intersection"): a vectorised broad phase over every box at once (numpy, one comparison matrix per
call, no Python loop over pairs) keeps only the overlapping pairs; the separating-axis theorem then
decides each candidate pair exactly and returns the minimum translation vector. Units are metres.

Decisions: polygons must be convex with counter-clockwise or clockwise vertices (both work; the
axes are edge normals either way); a polygon with fewer than three vertices, a non-finite vertex
or zero area is a `ConfigError`. Touching shapes (overlap depth 0) do not collide. The ray cast
used for wall occlusion of instant-hit shots is a slab test against each polygon's edges.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError

__all__ = [
    "Contact",
    "ConvexPolygon",
    "aabb_overlap_matrix",
    "aabb_pairs",
    "ray_cast",
    "regular_polygon",
    "sat_contact",
]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Contact:
    """The result of an overlap test: push the first shape by ``normal * depth`` to separate."""

    normal: tuple[float, float]
    """Unit vector from the second shape towards the first."""
    depth: float
    """Overlap along ``normal`` (m), > 0."""


class ConvexPolygon:
    """A convex polygon in world coordinates (m), stored counter-clockwise.

    Args:
        vertices: At least three ``(x, y)`` points in order around the polygon.

    Raises:
        ConfigError: fewer than three vertices, a non-finite coordinate, zero area or a
            non-convex outline.
    """

    __slots__ = ("axes", "box", "offsets", "vertices")

    def __init__(self, vertices: Sequence[tuple[float, float]] | FloatArray) -> None:
        points = np.asarray(vertices, dtype=np.float64)
        if points.ndim != 2 or points.shape[1] != 2 or points.shape[0] < 3:
            raise ConfigError(f"a polygon needs at least 3 (x, y) vertices, got {points.shape}")
        if not np.all(np.isfinite(points)):
            raise ConfigError("polygon vertices must be finite numbers")
        edges = np.roll(points, -1, axis=0) - points
        cross = (
            edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1]
            - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
        )
        if not (np.all(cross >= -1e-12) or np.all(cross <= 1e-12)) or abs(cross.sum()) < 1e-12:
            raise ConfigError("polygon must be convex with a non-zero area")
        if cross.sum() < 0.0:  # clockwise: reverse, so edge normals point outwards
            points = points[::-1].copy()
            edges = np.roll(points, -1, axis=0) - points
        lengths = np.hypot(edges[:, 0], edges[:, 1])
        keep = lengths > 1e-12
        normals = np.stack([edges[keep, 1], -edges[keep, 0]], axis=1) / lengths[keep, None]
        self.vertices: FloatArray = points
        self.axes: FloatArray = normals
        self.offsets: FloatArray = (points[keep] * normals).sum(axis=1)
        self.box: FloatArray = np.array(
            [points[:, 0].min(), points[:, 1].min(), points[:, 0].max(), points[:, 1].max()]
        )

    @classmethod
    def rectangle(cls, x: float, y: float, width: float, height: float) -> ConvexPolygon:
        """An axis-aligned rectangle with its lower corner at ``(x, y)`` (m)."""
        return cls([(x, y), (x + width, y), (x + width, y + height), (x, y + height)])

    def translated(self, dx: float, dy: float) -> ConvexPolygon:
        """This polygon moved by ``(dx, dy)`` (m); cheap: a translation keeps it convex, so
        nothing is validated again."""
        moved = object.__new__(ConvexPolygon)
        shift = np.array([dx, dy])
        moved.vertices = self.vertices + shift
        moved.axes = self.axes
        moved.offsets = self.offsets + self.axes @ shift
        moved.box = self.box + np.array([dx, dy, dx, dy])
        return moved


def regular_polygon(x: float, y: float, radius: float, sides: int = 8) -> ConvexPolygon:
    """A regular polygon with ``sides`` vertices on a circle of ``radius`` (m) around ``(x, y)``."""
    if sides < 3 or not (math.isfinite(radius) and radius > 0):
        raise ConfigError(f"regular polygon needs sides >= 3 and radius > 0, got {sides}, {radius}")
    angles = np.arange(sides) * (2.0 * math.pi / sides)
    return ConvexPolygon(np.stack([x + radius * np.cos(angles), y + radius * np.sin(angles)], 1))


def aabb_overlap_matrix(a: FloatArray, b: FloatArray) -> npt.NDArray[np.bool_]:
    """Which boxes of ``a`` overlap which boxes of ``b`` (strictly; touching is no overlap).

    Args:
        a: ``(n, 4)`` boxes ``min_x, min_y, max_x, max_y`` (m).
        b: ``(m, 4)`` boxes.

    Returns:
        An ``(n, m)`` boolean matrix.
    """
    return (
        (a[:, None, 0] < b[None, :, 2])
        & (b[None, :, 0] < a[:, None, 2])
        & (a[:, None, 1] < b[None, :, 3])
        & (b[None, :, 1] < a[:, None, 3])
    )


def aabb_pairs(boxes: FloatArray) -> list[tuple[int, int]]:
    """The index pairs ``(i, j)``, ``i < j``, of overlapping boxes in one set (broad phase)."""
    if len(boxes) < 2:
        return []
    hits = np.triu(aabb_overlap_matrix(boxes, boxes), k=1)
    i, j = np.nonzero(hits)
    return list(zip(i.tolist(), j.tolist(), strict=True))


def sat_contact(a: ConvexPolygon, b: ConvexPolygon) -> Contact | None:
    """Exact overlap test of two convex polygons by the separating-axis theorem.

    Returns:
        The minimum translation that moves ``a`` out of ``b``, or None if they do not overlap.
    """
    axes = np.concatenate([a.axes, b.axes])
    pa = a.vertices @ axes.T  # (na, k) projections
    pb = b.vertices @ axes.T
    forward = pb.max(axis=0) - pa.min(axis=0)  # move a this far along +axis to clear b
    backward = pa.max(axis=0) - pb.min(axis=0)  # ... or this far along -axis
    if np.any(forward <= 0.0) or np.any(backward <= 0.0):
        return None
    push = np.minimum(forward, backward)
    k = int(np.argmin(push))
    normal = axes[k] if forward[k] <= backward[k] else -axes[k]
    return Contact((float(normal[0]), float(normal[1])), float(push[k]))


def ray_cast(
    polygons: Sequence[ConvexPolygon],
    origin: tuple[float, float],
    direction: tuple[float, float],
    max_distance: float,
) -> float | None:
    """Distance (m) along a ray to the first polygon it enters within ``max_distance``.

    Args:
        polygons: Convex obstacles.
        origin: Ray start (m).
        direction: Any non-zero direction.
        max_distance: Longest distance tested (m).

    Returns:
        The distance to the nearest entry (0 if the ray starts inside one), or None.
    """
    length = math.hypot(*direction)
    if length == 0.0 or not math.isfinite(length):
        return None
    d = np.array(direction) / length
    o = np.asarray(origin, dtype=np.float64)
    best: float | None = None
    for poly in polygons:
        near, far = 0.0, max_distance
        hit = True
        for normal, offset in zip(poly.axes, poly.offsets, strict=True):
            # the inside is every half-plane normal . p <= offset (outward normals)
            denom = float(normal @ d)
            dist = float(offset - normal @ o)
            if abs(denom) < 1e-15:
                if dist < 0.0:
                    hit = False
                    break
                continue
            t = dist / denom
            if denom < 0.0:
                near = max(near, t)
            else:
                far = min(far, t)
            if near > far:
                hit = False
                break
        if hit and (best is None or near < best):
            best = near
    return best
