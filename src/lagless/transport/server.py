"""The lagless server: netcode 1.02 slots with a reliable, paced `Connection` inside each.

Implements DESIGN.md "Transport defaults" by composition (STYLE §3 "layering by composition"):
`NetcodeServer` owns the handshake, encryption, keep-alives and timeouts, and each connected slot
gets a `Connection` whose payloads ride inside netcode payload packets. The server is sans-I/O:
drivers in `lagless.io` pump it exactly like any other protocol object.

Decisions:

* Connections are named by the ``connection_id`` of their ``ClientConnected`` (counting from 1,
  never reused); slots are reused, and a verb on a slot could reach the slot's next client while
  the old one's events are still queued. A verb on a connection that has gone away is a no-op
  that returns None or False and counts ``verbs_on_gone``; an id the server never issued raises
  `LocalProtocolError` (``test_server_robustness.py::test_late_echo_never_reaches_next_client``).
* One client never stops the server: a message-layer violation emits `ConnectionViolated` and
  disconnects that client (reason ``PROTOCOL_VIOLATION``; STYLE §4, third channel;
  ``test_client_server.py::test_violation``); a client that acknowledges too little for a
  reliable channel's send queue to drain is disconnected with ``SEND_QUEUE_FULL`` instead of
  `SendQueueFull` reaching the application
  (``test_server_robustness.py::test_client_that_never_acks_is_dropped_alone``).
* Work per event is independent of the number of clients (DESIGN.md "Speed rules"): connections
  touched since the last pump are kept in a set and only they are asked for payloads; each
  connection's deadline sits in a heap with lazy deletion (a stale entry is skipped when it
  surfaces, and the heap is rebuilt when stale entries outnumber live ones four to one). The
  pumped connections' deadlines are read in `next_timer` (or `handle_timer`), not in
  `datagrams_to_send`, so the datagrams leave before that bookkeeping runs: with the
  connection's own deferred deadline, the 60 Hz echo of ``benchmarks/transport.py`` went from
  ``Server.send`` to ``sendto`` in 58 µs instead of 68 (median, instrumented).
* A lagless connection's payloads reach its `Connection` straight from the netcode layer's read
  path (``NetcodeServer.deliver_directly``), with no ``PayloadReceived`` in between; payloads
  to send go down in one batch per connection (``NetcodeServer.send_payloads``).

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
import heapq
import os
from collections import deque
from collections.abc import Callable, Iterable
from typing import Final

from mypy_extensions import mypyc_attr

from lagless._types import Address
from lagless.errors import LocalProtocolError
from lagless.transport.connection import Connection, ConnectionConfig, ConnectionStatistics
from lagless.transport.events import ConnectionViolated, Event
from lagless.transport.message_errors import SendQueueFull
from lagless.transport.netcode_events import ClientConnected, ClientDisconnected
from lagless.transport.netcode_server import NetcodeServer, NetcodeServerConfig
from lagless.transport.netcode_state import ServerDisconnectReason

# bound once: compiled, heapq.heappush(...) is a generic attribute lookup and call
_heapify: Final = heapq.heapify
_heappop: Final = heapq.heappop
_heappush: Final = heapq.heappush

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


# a compiled build (docs/compiled.md) compiles it too; applications may still subclass it
@mypyc_attr(allow_interpreted_subclasses=True)
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
            config=config,
            random_bytes=random_bytes,
            unix_time_offset=unix_time_offset,
            payload_sink=self._on_payload,
        )
        self._connection_config = connection if connection is not None else ConnectionConfig()
        self._connections: dict[int, Connection] = {}  # connection id -> its reliability layer
        self._plain: set[int] = set()  # connection ids of plain netcode clients
        self._plain_unmarked = plain_unmarked
        self._events: deque[Event] = deque()
        # bound once: called per payload, and a compiled build looks a deque's method up by name
        self._queue_events: Callable[[Iterable[Event]], None] = self._events.extend
        self._now = 0.0
        self._touched: set[int] = set()  # connection ids that may have output or a new deadline
        self._retime: set[int] = set()  # connection ids pumped whose deadline is not yet read
        self._deadline: dict[int, float] = {}  # connection id -> deadline its heap entry holds
        self._timers: list[tuple[float, int]] = []  # (deadline s, connection id), lazy heap

    # -- application verbs --------------------------------------------------------------------

    @property
    def clients(self) -> list[int]:
        """Connection ids of the connected lagless clients, ascending."""
        return sorted(self._connections)

    @property
    def plain_clients(self) -> list[int]:
        """Connection ids of the connected plain netcode clients (``plain_unmarked``), ascending."""
        return sorted(self._plain)

    def is_connected(self, connection_id: int) -> bool:
        """Return whether ``connection_id`` (lagless or plain) is still connected.

        Raises:
            LocalProtocolError: the server never issued ``connection_id``.
        """
        return self.netcode.is_connected(connection_id)

    def send(self, connection_id: int, channel: int, payload: bytes) -> int | None:
        """Queue ``payload`` on ``channel`` to one client; return the message id.

        Returns:
            The 16-bit message id, or None when the connection has gone away (nothing is sent),
            or when its reliable send queue was full: the client is then disconnected with
            ``SEND_QUEUE_FULL`` (it acknowledged too little to keep up).

        Raises:
            LocalProtocolError: the id was never issued or names a plain client, the channel is
                unknown, or the message is too large (`MessageTooLarge`).

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        connection = self._connection(connection_id)
        if connection is None:
            return None
        try:
            message_id = connection.send(channel, payload)
        except SendQueueFull:
            self.disconnect(connection_id, ServerDisconnectReason.SEND_QUEUE_FULL)
            return None
        self._touched.add(connection_id)
        return message_id

    def broadcast(self, channel: int, payload: bytes) -> None:
        """Queue ``payload`` on ``channel`` to every connected lagless client.

        A client whose reliable send queue is full is disconnected (see `send`). Pump the object
        afterwards (see `lagless.io.drive.pump`).
        """
        for connection_id in list(self._connections):
            self.send(connection_id, channel, payload)

    def send_raw(self, connection_id: int, payload: bytes) -> bool:
        """Send one raw payload (1..1200 bytes) to a plain netcode client.

        Returns:
            True if queued, False when the connection has gone away.

        Raises:
            LocalProtocolError: the id was never issued or names a lagless client, or the size
                is wrong.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if connection_id in self._connections:
            raise LocalProtocolError(
                f"connection {connection_id} is a lagless client; use send(), not send_raw()"
            )
        return self.netcode.send_payload(connection_id, payload)

    def disconnect(
        self,
        connection_id: int,
        reason: ServerDisconnectReason = ServerDisconnectReason.SERVER_DISCONNECTED,
    ) -> bool:
        """Disconnect one client (redundant disconnect packets, then the slot is freed).

        Returns:
            True if it was connected, False when it had already gone (nothing happens).

        Raises:
            LocalProtocolError: the id was never issued.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        done = self.netcode.disconnect(connection_id, reason)
        self._dispatch(self._now)
        return done

    def connection_statistics(self, connection_id: int) -> ConnectionStatistics | None:
        """Return RTT, loss, rates and counters of one client's connection (None once gone).

        Raises:
            LocalProtocolError: the id was never issued or names a plain client.
        """
        connection = self._connection(connection_id)
        return connection.statistics() if connection is not None else None

    # -- sans-I/O interface -------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises: bad input is counted by the netcode layer.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if now > self._now:
            self._now = now
        self.netcode.receive_datagram(data, addr, now)
        self._dispatch(now)

    def handle_timer(self, now: float) -> None:
        """Run what is due at ``now`` (s) in the netcode layer and the connections due by then.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if now > self._now:
            self._now = now
        self.netcode.handle_timer(now)
        if self._retime:
            self._schedule()
        timers = self._timers
        deadline = self._deadline
        while timers and timers[0][0] <= now:
            due, connection_id = _heappop(timers)
            if deadline.get(connection_id) != due:
                continue  # stale: the connection moved its deadline or went away
            del deadline[connection_id]
            connection = self._connections[connection_id]
            connection.handle_timer(now)
            self._touched.add(connection_id)
            self._drain(connection)
        self._dispatch(now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return the datagrams to send now, with their destinations."""
        if now > self._now:
            self._now = now
        touched = self._touched
        if touched:
            self._touched = set()
            connections = self._connections
            netcode = self.netcode
            for connection_id in touched:
                connection = connections.get(connection_id)
                if connection is None:
                    continue
                payloads = connection.payloads_to_send(now)
                if payloads:
                    netcode.send_payloads(connection_id, payloads)
                self._drain(connection)
            # their deadlines are read in next_timer, after the driver has sent these datagrams
            if self._retime:
                self._retime |= touched
            else:
                self._retime = touched
        return self.netcode.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """Absolute time (s) of the earliest deadline of the netcode layer or any connection."""
        if self._retime:
            self._schedule()
        timers = self._timers
        deadline = self._deadline
        while timers and deadline.get(timers[0][1]) != timers[0][0]:
            _heappop(timers)
        if self._touched:
            return self._now  # output or deadlines wait for the next datagrams_to_send
        netcode = self.netcode.next_timer()
        if not timers:
            return netcode
        if netcode is None or timers[0][0] < netcode:
            return timers[0][0]
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

    def _connection(self, connection_id: int) -> Connection | None:
        connection = self._connections.get(connection_id)
        if connection is not None:
            return connection
        if connection_id in self._plain:
            raise LocalProtocolError(
                f"connection {connection_id} is a plain netcode client; use send_raw()"
            )
        if not self.netcode.is_connected(connection_id):  # raises for ids never issued
            self.netcode.count_verb_on_gone()
        return None

    def _on_payload(self, connection_id: int, payload: bytes, now: float) -> None:
        # the netcode layer's payload sink for lagless connections (deliver_directly)
        connection = self._connections[connection_id]
        connection.receive_payload(payload, now)
        self._touched.add(connection_id)
        self._drain(connection)
        if connection.violation is not None:
            self._events.append(
                ConnectionViolated(
                    client_index=connection.client_index,
                    connection_id=connection_id,
                    reason=connection.violation,
                )
            )
            self.netcode.disconnect(connection_id, ServerDisconnectReason.PROTOCOL_VIOLATION)

    def _dispatch(self, now: float) -> None:
        event = self.netcode.next_event()
        while event is not None:
            match event:
                case ClientConnected(connection_id=cid, client_index=index, user_data=user_data):
                    marked = user_data.startswith(LAGLESS_MARK)
                    if self._plain_unmarked and not marked:
                        self._plain.add(cid)
                    else:
                        self._connections[cid] = Connection(
                            config=self._connection_config,
                            now=now,
                            client_index=index,
                            connection_id=cid,
                            is_client=False,
                        )
                        self._touched.add(cid)
                        self.netcode.deliver_directly(cid)
                    if marked:
                        stripped = user_data[len(LAGLESS_MARK) :] + bytes(len(LAGLESS_MARK))
                        event = dataclasses.replace(event, user_data=stripped)
                    self._events.append(event)
                case ClientDisconnected(connection_id=cid):
                    self._plain.discard(cid)
                    connection = self._connections.pop(cid, None)
                    if connection is not None:
                        self._drain(connection)
                        self._deadline.pop(cid, None)
                    self._events.append(event)
                case _:
                    self._events.append(event)
            event = self.netcode.next_event()

    def _drain(self, connection: Connection) -> None:
        self._queue_events(connection.take_events())

    def _schedule(self) -> None:
        """Read the deadlines of the connections pumped since the last call into the timer heap."""
        retime = self._retime
        self._retime = set()
        connections = self._connections
        deadline = self._deadline
        timers = self._timers
        for connection_id in retime:
            connection = connections.get(connection_id)
            if connection is None:
                continue  # gone: its deadline went with it
            due = connection.next_timer()
            if due != deadline.get(connection_id):
                if due is None:
                    del deadline[connection_id]
                else:
                    deadline[connection_id] = due
                    _heappush(timers, (due, connection_id))
        if len(timers) > 4 * len(deadline) + 64:
            self._timers = [(due, cid) for cid, due in deadline.items()]
            _heapify(self._timers)
