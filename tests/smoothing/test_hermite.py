"""Spec 004 §5.2: Hermite render-delay buffer, DR nodes and the 8-step correction."""

from __future__ import annotations

import pytest

from lagless.smoothing import (
    DropReason,
    HermiteConfig,
    HermiteReceiver,
    HermiteSender,
    KinematicState,
)


def _cubic(t: float) -> KinematicState:
    return KinematicState(
        t=t,
        x=1.0 + 2.0 * t - 0.5 * t * t + 0.25 * t**3,
        y=-1.0 + 0.5 * t * t - 0.125 * t**3,
        vx=2.0 - t + 0.75 * t * t,
        vy=t - 0.375 * t * t,
        heading=0.1 * t,
    )


def _quadratic(t: float) -> KinematicState:
    return KinematicState(
        t=t, x=0.5 * 2.0 * t * t + 3.0 * t, y=-0.5 * t * t, vx=2.0 * t + 3.0, vy=-t
    )


def test_reproduces_cubic_path_exactly() -> None:
    cfg = HermiteConfig(render_delay=0.2, rtt_factor=0.0, extrapolation_time=0.0)
    assert cfg.payload_size == 29
    sender, receiver = HermiteSender(cfg), HermiteReceiver(cfg)
    checked = 0
    for k in range(150):
        t = k * 0.01
        update = sender.update(t, _cubic(t))
        if update is not None:
            assert len(update.payload) == 29
            receiver.process_update(update.payload, t, t)
        shown = receiver.display(t)
        if t >= 0.2:
            true = _cubic(t - 0.2)
            assert shown is not None
            assert shown.x == pytest.approx(true.x, abs=2e-4)
            assert shown.y == pytest.approx(true.y, abs=2e-4)
            assert shown.vx == pytest.approx(true.vx, abs=5e-3)
            checked += 1
    assert checked > 100
    assert all(not n.predicted for n in receiver.nodes)


def test_pure_dead_reckoning_constant_acceleration() -> None:
    cfg = HermiteConfig(rtt_factor=0.0, dr_order=2, extrapolation_time=1.0, correction_time=0.1)
    sender, receiver = HermiteSender(cfg), HermiteReceiver(cfg)
    errors: dict[int, float] = {}
    for k in range(100):
        t = k * 0.01
        update = sender.update(t, _quadratic(t))
        if update is not None:
            receiver.process_update(update.payload, t, t)
        shown = receiver.display(t)
        assert shown is not None
        errors[k] = abs(shown.x - _quadratic(t).x) + abs(shown.y - _quadratic(t).y)
    # The first update has no acceleration estimate (error at 0.05 s); each correction then
    # removes most of what is left, so the error decays geometrically down to the 1e-4
    # quantisation of the payload.
    assert errors[5] > 1e-3
    assert errors[50] < 1e-4
    assert errors[95] < 3e-5


def test_constant_velocity_dr_lags_acceleration() -> None:
    cfg = HermiteConfig(rtt_factor=0.0, dr_order=1, extrapolation_time=1.0, correction_time=0.0)
    receiver = HermiteReceiver(cfg)
    sender = HermiteSender(cfg)
    update = sender.update(0.0, _quadratic(0.0))
    assert update is not None
    receiver.process_update(update.payload, 0.0, 0.0)
    shown = receiver.display(0.5)
    assert shown is not None
    assert shown.x == pytest.approx(1.5, abs=1e-3)  # 3 m/s x 0.5 s; truth is 1.75


