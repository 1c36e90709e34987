"""Real-UDP front ends for any sans-I/O object: an asyncio API and a poll API for game loops.

Implements DESIGN.md "The sans-I/O contract" (a driver owns the socket and the clock and pumps
the state machine) and its speed rules for the receive path: ``loop.add_reader`` draining
``recvfrom`` until ``BlockingIOError`` (uvloop when installed, see `udp.run` and
`udp.install_uvloop`), and *pump once per readiness batch*: a wake-up feeds every datagram it
drained (at most ``DRAIN_BATCH``) to the object, then pumps it once. `AsyncEndpoint` hands the
batch's events to the application first and pumps in a ``call_soon`` callback queued behind the
tasks they woke: a task that answers at once (``ep.call(lambda s: s.send(...))``) pumps anyway,
so its answer leaves one pump earlier and the deferred pump finds nothing left to do. On a 60 Hz
ping-pong this took about 30 µs of a cold pump off each hop (``benchmarks/transport.py``).

On Linux both front ends use UDP segmentation offload (`lagless.io.offload`, ``offload=True``):
a pump's run of same-sized datagrams to one peer leaves in one ``sendmsg``, and a run that
arrives together is read with one ``recvmsg`` and cut back into its datagrams.

* `AsyncEndpoint` — ``async with open_endpoint(obj, "127.0.0.1:40000") as ep:`` then
  ``event = await ep.receive()`` or ``events = await ep.receive_batch()``;
  ``ep.call(lambda obj: obj.send(...))`` runs an application verb and pumps. One ``loop.call_at``
  timer follows ``obj.next_timer()``; it is re-armed only when the deadline moves earlier (a
  later deadline keeps it, as a cancel and a new handle per pump cost a heap push each; when it
  fires before the current deadline it only re-arms: every input was pumped already, so a pump
  would find nothing to do, and a lagless client echoing at 20 Hz had one such timer for every
  three messages). On any loop but asyncio's own (uvloop) the timer is armed
  `lagless.io.udp.timer_slack` (1 ms) after the deadline: uvloop keeps time and timers in whole
  milliseconds and rounds a delay to the nearest one, so a timer armed for a deadline less than
  half a millisecond away fired at once, before ``loop.time()`` reached the deadline, and was
  re-armed and fired again until it did: about 300 empty pumps per deadline, 6 000 a second in
  ``lagless bench server`` (``test_endpoint_robustness.py::test_uvloop_timer_fires_once``).
  ``ep.set_handler(fn)`` hands each event to ``fn`` inside the loop callback that produced it
  and pumps once after the batch, instead of queueing it for a task (what
  `lagless.io.serve_events` uses: a server's replies leave with no task wake-up in between).
* `PollEndpoint` — for pygame-style loops: ``events = ep.pump()`` once per frame drains the
  socket, runs due timers, flushes datagrams and returns the events, never blocking;
  ``ep.wait(timeout)`` sleeps in ``select`` until a datagram arrives or the object's next
  deadline, whichever is first.

The endpoints know protocol objects only through `lagless._types.SansIO` (the io layer sits
below transport; see docs/design.md), so they drive a `lagless.transport.Server`, a ``Client``,
a raw netcode server or a gossip peer alike. Time is ``loop.time()`` (asyncio) or
``time.monotonic()`` (poll): both monotonic seconds.

Policies:
    * **Backpressure, not loss.** `AsyncEndpoint` queues at most ``max_events`` events (default
      `DEFAULT_MAX_EVENTS`). When the queue is full it stops reading the socket (removes its
      reader) and counts a pause; when the application has taken events so that at most
      ``resume_events`` (default a quarter of ``max_events``) remain, it reads again. While
      paused the kernel's receive buffer fills and then drops datagrams, so reliable channels
      resend them later and nothing the object already accepted is lost; timers keep running, so
      keep-alives, resends and timeouts go on. A wake-up reads no more datagrams than there is
      room for (one read of a run of datagrams, `lagless.io.offload`, may bring up to 63 more),
      but one datagram can yield several events and timers and the application's own calls
      still queue theirs, so the bound is soft by that much
      (``test_endpoint_robustness.py::test_full_queue_pauses_reading_and_loses_nothing``). An
      application that never reads events must pass ``max_events=None`` (unbounded).
    * **No exception stops the driver.** An exception from the object (``receive_datagram``,
      ``handle_timer``, ``datagrams_to_send``, ``next_timer``, ``next_event``) inside a loop
      callback or a poll is caught, counted in ``errors`` and logged at ERROR with its traceback
      on the ``lagless.io`` logger (the first `LOGGED_ERRORS`, then every `ERROR_LOG_EVERY`-th, so
      a datagram that triggers a bug cannot flood the log). The rest of the batch is still fed,
      the socket is still read and the timer is always re-armed; a timer or pump that raised is
      retried after `ERROR_RETRY` seconds rather than at once, so a deadline that stays due
      cannot spin the loop (``test_endpoint_robustness.py::test_raising_timer_is_rearmed``).
      Exceptions from the application's own ``fn`` in `call` propagate to the caller, after the
      object is pumped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import selectors
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Final, Generic, TypeVar

from lagless._types import Address, SansIO
from lagless.errors import ConfigError, LocalProtocolError
from lagless.io.driver import ERROR_LOG_EVERY as ERROR_LOG_EVERY
from lagless.io.driver import ERROR_RETRY as ERROR_RETRY
from lagless.io.driver import LOGGED_ERRORS as LOGGED_ERRORS
from lagless.io.driver import Driver
from lagless.io.udp import (
    DRAIN_BATCH,
    is_stock_loop,
    open_udp_socket,
    timer_slack,
)

T = TypeVar("T", bound=SansIO)
R = TypeVar("R")

POLL_BATCH: Final = 1024  # datagrams drained per PollEndpoint.pump() call at most
DEFAULT_MAX_EVENTS: Final = 4096  # events an AsyncEndpoint queues before it stops reading

_log = logging.getLogger("lagless.io")


@dataclass(frozen=True, slots=True)
class EndpointStatistics:
    """Counters of one endpoint since it was opened."""

    datagrams_received: int
    """Datagrams read from the socket and handed to the object."""
    pumps: int
    """Times the object was pumped (datagrams sent, deadline read, events collected)."""
    errors: int
    """Exceptions raised by the object and caught by the driver."""
    send_errors: int
    """Datagrams the socket refused to send (full buffer, ICMP error): lost, as UDP allows."""
    pauses: int
    """Times an `AsyncEndpoint` stopped reading because its event queue was full (0 for poll)."""
    queued_events: int
    """Events waiting for the application right now."""
    datagrams_sent: int
    """Datagrams handed to the socket, alone or in trains."""
    trains: int
    """System calls that sent two datagrams or more (UDP segmentation offload, Linux only)."""


class _FrontEnd(Generic[T]):
    """What both front ends offer the application: the object, its address, clock and verbs."""

    _driver: Driver[T]

    @property
    def obj(self) -> T:
        """The protocol object being driven."""
        return self._driver.obj

    @property
    def address(self) -> Address:
        """The local address the socket is bound to (port 0 resolved)."""
        return self._driver.address

    @property
    def errors(self) -> int:
        """Exceptions raised by the object and caught (logged, counted) by the driver."""
        return self._driver.errors

    def now(self) -> float:
        """The driver's clock, seconds (the ``now`` the object sees)."""
        return self._driver.now()

    def call(self, fn: Callable[[T], R]) -> R:
        """Run ``fn(obj)`` now (an application verb such as ``send``), pump, return its result.

        Raises:
            Exception: whatever ``fn`` raised; the object is pumped first all the same.
        """
        try:
            return fn(self._driver.obj)
        finally:
            self.flush()

    def flush(self) -> None:
        """Pump the object now: after calling its verbs directly (``ep.obj.send(...)``)."""
        self._driver.flush()

    def statistics(self) -> EndpointStatistics:
        """Return the endpoint's counters (see `EndpointStatistics`)."""
        driver = self._driver
        return EndpointStatistics(
            datagrams_received=driver.datagrams,
            pumps=driver.pumps,
            errors=driver.errors,
            send_errors=driver.writer.send_errors,
            pauses=self._pauses(),
            queued_events=len(driver.events),
            datagrams_sent=driver.writer.datagrams,
            trains=driver.writer.trains,
        )

    def _pauses(self) -> int:
        return 0


