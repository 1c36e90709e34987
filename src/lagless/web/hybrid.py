"""A transport ``Server`` that also serves browser links: browsers join beside UDP clients.

The seam (issue 16, "browser clients"): a game server such as ``PhysicsServer`` talks to its
clients only through a ``lagless.transport.Server`` (``ClientConnected`` / ``MessageReceived`` /
``ClientDisconnected`` events in, ``send`` / ``broadcast`` / ``disconnect`` out). ``HybridServer``
is such a ``Server``: its netcode UDP clients work as before, and every browser link (WebSocket
or WebTransport) that says HELLO becomes one more connection with its own connection id, whose
messages arrive as ``MessageReceived`` on the channel the browser named and whose outgoing
messages become MESSAGE frames (``lagless.web.frames``). The game server, the replication
messages and the snapshots are unchanged; only the packet layer under them differs.

The object is sans-I/O like every protocol object: a driver (``lagless.web.serve`` over
``lagless.io.websocket`` and ``lagless.io.webtransport``) reports ``open_link`` /
``receive_frame`` / ``close_link`` with the time, and takes ``frames_to_send`` and
``links_to_close`` after each pump.

Decisions:
    * Connection ids of links start at ``LINK_CONNECTION_BASE`` (2**48) and count up, never
      reused; netcode's count from 1, so the two never meet. A link has no netcode slot: its
      events carry ``client_index = -1``, ``client_id = 0`` and 256 zero bytes of user data.
    * A link must send a valid HELLO (the server's protocol id, ``LINK_VERSION``) within
      ``hello_timeout`` s of opening, and any frame that does not decode, a second HELLO, a PONG
      or a message on a channel the server does not have closes it (``PROTOCOL_VIOLATION``); the
      bytes are counted in ``bad_frames``, never raised. Links beyond ``max_links`` are refused.
      A PING before the HELLO is ignored, not answered: over WebTransport PINGs are datagrams,
      which may overtake the HELLO on its stream (seen through a reordering link).
    * Channels keep their meaning in what the driver may drop: a message on an unreliable
      channel (and a PONG) is marked ``droppable``: the WebTransport driver sends it as a QUIC
      datagram, the WebSocket driver drops it rather than queue it behind a slow TCP connection,
      as UDP would lose it. Reliable ones are never dropped; a WebSocket link whose reliable
      backlog overflows is closed by the driver.
    * ``connection_statistics`` is ``None`` for a link: the browser measures its own RTT from
      PING / PONG and its own rates; the server counts the link's bytes in the driver.
    * Deadlines of pending HELLOs sit in a FIFO (every link gets the same timeout), so each event
      costs O(1) whatever the number of links (DESIGN.md "Speed rules").
"""

from __future__ import annotations

import math
import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from lagless._types import Address
from lagless.errors import ConfigError, LocalProtocolError
from lagless.transport import (
    ChannelKind,
    ClientConnected,
    ClientDisconnected,
    ConnectionConfig,
    ConnectionStatistics,
    Event,
    MessageReceived,
    NetcodeServerConfig,
    Server,
)
from lagless.transport.netcode_state import ServerDisconnectReason
from lagless.web.frames import (
    LINK_VERSION,
    Hello,
    LinkMessage,
    Ping,
    Pong,
    decode_frame,
    encode_frame,
)

__all__ = ["LINK_CONNECTION_BASE", "HybridServer", "LinkClose", "OutgoingFrame"]

LINK_CONNECTION_BASE: Final = 1 << 48
"""The first connection id of a browser link."""
_NO_SLOT: Final = -1
_USER_DATA: Final = bytes(256)


@dataclass(frozen=True, slots=True)
class OutgoingFrame:
    """A frame for the driver to write to one link."""

    link_id: int
    """The driver's id of the link."""
    data: bytes
    """The frame."""
    droppable: bool
    """The frame carries an unreliable message (or a PONG): drop it rather than queue it long."""


@dataclass(frozen=True, slots=True)
class LinkClose:
    """A link for the driver to close."""

    link_id: int
    """The driver's id of the link."""
    reason: ServerDisconnectReason
    """Why (the WebSocket close frame's reason text is its name)."""


@dataclass(slots=True)
class _Link:
    link_id: int
    address: Address
    connection_id: int | None = None
    received: int = 0  # id of the next message received (16-bit, wrapping)
    sent: int = 0  # id of the next message sent


