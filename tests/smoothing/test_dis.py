"""DIS-DR (spec 000 §2.7): exact on its own motion model, capped time compensation, staleness."""

from __future__ import annotations

import math

import pytest

from lagless.smoothing import (
    ConvergenceConfig,
    DisConfig,
    DisReceiver,
    DisSender,
    DropReason,
    KinematicState,
    ThresholdConfig,
)

SNAP = ConvergenceConfig(kind="snap")
LOCAL = 100.0  # the receiver's local clock runs 100 s ahead of server time


def _truth_velocity(t: float) -> KinematicState:
    return KinematicState(t=t, x=1.5 + 2.0 * t, y=-0.5 - 1.25 * t, vx=2.0, vy=-1.25, heading=0.5)


def _truth_accel(t: float) -> KinematicState:
    return KinematicState(
        t=t,
        x=1.0 + 0.5 * t + 0.5 * 1.5 * t * t,
        y=2.0 - 1.0 * t + 0.5 * -0.75 * t * t,
        vx=0.5 + 1.5 * t,
        vy=-1.0 - 0.75 * t,
        ax=1.5,
        ay=-0.75,
        heading=0.25 + 0.5 * t,
        angular_velocity=0.5,
    )


@pytest.mark.parametrize(("order", "truth"), [(1, _truth_velocity), (2, _truth_accel)])
def test_dr_exact_on_own_model(order: int, truth: object) -> None:
    cfg = DisConfig(order=order, time_compensation=True, convergence=SNAP)
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    update = sender.update(0.0, truth(0.0))  # type: ignore[operator]
    assert update is not None
    latency = 0.2
    assert receiver.process_update(update.payload, LOCAL + latency, latency)
    for tau in (0.0, 0.1, 0.5, 2.0):
        shown = receiver.display(LOCAL + latency + tau)
        true = truth(latency + tau)  # type: ignore[operator]
        assert shown is not None
        assert shown.x == pytest.approx(true.x, abs=1e-3)
        assert shown.y == pytest.approx(true.y, abs=1e-3)
        assert shown.heading == pytest.approx(true.heading, abs=1e-5)
    # The sender never needs another update while the motion follows the model.
    for k in range(1, 40):
        assert sender.update(k * 0.05, truth(k * 0.05)) is None  # type: ignore[operator]


def test_order_one_misses_acceleration() -> None:
    cfg = DisConfig(order=1, convergence=SNAP)
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    update = sender.update(0.0, _truth_accel(0.0))
    assert update is not None
    receiver.process_update(update.payload, 0.0, 0.0)
    shown = receiver.display(1.0)
    assert shown is not None
    assert abs(shown.x - _truth_accel(1.0).x) == pytest.approx(0.75, abs=1e-3)


def test_time_compensation_capped() -> None:
    cfg = DisConfig(order=1, time_compensation=True, tc_cap=0.1, convergence=SNAP)
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    update = sender.update(0.0, _truth_velocity(0.0))
    assert update is not None
    receiver.process_update(update.payload, LOCAL + 0.5, 0.5)  # 500 ms old, cap 100 ms
    shown = receiver.display(LOCAL + 0.5)
    assert shown is not None
    assert shown.x == pytest.approx(_truth_velocity(0.1).x, abs=1e-3)
    shown_later = receiver.display(LOCAL + 0.7)
    assert shown_later is not None
    assert shown_later.x == pytest.approx(_truth_velocity(0.3).x, abs=1e-3)


def test_no_time_compensation_extrapolates_from_receipt() -> None:
    cfg = DisConfig(order=1, convergence=SNAP)
    assert cfg.payload_size == 25
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    update = sender.update(0.0, _truth_velocity(0.0))
    assert update is not None
    receiver.process_update(update.payload, LOCAL + 0.5, 0.5)
    shown = receiver.display(LOCAL + 0.5)
    assert shown is not None
    assert shown.x == pytest.approx(_truth_velocity(0.0).x, abs=1e-3)


