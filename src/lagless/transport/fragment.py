"""Fragmentation of large reliable messages and reassembly with memory bounded per connection.

Implements DESIGN.md "Transport defaults" (fragments of at most 1024 bytes, at most 256 per
message, reassembly memory bounded per connection) and spec 000 §2.5 (ENet feature 6).

Decisions:

* Every fragment but the last carries exactly ``fragment_size`` bytes and the last carries
  1..``fragment_size``; anything else is malformed. So a message of ``n`` bytes has
  ``ceil(n / fragment_size)`` fragments and the receiver knows its size bound from the first
  fragment it sees (``test_fragment.py::test_split_sizes``).
* The receiver *reserves* ``fragment_count * fragment_size`` bytes when the first fragment of a
  message arrives and keeps the reservation until the channel hands the message to the
  application, so the bound holds whatever order fragments come in and however small an
  adversary makes them; a new message that would push the reservation over
  ``reassembly_memory_limit`` raises ``MessageViolation(REASSEMBLY_MEMORY)`` and the memory is
  never allocated (``test_fragment.py::test_adversarial_fragments_never_exceed_limit``).
* A conforming sender never triggers that: it admits a fragmented message only while the sum of
  the reservations of its admitted, not yet released messages stays within the same limit, and
  releases a message only once the receiver must have delivered it (all fragments acked and, on
  an ordered channel, every earlier message acked too)
  (``test_channels.py::test_sender_admission``).
* Fragments of a message already complete are counted as duplicates by the channel before they
  reach the reassembler; a repeated fragment of an incomplete message is counted here.
* A half-reassembled message expires when no new fragment of it arrived for ``timeout`` seconds
  (``MessageLayerConfig.fragment_timeout``, 10 s: netcode's connection timeout): its reservation
  is released and it is counted in ``expired`` (``test_fragment.py::test_idle_partial_expires``).
  Idle time rather than age, because a 256 KiB message on a 15 packets/s link takes 17 s and
  more to arrive while making progress all along. The fragments already acked are never sent
  again, so an expired reliable message can never complete; the message layer reports it as
  ``REASSEMBLY_TIMEOUT`` and the connection closes instead of stalling its channel for ever.
  Partials sit in least-recently-touched order, so `Reassembler.expire` looks at the stale ones
  only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lagless.transport.message_errors import MessageDropReason, MessageViolation

__all__ = ["Fragmenter", "Reassembler"]


class Fragmenter:
    """Splits a payload into fragments of ``fragment_size`` bytes (the last may be shorter)."""

    __slots__ = ("fragment_size", "max_fragments")

    def __init__(self, *, fragment_size: int, max_fragments: int) -> None:
        """Create a fragmenter.

        Args:
            fragment_size: Payload bytes per fragment (bytes).
            max_fragments: Most fragments per message.
        """
        self.fragment_size = fragment_size
        """Payload bytes per fragment (bytes)."""
        self.max_fragments = max_fragments
        """Most fragments per message."""

    def count(self, size: int) -> int:
        """Return the number of fragments of a ``size``-byte message (1 when it needs none).

        Args:
            size: Payload size (bytes).

        Returns:
            ``max(1, ceil(size / fragment_size))``.
        """
        return max(1, math.ceil(size / self.fragment_size))

    def fragment(self, payload: bytes, index: int) -> bytes:
        """Return fragment ``index`` of ``payload``.

        Args:
            payload: The whole message.
            index: Fragment index, ``0 <= index < count(len(payload))``.

        Returns:
            ``payload[index * fragment_size : (index + 1) * fragment_size]``.
        """
        start = index * self.fragment_size
        return payload[start : start + self.fragment_size]


@dataclass(slots=True)
class _Partial:
    count: int
    reserved: int
    touched: float  # seconds: when its last new fragment arrived
    received: int = 0
    parts: dict[int, bytes] = field(default_factory=dict)


class Reassembler:
    """Collects fragments per (channel, message id) under a per-connection memory bound."""

    __slots__ = (
        "_partials",
        "duplicates",
        "expired",
        "fragment_size",
        "memory",
        "memory_limit",
        "peak",
        "timeout",
    )

    def __init__(self, *, fragment_size: int, memory_limit: int, timeout: float = 10.0) -> None:
        """Create an empty reassembler.

        Args:
            fragment_size: Payload bytes of every non-last fragment (bytes).
            memory_limit: Most bytes reserved at once (bytes, per connection).
            timeout: Seconds without a new fragment after which a partial message expires.
        """
        self.fragment_size = fragment_size
        """Payload bytes of every non-last fragment (bytes)."""
        self.memory_limit = memory_limit
        """Most bytes reserved at once (bytes)."""
        self.memory = 0
        """Bytes reserved now by incomplete messages and by complete ones not yet released."""
        self.peak = 0
        """Largest value ``memory`` has taken (bytes)."""
        self.duplicates = 0
        """Repeated fragments of incomplete messages seen."""
        self.timeout = timeout
        """Seconds without a new fragment after which a partial message expires."""
        self.expired = 0
        """Partial messages dropped by `expire`."""
        self._partials: dict[tuple[int, int], _Partial] = {}

    def __len__(self) -> int:
        """Return the number of incomplete messages held."""
        return len(self._partials)

    def add(
        self, key: tuple[int, int], index: int, count: int, data: bytes, *, now: float
    ) -> bytes | None:
        """Store one fragment; return the whole message once its last fragment arrives.

        The caller has already checked the record grammar (``index < count``, fragment lengths)
        and that the message is not complete yet. The reservation of a returned message stays
        held until the caller passes it to ``release``.

        Args:
            key: ``(channel, message_id)``.
            index: Fragment index.
            count: Number of fragments of the message (2..256).
            data: Fragment payload.
            now: Arrival time (seconds).

        Returns:
            The reassembled payload, or ``None`` while fragments are missing (or on a repeat).

        Raises:
            MessageViolation: ``FRAGMENT_MISMATCH`` if ``count`` differs from earlier fragments;
                ``REASSEMBLY_MEMORY`` if a new message does not fit in ``memory_limit``.
        """
        partial = self._partials.get(key)
        if partial is None:
            reserved = count * self.fragment_size
            if self.memory + reserved > self.memory_limit:
                raise MessageViolation(MessageDropReason.REASSEMBLY_MEMORY)
            partial = _Partial(count=count, reserved=reserved, touched=now)
            self._partials[key] = partial
            self.memory += reserved
            self.peak = max(self.peak, self.memory)
        elif partial.count != count:
            raise MessageViolation(MessageDropReason.FRAGMENT_MISMATCH)
        if index in partial.parts:
            self.duplicates += 1
            return None
        partial.parts[index] = data
        partial.received += 1
        partial.touched = now
        del self._partials[key]  # re-insert: the dict stays in least-recently-touched order
        self._partials[key] = partial
        if partial.received < partial.count:
            return None
        del self._partials[key]
        return b"".join(partial.parts[i] for i in range(partial.count))

    def next_expiry(self) -> float | None:
        """Return when (seconds) the least recently touched partial message expires, or None."""
        for partial in self._partials.values():
            return partial.touched + self.timeout
        return None

    def expire(self, now: float) -> list[tuple[int, int]]:
        """Drop the partial messages idle for ``timeout`` seconds at ``now``; release their memory.

        Args:
            now: Current time (seconds).

        Returns:
            The ``(channel, message_id)`` keys dropped (counted in ``expired``).
        """
        dropped: list[tuple[int, int]] = []
        partials = self._partials
        limit = now - self.timeout
        while partials:
            key, partial = next(iter(partials.items()))
            if partial.touched > limit:
                break
            del partials[key]
            self.memory -= partial.reserved
            self.expired += 1
            dropped.append(key)
        return dropped

    def reserved_for(self, count: int) -> int:
        """Return the reservation (bytes) of a message of ``count`` fragments.

        Args:
            count: Number of fragments.

        Returns:
            ``count * fragment_size``.
        """
        return count * self.fragment_size

    def release(self, reserved: int) -> None:
        """Return the reservation of a message handed to the application.

        Args:
            reserved: Bytes reserved for it (``reserved_for(count)``).
        """
        self.memory -= reserved
