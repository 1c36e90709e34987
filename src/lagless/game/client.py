"""The game client: connect, drive the owned avatar, shoot, and discover servers (issue 14 item 1).

Implements spec 003 §5.4.2's ``Client`` on top of a transport `Client` and a `ReplicationClient`:
``connect`` / ``stop_connecting`` / ``disconnect`` / ``is_connecting`` / ``is_connected`` with the
``ConnectionEstablished`` / ``ConnectingFailed`` / ``Disconnected`` callbacks as events
(`ConnectionEstablished`, `ConnectingFailed`, `ConnectionEnded`), LAN discovery through an
embedded `DiscoveryClient` on the same socket (``discover`` / ``stop_discovering`` /
``is_discovering`` / ``discovered_servers`` / ``remove_server`` / ``clear_discovered_servers``),
and the per-frame ``move`` that writes the owned avatar's inputs. Sans-I/O: every input takes
``now`` (s, monotonic).

Decisions: `ConnectionEstablished` is emitted when the server's welcome arrives (replication can
start), not at the transport handshake; a datagram that starts with the discovery reply magic goes
to the discovery client, every other one to the transport (no netcode packet starts with it: its
first byte, ``L``, would be packet type 12, and netcode has types 0-6), so discovery and the game
share one socket (open it with broadcast allowed, `lagless.io.discovery`). Replication events
(announced and destroyed replicas, snapshots, the game's `Hit` / `Killed` / `Collision` events)
pass through ``next_event`` unchanged. The transport's lifecycle events, which the replication
client consumes, are observed through a subclass of the transport `Client` (``_ObservedClient``).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from lagless._types import Address
from lagless.errors import LocalProtocolError
from lagless.game.discovery import REPLY_MAGIC, DiscoveryClient, ServerList
from lagless.game.entities import GAME_CLASSES, GAME_EVENTS, Avatar, Kicked, Shoot
from lagless.game.events import (
    ConnectingFailed,
    ConnectionEnded,
    ConnectionEstablished,
)
from lagless.replication import (
    EventReceived,
    NetEvent,
    NetworkObject,
    ReplicationClient,
    ReplicationConfig,
    Role,
    Target,
    Welcomed,
    World,
)
from lagless.transport import (
    Client,
    ClientDisconnectReason,
    ConnectFailed,
    ConnectionConfig,
    Disconnected,
    Event,
    NetcodeClientConfig,
)

__all__ = ["GameClient"]


class _ObservedClient(Client):
    """The transport client, keeping its lifecycle events for the game client (module doc)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.lifecycle: deque[ConnectFailed | Disconnected] = deque()

    def next_event(self) -> Event | None:
        """The transport's next event, noting failures and disconnections."""
        event = super().next_event()
        if isinstance(event, ConnectFailed | Disconnected):
            self.lifecycle.append(event)
        return event


