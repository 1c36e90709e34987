"""Convergence paths (spec 000 §2.7, spec 003 §4.4): each ends on the track after its time."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.smoothing import (
    ConvergenceConfig,
    DeadReckoningTrack,
    DisplayState,
    KinematicState,
    create_convergence,
)

START = DisplayState(t=0.0, x=0.0, y=0.0, vx=1.0, vy=0.5, heading=0.0)
TRACK = DeadReckoningTrack(
    KinematicState(x=1.0, y=-1.0, vx=2.0, vy=0.0, ax=0.5, ay=1.0, heading=1.0),
    anchor=0.0,
    order=2,
    rotate=False,
)


def _close(a: DisplayState, b: DisplayState, tol: float = 1e-9) -> bool:
    return abs(a.x - b.x) < tol and abs(a.y - b.y) < tol and abs(a.heading - b.heading) < tol


def test_snap_is_immediate() -> None:
    conv = create_convergence(ConvergenceConfig(kind="snap", position_time=0.3))
    conv.begin(0.0, START, TRACK)
    out = conv.sample(0.0)
    assert out is not None
    assert _close(out, TRACK.at(0.0))
    assert out.converged


@pytest.mark.parametrize("kind", ["linear", "quadratic", "cubic", "pvb"])
def test_reaches_track_in_configured_time(kind: str) -> None:
    conv = create_convergence(ConvergenceConfig(kind=kind, position_time=0.3, heading_time=0.3))  # type: ignore[arg-type]
    conv.begin(0.0, START, TRACK)
    first = conv.sample(0.0)
    assert first is not None
    assert (first.x, first.y, first.heading) == pytest.approx((0.0, 0.0, 0.0))
    assert not first.converged
    before = conv.sample(0.2999)
    assert before is not None
    assert not _close(before, TRACK.at(0.2999), 1e-6)
    for t in (0.3, 0.35, 1.0):
        out = conv.sample(t)
        assert out is not None
        assert _close(out, TRACK.at(t))
        assert out.converged
    # Continuous at the end of the path (no jump when it hands over to the track).
    assert abs(before.x - TRACK.at(0.3).x) < 1e-2


def test_linear_is_straight_and_uniform() -> None:
    conv = create_convergence(ConvergenceConfig(kind="linear", position_time=0.4))
    conv.begin(0.0, START, TRACK)
    end = TRACK.at(0.4)
    for f in (0.25, 0.5, 0.75):
        out = conv.sample(0.4 * f)
        assert out is not None
        assert out.x == pytest.approx(end.x * f)
        assert out.y == pytest.approx(end.y * f)
        assert out.vx == pytest.approx(end.x / 0.4)


def test_cubic_is_c1() -> None:
    conv = create_convergence(ConvergenceConfig(kind="cubic", position_time=0.5))
    conv.begin(0.0, START, TRACK)
    start = conv.sample(0.0)
    end = conv.sample(0.5 - 1e-9)
    assert start is not None
    assert end is not None
    assert (start.vx, start.vy) == pytest.approx((START.vx, START.vy))
    track_end = TRACK.at(0.5)
    assert (end.vx, end.vy) == pytest.approx((track_end.vx, track_end.vy), abs=1e-6)


def test_pvb_velocity_is_derivative() -> None:
    conv = create_convergence(ConvergenceConfig(kind="pvb", position_time=0.5))
    conv.begin(0.0, START, TRACK)
    h = 1e-6
    for t in (0.1, 0.25, 0.4):
        a, b, mid = conv.sample(t - h), conv.sample(t + h), conv.sample(t)
        assert a is not None
        assert b is not None
        assert mid is not None
        assert mid.vx == pytest.approx((b.x - a.x) / (2 * h), rel=1e-5)
        assert mid.vy == pytest.approx((b.y - a.y) / (2 * h), rel=1e-5)


def test_separate_heading_time() -> None:
    conv = create_convergence(ConvergenceConfig(kind="linear", position_time=0.3, heading_time=0.1))
    conv.begin(0.0, START, TRACK)
    half = conv.sample(0.05)
    assert half is not None
    assert half.heading == pytest.approx(0.5)
    at = conv.sample(0.1)
    assert at is not None
    assert at.heading == pytest.approx(1.0)
    assert at.x != pytest.approx(TRACK.at(0.1).x)
    assert not at.converged


def test_zero_time_snaps() -> None:
    conv = create_convergence(ConvergenceConfig(kind="cubic", position_time=0.0, heading_time=0.0))
    conv.begin(0.0, START, TRACK)
    out = conv.sample(0.0)
    assert out is not None
    assert _close(out, TRACK.at(0.0))


def test_before_begin_and_no_current() -> None:
    conv = create_convergence(ConvergenceConfig(kind="linear"))
    assert conv.sample(1.0) is None
    conv.begin(0.0, None, TRACK)
    out = conv.sample(0.01)
    assert out is not None
    assert _close(out, TRACK.at(0.01))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"kind": "spline"}, "kind"), ({"position_time": -1.0}, "position_time")],
)
def test_config_validation(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        ConvergenceConfig(**kwargs)  # type: ignore[arg-type]
