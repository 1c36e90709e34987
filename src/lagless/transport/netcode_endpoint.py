"""Plumbing shared by the netcode 1.02 client and server: queues, drop counter, config checks.

Implements the parts of netcode-1.02 spec §9 and §10 that both ends do alike: every received
datagram is counted before any check, every drop is counted by reason and logged at DEBUG, and
the sans-I/O outputs (STYLE §3) hand over the queued datagrams and events. Decisions:

* ``receive_datagram`` stamps ``now`` and counts the datagram and its bytes before any check; a
  datagram that fails a check is counted once, under its drop reason
  (``test_netcode_session.py::test_garbage_never_raises_nor_changes_state``).
* The subclass is told of every popped ``PayloadReceived`` (``_payload_taken``) so its bounded
  payload queue shrinks as the application reads
  (``test_netcode_session.py::test_payload_queue_full``).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Final

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.transport.drops import DropCounter, DropReason, NetcodeStatistics
from lagless.transport.netcode_events import NetcodeEvent, PayloadReceived

__all__ = ["NetcodeEndpoint", "check_endpoint_fields"]

_log: Final = logging.getLogger("lagless.transport")


def check_endpoint_fields(num_disconnect_packets: int, payload_queue_size: int) -> None:
    """Validate the configuration fields the client and server share.

    Args:
        num_disconnect_packets: redundant disconnect packets (1 to 100).
        payload_queue_size: received payloads held before new ones are dropped (>= 1).

    Raises:
        ConfigError: a field is out of range.
    """
    if not 1 <= num_disconnect_packets <= 100:
        raise ConfigError(
            f"num_disconnect_packets must be in [1, 100], got {num_disconnect_packets}"
        )
    if payload_queue_size < 1:
        raise ConfigError(f"payload_queue_size must be >= 1, got {payload_queue_size}")


class NetcodeEndpoint:
    """Base of ``NetcodeClient`` and ``NetcodeServer``: the state both ends keep the same way."""

    def __init__(self, *, role: str, insecure: bool, insecure_note: str) -> None:
        """Create empty queues and counters.

        Args:
            role: ``"client"`` or ``"server"``, for log messages.
            insecure: whether the endpoint runs in the lagless insecure mode (logs a WARNING).
            insecure_note: what insecure mode leaves out, for the warning.
        """
        self._role = role
        self._now = 0.0
        self._outbox: list[tuple[bytes, Address]] = []
        self._outbox_bytes = 0  # bytes of the datagrams in _outbox, added as each is queued
        self._events: deque[NetcodeEvent] = deque()
        self._counter = DropCounter()
        if insecure:
            _log.warning(
                "netcode %s in INSECURE mode: %s; for local development and the lab only",
                role,
                insecure_note,
            )

    def statistics(self) -> NetcodeStatistics:
        """Return a snapshot of the counters.

        Returns:
            Drops per reason and traffic totals.
        """
        return self._counter.snapshot()

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Process one datagram; never raises, counts every drop by reason.

        Pump the object afterwards (see ``lagless.io.drive.pump``).

        Args:
            data: the datagram.
            addr: its source address.
            now: current time in seconds.
        """
        self._now = now
        self._counter.datagrams_received += 1
        self._counter.bytes_received += len(data)
        self._receive(data, addr, now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return and forget the datagrams queued so far.

        Args:
            now: current time in seconds (unused: sending is scheduled by the inputs and
                ``handle_timer``).

        Returns:
            ``(datagram, destination)`` pairs in send order.
        """
        out, self._outbox = self._outbox, []
        counter = self._counter
        counter.datagrams_sent += len(out)
        counter.bytes_sent += self._outbox_bytes
        self._outbox_bytes = 0
        return out

    def next_event(self) -> NetcodeEvent | None:
        """Return the next pending event, or ``None``.

        Returns:
            A :class:`~lagless.transport.netcode_events.NetcodeEvent` or ``None``.
        """
        if not self._events:
            return None
        event = self._events.popleft()
        if isinstance(event, PayloadReceived):
            self._payload_taken(event)
        return event

    def _receive(self, data: bytes, addr: Address, now: float) -> None:
        """Check and process one counted datagram (the end's receive table)."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _payload_taken(self, event: PayloadReceived) -> None:
        """Free the payload queue entry of a ``PayloadReceived`` the application popped."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _drop(self, reason: DropReason, addr: Address) -> None:
        self._counter.dropped[reason] += 1
        _log.debug("netcode %s dropped datagram from %s: %s", self._role, addr, reason.value)
