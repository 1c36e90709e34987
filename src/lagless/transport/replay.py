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

EMPTY: Final = (1 << 64) - 1
"""The marker of a slot of `ReplayWindow.entries` that holds no sequence number."""


class ReplayWindow:
    """Remembers the last 256 sequence numbers received from one peer under one key."""

    __slots__ = ("entries", "most_recent")

    def __init__(self) -> None:
        """Create an empty window (``most_recent`` = 0)."""
        self.most_recent: int = 0
        """Highest sequence number accepted so far (0 after a reset)."""
        self.entries: list[int] = [EMPTY] * REPLAY_BUFFER_SIZE
        """Slot ``sequence % 256`` holds the last sequence number seen there, or `EMPTY`."""

    def reset(self) -> None:
        """Forget every sequence number (spec §7: on each connection attempt and slot reset)."""
        self.most_recent = 0
        self.entries = [EMPTY] * REPLAY_BUFFER_SIZE

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
        entry = self.entries[sequence % REPLAY_BUFFER_SIZE]
        if entry == EMPTY:
            return False
        return entry >= sequence

    def advance(self, sequence: int) -> None:
        """Record ``sequence`` as received; call only after a successful decrypt (spec §6.5 step 7).

        Args:
            sequence: packet sequence number in [0, 2^64).
        """
        if sequence > self.most_recent:
            self.most_recent = sequence
        self.entries[sequence % REPLAY_BUFFER_SIZE] = sequence