def test_negative_age_counts_as_zero() -> None:
    cfg = DisConfig(order=1, time_compensation=True, convergence=SNAP)
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    update = sender.update(0.0, _truth_velocity(1.0))
    assert update is not None
    receiver.process_update(update.payload, LOCAL, 0.5)  # server clock behind the stamp
    shown = receiver.display(LOCAL)
    assert shown is not None
    assert shown.x == pytest.approx(_truth_velocity(1.0).x, abs=1e-3)


def test_stale_update_dropped() -> None:
    cfg = DisConfig(order=1, time_compensation=True, convergence=SNAP)
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    old = sender.update(0.0, _truth_velocity(0.0))
    new = sender.update(1.0, KinematicState(t=1.0, x=50.0))
    assert old is not None
    assert new is not None
    assert receiver.process_update(new.payload, LOCAL + 1.0, 1.0)
    assert not receiver.process_update(old.payload, LOCAL + 1.1, 1.1)
    assert not receiver.process_update(new.payload, LOCAL + 1.2, 1.2)
    assert receiver.statistics().dropped[DropReason.STALE] == 2
    shown = receiver.display(LOCAL + 1.2)
    assert shown is not None
    assert shown.x == pytest.approx(50.0)


def test_ghost_matches_receiver() -> None:
    cfg = DisConfig(order=2, convergence=SNAP, thresholds=ThresholdConfig(position=0.05))
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    for k in range(60):
        t = k * 0.04
        truth = KinematicState(
            t=t, x=math.sin(t), y=math.cos(2 * t), vx=math.cos(t), vy=-2 * math.sin(2 * t)
        )
        update = sender.update(t, truth)
        if update is not None:
            receiver.process_update(update.payload, t, t)
        ghost = sender.ghost(t)
        shown = receiver.display(t)
        assert ghost is not None
        assert shown is not None
        assert (shown.x, shown.y) == pytest.approx((ghost.x, ghost.y), abs=1e-12)
        assert math.hypot(truth.x - shown.x, truth.y - shown.y) <= 0.05 + 1e-9
    assert 3 < sender.sent < 60


def test_rotate_off_holds_heading() -> None:
    cfg = DisConfig(order=1, rotate=False, convergence=SNAP)
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    update = sender.update(0.0, KinematicState(heading=0.5, angular_velocity=1.0))
    assert update is not None
    receiver.process_update(update.payload, 0.0, 0.0)
    shown = receiver.display(2.0)
    assert shown is not None
    assert shown.heading == pytest.approx(0.5)


def test_order_zero_holds_position() -> None:
    cfg = DisConfig(order=0, time_compensation=True, convergence=SNAP)
    assert cfg.payload_size == 21
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    update = sender.update(0.0, _truth_velocity(0.0))
    assert update is not None
    receiver.process_update(update.payload, 0.5, 0.5)
    shown = receiver.display(3.0)
    assert shown is not None
    assert (shown.x, shown.y) == pytest.approx((1.5, -0.5))


def test_linear_convergence_between_updates() -> None:
    cfg = DisConfig(order=1, convergence=ConvergenceConfig(kind="linear", position_time=0.2))
    sender, receiver = DisSender(cfg), DisReceiver(cfg)
    first = sender.update(0.0, KinematicState(vx=1.0))
    assert first is not None
    receiver.process_update(first.payload, 0.0, 0.0)
    second = sender.update(1.0, KinematicState(t=1.0, x=2.0, vx=1.0))
    assert second is not None
    receiver.process_update(second.payload, 1.0, 1.0)
    mid = receiver.display(1.1)
    end = receiver.display(1.2)
    assert mid is not None
    assert end is not None
    # Halfway between the displayed 1.0 and the convergence point 2.2.
    assert mid.x == pytest.approx(1.6, abs=1e-3)
    assert not mid.converged
    assert end.x == pytest.approx(2.2, abs=1e-3)
    assert end.converged
