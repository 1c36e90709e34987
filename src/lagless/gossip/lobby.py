"""The Silac information server (`Lobby`) and its peer-side helper (`LobbyClient`), sans-I/O.

Implements spec 002 §2.11 (info-server messages 32–35, standard header, no tail), the
information server of §3.4 / Fig. 2.14 and the join through contact nodes of §3.12. The thesis
leaves the server's behaviour open (§7.15); the decisions, each pinned by a test in
``tests/gossip/test_lobby.py``:

* **Registration is the heartbeat.** The first type-35 heartbeat of an unknown game id opens
  the game; its map id and game type are then fixed, and a heartbeat naming other values is
  dropped as ``GAME_MISMATCH`` (``test_heartbeat_opens_game_and_lists_it``,
  ``test_heartbeat_with_other_map_is_dropped``).
* **A member is (UDP source host, header sender port)**, the reply rule of the peer, so a
  `LobbyClient` on another socket still lists the peer's gossip port; the source host must be an
  IP literal (``test_member_address_uses_sender_port``).
* **Requests are type 34.** Header game id 0 asks for the active games list and is answered with
  type 32; a non-zero game id asks for that game's extra contacts and is answered with type 33
  carrying up to ``wanted_contacts`` of them. An unknown game is answered with a type-33 entry
  with no participants and no contacts, so the asker learns at once that it is gone
  (``test_games_list_and_game_info_requests``, ``test_unknown_game_info_is_empty``).
* **Contacts** are a uniform random sample (injected ``rng``) of the game's live members of the
  requester's address family, never the requester itself; the p bit follows that family
  (``test_contacts_exclude_requester_and_match_family``).
* **Replies fit one datagram**: the list holds the games with most participants first (ties by
  game id), ``list_contacts`` contacts each, truncated to ``max_datagram`` bytes
  (``test_list_fits_the_datagram_budget``).
* **Expiry**: a member silent for ``member_timeout`` (10 s, the forget timeout of §3.2; peers
  send a heartbeat every 2 s) is removed, and a game closes with its last member
  (``test_silent_members_expire_and_games_close``).
* **Amplification**: a 24-byte request may earn a reply of up to ``max_datagram`` bytes, so
  replies go only to the UDP source and each source gets ``request_burst`` answers per
  ``request_window`` at most (``test_requests_are_rate_limited``). Heartbeats earn no reply.
* Info-server messages are never forwarded, so only hop 0 is taken (``INVALID``).
* **Client**: one request outstanding at a time, re-sent every ``retry_interval`` until answered
  or ``request_attempts`` were sent (then `LobbyUnreachable`); only datagrams from the lobby's
  address that answer the outstanding request are taken
  (``test_client_retries_then_reports_unreachable``, ``test_client_ignores_strangers``).
"""

from __future__ import annotations

import enum
import ipaddress
import logging
import random
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from lagless._types import Address
from lagless._validate import require_int_range as _int_range
from lagless._validate import require_positive as _positive
from lagless.errors import LocalProtocolError
from lagless.gossip import codec
from lagless.gossip.events import GossipEvent
from lagless.gossip.messages import (
    MAX_CONTACTS,
    MAX_GAMES,
    ExtraInfoRequest,
    GameEntry,
    GameInfo,
    GamesList,
    Header,
    Heartbeat,
    Packet,
    Payload,
)
from lagless.wire import DecodeError

__all__ = [
    "GameClosed",
    "GameInfoReceived",
    "GameOpened",
    "GamesListed",
    "Lobby",
    "LobbyClient",
    "LobbyClientConfig",
    "LobbyClientStatistics",
    "LobbyConfig",
    "LobbyDropReason",
    "LobbyStatistics",
    "LobbyUnreachable",
]

_log = logging.getLogger("lagless.gossip")

_REQUEST_SIZE: Final = codec.HEADER_SIZE + 4  # bytes of a type-34 request
_GAME_FIXED: Final = 20  # bytes of a type-32/33 game before its contacts (silac.md "Game data")
_CONTACT_SIZE: Final = {False: 8, True: 20}  # bytes per contact: address + u32 port, IPv4 / IPv6
_PARTICIPANTS_LIMIT: Final = (1 << 31) - 1  # the 31-bit participant count of Fig. 2.11