class AsyncEndpoint(_FrontEnd[T]):
    """Drive ``obj`` on a real UDP socket inside a running asyncio (or uvloop) event loop.

    Use `open_endpoint` to make one. All methods must be called from the loop's thread.

    Args:
        obj: any sans-I/O protocol object.
        sock: a bound, non-blocking UDP socket; the endpoint closes it.
        loop: the running event loop.
        max_events: events queued before the endpoint stops reading the socket
            (backpressure, see the module docstring); ``None`` queues without bound.
        resume_events: the queue length at or below which reading resumes; default
            ``max_events // 4``.
        offload: use UDP segmentation offload where Linux has it (`lagless.io.offload`):
            runs of same-sized datagrams to one peer leave in one system call and arrive in one.

    Raises:
        ConfigError: ``max_events`` < 1 or ``resume_events`` outside [0, ``max_events``).
    """

    def __init__(
        self,
        obj: T,
        sock: socket.socket,
        loop: asyncio.AbstractEventLoop,
        *,
        max_events: int | None = DEFAULT_MAX_EVENTS,
        resume_events: int | None = None,
        offload: bool = True,
    ) -> None:
        if max_events is not None and max_events < 1:
            raise ConfigError(f"max_events must be >= 1 or None, got {max_events}")
        if resume_events is None:
            resume_events = 0 if max_events is None else max_events // 4
        if max_events is not None and not 0 <= resume_events < max_events:
            raise ConfigError(
                f"resume_events must be in [0, max_events={max_events}), got {resume_events}"
            )
        self._loop = loop
        # the stock loop's time() is time.monotonic() behind a Python frame: call it directly
        clock = time.monotonic if is_stock_loop(loop) else loop.time
        self._driver = Driver(obj, sock, clock, offload=offload)
        self._timer_slack = timer_slack(loop)
        self._max_events = max_events
        self._resume_events = resume_events
        self._waiters: list[asyncio.Future[None]] = []  # tasks blocked in receive/wait_closed
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._fd = sock.fileno()
        self._pump_due = False  # datagrams were fed since the last pump
        self._pump_scheduled = False  # a deferred pump is queued with call_soon
        self._reading = False
        self._paused = False
        self._pause_count = 0
        self._closed = False
        self._handler: Callable[[object], object] | None = None
        self._dispatching = False  # _dispatch is running (a handler's own call must not nest it)
        self._dispatch_scheduled = False  # a dispatch of events an application call took is queued
        self._start_reading()
        self.flush()

    @property
    def pauses(self) -> int:
        """Times the endpoint stopped reading the socket because its event queue was full."""
        return self._pause_count

    @property
    def paused(self) -> bool:
        """Whether the endpoint is not reading the socket right now (queue full)."""
        return self._paused

    def flush(self) -> None:
        """Pump the object now: after calling its verbs directly (``ep.obj.send(...)``)."""
        self._pump_due = False
        self._driver.flush()
        self._after_input()

    @property
    def handler(self) -> Callable[[object], object] | None:
        """The function events are handed to as they come (`set_handler`), or None."""
        return self._handler

    def set_handler(self, handler: Callable[[object], object] | None) -> None:
        """Hand every event to ``handler(event)`` as it comes instead of queueing it.

        The handler runs inside the loop callback that produced the events (a socket read or
        the timer), in order, and the object is pumped once after the batch, so replies the
        handler queued with the object's verbs (``ep.obj.send(...)``) leave in that same
        callback: no task wakes up in between. Events that an application call (`call`,
        `flush`) produced are handed over in a callback queued right after it, never inside the
        caller's ``call``. An exception from the handler is logged and counted like one from
        the object (see the module docstring) and the next event is handled. Events queued
        before are handed over at once (in a queued callback). ``None`` goes back to queueing
        for `receive` and `receive_batch`. `lagless.io.serve_events` installs one.

        Raises:
            LocalProtocolError: another handler is installed (set ``None`` first).
        """
        if handler is not None and self._handler is not None and handler != self._handler:
            raise LocalProtocolError("the endpoint already has an event handler; set None first")
        self._handler = handler
        if handler is not None and self._driver.events:
            self._schedule_dispatch()

    async def wait_closed(self) -> None:
        """Return once the endpoint is closed (at once if it is)."""
        while not self._closed:
            await self._wait(None)

    def receive_nowait(self) -> object | None:
        """Return the next event if one is waiting, else None."""
        events = self._driver.events
        if not events:
            return None
        event = events.popleft()
        if self._paused:
            self._maybe_resume()
        return event

    async def receive(self, timeout: float | None = None) -> object:
        """Wait for the next event from the object.

        Args:
            timeout: the most seconds to wait; ``None`` waits for ever.

        Raises:
            TimeoutError: nothing arrived within ``timeout`` seconds.
            LocalProtocolError: the endpoint is closed and no event is left.
        """
        event = self.receive_nowait()
        if event is not None:
            return event
        return await self._until(self.receive_nowait, timeout)

    async def receive_batch(
        self, max_events: int | None = None, timeout: float | None = None
    ) -> list[object]:
        """Wait until at least one event is queued, then return all queued events in order.

        Args:
            max_events: return at most this many (the rest stay queued); ``None`` for all.
            timeout: the most seconds to wait; ``None`` waits for ever.

        Returns:
            One or more events, oldest first.

        Raises:
            TimeoutError: nothing arrived within ``timeout`` seconds.
            LocalProtocolError: the endpoint is closed and no event is left, or ``max_events``
                is below 1.
        """
        if max_events is not None and max_events < 1:
            raise LocalProtocolError(f"max_events must be >= 1 or None, got {max_events}")
        batch = self._take_batch(max_events)
        if batch is not None:
            return batch
        return await self._until(lambda: self._take_batch(max_events), timeout)

    async def wait_for(self, kind: type[R], timeout: float | None = None) -> R:
        """Wait for the next event of type ``kind``, discarding others before it.

        Args:
            kind: the event class to wait for.
            timeout: the most seconds to wait; ``None`` waits for ever.

        Raises:
            TimeoutError: none arrived within ``timeout`` seconds.
            LocalProtocolError: the endpoint is closed and no such event is left.
        """
        event = self._take_kind(kind)
        if event is not None:
            return event
        return await self._until(lambda: self._take_kind(kind), timeout)

    async def sleep(self, seconds: float) -> None:
        """Let the loop run (and the object be pumped) for ``seconds``."""
        await asyncio.sleep(seconds)

    def close(self) -> None:
        """Stop driving and close the socket (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._stop_reading()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._driver.sock.close()
        self._wake()

    async def __aenter__(self) -> AsyncEndpoint[T]:
        """Return the endpoint itself."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the endpoint."""
        self.close()

    def _pauses(self) -> int:
        return self._pause_count

    async def _until(self, take: Callable[[], R | None], timeout: float | None) -> R:
        # the fast path (an event already queued) is the caller's; this is the waiting path only
        deadline = None if timeout is None else self._loop.time() + timeout
        while True:
            if self._closed:
                raise LocalProtocolError("receive on a closed endpoint")
            await self._wait(deadline)
            result = take()
            if result is not None:
                return result

    async def _wait(self, deadline: float | None) -> None:
        """Wait for the next `_wake` (events queued, closed); raise TimeoutError at ``deadline``.

        A future per wait and one timer handle, instead of ``asyncio.timeout`` around an
        ``asyncio.Event``: in the profile of ``bench transport``'s transfers, entering and
        leaving a timeout context per wait (a task lookup, a reschedule, a cancel) took several
        per cent of the samples.
        """
        loop = self._loop
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        expiry = None if deadline is None else loop.call_at(deadline, _expire, waiter)
        try:
            await waiter
        except BaseException:  # timed out or cancelled: take it out unless _wake did
            with contextlib.suppress(ValueError):
                self._waiters.remove(waiter)
            raise
        finally:
            if expiry is not None:
                expiry.cancel()

    def _wake(self) -> None:
        """Resume every task blocked in `_wait`."""
        waiters = self._waiters
        if waiters:
            self._waiters = []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def _take_batch(self, limit: int | None) -> list[object] | None:
        events = self._driver.events
        if not events:
            return None
        if limit is None or limit >= len(events):
            batch = list(events)
            events.clear()
        else:
            batch = [events.popleft() for _ in range(limit)]
        if self._paused:
            self._maybe_resume()
        return batch

    def _take_kind(self, kind: type[R]) -> R | None:
        events = self._driver.events
        found: R | None = None
        while events:
            event = events.popleft()
            if isinstance(event, kind):
                found = event
                break
        if self._paused:
            self._maybe_resume()
        return found

    def _on_readable(self) -> None:
        driver = self._driver
        limit = DRAIN_BATCH
        if self._max_events is not None:
            limit = min(limit, self._max_events - len(driver.events))
        try:
            if limit > 0 and driver.receive(limit):
                driver.take_events()
                self._pump_due = True
        finally:
            # wakes the waiting task first (its wake-up is queued now), or with a handler
            # installed hands the events to it and pumps
            self._after_input(inline=True)
        if self._pump_due and not self._pump_scheduled:
            self._pump_scheduled = True
            self._loop.call_soon(self._deferred_pump)

    def _deferred_pump(self) -> None:
        # runs after the tasks the datagrams woke (they were scheduled first): a task that
        # answers at once pumps in its own `call`, and then there is nothing left to do here
        self._pump_scheduled = False
        if self._pump_due and not self._closed:
            self.flush()

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        wake_at = self._driver.wake_at
        if wake_at is None or self._driver.now() < wake_at:
            # armed for a deadline that has since moved later or gone: every input since was
            # pumped, so there is nothing to send; arm for the current deadline (if any)
            self._after_input()
            return
        self._pump_due = False
        try:
            self._driver.on_timer()
        finally:
            self._after_input(inline=True)

    def _after_input(self, *, inline: bool = False) -> None:
        events = self._driver.events
        if events and self._handler is not None:
            if inline:
                self._dispatch()
            elif not self._dispatching:  # a running dispatch takes them itself
                self._schedule_dispatch()
        # not an else: a handler that removed itself mid-dispatch leaves the rest for receive()
        if events and self._handler is None:
            self._wake()
            if (
                self._max_events is not None
                and not self._paused
                and len(events) >= self._max_events
            ):
                self._pause()
        wake_at = self._driver.wake_at
        if wake_at is None or self._closed:
            return  # an armed timer stays: firing early only re-arms it (see _on_timer)
        timer_at = self._timer_at
        if timer_at is not None and timer_at <= wake_at:
            return  # the armed timer comes first; it re-arms for the later deadline then
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = wake_at
        self._timer = self._loop.call_at(wake_at + self._timer_slack, self._on_timer)

    def _dispatch(self) -> None:
        """Hand the queued events to the handler, pumping once after each batch it answered."""
        if self._dispatching:
            return  # a handler's call/flush: the running dispatch takes what it queued
        self._dispatching = True
        driver = self._driver
        events = driver.events
        try:
            while events and self._handler is not None and not self._closed:
                handler = self._handler
                while events and self._handler is handler:
                    event = events.popleft()
                    try:
                        handler(event)
                    except Exception:
                        driver.error("the event handler")
                # the handler's replies leave in one pump, which may take more events
                self._pump_due = False
                driver.flush()
        finally:
            self._dispatching = False
        if self._paused:
            self._maybe_resume()

    def _schedule_dispatch(self) -> None:
        if not self._dispatch_scheduled:
            self._dispatch_scheduled = True
            self._loop.call_soon(self._scheduled_dispatch)

    def _scheduled_dispatch(self) -> None:
        self._dispatch_scheduled = False
        if not self._closed:
            self._after_input(inline=True)

    def _pause(self) -> None:
        self._paused = True
        self._pause_count += 1
        self._stop_reading()
        log = _log.warning if self._pause_count == 1 else _log.debug
        log(
            "endpoint %s: %d events queued, not reading the socket until at most %d are left",
            self._driver._name,
            len(self._driver.events),
            self._resume_events,
        )

    def _maybe_resume(self) -> None:
        if len(self._driver.events) <= self._resume_events and not self._closed:
            self._paused = False
            self._start_reading()

    def _start_reading(self) -> None:
        if not self._reading:
            self._loop.add_reader(self._fd, self._on_readable)
            self._reading = True

    def _stop_reading(self) -> None:
        if self._reading:
            self._loop.remove_reader(self._fd)
            self._reading = False


