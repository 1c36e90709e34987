"""serve_events hands every event to the handler; a failing handler is reported, never fatal."""

from __future__ import annotations

import asyncio
import logging

import pytest

from lagless.io import ServeStatistics, open_endpoint, serve_events
from tests.io.fake import Fake, blast

WAIT = 5.0  # seconds: generous bound for "eventually"; a healthy run takes milliseconds


def test_failing_handler_is_reported_and_serving_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handled: list[object] = []
    dropped: list[tuple[object, str]] = []

    def handler(event: object) -> None:
        if event in ("bad", "worse"):
            raise RuntimeError(f"app bug on {event}")
        handled.append(event)

    def on_error(event: object, exc: Exception) -> None:
        dropped.append((event, str(exc)))
        if event == "worse":
            raise RuntimeError("the error callback is buggy too")

    async def main() -> ServeStatistics:
        stop = asyncio.Event()
        async with open_endpoint(Fake()) as ep:
            stats = ServeStatistics()
            serving = asyncio.ensure_future(
                serve_events(ep, handler, on_error=on_error, stop=stop, statistics=stats)
            )
            ep.call(lambda fake: fake.push("a", "bad", "b"))
            async with asyncio.timeout(WAIT):
                while stats.events < 3:
                    await asyncio.sleep(0.001)
            ep.call(lambda fake: fake.push("worse", "c"))
            async with asyncio.timeout(WAIT):
                while stats.events < 5:
                    await asyncio.sleep(0.001)
            stop.set()
            assert await serving is stats
            return stats

    with caplog.at_level(logging.ERROR):
        stats = asyncio.run(main())
    assert handled == ["a", "b", "c"]
    assert dropped == [("bad", "app bug on bad"), ("worse", "app bug on worse")]
    assert (stats.events, stats.errors, stats.on_error_errors) == (5, 2, 1)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.name for r in errors] == ["lagless.io"] * 3
    assert all(r.exc_info is not None for r in errors)


def test_replies_are_pumped_once_per_batch() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as server, open_endpoint(Fake()) as client:

            def reply(event: object) -> None:
                assert isinstance(event, bytes)
                server.obj.outbox.append((b"ev re: " + event, client.address))

            stop = asyncio.Event()
            task = asyncio.ensure_future(serve_events(server, reply, stop=stop))
            await asyncio.sleep(0)
            before = server.obj.pumps
            blast(server.address, [b"ev 1", b"ev 2", b"ev 3"])
            got: list[object] = []
            while len(got) < 3:
                got += await client.receive_batch(timeout=WAIT)
            pumps = server.obj.pumps - before
            stop.set()
            await task
            assert got == [b"ev re: ev 1", b"ev re: ev 2", b"ev re: ev 3"]
            # one, after the handlers replied: the endpoint hands the readiness batch's events
            # over before pumping, and its deferred pump then finds nothing left to do
            assert pumps == 1

    asyncio.run(main())


def test_stop_ends_serving() -> None:
    async def main() -> None:
        async with open_endpoint(Fake()) as ep:
            stop = asyncio.Event()
            stop.set()
            stats = await serve_events(ep, lambda event: None, stop=stop)
            assert stats.events == 0
            stop = asyncio.Event()
            seen: list[object] = []
            task = asyncio.ensure_future(serve_events(ep, seen.append, stop=stop))
            ep.call(lambda fake: fake.push(1, 2, 3))
            async with asyncio.timeout(WAIT):
                while len(seen) < 3:
                    await asyncio.sleep(0.001)
            stop.set()
            stats = await asyncio.wait_for(task, WAIT)
            assert stats.events == 3
            assert seen == [1, 2, 3]

    asyncio.run(main())


def test_closing_the_endpoint_ends_serving() -> None:
    async def main() -> None:
        ep = open_endpoint(Fake())
        seen: list[object] = []
        task = asyncio.ensure_future(serve_events(ep, seen.append, max_batch=2))
        ep.call(lambda fake: fake.push(1, 2, 3))
        await asyncio.sleep(0)
        ep.close()
        stats = await asyncio.wait_for(task, WAIT)
        assert seen == [1, 2, 3]
        assert stats.events == 3

    asyncio.run(main())