@dataclass(frozen=True, slots=True, kw_only=True)
class LobbyConfig:
    """Parameters of a `Lobby` (spec 002 §2.11; the thesis gives no values, §7.15).

    Raises:
        ConfigError: naming the first field out of range.
    """

    member_timeout: float = 10.0
    """Seconds without a heartbeat after which a member is removed (§3.2's forget timeout)."""
    max_games: int = 256
    """Games tracked at most; heartbeats opening more are dropped (bounded memory)."""
    max_members: int = 1024
    """Members tracked per game at most (bounded memory)."""
    list_contacts: int = 4
    """Contacts given per game in a type-32 list, in [1, 16]."""
    max_datagram: int = 1200
    """Bytes per reply at most (DESIGN.md payload budget), in [512, 65507]."""
    request_burst: int = 8
    """Requests answered per source per ``request_window`` at most (anti-amplification)."""
    request_window: float = 1.0
    """Seconds of the per-source request budget window."""
    max_sources: int = 4096
    """Sources whose request budget is tracked at once; more sources are refused."""

    def __post_init__(self) -> None:
        _positive("member_timeout", self.member_timeout)
        _positive("request_window", self.request_window)
        _int_range("max_games", self.max_games, 1, 1 << 20)
        _int_range("max_members", self.max_members, 1, 1 << 20)
        _int_range("list_contacts", self.list_contacts, 1, 16)
        _int_range("max_datagram", self.max_datagram, 512, 65507)
        _int_range("request_burst", self.request_burst, 1, 1 << 20)
        _int_range("max_sources", self.max_sources, 1, 1 << 24)


@dataclass(frozen=True, slots=True, kw_only=True)
class LobbyClientConfig:
    """Parameters of a `LobbyClient` (spec 002 §2.11; the thesis gives no values, §7.15).

    Raises:
        ConfigError: naming the first field out of range.
    """

    retry_interval: float = 0.5
    """Seconds between re-sends of an unanswered request."""
    request_attempts: int = 4
    """Requests sent before `LobbyUnreachable` is reported."""
    heartbeat_interval: float = 2.0
    """Seconds between heartbeats; keep it well under the lobby's ``member_timeout``."""
    wanted_contacts: int = 8
    """Contacts asked for in a type-34 request, in [1, 64]."""
    map_id: int = 0
    """Map id sent in heartbeats (must match the peer's `GossipConfig.map_id`)."""
    game_type: int = 0
    """Game type sent in heartbeats (must match the peer's `GossipConfig.game_type`)."""

    def __post_init__(self) -> None:
        _positive("retry_interval", self.retry_interval)
        _positive("heartbeat_interval", self.heartbeat_interval)
        _int_range("request_attempts", self.request_attempts, 1, 1 << 20)
        _int_range("wanted_contacts", self.wanted_contacts, 1, MAX_CONTACTS)
        _int_range("map_id", self.map_id, 0, (1 << 32) - 1)
        _int_range("game_type", self.game_type, 0, (1 << 32) - 1)