def _expire(waiter: asyncio.Future[None]) -> None:
    """A timed wait's deadline passed: make it raise TimeoutError (unless already woken)."""
    if not waiter.done():
        waiter.set_exception(TimeoutError())


def open_endpoint(
    obj: T,
    local: Address | str = "127.0.0.1:0",
    *,
    max_events: int | None = DEFAULT_MAX_EVENTS,
    resume_events: int | None = None,
    offload: bool = True,
) -> AsyncEndpoint[T]:
    """Bind a UDP socket at ``local`` and drive ``obj`` on it in the running event loop.

    The endpoint runs on whatever loop is running: start the program with `lagless.io.run`
    (or call `install_uvloop` before ``asyncio.run``) to get uvloop when it is installed.

    Args:
        obj: any sans-I/O protocol object (server, client, peer).
        local: ``"host:port"`` or ``(host, port)``; port 0 picks a free port.
        max_events: events queued before the endpoint stops reading (backpressure, see the
            module docstring); ``None`` queues without bound.
        resume_events: queue length at or below which reading resumes; default a quarter of
            ``max_events``.
        offload: use UDP segmentation offload where Linux has it (`lagless.io.offload`).

    Returns:
        The endpoint; use it as ``async with open_endpoint(...) as ep:``.

    Raises:
        ConfigError: the address is malformed or cannot be bound, or the queue bounds are bad.
    """
    loop = asyncio.get_running_loop()
    _hint_uvloop(loop)
    sock = open_udp_socket(local, field="local")
    try:
        return AsyncEndpoint(
            obj,
            sock,
            loop,
            max_events=max_events,
            resume_events=resume_events,
            offload=offload,
        )
    except BaseException:
        sock.close()
        raise


