"""PHB-DR (spec 000 §2.8): angle of embrace classes, exact tracking fits, ghost = receiver."""

from __future__ import annotations

import math

import pytest

from lagless.smoothing import (
    CurveClass,
    DropReason,
    KinematicState,
    PhbConfig,
    PhbReceiver,
    PhbSender,
    PhbTrack,
    ThresholdConfig,
    angle_of_embrace,
)


def _pts(*xy: tuple[float, float]) -> tuple[KinematicState, ...]:
    return tuple(KinematicState(t=float(i), x=x, y=y) for i, (x, y) in enumerate(xy))


def test_angle_classes() -> None:
    cfg = PhbConfig()
    assert angle_of_embrace(_pts((0, 0), (1, 0), (2, 0))) == pytest.approx(math.pi)
    assert cfg.classify(_pts((0, 0), (1, 0), (2, 0))) is CurveClass.STRAIGHT
    assert cfg.classify(_pts((0, 0), (1, 0), (1, 1))) is CurveClass.SOFT  # exactly 90°
    assert cfg.classify(_pts((0, 0), (1, 0), (0, 0.5))) is CurveClass.SHARP  # acute
    assert cfg.classify(_pts((0, 0), (1, 0))) is CurveClass.DEGENERATE
    assert cfg.classify(_pts((0, 0), (0, 0), (1, 0))) is CurveClass.DEGENERATE


def test_quadratic_fit_exact_on_parabola() -> None:
    points = tuple(KinematicState(t=t, x=t * t, y=3.0 - t) for t in (0.0, 1.0, 2.0))
    track = PhbTrack(points, anchor=2.0, switch=10.0, rotate=True)
    for t in (0.5, 2.0, 2.5, 4.0):
        out = track.at(t)
        assert (out.x, out.y) == pytest.approx((t * t, 3.0 - t))
        assert (out.vx, out.vy) == pytest.approx((2 * t, -1.0))
        assert out.ax == pytest.approx(2.0)


def test_track_is_linear_after_convergence_point() -> None:
    points = tuple(KinematicState(t=t, x=t * t) for t in (0.0, 1.0, 2.0))
    track = PhbTrack(points, anchor=2.0, switch=3.0, rotate=True)
    at_switch = track.at(3.0)
    assert at_switch.x == pytest.approx(9.0)
    later = track.at(5.0)
    assert later.x == pytest.approx(9.0 + 6.0 * 2.0)
    assert later.vx == pytest.approx(6.0)
    assert later.ax == 0.0


def test_heading_from_last_orientations() -> None:
    points = (KinematicState(t=0.0, heading=0.1), KinematicState(t=1.0, heading=0.3))
    track = PhbTrack(points, anchor=1.0, switch=1.0, rotate=True)
    assert track.at(2.0).heading == pytest.approx(0.5)
    held = PhbTrack(points, anchor=1.0, switch=1.0, rotate=False)
    assert held.at(2.0).heading == pytest.approx(0.3)


def test_ghost_matches_receiver() -> None:
    cfg = PhbConfig(position_time=0.0, heading_time=0.0, thresholds=ThresholdConfig(position=0.02))
    assert cfg.payload_size == 21
    sender, receiver = PhbSender(cfg), PhbReceiver(cfg)
    updates = 0
    for k in range(100):
        t = k * 0.04
        truth = KinematicState(t=t, x=math.sin(t), y=0.5 * t, vx=math.cos(t), vy=0.5)
        update = sender.update(t, truth)
        if update is not None:
            updates += 1
            assert len(update.payload) == 21
            receiver.process_update(update.payload, t, t)
        ghost, shown = sender.ghost(t), receiver.display(t)
        assert ghost is not None
        assert shown is not None
        assert (shown.x, shown.y) == pytest.approx((ghost.x, ghost.y), abs=1e-9)
        assert math.hypot(shown.x - truth.x, shown.y - truth.y) <= 0.02 + 1e-9
    assert 3 < updates < 100


def test_adaptive_convergence_choice_and_stale() -> None:
    cfg = PhbConfig(position_time=0.2)
    sender, receiver = PhbSender(cfg), PhbReceiver(cfg)
    payloads = []
    for t, x, y in ((0.0, 0.0, 0.0), (1.0, 1.0, 0.0), (2.0, 2.0, 0.0), (3.0, 2.0, 1.0)):
        sender.update(t, KinematicState(t=t, x=x, y=y))
        payloads.append(sender.create_update())
    classes = []
    for k, data in enumerate(payloads):
        assert receiver.process_update(data, float(k), float(k))
        classes.append(receiver.curve_class)
    assert classes == [
        CurveClass.DEGENERATE,
        CurveClass.DEGENERATE,
        CurveClass.STRAIGHT,
        CurveClass.SOFT,
    ]
    assert not receiver.process_update(payloads[1], 4.0, 4.0)
    assert receiver.statistics().dropped[DropReason.STALE] == 1
    # Straight history: linear convergence onto the fitted line, reached after 0.2 s.
    straight = PhbReceiver(cfg)
    for k in range(3):
        straight.process_update(payloads[k], float(k), float(k))
    shown = straight.display(2.2)
    assert shown is not None
    assert (shown.x, shown.y) == pytest.approx((2.2, 0.0))
