"""State helpers: angle wrapping, short-arc blends and the DR formulas of spec 000 §2.7."""

from __future__ import annotations

import math

import pytest

from lagless.errors import ConfigError
from lagless.smoothing import KinematicState, blend_heading, extrapolate, wrap_angle


def test_wrap_angle_range() -> None:
    assert wrap_angle(3 * math.pi) == pytest.approx(math.pi)
    assert wrap_angle(-math.pi) == math.pi
    assert wrap_angle(-3 * math.pi / 2) == pytest.approx(math.pi / 2)


def test_blend_heading_takes_short_arc() -> None:
    start, end = math.radians(170), math.radians(-170)
    mid = blend_heading(start, end, 0.5)
    assert abs(abs(mid) - math.pi) < 1e-12
    assert blend_heading(start, end, 0.25) == pytest.approx(math.radians(175))


def test_extrapolate_orders() -> None:
    s = KinematicState(t=1.0, x=1, y=2, vx=3, vy=-1, ax=2, ay=4, heading=0.5, angular_velocity=1)
    o0 = extrapolate(s, 2.0, order=0, rotate=True)
    assert (o0.x, o0.y, o0.heading, o0.vx) == (1, 2, 0.5, 0.0)
    o1 = extrapolate(s, 2.0, order=1, rotate=True)
    assert (o1.x, o1.y, o1.t) == (7, 0, 3.0)
    assert o1.heading == pytest.approx(wrap_angle(2.5))
    o2 = extrapolate(s, 2.0, order=2, rotate=False)
    assert (o2.x, o2.y, o2.vx, o2.vy) == (11, 8, 7, 7)
    assert o2.heading == 0.5
    assert o2.angular_velocity == 0.0
    with pytest.raises(ConfigError, match="order"):
        extrapolate(s, 1.0, order=3, rotate=True)
