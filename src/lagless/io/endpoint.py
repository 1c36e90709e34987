"""Real-UDP front ends for any sans-I/O object: an asyncio API and a poll API for game loops.

Implements DESIGN.md "The sans-I/O contract" (a driver owns the socket and the clock and pumps
the state machine) and its speed rule for the receive path (``loop.add_reader`` draining
``recvfrom_into`` until ``BlockingIOError``; uvloop when installed, see `udp.install_uvloop`).

* `AsyncEndpoint` — ``async with open_endpoint(obj, "127.0.0.1:40000") as ep:`` then
  ``event = await ep.receive()``; ``ep.call(lambda obj: obj.send(...))`` runs an application
  verb and pumps. One ``loop.call_at`` timer follows ``obj.next_timer()``.
* `PollEndpoint` — for pygame-style loops: ``events = ep.pump()`` once per frame drains the
  socket, runs due timers, flushes datagrams and returns the events, never blocking.

The endpoints know protocol objects only through `lagless._types.SansIO` (the io layer sits
below transport; see docs/design.md), so they drive a `lagless.transport.Server`, a ``Client``,
a raw netcode server or a gossip peer alike. Time is ``loop.time()`` (asyncio) or
``time.monotonic()`` (poll): both monotonic seconds.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Final, Generic, TypeVar

from lagless._types import Address, SansIO
from lagless.errors import LocalProtocolError
from lagless.io.drive import pump
from lagless.io.udp import MAX_DATAGRAM, add_datagram_reader, drain, open_udp_socket

T = TypeVar("T", bound=SansIO)
R = TypeVar("R")

POLL_BATCH: Final = 1024  # datagrams drained per PollEndpoint.pump() call at most


class _Driver(Generic[T]):
    """What both front ends share: feed datagrams and timers to the object, send its output."""

    def __init__(self, obj: T, sock: socket.socket, clock: Callable[[], float]) -> None:
        self.obj = obj
        self.sock = sock
        self._clock = clock
        self.events: deque[object] = deque()
        self.deadline: float | None = None
        self.send_errors = 0

    @property
    def address(self) -> Address:
        """The local address the socket is bound to."""
        host, port = self.sock.getsockname()[:2]
        return (str(host), int(port))

    def now(self) -> float:
        """The driver's clock, seconds."""
        return self._clock()

    def on_datagram(self, data: bytes, addr: Address) -> None:
        self.obj.receive_datagram(data, addr, self._clock())
        self.flush()

    def on_timer(self) -> None:
        now = self._clock()
        if self.deadline is not None and now >= self.deadline:
            self.obj.handle_timer(now)
        self.flush()

    def _send(self, data: bytes, addr: Address) -> None:
        try:
            self.sock.sendto(data, addr)
        except (BlockingIOError, OSError):
            # UDP gives no delivery promise: a full buffer or an ICMP error is a lost datagram
            self.send_errors += 1

    def flush(self) -> None:
        self.deadline = pump(self.obj, self._clock(), self._send)
        event = self.obj.next_event()
        while event is not None:
            self.events.append(event)
            event = self.obj.next_event()


class _FrontEnd(Generic[T]):
    """What both front ends offer the application: the object, its address, clock and verbs."""

    _driver: _Driver[T]

    @property
    def obj(self) -> T:
        """The protocol object being driven."""
        return self._driver.obj

    @property
    def address(self) -> Address:
        """The local address the socket is bound to (port 0 resolved)."""
        return self._driver.address

    def now(self) -> float:
        """The driver's clock, seconds (the ``now`` the object sees)."""
        return self._driver.now()

    def call(self, fn: Callable[[T], R]) -> R:
        """Run ``fn(obj)`` now (an application verb such as ``send``), pump, return its result."""
        result = fn(self._driver.obj)
        self.flush()
        return result

    def flush(self) -> None:
        """Pump the object now: after calling its verbs directly (``ep.obj.send(...)``)."""
        self._driver.flush()


