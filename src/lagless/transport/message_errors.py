"""Errors, drop reasons and violation reasons of the message layer (channels, fragments, packer).

Implements STYLE §4 for the message layer that rides inside payload packets (DESIGN.md "Transport
defaults", "Bad input"). Decisions:

* Caller mistakes raise subclasses of ``LocalProtocolError``: ``MessageTooLarge`` for a payload
  above the channel's ``max_message_size`` (``test_channels.py::test_message_too_large_at_send``)
  and ``SendQueueFull`` when a reliable channel already holds ``send_queue_limit`` messages
  (``test_channels.py::test_reliable_send_queue_full_raises``).
* Bad bytes never raise: ``MessageLayer.read_packet`` returns a ``MessageDropReason`` and counts
  it. Reasons whose ``is_violation`` is true can only be produced by a peer that breaks the
  protocol (a conforming peer with the same ``MessageLayerConfig`` never causes them); the layer
  also records the first one in ``MessageLayer.violation`` so the connection can close with it
  (STYLE §4, third row) (``test_packer.py::test_violation_is_sticky_and_reported``).
"""

from __future__ import annotations

import enum

from lagless.errors import LocalProtocolError

__all__ = ["MessageDropReason", "MessageTooLarge", "SendQueueFull"]


class MessageTooLarge(LocalProtocolError):
    """``send`` was given a payload larger than the channel's ``max_message_size`` (bytes)."""


class SendQueueFull(LocalProtocolError):
    """A reliable channel already holds ``send_queue_limit`` unacknowledged messages."""


class MessageDropReason(enum.Enum):
    """Why the message layer dropped received bytes (one counter per member).

    Packet-level reasons (the whole payload is ignored and ``read_packet`` returns the reason):
    ``MALFORMED`` and every violation. Message-level reasons (one record skipped, the packet is
    still accepted): ``DUPLICATE`` and ``STALE``.
    """

    MALFORMED = "malformed"
    """The payload does not follow the record grammar (truncated, reserved bit set, bad varint,
    fragment index out of range, wrong fragment length)."""
    DUPLICATE = "duplicate"
    """A message (or fragment of a message) that was already received; normal after a resend."""
    STALE = "stale"
    """An unreliable message older than the dedupe window, or a sequenced message older than the
    newest one delivered (spec 000 §2.5, ENet ordering rule 3)."""
    UNKNOWN_CHANNEL = "unknown_channel"
    """Violation: channel index not configured on this connection."""
    UNEXPECTED_FRAGMENT = "unexpected_fragment"
    """Violation: a fragment on an unreliable channel (only reliable channels fragment)."""
    TOO_LARGE = "too_large"
    """Violation: message (or announced fragment count) above the channel's ``max_message_size``."""
    OUT_OF_WINDOW = "out_of_window"
    """Violation: reliable message id beyond ``reliable_window`` ahead of the receive frontier."""
    FRAGMENT_MISMATCH = "fragment_mismatch"
    """Violation: fragment count disagrees with earlier fragments of the same message."""
    REASSEMBLY_MEMORY = "reassembly_memory"
    """Violation: accepting a new fragmented message would exceed ``reassembly_memory_limit``."""
    REASSEMBLY_TIMEOUT = "reassembly_timeout"
    """Closes the connection: a half-reassembled reliable message got no new fragment for
    ``fragment_timeout`` seconds and was dropped; its acked fragments are never resent, so the
    channel could not go on. Not always the peer's fault (a path that drops only full-size
    packets causes it too), but the connection is as broken either way."""

    @property
    def is_violation(self) -> bool:
        """True when only a peer that breaks the protocol can cause this reason."""
        return self not in _NON_VIOLATIONS


class MessageViolation(Exception):
    """Raised inside the read path when the peer breaks the protocol; caught by ``read_packet``.

    Args:
        reason: The violation (``reason.is_violation`` is true).
    """

    def __init__(self, reason: MessageDropReason) -> None:
        """Wrap ``reason``."""
        super().__init__(reason.value)
        self.reason = reason
        """The violation."""


_NON_VIOLATIONS = frozenset(
    {MessageDropReason.MALFORMED, MessageDropReason.DUPLICATE, MessageDropReason.STALE}
)
