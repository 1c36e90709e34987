"""A scriptable sans-I/O object for driver tests: records every call and can be told to raise."""

from __future__ import annotations

import socket
from collections import deque

from lagless._types import Address


class Fake:
    """Counts its pumps; a datagram ``b"ev..."`` becomes an event, ``b"boom..."`` raises.

    ``b"echo..."`` is answered with ``b"ev echo..."`` to its sender.

    ``period`` (s), if set, makes it ask for a timer that often; ``timer_raises`` is how many of
    the next ``handle_timer`` calls raise; ``send_raises`` likewise for ``datagrams_to_send``.
    """

    def __init__(self, period: float | None = None) -> None:
        self.period = period
        self.deadline: float | None = None
        self.received: list[bytes] = []
        self.timers: list[float] = []
        self.pumps = 0
        self.timer_raises = 0
        self.send_raises = 0
        self.outbox: list[tuple[bytes, Address]] = []
        self.events: deque[object] = deque()

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        self.received.append(data)
        if data.startswith(b"boom"):
            raise RuntimeError("receive_datagram bug")
        if data.startswith(b"ev"):
            self.events.append(data)
        if data.startswith(b"echo"):
            self.outbox.append((b"ev " + data, addr))

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        self.pumps += 1
        if self.send_raises:
            self.send_raises -= 1
            raise RuntimeError("datagrams_to_send bug")
        out, self.outbox = self.outbox, []
        return out

    def next_timer(self) -> float | None:
        return self.deadline

    def handle_timer(self, now: float) -> None:
        self.timers.append(now)
        if self.timer_raises:
            self.timer_raises -= 1
            raise RuntimeError("handle_timer bug")
        self.deadline = None if self.period is None else now + self.period

    def next_event(self) -> object | None:
        return self.events.popleft() if self.events else None

    def push(self, *events: object) -> None:
        """Queue events as if an input had produced them (pump afterwards)."""
        self.events.extend(events)


def blast(target: Address, payloads: list[bytes]) -> None:
    """Send ``payloads`` to ``target`` from a fresh socket; on loopback they are queued at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        for payload in payloads:
            sender.sendto(payload, target)
