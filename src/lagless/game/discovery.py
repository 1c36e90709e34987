"""LAN discovery: find game servers without knowing their address (spec 003 §5.4.2, checklist 7.1).

A `DiscoveryClient` sends a query datagram to one or more discovery addresses (a broadcast address
such as ``255.255.255.255:47800`` on a LAN, ``127.255.255.255:47800`` on loopback, the multicast
group `DEFAULT_DISCOVERY_GROUP`, or any unicast address) every ``interval`` seconds while
discovering; every `DiscoveryResponder` listening there answers with its name, player count,
capacity, game name and game port. The client keeps a list of the servers that answered
(``servers``), updated by each answer and pruned of servers silent for ``expiry`` seconds; it emits
`ServerDiscovered` for each new server and `ServerLost` for each pruned one. Both objects are
sans-I/O; `lagless.io.discovery` drives them on a broadcast or multicast socket.

Wire format (big-endian):

* query, exactly `QUERY_SIZE` (128) bytes: ``b"LGDQ"`` | version u8 (1) | nonce u32 |
  protocol id u64 | zero padding. The padding makes a query at least as large as any reply, so a
  responder cannot be used to amplify traffic towards a spoofed source (the netcode request-padding
  rule of DESIGN.md).
* reply, at most `MAX_REPLY_SIZE` bytes: ``b"LGDR"`` | version u8 | nonce u32 | protocol id u64 |
  game port u16 | players u16 | max players u16 | name length u8 | name (UTF-8, at most 32 bytes) |
  game length u8 | game (UTF-8, at most 32 bytes).

Decisions: a reply is accepted only with the nonce of this client's current discovery session and
its protocol id (a stale or forged reply is counted in ``drops``); a server is named by the
replying host and the game port it announced (a server on 0.0.0.0 answers from the address the
client reached it at); the RTT of an answer is measured from the latest query. A responder answers
at most ``max_replies_per_second`` queries (the rest are counted), and ignores another protocol id.
Bad bytes are counted and dropped; nothing here raises on input.
"""

from __future__ import annotations

import random
import struct
from collections import Counter, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, overload

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.game.events import DiscoveredServer, ServerDiscovered, ServerLost

__all__ = [
    "DEFAULT_DISCOVERY_GROUP",
    "DEFAULT_DISCOVERY_PORT",
    "MAX_REPLY_SIZE",
    "QUERY_SIZE",
    "DiscoveryClient",
    "DiscoveryReply",
    "DiscoveryResponder",
    "ServerAnnouncement",
    "ServerList",
    "decode_query",
    "decode_reply",
    "encode_query",
    "encode_reply",
]

DEFAULT_DISCOVERY_PORT: Final = 47800
DEFAULT_DISCOVERY_GROUP: Final = "239.255.76.71"  # organisation-local multicast (239.255/16)
QUERY_MAGIC: Final = b"LGDQ"
REPLY_MAGIC: Final = b"LGDR"
VERSION: Final = 1
QUERY_SIZE: Final = 128  # bytes, padded (anti-amplification)
MAX_TEXT: Final = 32  # bytes of name or game name
_HEAD = struct.Struct(">4sBIQ")
_REPLY = struct.Struct(">HHH")
MAX_REPLY_SIZE: Final = _HEAD.size + _REPLY.size + 2 + 2 * MAX_TEXT


@dataclass(frozen=True, slots=True)
class ServerAnnouncement:
    """What a responder says about its server."""

    name: str
    players: int
    max_players: int
    port: int
    """The game server's UDP port."""
    game: str = ""


@dataclass(frozen=True, slots=True)
class DiscoveryReply:
    """A decoded reply."""

    nonce: int
    protocol_id: int
    announcement: ServerAnnouncement


def _clip(text: str) -> bytes:
    return text.encode("utf-8")[:MAX_TEXT].decode("utf-8", "ignore").encode("utf-8")


def encode_query(nonce: int, protocol_id: int) -> bytes:
    """A `QUERY_SIZE`-byte query."""
    return _HEAD.pack(QUERY_MAGIC, VERSION, nonce, protocol_id).ljust(QUERY_SIZE, b"\0")


def decode_query(data: bytes) -> tuple[int, int] | None:
    """``(nonce, protocol_id)`` of a well-formed query, or None."""
    if len(data) != QUERY_SIZE:
        return None
    magic, version, nonce, protocol_id = _HEAD.unpack_from(data)
    if magic != QUERY_MAGIC or version != VERSION or any(data[_HEAD.size :]):
        return None
    return nonce, protocol_id


