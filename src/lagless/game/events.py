"""Events the game server, game client, discovery and rooms emit from ``next_event()``.

Implements the callbacks of spec 003 §5.4.1-§5.4.2 as typed, frozen events (DESIGN.md "The
sans-I/O contract"): ``ClientConnected`` / ``ClientDisconnected`` on the server become
`PlayerJoined` / `PlayerLeft` (and `PlayerRejected` for the accept decision),
``ConnectionEstablished`` / ``ConnectingFailed`` / ``Disconnected`` on the client become
`ConnectionEstablished` / `ConnectingFailed` / `ConnectionEnded`, and ``ServerDiscovered``
becomes `ServerDiscovered` (plus `ServerLost` when a server stops answering).
"""

from __future__ import annotations

from dataclasses import dataclass

from lagless._types import Address
from lagless.replication import HitVerdict, KillDecision

__all__ = [
    "ClientInfo",
    "ConnectingFailed",
    "ConnectionEnded",
    "ConnectionEstablished",
    "DiscoveredServer",
    "KillDecided",
    "PlayerJoined",
    "PlayerLeft",
    "PlayerRejected",
    "ServerDiscovered",
    "ServerLost",
    "ShotJudged",
]


@dataclass(frozen=True, slots=True)
class ClientInfo:
    """A client as the game server knows it (the thesis's ``Host``)."""

    client: int
    """The server's id for it (the transport connection id, never reused)."""
    address: Address
    """Its source address."""
    client_id: int
    """The 64-bit client id from its connect token."""
    name: str
    """The player name it sent in its token's user data (UTF-8, at most 16 characters)."""
    connected_at: float
    """Server time it connected (s)."""


@dataclass(frozen=True, slots=True)
class PlayerJoined:
    """Server: a client was accepted; ``avatar`` is the ID of the entity it owns."""

    info: ClientInfo
    avatar: int


@dataclass(frozen=True, slots=True)
class PlayerRejected:
    """Server: a client completed the handshake but was refused (not listening, full, or the
    accept decision said no) and was disconnected."""

    info: ClientInfo
    reason: str


@dataclass(frozen=True, slots=True)
class PlayerLeft:
    """Server: an accepted client went away (``reason``: ``timed_out``, ``client_disconnected``,
    ``kicked``, ``protocol_violation``, ...)."""

    info: ClientInfo
    reason: str


@dataclass(frozen=True, slots=True)
class ShotJudged:
    """Server: lag compensation judged a client's shot."""

    client: int
    verdict: HitVerdict
    blocked: bool
    """True if the ray hit a wall before the target (the hit then does not stand)."""


@dataclass(frozen=True, slots=True)
class KillDecided:
    """Server: a held kill's rollback window passed (committed or dropped)."""

    decision: KillDecision


@dataclass(frozen=True, slots=True)
class ConnectionEstablished:
    """Client: connected and welcomed; ``client`` is its id on the server."""

    client: int


@dataclass(frozen=True, slots=True)
class ConnectingFailed:
    """Client: a connection attempt ended without a connection (``reason``: the netcode state
    name in lower case, or ``stopped`` after `stop_connecting`)."""

    reason: str


@dataclass(frozen=True, slots=True)
class ConnectionEnded:
    """Client: an established connection ended (``reason``: ``local``, ``server_disconnected``,
    ``timed_out``); ``kicked`` holds the server's reason when it kicked this client."""

    reason: str
    kicked: str | None


@dataclass(frozen=True, slots=True)
class DiscoveredServer:
    """A game server found on the LAN (spec 003 §5.4.2's discovered-server list entry)."""

    address: Address
    """Where to connect: the replying host and the game port it announced."""
    name: str
    players: int
    max_players: int
    game: str
    """Game or map name the server announced."""
    last_seen: float
    """Local time of its latest answer (s)."""
    rtt: float
    """Time from the query to this answer (s)."""


@dataclass(frozen=True, slots=True)
class ServerDiscovered:
    """Discovery: a server answered for the first time (later answers update the list only)."""

    server: DiscoveredServer


@dataclass(frozen=True, slots=True)
class ServerLost:
    """Discovery: a server stopped answering for ``expiry`` seconds and left the list."""

    address: Address
