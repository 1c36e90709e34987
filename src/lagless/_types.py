"""Shared type aliases and the ``SansIO`` protocol every datagram-speaking object follows.

Implements DESIGN.md "The sans-I/O contract".
"""

from __future__ import annotations

from typing import NewType, Protocol, TypeAlias

Address: TypeAlias = tuple[str, int]
"""A datagram endpoint: (host, port). The simulator uses the same shape with made-up hosts."""

NodeId = NewType("NodeId", int)
ClientId = NewType("ClientId", int)
EntityId = NewType("EntityId", int)
Tick = NewType("Tick", int)


class SansIO(Protocol):
    """What every lagless protocol object looks like to a driver.

    The object is driven by the application (its own ``send_*``/``close`` methods), by datagrams
    from the network (``receive_datagram``) and by the clock (``handle_timer``). After any input the
    driver pumps it: ``datagrams_to_send(now)``, then ``next_timer()``, then drains
    ``next_event()``. Times are seconds on a monotonic clock chosen by the driver. An object may
    also offer ``take_events() -> list`` (every waiting event at once, oldest first, in a list
    the caller owns); the real-UDP drivers then call it instead of ``next_event`` in a loop.
    """

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram from ``addr`` at time ``now`` (s); never raises on bad input."""

    def handle_timer(self, now: float) -> None:
        """Run whatever is due at ``now`` (s); harmless when called early."""

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return the datagrams to send now, with their destinations."""

    def next_timer(self) -> float | None:
        """Return the absolute time (s) of the next deadline, or ``None``."""

    def next_event(self) -> object | None:
        """Return the next pending event, or ``None``."""
