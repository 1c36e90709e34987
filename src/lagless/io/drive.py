"""The one pump loop shared by every driver (STYLE §3): flush datagrams, return the next deadline.

Every driver — real UDP (``lagless.io.udp``), the simulator (``lagless.io.sim``) and the test
helpers — calls :func:`pump` (or :func:`pump_batch`, its form for a sender that takes a pump's
datagrams at once) after each input it gives a protocol object, so all of them see the same order
of effects.
"""

from __future__ import annotations

from collections.abc import Callable

from lagless._types import Address, SansIO


def pump(obj: SansIO, now: float, send: Callable[[bytes, Address], None]) -> float | None:
    """Send everything ``obj`` has queued at ``now`` (s) and return its next deadline (s) or None.

    Args:
        obj: any sans-I/O protocol object.
        now: the driver's clock, seconds.
        send: called once per outgoing datagram with its bytes and destination.

    Returns:
        The absolute time at which the driver must call ``obj.handle_timer``, or ``None``.
    """
    for data, addr in obj.datagrams_to_send(now):
        send(data, addr)
    return obj.next_timer()


def pump_batch(
    obj: SansIO, now: float, send_all: Callable[[list[tuple[bytes, Address]]], None]
) -> float | None:
    """`pump` handing the datagrams to ``send_all`` in one list (so a driver can batch them).

    Args:
        obj: any sans-I/O protocol object.
        now: the driver's clock, seconds.
        send_all: called once with every outgoing ``(bytes, destination)``, in order, if any.

    Returns:
        The absolute time at which the driver must call ``obj.handle_timer``, or ``None``.
    """
    datagrams = obj.datagrams_to_send(now)
    if datagrams:
        send_all(datagrams)
    return obj.next_timer()
