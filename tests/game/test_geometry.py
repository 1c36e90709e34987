"""Collision geometry: AABB broad phase and SAT narrow phase (spec 000 §5.2.1)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import ConfigError
from lagless.game.geometry import (
    ConvexPolygon,
    aabb_pairs,
    ray_cast,
    regular_polygon,
    sat_contact,
)


def _inside(poly: ConvexPolygon, points: np.ndarray, eps: float) -> np.ndarray:
    return np.all(points @ poly.axes.T <= poly.offsets + eps, axis=1)


def test_rectangles_overlap_by_their_smaller_extent() -> None:
    a = ConvexPolygon.rectangle(0.0, 0.0, 2.0, 2.0)
    b = ConvexPolygon.rectangle(1.5, 0.5, 2.0, 2.0)
    contact = sat_contact(a, b)
    assert contact is not None
    assert contact.depth == pytest.approx(0.5)
    assert contact.normal == pytest.approx((-1.0, 0.0))  # a is pushed left, away from b
    assert sat_contact(a, ConvexPolygon.rectangle(2.0, 0.0, 1.0, 1.0)) is None  # touching
    assert sat_contact(a, ConvexPolygon.rectangle(3.0, 3.0, 1.0, 1.0)) is None


def test_boxes_overlap_but_polygons_do_not() -> None:
    """The narrow phase rejects what the broad phase lets through: two triangles whose
    bounding boxes overlap but whose hypotenuses face each other with a gap."""
    a = ConvexPolygon([(0.0, 0.0), (2.0, 0.0), (0.0, 2.0)])
    b = ConvexPolygon([(2.0, 2.0), (0.5, 2.0), (2.0, 0.5)])
    assert aabb_pairs(np.array([a.box, b.box])) == [(0, 1)]
    assert sat_contact(a, b) is None


def test_clockwise_input_is_reoriented_and_concave_rejected() -> None:
    cw = ConvexPolygon([(0.0, 0.0), (0.0, 1.0), (1.0, 1.0), (1.0, 0.0)])
    assert _inside(cw, np.array([[0.5, 0.5]]), 0.0).all()
    assert not _inside(cw, np.array([[1.5, 0.5]]), 0.0).any()
    with pytest.raises(ConfigError, match="convex"):
        ConvexPolygon([(0.0, 0.0), (2.0, 0.0), (1.0, 0.5), (2.0, 2.0), (0.0, 2.0)])
    with pytest.raises(ConfigError, match="3"):
        ConvexPolygon([(0.0, 0.0), (1.0, 1.0)])
    with pytest.raises(ConfigError, match="finite"):
        ConvexPolygon([(0.0, 0.0), (math.nan, 1.0), (1.0, 0.0)])


def test_broad_phase_finds_exactly_the_overlapping_boxes() -> None:
    rng = np.random.default_rng(4)
    lo = rng.uniform(0, 20, size=(60, 2))
    boxes = np.concatenate([lo, lo + rng.uniform(0.1, 3.0, size=(60, 2))], axis=1)
    expected = [
        (i, j)
        for i in range(60)
        for j in range(i + 1, 60)
        if boxes[i, 0] < boxes[j, 2]
        and boxes[j, 0] < boxes[i, 2]
        and boxes[i, 1] < boxes[j, 3]
        and boxes[j, 1] < boxes[i, 3]
    ]
    assert aabb_pairs(boxes) == expected
    assert expected  # the scene has overlaps to find


coords = st.floats(-5.0, 5.0, allow_nan=False)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(coords, coords, st.floats(0.2, 2.0), st.integers(3, 9), coords, coords, st.floats(0.2, 2.0))
def test_sat_agrees_with_point_sampling_and_separates(
    ax: float, ay: float, ar: float, sides: int, bx: float, by: float, br: float
) -> None:
    a = regular_polygon(ax, ay, ar, sides)
    b = regular_polygon(bx, by, br, 6)
    contact = sat_contact(a, b)
    # sample points of a (vertices, edge points, centre) and check them against b
    t = np.linspace(0.0, 1.0, 9)[:, None]
    edges = np.concatenate(
        [v + t * (w - v) for v, w in zip(a.vertices, np.roll(a.vertices, -1, 0), strict=True)]
    )
    sampled_overlap = bool(_inside(b, edges, -1e-9).any() or _inside(a, b.vertices, -1e-9).any())
    if sampled_overlap:
        assert contact is not None
    if contact is None:
        return
    assert contact.depth > 0
    nx, ny = contact.normal
    assert math.hypot(nx, ny) == pytest.approx(1.0)
    moved = a.translated(nx * contact.depth * 1.001 + nx * 1e-9, ny * contact.depth * 1.001)
    after = sat_contact(moved, b)
    assert after is None or after.depth < 1e-6


def test_ray_cast_hits_the_nearest_polygon() -> None:
    walls = [
        ConvexPolygon.rectangle(5.0, -1.0, 1.0, 2.0),
        ConvexPolygon.rectangle(2.0, -1.0, 1.0, 2.0),
    ]
    assert ray_cast(walls, (0.0, 0.0), (1.0, 0.0), 100.0) == pytest.approx(2.0)
    assert ray_cast(walls, (0.0, 0.0), (1.0, 0.0), 1.5) is None
    assert ray_cast(walls, (0.0, 0.0), (-1.0, 0.0), 100.0) is None
    assert ray_cast(walls, (0.0, 5.0), (1.0, 0.0), 100.0) is None
    assert ray_cast(walls, (2.5, 0.0), (1.0, 0.0), 100.0) == 0.0  # starts inside
    diagonal = ray_cast(walls, (0.0, -2.0), (1.0, 1.0), 100.0)
    assert diagonal == pytest.approx(math.sqrt(2) * 2.0)  # enters the first wall at (2, 0)
    assert ray_cast(walls, (0.0, 0.0), (0.0, 0.0), 100.0) is None
