"""Rooms, matchmaking and relay: the Neutron real-time platform's room service (spec 000 §3.1).

Implements issue 14 item 2: a `RoomServer` where clients create, list, join and leave rooms
with a player limit and string properties, find one by properties (matchmaking), and raise
events that the server forwards to the other members of their room. In a **relay** room (the
default; Neutron's "join/leave of a game and message distribution", for games without server
logic) the server only forwards; in a non-relay room events go to the server application
(`RoomEventReceived`), which answers with `RoomServer.send_to_room`. `RoomClient` is the client
side. Both are sans-I/O over the transport's `Server` / `Client`; members are named by their
transport connection id.

Messages are msgspec MessagePack structs tagged by type (`ROOM_MESSAGES`), with bounded strings,
bytes and maps (`MAX_NAME`, `MAX_PROPERTIES`, `MAX_EVENT_BYTES`, ...): `decode_room_message`
returns None for any byte string that is not one valid message, and the server and client count
it in ``drops`` (DESIGN.md "Bad input").

Decisions:

* A client is in at most one room; creating or joining another leaves the first.
* Reliable events ride channel 0 (reliable-ordered), unreliable ones channel 3 (unreliable);
  room control messages always channel 0.
* **Matchmaking** joins the fullest open room (not full, every requested property equal) so
  rooms fill up before new ones start, ties to the oldest; with no match it creates a room with
  those properties when ``create`` is set, else answers ``RoomError("no_match")``.
* An empty room is closed; room ids count from 1 and are never reused.
* An unreliable event rides one datagram: one whose relayed form is too large for it (near
  `MAX_EVENT_BYTES` of data) is counted in ``drops["too_large"]`` and not forwarded.
* A relayed event names its sender (its connection id); an event to ``to`` members reaches only
  those in the sender's room (others are ignored), an empty ``to`` reaches every other member.
* **Graceful shutdown** (issue 16 part 3): `RoomServer.shutdown` sends every connected client
  `Closing` with the reason (``server shutting down``, at most `MAX_REASON` characters) on the
  reliable channel, since a netcode disconnect packet carries none; ``goodbyes_pending`` counts
  those not acknowledged yet, and once it is 0 (or the caller's grace ran out) `RoomServer.close`
  disconnects everyone. A `RoomClient` keeps the reason in ``closing`` and yields the message.
* The server reports what happens to its rooms as events beside the transport's: a
  `RoomChanged` when a room is created or closed or a member joins or leaves it (a move is a
  leave, then a join), and a `RoomMessageDropped` naming the client whose room message was
  malformed or unexpected (also counted in ``drops``); logs and dashboards read them instead of
  polling ``rooms``.
"""

from __future__ import annotations

import itertools
from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Final, Literal, TypeAlias

import msgspec

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.transport import Client as TransportClient
from lagless.transport import (
    ClientConnected,
    ClientDisconnected,
    ConnectionConfig,
    MessageDelivered,
    MessageReceived,
    MessageTooLarge,
    NetcodeClientConfig,
    NetcodeServerConfig,
    Server,
)

__all__ = [
    "MAX_EVENT_BYTES",
    "MAX_NAME",
    "MAX_PROPERTIES",
    "MAX_REASON",
    "ROOM_MESSAGES",
    "Closing",
    "CreateRoom",
    "JoinRoom",
    "Joined",
    "LeaveRoom",
    "Left",
    "ListRooms",
    "Matchmake",
    "MemberJoined",
    "MemberLeft",
    "RaiseEvent",
    "Relayed",
    "RoomChanged",
    "RoomClient",
    "RoomError",
    "RoomEventReceived",
    "RoomInfo",
    "RoomList",
    "RoomMessageDropped",
    "RoomServer",
    "decode_room_message",
    "encode_room_message",
]

