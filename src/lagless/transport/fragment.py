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
    received: int = 0
    parts: dict[int, bytes] = field(default_factory=dict)


class Reassembler:
    """Collects fragments per (channel, message id) under a per-connection memory bound."""

    __slots__ = ("_partials", "duplicates", "fragment_size", "memory", "memory_limit", "peak")

    def __init__(self, *, fragment_size: int, memory_limit: int) -> None:
        """Create an empty reassembler.

        Args:
            fragment_size: Payload bytes of every non-last fragment (bytes).
            memory_limit: Most bytes reserved at once (bytes, per connection).
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
        self._partials: dict[tuple[int, int], _Partial] = {}

    def __len__(self) -> int:
        """Return the number of incomplete messages held."""
        return len(self._partials)

    def add(self, key: tuple[int, int], index: int, count: int, data: bytes) -> bytes | None:
        """Store one fragment; return the whole message once its last fragment arrives.

        The caller has already checked the record grammar (``index < count``, fragment lengths)
        and that the message is not complete yet. The reservation of a returned message stays
        held until the caller passes it to ``release``.

        Args:
            key: ``(channel, message_id)``.
            index: Fragment index.
            count: Number of fragments of the message (2..256).
            data: Fragment payload.

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
            partial = _Partial(count=count, reserved=reserved)
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
        if partial.received < partial.count:
            return None
        del self._partials[key]
        return b"".join(partial.parts[i] for i in range(partial.count))

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
