"""Spec 004's simulated latency: every received datagram waits a random time before processing.

Implements spec 004 §5.3.3 and Gl. 5.1 (checklist 8.1 "Simulated latency inside Peer"): a
received datagram is held for ``max(0, latency + (random() - 0.5)·variance)`` seconds, with
``random()`` uniform in [0, 1) from an injected generator, before it reaches the protocol; applied
at both ends, so the round trip is about twice ``latency``.

Decisions:
    * Held datagrams are released in order of their release time (ties in arrival order), so
      jitter can reorder them, as in the thesis.
    * With ``latency = variance = 0`` nothing is held and no random number is drawn.
    * At most ``MAX_HELD`` datagrams wait; more are dropped and counted (bounded memory under a
      flood, DESIGN.md "Bad input").
"""

from __future__ import annotations

import heapq
import math
import random

from lagless._types import Address
from lagless.errors import ConfigError

__all__ = ["MAX_HELD", "ReceiveDelay"]

MAX_HELD = 4096  # datagrams held at once


class ReceiveDelay:
    """Holds received datagrams for the Gl. 5.1 delay (a sans-I/O helper).

    Args:
        latency: Mean delay, s (``networkSimulatedLatency``).
        variance: Width of the uniform spread, s (``networkSimulatedVariance``).
        rng: The only source of randomness.
    """

    def __init__(self, latency: float, variance: float, rng: random.Random) -> None:
        """Create an empty buffer."""
        for name, value in (("latency", latency), ("variance", variance)):
            if not (math.isfinite(value) and value >= 0.0):
                raise ConfigError(f"{name} must be a finite number >= 0 s, got {value!r}")
        self.latency = latency
        self.variance = variance
        self._rng = rng
        self._held: list[tuple[float, int, bytes, Address]] = []
        self._count = 0
        self.dropped = 0
        """Datagrams dropped because ``MAX_HELD`` were already waiting."""

    @property
    def active(self) -> bool:
        """True when datagrams are held at all (latency or variance > 0)."""
        return self.latency > 0.0 or self.variance > 0.0

    def hold(self, data: bytes, addr: Address, now: float) -> None:
        """Take a datagram received at ``now`` (s)."""
        if len(self._held) >= MAX_HELD:
            self.dropped += 1
            return
        delay = max(0.0, self.latency + (self._rng.random() - 0.5) * self.variance)
        self._count += 1
        heapq.heappush(self._held, (now + delay, self._count, data, addr))

    def next_release(self) -> float | None:
        """Return the time (s) the next held datagram is due, or ``None``."""
        return self._held[0][0] if self._held else None

    def release(self, now: float) -> list[tuple[bytes, Address]]:
        """Return the datagrams due at or before ``now`` (s), in release order."""
        out: list[tuple[bytes, Address]] = []
        held = self._held
        while held and held[0][0] <= now:
            _, _, data, addr = heapq.heappop(held)
            out.append((data, addr))
        return out
