"""X4 PlayerController convergence (spec 003 §4.3), including the §7.2 #15 worked example."""

from __future__ import annotations

import pytest

from lagless.smoothing import DropReason, KinematicState, X4Config, X4Receiver, X4Sender


def _send(sender: X4Sender, now: float, state: KinematicState) -> bytes:
    sender.update(now, state)
    return sender.create_update()


def test_worked_example() -> None:
    cfg = X4Config(horizon=0.2)
    assert cfg.payload_size == 33
    sender, receiver = X4Sender(cfg), X4Receiver(cfg)
    receiver.process_update(_send(sender, 0.0, KinematicState(x=1010.0)), 0.0, 0.0)
    at_rest = receiver.display(1.0)
    assert at_rest is not None
    assert at_rest.x == pytest.approx(1010.0)
    receiver.process_update(_send(sender, 1.0, KinematicState(x=1000.0, vx=100.0)), 1.0, 1.0)
    start, mid, end, later = (receiver.display(1.0 + d) for d in (0.0, 0.05, 0.1, 0.2))
    assert start is not None
    assert mid is not None
    assert end is not None
    assert later is not None
    assert start.x == pytest.approx(1010.0)
    assert mid.vx == pytest.approx(200.0)  # (1030 - 1010) / 0.1
    assert mid.x == pytest.approx(1020.0)
    assert end.x == pytest.approx(1030.0)  # target = 1000 + 100·0.2 + 100·0.1
    assert later.vx == pytest.approx(100.0)
    assert later.x == pytest.approx(1040.0)


def test_rotation_converges_too() -> None:
    cfg = X4Config(horizon=0.2)
    sender, receiver = X4Sender(cfg), X4Receiver(cfg)
    receiver.process_update(_send(sender, 0.0, KinematicState(heading=0.0)), 0.0, 0.0)
    state = KinematicState(heading=0.2, angular_velocity=1.0)
    receiver.process_update(_send(sender, 1.0, state), 1.0, 1.0)
    end = receiver.display(1.1)
    assert end is not None
    assert end.heading == pytest.approx(0.5)  # 0.2 + 1.0·0.3


def test_unchanged_not_new() -> None:
    cfg = X4Config()
    sender, receiver = X4Sender(cfg), X4Receiver(cfg)
    data = _send(sender, 0.0, KinematicState(x=1.0, vx=1.0))
    assert receiver.process_update(data, 0.0, 0.0)
    assert not receiver.process_update(data, 0.1, 0.1)
    assert receiver.statistics().dropped[DropReason.UNCHANGED] == 1


def test_zero_horizon_snaps() -> None:
    cfg = X4Config(horizon=0.0)
    sender, receiver = X4Sender(cfg), X4Receiver(cfg)
    receiver.process_update(_send(sender, 0.0, KinematicState(x=5.0)), 0.0, 0.0)
    receiver.process_update(_send(sender, 1.0, KinematicState(x=1.0, vx=2.0)), 1.0, 1.0)
    shown = receiver.display(1.5)
    assert shown is not None
    assert shown.x == pytest.approx(2.0)


def test_horizon_estimated_from_arrivals() -> None:
    cfg = X4Config(default_horizon=0.5)
    sender, receiver = X4Sender(cfg), X4Receiver(cfg)
    assert receiver.horizon == 0.5
    for k in range(40):
        t = k * 0.1
        receiver.process_update(_send(sender, t, KinematicState(t=t, x=t, vx=1.0)), t, t)
    assert receiver.horizon == pytest.approx(0.1, abs=1e-6)


def test_order_two_uses_acceleration() -> None:
    cfg = X4Config(horizon=0.0, dr_order=2)
    sender, receiver = X4Sender(cfg), X4Receiver(cfg)
    receiver.process_update(_send(sender, 0.0, KinematicState(ax=2.0)), 0.0, 0.0)
    shown = receiver.display(1.0)
    assert shown is not None
    assert shown.x == pytest.approx(1.0)
