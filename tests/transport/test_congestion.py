"""Good/bad send-rate switch (spec 004 §2.3.4, Gaffer on Games flow control numbers)."""

from __future__ import annotations

import pytest

from lagless.transport.config import CongestionConfig
from lagless.transport.congestion import CongestionController, CongestionMode

T0 = 1000.0  # non-zero epoch: objects never assume now starts at 0
GOOD = (0.05, 0.0)  # rtt (s), loss
BAD_RTT = (0.4, 0.0)
BAD_LOSS = (0.05, 0.3)
GAFFER = CongestionConfig(initial_mode=CongestionMode.BAD)  # Gaffer on Games starts BAD


def feed(
    cc: CongestionController,
    sample: tuple[float, float],
    start: float,
    end: float,
    step: float = 0.1,
) -> float:
    t = start
    while t < end - 1e-9:
        cc.on_statistics(sample[0], sample[1], t)
        t += step
    return t


def test_starts_bad_then_recovers() -> None:
    cc = CongestionController(now=T0, config=GAFFER)
    assert cc.mode is CongestionMode.BAD
    assert cc.send_rate == 10.0
    assert cc.send_interval == pytest.approx(0.1)
    feed(cc, GOOD, T0, T0 + 3.9)
    assert cc.mode is CongestionMode.BAD  # penalty 4 s not served yet
    feed(cc, GOOD, T0 + 3.9, T0 + 4.1)
    assert cc.mode is CongestionMode.GOOD
    assert cc.send_rate == 30.0
    assert cc.next_send_time(T0 + 5.0) == pytest.approx(T0 + 5.0 + 1 / 30)


def test_bad_link_lowers_rate() -> None:
    cc = CongestionController(now=T0, config=GAFFER)
    t = feed(cc, GOOD, T0, T0 + 5.0)
    assert cc.send_rate == 30.0
    cc.on_statistics(*BAD_RTT, t)
    assert cc.mode is CongestionMode.BAD
    assert cc.send_rate == 10.0


def test_loss_alone_makes_link_bad() -> None:
    cc = CongestionController(now=T0, config=GAFFER)
    t = feed(cc, GOOD, T0, T0 + 5.0)
    cc.on_statistics(*BAD_LOSS, t)
    assert cc.mode is CongestionMode.BAD


def test_bad_sample_restarts_recovery() -> None:
    cc = CongestionController(now=T0, config=GAFFER)
    feed(cc, GOOD, T0, T0 + 3.0)
    cc.on_statistics(*BAD_RTT, T0 + 3.0)
    feed(cc, GOOD, T0 + 3.1, T0 + 6.5)
    assert cc.mode is CongestionMode.BAD  # only 3.4 s of unbroken good link
    feed(cc, GOOD, T0 + 6.5, T0 + 7.2)
    assert cc.mode is CongestionMode.GOOD


def test_flapping_doubles_penalty() -> None:
    cc = CongestionController(now=T0, config=GAFFER)
    t = feed(cc, GOOD, T0, T0 + 4.1)
    assert cc.mode is CongestionMode.GOOD
    cc.on_statistics(*BAD_RTT, t + 2.0)  # bad again within 10 s of recovering
    assert cc.penalty == 8.0
    t = feed(cc, GOOD, t + 2.1, t + 2.1 + 8.1)
    assert cc.mode is CongestionMode.GOOD
    cc.on_statistics(*BAD_RTT, t + 1.0)
    assert cc.penalty == 16.0
    cc2 = CongestionController(
        now=T0, config=CongestionConfig(max_penalty=10.0, initial_mode=CongestionMode.BAD)
    )
    for k in range(5):
        feed(cc2, GOOD, T0 + 100 * k, T0 + 100 * k + 11)
        cc2.on_statistics(*BAD_RTT, T0 + 100 * k + 11.5)
    assert cc2.penalty == 10.0  # capped


def test_penalty_halves() -> None:
    cc = CongestionController(now=T0, config=GAFFER)
    t = feed(cc, GOOD, T0, T0 + 4.05)
    assert cc.mode is CongestionMode.GOOD
    recovered = t - 0.1
    t = feed(cc, GOOD, t, recovered + 10.05)
    assert cc.penalty == 2.0
    t = feed(cc, GOOD, t, recovered + 20.05)
    assert cc.penalty == 1.0
    t = feed(cc, GOOD, t, recovered + 40.05)
    assert cc.penalty == 1.0  # floor: min_penalty
    cc.on_statistics(*BAD_RTT, t)  # long after recovering: not a flap
    assert cc.penalty == 1.0
    feed(cc, GOOD, t + 0.1, t + 1.25)
    assert cc.mode is CongestionMode.GOOD  # recovers after the 1 s penalty


def test_recovery_independent_of_report_rate() -> None:
    fast = CongestionController(now=T0, config=GAFFER)
    slow = CongestionController(now=T0, config=GAFFER)
    feed(fast, GOOD, T0, T0 + 4.5, step=0.01)
    feed(slow, GOOD, T0, T0 + 4.5, step=1.0)
    assert fast.mode is slow.mode is CongestionMode.GOOD


def test_starts_good_and_drops_on_bad_measure() -> None:
    cc = CongestionController(now=T0)
    assert cc.mode is CongestionMode.GOOD
    assert cc.send_rate == 30.0
    cc.on_statistics(*BAD_RTT, T0 + 0.1)
    assert cc.mode is CongestionMode.BAD
    assert cc.send_rate == 10.0