class LobbyDropReason(enum.Enum):
    """Why a `Lobby` or `LobbyClient` dropped a datagram, in check order."""

    MALFORMED = "malformed"
    """`lagless.gossip.codec.decode` raised `DecodeError`."""
    UNEXPECTED_TYPE = "unexpected_type"
    """A type this side never takes: game messages (0–10), or 32/33 at the lobby, 34/35 at a
    client."""
    WRONG_SOURCE = "wrong_source"
    """At a client: the datagram did not come from the lobby's address."""
    INVALID = "invalid"
    """Hop not 0, a heartbeat with game id 0, or a source host that is not an IP literal."""
    RATE_LIMITED = "rate_limited"
    """The source used up its request budget (or too many sources are tracked)."""
    GAME_MISMATCH = "game_mismatch"
    """A heartbeat naming another map or game type than the game's first heartbeat."""
    TABLE_FULL = "table_full"
    """A new game beyond ``max_games`` or a new member beyond ``max_members``."""
    UNSOLICITED = "unsolicited"
    """At a client: a reply that answers no outstanding request."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GameOpened(GossipEvent):
    """The lobby took the first heartbeat of a game."""

    game_id: int
    """The game's id."""
    map_id: int
    """Its map id."""
    game_type: int
    """Its game type."""
    member: Address
    """The member whose heartbeat opened it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GameClosed(GossipEvent):
    """The lobby removed a game whose last member fell silent."""

    game_id: int
    """The game's id."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GamesListed(GossipEvent):
    """A client's games-list request was answered (type 32)."""

    games: tuple[GameEntry, ...]
    """The active games, most participants first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GameInfoReceived(GossipEvent):
    """A client's extra-info request was answered (type 33)."""

    game: GameEntry
    """The game; no contacts and 0 participants when the lobby does not know it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LobbyUnreachable(GossipEvent):
    """A client request went unanswered ``request_attempts`` times."""

    game_id: int
    """The game asked about; 0 for a games-list request."""
    attempts: int
    """Requests sent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LobbyStatistics:
    """A snapshot of a `Lobby`'s counters (trio-style ``statistics()``)."""

    dropped: Mapping[LobbyDropReason, int]
    """Datagrams dropped per reason; every reason present."""
    datagrams_received: int
    """Datagrams handed to ``receive_datagram``."""
    bytes_received: int
    """Their bytes (UDP payload only)."""
    datagrams_sent: int
    """Datagrams returned by ``datagrams_to_send``."""
    bytes_sent: int
    """Their bytes (UDP payload only; add 28 per datagram for IPv4 + UDP)."""
    heartbeats: int
    """Heartbeats taken."""
    answered: int
    """Requests answered (types 32 and 33 sent)."""
    expired: int
    """Members removed for silence."""
    games: int
    """Active games now."""
    members: int
    """Live members over all games now."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LobbyClientStatistics:
    """A snapshot of a `LobbyClient`'s counters."""

    dropped: Mapping[LobbyDropReason, int]
    """Datagrams dropped per reason; every reason present."""
    datagrams_received: int
    """Datagrams handed to ``receive_datagram``."""
    datagrams_sent: int
    """Datagrams returned by ``datagrams_to_send``."""
    bytes_sent: int
    """Their bytes (UDP payload only)."""
    requests_sent: int
    """Type-34 requests sent, re-sends included."""
    heartbeats_sent: int
    """Type-35 heartbeats sent."""


@dataclass(slots=True)
class _Game:
    map_id: int
    game_type: int
    members: dict[Address, float] = field(default_factory=dict)
    """Member address -> time of its last heartbeat, oldest first."""


def _is_v6(address: Address) -> bool:
    return ":" in address[0]


