"""LAN discovery (spec 003 §5.4.2, checklist 7.1): the sans-I/O core and real UDP on loopback."""

from __future__ import annotations

import random
import socket
import time

import pytest

from lagless.errors import ConfigError
from lagless.game import (
    DEFAULT_DISCOVERY_GROUP,
    ConnectionEstablished,
    DiscoveryClient,
    DiscoveryResponder,
    GameClient,
    GameServer,
    ServerAnnouncement,
    ServerDiscovered,
    ServerLost,
    builtin_map,
    decode_query,
    decode_reply,
    encode_query,
    encode_reply,
)
from lagless.game.discovery import MAX_REPLY_SIZE, QUERY_SIZE
from lagless.io.discovery import BroadcastEndpoint, open_discovery_socket
from lagless.io.endpoint import PollEndpoint
from lagless.transport import NetcodeServerConfig

PROTOCOL = 0x1234_5678_9ABC_DEF0
BROADCAST = "127.255.255.255"


def _events(obj: object) -> list[object]:
    out = []
    while (event := obj.next_event()) is not None:  # type: ignore[attr-defined]
        out.append(event)
    return out


def test_codecs_round_trip_and_pad_queries() -> None:
    query = encode_query(7, PROTOCOL)
    assert len(query) == QUERY_SIZE
    assert decode_query(query) == (7, PROTOCOL)
    long = ServerAnnouncement("é" * 40, 70000, 3, 40000, "x" * 50)
    reply = encode_reply(9, PROTOCOL, long)
    assert len(reply) <= MAX_REPLY_SIZE <= QUERY_SIZE  # no amplification
    decoded = decode_reply(reply)
    assert decoded is not None
    assert decoded.announcement == ServerAnnouncement("é" * 16, 65535, 3, 40000, "x" * 32)
    assert decode_query(query[:-1]) is None
    assert decode_query(query[:-1] + b"\1") is None
    assert decode_reply(reply + b"\0") is None
    assert decode_reply(query) is None
    with pytest.raises(ConfigError, match="port"):
        encode_reply(1, PROTOCOL, ServerAnnouncement("a", 0, 1, 0))


def test_client_lists_updates_expires_and_stops() -> None:
    client = DiscoveryClient(PROTOCOL, rng=random.Random(1), interval=0.25, expiry=1.0)
    players = {"a": 1, "b": 5}
    responders = {
        name: DiscoveryResponder(
            PROTOCOL, lambda n=name, p=port: ServerAnnouncement(n, players[n], 8, p)
        )
        for name, port in (("a", 40001), ("b", 40002))
    }
    hosts = {"a": ("192.168.1.10", 47800), "b": ("192.168.1.11", 47800)}
    t = 10.0
    live = client.start([("192.168.1.255", 47800)], t)
    assert client.discovering
    assert len(live) == 0

    def exchange(now: float, who: tuple[str, ...] = ("a", "b")) -> None:
        client.handle_timer(now)
        for query, _ in client.datagrams_to_send(now):
            for name in who:
                responders[name].receive_datagram(query, ("192.168.1.50", 50000), now)
                for reply, dst in responders[name].datagrams_to_send(now):
                    assert dst == ("192.168.1.50", 50000)
                    client.receive_datagram(reply, hosts[name], now + 0.002)

    exchange(t)
    found = [e.server for e in _events(client) if isinstance(e, ServerDiscovered)]
    assert [(s.address, s.name, s.players) for s in found] == [
        (("192.168.1.10", 40001), "a", 1),
        (("192.168.1.11", 40002), "b", 5),
    ]
    assert found[0].rtt == pytest.approx(0.002)
    assert client.next_timer() == pytest.approx(t + 0.25)
    players["a"] = 2
    exchange(t + 0.25)
    assert _events(client) == []  # an update is not a new discovery
    assert [s.players for s in client.servers] == [2, 5]
    assert [s.players for s in live] == [2, 5]  # the list discover() returned has updated
    assert live[0].name == "a"
    assert [s.name for s in live[1:]] == ["b"]
    exchange(t + 0.5, who=("a",))
    exchange(t + 0.75, who=("a",))
    exchange(t + 1.3, who=("a",))  # b silent since t + 0.252: gone after 1 s
    assert _events(client) == [ServerLost(("192.168.1.11", 40002))]
    assert client.remove_server(("192.168.1.10", 40001))
    assert not client.remove_server(("192.168.1.10", 40001))
    client.stop()
    assert not client.discovering
    client.handle_timer(t + 2.0)
    assert client.datagrams_to_send(t + 2.0) == []
    # a late answer to the stopped session is counted, not listed
    late = encode_reply(0, PROTOCOL, ServerAnnouncement("c", 0, 4, 40003))
    client.receive_datagram(late, ("192.168.1.12", 47800), t + 2.0)
    client.receive_datagram(b"junk", ("192.168.1.12", 47800), t + 2.0)
    assert client.servers == []
    assert live == ()
    assert client.drops == {"stale": 1, "malformed": 1}
    client.clear()


