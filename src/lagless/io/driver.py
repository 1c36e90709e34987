"""The part of an endpoint that every datagram passes through: feed, pump, send, collect.

`Driver` owns a socket, a clock and a sans-I/O object; `lagless.io.endpoint`'s front ends
(`AsyncEndpoint`, `PollEndpoint`) decide *when* it reads, pumps and fires the timer. It is in
a module of its own so that a compiled build can compile it with the transport's core
(docs/compiled.md): its per-datagram loop then runs without an interpreter frame per datagram.
The policies it keeps (no exception escapes, errors logged and then thinned out, a raising
timer retried after `ERROR_RETRY`) are described in `lagless.io.endpoint`.
"""

from __future__ import annotations

import logging
import socket
from collections import deque
from collections.abc import Callable
from typing import Final, Generic, TypeVar

from lagless._types import Address, SansIO
from lagless.io.drive import pump_batch
from lagless.io.offload import DatagramWriter, drain_segments, enable_gro
from lagless.io.udp import drain, format_hostport

T = TypeVar("T", bound=SansIO)

LOGGED_ERRORS: Final = 10  # errors per endpoint logged with a traceback before thinning out
ERROR_LOG_EVERY: Final = 1000  # after LOGGED_ERRORS, log only every this-many-th error
ERROR_RETRY: Final = 0.01  # seconds before a timer or pump that raised is tried again

_log = logging.getLogger("lagless.io")


class Driver(Generic[T]):
    """What both front ends share: feed datagrams and timers to the object, send its output.

    No method lets an exception from the object escape; see the module docstring.
    """

    def __init__(
        self,
        obj: T,
        sock: socket.socket,
        clock: Callable[[], float],
        *,
        offload: bool = True,
    ) -> None:
        self.obj = obj
        self.sock = sock
        self._clock = clock
        # UDP segmentation offload (lagless.io.offload): trains out, runs in, where Linux has them
        self.writer = DatagramWriter(sock, gso=None if offload else False)
        self._drain = drain_segments if offload and enable_gro(sock) else drain
        self._name = format_hostport(self.address)
        # the batch form of next_event, when the object has one (see lagless._types.SansIO)
        self._take: Callable[[], list[object]] | None = getattr(obj, "take_events", None)
        # called per datagram: bound once (on an object typed by protocol, a compiled build looks
        # the method up by name at every call)
        self._receive_datagram: Callable[[bytes, Address, float], None] = obj.receive_datagram
        self.events: deque[object] = deque()
        self.due: float | None = None  # the object's next deadline (s), as it last said
        self.wake_at: float | None = None  # when the driver must next call on_timer (s)
        self._retry = False  # an input since the last pump raised: do not re-fire at once
        self.datagrams = 0
        self.pumps = 0
        self.errors = 0

    @property
    def address(self) -> Address:
        """The local address the socket is bound to."""
        host, port = self.sock.getsockname()[:2]
        return (str(host), int(port))

    def now(self) -> float:
        """The driver's clock, seconds."""
        return self._clock()

    def receive(self, limit: int) -> int:
        """Feed up to ``limit`` waiting datagrams to the object without pumping; return how many."""
        before = self.datagrams
        try:
            self._drain(self.sock, self._feed, limit)
        except OSError:
            self.error("reading the socket")
        return self.datagrams - before

    def on_timer(self) -> None:
        """Run the object's timer if it is due, then pump."""
        now = self._clock()
        if self.due is not None and now >= self.due:
            try:
                self.obj.handle_timer(now)
            except Exception:
                self.error("handle_timer")
                self._retry = True
        self.flush()

    def flush(self) -> None:
        """Pump the object: send its datagrams, read its deadline, queue its events."""
        now = self._clock()
        self.pumps += 1
        try:
            due = pump_batch(self.obj, now, self.writer.send_all)
        except Exception:
            self.error("pumping")
            self._retry = True
            due = self._next_timer_after_error()
        self.take_events()
        self.due = due
        if self._retry and (due is None or due <= now):
            self.wake_at = now + ERROR_RETRY
        else:
            self.wake_at = due
        self._retry = False

    def take_events(self) -> None:
        """Move the object's waiting events to ``events`` (no pump: nothing is sent)."""
        try:
            if self._take is not None:
                self.events.extend(self._take())
                return
            event = self.obj.next_event()
            while event is not None:
                self.events.append(event)
                event = self.obj.next_event()
        except Exception:
            self.error("taking its events")

    def error(self, where: str) -> None:
        """Count the exception being handled and log it (call only inside ``except``)."""
        self.errors += 1
        count = self.errors
        if count <= LOGGED_ERRORS or count % ERROR_LOG_EVERY == 0:
            _log.error(
                "endpoint %s: %s raised (error %d; the first %d are logged, then every %d-th)",
                self._name,
                where,
                count,
                LOGGED_ERRORS,
                ERROR_LOG_EVERY,
                exc_info=True,
            )

    def _feed(self, data: bytes, addr: Address) -> None:
        self.datagrams += 1
        try:
            self._receive_datagram(data, addr, self._clock())
        except Exception:
            self.error("receive_datagram")

    def _next_timer_after_error(self) -> float | None:
        try:
            return self.obj.next_timer()
        except Exception:
            self.error("next_timer")
            return None