class Lobby:
    """The Silac information server: a list of active games kept alive by heartbeats (§2.11).

    It takes no part in any game. Peers send heartbeats (35) while they play; anyone may ask for
    the games list or for a game's extra contacts with a type-34 request.

    Args:
        config: The validated parameters.
        rng: Source of the contact samples.
        port: This lobby's UDP port, written as the header's sender port of replies.
    """

    def __init__(self, *, config: LobbyConfig, rng: random.Random, port: int = 0) -> None:
        if not 0 <= port <= 0xFFFF:
            raise LocalProtocolError(f"port must be in [0, 65535], got {port}")
        self._config = config
        self._rng = rng
        self._port = port
        self._games: dict[int, _Game] = {}
        self._windows: dict[Address, tuple[float, int]] = {}
        self._number = 0
        self._outbox: list[tuple[bytes, Address]] = []
        self._events: deque[GossipEvent] = deque()
        self._dropped = dict.fromkeys(LobbyDropReason, 0)
        self._received = self._bytes_received = 0
        self._sent = self._bytes_sent = 0
        self._heartbeats = self._answered = self._expired = 0

    # -- introspection ----------------------------------------------------------------------

    def games(self, requester: Address = ("0.0.0.0", 0)) -> list[GameEntry]:
        """Return every active game, most participants first, as a type-32 list would hold it.

        Args:
            requester: Whose view: its address family, and it is left out of the contacts.
        """
        return [
            self._entry(gid, g, requester, self._config.list_contacts) for gid, g in self._order()
        ]

    def statistics(self) -> LobbyStatistics:
        """Return a frozen snapshot of the counters."""
        return LobbyStatistics(
            dropped=MappingProxyType(dict(self._dropped)),
            datagrams_received=self._received,
            bytes_received=self._bytes_received,
            datagrams_sent=self._sent,
            bytes_sent=self._bytes_sent,
            heartbeats=self._heartbeats,
            answered=self._answered,
            expired=self._expired,
            games=len(self._games),
            members=sum(len(g.members) for g in self._games.values()),
        )

    # -- sans-I/O ---------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; bad or unwanted input is counted by `LobbyDropReason`, never raised.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._received += 1
        self._bytes_received += len(data)
        try:
            packet = codec.decode(data)
        except DecodeError:
            self._drop(LobbyDropReason.MALFORMED)
            return
        reason = self._receive(packet, addr, now)
        if reason is not None:
            self._drop(reason)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return and clear the queued replies."""
        out, self._outbox = self._outbox, []
        self._sent += len(out)
        self._bytes_sent += sum(len(d) for d, _ in out)
        return out

    def next_timer(self) -> float | None:
        """Return when the next member falls silent for ``member_timeout`` (s), or ``None``."""
        oldest = [next(iter(g.members.values())) for g in self._games.values() if g.members]
        return min(oldest) + self._config.member_timeout if oldest else None

    def handle_timer(self, now: float) -> None:
        """Remove members silent for ``member_timeout`` and the games left without members.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        cutoff = now - self._config.member_timeout
        for game_id in list(self._games):
            members = self._games[game_id].members
            # members are kept oldest first, so the scan stops at the first live one
            while members:
                member, seen = next(iter(members.items()))
                if seen > cutoff:
                    break
                del members[member]
                self._expired += 1
            if not members:
                del self._games[game_id]
                self._events.append(GameClosed(game_id=game_id))

    def next_event(self) -> GossipEvent | None:
        """Return the oldest pending event (`GameOpened`, `GameClosed`), or ``None``."""
        return self._events.popleft() if self._events else None

    # -- internals --------------------------------------------------------------------------

    def _drop(self, reason: LobbyDropReason) -> None:
        self._dropped[reason] += 1
        _log.debug("lobby dropped a datagram: %s", reason.value)

    def _receive(self, packet: Packet, addr: Address, now: float) -> LobbyDropReason | None:
        payload = packet.payload
        if not isinstance(payload, Heartbeat | ExtraInfoRequest):
            return LobbyDropReason.UNEXPECTED_TYPE
        h = packet.header
        if h.hop != 0:
            return LobbyDropReason.INVALID
        if isinstance(payload, Heartbeat):
            return self._heartbeat(h, payload, addr, now)
        return self._request(h, payload, addr, now)

    def _heartbeat(
        self, h: Header, p: Heartbeat, addr: Address, now: float
    ) -> LobbyDropReason | None:
        if h.game_id == 0:
            return LobbyDropReason.INVALID
        try:
            ipaddress.ip_address(addr[0])
        except ValueError:
            return LobbyDropReason.INVALID
        member = (addr[0], h.sender_port or addr[1])
        game = self._games.get(h.game_id)
        if game is None:
            if len(self._games) >= self._config.max_games:
                return LobbyDropReason.TABLE_FULL
            game = _Game(p.map_id, p.game_type)
            self._games[h.game_id] = game
            self._events.append(
                GameOpened(game_id=h.game_id, map_id=p.map_id, game_type=p.game_type, member=member)
            )
        elif (game.map_id, game.game_type) != (p.map_id, p.game_type):
            return LobbyDropReason.GAME_MISMATCH
        if member not in game.members and len(game.members) >= self._config.max_members:
            return LobbyDropReason.TABLE_FULL
        game.members.pop(member, None)  # re-insert at the end: members stay oldest first
        game.members[member] = now
        self._heartbeats += 1
        return None

    def _allow(self, source: Address, now: float) -> bool:
        """Charge one request to ``source``'s budget; False when it is used up."""
        c = self._config
        windows = self._windows
        # windows are kept in order of their start, so expired ones sit at the front
        while windows:
            first, (start, _) = next(iter(windows.items()))
            if now - start < c.request_window:
                break
            del windows[first]
        window = windows.get(source)
        if window is None:
            if len(windows) >= c.max_sources:
                return False
            windows[source] = (now, 1)
            return True
        if window[1] >= c.request_burst:
            return False
        windows[source] = (window[0], window[1] + 1)
        return True

    def _request(
        self, h: Header, p: ExtraInfoRequest, addr: Address, now: float
    ) -> LobbyDropReason | None:
        if not self._allow(addr, now):
            return LobbyDropReason.RATE_LIMITED
        requester = (addr[0], h.sender_port or addr[1])
        payload: Payload
        if h.game_id == 0:
            payload = GamesList(games=self._list(requester, p.wanted_contacts))
        else:
            game = self._games.get(h.game_id)
            if game is None:
                entry = GameEntry(game_id=h.game_id, ipv6=_is_v6(requester))
            else:
                room = (self._config.max_datagram - _REQUEST_SIZE - _GAME_FIXED) // _CONTACT_SIZE[
                    _is_v6(requester)
                ]
                wanted = min(p.wanted_contacts, MAX_CONTACTS, room)
                entry = self._entry(h.game_id, game, requester, wanted)
            payload = GameInfo(game=entry)
        self._number = (self._number + 1) & 0xFFFFFFFF
        header = Header(
            sender_port=self._port,
            game_id=h.game_id,
            message_number=self._number,
            last_received=h.message_number,
        )
        self._outbox.append((codec.encode(Packet(header=header, payload=payload)), addr))
        self._answered += 1
        return None

    def _order(self) -> list[tuple[int, _Game]]:
        return sorted(self._games.items(), key=lambda item: (-len(item[1].members), item[0]))

    def _list(self, requester: Address, wanted: int) -> tuple[GameEntry, ...]:
        per_game = max(0, min(wanted, self._config.list_contacts))
        size = _REQUEST_SIZE
        games: list[GameEntry] = []
        for game_id, game in self._order():
            entry = self._entry(game_id, game, requester, per_game)
            size += _GAME_FIXED + len(entry.contacts) * _CONTACT_SIZE[entry.ipv6]
            if size > self._config.max_datagram or len(games) >= MAX_GAMES:
                break
            games.append(entry)
        return tuple(games)

    def _entry(self, game_id: int, game: _Game, requester: Address, wanted: int) -> GameEntry:
        v6 = _is_v6(requester)
        candidates = [m for m in game.members if m != requester and _is_v6(m) == v6]
        contacts = self._rng.sample(candidates, min(wanted, len(candidates)))
        return GameEntry(
            game_id=game_id,
            map_id=game.map_id,
            game_type=game.game_type,
            participants=min(len(game.members), _PARTICIPANTS_LIMIT),
            ipv6=v6,
            contacts=tuple(contacts),
        )


