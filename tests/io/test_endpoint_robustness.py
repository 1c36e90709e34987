"""The real-UDP endpoints pump once per batch, bound their queue, and survive a raising object.

Datagrams sent on loopback are in the receive buffer when ``sendto`` returns, so every test below
queues its input first and then lets the loop run: the outcomes do not depend on timing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.io import endpoint as endpoint_module
from lagless.io.endpoint import ERROR_RETRY, AsyncEndpoint, PollEndpoint, open_endpoint
from tests.io.fake import Fake, blast

WAIT = 5.0  # seconds: generous bound for "eventually"; a healthy run takes milliseconds


async def _until(condition: Callable[[], bool]) -> None:
    """Let the loop run until ``condition()`` holds (fails the test after WAIT seconds)."""
    async with asyncio.timeout(WAIT):
        while not condition():
            await asyncio.sleep(0.001)


def test_one_pump_per_readiness_batch() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            pumps = ep.obj.pumps
            blast(ep.address, [f"ev {i}".encode() for i in range(50)])
            events = await ep.receive_batch(timeout=WAIT)
            assert events == [f"ev {i}".encode() for i in range(50)]
            await asyncio.sleep(0.01)  # the pump is queued behind the task the events woke
            assert ep.obj.pumps == pumps + 1
            stats = ep.statistics()
            assert stats.datagrams_received == 50
            assert stats.queued_events == 0

    asyncio.run(main())


def test_events_reach_the_app_before_the_pump_and_an_answer_pumps_once() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            pumps = ep.obj.pumps
            blast(ep.address, [b"ev ping"])
            assert await ep.receive(timeout=WAIT) == b"ev ping"
            assert ep.obj.pumps == pumps  # the pump is queued behind this task
            ep.call(lambda fake: fake.push(b"answered"))  # the answer pumps at once
            assert ep.obj.pumps == pumps + 1
            await asyncio.sleep(0.01)  # the deferred pump found nothing left to do
            assert ep.obj.pumps == pumps + 1
            assert ep.receive_nowait() == b"answered"

    asyncio.run(main())


def test_the_deferred_pump_sends_what_the_datagrams_produced() -> None:
    async def main() -> None:
        async with (
            open_endpoint(Fake()) as server,
            open_endpoint(Fake()) as client,
        ):
            client.call(lambda fake: fake.outbox.append((b"echo 1", server.address)))
            # nobody on the server side calls anything: its deferred pump sends the echo
            assert await client.receive(timeout=WAIT) == b"ev echo 1"
            assert server.obj.received == [b"echo 1"]

    asyncio.run(main())


def test_a_later_deadline_keeps_the_armed_timer_and_is_still_met() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            start = ep.now()
            ep.obj.deadline = start + 0.05
            ep.flush()
            ep.obj.deadline = start + 0.15  # later: the 50 ms timer is kept, not re-armed
            ep.flush()
            pumps = ep.obj.pumps
            await asyncio.sleep(0.1)
            assert ep.obj.timers == []  # it fired early, saw the later deadline and re-armed
            assert ep.obj.pumps == pumps  # without a pump: every input was pumped already
            await _until(lambda: bool(ep.obj.timers))
            assert ep.obj.timers[0] >= start + 0.15

    asyncio.run(main())


@pytest.mark.parametrize("ahead", [0.0003, 0.0007, 0.0021])
def test_uvloop_timer_fires_once(ahead: float) -> None:
    """uvloop rounds timers to whole milliseconds: a deadline ``ahead`` s away is met in one pump.

    Armed at the deadline itself, a timer less than half a millisecond away fired at once,
    found nothing due and was re-armed, about 300 times before ``loop.time()`` got there.
    """
    import uvloop

    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            await asyncio.sleep(0)
            deadline = ep.now() + ahead
            ep.obj.deadline = deadline
            ep.flush()
            pumps = ep.obj.pumps
            await _until(lambda: bool(ep.obj.timers))
            assert ep.obj.timers[0] >= deadline
            assert ep.obj.pumps - pumps <= 2  # the timer's pump (and at most one early one)

    uvloop.run(main())


def test_a_flood_is_read_in_batches_of_drain_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(endpoint_module, "DRAIN_BATCH", 16)  # small: the kernel buffer holds it
    count = 16 + 4

    async def main() -> None:
        async with open_endpoint(Fake(), max_events=None) as ep:
            pumps = ep.obj.pumps
            blast(ep.address, [b"x"] * count)
            await _until(lambda: len(ep.obj.received) == count)
            assert ep.obj.pumps == pumps + 2

    asyncio.run(main())


def test_poll_pump_pumps_once_for_datagrams_and_timer() -> None:
    with PollEndpoint(Fake()) as ep:
        ep.call(lambda fake: setattr(fake, "deadline", ep.now()))
        pumps = ep.obj.pumps
        blast(ep.address, [b"ev a", b"ev b", b"echo"])
        assert ep.pump() == [b"ev a", b"ev b"]
        assert ep.obj.pumps == pumps + 1
        assert len(ep.obj.timers) == 1


def test_full_queue_pauses_reading_and_loses_nothing() -> None:
    sent = [f"ev {i}".encode() for i in range(50)]

    async def main() -> None:
        async with open_endpoint(Fake(period=0.005), max_events=8, resume_events=2) as ep:
            ep.call(lambda fake: setattr(fake, "deadline", ep.now()))
            blast(ep.address, sent)
            await _until(lambda: ep.paused)
            assert ep.pauses == 1
            assert len(ep.obj.received) == 8  # read only what the queue has room for
            timers = len(ep.obj.timers)
            await _until(lambda: len(ep.obj.timers) > timers + 2)  # timers run while paused
            assert len(ep.obj.received) == 8
            got: list[object] = [await ep.receive() for _ in range(5)]
            still_paused = ep.paused  # 3 left, resume_events is 2
            got.append(await ep.receive())
            assert (still_paused, ep.paused) == (True, False)
            while len(got) < len(sent):
                got += await ep.receive_batch(timeout=WAIT)
            assert got == sent
            assert ep.pauses >= len(sent) // 8
            assert ep.statistics().pauses == ep.pauses

    asyncio.run(main())


def test_unbounded_queue_never_pauses() -> None:
    async def main() -> None:
        async with open_endpoint(Fake(), max_events=None) as ep:
            blast(ep.address, [b"ev"] * 100)
            await _until(lambda: len(ep.obj.received) == 100)
            assert ep.pauses == 0
            assert len(await ep.receive_batch()) == 100

    asyncio.run(main())


@pytest.mark.parametrize(("max_events", "resume_events"), [(0, None), (8, 8), (8, -1)])
def test_bad_queue_bounds_are_refused(max_events: int, resume_events: int | None) -> None:
    async def main() -> None:
        with pytest.raises(ConfigError):
            open_endpoint(Fake(), max_events=max_events, resume_events=resume_events)

    asyncio.run(main())


def test_raising_receive_is_logged_counted_and_the_batch_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            blast(ep.address, [b"ev 1", b"boom", b"ev 2"])
            got: list[object] = []
            while len(got) < 2:
                got += await ep.receive_batch(timeout=WAIT)
            assert got == [b"ev 1", b"ev 2"]
            assert ep.errors == 1

    with caplog.at_level(logging.ERROR):
        asyncio.run(main())
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert record.name == "lagless.io"
    assert "receive_datagram" in record.getMessage()
    assert record.exc_info is not None


def test_raising_timer_is_rearmed(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        async with open_endpoint(Fake(period=0.01)) as ep:
            ep.obj.timer_raises = 3
            ep.call(lambda fake: setattr(fake, "deadline", ep.now()))
            await _until(lambda: len(ep.obj.timers) >= 6)  # 3 failures, then a healthy timer
            assert ep.errors == 3
            gaps = [b - a for a, b in zip(ep.obj.timers[:3], ep.obj.timers[1:4], strict=True)]
            assert all(gap >= ERROR_RETRY * 0.9 for gap in gaps)  # no busy retry loop

    with caplog.at_level(logging.ERROR):
        asyncio.run(main())
    assert [r.name for r in caplog.records if r.levelno >= logging.ERROR] == ["lagless.io"] * 3
    assert not [r for r in caplog.records if r.name == "asyncio"]


def test_raising_pump_is_retried_and_reading_goes_on() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            ep.obj.send_raises = 1
            blast(ep.address, [b"echo 1"])
            await _until(lambda: ep.errors == 1)
            with_reply = Fake()
            async with open_endpoint(with_reply) as peer:
                peer.call(lambda fake: fake.outbox.append((b"ev from peer", ep.address)))
                assert await ep.receive(timeout=WAIT) == b"ev from peer"
            assert ep.errors == 1

    asyncio.run(main())


def test_call_pumps_even_when_the_verb_raises() -> None:
    def verb(fake: Fake) -> None:
        fake.push("before the bug")
        raise LocalProtocolError("bad verb")

    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            with pytest.raises(LocalProtocolError):
                ep.call(verb)
            assert ep.receive_nowait() == "before the bug"

    asyncio.run(main())


def test_receive_fast_path_does_not_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    async def no_wait(deadline: float | None) -> None:
        raise AssertionError("waited with an event queued")

    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            ep.call(lambda fake: fake.push(1, 2, "three", 4))
            monkeypatch.setattr(ep, "_wait", no_wait)
            assert await ep.receive(timeout=1.0) == 1
            assert await ep.wait_for(str, timeout=1.0) == "three"
            assert await ep.receive_batch(timeout=1.0) == [4]

    asyncio.run(main())


def test_timed_out_and_cancelled_waits_leave_nothing_behind_and_others_still_wake() -> None:
    """A wait that times out or is cancelled is forgotten; a concurrent one still gets events."""

    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            for _ in range(200):  # an application polling with a short timeout on a quiet link
                with pytest.raises(TimeoutError):
                    await ep.receive(timeout=0.0)
            cancelled = asyncio.ensure_future(ep.receive())
            patient = asyncio.ensure_future(ep.receive_batch(timeout=WAIT))
            hasty = asyncio.ensure_future(ep.receive(timeout=0.01))
            await asyncio.sleep(0)
            cancelled.cancel()
            with pytest.raises(TimeoutError):
                await hasty
            assert not patient.done()
            assert len(ep._waiters) == 1  # only the patient one is still waiting
            ep.call(lambda fake: fake.push("late"))
            assert await patient == ["late"]
            assert cancelled.cancelled()
            assert ep._waiters == []
            ep.call(lambda fake: fake.push("again"))
            assert await ep.receive(timeout=WAIT) == "again"

    asyncio.run(main())


def test_receive_batch_respects_its_limit_and_timeout() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            ep.call(lambda fake: fake.push(*range(10)))
            assert await ep.receive_batch(max_events=4) == [0, 1, 2, 3]
            assert await ep.receive_batch() == [4, 5, 6, 7, 8, 9]
            with pytest.raises(TimeoutError):
                await ep.receive_batch(timeout=0.01)
            with pytest.raises(LocalProtocolError):
                await ep.receive_batch(max_events=0)

    asyncio.run(main())


def test_wait_for_skips_other_kinds_arriving_later() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            waiter = asyncio.ensure_future(ep.wait_for(str, timeout=WAIT))
            await asyncio.sleep(0)
            ep.call(lambda fake: fake.push(1, 2))
            await asyncio.sleep(0)
            assert not waiter.done()
            ep.call(lambda fake: fake.push("found", 3))
            assert await waiter == "found"
            assert ep.receive_nowait() == 3

    asyncio.run(main())


def test_close_wakes_a_waiting_receiver_but_queued_events_are_still_delivered() -> None:
    async def main() -> None:
        ep: AsyncEndpoint[Fake] = open_endpoint(Fake())
        waiter = asyncio.ensure_future(ep.receive())
        await asyncio.sleep(0)
        ep.close()
        with pytest.raises(LocalProtocolError):
            await waiter
        ep.close()  # idempotent

        other = open_endpoint(Fake())
        other.call(lambda fake: fake.push("last words"))
        other.close()
        assert await other.receive() == "last words"
        with pytest.raises(LocalProtocolError):
            await other.receive()

    asyncio.run(main())


def test_poll_wait_wakes_for_a_datagram() -> None:
    with PollEndpoint(Fake()) as ep:
        assert ep.wait(0) is False
        blast(ep.address, [b"ev"])
        assert ep.wait(WAIT) is True
        assert ep.pump() == [b"ev"]


def test_poll_wait_wakes_for_the_next_deadline() -> None:
    with PollEndpoint(Fake()) as ep:
        deadline = ep.now() + 0.02
        ep.call(lambda fake: setattr(fake, "deadline", deadline))
        assert ep.next_deadline == deadline
        assert ep.wait(WAIT) is False  # returns at the deadline, long before WAIT
        assert ep.now() >= deadline
        ep.pump()
        assert len(ep.obj.timers) == 1
        assert ep.next_deadline is None


def test_poll_pump_survives_a_raising_object(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR), PollEndpoint(Fake()) as ep:
        ep.obj.timer_raises = 1
        ep.call(lambda fake: setattr(fake, "deadline", ep.now()))
        blast(ep.address, [b"boom", b"ev"])
        assert ep.pump() == [b"ev"]
        assert ep.errors == 2
        assert ep.next_deadline is not None  # the failed timer is retried
    assert len([r for r in caplog.records if r.name == "lagless.io"]) == 2


def test_a_handler_answers_inside_the_read_callback_and_the_batch_pumps_once() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as server, open_endpoint(Fake()) as client:
            seen: list[object] = []

            def answer(event: object) -> None:
                assert isinstance(event, bytes)
                seen.append(event)
                server.obj.outbox.append((b"ev re " + event, client.address))

            server.set_handler(answer)
            pumps = server.obj.pumps
            blast(server.address, [f"ev {i}".encode() for i in range(20)])
            got: list[object] = []
            while len(got) < 20:
                got += await client.receive_batch(timeout=WAIT)
            assert seen == [f"ev {i}".encode() for i in range(20)]
            assert got == [f"ev re ev {i}".encode() for i in range(20)]
            assert server.obj.pumps == pumps + 1  # 20 datagrams on loopback: one read, one pump
            assert server.receive_nowait() is None  # nothing was queued for a task
            await asyncio.sleep(0.01)
            assert server.obj.pumps == pumps + 1  # and no deferred pump ran

    asyncio.run(main())


def test_a_raising_handler_is_logged_and_the_next_event_is_handled(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> list[object]:
        async with open_endpoint(Fake()) as ep:
            seen: list[object] = []

            def handler(event: object) -> None:
                if event == b"ev bad":
                    raise RuntimeError("handler bug")
                seen.append(event)

            ep.set_handler(handler)
            blast(ep.address, [b"ev 1", b"ev bad", b"ev 2"])
            await _until(lambda: len(seen) == 2)
            assert ep.errors == 1
            return seen

    with caplog.at_level(logging.ERROR, logger="lagless.io"):
        assert asyncio.run(main()) == [b"ev 1", b"ev 2"]
    assert any("the event handler raised" in r.getMessage() for r in caplog.records)


def test_events_of_an_application_call_reach_the_handler_after_the_call() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            seen: list[object] = []
            ep.set_handler(seen.append)
            ep.call(lambda fake: fake.push(1, 2))
            assert seen == []  # never inside the caller's call
            await _until(lambda: seen == [1, 2])

    asyncio.run(main())


def test_a_handler_that_calls_the_endpoint_does_not_nest_and_loses_nothing() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            seen: list[object] = []
            depth = [0, 0]  # current, deepest

            def handler(event: object) -> None:
                depth[0] += 1
                depth[1] = max(depth)
                seen.append(event)
                if event == b"ev 1":
                    ep.call(lambda fake: fake.push("from the handler"))
                depth[0] -= 1

            ep.set_handler(handler)
            blast(ep.address, [b"ev 1", b"ev 2"])
            await _until(lambda: len(seen) == 3)
            assert seen == [b"ev 1", b"ev 2", "from the handler"]
            assert depth[1] == 1

    asyncio.run(main())


def test_handler_swaps_queue_and_refuse_a_second_handler() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            ep.call(lambda fake: fake.push("queued before"))
            seen: list[object] = []
            ep.set_handler(seen.append)
            await _until(lambda: seen == ["queued before"])
            with pytest.raises(LocalProtocolError, match="already has an event handler"):
                ep.set_handler(print)
            ep.set_handler(seen.append)  # the same one again is fine
            ep.set_handler(None)
            ep.call(lambda fake: fake.push("after"))
            assert await ep.receive(timeout=WAIT) == "after"
            assert ep.handler is None

    asyncio.run(main())


def test_wait_closed_returns_when_the_endpoint_closes() -> None:
    async def main() -> None:
        ep = open_endpoint(Fake())
        waiter = asyncio.ensure_future(ep.wait_closed())
        await asyncio.sleep(0.01)
        assert not waiter.done()
        ep.close()
        await asyncio.wait_for(waiter, WAIT)
        await asyncio.wait_for(ep.wait_closed(), WAIT)  # at once when closed already

    asyncio.run(main())


class _Batched(Fake):
    """A Fake that also offers the batch form of next_event."""

    def __init__(self) -> None:
        super().__init__()
        self.takes = 0

    def take_events(self) -> list[object]:
        self.takes += 1
        out = list(self.events)
        self.events.clear()
        return out


def test_the_driver_takes_events_in_one_call_when_the_object_offers_it() -> None:
    async def main() -> None:
        async with open_endpoint(_Batched()) as ep:
            takes = ep.obj.takes
            blast(ep.address, [f"ev {i}".encode() for i in range(10)])
            assert await ep.receive_batch(timeout=WAIT) == [f"ev {i}".encode() for i in range(10)]
            assert ep.obj.takes == takes + 1  # one call for the ten events of the read

    asyncio.run(main())


def test_a_handler_that_removes_itself_leaves_the_rest_to_receive() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            seen: list[object] = []

            def once(event: object) -> None:
                seen.append(event)
                ep.set_handler(None)

            ep.set_handler(once)
            waiting = asyncio.ensure_future(ep.receive_batch(timeout=WAIT))
            await asyncio.sleep(0.01)  # the task waits for a wake-up, not on the fast path
            blast(ep.address, [b"ev 1", b"ev 2", b"ev 3"])
            assert await waiting == [b"ev 2", b"ev 3"]  # woken for what the handler left
            assert seen == [b"ev 1"]

    asyncio.run(main())
