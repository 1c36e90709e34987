"""One client never stops a Server: stale identities, peers that never ack, handshake floods.

Each test pins one failure found against ``lagless serve`` over real UDP (issue 11 §1), here on
the simulator so the order of events is exact, plus the O(1)-work-per-event rule of DESIGN.md
"Speed rules" counted in calls rather than timed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.io.sim import SimEndpoint
from lagless.netsim import LinkConfig, Network, Scheduler
from lagless.transport.client import Client
from lagless.transport.connection import Connection
from lagless.transport.drops import DropReason
from lagless.transport.events import MessageReceived
from lagless.transport.netcode_client import NetcodeClient, NetcodeClientConfig
from lagless.transport.netcode_events import ClientConnected, ClientDisconnected, Disconnected
from lagless.transport.netcode_server import NetcodeServer, NetcodeServerConfig
from lagless.transport.netcode_state import NetcodeClientState, ServerDisconnectReason
from lagless.transport.server import Server, mark_user_data
from lagless.transport.token import generate_connect_token

PROTOCOL_ID = 0x4C41474C
SERVER = ("10.0.0.1", 40000)


class Bench:
    """A Server on the simulator whose events stay queued until the test pops them."""

    def __init__(self, *, max_clients: int = 8) -> None:
        self.scheduler = Scheduler(start=10.0)
        self.network = Network(self.scheduler, seed=1, default_link=LinkConfig(latency=0.005))
        self.network.add_host(SERVER[0])
        config = NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, public_address=SERVER, insecure=True, max_clients=max_clients
        )
        self.server = SimEndpoint(
            Server(config=config, random_bytes=random.Random(0).randbytes),
            self.network.host(SERVER[0]),
            SERVER[1],
        )
        self._hosts = 0

    def client(self, client_id: int) -> tuple[SimEndpoint[Client], list[object]]:
        """Start a lagless client connecting; return its endpoint and its event list."""
        self._hosts += 1
        host = f"10.0.1.{self._hosts}"
        self.network.add_host(host)
        events: list[object] = []
        endpoint = SimEndpoint(
            Client(config=NetcodeClientConfig(insecure=True)),
            self.network.host(host),
            on_event=events.append,
        )
        now = self.scheduler.now
        endpoint.poke(
            lambda c: c.connect_insecure(
                server_addresses=[SERVER], protocol_id=PROTOCOL_ID, client_id=client_id, now=now
            )
        )
        return endpoint, events

    def run(self, seconds: float) -> None:
        self.scheduler.run(until=self.scheduler.now + seconds)

    def pop(self) -> list[object]:
        """Every event the server has queued, in order."""
        return list(_drain(self.server.obj))


def _drain(server: Server) -> Iterator[object]:
    event = server.next_event()
    while event is not None:
        yield event
        event = server.next_event()


def test_late_echo_never_reaches_next_client() -> None:
    bench = Bench(max_clients=1)
    a, _ = bench.client(1)
    bench.run(0.5)
    [joined_a] = bench.pop()
    assert isinstance(joined_a, ClientConnected)

    def send_and_leave(client: Client) -> None:
        client.send(0, b"from A")
        client.disconnect()

    a.poke(send_and_leave)  # the same frame, as the reference API allows
    bench.run(0.3)
    b, b_events = bench.client(2)
    bench.run(0.5)
    queued = bench.pop()
    kinds = [type(e).__name__ for e in queued]
    assert kinds == ["MessageReceived", "ClientDisconnected", "ClientConnected"]
    message, left, joined_b = queued
    assert isinstance(message, MessageReceived)
    assert isinstance(joined_b, ClientConnected)
    assert isinstance(left, ClientDisconnected)
    assert joined_b.client_index == joined_a.client_index == 0  # the slot was reused
    assert joined_b.connection_id != message.connection_id
    server = bench.server.obj
    assert server.send(message.connection_id, 0, message.payload) is None  # echo: a no-op
    assert not server.disconnect(message.connection_id)
    assert server.connection_statistics(message.connection_id) is None
    assert server.netcode.statistics().verbs_on_gone == 3
    bench.server.flush()
    bench.run(0.5)
    assert not [e for e in b_events if isinstance(e, MessageReceived)]
    assert server.clients == [joined_b.connection_id]
    with pytest.raises(LocalProtocolError, match="never issued"):
        server.send(99, 0, b"x")
    assert b.obj.connected


def test_client_that_never_acks_is_dropped_alone() -> None:
    bench = Bench()
    _good, good_events = bench.client(1)
    # a netcode client with the lagless mark: the server gives it a Connection, but it never
    # sends a payload, so nothing the server sends is ever acknowledged (keep-alives hold it)
    mute = NetcodeClient(config=NetcodeClientConfig(insecure=True))
    bench.network.add_host("10.0.2.1")
    mute_endpoint = SimEndpoint(mute, bench.network.host("10.0.2.1"))
    mute_endpoint.poke(
        lambda c: c.connect_insecure(
            server_addresses=[SERVER],
            protocol_id=PROTOCOL_ID,
            client_id=2,
            now=bench.scheduler.now,
            user_data=mark_user_data(),
        )
    )
    bench.run(0.5)
    joined = {e.client_id: e for e in bench.pop() if isinstance(e, ClientConnected)}
    assert set(joined) == {1, 2}
    server = bench.server.obj
    mute_id = joined[2].connection_id
    results = []
    for i in range(1100):
        results.append(server.send(mute_id, 0, i.to_bytes(4, "little")))
        if i % 50 == 0:
            bench.server.flush()
            bench.run(0.05)
    assert results[:1024] == [i % 65536 for i in range(1024)]
    assert results[1024:] == [None] * 76  # full at 1024 unacked: dropped, then gone
    bench.server.flush()
    bench.run(0.2)
    events = bench.pop()
    assert [(e.connection_id, e.reason) for e in events if isinstance(e, ClientDisconnected)] == [
        (mute_id, ServerDisconnectReason.SEND_QUEUE_FULL)
    ]
    server.send(joined[1].connection_id, 0, b"still served")
    bench.server.flush()
    bench.run(0.3)
    assert [e.payload for e in good_events if isinstance(e, MessageReceived)] == [b"still served"]


def _token(client_id: int, key: bytes, now_unix: int, *, seed: int) -> bytes:
    """A connect token for ``SERVER``: 30 s expiry, 5 s timeout, nonce drawn from ``seed``."""
    return generate_connect_token(
        public_addresses=[SERVER],
        protocol_id=PROTOCOL_ID,
        expire_seconds=30,
        timeout_seconds=5,
        client_id=client_id,
        user_data=b"",
        private_key=key,
        now_unix=now_unix,
        random_bytes=random.Random(seed).randbytes,
    )


def test_handshake_flood_does_not_lock_out_real_clients() -> None:
    bench = Bench()
    server = bench.server.obj
    now = bench.scheduler.now
    for i in range(1100):  # more half-open handshakes than the 1024-entry mapping table
        fake = NetcodeClient(config=NetcodeClientConfig(insecure=True))
        fake.connect_insecure(
            server_addresses=[SERVER], protocol_id=PROTOCOL_ID, client_id=10_000 + i, now=now
        )
        fake.handle_timer(now)
        for data, _ in fake.datagrams_to_send(now):
            server.receive_datagram(data, (f"10.9.{i // 250}.{i % 250}", 5000), now)
    server.datagrams_to_send(now)
    _, events = bench.client(1)
    bench.run(0.5)
    assert any(type(e).__name__ == "Connected" for e in events)
    assert server.clients == [1]


def test_a_handshake_that_keeps_talking_survives_a_full_table() -> None:
    key = bytes(range(32))
    server = NetcodeServer(
        config=NetcodeServerConfig(protocol_id=PROTOCOL_ID, private_key=key, public_address=SERVER)
    )
    now = 100.0

    def token(client_id: int) -> bytes:
        return _token(client_id, key, int(now), seed=client_id)

    def request(client: NetcodeClient, addr: tuple[str, int], at: float) -> None:
        client.handle_timer(at)
        for data, _ in client.datagrams_to_send(at):
            server.receive_datagram(data, addr, at)

    def flood(first: int, count: int) -> None:
        for i in range(first, first + count):
            fake = NetcodeClient(config=NetcodeClientConfig())
            fake.connect(token(10_000 + i), now)
            request(fake, (f"10.9.{i // 250}.{i % 250}", 5000), now)

    legit, addr = NetcodeClient(config=NetcodeClientConfig()), ("10.0.1.1", 5000)
    legit.connect(token(1), now)
    request(legit, addr, now)
    flood(0, 1023)  # the table of half-open handshakes is full, the legit one oldest
    request(legit, addr, now + 0.11)  # its resent request makes it the most recently used
    flood(1023, 1)  # one more request evicts the least recently used entry
    challenges = [d for d, a in server.datagrams_to_send(now + 0.11) if a == addr]
    legit.receive_datagram(challenges[-1], SERVER, now + 0.12)
    request(legit, addr, now + 0.25)  # the response
    assert any(isinstance(e, ClientConnected) for e in iter(server.next_event, None))


def test_work_per_datagram_does_not_grow_with_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = Bench(max_clients=64)
    endpoints = [bench.client(i + 1)[0] for i in range(64)]
    bench.run(1.0)
    assert len(bench.server.obj.clients) == 64
    bench.run(2.0)  # let every connection settle (clock sync, acks)
    calls = {"payloads_to_send": 0, "next_timer": 0, "handle_timer": 0}
    for name in calls:
        original = getattr(Connection, name)

        def counted(self: Connection, *args: object, _o=original, _n=name) -> object:
            calls[_n] += 1
            return _o(self, *args)

        monkeypatch.setattr(Connection, name, counted)
    server = bench.server.obj
    endpoints[7].poke(lambda c: c.send(0, b"one message"))
    for _ in range(3):  # let the single datagram reach the server and be answered
        before = dict(calls)
        bench.scheduler.run(until=bench.scheduler.now + 0.003)
        spent = {k: calls[k] - before[k] for k in calls}
        assert spent["payloads_to_send"] <= 4, spent
        assert spent["next_timer"] <= 4, spent
    assert server.clients == list(range(1, 65))


def test_client_send_after_the_connection_ended_is_a_no_op() -> None:
    bench = Bench()
    client, events = bench.client(1)
    bench.run(0.5)
    with pytest.raises(LocalProtocolError, match="connected client"):
        Client().send(0, b"never connected")
    bench.server.poke(lambda s: s.disconnect(1))
    bench.run(0.3)
    assert any(isinstance(e, Disconnected) for e in events)
    assert client.obj.send(0, b"too late") is None
    assert client.obj.sends_after_end == 1


class Handshakes:
    """A secure NetcodeServer driven by hand: clients connect from chosen addresses and stay
    silent unless the test makes them talk (sans-I/O, so every arrival time is exact)."""

    KEY = bytes(range(32))

    def __init__(self, takeover_after: float = 1.0) -> None:
        self.server = NetcodeServer(
            config=NetcodeServerConfig(
                protocol_id=PROTOCOL_ID,
                private_key=self.KEY,
                public_address=SERVER,
                takeover_after=takeover_after,
            )
        )
        self.log: list[object] = []

    def connect(self, client_id: int, addr: tuple[str, int], now: float) -> NetcodeClient:
        """A client with a fresh token for ``client_id`` sends its request from ``addr`` at
        ``now``, then its response or first keep-alive 0.11 s and 0.22 s later; replies arrive
        at once."""
        token = _token(client_id, self.KEY, 100, seed=client_id * 1000 + int(now * 10))
        client = NetcodeClient(config=NetcodeClientConfig())
        client.connect(token, now)
        for step in range(3):  # request, response, keep-alive: 0.11 s apart, past the 0.1 s
            at = now + 0.11 * step  # resend interval
            client.handle_timer(at)
            for data, _ in client.datagrams_to_send(at):
                self.server.receive_datagram(data, addr, at)
            for data, to in self.server.datagrams_to_send(at):
                if to == addr:
                    client.receive_datagram(data, SERVER, at)
        return client

    def talk(self, client: NetcodeClient, addr: tuple[str, int], now: float) -> None:
        """``client`` at ``addr`` and the server swap keep-alives at ``now`` (both hear each
        other; call it at least 0.1 s apart)."""
        client.handle_timer(now)
        for data, _ in client.datagrams_to_send(now):
            self.server.receive_datagram(data, addr, now)
        self.server.handle_timer(now)
        for data, to in self.server.datagrams_to_send(now):
            if to == addr:
                client.receive_datagram(data, SERVER, now)

    def events(self) -> list[object]:
        """Every server event so far, in order."""
        self.log.extend(iter(self.server.next_event, None))
        return self.log

    def departures(self) -> list[tuple[int, ServerDisconnectReason]]:
        return [
            (e.connection_id, e.reason) for e in self.events() if isinstance(e, ClientDisconnected)
        ]

    def connected(self) -> list[int]:
        """Connection ids connected now."""
        ids = [e.connection_id for e in self.events() if isinstance(e, ClientConnected)]
        return [cid for cid in ids if self.server.is_connected(cid)]

    def drops(self, reason: DropReason) -> int:
        return self.server.statistics().dropped[reason]


def test_silent_slot_is_replaced() -> None:
    """A client that restarts behind the same NAT port (or a newcomer that the NAT gives a
    vanished client's port) gets in once the old slot has been silent for ``takeover_after``,
    not after the whole token timeout (the chaos test's lone 10 s handshake stall)."""
    hand = Handshakes()
    port = ("10.0.1.1", 5000)
    old = hand.connect(1, port, 100.0)
    assert old.state is NetcodeClientState.CONNECTED
    early = hand.connect(2, port, 100.4)  # silent for 0.18 to 0.4 s: the address is taken
    assert early.state is NetcodeClientState.SENDING_CONNECTION_REQUEST
    assert hand.drops(DropReason.ADDRESS_ALREADY_CONNECTED) >= 1
    assert hand.server.is_connected(1)
    new = hand.connect(2, port, 101.3)  # silent for 1.08 s: replaced
    assert new.state is NetcodeClientState.CONNECTED
    assert hand.departures() == [(1, ServerDisconnectReason.REPLACED)]
    assert hand.connected() == [2]


def test_restarted_client_id_replaces_its_silent_slot() -> None:
    """The same user (client id) back from another port: refused while its old session is
    heard from, let in once that has been silent for ``takeover_after``."""
    hand = Handshakes()
    first, first_at = hand.connect(7, ("10.0.1.1", 5000), 100.0), ("10.0.1.1", 5000)
    hand.talk(first, first_at, 100.9)
    twin = hand.connect(7, ("10.0.1.1", 5001), 101.5)  # the old one spoke 0.6 to 0.82 s ago
    assert twin.state is NetcodeClientState.SENDING_CONNECTION_REQUEST
    assert hand.drops(DropReason.CLIENT_ID_ALREADY_CONNECTED) >= 1
    again = hand.connect(7, ("10.0.1.1", 5001), 102.0)
    assert again.state is NetcodeClientState.CONNECTED
    assert hand.departures() == [(1, ServerDisconnectReason.REPLACED)]
    assert hand.connected() == [2]


def test_a_client_that_is_heard_from_keeps_its_address() -> None:
    hand = Handshakes()
    port = ("10.0.1.1", 5000)
    live = hand.connect(1, port, 100.0)
    for i in range(1, 20):  # heard every 0.5 s, asked for its address 0.05 s after each
        hand.talk(live, port, 100.0 + 0.5 * i)
        intruder = hand.connect(100 + i, port, 100.05 + 0.5 * i)
        assert intruder.state is NetcodeClientState.SENDING_CONNECTION_REQUEST
    assert hand.connected() == [1]
    assert hand.departures() == []


def test_takeover_can_be_turned_off() -> None:
    """``takeover_after=math.inf`` is the reference rule: the address stays taken until the
    slot times out (5 s here)."""
    hand = Handshakes(takeover_after=math.inf)
    port = ("10.0.1.1", 5000)
    hand.connect(1, port, 100.0)
    assert hand.connect(2, port, 104.0).state is NetcodeClientState.SENDING_CONNECTION_REQUEST
    hand.server.handle_timer(105.5)
    assert hand.departures() == [(1, ServerDisconnectReason.TIMED_OUT)]
    assert hand.connect(3, port, 105.6).state is NetcodeClientState.CONNECTED
    for bad in (0.0, -1.0, math.nan):
        with pytest.raises(ConfigError, match="takeover_after"):
            NetcodeServerConfig(
                protocol_id=PROTOCOL_ID, insecure=True, public_address=SERVER, takeover_after=bad
            )