class LobbyClient:
    """A peer's side of the info server: games-list and contact requests, and heartbeats.

    It speaks only to one lobby. A peer runner drives it next to its `GossipPeer` and gives it
    the datagrams that come from the lobby's address (see ``lagless.apps.gossip``).

    Args:
        config: The validated parameters.
        lobby: The lobby's address (an IP literal and a port, as the driver reports sources).
        port: The peer's gossip port, written as the header's sender port so the lobby lists it.
    """

    def __init__(self, *, config: LobbyClientConfig, lobby: Address, port: int) -> None:
        if not 0 <= port <= 0xFFFF:
            raise LocalProtocolError(f"port must be in [0, 65535], got {port}")
        self._config = config
        self._lobby = lobby
        self._port = port
        self._number = 0
        self._request: int | None = None
        self._attempts = 0
        self._deadline: float | None = None
        self._heartbeat_game = 0
        self._next_heartbeat: float | None = None
        self._outbox: list[tuple[bytes, Address]] = []
        self._events: deque[GossipEvent] = deque()
        self._dropped = dict.fromkeys(LobbyDropReason, 0)
        self._received = self._sent = self._bytes_sent = 0
        self._requests_sent = self._heartbeats_sent = 0

    @property
    def lobby(self) -> Address:
        """The lobby's address."""
        return self._lobby

    def statistics(self) -> LobbyClientStatistics:
        """Return a frozen snapshot of the counters."""
        return LobbyClientStatistics(
            dropped=MappingProxyType(dict(self._dropped)),
            datagrams_received=self._received,
            datagrams_sent=self._sent,
            bytes_sent=self._bytes_sent,
            requests_sent=self._requests_sent,
            heartbeats_sent=self._heartbeats_sent,
        )

    # -- application verbs ------------------------------------------------------------------

    def request_games(self, now: float) -> None:
        """Ask for the active games list (type 34 with game id 0); answered by `GamesListed`.

        Replaces any outstanding request.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._start(0, now)

    def request_game_info(self, game_id: int, now: float) -> None:
        """Ask for a game's extra contacts (type 34); answered by `GameInfoReceived`.

        Replaces any outstanding request.

        Raises:
            LocalProtocolError: ``game_id`` is not a non-zero u32.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if not 0 < game_id < (1 << 32):
            raise LocalProtocolError(f"game_id must be in [1, 2**32), got {game_id}")
        self._start(game_id, now)

    def start_heartbeat(self, game_id: int, now: float) -> None:
        """Send a heartbeat for ``game_id`` now and every ``heartbeat_interval`` (§2.5.14).

        Raises:
            LocalProtocolError: ``game_id`` is not a non-zero u32.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if not 0 < game_id < (1 << 32):
            raise LocalProtocolError(f"game_id must be in [1, 2**32), got {game_id}")
        self._heartbeat_game = game_id
        self._send_heartbeat(now)

    def stop_heartbeat(self) -> None:
        """Stop sending heartbeats (they "can be disabled", §2.5.14)."""
        self._heartbeat_game = 0
        self._next_heartbeat = None

    # -- sans-I/O ---------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; anything but an awaited lobby reply is counted and dropped.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._received += 1
        if addr != self._lobby:
            self._drop(LobbyDropReason.WRONG_SOURCE)
            return
        try:
            packet = codec.decode(data)
        except DecodeError:
            self._drop(LobbyDropReason.MALFORMED)
            return
        payload = packet.payload
        if isinstance(payload, GamesList):
            if self._request != 0:
                self._drop(LobbyDropReason.UNSOLICITED)
                return
            self._events.append(GamesListed(games=payload.games))
        elif isinstance(payload, GameInfo):
            gid = payload.game.game_id
            if not self._request or self._request != gid:
                self._drop(LobbyDropReason.UNSOLICITED)
                return
            self._events.append(GameInfoReceived(game=payload.game))
        else:
            self._drop(LobbyDropReason.UNEXPECTED_TYPE)
            return
        self._request = None
        self._deadline = None

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return and clear the queued requests and heartbeats."""
        out, self._outbox = self._outbox, []
        self._sent += len(out)
        self._bytes_sent += sum(len(d) for d, _ in out)
        return out

    def next_timer(self) -> float | None:
        """Return the next deadline (s): a request re-send or the next heartbeat."""
        times = [t for t in (self._deadline, self._next_heartbeat) if t is not None]
        return min(times, default=None)

    def handle_timer(self, now: float) -> None:
        """Re-send an unanswered request (or give up) and send a due heartbeat.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if self._deadline is not None and now >= self._deadline and self._request is not None:
            if self._attempts >= self._config.request_attempts:
                self._events.append(
                    LobbyUnreachable(game_id=self._request, attempts=self._attempts)
                )
                self._request = None
                self._deadline = None
            else:
                self._send_request(now)
        if self._next_heartbeat is not None and now >= self._next_heartbeat:
            self._send_heartbeat(now)

    def next_event(self) -> GossipEvent | None:
        """Return the oldest pending event, or ``None``."""
        return self._events.popleft() if self._events else None

    # -- internals --------------------------------------------------------------------------

    def _drop(self, reason: LobbyDropReason) -> None:
        self._dropped[reason] += 1
        _log.debug("lobby client dropped a datagram: %s", reason.value)

    def _header(self, game_id: int) -> Header:
        self._number = (self._number + 1) & 0xFFFFFFFF
        return Header(sender_port=self._port, game_id=game_id, message_number=self._number)

    def _start(self, game_id: int, now: float) -> None:
        self._request = game_id
        self._attempts = 0
        self._send_request(now)

    def _send_request(self, now: float) -> None:
        # invariant: only called while a request is outstanding
        assert self._request is not None
        self._attempts += 1
        self._requests_sent += 1
        self._deadline = now + self._config.retry_interval
        payload = ExtraInfoRequest(wanted_contacts=self._config.wanted_contacts)
        packet = Packet(header=self._header(self._request), payload=payload)
        self._outbox.append((codec.encode(packet), self._lobby))

    def _send_heartbeat(self, now: float) -> None:
        self._heartbeats_sent += 1
        self._next_heartbeat = now + self._config.heartbeat_interval
        payload = Heartbeat(map_id=self._config.map_id, game_type=self._config.game_type)
        packet = Packet(header=self._header(self._heartbeat_game), payload=payload)
        self._outbox.append((codec.encode(packet), self._lobby))