class AsyncEndpoint(_FrontEnd[T]):
    """Drive ``obj`` on a real UDP socket inside a running asyncio (or uvloop) event loop.

    Use `open_endpoint` to make one. All methods must be called from the loop's thread.
    """

    def __init__(self, obj: T, sock: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._driver = _Driver(obj, sock, loop.time)
        self._wakeup = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at: float | None = None
        self._remove_reader = add_datagram_reader(loop, sock, self._on_datagram)
        self._closed = False
        self._after_input()

    def flush(self) -> None:
        """Pump the object now: after calling its verbs directly (``ep.obj.send(...)``)."""
        self._driver.flush()
        self._after_input()

    def receive_nowait(self) -> object | None:
        """Return the next event if one is waiting, else None."""
        events = self._driver.events
        return events.popleft() if events else None

    async def receive(self, timeout: float | None = None) -> object:
        """Wait for the next event from the object.

        Raises:
            TimeoutError: nothing arrived within ``timeout`` seconds.
            LocalProtocolError: the endpoint is closed.
        """
        async with asyncio.timeout(timeout):
            while True:
                if self._closed:
                    raise LocalProtocolError("receive on a closed endpoint")
                event = self.receive_nowait()
                if event is not None:
                    return event
                self._wakeup.clear()
                await self._wakeup.wait()

    async def wait_for(self, kind: type[R], timeout: float | None = None) -> R:
        """Wait for the next event of type ``kind``, discarding others before it.

        Raises:
            TimeoutError: none arrived within ``timeout`` seconds.
        """
        async with asyncio.timeout(timeout):
            while True:
                event = await self.receive()
                if isinstance(event, kind):
                    return event

    async def sleep(self, seconds: float) -> None:
        """Let the loop run (and the object be pumped) for ``seconds``."""
        await asyncio.sleep(seconds)

    def close(self) -> None:
        """Stop driving and close the socket (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._remove_reader()
        if self._timer is not None:
            self._timer.cancel()
        self._driver.sock.close()
        self._wakeup.set()

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

    def _on_datagram(self, data: bytes, addr: Address) -> None:
        self._driver.on_datagram(data, addr)
        self._after_input()

    def _on_timer(self) -> None:
        self._timer = None
        self._timer_at = None
        self._driver.on_timer()
        self._after_input()

    def _after_input(self) -> None:
        if self._driver.events:
            self._wakeup.set()
        deadline = self._driver.deadline
        if deadline == self._timer_at or self._closed:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None:
            self._timer = self._loop.call_at(deadline, self._on_timer)


def open_endpoint(obj: T, local: Address | str = "127.0.0.1:0") -> AsyncEndpoint[T]:
    """Bind a UDP socket at ``local`` and drive ``obj`` on it in the running event loop.

    Args:
        obj: any sans-I/O protocol object (server, client, peer).
        local: ``"host:port"`` or ``(host, port)``; port 0 picks a free port.

    Returns:
        The endpoint; use it as ``async with open_endpoint(...) as ep:``.

    Raises:
        ConfigError: the address is malformed or cannot be bound.
    """
    sock = open_udp_socket(local, field="local")
    return AsyncEndpoint(obj, sock, asyncio.get_running_loop())


class PollEndpoint(_FrontEnd[T]):
    """Drive ``obj`` on a real UDP socket from a game loop: call `pump` once per frame.

    Args:
        obj: any sans-I/O protocol object.
        local: ``"host:port"`` or ``(host, port)`` to bind; port 0 picks a free port.
        clock: monotonic clock in seconds (``time.monotonic`` by default).
    """

    def __init__(
        self,
        obj: T,
        local: Address | str = "127.0.0.1:0",
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._driver = _Driver(obj, open_udp_socket(local, field="local"), clock)
        self._buffer = bytearray(MAX_DATAGRAM)
        self._driver.flush()

    def pump(self) -> list[object]:
        """Drain the socket, run due timers, send what is queued; return the new events.

        Never blocks. Call it once per frame.
        """
        driver = self._driver
        drain(driver.sock, self._buffer, driver.on_datagram, POLL_BATCH)
        driver.on_timer()
        events = list(driver.events)
        driver.events.clear()
        return events

    def close(self) -> None:
        """Close the socket."""
        self._driver.sock.close()