def encode_reply(nonce: int, protocol_id: int, announcement: ServerAnnouncement) -> bytes:
    """A reply (names longer than 32 bytes are cut at a character boundary; counts clipped).

    Raises:
        ConfigError: the port is outside [1, 65535].
    """
    a = announcement
    if not 1 <= a.port <= 65535:
        raise ConfigError(f"announced port must be in [1, 65535], got {a.port}")
    name, game = _clip(a.name), _clip(a.game)
    players, capacity = (min(max(v, 0), 65535) for v in (a.players, a.max_players))
    return (
        _HEAD.pack(REPLY_MAGIC, VERSION, nonce, protocol_id)
        + _REPLY.pack(a.port, players, capacity)
        + bytes([len(name)])
        + name
        + bytes([len(game)])
        + game
    )


def decode_reply(data: bytes) -> DiscoveryReply | None:
    """The reply in ``data``, or None if it is not a well-formed reply."""
    if not _HEAD.size + _REPLY.size + 2 <= len(data) <= MAX_REPLY_SIZE:
        return None
    magic, version, nonce, protocol_id = _HEAD.unpack_from(data)
    if magic != REPLY_MAGIC or version != VERSION:
        return None
    port, players, capacity = _REPLY.unpack_from(data, _HEAD.size)
    at = _HEAD.size + _REPLY.size
    texts = []
    for _ in range(2):
        if at >= len(data):
            return None
        size = data[at]
        end = at + 1 + size
        if size > MAX_TEXT or end > len(data):
            return None
        try:
            texts.append(data[at + 1 : end].decode("utf-8"))
        except UnicodeDecodeError:
            return None
        at = end
    if at != len(data) or port == 0:
        return None
    return DiscoveryReply(
        nonce, protocol_id, ServerAnnouncement(texts[0], players, capacity, port, texts[1])
    )


