from __future__ import annotations

import numpy as np
import pytest

from lagless.errors import LocalProtocolError
from lagless.lab.realtime.metrics import (
    count_freezes,
    count_jumps,
    deviation_a,
    deviation_b,
    position_error,
    send_rate,
    smoothness,
    step_lengths,
    wire_sizes,
)


def test_position_error_and_deviation_a() -> None:
    error = position_error(
        np.zeros(3), np.zeros(3), np.array([3.0, 0.0, 1.0]), np.array([4.0, 2.0, 0.0])
    )
    assert error.tolist() == [5.0, 2.0, 1.0]
    assert deviation_a(error) == pytest.approx(8.0 / 3.0)
    assert np.isnan(deviation_a(np.array([])))


def test_smoothness() -> None:
    # steps 1, 1, 2: mean 4/3, population std sqrt(((1/3)^2 * 2 + (2/3)^2) / 3)
    x = np.array([0.0, 1.0, 2.0, 4.0])
    expected = np.sqrt(((1 / 3) ** 2 * 2 + (2 / 3) ** 2) / 3)
    assert smoothness(x, np.zeros(4)) == pytest.approx(expected)
    assert smoothness(np.array([1.0]), np.array([1.0])) == 0.0
    # a constant-speed path is perfectly smooth in any direction
    t = np.arange(10.0)
    assert smoothness(0.6 * t, 0.8 * t) == pytest.approx(0.0, abs=1e-12)


def test_deviation_b_is_the_difference_of_smoothness() -> None:
    t = np.arange(8.0)
    shown_x = np.array([0.0, 0.0, 2.0, 2.0, 4.0, 4.0, 6.0, 6.0])  # hold and jump, same mean speed
    assert deviation_b(t, np.zeros(8), shown_x, np.zeros(8)) == pytest.approx(
        smoothness(shown_x, np.zeros(8))
    )
    assert deviation_b(t, np.zeros(8), t + 5.0, np.zeros(8)) == pytest.approx(0.0)
    with pytest.raises(LocalProtocolError):
        deviation_b(t, t, t[:-1], t[:-1])


def test_jumps_and_freezes() -> None:
    smooth = np.full(20, 0.2)
    assert count_jumps(smooth, floor=0.05) == 0
    assert count_freezes(smooth, floor=0.05) == 0
    spiky = smooth.copy()
    spiky[10] = 1.0
    assert count_jumps(spiky, floor=0.05) == 1
    held = smooth.copy()
    held[[5, 12]] = 0.0
    assert count_freezes(held, floor=0.05) == 2
    # point-to-point: hold, hold, jump ... counts both kinds
    p2p = np.tile([0.0, 0.0, 0.5], 10)
    assert count_jumps(p2p, floor=0.05) > 0
    assert count_freezes(p2p, floor=0.05) > 0
    # a stationary path never freezes
    assert count_freezes(np.zeros(20), floor=0.05) == 0
    assert count_jumps(np.array([0.0, 9.0]), floor=0.05) == 0  # too short to judge


def test_rates() -> None:
    times = np.array([0.0, 0.5, 1.2, 1.4, 1.9])
    sizes = np.array([100.0, 100.0, 300.0, 300.0, 300.0])
    avg, peak = send_rate(times, sizes, start=0.0, duration=2.0)
    assert avg == pytest.approx(1100.0 / 2.0 / 1000.0)
    assert peak == pytest.approx(0.9)
    wire_avg, wire_peak = send_rate(times, wire_sizes(sizes), start=0.0, duration=2.0)
    assert wire_avg == pytest.approx((1100.0 + 5 * 28) / 2.0 / 1000.0)
    assert wire_peak == pytest.approx((900.0 + 3 * 28) / 1000.0)
    # a trailing partial window is ignored once one whole window exists
    _, peak = send_rate(np.array([0.1, 1.05]), np.array([10.0, 500.0]), start=0.0, duration=1.1)
    assert peak == pytest.approx(0.01)
    with pytest.raises(LocalProtocolError):
        send_rate(times, sizes, start=0.0, duration=0.0)


def test_step_lengths() -> None:
    assert step_lengths(np.array([0.0, 3.0]), np.array([0.0, 4.0])).tolist() == [5.0]
