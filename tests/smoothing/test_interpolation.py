"""Interpolation with a position history (spec 000 §2.9): exact on lines, pruning, starving."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.smoothing import (
    DropReason,
    InterpolationConfig,
    InterpolationReceiver,
    InterpolationSender,
    KinematicState,
)

OFFSET = 50.0  # receiver local clock = server time + 50 s
LATENCY = 0.1


def _truth(t: float) -> KinematicState:
    return KinematicState(t=t, x=2.0 + 1.5 * t, y=-3.0 * t, heading=0.2 + 0.1 * t)


def _run(cfg: InterpolationConfig, until: float, frame: float = 0.01) -> InterpolationReceiver:
    sender, receiver = InterpolationSender(cfg), InterpolationReceiver(cfg)
    pending: list[tuple[float, bytes]] = []
    steps = round(until / frame)
    for k in range(steps + 1):
        t = k * frame
        update = sender.update(t, _truth(t))
        if update is not None:
            assert len(update.payload) == 21
            pending.append((t + LATENCY, update.payload))
        while pending and pending[0][0] <= t + 1e-12:
            _, data = pending.pop(0)
            receiver.process_update(data, t + OFFSET, t)
    return receiver


def test_exact_on_linear_motion() -> None:
    cfg = InterpolationConfig(update_interval=0.25, delta_time=0.4)
    sender, receiver = InterpolationSender(cfg), InterpolationReceiver(cfg)
    frame = 0.04
    checked = 0
    for k in range(100):
        t = k * frame
        update = sender.update(t, _truth(t))
        if update is not None:
            receiver.process_update(update.payload, t + LATENCY + OFFSET, t + LATENCY)
        shown = receiver.display(t + LATENCY + OFFSET)
        if shown is not None and t + LATENCY - 0.4 >= 0.0:
            true = _truth(t + LATENCY - 0.4)
            assert shown.x == pytest.approx(true.x, abs=1e-3)
            assert shown.y == pytest.approx(true.y, abs=1e-3)
            assert shown.heading == pytest.approx(true.heading, abs=1e-6)
            assert shown.vx == pytest.approx(1.5, abs=1e-3)
            checked += 1
    assert checked > 80
    assert len(receiver.history) <= 3  # pruned behind the target


def test_starvation() -> None:
    # The update stamped 1.0 arrives at 1.1; nothing newer has arrived by 1.2.
    hold = _run(InterpolationConfig(update_interval=0.25, delta_time=0.0), until=1.2)
    shown = hold.display(OFFSET + 1.2)
    assert shown is not None
    assert shown.x == pytest.approx(_truth(1.0).x, abs=1e-3)
    assert not shown.converged
    extra = _run(
        InterpolationConfig(update_interval=0.25, delta_time=0.0, starve="extrapolate"), until=1.2
    )
    shown = extra.display(OFFSET + 1.2)
    assert shown is not None
    assert shown.x == pytest.approx(_truth(1.2).x, abs=1e-3)


def test_before_first_entry_holds_and_stale() -> None:
    cfg = InterpolationConfig(update_interval=0.25, delta_time=1.0)
    sender, receiver = InterpolationSender(cfg), InterpolationReceiver(cfg)
    assert receiver.display(0.0) is None
    first = sender.update(0.0, _truth(0.0))
    assert first is not None
    receiver.process_update(first.payload, 0.1, 0.1)
    shown = receiver.display(0.2)
    assert shown is not None
    assert shown.x == pytest.approx(2.0)
    assert not receiver.process_update(first.payload, 0.3, 0.3)
    assert receiver.statistics().dropped[DropReason.STALE] == 1


def test_history_bounded() -> None:
    cfg = InterpolationConfig(update_interval=0.01, delta_time=100.0, max_history=8)
    receiver = _run(cfg, until=1.0)
    assert len(receiver.history) == 8


def test_config_validation() -> None:
    with pytest.raises(ConfigError, match="update_interval"):
        InterpolationConfig(update_interval=0.0)
    with pytest.raises(ConfigError, match="starve"):
        InterpolationConfig(starve="jump")  # type: ignore[arg-type]