MAX_NAME: Final = 32  # characters of a room name or property key
MAX_VALUE: Final = 64  # characters of a property value
MAX_PROPERTIES: Final = 16  # properties per room or query
MAX_EVENT_BYTES: Final = 1024  # bytes of one event's data
MAX_PLAYERS: Final = 256  # players per room at most
MAX_LISTED: Final = 64  # rooms in one RoomList
MAX_MEMBERS: Final = MAX_PLAYERS
MAX_REASON: Final = 120  # characters of a Closing reason
RELIABLE_CHANNEL: Final = 0
UNRELIABLE_CHANNEL: Final = 3

Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME)]
Value = Annotated[str, msgspec.Meta(max_length=MAX_VALUE)]
Properties = Annotated[dict[Name, Value], msgspec.Meta(max_length=MAX_PROPERTIES)]
Players = Annotated[int, msgspec.Meta(ge=1, le=MAX_PLAYERS)]
RoomId = Annotated[int, msgspec.Meta(ge=0, le=2**32 - 1)]
MemberId = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
Code = Annotated[int, msgspec.Meta(ge=0, le=255)]
Data = Annotated[bytes, msgspec.Meta(max_length=MAX_EVENT_BYTES)]
Members = Annotated[list[MemberId], msgspec.Meta(max_length=MAX_MEMBERS)]
Reason = Annotated[str, msgspec.Meta(max_length=MAX_REASON)]


# -- client to server -------------------------------------------------------------------------


class CreateRoom(msgspec.Struct, tag="create", frozen=True, forbid_unknown_fields=True):
    """Create a room and join it."""

    name: Name
    max_players: Players = 8
    properties: Properties = {}
    relay: bool = True


class ListRooms(msgspec.Struct, tag="list", frozen=True, forbid_unknown_fields=True):
    """Ask for the open rooms whose properties include ``properties``."""

    properties: Properties = {}


class JoinRoom(msgspec.Struct, tag="join", frozen=True, forbid_unknown_fields=True):
    """Join a room by id."""

    room: RoomId


class Matchmake(msgspec.Struct, tag="match", frozen=True, forbid_unknown_fields=True):
    """Join the fullest open room with these properties, or create one (``create``)."""

    properties: Properties = {}
    max_players: Players = 8
    create: bool = True


class LeaveRoom(msgspec.Struct, tag="leave", frozen=True, forbid_unknown_fields=True):
    """Leave the current room."""


class RaiseEvent(msgspec.Struct, tag="raise", frozen=True, forbid_unknown_fields=True):
    """Send an event to the room (Neutron ``raiseEvent``): every other member, or ``to``."""

    code: Code
    data: Data = b""
    reliable: bool = True
    to: Members = []


# -- server to client -------------------------------------------------------------------------


class RoomInfo(msgspec.Struct, tag="room", frozen=True, forbid_unknown_fields=True):
    """A room as listed."""

    room: RoomId
    name: Name
    players: Annotated[int, msgspec.Meta(ge=0, le=MAX_PLAYERS)]
    max_players: Players
    properties: Properties
    relay: bool


class RoomList(msgspec.Struct, tag="rooms", frozen=True, forbid_unknown_fields=True):
    """The answer to `ListRooms`."""

    rooms: Annotated[list[RoomInfo], msgspec.Meta(max_length=MAX_LISTED)]


class Joined(msgspec.Struct, tag="joined", frozen=True, forbid_unknown_fields=True):
    """You are in ``info``'s room as ``me``, with ``members``."""

    info: RoomInfo
    me: MemberId
    members: Members


class Left(msgspec.Struct, tag="left", frozen=True, forbid_unknown_fields=True):
    """You left ``room``."""

    room: RoomId


class MemberJoined(msgspec.Struct, tag="member+", frozen=True, forbid_unknown_fields=True):
    """Someone joined your room."""

    room: RoomId
    member: MemberId


class MemberLeft(msgspec.Struct, tag="member-", frozen=True, forbid_unknown_fields=True):
    """Someone left your room."""

    room: RoomId
    member: MemberId


class Relayed(msgspec.Struct, tag="event", frozen=True, forbid_unknown_fields=True):
    """An event a member (or the server: ``sender`` 0) raised in your room."""

    room: RoomId
    sender: MemberId
    code: Code
    data: Data


