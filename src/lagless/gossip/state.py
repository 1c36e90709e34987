"""Membership state machine, drop reasons and statistics of a `lagless.gossip.GossipPeer`.

Implements STYLE §6.6 (state machines are tables; negative = failure) for the join / leave life
cycle of spec 002 §2.5.3-§2.5.6 and §3.12, and STYLE §4 (every drop has a reason and a counter).
Decision (spec 002 §7.15): the first reject while joining ends the join (REJECTED), and a peer
that failed or was rejected may join again (``test_peer.py::test_transition_table_and_verbs``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

__all__ = ["TRANSITIONS", "DropReason", "GossipStatistics", "PeerInput", "PeerState"]


class PeerState(enum.IntEnum):
    """Membership state: negative = failure, 0 = idle, positive = progress (STYLE §6.6)."""

    JOIN_FAILED = -2
    """No accept after ``join_attempts`` requests."""
    REJECTED = -1
    """A participant rejected the join request."""
    IDLE = 0
    """Not in a game."""
    JOINING = 1
    """Join requests sent, waiting for an accept."""
    JOINED = 2
    """In the game: sending avatar info every frame and forwarding."""
    LEFT = 3
    """Sent its leave message; the peer is finished."""


class PeerInput(enum.Enum):
    """Inputs that change `PeerState`."""

    JOIN = "join"
    """``join(contacts, now)`` with at least one contact."""
    HOST = "host"
    """``join([], now)``: become the game's first participant."""
    ACCEPT_RECEIVED = "accept_received"
    """A join accept from a participant describing itself."""
    REJECT_RECEIVED = "reject_received"
    """A join reject."""
    JOIN_TIMED_OUT = "join_timed_out"
    """The last join request went unanswered."""
    LEAVE = "leave"
    """``leave(now)``."""


TRANSITIONS: Final[Mapping[tuple[PeerState, PeerInput], PeerState]] = MappingProxyType(
    {
        (PeerState.IDLE, PeerInput.JOIN): PeerState.JOINING,
        (PeerState.IDLE, PeerInput.HOST): PeerState.JOINED,
        (PeerState.REJECTED, PeerInput.JOIN): PeerState.JOINING,
        (PeerState.REJECTED, PeerInput.HOST): PeerState.JOINED,
        (PeerState.JOIN_FAILED, PeerInput.JOIN): PeerState.JOINING,
        (PeerState.JOIN_FAILED, PeerInput.HOST): PeerState.JOINED,
        (PeerState.JOINING, PeerInput.ACCEPT_RECEIVED): PeerState.JOINED,
        (PeerState.JOINING, PeerInput.REJECT_RECEIVED): PeerState.REJECTED,
        (PeerState.JOINING, PeerInput.JOIN_TIMED_OUT): PeerState.JOIN_FAILED,
        (PeerState.JOINING, PeerInput.LEAVE): PeerState.LEFT,
        (PeerState.JOINED, PeerInput.ACCEPT_RECEIVED): PeerState.JOINED,
        (PeerState.JOINED, PeerInput.REJECT_RECEIVED): PeerState.JOINED,
        (PeerState.JOINED, PeerInput.LEAVE): PeerState.LEFT,
    }
)
"""Every legal (state, input) pair; anything else is ignored (network) or refused (application)."""


class DropReason(enum.Enum):
    """Why a received datagram was dropped, in check order."""

    MALFORMED = "malformed"
    """`lagless.gossip.codec.decode` raised `DecodeError`."""
    NOT_FOR_PEER = "not_for_peer"
    """An info-server message (types 32–35) reached a game peer."""
    HOP_EXCEEDED = "hop_exceeded"
    """The header hop is above ``max_hop`` (§2.13)."""
    NOT_IN_GAME = "not_in_game"
    """The peer's state does not take this message (e.g. avatar info while joining)."""
    WRONG_GAME = "wrong_game"
    """The header game id is not this peer's game."""
    OWN_MESSAGE = "own_message"
    """A copy of this node's own message, or data describing itself."""
    DEPARTED = "departed"
    """About a participant that left less than ``forget_timeout`` ago."""
    DUPLICATE = "duplicate"
    """The message key was already seen (§2.10)."""
    TABLE_FULL = "table_full"
    """A new participant while the table holds ``max_peers``."""
    PENDING_FULL = "pending_full"
    """The pending queue holds ``max_pending`` messages; it is processed but not forwarded."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GossipStatistics:
    """A snapshot of a peer's counters (trio-style ``statistics()``)."""

    dropped: Mapping[DropReason, int]
    """Datagrams dropped per reason; every reason present."""
    datagrams_received: int
    """Datagrams handed to ``receive_datagram``."""
    bytes_received: int
    """Their bytes (UDP payload only)."""
    datagrams_sent: int
    """Datagrams returned by ``datagrams_to_send``."""
    bytes_sent: int
    """Their bytes (UDP payload only; add 28 per datagram for IPv4 + UDP)."""
    originated: int
    """Own messages originated (logical clock ticks)."""
    forwarded: int
    """Pending messages forwarded."""
    suppressed: int
    """Pending messages cancelled by duplicates from other senders (§2.10)."""
    received_by_hop: Mapping[int, int]
    """First copies accepted, by header hop (spec 002 §3.5, experiment E8)."""
    peers: int
    """Peers in the table now."""


@dataclass(slots=True, kw_only=True)
class Counters:
    """Mutable counters behind `GossipStatistics` (owned by one peer)."""

    dropped: dict[DropReason, int] = field(default_factory=lambda: dict.fromkeys(DropReason, 0))
    datagrams_received: int = 0
    bytes_received: int = 0
    datagrams_sent: int = 0
    bytes_sent: int = 0
    originated: int = 0
    forwarded: int = 0
    suppressed: int = 0
    by_hop: dict[int, int] = field(default_factory=dict)
