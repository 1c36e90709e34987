"""The lagless server: netcode 1.02 slots with a reliable, paced `Connection` inside each.

Implements DESIGN.md "Transport defaults" by composition (STYLE §3 "layering by composition"):
`NetcodeServer` owns the handshake, encryption, keep-alives and timeouts, and each connected slot
gets a `Connection` whose payloads ride inside netcode payload packets. The server is sans-I/O:
drivers in `lagless.io` pump it exactly like any other protocol object.

Decisions: a message-layer violation by an authenticated client emits `ConnectionViolated` and
disconnects that slot (STYLE §4, third channel) (``test_client_server.py::test_violation``);
`send` to a slot that is not connected raises `LocalProtocolError`.

Plain netcode clients beside lagless ones (``plain_unmarked=True``, what ``lagless serve`` uses):
a lagless client marks its connect token's user data with `LAGLESS_MARK` (`mark_user_data`; the
insecure `Client.connect_insecure` and ``lagless.apps.make_token`` do it), so a server can tell it
from a client of any other netcode 1.02 implementation, whose payloads are the application's
datagrams. Unmarked clients then get no `Connection`: their payloads come out as
`PayloadReceived` and `send_raw` answers them, which is how the netcode reference ``client``
talks to ``lagless serve`` (``test_client_server.py::test_plain_netcode_client_beside_lagless``).
The mark is stripped from the `ClientConnected` the application sees.
"""

from __future__ import annotations

import dataclasses
import os
from collections import deque
from collections.abc import Callable
from typing import Final

from lagless._types import Address
from lagless.errors import LocalProtocolError
from lagless.transport.connection import Connection, ConnectionConfig, ConnectionStatistics
from lagless.transport.events import ConnectionViolated, Event
from lagless.transport.netcode_events import ClientConnected, ClientDisconnected, PayloadReceived
from lagless.transport.netcode_server import NetcodeServer, NetcodeServerConfig

LAGLESS_MARK: Final = b"LAGLESS\x01"  # first user-data bytes of a lagless client's token
USER_DATA_BYTES: Final = 256  # netcode 1.02 user data size, bytes


def mark_user_data(user_data: bytes = b"") -> bytes:
    """Return ``user_data`` prefixed with `LAGLESS_MARK` (at most 248 bytes of it fit).

    Raises:
        LocalProtocolError: ``user_data`` is longer than 248 bytes.
    """
    room = USER_DATA_BYTES - len(LAGLESS_MARK)
    if len(user_data) > room:
        raise LocalProtocolError(f"user_data must be at most {room} bytes, got {len(user_data)}")
    return LAGLESS_MARK + user_data