class HybridServer(Server):
    """A netcode ``Server`` whose clients may also be browser links (sans-I/O).

    Args:
        config: The netcode layer's settings; links must name its ``protocol_id`` in HELLO.
        connection: The reliability layer's settings of UDP clients; links use its channels.
        random_bytes: Source of cryptographic randomness (the netcode layer's).
        hello_timeout: Seconds a new link has to send its HELLO.
        max_links: Most links open at once (connected or not).

    Raises:
        ConfigError: ``hello_timeout`` not > 0 or ``max_links`` < 1.
    """

    def __init__(
        self,
        *,
        config: NetcodeServerConfig,
        connection: ConnectionConfig | None = None,
        random_bytes: Callable[[int], bytes] = os.urandom,
        hello_timeout: float = 5.0,
        max_links: int = 256,
    ) -> None:
        """Create a server with no links."""
        if not (math.isfinite(hello_timeout) and hello_timeout > 0.0):
            raise ConfigError(f"hello_timeout must be > 0 s, got {hello_timeout!r}")
        if max_links < 1:
            raise ConfigError(f"max_links must be >= 1, got {max_links}")
        connection = connection if connection is not None else ConnectionConfig()
        super().__init__(config=config, connection=connection, random_bytes=random_bytes)
        self.protocol_id = config.protocol_id
        self.hello_timeout = hello_timeout
        self.max_links = max_links
        self._reliable = tuple(
            c.kind in (ChannelKind.RELIABLE_ORDERED, ChannelKind.RELIABLE_UNORDERED)
            for c in connection.messages.channels
        )
        self._links: dict[int, _Link] = {}  # link id -> link
        self._by_connection: dict[int, _Link] = {}  # connection id -> connected link
        self._next_connection = LINK_CONNECTION_BASE
        self._hello_due: deque[tuple[float, int]] = deque()  # (deadline s, link id), FIFO
        self._link_events: deque[Event] = deque()
        self._out: list[OutgoingFrame] = []
        self._closing: list[LinkClose] = []
        self._link_now = -math.inf
        self.bad_frames = 0
        """Frames from links that did not decode or broke the protocol (the link was closed)."""
        self.links_refused = 0
        """Links refused because ``max_links`` were open."""
        self.link_messages_received = 0
        """MESSAGE frames from links handed to the game."""

    # -- the driver's side ----------------------------------------------------------------------

    def open_link(self, link_id: int, address: Address, now: float) -> None:
        """A browser link ``link_id`` (the driver's id, unique) opened from ``address``."""
        self._tick(now)
        if len(self._links) >= self.max_links:
            self.links_refused += 1
            self._closing.append(LinkClose(link_id, ServerDisconnectReason.SERVER_DISCONNECTED))
            return
        self._links[link_id] = _Link(link_id, address)
        self._hello_due.append((now + self.hello_timeout, link_id))

    def receive_frame(self, link_id: int, data: bytes, now: float) -> None:
        """Take one binary frame from link ``link_id``; never raises on bad bytes."""
        self._tick(now)
        link = self._links.get(link_id)
        if link is None:
            return
        frame = decode_frame(data)
        if link.connection_id is None:
            if (
                isinstance(frame, Hello)
                and frame.protocol_id == self.protocol_id
                and frame.version == LINK_VERSION
            ):
                self._connect(link)
            elif not isinstance(frame, Ping):  # a datagram may overtake the HELLO on its stream
                self._violation(link)
        elif isinstance(frame, LinkMessage) and frame.channel < len(self._reliable):
            self.link_messages_received += 1
            message_id = link.received
            link.received = (message_id + 1) & 0xFFFF
            self._link_events.append(
                MessageReceived(
                    _NO_SLOT, link.connection_id, frame.channel, message_id, frame.payload
                )
            )
        elif isinstance(frame, Ping):
            pong = encode_frame(Pong(frame.client_time, now))
            self._out.append(OutgoingFrame(link_id, pong, droppable=True))
        else:
            self._violation(link)

    def close_link(self, link_id: int, now: float) -> None:
        """The link closed (the browser left, or the driver closed it)."""
        self._tick(now)
        link = self._links.pop(link_id, None)
        if link is not None and link.connection_id is not None:
            self._gone(link, ServerDisconnectReason.CLIENT_DISCONNECTED)

    def frames_to_send(self) -> list[OutgoingFrame]:
        """Return the frames to write, in order, and forget them."""
        out, self._out = self._out, []
        return out

    def links_to_close(self) -> list[LinkClose]:
        """Return the links to close (after writing their frames), and forget them."""
        closing, self._closing = self._closing, []
        return closing

    @property
    def links(self) -> int:
        """Return the links open (connected or waiting for their HELLO)."""
        return len(self._links)

    def connection_of(self, link_id: int) -> int | None:
        """Return the connection id of link ``link_id`` once it said HELLO, else ``None``."""
        link = self._links.get(link_id)
        return None if link is None else link.connection_id

    @property
    def link_connections(self) -> list[int]:
        """Return the connection ids of the connected links, ascending."""
        return sorted(self._by_connection)

    # -- Server verbs, extended to links --------------------------------------------------------

    @property
    def clients(self) -> list[int]:
        """Connection ids of the connected lagless clients, UDP and links, ascending."""
        return super().clients + self.link_connections

    def is_connected(self, connection_id: int) -> bool:
        """Return whether ``connection_id`` (UDP or link) is still connected.

        Raises:
            LocalProtocolError: the server never issued ``connection_id``.
        """
        if connection_id >= LINK_CONNECTION_BASE:
            self._check_issued(connection_id)
            return connection_id in self._by_connection
        return super().is_connected(connection_id)

    def send(self, connection_id: int, channel: int, payload: bytes) -> int | None:
        """Queue ``payload`` on ``channel`` to one client, UDP or link; return the message id.

        Returns:
            The 16-bit message id, or ``None`` when the connection has gone away.

        Raises:
            LocalProtocolError: An id never issued, an unknown channel, a payload too large.
        """
        if connection_id < LINK_CONNECTION_BASE:
            return super().send(connection_id, channel, payload)
        self._check_issued(connection_id)
        if not 0 <= channel < len(self._reliable):
            raise LocalProtocolError(f"unknown channel {channel}")
        link = self._by_connection.get(connection_id)
        if link is None:
            self.netcode.count_verb_on_gone()
            return None
        data = encode_frame(LinkMessage(channel, payload))
        self._out.append(OutgoingFrame(link.link_id, data, droppable=not self._reliable[channel]))
        message_id = link.sent
        link.sent = (message_id + 1) & 0xFFFF
        return message_id

    def broadcast(self, channel: int, payload: bytes) -> None:
        """Queue ``payload`` on ``channel`` to every connected client, UDP and links."""
        super().broadcast(channel, payload)
        if not self._by_connection:
            return
        if not 0 <= channel < len(self._reliable):
            raise LocalProtocolError(f"unknown channel {channel}")
        data = encode_frame(LinkMessage(channel, payload))
        droppable = not self._reliable[channel]
        for link in self._by_connection.values():
            self._out.append(OutgoingFrame(link.link_id, data, droppable))

    def disconnect(
        self,
        connection_id: int,
        reason: ServerDisconnectReason = ServerDisconnectReason.SERVER_DISCONNECTED,
    ) -> bool:
        """Disconnect one client, UDP or link; return whether it was connected.

        Raises:
            LocalProtocolError: the id was never issued.
        """
        if connection_id < LINK_CONNECTION_BASE:
            return super().disconnect(connection_id, reason)
        self._check_issued(connection_id)
        link = self._by_connection.get(connection_id)
        if link is None:
            return False
        self._links.pop(link.link_id, None)
        self._closing.append(LinkClose(link.link_id, reason))
        self._gone(link, reason)
        return True

    def connection_statistics(self, connection_id: int) -> ConnectionStatistics | None:
        """Return a UDP connection's statistics; ``None`` for a link (the browser measures).

        Raises:
            LocalProtocolError: the id was never issued or names a plain client.
        """
        if connection_id >= LINK_CONNECTION_BASE:
            self._check_issued(connection_id)
            return None
        return super().connection_statistics(connection_id)

    # -- sans-I/O interface ---------------------------------------------------------------------

    def handle_timer(self, now: float) -> None:
        """Run the netcode layer's timers and close links whose HELLO is overdue."""
        super().handle_timer(now)
        self._tick(now)
        due = self._hello_due
        while due and due[0][0] <= now:
            _, link_id = due.popleft()
            link = self._links.get(link_id)
            if link is not None and link.connection_id is None:
                self._violation(link)

    def next_timer(self) -> float | None:
        """Return the earliest of the netcode deadlines, a HELLO deadline and ``now`` when link
        events wait (so the game server drains them on its next ``handle_timer``)."""
        due = super().next_timer()
        hello = self._hello_due[0][0] if self._hello_due else None
        times = [t for t in (due, hello) if t is not None]
        if self._link_events or self._out or self._closing:
            times.append(self._link_now)
        return min(times) if times else None

    def next_event(self) -> Event | None:
        """Return the next event of a UDP client, then of a link, or ``None``."""
        event = super().next_event()
        if event is not None:
            return event
        return self._link_events.popleft() if self._link_events else None

    # -- internals ------------------------------------------------------------------------------

    def _tick(self, now: float) -> None:
        if now > self._link_now:
            self._link_now = now

    def _check_issued(self, connection_id: int) -> None:
        if not LINK_CONNECTION_BASE <= connection_id < self._next_connection:
            raise LocalProtocolError(f"connection {connection_id} was never issued")

    def _connect(self, link: _Link) -> None:
        connection_id = self._next_connection
        self._next_connection += 1
        link.connection_id = connection_id
        self._by_connection[connection_id] = link
        self._link_events.append(
            ClientConnected(
                client_index=_NO_SLOT,
                connection_id=connection_id,
                client_id=0,
                address=link.address,
                user_data=_USER_DATA,
            )
        )

    def _violation(self, link: _Link) -> None:
        self.bad_frames += 1
        self._links.pop(link.link_id, None)
        self._closing.append(LinkClose(link.link_id, ServerDisconnectReason.PROTOCOL_VIOLATION))
        if link.connection_id is not None:
            self._gone(link, ServerDisconnectReason.PROTOCOL_VIOLATION)

    def _gone(self, link: _Link, reason: ServerDisconnectReason) -> None:
        assert link.connection_id is not None
        if self._by_connection.pop(link.connection_id, None) is None:
            return
        self._link_events.append(
            ClientDisconnected(
                client_index=_NO_SLOT, connection_id=link.connection_id, reason=reason
            )
        )