def test_rate_grows_only_while_held_back() -> None:
    cc = CongestionController(now=T0, config=CongestionConfig(rate_increase=5.0, slow_start=False))
    feed(cc, GOOD, T0, T0 + 2.0)  # 40 round trips, never held back: a game tick
    assert cc.send_rate == 30.0
    t = T0 + 2.0
    for _ in range(10):  # ten round trips (50 ms each, reported every 60 ms), held back
        cc.on_held_back()
        t += 0.06
        cc.on_statistics(*GOOD, t)
    assert cc.send_rate == pytest.approx(80.0)
    for _ in range(10):  # a queue is building (SRTT far above the minimum): no increase
        cc.on_held_back()
        t += 0.2
        cc.on_statistics(0.2, 0.0, t, rtt_min=0.05)
    assert cc.send_rate == pytest.approx(80.0)
    capped = CongestionController(now=T0, config=CongestionConfig(max_send_rate=40.0))
    for k in range(1, 20):
        capped.on_held_back()
        capped.on_acked(3, GOOD[0])
        capped.on_statistics(*GOOD, T0 + 0.06 * k)
    assert capped.send_rate == 40.0


def test_one_decrease_per_loss_event() -> None:
    cc = CongestionController(now=T0, config=CongestionConfig(good_send_rate=100.0))
    feed(cc, GOOD, T0, T0 + 1.0)
    cc.on_loss(T0 + 0.9, T0 + 1.0)
    assert cc.send_rate == 50.0
    cc.on_loss(T0 + 0.95, T0 + 1.01)  # sent before the decrease: same event
    assert cc.send_rate == 50.0
    cc.on_loss(T0 + 1.02, T0 + 1.1)  # sent after it: a new event
    assert cc.send_rate == 25.0
    for k in range(10):
        cc.on_loss(T0 + 2.0 + k, T0 + 2.0 + k)
    assert cc.send_rate == 10.0  # floor: the bad rate


def test_slow_start_doubles_until_the_first_loss() -> None:
    cc = CongestionController(now=T0, config=CongestionConfig(good_send_rate=100.0))
    assert cc.slow_start
    t = T0
    for _ in range(5):  # five held-back round trips of 50 ms, each acking a full window
        cc.on_held_back()
        cc.on_acked(round(cc.send_rate * GOOD[0]), GOOD[0])
        t += 0.06
        cc.on_statistics(*GOOD, t)
    assert cc.send_rate == pytest.approx(3200.0)  # a doubling per round trip
    cc.on_loss(t - 0.01, t)
    assert cc.send_rate == pytest.approx(1600.0)
    assert not cc.slow_start
    cc.on_held_back()
    cc.on_statistics(*GOOD, t + 0.06)
    assert cc.send_rate == pytest.approx(1700.0)  # a sixteenth of the rate, not a doubling
    for _ in range(200):
        cc.on_held_back()
        t += 0.06
        cc.on_statistics(*GOOD, t)
    assert cc.send_rate == 200_000.0  # the ceiling


def test_peer_backlog_is_not_congestion() -> None:
    cc = CongestionController(now=T0, config=CongestionConfig(good_send_rate=100.0))
    # a busy peer: smoothed RTT far above the 250 ms threshold, the path's minimum 1 ms
    for k in range(50):
        cc.on_held_back()
        cc.on_statistics(0.4, 0.0, T0 + 0.1 * k, rtt_min=0.001)
    assert cc.mode is CongestionMode.GOOD
    assert cc.send_rate == 100.0  # a queue is building: no growth either
    cc.on_statistics(0.4, 0.0, T0 + 6.0, rtt_min=0.3)  # the path itself is slow
    assert cc.mode is CongestionMode.BAD


def test_spurious_loss_undoes_its_decrease() -> None:
    cc = CongestionController(now=T0, config=CongestionConfig(good_send_rate=400.0))
    cc.on_loss(T0 + 0.5, T0 + 1.0, sequence=7)
    assert cc.send_rate == 200.0
    assert not cc.slow_start
    cc.on_spurious_loss(8)  # not the packet that caused the decrease
    assert cc.send_rate == 200.0
    cc.on_spurious_loss(7)
    assert cc.send_rate == 400.0
    assert cc.slow_start
    cc.on_spurious_loss(7)  # once only
    assert cc.send_rate == 400.0


def test_slow_start_grows_per_acked_packet() -> None:
    cc = CongestionController(now=T0, config=CongestionConfig(good_send_rate=90.0))
    cc.on_acked(16, 0.002)  # not held back: an app-limited sender never grows
    assert cc.send_rate == 90.0
    cc.on_held_back()
    cc.on_acked(16, 0.002)  # one batch of acks, not a round trip: 16 / 2 ms = +8000 packets/s
    assert cc.send_rate == pytest.approx(8090.0)
    cc.on_acked(4, 0.0001)  # a sub-millisecond RTT counts as 1 ms
    assert cc.send_rate == pytest.approx(12090.0)
    cc.on_acked(1000, 0.001)
    assert cc.send_rate == 200_000.0  # the ceiling
    cc.on_loss(T0 + 0.01, T0 + 0.02)
    assert not cc.slow_start
    rate = cc.send_rate
    cc.on_held_back()
    cc.on_acked(16, 0.002)  # after slow start acks no longer add to the rate
    assert cc.send_rate == rate
    bad = CongestionController(now=T0, config=CongestionConfig(initial_mode=CongestionMode.BAD))
    bad.on_held_back()
    bad.on_acked(16, 0.002)
    assert bad.send_rate == bad.config.bad_send_rate
