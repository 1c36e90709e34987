"""Sender triggers (spec 000 §2.7): thresholds, heartbeat, pre-reckoning, sensitive region."""

from __future__ import annotations

import math

import pytest

from lagless.errors import ConfigError
from lagless.smoothing import (
    DisConfig,
    DisSender,
    KinematicState,
    ThresholdConfig,
    ThresholdTrigger,
    TriggerReason,
)


def _sender(**thresholds: object) -> DisSender:
    return DisSender(DisConfig(order=1, thresholds=ThresholdConfig(**thresholds)))  # type: ignore[arg-type]


def test_position_threshold_is_strict() -> None:
    sender = _sender(position=0.5, heading=math.pi)
    first = sender.update(0.0, KinematicState(t=0.0))
    assert first is not None
    assert first.reason is TriggerReason.FIRST
    # Error exactly at the threshold: no update ("exceeds" is strict).
    assert sender.update(0.1, KinematicState(t=0.1, x=0.5)) is None
    update = sender.update(0.2, KinematicState(t=0.2, x=0.5 + 1e-3))
    assert update is not None
    assert update.reason is TriggerReason.POSITION
    # The ghost reset to the sent state: staying there sends nothing.
    assert sender.update(0.3, KinematicState(t=0.3, x=0.5 + 1e-3)) is None
    assert sender.sent == 2


def test_heading_threshold_is_strict() -> None:
    sender = _sender(position=10.0, heading=0.25)
    assert sender.update(0.0, KinematicState(t=0.0)) is not None
    assert sender.update(0.1, KinematicState(t=0.1, heading=0.25)) is None
    update = sender.update(0.2, KinematicState(t=0.2, heading=0.2501))
    assert update is not None
    assert update.reason is TriggerReason.HEADING


def test_ghost_follows_velocity_no_send() -> None:
    sender = _sender(position=0.01)
    assert sender.update(0.0, KinematicState(t=0.0, vx=2.0)) is not None
    for k in range(1, 50):
        t = k * 0.04
        assert sender.update(t, KinematicState(t=t, x=2.0 * t, vx=2.0)) is None


def test_heartbeat() -> None:
    sender = _sender(position=10.0, heartbeat=1.0)
    assert sender.update(0.0, KinematicState(t=0.0)) is not None
    assert sender.update(0.999, KinematicState(t=0.999)) is None
    update = sender.update(1.0, KinematicState(t=1.0))
    assert update is not None
    assert update.reason is TriggerReason.HEARTBEAT
    assert sender.update(1.5, KinematicState(t=1.5)) is None
    assert sender.update(2.0, KinematicState(t=2.0)) is not None


def test_prereckoning_start_stop_turn() -> None:
    sender = _sender(position=100.0, heading=math.pi, prereckoning=True)
    assert sender.update(0.0, KinematicState(t=0.0)) is not None
    assert sender.update(0.1, KinematicState(t=0.1)) is None
    start = sender.update(0.2, KinematicState(t=0.2, vx=1.0))
    assert start is not None
    assert start.reason is TriggerReason.START
    # A gentle turn (10° per frame) does not trigger; an 81° turn in one frame does.
    v = (math.cos(math.radians(10)), math.sin(math.radians(10)))
    assert sender.update(0.3, KinematicState(t=0.3, x=0.1, vx=v[0], vy=v[1])) is None
    v2 = (math.cos(math.radians(91)), math.sin(math.radians(91)))
    turn = sender.update(0.4, KinematicState(t=0.4, x=0.2, vx=v2[0], vy=v2[1]))
    assert turn is not None
    assert turn.reason is TriggerReason.TURN
    stop = sender.update(0.5, KinematicState(t=0.5, x=0.2))
    assert stop is not None
    assert stop.reason is TriggerReason.STOP


def test_prereckoning_off_does_not_trigger() -> None:
    sender = _sender(position=100.0, heading=math.pi, prereckoning=False)
    assert sender.update(0.0, KinematicState(t=0.0)) is not None
    assert sender.update(0.1, KinematicState(t=0.1, vx=1.0)) is None


def test_sensitive_region() -> None:
    cfg = ThresholdConfig(position=0.1, sensitive_radius=10.0, far_position=1.0, far_heading=0.5)
    assert cfg.limits(None) == (0.1, cfg.heading)
    assert cfg.limits(5.0) == (0.1, cfg.heading)
    assert cfg.limits(20.0) == (1.0, 0.5)
    trigger = ThresholdTrigger(cfg)
    ghost = KinematicState()
    assert trigger.check(0.0, KinematicState(), None) is TriggerReason.FIRST
    trigger.sent(0.0)
    far = trigger.check(0.1, KinematicState(x=0.5), ghost, observer_distance=20.0)
    near = trigger.check(0.2, KinematicState(x=0.5), ghost, observer_distance=5.0)
    assert far is None
    assert near is TriggerReason.POSITION


@pytest.mark.parametrize(
    ("field", "value"),
    [("position", 0.0), ("heading", -1.0), ("heartbeat", 0.0), ("turn_angle", 4.0)],
)
def test_config_validation(field: str, value: float) -> None:
    with pytest.raises(ConfigError, match=field):
        ThresholdConfig(**{field: value})  # type: ignore[arg-type]