class RoomError(msgspec.Struct, tag="error", frozen=True, forbid_unknown_fields=True):
    """A request failed: ``reason`` is ``full``, ``no_such_room``, ``no_match``,
    ``not_in_room`` or ``too_many_rooms``."""

    request: Name
    reason: Name


class Closing(msgspec.Struct, tag="bye", frozen=True, forbid_unknown_fields=True):
    """The service is going away and will disconnect you: ``reason`` says why."""

    reason: Reason


RoomMessage: TypeAlias = (
    CreateRoom
    | ListRooms
    | JoinRoom
    | Matchmake
    | LeaveRoom
    | RaiseEvent
    | RoomInfo
    | RoomList
    | Joined
    | Left
    | MemberJoined
    | MemberLeft
    | Relayed
    | RoomError
    | Closing
)
ROOM_MESSAGES: tuple[type[msgspec.Struct], ...] = (
    CreateRoom,
    ListRooms,
    JoinRoom,
    Matchmake,
    LeaveRoom,
    RaiseEvent,
    RoomInfo,
    RoomList,
    Joined,
    Left,
    MemberJoined,
    MemberLeft,
    Relayed,
    RoomError,
    Closing,
)
"""Every message type of the room protocol."""

_CLIENT_MESSAGES = CreateRoom | ListRooms | JoinRoom | Matchmake | LeaveRoom | RaiseEvent
_ENCODER = msgspec.msgpack.Encoder()
_DECODER: msgspec.msgpack.Decoder[Any] = msgspec.msgpack.Decoder(RoomMessage)


def encode_room_message(message: RoomMessage) -> bytes:
    """MessagePack bytes of one message (a map with its ``type`` tag)."""
    return _ENCODER.encode(message)


def decode_room_message(data: bytes) -> RoomMessage | None:
    """The message in ``data``, or None for anything else (never raises)."""
    try:
        message: RoomMessage = _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
        return None  # ValueError: msgspec raises UnicodeDecodeError for a bad tag string
    return message


# -- server -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RoomEventReceived:
    """Server: a member raised an event in a non-relay room (server logic handles it)."""

    room: int
    sender: int
    code: int
    data: bytes


@dataclass(frozen=True, slots=True)
class RoomChanged:
    """Server: a room was created or closed, or a member joined or left it."""

    room: int
    name: str
    change: Literal["created", "joined", "left", "closed"]
    member: int | None
    """The client that joined or left (None for created and closed)."""
    members: int
    """Members of the room after the change."""


@dataclass(frozen=True, slots=True)
class RoomMessageDropped:
    """Server: a client's room message was dropped (``malformed`` or ``unexpected``)."""

    sender: int
    reason: Literal["malformed", "unexpected"]


@dataclass(slots=True)
class _Room:
    ident: int
    name: str
    max_players: int
    properties: dict[str, str]
    relay: bool
    members: list[int] = field(default_factory=list)

    def info(self) -> RoomInfo:
        return RoomInfo(
            self.ident,
            self.name,
            len(self.members),
            self.max_players,
            dict(self.properties),
            self.relay,
        )

    def matches(self, wanted: Mapping[str, str]) -> bool:
        return all(self.properties.get(k) == v for k, v in wanted.items())


