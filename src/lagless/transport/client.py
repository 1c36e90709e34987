"""The lagless client: a netcode 1.02 client with a reliable, paced `Connection` inside.

Implements DESIGN.md "Transport defaults" by composition (STYLE §3): `NetcodeClient` owns the
handshake (connect token or the explicit insecure mode), encryption, keep-alives and timeouts;
once connected, a `Connection` carries channels, acks and clock sync inside its payloads, and
`server_time(now)` answers with the synchronised server clock (spec 004 §4.4.2 or spec 000 §2.4).

Decisions: a message-layer violation by the server emits `ConnectionViolated` and disconnects
(``test_client_server.py::test_violation``); `send` before `Connected` raises
`LocalProtocolError` rather than queueing, so nothing is silently held across a failed connect;
payloads reach the `Connection` straight from the netcode layer's read path (its
``payload_sink``), with no ``PayloadReceived`` in between.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence

from mypy_extensions import mypyc_attr

from lagless._types import Address
from lagless.errors import LocalProtocolError
from lagless.transport.connection import Connection, ConnectionConfig, ConnectionStatistics
from lagless.transport.events import ConnectionViolated, Event
from lagless.transport.netcode_client import NetcodeClient, NetcodeClientConfig
from lagless.transport.netcode_events import (
    Connected,
    ConnectFailed,
    Disconnected,
)
from lagless.transport.netcode_state import NetcodeClientState
from lagless.transport.server import mark_user_data


# a compiled build (docs/compiled.md) compiles it too; applications may still subclass it
@mypyc_attr(allow_interpreted_subclasses=True)
class Client:
    """A netcode 1.02 client whose payloads carry lagless channels, acks and clock sync.

    Args:
        config: the netcode layer's settings (set ``insecure=True`` for the token-less mode).
        connection: the reliability layer's settings (must match the server's channels).
    """

    def __init__(
        self,
        *,
        config: NetcodeClientConfig | None = None,
        connection: ConnectionConfig | None = None,
    ) -> None:
        self.netcode = NetcodeClient(
            config=config if config is not None else NetcodeClientConfig(),
            payload_sink=self._on_payload,
        )
        self._connection_config = connection if connection is not None else ConnectionConfig()
        self._connection: Connection | None = None
        self._events: deque[Event] = deque()
        # bound once: called per payload, and a compiled build looks a deque's method up by name
        self._queue_events: Callable[[Iterable[Event]], None] = self._events.extend
        self._now = 0.0
        self._connections_made = 0
        self.sends_after_end = 0
        """Sends that found the connection already ended (no-ops, see `send`)."""

    # -- application verbs --------------------------------------------------------------------

    def connect(self, token: bytes, now: float) -> None:
        """Start connecting with a 2048-byte connect token from the backend.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._now = max(self._now, now)
        self.netcode.connect(token, now)
        self._dispatch(now)

    def connect_insecure(
        self,
        *,
        server_addresses: Sequence[Address],
        protocol_id: int,
        client_id: int,
        now: float,
        user_data: bytes = b"",
        timeout_seconds: int = 5,
    ) -> None:
        """Start connecting without token or encryption (development and the lab only).

        ``user_data`` (at most 248 bytes) is sent behind `LAGLESS_MARK`, so a server that also
        serves plain netcode clients knows this one speaks lagless.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._now = max(self._now, now)
        self.netcode.connect_insecure(
            server_addresses=server_addresses,
            protocol_id=protocol_id,
            client_id=client_id,
            now=now,
            user_data=mark_user_data(user_data),
            timeout_seconds=timeout_seconds,
        )
        self._dispatch(now)

    def send(self, channel: int, payload: bytes) -> int | None:
        """Queue ``payload`` on ``channel`` to the server; return the message id.

        Returns:
            The 16-bit message id, or None when the connection has ended (timed out, or the
            server or this side disconnected): the application may not have popped the
            ``Disconnected`` event yet, so this is a no-op, counted in `sends_after_end`.

        Raises:
            LocalProtocolError: never connected yet, unknown channel, or `MessageTooLarge`;
                `SendQueueFull` when the server acknowledged too little for a reliable channel.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if self._connection is None:
            if self._connections_made:
                self.sends_after_end += 1
                return None
            raise LocalProtocolError(f"send needs a connected client, state is {self.state.name}")
        return self._connection.send(channel, payload)

    def disconnect(self) -> None:
        """Disconnect (redundant disconnect packets) after flushing what `send` queued.

        Messages sent in the same frame go out first, once and best-effort (pacing allowing),
        as with the netcode reference API, whose send leaves at once. Pump the object
        afterwards (see `lagless.io.drive.pump`).
        """
        if self._connection is not None:
            payloads = self._connection.payloads_to_send(self._now)
            if payloads:
                self.netcode.send_payloads(payloads)
        self.netcode.disconnect()
        self._dispatch(self._now)

    @property
    def state(self) -> NetcodeClientState:
        """The netcode client state (negative values are failures)."""
        return self.netcode.state

    @property
    def connected(self) -> bool:
        """True while a connection is established."""
        return self._connection is not None

    @property
    def synchronized(self) -> bool:
        """True once the server clock has been estimated."""
        return self._connection is not None and self._connection.synchronized

    def server_time(self, now: float) -> float:
        """The server's clock at local time ``now`` (s); ``now`` itself until synchronised."""
        if self._connection is None:
            return now
        return self._connection.server_time(now)

    def connection_statistics(self) -> ConnectionStatistics:
        """Return RTT, loss, rates, clock offset and counters of the connection.

        Raises:
            LocalProtocolError: not connected.
        """
        if self._connection is None:
            raise LocalProtocolError(
                f"statistics need a connected client, state is {self.state.name}"
            )
        return self._connection.statistics()

    # -- sans-I/O interface -------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises: bad input is counted by the netcode layer.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._now = max(self._now, now)
        self.netcode.receive_datagram(data, addr, now)
        self._dispatch(now)

    def handle_timer(self, now: float) -> None:
        """Run what is due at ``now`` (s) in the netcode layer and the connection.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._now = max(self._now, now)
        self.netcode.handle_timer(now)
        if self._connection is not None:
            self._connection.handle_timer(now)
        self._dispatch(now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return the datagrams to send now, with their destinations."""
        self._now = max(self._now, now)
        if self._connection is not None:
            payloads = self._connection.payloads_to_send(now)
            if payloads:
                self.netcode.send_payloads(payloads)
            self._drain()
        return self.netcode.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """Absolute time (s) of the earliest deadline of the netcode layer or the connection."""
        netcode = self.netcode.next_timer()
        if self._connection is None:
            return netcode
        connection = self._connection.next_timer()
        if connection is None:
            return netcode
        if netcode is None or connection < netcode:
            return connection
        return netcode

    def next_event(self) -> Event | None:
        """Return the next connection, message or delivery event, or None."""
        return self._events.popleft() if self._events else None

    def take_events(self) -> list[Event]:
        """Return every waiting event, oldest first: `next_event` in one call (the drivers use it).

        The caller owns the list.
        """
        events = list(self._events)
        self._events.clear()
        return events

    # -- internals ----------------------------------------------------------------------------

    def _dispatch(self, now: float) -> None:
        event = self.netcode.next_event()
        while event is not None:
            match event:
                case Connected(client_index=index, connection_id=cid):
                    self._connections_made += 1
                    self._connection = Connection(
                        config=self._connection_config,
                        now=now,
                        client_index=index,
                        connection_id=cid,
                        is_client=True,
                    )
                    self._events.append(event)
                case Disconnected() | ConnectFailed():
                    self._drain()
                    self._connection = None
                    self._events.append(event)
                case _:
                    self._events.append(event)
            event = self.netcode.next_event()
        self._drain()

    def _on_payload(self, payload: bytes, now: float) -> None:
        # the netcode layer's payload sink
        connection = self._connection
        if connection is None:
            return
        connection.receive_payload(payload, now)
        if connection.violation is not None:
            self._events.append(
                ConnectionViolated(
                    client_index=connection.client_index,
                    connection_id=connection.connection_id,
                    reason=connection.violation,
                )
            )
            self._drain()
            self._connection = None
            self.netcode.disconnect()

    def _drain(self) -> None:
        if self._connection is None:
            return
        self._queue_events(self._connection.take_events())