class GameClient:
    """A player's side of a `GameServer` (sans-I/O).

    Args:
        protocol_id: The game's protocol id (connecting and discovery).
        rng: Draws discovery nonces.
        netcode: The transport's netcode settings (default: insecure, for development).
        connection: The transport's reliability settings (must match the server's).
        snapshot_rate: Owner-input updates per second (Hz).
        view_delay: How far behind the server clock this client renders others (s); sent with
            each shot for lag compensation.
        classes: Extra network object classes (as on the server).
        events: Extra event classes (as on the server).
    """

    def __init__(
        self,
        protocol_id: int,
        *,
        rng: random.Random,
        netcode: NetcodeClientConfig | None = None,
        connection: ConnectionConfig | None = None,
        snapshot_rate: float = 20.0,
        view_delay: float = 0.1,
        classes: Iterable[type[NetworkObject]] = (),
        events: Iterable[type[NetEvent]] = (),
    ) -> None:
        self.protocol_id = protocol_id
        self.view_delay = view_delay
        self.transport = _ObservedClient(
            config=NetcodeClientConfig(insecure=True) if netcode is None else netcode,
            connection=connection,
        )
        self.world = World([*GAME_CLASSES, *classes])
        self.replication = ReplicationClient(
            self.transport,
            self.world,
            config=ReplicationConfig(tick_rate=snapshot_rate),
            events=[*GAME_EVENTS, *events],
        )
        self.discovery = DiscoveryClient(protocol_id, rng=rng)
        self.kicked: str | None = None
        """The reason the server gave when it kicked this client, if it did."""
        self._connecting = False
        self._events: deque[object] = deque()
        self._now = 0.0

    # -- connecting (spec 003 §5.4.2) ---------------------------------------------------------

    def connect(self, server: Address, now: float, *, client_id: int, name: str = "") -> None:
        """Connect to a known server without a token (insecure mode; thesis ``DoConnect``).

        Args:
            server: The server's numeric address.
            now: Local time (s).
            client_id: 64-bit id of this client.
            name: Player name (at most 16 characters are kept by the server).
        """
        self.kicked = None
        self._now = max(self._now, now)
        self._connecting = True
        self.transport.connect_insecure(
            server_addresses=[server],
            protocol_id=self.protocol_id,
            client_id=client_id,
            now=now,
            user_data=name.encode("utf-8")[:64],
        )
        self._absorb()

    def connect_token(self, token: bytes, now: float) -> None:
        """Connect with a netcode connect token (secure mode)."""
        self.kicked = None
        self._now = max(self._now, now)
        self._connecting = True
        self.transport.connect(token, now)
        self._absorb()

    def stop_connecting(self) -> bool:
        """Abort a connection attempt (``StopConnecting``); return whether one was running."""
        if not self._connecting:
            return False
        self.transport.disconnect()
        self.replication.handle_timer(self._now)  # drains the transport's events
        self._absorb()
        if self._connecting:  # the transport ends an unanswered attempt without an event
            self._connecting = False
            self._events.append(ConnectingFailed("stopped"))
        return True

    def disconnect(self) -> None:
        """Leave the server (``Disconnect``)."""
        self.transport.disconnect()
        self.replication.handle_timer(self._now)  # drains the transport's events
        self._absorb()

    @property
    def is_connecting(self) -> bool:
        """Whether a connection attempt runs (``IsConnecting``)."""
        return self._connecting

    @property
    def is_connected(self) -> bool:
        """Whether connected and welcomed (``IsConnected``)."""
        return self.transport.connected and self.replication.client_id is not None

    # -- discovery (spec 003 §5.4.2) ----------------------------------------------------------

    def discover(self, targets: Sequence[Address], now: float) -> ServerList:
        """Start LAN discovery towards broadcast, multicast or unicast ``targets``
        (``DoDiscover``); return the live list of servers found (it updates as they answer)."""
        return self.discovery.start(targets, now)

    def stop_discovering(self) -> None:
        """Stop sending discovery queries (``StopDiscovering``)."""
        self.discovery.stop()

    @property
    def is_discovering(self) -> bool:
        """Whether discovery runs (``IsDiscovering``)."""
        return self.discovery.discovering

    @property
    def discovered_servers(self) -> ServerList:
        """The servers found so far (``GetDiscoveredServers``), updated by every answer."""
        return self.discovery.servers

    def remove_server(self, address: Address) -> bool:
        """Forget one discovered server (``RemoveServer``)."""
        return self.discovery.remove_server(address)

    def clear_discovered_servers(self) -> None:
        """Forget every discovered server (``ClearDiscoveredServerList``)."""
        self.discovery.clear()

    # -- playing ------------------------------------------------------------------------------

    @property
    def avatar(self) -> Avatar | None:
        """The avatar this client owns, once announced."""
        for obj in self.world:
            if isinstance(obj, Avatar) and obj.role is Role.OWNER:
                return obj
        return None

    def move(self, steer: tuple[float, float], aim: float) -> bool:
        """Set this frame's inputs (thesis per-frame ``Move``): steer (length <= 1) and aim (rad).

        Returns:
            False when there is no living avatar to steer yet.
        """
        avatar = self.avatar
        if avatar is None or avatar.dead:
            return False
        x, y = steer
        length = math.hypot(x, y)
        if length > 1.0:
            x, y = x / length, y / length
        avatar.steer = (x, y)
        avatar.aim = aim
        return True

    def shoot(self, target: Avatar, now: float, *, direction: float | None = None) -> None:
        """Fire at ``target`` as this client sees it (aimed at its centre unless ``direction``).

        Raises:
            LocalProtocolError: no living avatar or not connected.
        """
        avatar = self.avatar
        if avatar is None or avatar.dead or not self.is_connected:
            raise LocalProtocolError("shooting needs a connected client with a living avatar")
        origin = avatar.pos
        if direction is None:
            direction = math.atan2(target.pos[1] - origin[1], target.pos[0] - origin[0])
        shot = Shoot(origin=origin, direction=direction, target=target, view_delay=self.view_delay)
        self.replication.send_event(shot, Target.server(), now)

    def send_event(self, event: NetEvent, target: Target, now: float) -> None:
        """Send a custom event through the server (see `ReplicationClient.send_event`)."""
        self.replication.send_event(event, target, now)

    # -- sans-I/O -----------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram (game or discovery reply); never raises on bad input."""
        self._now = max(self._now, now)
        if data[:4] == REPLY_MAGIC:
            self.discovery.receive_datagram(data, addr, now)
            self._take_discovery()
            return
        self.replication.receive_datagram(data, addr, now)
        self._absorb()

    def handle_timer(self, now: float) -> None:
        """Run transport, replication and discovery timers."""
        self._now = max(self._now, now)
        self.replication.handle_timer(now)
        self.discovery.handle_timer(now)
        self._absorb()
        self._take_discovery()

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Game datagrams and discovery queries."""
        return self.replication.datagrams_to_send(now) + self.discovery.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """The earliest transport, replication or discovery deadline (s)."""
        times = (self.replication.next_timer(), self.discovery.next_timer())
        return min((t for t in times if t is not None), default=None)

    def next_event(self) -> object | None:
        """The next event (connection, discovery, replication or game event), or None."""
        return self._events.popleft() if self._events else None

    # -- internals ----------------------------------------------------------------------------

    def _take_discovery(self) -> None:
        while (event := self.discovery.next_event()) is not None:
            self._events.append(event)

    def _absorb(self) -> None:
        while self.transport.lifecycle:
            ended = self.transport.lifecycle.popleft()
            if isinstance(ended, ConnectFailed):
                self._connecting = False
                self._events.append(ConnectingFailed(ended.state.name.lower()))
            elif self._connecting:
                self._connecting = False
                local = ended.reason is ClientDisconnectReason.LOCAL
                self._events.append(ConnectingFailed("stopped" if local else ended.reason.value))
            else:
                self._events.append(ConnectionEnded(ended.reason.value, self.kicked))
        while (event := self.replication.next_event()) is not None:
            if isinstance(event, Welcomed):
                self._connecting = False
                self._events.append(ConnectionEstablished(event.client))
                continue
            if isinstance(event, EventReceived) and isinstance(event.event, Kicked):
                self.kicked = event.event.reason
            self._events.append(event)
