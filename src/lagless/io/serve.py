"""Callback-style serving: hand every event of an `AsyncEndpoint` to a handler that may fail.

A server built on `serve_events` survives its own bugs: an exception inside the application's
handler is logged with its traceback on the ``lagless.io`` logger, counted, and reported to
``on_error(event, exc)``, where the application drops the client the event came from; the loop
and the other clients go on. The io layer sits below transport (docs/design.md), so this module
knows events only as objects and leaves "drop that client" to the callback.

Decisions:
    * The handler is installed on the endpoint (`AsyncEndpoint.set_handler`): it runs inside the
      loop callback that read the datagrams (or ran the timer), once per event in order, and the
      object is pumped once after the batch, so a handler should call the object's verbs
      directly (``endpoint.obj.send(...)``) rather than ``endpoint.call``, which pumps on every
      call (DESIGN.md "Speed rules": pump once per batch)
      (``test_serve.py::test_replies_are_pumped_once_per_batch``). No task wakes up per batch:
      on ``lagless bench server`` (2 runs each) the 32-client 60 Hz echo server took 0.24-0.26
      of a core instead of 0.30-0.31 when a task took the events through
      `AsyncEndpoint.receive_batch`, the 256-client 20 Hz one 0.56-0.58 instead of 0.58-0.59
      (it reads several datagrams per wake-up, so it saved less). With
      ``max_batch`` set, a task takes the events a batch at a time through ``receive_batch``
      instead, so the loop runs other callbacks between batches of at most that many.
    * An exception from ``on_error`` itself is logged and counted too, never raised
      (``test_serve.py::test_failing_handler_is_reported_and_serving_goes_on``).
    * Handlers are plain functions: they run in the loop's thread and must not block; async work
      goes into tasks the handler creates.
    * Serving ends when ``stop`` is set or the endpoint is closed; events already taken are all
      handled first, because cancellation can only land while waiting for the next batch
      (``test_serve.py::test_stop_ends_serving``); events that come after it stay queued on the
      endpoint for `AsyncEndpoint.receive`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lagless.errors import LocalProtocolError
from lagless.io.endpoint import AsyncEndpoint

_log = logging.getLogger("lagless.io")


@dataclass(slots=True)
class ServeStatistics:
    """Live counters of one `serve_events` run."""

    events: int = 0
    """Events handed to the handler."""
    errors: int = 0
    """Events whose handler raised."""
    on_error_errors: int = 0
    """Times ``on_error`` itself raised."""


async def serve_events(
    endpoint: AsyncEndpoint[Any],
    handler: Callable[[object], object],
    *,
    on_error: Callable[[object, Exception], object] | None = None,
    stop: asyncio.Event | None = None,
    max_batch: int | None = None,
    statistics: ServeStatistics | None = None,
) -> ServeStatistics:
    """Call ``handler(event)`` for every event of ``endpoint`` until ``stop`` is set or it closes.

    Args:
        endpoint: the endpoint whose events to serve.
        handler: called once per event, in order; its return value is ignored.
        on_error: called as ``on_error(event, exc)`` after ``handler`` raised ``exc`` for
            ``event`` (typically: disconnect the client the event came from).
        stop: serving ends soon after this is set; ``None`` serves until the endpoint closes.
        max_batch: a task takes at most this many events per batch (`receive_batch`);
            ``None`` installs ``handler`` on the endpoint instead (`AsyncEndpoint.set_handler`),
            which hands it every event inside the callback that read it.
        statistics: counters to update live; a new `ServeStatistics` when ``None``.

    Returns:
        The counters (``statistics`` if given).
    """
    stats = ServeStatistics() if statistics is None else statistics
    if stop is None:
        await _serve(endpoint, handler, on_error, max_batch, stats)
        return stats
    if stop.is_set():
        return stats
    serving = asyncio.ensure_future(_serve(endpoint, handler, on_error, max_batch, stats))
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait((serving, stopping), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (serving, stopping):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return stats


async def _serve(
    endpoint: AsyncEndpoint[Any],
    handler: Callable[[object], object],
    on_error: Callable[[object, Exception], object] | None,
    max_batch: int | None,
    stats: ServeStatistics,
) -> None:
    def dispatch(event: object) -> None:
        stats.events += 1
        try:
            handler(event)
        except Exception as exc:
            stats.errors += 1
            _log.error("event handler raised on %.200r", event, exc_info=True)
            if on_error is not None:
                _report(on_error, event, exc, stats)

    if max_batch is None:
        endpoint.set_handler(dispatch)
        try:
            await endpoint.wait_closed()
        finally:
            if endpoint.handler is dispatch:
                endpoint.set_handler(None)
        return
    while True:
        try:
            batch = await endpoint.receive_batch(max_batch)
        except LocalProtocolError:
            return  # the endpoint was closed
        for event in batch:
            dispatch(event)
        endpoint.flush()


def _report(
    on_error: Callable[[object, Exception], object],
    event: object,
    exc: Exception,
    stats: ServeStatistics,
) -> None:
    try:
        on_error(event, exc)
    except Exception:
        stats.on_error_errors += 1
        _log.error("on_error raised while handling %.200r", event, exc_info=True)
