from __future__ import annotations

import math

import pytest

from lagless.errors import LocalProtocolError
from lagless.netsim import Scheduler


def test_events_run_in_time_order_regardless_of_insertion() -> None:
    sched = Scheduler(start=10.0)
    seen: list[tuple[str, float]] = []
    for name, when in [("c", 13.0), ("a", 11.0), ("d", 14.5), ("b", 12.0)]:
        sched.call_at(when, lambda n=name: seen.append((n, sched.now)))
    sched.run()
    assert seen == [("a", 11.0), ("b", 12.0), ("c", 13.0), ("d", 14.5)]
    assert sched.now == 14.5


def test_ties_run_in_insertion_order() -> None:
    sched = Scheduler()
    seen: list[int] = []
    for index in range(50):
        sched.call_at(1.0, seen.append, index)
    sched.call_at(0.5, seen.append, -1)
    sched.run()
    assert seen == [-1, *range(50)]


def test_call_later_is_relative_to_now() -> None:
    sched = Scheduler(start=100.0)
    seen: list[float] = []
    sched.call_later(2.5, lambda: seen.append(sched.now))
    sched.run(until=101.0)
    assert seen == []
    sched.call_later(0.5, lambda: seen.append(sched.now))
    sched.run()
    assert seen == [101.5, 102.5]


def test_cancel_stops_the_call_and_next_time_skips_it() -> None:
    sched = Scheduler()
    seen: list[str] = []
    first = sched.call_at(1.0, seen.append, "first")
    sched.call_at(2.0, seen.append, "second")
    first.cancel()
    assert first.cancelled
    assert sched.next_time() == 2.0
    sched.run()
    assert seen == ["second"]
    first.cancel()  # harmless after the fact


def test_run_until_leaves_clock_at_until() -> None:
    sched = Scheduler(start=5.0)
    seen: list[float] = []
    sched.call_at(6.0, seen.append, 6.0)
    sched.call_at(7.0, seen.append, 7.0)
    sched.call_at(7.0000001, seen.append, 7.0000001)
    sched.run(until=7.0)
    assert seen == [6.0, 7.0]
    assert sched.now == 7.0
    assert sched.next_time() == 7.0000001
    sched.run(until=20.0)
    assert sched.now == 20.0
    assert seen[-1] == 7.0000001
    sched.run(until=25.0)  # nothing due: the clock still moves
    assert sched.now == 25.0


def test_events_scheduled_while_running_run_in_the_same_window() -> None:
    sched = Scheduler()
    seen: list[float] = []

    def chain(depth: int) -> None:
        seen.append(sched.now)
        if depth:
            sched.call_later(0.25, chain, depth - 1)
            sched.call_later(0.0, seen.append, -sched.now)  # same instant: after what is due

    sched.call_at(0.0, chain, 3)
    sched.run(until=0.6)
    assert seen == [0.0, -0.0, 0.25, -0.25, 0.5, -0.5]
    assert sched.next_time() == 0.75


def test_step_and_next_time() -> None:
    sched = Scheduler()
    assert sched.next_time() is None
    assert sched.step() is False
    seen: list[int] = []
    sched.call_at(3.0, seen.append, 1)
    sched.call_at(4.0, seen.append, 2)
    assert sched.step() is True
    assert (seen, sched.now, sched.next_time()) == ([1], 3.0, 4.0)
    assert sched.step() is True
    assert sched.step() is False
    assert seen == [1, 2]


def test_scheduling_in_the_past_raises() -> None:
    sched = Scheduler(start=10.0)
    with pytest.raises(LocalProtocolError, match="when"):
        sched.call_at(9.999, print)
    with pytest.raises(LocalProtocolError, match="when"):
        sched.call_at(math.nan, print)
    with pytest.raises(LocalProtocolError, match="delay"):
        sched.call_later(-0.001, print)
    with pytest.raises(LocalProtocolError, match="until"):
        sched.run(until=9.0)
    sched.call_at(10.0, print)  # exactly now is allowed


def test_cancelled_handle_is_removed_before_step() -> None:
    sched = Scheduler()
    seen: list[int] = []
    handles = [sched.call_at(1.0, seen.append, i) for i in range(5)]
    for handle in handles[:4]:
        handle.cancel()
    assert sched.step() is True
    assert seen == [4]
    assert sched.step() is False