class DiscoveryResponder:
    """Answers discovery queries for one game server (sans-I/O).

    Args:
        protocol_id: The game's protocol id; queries for another are ignored.
        announce: Returns the current announcement (called per answer, so player counts are live).
        max_replies_per_second: Answers per second at most (a flood is counted, not answered).
    """

    def __init__(
        self,
        protocol_id: int,
        announce: Callable[[], ServerAnnouncement],
        *,
        max_replies_per_second: int = 200,
    ) -> None:
        if max_replies_per_second < 1:
            raise ConfigError(f"max_replies_per_second must be >= 1, got {max_replies_per_second}")
        self.protocol_id = protocol_id
        self.announce = announce
        self.max_replies_per_second = max_replies_per_second
        self.replies = 0
        """Queries answered."""
        self.drops: Counter[str] = Counter()
        """Datagrams not answered, by reason (``malformed``, ``protocol``, ``rate``)."""
        self._out: list[tuple[bytes, Address]] = []
        self._window = 0.0
        self._in_window = 0

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Answer a query; count anything else. Never raises."""
        query = decode_query(data)
        if query is None:
            self.drops["malformed"] += 1
            return
        nonce, protocol_id = query
        if protocol_id != self.protocol_id:
            self.drops["protocol"] += 1
            return
        if now - self._window >= 1.0:
            self._window, self._in_window = now, 0
        if self._in_window >= self.max_replies_per_second:
            self.drops["rate"] += 1
            return
        self._in_window += 1
        self.replies += 1
        self._out.append((encode_reply(nonce, protocol_id, self.announce()), addr))

    def handle_timer(self, now: float) -> None:
        """Nothing is timed."""

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """The answers queued."""
        out, self._out = self._out, []
        return out

    def next_timer(self) -> float | None:
        """None: a responder only reacts."""
        return None

    def next_event(self) -> object | None:
        """None: a responder emits no events."""
        return None


class ServerList(Sequence[DiscoveredServer]):
    """A live view of a `DiscoveryClient`'s servers, sorted by address: it changes as answers
    arrive and servers expire (what ``discover()`` returns: "a list that updates")."""

    def __init__(self, servers: dict[Address, DiscoveredServer]) -> None:
        self._servers = servers

    def __len__(self) -> int:
        """Servers listed now."""
        return len(self._servers)

    @overload
    def __getitem__(self, index: int) -> DiscoveredServer: ...

    @overload
    def __getitem__(self, index: slice) -> list[DiscoveredServer]: ...

    def __getitem__(self, index: int | slice) -> DiscoveredServer | list[DiscoveredServer]:
        """The server(s) at ``index`` in the current sorted list."""
        return [self._servers[a] for a in sorted(self._servers)][index]

    def __eq__(self, other: object) -> bool:
        """Equal to any list or tuple holding the same servers in the same order."""
        if isinstance(other, ServerList | list | tuple):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # it changes: unhashable, like a list

    def __repr__(self) -> str:
        """``ServerList([...])`` of the current servers."""
        return f"ServerList({list(self)!r})"


class DiscoveryClient:
    """Finds servers by querying discovery addresses (spec 003 §5.4.2 ``DoDiscover``; sans-I/O).

    Args:
        protocol_id: The game's protocol id.
        rng: Draws each session's nonce.
        interval: Seconds between queries while discovering.
        expiry: A server silent this long (s) leaves the list.
    """

    def __init__(
        self,
        protocol_id: int,
        *,
        rng: random.Random,
        interval: float = 0.25,
        expiry: float = 3.0,
    ) -> None:
        if not (0.01 <= interval <= 60.0 and interval < expiry <= 3600.0):
            raise ConfigError(
                f"interval must be in [0.01, 60] s and expiry in (interval, 3600] s, "
                f"got {interval}, {expiry}"
            )
        self.protocol_id = protocol_id
        self.rng = rng
        self.interval = interval
        self.expiry = expiry
        self.drops: Counter[str] = Counter()
        """Datagrams dropped, by reason (``malformed``, ``stale``)."""
        self._targets: tuple[Address, ...] = ()
        self._nonce = 0
        self._next_query: float | None = None
        self._last_query = 0.0
        self._servers: dict[Address, DiscoveredServer] = {}
        self._out: list[tuple[bytes, Address]] = []
        self._events: deque[object] = deque()

    # -- spec 003 §5.4.2 ----------------------------------------------------------------------

    def start(self, targets: Sequence[Address], now: float) -> ServerList:
        """Start (or restart) discovering: query ``targets`` now and every ``interval``.

        Returns:
            The live list of discovered servers (`ServerList`).
        """
        if not targets:
            raise ConfigError("discovery needs at least one target address")
        self._targets = tuple(targets)
        self._nonce = self.rng.getrandbits(32)
        self._next_query = now
        return ServerList(self._servers)

    def stop(self) -> None:
        """Stop discovering (thesis ``StopDiscovering``); the list is kept."""
        self._next_query = None

    @property
    def discovering(self) -> bool:
        """Whether queries are being sent (``IsDiscovering``)."""
        return self._next_query is not None

    @property
    def servers(self) -> ServerList:
        """The discovered servers, by address, as a live list (``GetDiscoveredServers``)."""
        return ServerList(self._servers)

    def remove_server(self, address: Address) -> bool:
        """Forget one server (``RemoveServer``); return whether it was listed."""
        return self._servers.pop(address, None) is not None

    def clear(self) -> None:
        """Forget every server (``ClearDiscoveredServerList``)."""
        self._servers.clear()

    # -- sans-I/O -----------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take a reply; count anything else. Never raises."""
        reply = decode_reply(data)
        if reply is None:
            self.drops["malformed"] += 1
            return
        if (
            not self.discovering
            or reply.nonce != self._nonce
            or reply.protocol_id != self.protocol_id
        ):
            self.drops["stale"] += 1
            return
        a = reply.announcement
        address = (addr[0], a.port)
        known = address in self._servers
        server = DiscoveredServer(
            address, a.name, a.players, a.max_players, a.game, now, max(0.0, now - self._last_query)
        )
        self._servers[address] = server
        if not known:
            self._events.append(ServerDiscovered(server))

    def handle_timer(self, now: float) -> None:
        """Send the query when due; prune silent servers."""
        for address, server in list(self._servers.items()):
            if now - server.last_seen >= self.expiry:
                del self._servers[address]
                self._events.append(ServerLost(address))
        if self._next_query is not None and now >= self._next_query:
            query = encode_query(self._nonce, self.protocol_id)
            self._out.extend((query, target) for target in self._targets)
            self._last_query = now
            self._next_query = max(self._next_query + self.interval, now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """The queries queued."""
        out, self._out = self._out, []
        return out

    def next_timer(self) -> float | None:
        """The next query or expiry (s), or None."""
        times = [s.last_seen + self.expiry for s in self._servers.values()]
        if self._next_query is not None:
            times.append(self._next_query)
        return min(times, default=None)

    def next_event(self) -> object | None:
        """The next `ServerDiscovered` or `ServerLost`, or None."""
        return self._events.popleft() if self._events else None