class Server:
    """A netcode 1.02 server whose payloads carry lagless channels, acks and clock sync.

    Args:
        config: the netcode layer's settings (protocol id, key, public address, slots).
        connection: the reliability layer's settings, the same for every client.
        random_bytes: source of cryptographic randomness.
        unix_time_offset: seconds to add to ``now`` to get Unix time (token expiry checks).
        plain_unmarked: serve clients whose token lacks `LAGLESS_MARK` as plain netcode clients
            (raw payloads) instead of lagless ones.
    """

    def __init__(
        self,
        *,
        config: NetcodeServerConfig,
        connection: ConnectionConfig | None = None,
        random_bytes: Callable[[int], bytes] = os.urandom,
        unix_time_offset: float = 0.0,
        plain_unmarked: bool = False,
    ) -> None:
        self.netcode = NetcodeServer(
            config=config, random_bytes=random_bytes, unix_time_offset=unix_time_offset
        )
        self._connection_config = connection if connection is not None else ConnectionConfig()
        self._connections: dict[int, Connection] = {}
        self._plain: set[int] = set()
        self._plain_unmarked = plain_unmarked
        self._events: deque[Event] = deque()
        self._now = 0.0

    # -- application verbs --------------------------------------------------------------------

    @property
    def clients(self) -> list[int]:
        """Slot indices of the connected clients, ascending."""
        return sorted(self._connections)

    def send(self, client_index: int, channel: int, payload: bytes) -> int:
        """Queue ``payload`` on ``channel`` to one client; return the message id.

        Raises:
            LocalProtocolError: the slot is not connected, the channel is unknown, or the message
                is too large (`MessageTooLarge`).

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        return self._connection(client_index).send(channel, payload)

    def broadcast(self, channel: int, payload: bytes) -> None:
        """Queue ``payload`` on ``channel`` to every connected client.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        for connection in self._connections.values():
            connection.send(channel, payload)

    @property
    def plain_clients(self) -> list[int]:
        """Slot indices of the connected plain netcode clients (``plain_unmarked``), ascending."""
        return sorted(self._plain)

    def send_raw(self, client_index: int, payload: bytes) -> None:
        """Send one raw payload (1..1200 bytes) to a plain netcode client.

        Raises:
            LocalProtocolError: the slot is not a connected plain client, or the size is wrong.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if client_index not in self._plain:
            raise LocalProtocolError(
                f"client_index must be a plain netcode client {self.plain_clients}, "
                f"got {client_index}"
            )
        self.netcode.send_payload(client_index, payload)

    def disconnect(self, client_index: int) -> None:
        """Disconnect one client (redundant disconnect packets, then the slot is freed).

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if client_index not in self._plain:
            self._connection(client_index)
        self.netcode.disconnect(client_index)
        self._dispatch(self._now)

    def connection_statistics(self, client_index: int) -> ConnectionStatistics:
        """Return RTT, loss, rates and counters of one client's connection."""
        return self._connection(client_index).statistics()

    # -- sans-I/O interface -------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises: bad input is counted by the netcode layer.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._now = max(self._now, now)
        self.netcode.receive_datagram(data, addr, now)
        self._dispatch(now)

    def handle_timer(self, now: float) -> None:
        """Run what is due at ``now`` (s) in the netcode layer and every connection.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._now = max(self._now, now)
        self.netcode.handle_timer(now)
        for connection in self._connections.values():
            connection.handle_timer(now)
        self._dispatch(now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return the datagrams to send now, with their destinations."""
        self._now = max(self._now, now)
        for client_index, connection in self._connections.items():
            for payload in connection.payloads_to_send(now):
                self.netcode.send_payload(client_index, payload)
        self._drain_connections()
        return self.netcode.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """Absolute time (s) of the earliest deadline of the netcode layer or any connection."""
        times = [t for c in self._connections.values() if (t := c.next_timer()) is not None]
        netcode = self.netcode.next_timer()
        if netcode is not None:
            times.append(netcode)
        return min(times, default=None)

    def next_event(self) -> Event | None:
        """Return the next connection, message or delivery event, or None."""
        return self._events.popleft() if self._events else None

    # -- internals ----------------------------------------------------------------------------

    def _connection(self, client_index: int) -> Connection:
        connection = self._connections.get(client_index)
        if connection is None:
            raise LocalProtocolError(
                f"client_index must be a connected slot {self.clients}, got {client_index}"
            )
        return connection

    def _dispatch(self, now: float) -> None:
        event = self.netcode.next_event()
        while event is not None:
            match event:
                case ClientConnected(client_index=index, user_data=user_data):
                    marked = user_data.startswith(LAGLESS_MARK)
                    if self._plain_unmarked and not marked:
                        self._plain.add(index)
                    else:
                        self._connections[index] = Connection(
                            config=self._connection_config,
                            now=now,
                            client_index=index,
                            is_client=False,
                        )
                    if marked:
                        stripped = user_data[len(LAGLESS_MARK) :] + bytes(len(LAGLESS_MARK))
                        event = dataclasses.replace(event, user_data=stripped)
                    self._events.append(event)
                case PayloadReceived(client_index=index) if index in self._plain:
                    self._events.append(event)
                case PayloadReceived(client_index=index, payload=payload):
                    connection = self._connections.get(index)
                    if connection is not None:
                        connection.receive_payload(payload, now)
                        if connection.violation is not None:
                            self._events.append(
                                ConnectionViolated(client_index=index, reason=connection.violation)
                            )
                            self.netcode.disconnect(index)
                case ClientDisconnected(client_index=index):
                    self._plain.discard(index)
                    connection = self._connections.pop(index, None)
                    if connection is not None:
                        self._drain(connection)
                    self._events.append(event)
                case _:
                    self._events.append(event)
            event = self.netcode.next_event()
        self._drain_connections()

    def _drain_connections(self) -> None:
        for connection in self._connections.values():
            self._drain(connection)

    def _drain(self, connection: Connection) -> None:
        event = connection.next_event()
        while event is not None:
            self._events.append(event)
            event = connection.next_event()
