"""The Silac info server and its client (spec 002 §2.11, §3.12), in simulated time."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import ConfigError, LocalProtocolError
from lagless.gossip import (
    AvatarInfo,
    AvatarState,
    ExtraInfoRequest,
    GameEntry,
    GameInfo,
    GamesList,
    GossipConfig,
    GossipPeer,
    Header,
    Heartbeat,
    JoinAccepted,
    Packet,
    PeerState,
    Tail,
    decode,
    encode,
)
from lagless.gossip.lobby import (
    GameClosed,
    GameInfoReceived,
    GameOpened,
    GamesListed,
    Lobby,
    LobbyClient,
    LobbyClientConfig,
    LobbyConfig,
    LobbyDropReason,
    LobbyUnreachable,
)
from lagless.testing import check_sans_io

T0 = 1000.0
LOBBY = ("192.0.2.100", 40100)


def _lobby(**kw: object) -> Lobby:
    return Lobby(config=LobbyConfig(**kw), rng=random.Random(0), port=LOBBY[1])  # type: ignore[arg-type]


def _heartbeat(
    game_id: int, *, port: int = 0, map_id: int = 0, game_type: int = 0, hop: int = 0
) -> bytes:
    header = Header(hop=hop, sender_port=port, game_id=game_id, message_number=1)
    return encode(Packet(header=header, payload=Heartbeat(map_id=map_id, game_type=game_type)))


def _request(game_id: int, wanted: int = 8, *, port: int = 0) -> bytes:
    header = Header(sender_port=port, game_id=game_id, message_number=77)
    return encode(Packet(header=header, payload=ExtraInfoRequest(wanted_contacts=wanted)))


def _events(obj: Lobby | LobbyClient) -> list[object]:
    out = []
    while (event := obj.next_event()) is not None:
        out.append(event)
    return out


def _reply(lobby: Lobby, now: float = T0) -> tuple[Packet, tuple[str, int]]:
    sent = lobby.datagrams_to_send(now)
    assert len(sent) == 1, sent
    data, addr = sent[0]
    return decode(data), addr


def _member(i: int) -> tuple[str, int]:
    return (f"10.0.0.{i + 1}", 5000 + i)


def test_heartbeat_opens_game_and_lists_it() -> None:
    lobby = _lobby()
    lobby.receive_datagram(_heartbeat(0xABC, map_id=3, game_type=4), _member(0), T0)
    assert _events(lobby) == [GameOpened(game_id=0xABC, map_id=3, game_type=4, member=_member(0))]
    lobby.receive_datagram(_heartbeat(0xABC, map_id=3, game_type=4), _member(1), T0)
    assert _events(lobby) == []  # the game is open already
    lobby.receive_datagram(_request(0), ("10.0.0.50", 6000), T0)
    packet, to = _reply(lobby)
    assert to == ("10.0.0.50", 6000)  # replies go to the UDP source
    assert packet.header.last_received == 77  # echoes the request's number
    assert packet.header.sender_port == LOBBY[1]
    assert isinstance(packet.payload, GamesList)
    (game,) = packet.payload.games
    assert (game.game_id, game.map_id, game.game_type, game.participants) == (0xABC, 3, 4, 2)
    assert set(game.contacts) == {_member(0), _member(1)}
    stats = lobby.statistics()
    assert (stats.heartbeats, stats.answered, stats.games, stats.members) == (2, 1, 1, 2)


def test_heartbeat_with_other_map_is_dropped() -> None:
    lobby = _lobby()
    lobby.receive_datagram(_heartbeat(7, map_id=1), _member(0), T0)
    lobby.receive_datagram(_heartbeat(7, map_id=2), _member(1), T0)
    assert lobby.statistics().dropped[LobbyDropReason.GAME_MISMATCH] == 1
    assert lobby.statistics().members == 1


def test_member_address_uses_sender_port() -> None:
    lobby = _lobby()
    lobby.receive_datagram(_heartbeat(7, port=4444), ("10.0.0.1", 61000), T0)
    lobby.receive_datagram(_heartbeat(7), ("10.0.0.2", 62000), T0)  # port 0: the source port
    assert set(lobby.games()[0].contacts) == {("10.0.0.1", 4444), ("10.0.0.2", 62000)}
    lobby.receive_datagram(_heartbeat(7), ("not-an-ip", 1), T0)
    assert lobby.statistics().dropped[LobbyDropReason.INVALID] == 1


def test_games_list_and_game_info_requests() -> None:
    lobby = _lobby(list_contacts=2)
    for i in range(10):
        lobby.receive_datagram(_heartbeat(1), _member(i), T0)
    for i in range(10, 13):
        lobby.receive_datagram(_heartbeat(2), _member(i), T0)
    lobby.receive_datagram(_request(0, wanted=8), ("10.9.9.9", 1), T0)
    packet, _ = _reply(lobby)
    assert isinstance(packet.payload, GamesList)
    games = packet.payload.games
    assert [(g.game_id, g.participants, len(g.contacts)) for g in games] == [(1, 10, 2), (2, 3, 2)]
    lobby.receive_datagram(_request(1, wanted=6), ("10.9.9.9", 1), T0)
    packet, _ = _reply(lobby)
    assert packet.header.game_id == 1
    assert isinstance(packet.payload, GameInfo)
    info = packet.payload.game
    assert info.game_id == 1
    assert len(info.contacts) == 6
    assert set(info.contacts) <= {_member(i) for i in range(10)}
    assert len(set(info.contacts)) == 6


def test_unknown_game_info_is_empty() -> None:
    lobby = _lobby()
    lobby.receive_datagram(_request(99), ("10.9.9.9", 1), T0)
    packet, _ = _reply(lobby)
    assert packet.payload == GameInfo(game=GameEntry(game_id=99))


def test_contacts_exclude_requester_and_match_family() -> None:
    lobby = _lobby()
    lobby.receive_datagram(_heartbeat(5), ("10.0.0.1", 7000), T0)
    lobby.receive_datagram(_heartbeat(5), ("10.0.0.2", 7000), T0)
    lobby.receive_datagram(_heartbeat(5), ("2001:db8::1", 7000), T0)
    lobby.receive_datagram(_request(5, port=7000), ("10.0.0.1", 9999), T0)
    packet, _ = _reply(lobby)
    assert isinstance(packet.payload, GameInfo)
    assert packet.payload.game.contacts == (("10.0.0.2", 7000),)
    assert not packet.payload.game.ipv6
    assert packet.payload.game.participants == 3
    lobby.receive_datagram(_request(5), ("2001:db8::9", 1), T0)
    packet, _ = _reply(lobby)
    assert isinstance(packet.payload, GameInfo)
    assert packet.payload.game.ipv6
    assert packet.payload.game.contacts == (("2001:db8::1", 7000),)


def test_list_fits_the_datagram_budget() -> None:
    lobby = _lobby(max_datagram=512, list_contacts=16)
    for g in range(40):
        for i in range(g % 5 + 1):
            lobby.receive_datagram(_heartbeat(g + 1), (f"10.{g}.0.{i + 1}", 5000), T0)
    lobby.receive_datagram(_request(0, wanted=64), ("10.99.0.1", 1), T0)
    data, _ = lobby.datagrams_to_send(T0)[0]
    assert len(data) <= 512
    games = decode(data).payload.games  # type: ignore[union-attr]
    assert 0 < len(games) < 40
    counts = [g.participants for g in games]
    assert counts == sorted(counts, reverse=True)  # the biggest games are kept
    lobby.receive_datagram(_request(5, wanted=64), ("10.99.0.1", 1), T0)
    assert len(lobby.datagrams_to_send(T0)[0][0]) <= 512


def test_silent_members_expire_and_games_close() -> None:
    lobby = _lobby(member_timeout=10.0)
    lobby.receive_datagram(_heartbeat(1), _member(0), T0)
    lobby.receive_datagram(_heartbeat(1), _member(1), T0 + 4)
    assert lobby.next_timer() == pytest.approx(T0 + 10)
    lobby.handle_timer(T0 + 5)  # early: harmless
    assert lobby.statistics().members == 2
    lobby.receive_datagram(_heartbeat(1), _member(0), T0 + 6)  # refreshed: now the newest
    assert lobby.next_timer() == pytest.approx(T0 + 14)
    lobby.handle_timer(T0 + 14)
    assert [g.contacts for g in lobby.games()] == [(_member(0),)]
    _events(lobby)
    lobby.handle_timer(T0 + 16)
    assert lobby.games() == []
    assert _events(lobby) == [GameClosed(game_id=1)]
    assert lobby.next_timer() is None
    assert lobby.statistics().expired == 2


def test_requests_are_rate_limited() -> None:
    lobby = _lobby(request_burst=3, request_window=1.0)
    for _ in range(5):
        lobby.receive_datagram(_request(0), ("10.0.0.1", 1), T0)
    lobby.receive_datagram(_request(0), ("10.0.0.2", 1), T0)  # another source has its own budget
    assert len(lobby.datagrams_to_send(T0)) == 4
    assert lobby.statistics().dropped[LobbyDropReason.RATE_LIMITED] == 2
    lobby.receive_datagram(_request(0), ("10.0.0.1", 1), T0 + 1.0)  # a new window
    assert len(lobby.datagrams_to_send(T0 + 1.0)) == 1


def test_source_table_is_bounded() -> None:
    lobby = _lobby(max_sources=2)
    for i in range(3):
        lobby.receive_datagram(_request(0), (f"10.0.0.{i}", 1), T0)
    assert lobby.statistics().dropped[LobbyDropReason.RATE_LIMITED] == 1
    lobby.receive_datagram(_request(0), ("10.0.0.9", 1), T0 + 2)  # old windows are pruned
    assert len(lobby.datagrams_to_send(T0 + 2)) == 3


def test_tables_are_bounded() -> None:
    lobby = _lobby(max_games=1, max_members=2)
    for i in range(3):
        lobby.receive_datagram(_heartbeat(1), _member(i), T0)
    lobby.receive_datagram(_heartbeat(2), _member(5), T0)
    stats = lobby.statistics()
    assert stats.dropped[LobbyDropReason.TABLE_FULL] == 2
    assert (stats.games, stats.members) == (1, 2)


def test_lobby_drops_what_it_does_not_take() -> None:
    lobby = _lobby()
    avatar = AvatarInfo(
        avatar=AvatarState(avatar_id=1, position=(0.0, 0.0, 0.0), facing=(1.0, 0.0, 0.0))
    )
    game_msg = encode(Packet(header=Header(game_id=1), payload=avatar, tail=Tail()))
    reply = encode(Packet(header=Header(), payload=GamesList()))
    for data in (game_msg, reply):
        lobby.receive_datagram(data, _member(0), T0)
    lobby.receive_datagram(_heartbeat(1, hop=1), _member(0), T0)
    lobby.receive_datagram(_heartbeat(0), _member(0), T0)
    lobby.receive_datagram(b"\x23garbage", _member(0), T0)
    dropped = lobby.statistics().dropped
    assert dropped[LobbyDropReason.UNEXPECTED_TYPE] == 2
    assert dropped[LobbyDropReason.INVALID] == 2
    assert dropped[LobbyDropReason.MALFORMED] == 1
    assert lobby.datagrams_to_send(T0) == []
    assert lobby.games() == []


def _client(**kw: object) -> LobbyClient:
    return LobbyClient(config=LobbyClientConfig(**kw), lobby=LOBBY, port=4000)  # type: ignore[arg-type]


def test_client_retries_then_reports_unreachable() -> None:
    client = _client(retry_interval=0.5, request_attempts=3)
    client.request_games(T0)
    sent = client.datagrams_to_send(T0)
    assert [addr for _, addr in sent] == [LOBBY]
    packet = decode(sent[0][0])
    assert packet.header.game_id == 0
    assert packet.header.sender_port == 4000
    assert packet.payload == ExtraInfoRequest(wanted_contacts=8)
    now = T0
    for _ in range(2):
        now = client.next_timer()  # type: ignore[assignment]
        client.handle_timer(now)
        assert len(client.datagrams_to_send(now)) == 1
    client.handle_timer(client.next_timer())  # type: ignore[arg-type]
    assert _events(client) == [LobbyUnreachable(game_id=0, attempts=3)]
    assert client.next_timer() is None
    assert client.statistics().requests_sent == 3


def test_client_heartbeats_periodically() -> None:
    client = _client(heartbeat_interval=2.0, map_id=6, game_type=2)
    client.start_heartbeat(0x55, T0)
    ((data, addr),) = client.datagrams_to_send(T0)
    assert addr == LOBBY
    packet = decode(data)
    assert packet.header.game_id == 0x55
    assert packet.payload == Heartbeat(map_id=6, game_type=2)
    assert client.next_timer() == pytest.approx(T0 + 2.0)
    client.handle_timer(T0 + 2.0)
    assert len(client.datagrams_to_send(T0 + 2.0)) == 1
    client.stop_heartbeat()
    assert client.next_timer() is None
    with pytest.raises(LocalProtocolError, match="game_id"):
        client.start_heartbeat(0, T0)
    with pytest.raises(LocalProtocolError, match="game_id"):
        client.request_game_info(1 << 32, T0)


def test_client_ignores_strangers() -> None:
    client = _client()
    games = encode(Packet(header=Header(), payload=GamesList()))
    client.receive_datagram(games, LOBBY, T0)  # no request outstanding
    client.request_game_info(9, T0)
    client.receive_datagram(games, ("192.0.2.7", 40100), T0)  # not the lobby
    client.receive_datagram(games, LOBBY, T0)  # answers no list request
    other = encode(Packet(header=Header(game_id=8), payload=GameInfo(game=GameEntry(game_id=8))))
    client.receive_datagram(other, LOBBY, T0)  # another game
    client.receive_datagram(_heartbeat(9), LOBBY, T0)
    dropped = client.statistics().dropped
    assert dropped[LobbyDropReason.UNSOLICITED] == 3
    assert dropped[LobbyDropReason.WRONG_SOURCE] == 1
    assert dropped[LobbyDropReason.UNEXPECTED_TYPE] == 1
    assert _events(client) == []
    right = encode(Packet(header=Header(game_id=9), payload=GameInfo(game=GameEntry(game_id=9))))
    client.receive_datagram(right, LOBBY, T0)
    assert _events(client) == [GameInfoReceived(game=GameEntry(game_id=9))]
    client.receive_datagram(right, LOBBY, T0)  # answered already
    assert dropped[LobbyDropReason.UNSOLICITED] == 3
    assert client.statistics().dropped[LobbyDropReason.UNSOLICITED] == 4


def test_check_sans_io() -> None:
    def busy_lobby(now: float) -> Lobby:
        lobby = _lobby()
        lobby.receive_datagram(_heartbeat(1), _member(0), now)
        return lobby

    def busy_client(now: float) -> LobbyClient:
        client = LobbyClient(config=LobbyClientConfig(), lobby=("192.0.2.1", 40000), port=1)
        client.request_games(now)
        client.start_heartbeat(3, now)
        return client

    check_sans_io(busy_lobby, rng=random.Random(0))
    check_sans_io(busy_client, rng=random.Random(1))


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=200), type_byte=st.sampled_from([32, 33, 34, 35, 9, 0]))
def test_any_bytes_are_processed_or_counted(data: bytes, type_byte: int) -> None:
    lobby = _lobby()
    client = LobbyClient(config=LobbyClientConfig(), lobby=LOBBY, port=1)
    client.request_games(T0)
    for payload in (data, bytes([type_byte]) + data):
        lobby.receive_datagram(payload, ("10.0.0.1", 1), T0)
        client.receive_datagram(payload, LOBBY, T0)
    lstats, cstats = lobby.statistics(), client.statistics()
    assert sum(lstats.dropped.values()) + lstats.heartbeats + lstats.answered == 2
    assert sum(cstats.dropped.values()) + len(_events(client)) == 2


@pytest.mark.parametrize(
    ("cls", "kw", "field"),
    [
        (LobbyConfig, {"member_timeout": 0.0}, "member_timeout"),
        (LobbyConfig, {"list_contacts": 17}, "list_contacts"),
        (LobbyConfig, {"max_datagram": 100}, "max_datagram"),
        (LobbyClientConfig, {"wanted_contacts": 65}, "wanted_contacts"),
        (LobbyClientConfig, {"heartbeat_interval": float("nan")}, "heartbeat_interval"),
    ],
)
def test_config_is_validated(cls: type, kw: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        cls(**kw)


class _Net:
    """Instant delivery between sans-I/O objects by address (enough for a lobby exchange)."""

    def __init__(self) -> None:
        self.objs: dict[tuple[str, int], object] = {}
        self.now = T0

    def pump(self) -> None:
        moved = True
        while moved:
            moved = False
            for addr, obj in list(self.objs.items()):
                for data, dst in obj.datagrams_to_send(self.now):  # type: ignore[attr-defined]
                    target = self.objs.get(dst)
                    if target is not None:
                        moved = True
                        target.receive_datagram(data, addr, self.now)  # type: ignore[attr-defined]

    def run(self, seconds: float, step: float = 0.01) -> None:
        end = self.now + seconds
        while self.now < end:
            self.now += step
            for obj in list(self.objs.values()):
                timer = obj.next_timer()  # type: ignore[attr-defined]
                if timer is not None and timer <= self.now:
                    obj.handle_timer(self.now)  # type: ignore[attr-defined]
            self.pump()


class _Both:
    """A peer and its lobby client on one address, as the asyncio runner composes them."""

    def __init__(self, peer: GossipPeer, client: LobbyClient) -> None:
        self.peer, self.client = peer, client

    def receive_datagram(self, data: bytes, addr: tuple[str, int], now: float) -> None:
        target = self.client if addr == self.client.lobby else self.peer
        target.receive_datagram(data, addr, now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, tuple[str, int]]]:
        return self.client.datagrams_to_send(now) + self.peer.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        times = [t for t in (self.client.next_timer(), self.peer.next_timer()) if t is not None]
        return min(times, default=None)

    def handle_timer(self, now: float) -> None:
        self.client.handle_timer(now)
        self.peer.handle_timer(now)


def test_peers_find_each_other_through_the_lobby() -> None:
    """§3.12: the first peer hosts and heartbeats; later ones join through listed contacts."""
    net = _Net()
    lobby = _lobby()
    net.objs[LOBBY] = lobby
    both = []
    for i in range(4):
        addr = (f"10.1.0.{i + 1}", 7000)
        peer = GossipPeer(config=GossipConfig(), rng=random.Random(i), address=addr, name=f"p{i}")
        client = LobbyClient(config=LobbyClientConfig(), lobby=LOBBY, port=addr[1])
        net.objs[addr] = both_i = _Both(peer, client)
        both.append(both_i)
        client.request_games(net.now)
        net.pump()
        (listed,) = _events(client)
        assert isinstance(listed, GamesListed)
        if i == 0:
            assert listed.games == ()
            peer.join([], net.now)
        else:
            (game,) = listed.games
            assert game.participants == i
            client.request_game_info(game.game_id, net.now)
            net.pump()
            (info,) = _events(client)
            assert isinstance(info, GameInfoReceived)
            assert addr not in info.game.contacts
            peer.join(info.game.contacts, net.now, game_id=game.game_id)
            net.run(0.3)
            assert any(isinstance(e, JoinAccepted) for e in iter(peer.next_event, None))
        client.start_heartbeat(peer.game_id, net.now)
        net.pump()
    net.run(1.0)
    assert all(b.peer.state is PeerState.JOINED for b in both)
    assert len({b.peer.game_id for b in both}) == 1
    assert all(len(b.peer.known_peers()) == 3 for b in both)
    assert lobby.games()[0].participants == 4