def test_responder_ignores_other_games_and_limits_its_rate() -> None:
    responder = DiscoveryResponder(
        PROTOCOL, lambda: ServerAnnouncement("s", 0, 4, 40000), max_replies_per_second=3
    )
    peer = ("10.0.0.2", 5000)
    responder.receive_datagram(encode_query(1, PROTOCOL + 1), peer, 1.0)
    for _ in range(5):
        responder.receive_datagram(encode_query(1, PROTOCOL), peer, 1.5)
    responder.receive_datagram(encode_query(1, PROTOCOL), peer, 2.6)
    assert len(responder.datagrams_to_send(2.6)) == 4
    assert responder.drops == {"protocol": 1, "rate": 2}


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("0.0.0.0", 0))
        return int(probe.getsockname()[1])


def test_two_servers_found_on_loopback_within_one_second_then_connect() -> None:
    port = _free_port()
    server = GameServer(
        NetcodeServerConfig(protocol_id=PROTOCOL, public_address=("127.0.0.1", 0), insecure=True),
        builtin_map(),
        rng=random.Random(2),
    )
    server.listen()
    with PollEndpoint(server, "127.0.0.1:0") as game_ep:
        game_port = game_ep.address[1]
        announcements = [
            lambda: ServerAnnouncement("alpha", len(server.clients), 64, game_port, "arena"),
            lambda: ServerAnnouncement("beta", 0, 8, 1, "empty"),  # announces port 1
        ]
        responders = [
            BroadcastEndpoint(
                DiscoveryResponder(PROTOCOL, a), f"0.0.0.0:{port}", broadcast=False, reuse=True
            )
            for a in announcements
        ]
        client = GameClient(PROTOCOL, rng=random.Random(3))
        with BroadcastEndpoint(client, "0.0.0.0:0") as client_ep:
            start = time.monotonic()
            client_ep.call(lambda c: c.discover([(BROADCAST, port)], client_ep.now()))
            found: dict[str, float] = {}
            while len(found) < 2 and time.monotonic() - start < 3.0:
                client_ep.wait(0.005)
                for ep in responders:
                    ep.pump()
                for event in client_ep.pump():
                    if isinstance(event, ServerDiscovered):
                        found[event.server.name] = time.monotonic() - start
            assert sorted(found) == ["alpha", "beta"]
            assert max(found.values()) < 1.0  # issue 14: servers found within 1 s
            alpha = next(s for s in client.discovered_servers if s.name == "alpha")
            assert alpha.address == ("127.0.0.1", game_port)
            assert alpha.game == "arena"
            client_ep.call(lambda c: c.stop_discovering())
            assert not client.is_discovering
            client_ep.call(lambda c: c.connect(alpha.address, client_ep.now(), client_id=5))
            connected = False
            deadline = time.monotonic() + 5.0
            while not connected and time.monotonic() < deadline:
                client_ep.wait(0.005)
                game_ep.pump()
                for ep in responders:
                    ep.pump()
                connected = any(isinstance(e, ConnectionEstablished) for e in client_ep.pump())
            assert connected
            assert [c.client_id for c in server.clients] == [5]
            assert client_ep.errors == 0
        for ep in responders:
            ep.close()


def test_discovery_socket_errors() -> None:
    with pytest.raises(ConfigError, match="IPv4"):
        open_discovery_socket("[::1]:0")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        with pytest.raises(ConfigError, match="cannot bind"):
            open_discovery_socket(taken.getsockname(), reuse=False)


def test_multicast_discovery_on_loopback() -> None:
    port = _free_port()
    responders = [
        BroadcastEndpoint(
            DiscoveryResponder(PROTOCOL, lambda n=n: ServerAnnouncement(f"m{n}", 0, 4, 40000 + n)),
            f"0.0.0.0:{port}",
            broadcast=False,
            reuse=True,
            group=DEFAULT_DISCOVERY_GROUP,
            interface="127.0.0.1",
        )
        for n in (1, 2)
    ]
    client = DiscoveryClient(PROTOCOL, rng=random.Random(5))
    with BroadcastEndpoint(client, "127.0.0.1:0", broadcast=False, interface="127.0.0.1") as ep:
        ep.call(lambda c: c.start([(DEFAULT_DISCOVERY_GROUP, port)], ep.now()))
        deadline = time.monotonic() + 3.0
        while len(client.servers) < 2 and time.monotonic() < deadline:
            ep.wait(0.005)
            for responder in responders:
                responder.pump()
            ep.pump()
        assert sorted(s.name for s in client.servers) == ["m1", "m2"]
    for responder in responders:
        responder.close()
    with pytest.raises(ConfigError, match="multicast"):
        open_discovery_socket("0.0.0.0:0", group="10.0.0.1")
    with pytest.raises(ConfigError, match="IPv4"):
        open_discovery_socket("0.0.0.0:0", group="nope")
