"""Events a `lagless.gossip.GossipPeer` emits, pulled with ``next_event()`` (STYLE §6.4).

Implements the application side of spec 002 §2.5 (join, accept, reject, leave, avatar state,
interactions) and §2.7 (conflict rollback).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from lagless._types import Address
from lagless.gossip.messages import AvatarState, Interaction, RejectCode

__all__ = [
    "AvatarUpdated",
    "GossipEvent",
    "InteractionReceived",
    "InteractionRolledBack",
    "JoinAccepted",
    "JoinFailed",
    "JoinRejected",
    "LeaveReason",
    "PeerJoined",
    "PeerLeft",
]


class LeaveReason(enum.Enum):
    """Why a peer left the table."""

    LEFT = "left"
    """It sent a leave message (§2.5.6)."""
    TIMED_OUT = "timed_out"
    """Nothing was heard from it for ``forget_timeout`` seconds (§3.2)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GossipEvent:
    """Base class of gossip events."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinAccepted(GossipEvent):
    """The first join accept arrived; the peer is now in the game."""

    game_id: int
    """The game's id."""
    accepted_by: int
    """Avatar id of the first accepting participant."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinRejected(GossipEvent):
    """A participant rejected this peer's join request (Table 2.2)."""

    code: RejectCode
    """Why."""
    rejected_by: int
    """Avatar id of the rejecting participant."""


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinFailed(GossipEvent):
    """No accept arrived after ``join_attempts`` requests."""

    attempts: int
    """Join requests sent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerJoined(GossipEvent):
    """A participant's full data (model, name, address) became known."""

    avatar_id: int
    """Its avatar id."""
    address: Address
    """Where it receives messages."""
    name: str
    """Its participant name."""
    model: int
    """Its avatar model id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerLeft(GossipEvent):
    """A participant left the table."""

    avatar_id: int
    """Its avatar id."""
    reason: LeaveReason
    """Leave message or silence timeout."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AvatarUpdated(GossipEvent):
    """A newer avatar state of another participant arrived (type 9, or 0/1 with full data)."""

    avatar: AvatarState
    """The new state."""
    message_number: int
    """The originator's message number it came in."""
    hop: int
    """Header hop of the copy that delivered it first (0 = direct from the owner)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InteractionReceived(GossipEvent):
    """Another participant's interaction was applied to the local world (§2.7)."""

    avatar_id: int
    """Who performed it."""
    interaction: Interaction
    """What."""
    corrected: bool
    """True when it arrived in a type-10 correction rather than avatar info."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InteractionRolledBack(GossipEvent):
    """An interaction was undone: a conflict (both sides lose) or an owner's announcement."""

    avatar_id: int
    """Whose interaction."""
    interaction: Interaction
    """Which."""