def _hint_uvloop(loop: asyncio.AbstractEventLoop) -> None:
    """Say once (INFO) when uvloop is installed but the running loop is asyncio's own."""
    if not type(loop).__module__.startswith("uvloop"):
        _hint_uvloop_once()


@functools.cache
def _hint_uvloop_once() -> None:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return
    _log.info("uvloop is installed but not running; start with lagless.io.run() to use it")


class PollEndpoint(_FrontEnd[T]):
    """Drive ``obj`` on a real UDP socket from a game loop: call `pump` once per frame.

    Args:
        obj: any sans-I/O protocol object.
        local: ``"host:port"`` or ``(host, port)`` to bind; port 0 picks a free port.
        clock: monotonic clock in seconds (``time.monotonic`` by default); `wait` assumes it
            runs at the rate of real time.
        offload: use UDP segmentation offload where Linux has it (`lagless.io.offload`).
    """

    def __init__(
        self,
        obj: T,
        local: Address | str = "127.0.0.1:0",
        *,
        clock: Callable[[], float] = time.monotonic,
        offload: bool = True,
    ) -> None:
        sock = open_udp_socket(local, field="local")
        self._driver = Driver(obj, sock, clock, offload=offload)
        self._selector = selectors.DefaultSelector()
        self._selector.register(sock, selectors.EVENT_READ)
        self._closed = False
        self._driver.flush()

    @property
    def next_deadline(self) -> float | None:
        """When (clock seconds) `pump` must next be called for the object's timers, or None."""
        return self._driver.wake_at

    def pump(self) -> list[object]:
        """Drain the socket, run due timers, send what is queued; return the new events.

        Never blocks. Call it once per frame: it pumps the object once for all the datagrams it
        read (at most ``POLL_BATCH``) and the timer together.
        """
        driver = self._driver
        driver.receive(POLL_BATCH)
        driver.on_timer()
        events = list(driver.events)
        driver.events.clear()
        return events

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep until a datagram is waiting, the object's next deadline, or ``timeout`` s pass.

        Lets a game loop sleep between frames without missing a deadline or adding the latency
        of a fixed sleep; call `pump` after it returns. Does not pump.

        Args:
            timeout: the most seconds to sleep; ``None`` sleeps until a datagram or the
                deadline (for ever if the object has none); 0 only polls.

        Returns:
            ``True`` if a datagram is waiting to be read, ``False`` if time ran out.
        """
        wake_at = self._driver.wake_at
        if wake_at is not None:
            until = max(0.0, wake_at - self._driver.now())
            timeout = until if timeout is None else min(timeout, until)
        if timeout is not None:
            timeout = max(0.0, timeout)
        return bool(self._selector.select(timeout))

    def close(self) -> None:
        """Close the socket (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._selector.close()
        self._driver.sock.close()

    def __enter__(self) -> PollEndpoint[T]:
        """Return the endpoint itself."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the endpoint."""
        self.close()
