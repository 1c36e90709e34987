"""Events of the VFC server and client (``VfcServer.next_event`` / ``VfcClient.next_event``).

Implements the application side of spec 001 §3.8: a client joined or left, objects were added
or removed, a view changed, a client was forced off, replicas were updated. (``interest/events.py``
holds the positional-event filters of §3.6, hence this module's name.)
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ClientJoined",
    "ClientLeft",
    "Joined",
    "Kicked",
    "ObjectAdded",
    "ObjectRemoved",
    "ReplicasUpdated",
    "VfcEvent",
    "ViewChanged",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class VfcEvent:
    """Base class of VFC session events."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientJoined(VfcEvent):
    """Server: a client joined the session."""

    client_id: int
    """Its VFC client id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientLeft(VfcEvent):
    """Server: a client left or was disconnected; its objects were removed."""

    client_id: int
    """Its VFC client id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectAdded(VfcEvent):
    """Server: a client registered a shared object."""

    object_id: int
    """The object's id."""
    owner: int
    """The owner's client id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ObjectRemoved(VfcEvent):
    """Server or client: an object was deleted."""

    object_id: int
    """The object's id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewChanged(VfcEvent):
    """Server: a client replaced its view (``SetPhi``)."""

    client_id: int
    """Its VFC client id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Joined(VfcEvent):
    """Client: the server accepted the join."""

    client_id: int
    """The id the server assigned."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Kicked(VfcEvent):
    """Client: the server forced a disconnect."""

    reason: str
    """The server's reason."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplicasUpdated(VfcEvent):
    """Client: an update datagram refreshed replicas."""

    object_ids: tuple[int, ...]
    """The ids refreshed."""
