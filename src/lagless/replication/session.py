"""Events a `ReplicationServer` / `ReplicationClient` emits from ``next_event()`` (STYLE §6.4).

Implements the application side of issue 13 items 3 and 5: clients joining and leaving, replicas
constructed and destroyed, ownership changes, typed events received and snapshots applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from lagless.replication.events import NetEvent, Target
from lagless.replication.objects import NetworkObject

__all__ = [
    "ClientJoined",
    "ClientLeft",
    "EventReceived",
    "ObjectAnnounced",
    "ObjectDestroyed",
    "OwnerChanged",
    "ReplicationEvent",
    "SnapshotReceived",
    "Welcomed",
]


@dataclass(frozen=True, slots=True)
class ClientJoined:
    """Server: a client connected; ``client`` is its id (the transport connection id)."""

    client: int


@dataclass(frozen=True, slots=True)
class ClientLeft:
    """Server: a client disconnected."""

    client: int


@dataclass(frozen=True, slots=True)
class Welcomed:
    """Client: the server named this client ``client``; replication starts."""

    client: int


@dataclass(frozen=True, slots=True)
class ObjectAnnounced:
    """Client: a replica was constructed (role proxy, or owner when this client owns it)."""

    obj: NetworkObject


@dataclass(frozen=True, slots=True)
class ObjectDestroyed:
    """Client: a replica was destroyed by its authority."""

    ident: int
    cls: type[NetworkObject]


@dataclass(frozen=True, slots=True)
class OwnerChanged:
    """Client: a replica's owner changed (its role follows); server: an owner update applied."""

    obj: NetworkObject
    owner: int | None


@dataclass(frozen=True, slots=True)
class EventReceived:
    """A typed event arrived (on the server: addressed to it; on a client: to this client)."""

    event: NetEvent
    sender: int | None
    """The sending client's id, or None for the server."""
    target: Target
    time: float
    """The sender's synchronised time when it sent the event, seconds."""


@dataclass(frozen=True, slots=True)
class SnapshotReceived:
    """Client: a snapshot was applied."""

    seq: int
    server_time: float
    """Server time the snapshot was built at, seconds (modulo 2^32 ms)."""
    updated: tuple[NetworkObject, ...]
    """Replicas whose state it changed."""


ReplicationEvent: TypeAlias = (
    ClientJoined
    | ClientLeft
    | Welcomed
    | ObjectAnnounced
    | ObjectDestroyed
    | OwnerChanged
    | EventReceived
    | SnapshotReceived
)
"""Anything ``next_event()`` of the replication server or client returns."""
