"""The netcode client state machine as a table, and the disconnect reasons of both ends.

Implements netcode-1.02 spec §9 (client states, receive table, timeouts, expiry) and §10.6
(server disconnect reasons). STYLE §6.6: one enum with negative failure values, one
``CLIENT_TRANSITIONS`` table; :class:`~lagless.transport.netcode_client.NetcodeClient` changes its
state only through :func:`next_client_state`. Decisions:

* A disconnect packet from the server moves a connected client to ``DISCONNECTED`` directly; the
  reference's quirk of then trying the token's next server is not reproduced
  (``test_netcode_session.py::test_server_disconnect_does_not_try_next_server``).
* A failure state is left only by a new ``connect``
  (``test_netcode_session.py::test_failure_exits``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final


class NetcodeClientState(enum.IntEnum):
    """Client states with netcode's codes: negative = failed, 0 = idle, positive = progress."""

    CONNECT_TOKEN_EXPIRED = -6
    """The token's lifetime ran out while connecting."""
    INVALID_CONNECT_TOKEN = -5
    """The token given to ``connect`` does not parse (spec §4.5)."""
    CONNECTION_TIMED_OUT = -4
    """A connected server went silent for the token's timeout."""
    CONNECTION_RESPONSE_TIMED_OUT = -3
    """No keep-alive answered the responses, on every server."""
    CONNECTION_REQUEST_TIMED_OUT = -2
    """No challenge answered the requests, on every server."""
    CONNECTION_DENIED = -1
    """Every server answered "full"."""
    DISCONNECTED = 0
    """Idle (initial state, and after a clean disconnect)."""
    SENDING_CONNECTION_REQUEST = 1
    """Sending requests at 10 Hz."""
    SENDING_CONNECTION_RESPONSE = 2
    """Sending challenge responses at 10 Hz."""
    CONNECTED = 3
    """Exchanging payloads and keep-alives."""


class ClientInput(enum.Enum):
    """What can move the client's state (spec §9)."""

    CONNECT = "connect"
    """``connect`` with a valid token (or insecure connect)."""
    CONNECT_INVALID_TOKEN = "connect_invalid_token"
    """``connect`` with a token that fails validation."""
    CHALLENGE_RECEIVED = "challenge_received"
    """A challenge packet from the current server."""
    KEEP_ALIVE_RECEIVED = "keep_alive_received"
    """A keep-alive packet from the current server."""
    TRY_NEXT_SERVER = "try_next_server"
    """Denied or timed out, and the token lists another server."""
    DENIED = "denied"
    """Denied by the last server in the token."""
    TIMED_OUT = "timed_out"
    """No packet from the server for the token's timeout, and no other server to try."""
    TOKEN_EXPIRED = "token_expired"
    """The token's lifetime ran out while connecting."""
    SERVER_DISCONNECTED = "server_disconnected"
    """A disconnect packet from the server."""
    LOCAL_DISCONNECT = "local_disconnect"
    """The application called ``disconnect``."""


_S = NetcodeClientState
_I = ClientInput
_CONNECTING: Final = (_S.SENDING_CONNECTION_REQUEST, _S.SENDING_CONNECTION_RESPONSE)
_ACTIVE: Final = (*_CONNECTING, _S.CONNECTED)

_table: dict[tuple[NetcodeClientState, ClientInput], NetcodeClientState] = {}
for _state in NetcodeClientState:
    _table[_state, _I.CONNECT] = _S.SENDING_CONNECTION_REQUEST
    _table[_state, _I.CONNECT_INVALID_TOKEN] = _S.INVALID_CONNECT_TOKEN
for _state in _CONNECTING:
    _table[_state, _I.TRY_NEXT_SERVER] = _S.SENDING_CONNECTION_REQUEST
    _table[_state, _I.DENIED] = _S.CONNECTION_DENIED
    _table[_state, _I.TOKEN_EXPIRED] = _S.CONNECT_TOKEN_EXPIRED
for _state in _ACTIVE:
    _table[_state, _I.LOCAL_DISCONNECT] = _S.DISCONNECTED
_table[_S.SENDING_CONNECTION_REQUEST, _I.CHALLENGE_RECEIVED] = _S.SENDING_CONNECTION_RESPONSE
_table[_S.SENDING_CONNECTION_RESPONSE, _I.KEEP_ALIVE_RECEIVED] = _S.CONNECTED
_table[_S.SENDING_CONNECTION_REQUEST, _I.TIMED_OUT] = _S.CONNECTION_REQUEST_TIMED_OUT
_table[_S.SENDING_CONNECTION_RESPONSE, _I.TIMED_OUT] = _S.CONNECTION_RESPONSE_TIMED_OUT
_table[_S.CONNECTED, _I.TIMED_OUT] = _S.CONNECTION_TIMED_OUT
_table[_S.CONNECTED, _I.SERVER_DISCONNECTED] = _S.DISCONNECTED

CLIENT_TRANSITIONS: Final[Mapping[tuple[NetcodeClientState, ClientInput], NetcodeClientState]] = (
    MappingProxyType(_table)
)
"""Every legal (state, input) -> next state of the netcode client (spec §9)."""


def next_client_state(state: NetcodeClientState, event: ClientInput) -> NetcodeClientState | None:
    """Look up a transition.

    Args:
        state: the current state.
        event: what happened.

    Returns:
        The next state, or ``None`` if ``event`` does not apply in ``state``.
    """
    return CLIENT_TRANSITIONS.get((state, event))


class ServerDisconnectReason(enum.IntEnum):
    """Why a server slot was freed (spec §10.6 codes)."""

    TIMED_OUT = 1
    """No packet from the client for the token's timeout."""
    CLIENT_DISCONNECTED = 2
    """The client sent a disconnect packet."""
    SERVER_DISCONNECTED = 3
    """The application called ``NetcodeServer.disconnect``."""
    PROTOCOL_VIOLATION = 4
    """lagless: the authenticated client broke the message protocol (``ConnectionViolated``)."""
    SEND_QUEUE_FULL = 5
    """lagless: the client acknowledged too little for a reliable send queue to drain."""
    APPLICATION_ERROR = 6
    """lagless: the application's handler raised while handling this client's event."""
    REPLACED = 7
    """lagless: a connection request came from this slot's address, or with its client id, after
    the slot had been silent for ``NetcodeServerConfig.takeover_after``: its client is gone (it
    restarted, or its NAT gave the port to another client)."""


class ClientDisconnectReason(enum.Enum):
    """Why a connected (or connecting) client went back to idle or failed."""

    LOCAL = "local"
    """The application called ``NetcodeClient.disconnect`` (or ``connect`` again)."""
    SERVER_DISCONNECTED = "server_disconnected"
    """The server sent a disconnect packet."""
    TIMED_OUT = "timed_out"
    """The server went silent for the token's timeout (state ``CONNECTION_TIMED_OUT``)."""