class RoomServer:
    """The room service (sans-I/O), over a transport `Server` it makes.

    Args:
        netcode: The transport's netcode settings.
        connection: The transport's reliability settings.
        random_bytes: Cryptographic randomness for the transport.
        max_rooms: Rooms open at once at most.
    """

    def __init__(
        self,
        netcode: NetcodeServerConfig,
        *,
        connection: ConnectionConfig | None = None,
        random_bytes: Callable[[int], bytes] | None = None,
        max_rooms: int = 1024,
    ) -> None:
        if max_rooms < 1:
            raise ConfigError(f"max_rooms must be >= 1, got {max_rooms}")
        extra: dict[str, Any] = {} if random_bytes is None else {"random_bytes": random_bytes}
        self.transport = Server(config=netcode, connection=connection, **extra)
        self.max_rooms = max_rooms
        self.drops: Counter[str] = Counter()
        """Client messages dropped, by reason (``malformed``, ``unexpected``)."""
        self.relayed = 0
        """Events forwarded to members."""
        self._rooms: dict[int, _Room] = {}
        self._room_of: dict[int, int] = {}
        self._ids = itertools.count(1)
        self._events: deque[object] = deque()
        self._goodbyes: set[tuple[int, int]] = set()  # (member, message id) not acknowledged

    @property
    def rooms(self) -> list[RoomInfo]:
        """The open rooms, oldest first."""
        return [room.info() for room in self._rooms.values()]

    def members(self, room: int) -> list[int]:
        """The members of a room (empty if there is no such room)."""
        found = self._rooms.get(room)
        return list(found.members) if found is not None else []

    def send_to_room(self, room: int, code: int, data: bytes, *, reliable: bool = True) -> int:
        """Send an event from the server (sender 0) to every member; return how many got it."""
        found = self._rooms.get(room)
        if found is None:
            return 0
        payload = encode_room_message(Relayed(room, 0, code, data))
        channel = RELIABLE_CHANNEL if reliable else UNRELIABLE_CHANNEL
        return sum(self._deliver(member, channel, payload) for member in found.members)

    def shutdown(self, reason: str) -> int:
        """Tell every connected client `Closing` with ``reason`` (at most `MAX_REASON`
        characters); return how many were told. Pump until ``goodbyes_pending`` is 0 (or a
        grace ends), then `close`.

        Raises:
            ConfigError: ``reason`` is longer than `MAX_REASON` characters.
        """
        if len(reason) > MAX_REASON:
            raise ConfigError(f"reason must be at most {MAX_REASON} characters, got {len(reason)}")
        payload = encode_room_message(Closing(reason))
        told = 0
        for member in self.transport.clients:
            message = self.transport.send(member, RELIABLE_CHANNEL, payload)
            if message is not None:
                self._goodbyes.add((member, message))
                told += 1
        return told

    @property
    def goodbyes_pending(self) -> int:
        """`Closing` messages not acknowledged yet by clients still connected."""
        return len(self._goodbyes)

    def close(self) -> int:
        """Disconnect every client; return how many. Pump the object afterwards."""
        members = self.transport.clients
        for member in members:
            self.transport.disconnect(member)
        self._drain()
        return len(members)

    # -- sans-I/O -----------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises on bad input."""
        self.transport.receive_datagram(data, addr, now)
        self._drain()

    def handle_timer(self, now: float) -> None:
        """Run the transport's timers."""
        self.transport.handle_timer(now)
        self._drain()

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """The transport's datagrams."""
        return self.transport.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """The transport's next deadline."""
        return self.transport.next_timer()

    def next_event(self) -> object | None:
        """The next `RoomEventReceived`, `RoomChanged`, `RoomMessageDropped` or transport
        connection event, or None."""
        return self._events.popleft() if self._events else None

    # -- internals ----------------------------------------------------------------------------

    def _drain(self) -> None:
        while (event := self.transport.next_event()) is not None:
            if isinstance(event, MessageReceived):
                self._on_message(event.connection_id, event.payload)
            elif isinstance(event, MessageDelivered):
                self._goodbyes.discard((event.connection_id, event.message_id))
            elif isinstance(event, ClientDisconnected):
                self._leave(event.connection_id)
                self._goodbyes = {g for g in self._goodbyes if g[0] != event.connection_id}
                self._events.append(event)
            elif isinstance(event, ClientConnected):
                self._events.append(event)

    def _send(self, member: int, message: RoomMessage) -> None:
        self.transport.send(member, RELIABLE_CHANNEL, encode_room_message(message))

    def _on_message(self, sender: int, payload: bytes) -> None:
        message = decode_room_message(payload)
        if message is None:
            self._drop(sender, "malformed")
        elif isinstance(message, CreateRoom):
            self._create(sender, message.name, message.max_players, message.properties, message)
        elif isinstance(message, ListRooms):
            rooms = [r.info() for r in self._rooms.values() if r.matches(message.properties)]
            self._send(sender, RoomList(rooms[:MAX_LISTED]))
        elif isinstance(message, JoinRoom):
            room = self._rooms.get(message.room)
            if room is None:
                self._send(sender, RoomError("join", "no_such_room"))
            else:
                self._join(sender, room, "join")
        elif isinstance(message, Matchmake):
            self._matchmake(sender, message)
        elif isinstance(message, LeaveRoom):
            if not self._leave(sender):
                self._send(sender, RoomError("leave", "not_in_room"))
        elif isinstance(message, RaiseEvent):
            self._raise(sender, message)
        else:
            self._drop(sender, "unexpected")

    def _drop(self, sender: int, reason: Literal["malformed", "unexpected"]) -> None:
        self.drops[reason] += 1
        self._events.append(RoomMessageDropped(sender, reason))

    def _create(
        self,
        sender: int,
        name: str,
        max_players: int,
        properties: Mapping[str, str],
        request: CreateRoom | Matchmake,
    ) -> None:
        kind = "create" if isinstance(request, CreateRoom) else "match"
        if len(self._rooms) >= self.max_rooms:
            self._send(sender, RoomError(kind, "too_many_rooms"))
            return
        relay = request.relay if isinstance(request, CreateRoom) else True
        room = _Room(next(self._ids), name, max_players, dict(properties), relay)
        self._rooms[room.ident] = room
        self._events.append(RoomChanged(room.ident, room.name, "created", None, 0))
        self._join(sender, room, kind)

    def _matchmake(self, sender: int, request: Matchmake) -> None:
        current = self._room_of.get(sender)
        open_rooms = [
            r
            for r in self._rooms.values()
            if r.matches(request.properties)
            and len(r.members) < r.max_players
            and r.ident != current
        ]
        if open_rooms:
            best = max(open_rooms, key=lambda r: (len(r.members), -r.ident))
            self._join(sender, best, "match")
        elif request.create:
            self._create(sender, "match", request.max_players, request.properties, request)
        else:
            self._send(sender, RoomError("match", "no_match"))

    def _join(self, sender: int, room: _Room, request: str) -> None:
        if self._room_of.get(sender) == room.ident:
            self._send(sender, Joined(room.info(), sender, list(room.members)))
            return
        if len(room.members) >= room.max_players:
            self._send(sender, RoomError(request, "full"))
            return
        self._leave(sender)
        for member in room.members:
            self._send(member, MemberJoined(room.ident, sender))
        room.members.append(sender)
        self._room_of[sender] = room.ident
        self._events.append(RoomChanged(room.ident, room.name, "joined", sender, len(room.members)))
        self._send(sender, Joined(room.info(), sender, list(room.members)))

    def _leave(self, member: int) -> bool:
        ident = self._room_of.pop(member, None)
        if ident is None:
            return False
        room = self._rooms[ident]
        room.members.remove(member)
        self._events.append(RoomChanged(ident, room.name, "left", member, len(room.members)))
        if self.transport.is_connected(member):
            self._send(member, Left(ident))
        for other in room.members:
            self._send(other, MemberLeft(ident, member))
        if not room.members:
            del self._rooms[ident]
            self._events.append(RoomChanged(ident, room.name, "closed", None, 0))
        return True

    def _raise(self, sender: int, event: RaiseEvent) -> None:
        ident = self._room_of.get(sender)
        if ident is None:
            self._send(sender, RoomError("raise", "not_in_room"))
            return
        room = self._rooms[ident]
        if not room.relay:
            self._events.append(RoomEventReceived(ident, sender, event.code, event.data))
            return
        wanted = set(event.to)
        recipients = [m for m in room.members if m != sender and (not wanted or m in wanted)]
        payload = encode_room_message(Relayed(ident, sender, event.code, event.data))
        channel = RELIABLE_CHANNEL if event.reliable else UNRELIABLE_CHANNEL
        self.relayed += sum(self._deliver(member, channel, payload) for member in recipients)

    def _deliver(self, member: int, channel: int, payload: bytes) -> bool:
        """Queue one relayed event; an unreliable one too large for one datagram is counted
        (``too_large``) and dropped, as the transport cannot send it unfragmented."""
        try:
            self.transport.send(member, channel, payload)
        except MessageTooLarge:
            self.drops["too_large"] += 1
            return False
        return True