def test_eight_step_correction() -> None:
    cfg = HermiteConfig(rtt_factor=0.0, render_delay=0.05, dr_order=1, extrapolation_time=1.0)
    sender, receiver = HermiteSender(cfg), HermiteReceiver(cfg)
    p1 = sender.update(0.0, KinematicState(t=0.0, x=0.0, vx=1.0))
    assert p1 is not None
    receiver.process_update(p1.payload, 0.0, 0.0)
    assert [n.predicted for n in receiver.nodes] == [False, True]  # P1, P2 = DR(P1, 1 s)
    assert receiver.nodes[1].t == pytest.approx(1.0)
    before = [receiver.curve(t, 0.1) for t in (0.02, 0.05, 0.1)]
    # P3 disagrees with the prediction (x = 0.1 expected, 0.3 received).
    sender.update(0.1, KinematicState(t=0.1, x=0.3, vx=1.0))
    receiver.process_update(sender.create_update(), 0.1, 0.1)
    nodes = receiver.nodes
    assert [n.predicted for n in nodes] == [False, False, True]  # P1, P5, P4
    assert nodes[1].t == pytest.approx(0.1)
    assert nodes[2].t == pytest.approx(1.1)  # step 8: P4 at t(P3) + extrapolation_time
    assert nodes[2].values[0] == pytest.approx(1.3)  # step 7: P4 = P3 + v·E
    # Steps 4-5: P5 = old curve at t(P3), so the curve up to P5 is unchanged at first.
    assert nodes[1].at(0.1)[0] == pytest.approx(0.1, abs=1e-3)
    after = [receiver.curve(t, 0.1) for t in (0.02, 0.05, 0.1)]
    for a, b in zip(before, after, strict=True):
        assert a.x == pytest.approx(b.x, abs=1e-9)
    # Step 6: P5 moves to P3 over correction_time (0.1 s), linearly.
    assert nodes[1].at(0.15)[0] == pytest.approx(0.2, abs=1e-3)
    assert nodes[1].blending
    assert nodes[1].at(0.2)[0] == pytest.approx(0.3, abs=1e-3)
    assert not nodes[1].blending


def test_p5_keeps_curve_velocity() -> None:
    cfg = HermiteConfig(rtt_factor=0.0, dr_order=1, extrapolation_time=1.0)
    receiver, sender = HermiteReceiver(cfg), HermiteSender(cfg)
    sender.update(0.0, KinematicState(t=0.0, vx=2.0))
    receiver.process_update(sender.create_update(), 0.0, 0.0)
    sender.update(0.2, KinematicState(t=0.2, x=1.0, vx=-1.0))
    receiver.process_update(sender.create_update(), 0.2, 0.2)
    p5 = receiver.nodes[1].at(0.2)
    assert (p5[0], p5[2]) == pytest.approx((0.4, 2.0), abs=1e-3)


def test_eight_step_stale_dropped() -> None:
    cfg = HermiteConfig()
    sender, receiver = HermiteSender(cfg), HermiteReceiver(cfg)
    sender.update(0.5, KinematicState(t=0.5))
    newer = sender.create_update()
    sender.update(0.2, KinematicState(t=0.2))
    older = sender.create_update()
    assert receiver.process_update(newer, 0.5, 0.5)
    assert not receiver.process_update(older, 0.6, 0.6)  # step 3: t(P3) < t(P1)
    assert not receiver.process_update(newer, 0.7, 0.7)  # duplicate
    assert receiver.statistics().dropped[DropReason.STALE] == 2


def test_no_dr() -> None:
    cfg = HermiteConfig(extrapolation_time=0.0, rtt_factor=0.0)
    sender, receiver = HermiteSender(cfg), HermiteReceiver(cfg)
    for k in range(3):
        sender.update(k * 0.05, KinematicState(t=k * 0.05, x=float(k), vx=1.0))
        receiver.process_update(sender.create_update(), k * 0.05, k * 0.05)
    assert [n.values[0] for n in receiver.nodes] == pytest.approx([0.0, 1.0, 2.0])
    shown = receiver.display(0.1)
    assert shown is not None
    assert shown.x == pytest.approx(2.0)
    assert [n.values[0] for n in receiver.nodes] == pytest.approx([2.0])  # pruned up to render
    held = receiver.display(5.0)
    assert held is not None
    assert held.x == pytest.approx(2.0)  # render time past the last node: the car stops


def test_rtt_based_delay() -> None:
    cfg = HermiteConfig(render_delay=0.01, rtt_factor=0.5)
    receiver = HermiteReceiver(cfg)
    assert receiver.render_delay == pytest.approx(0.01)
    receiver.observe_link(rtt=0.2, jitter=0.01, loss=0.0)
    assert receiver.render_delay == pytest.approx(0.11)
