"""Replay protection for netcode keep-alive, payload and disconnect packets (window of 256).

Implements netcode-1.02 spec §7. Decisions:

* The "too old" test is written ``most_recent >= 256 and seq <= most_recent - 256`` so it cannot
  overflow near 2^64 (IMPLEMENTERS.md finding #1), pinned by the ``replay_protection`` vector.
* An entry equal to the empty marker ``2^64 - 1`` counts as empty, as in the reference, so the
  sequence ``2^64 - 1`` itself is never remembered
  (``test_netcode_codecs.py::test_max_sequence_is_never_remembered``).
"""

from __future__ import annotations

from typing import Final

from lagless.transport.constants import REPLAY_BUFFER_SIZE

_EMPTY: Final = (1 << 64) - 1


class ReplayWindow:
    """Remembers the last 256 sequence numbers received from one peer under one key."""

    __slots__ = ("_entries", "most_recent")

    def __init__(self) -> None:
        """Create an empty window (``most_recent`` = 0)."""
        self.most_recent: int = 0
        """Highest sequence number accepted so far (0 after a reset)."""
        self._entries: list[int] = [_EMPTY] * REPLAY_BUFFER_SIZE

    def reset(self) -> None:
        """Forget every sequence number (spec §7: on each connection attempt and slot reset)."""
        self.most_recent = 0
        self._entries = [_EMPTY] * REPLAY_BUFFER_SIZE

    def already_received(self, sequence: int) -> bool:
        """Return whether ``sequence`` must be dropped as a replay (spec §7).

        Args:
            sequence: packet sequence number in [0, 2^64).

        Returns:
            True when it is older than the window or its slot holds the same or a newer number.
        """
        most_recent = self.most_recent
        if most_recent >= REPLAY_BUFFER_SIZE and sequence <= most_recent - REPLAY_BUFFER_SIZE:
            return True
        entry = self._entries[sequence % REPLAY_BUFFER_SIZE]
        if entry == _EMPTY:
            return False
        return entry >= sequence

    def advance(self, sequence: int) -> None:
        """Record ``sequence`` as received; call only after a successful decrypt (spec §6.5 step 7).

        Args:
            sequence: packet sequence number in [0, 2^64).
        """
        if sequence > self.most_recent:
            self.most_recent = sequence
        self._entries[sequence % REPLAY_BUFFER_SIZE] = sequence
