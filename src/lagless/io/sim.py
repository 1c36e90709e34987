"""Drive sans-I/O protocol objects over the simulated network (``lagless.netsim``).

The simulator twin of the real-UDP driver: it binds an object to a simulated host and port, feeds
it every datagram that arrives, pumps it after every input with :func:`lagless.io.drive.pump`
and re-arms one scheduler timer at the object's ``next_timer()``. Protocol code therefore runs
unchanged on a real network and inside the simulator (DESIGN.md "The sans-I/O contract").

Application code reaches the object between simulated events with :meth:`SimEndpoint.poke`:
call the object's own ``send_*`` methods inside the callback, and the endpoint pumps it after.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from lagless._types import Address, SansIO
from lagless.io.drive import pump
from lagless.netsim.network import Host
from lagless.netsim.scheduler import Handle, Scheduler

T = TypeVar("T", bound=SansIO)


class SimEndpoint(Generic[T]):
    """One protocol object bound to one simulated address, pumped on scheduler time.

    Args:
        obj: the protocol object to drive.
        host: the simulated host it lives on.
        port: the port to bind (0 picks a free one).
        on_event: called with each event the object emits, in order, right after the input that
            caused it; ``None`` leaves the events queued for the caller to drain.
    """

    def __init__(
        self,
        obj: T,
        host: Host,
        port: int = 0,
        *,
        on_event: Callable[[object], None] | None = None,
    ) -> None:
        self.obj = obj
        self._host = host
        self._scheduler: Scheduler = host.network.scheduler
        self._on_event = on_event
        self._timer: Handle | None = None
        self._timer_at: float | None = None
        self.address: Address = host.bind(port, self._receive)
        self._pump()

    @property
    def now(self) -> float:
        """The simulated time, seconds."""
        return self._scheduler.now

    def poke(self, fn: Callable[[T], object]) -> None:
        """Call ``fn(obj)`` now (e.g. to queue a message), then pump the object."""
        fn(self.obj)
        self._pump()

    def flush(self) -> None:
        """Pump the object now: after calling its verbs directly (``ep.obj.send(...)``)."""
        self._pump()

    def close(self) -> None:
        """Unbind the address and cancel the timer; the object is no longer driven."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._host.unbind(self.address[1])

    def _send(self, data: bytes, dst: Address) -> None:
        self._host.send(data, self.address, dst)

    def _receive(self, data: bytes, src: Address, now: float) -> None:
        self.obj.receive_datagram(data, src, now)
        self._pump()

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = None
        self.obj.handle_timer(self._scheduler.now)
        self._pump()

    def _pump(self) -> None:
        deadline = pump(self.obj, self._scheduler.now, self._send)
        if self._on_event is not None:
            handled = False
            event = self.obj.next_event()
            while event is not None:
                self._on_event(event)
                handled = True
                event = self.obj.next_event()
            if handled:
                # the handlers may have queued replies: flush them in the same instant
                deadline = pump(self.obj, self._scheduler.now, self._send)
        if deadline == self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._timer_at = deadline
        if deadline is not None:
            self._timer = self._scheduler.call_at(max(deadline, self._scheduler.now), self._fire)
