"""A discrete-event scheduler with a virtual clock: no wall clock, no threads (STYLE §5 "netsim").

Implements STYLE §5: a heap keyed by ``(when, insertion_seq)`` with ``call_at(when, fn, *args)`` in
the trio/asyncio signature convention. It is the clock every simulated run (spec 000 §3.7 network
simulation, spec 004 §5.3.3 simulated latency) is driven by.

Decisions:
    * Events due at the same instant run in the order they were scheduled
      (``test_scheduler.py::test_ties_run_in_insertion_order``).
    * ``run(until)`` also runs events that earlier events schedule at or before ``until``, then
      leaves the clock exactly at ``until`` even when no event was due
      (``test_scheduler.py::test_run_until_leaves_clock_at_until``).
    * Scheduling before ``now`` is a caller mistake and raises ``LocalProtocolError``; scheduling at
      exactly ``now`` is allowed and runs after everything already due now
      (``test_scheduler.py::test_scheduling_in_the_past_raises``).
    * ``run(None)`` runs until no event is left and leaves the clock at the last event's time.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable

from lagless.errors import LocalProtocolError

__all__ = ["Handle", "Scheduler"]


class Handle:
    """A scheduled call; ``cancel()`` stops it from running.

    Attributes:
        when: Absolute virtual time (s) the call is due at.
    """

    __slots__ = ("_args", "_cancelled", "_fn", "when")

    def __init__(self, when: float, fn: Callable[..., object], args: tuple[object, ...]) -> None:
        """Create a handle; only ``Scheduler`` makes these.

        Args:
            when: Absolute virtual time (s) the call is due at.
            fn: The callable to run.
            args: Positional arguments for ``fn``.
        """
        self.when = when
        self._fn = fn
        self._args = args
        self._cancelled = False

    def cancel(self) -> None:
        """Stop the call from running; harmless if it already ran or was cancelled."""
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        """Whether ``cancel()`` was called."""
        return self._cancelled

    def __repr__(self) -> str:
        """Show the due time and the callable."""
        state = " cancelled" if self._cancelled else ""
        return f"<Handle when={self.when!r} fn={self._fn!r}{state}>"


class Scheduler:
    """A virtual clock plus a heap of due calls.

    Args:
        start: The clock's initial value (s). Protocol objects never assume it is 0.
    """

    def __init__(self, start: float = 0.0) -> None:
        """Create an empty scheduler whose clock reads ``start`` seconds."""
        if not math.isfinite(start):
            raise LocalProtocolError(f"start must be a finite number of seconds, got {start!r}")
        self._now = float(start)
        # entries are (when, insertion_seq, handle): tuples compare in C, the heap key of STYLE §5
        self._heap: list[tuple[float, int, Handle]] = []
        self._seq = 0

    @property
    def now(self) -> float:
        """The virtual time (s)."""
        return self._now

    def call_at(self, when: float, fn: Callable[..., object], *args: object) -> Handle:
        """Schedule ``fn(*args)`` at absolute virtual time ``when``.

        Args:
            when: Absolute time (s); must be finite and not before ``now``.
            fn: The callable.
            *args: Its positional arguments.

        Returns:
            A ``Handle`` that can cancel the call.

        Raises:
            LocalProtocolError: ``when`` is before ``now`` or not finite.
        """
        if not math.isfinite(when) or when < self._now:
            raise LocalProtocolError(
                f"when must be finite and >= now ({self._now!r} s), got {when!r}"
            )
        when = float(when)
        handle = Handle(when, fn, args)
        heapq.heappush(self._heap, (when, self._seq, handle))
        self._seq += 1
        return handle

    def call_later(self, delay: float, fn: Callable[..., object], *args: object) -> Handle:
        """Schedule ``fn(*args)`` ``delay`` seconds from ``now``.

        Args:
            delay: Relative delay (s); must be finite and >= 0.
            fn: The callable.
            *args: Its positional arguments.

        Returns:
            A ``Handle`` that can cancel the call.

        Raises:
            LocalProtocolError: ``delay`` is negative or not finite.
        """
        if not math.isfinite(delay) or delay < 0:
            raise LocalProtocolError(f"delay must be a finite number >= 0 seconds, got {delay!r}")
        return self.call_at(self._now + delay, fn, *args)

    def _drop_cancelled(self) -> None:
        heap = self._heap
        while heap and heap[0][2]._cancelled:
            heapq.heappop(heap)

    def next_time(self) -> float | None:
        """Return the due time (s) of the next live call, or ``None`` when nothing is scheduled."""
        self._drop_cancelled()
        return self._heap[0][0] if self._heap else None

    def step(self) -> bool:
        """Advance the clock to the next live call and run it.

        Returns:
            ``True`` if a call ran, ``False`` if nothing was scheduled.
        """
        self._drop_cancelled()
        if not self._heap:
            return False
        when, _, handle = heapq.heappop(self._heap)
        self._now = when
        handle._cancelled = True  # a handle runs at most once; cancel() afterwards is a no-op
        handle._fn(*handle._args)
        return True

    def run(self, until: float | None = None) -> None:
        """Run every call due at or before ``until``, in ``(when, insertion)`` order.

        Args:
            until: Absolute time (s) to stop at; the clock is left there. ``None`` runs until no
                call is left and leaves the clock at the last call's time.

        Raises:
            LocalProtocolError: ``until`` is before ``now`` or not finite.
        """
        if until is None:
            while self.step():
                pass
            return
        if not math.isfinite(until) or until < self._now:
            raise LocalProtocolError(
                f"until must be finite and >= now ({self._now!r} s), got {until!r}"
            )
        heap = self._heap
        pop = heapq.heappop
        while heap:
            when, _, handle = heap[0]
            if handle._cancelled:
                pop(heap)
                continue
            if when > until:
                break
            pop(heap)
            self._now = when
            handle._cancelled = True  # a handle runs at most once
            handle._fn(*handle._args)
        self._now = float(until)
