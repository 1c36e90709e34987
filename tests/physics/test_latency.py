"""Spec 004's receive-side latency (Gl. 5.1): uniform in [L - V/2, L + V/2], clamped at 0."""

from __future__ import annotations

import random

import pytest

from lagless.errors import ConfigError
from lagless.physics import ReceiveDelay
from lagless.physics.latency import MAX_HELD


def test_delay_is_uniform_around_the_latency() -> None:
    delay = ReceiveDelay(0.08, 0.04, random.Random(1))
    for k in range(2000):
        delay.hold(k.to_bytes(2, "big"), ("a", 1), 0.0)
    times = []
    while (due := delay.next_release()) is not None:
        times.extend(due for _ in delay.release(due))
    assert len(times) == 2000
    assert min(times) >= 0.06
    assert max(times) < 0.10
    assert sum(times) / len(times) == pytest.approx(0.08, abs=0.002)
    assert times == sorted(times)


def test_clamped_at_zero_and_inactive_without_latency() -> None:
    delay = ReceiveDelay(0.0, 0.1, random.Random(2))
    assert delay.active
    for _ in range(200):
        delay.hold(b"x", ("a", 1), 5.0)
    assert delay.next_release() == 5.0  # about half the draws are negative: no delay
    assert not ReceiveDelay(0.0, 0.0, random.Random(3)).active


def test_bounded() -> None:
    delay = ReceiveDelay(1.0, 0.0, random.Random(4))
    for _ in range(MAX_HELD + 5):
        delay.hold(b"x", ("a", 1), 0.0)
    assert delay.dropped == 5
    assert len(delay.release(2.0)) == MAX_HELD


def test_rejects_negative() -> None:
    with pytest.raises(ConfigError, match="latency"):
        ReceiveDelay(-0.1, 0.0, random.Random(5))
