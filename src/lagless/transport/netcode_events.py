"""Events of the netcode connection layer, pulled with ``next_event()`` (STYLE §6.4).

Implements the application-facing side of netcode-1.02 spec §9 (client) and §10 (server). Both
ends use one :class:`PayloadReceived`; on the client its ``client_index`` is the slot the server
assigned. Decisions: a failed connection attempt raises no exception; it is a
:class:`ConnectFailed` whose ``state`` is the negative client state
(``test_netcode_session.py::test_expired_token``).
"""

from __future__ import annotations

from dataclasses import dataclass

from lagless._types import Address
from lagless.transport.netcode_state import (
    ClientDisconnectReason,
    NetcodeClientState,
    ServerDisconnectReason,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class NetcodeEvent:
    """Base class of every netcode event."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientConnected(NetcodeEvent):
    """Server: a client completed the handshake and owns a slot."""

    client_index: int
    """Slot index in [0, max_clients); the slot is reused after a disconnect."""
    connection_id: int
    """This connection's identity on the server, counting from 1 and never reused: the handle
    to pass to the server's verbs, so a late verb cannot reach the slot's next client."""
    client_id: int
    """uint64 client id from the connect token."""
    address: Address
    """The client's source address."""
    user_data: bytes
    """256 bytes of user data from the connect token."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientDisconnected(NetcodeEvent):
    """Server: a slot was freed."""

    client_index: int
    """Slot index in [0, max_clients)."""
    connection_id: int
    """The identity its ``ClientConnected`` carried."""
    reason: ServerDisconnectReason
    """Why the slot was freed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PayloadReceived(NetcodeEvent):
    """Either end: an application datagram arrived."""

    client_index: int
    """Server: the sender's slot. Client: its own slot."""
    connection_id: int
    """Server: the sender's connection identity (see ``ClientConnected``). Client: the ordinal of
    its connections (1, 2, ...)."""
    payload: bytes
    """1 to 1200 bytes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Connected(NetcodeEvent):
    """Client: the server accepted it (first keep-alive received)."""

    client_index: int
    """The slot the server assigned."""
    connection_id: int
    """The ordinal of this client's connections (1, 2, ...), copied into its later events."""
    max_clients: int
    """Number of slots of the server."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectFailed(NetcodeEvent):
    """Client: the connection attempt ended without a connection."""

    state: NetcodeClientState
    """The negative state the client is now in."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Disconnected(NetcodeEvent):
    """Client: a connection (or attempt) that had started has ended."""

    reason: ClientDisconnectReason
    """Why it ended."""