# -- client -----------------------------------------------------------------------------------


class RoomClient:
    """A client of the room service (sans-I/O), over a transport `Client` it makes.

    Args:
        protocol_id: The service's protocol id.
        netcode: The transport's netcode settings (default: insecure).
        connection: The transport's reliability settings.
    """

    def __init__(
        self,
        protocol_id: int,
        *,
        netcode: NetcodeClientConfig | None = None,
        connection: ConnectionConfig | None = None,
    ) -> None:
        self.protocol_id = protocol_id
        self.transport = TransportClient(
            config=NetcodeClientConfig(insecure=True) if netcode is None else netcode,
            connection=connection,
        )
        self.room: RoomInfo | None = None
        """The room this client is in, as of its `Joined`."""
        self.members: list[int] = []
        """Members of that room (kept up to date by `MemberJoined` / `MemberLeft`)."""
        self.me: int | None = None
        """This client's member id."""
        self.drops: Counter[str] = Counter()
        """Server messages dropped (``malformed``, ``unexpected``)."""
        self.closing: str | None = None
        """The reason the service gave in its `Closing` (``server shutting down``), if it did."""
        self._events: deque[object] = deque()

    def connect(self, server: Address, now: float, *, client_id: int) -> None:
        """Connect to the room server (insecure mode)."""
        self.transport.connect_insecure(
            server_addresses=[server], protocol_id=self.protocol_id, client_id=client_id, now=now
        )
        self._drain()

    def request(self, message: RoomMessage) -> None:
        """Send any client-to-server message (`CreateRoom`, `ListRooms`, `JoinRoom`,
        `Matchmake`, `LeaveRoom`, `RaiseEvent`); raise `LocalProtocolError` if not connected."""
        unreliable = isinstance(message, RaiseEvent) and not message.reliable
        channel = UNRELIABLE_CHANNEL if unreliable else RELIABLE_CHANNEL
        self.transport.send(channel, encode_room_message(message))

    def raise_event(self, code: int, data: bytes = b"", *, reliable: bool = True) -> None:
        """Send an event to the other members of the room (Neutron ``raiseEvent``)."""
        self.request(RaiseEvent(code, data, reliable))

    # -- sans-I/O -----------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises on bad input."""
        self.transport.receive_datagram(data, addr, now)
        self._drain()

    def handle_timer(self, now: float) -> None:
        """Run the transport's timers."""
        self.transport.handle_timer(now)
        self._drain()

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """The transport's datagrams."""
        return self.transport.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """The transport's next deadline."""
        return self.transport.next_timer()

    def next_event(self) -> object | None:
        """The next server message (`Joined`, `Relayed`, `RoomList`, ...) or transport event."""
        return self._events.popleft() if self._events else None

    def _drain(self) -> None:
        while (event := self.transport.next_event()) is not None:
            if not isinstance(event, MessageReceived):
                self._events.append(event)
                continue
            message = decode_room_message(event.payload)
            if message is None:
                self.drops["malformed"] += 1
                continue
            if isinstance(message, _CLIENT_MESSAGES | RoomInfo):  # not sent by a server alone
                self.drops["unexpected"] += 1
                continue
            if isinstance(message, Joined):
                self.room, self.me, self.members = message.info, message.me, list(message.members)
            elif isinstance(message, Left) and self.room is not None:
                if message.room == self.room.room:
                    self.room, self.members = None, []
            elif isinstance(message, MemberJoined) and message.member not in self.members:
                self.members.append(message.member)
            elif isinstance(message, MemberLeft) and message.member in self.members:
                self.members.remove(message.member)
            elif isinstance(message, Closing):
                self.closing = message.reason
            self._events.append(message)
