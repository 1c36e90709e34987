"""Server and Client end to end over the simulator: handshake, channels, clock sync, failures."""

from __future__ import annotations

import random
import struct

import pytest

from lagless.errors import LocalProtocolError
from lagless.io.sim import SimEndpoint
from lagless.netsim import LinkConfig, Network, Scheduler, get_profile
from lagless.testing import check_sans_io
from lagless.transport.client import Client
from lagless.transport.events import ConnectionViolated, MessageDelivered, MessageReceived
from lagless.transport.netcode_client import NetcodeClient, NetcodeClientConfig
from lagless.transport.netcode_events import (
    ClientConnected,
    ClientDisconnected,
    Connected,
    PayloadReceived,
)
from lagless.transport.netcode_server import NetcodeServerConfig
from lagless.transport.server import Server, mark_user_data
from lagless.transport.token import generate_connect_token

PROTOCOL_ID = 0x1122334455667788
KEY = bytes(range(32))
SERVER_HOST = "10.0.0.1"
EPOCH = 1_700_000_000.0  # Unix time of the simulated start (token timestamps)


class World:
    """A server and N clients on a simulated network, recording every event."""

    def __init__(self, *, secure: bool, link: LinkConfig | None = None, seed: int = 0) -> None:
        self.scheduler = Scheduler(start=50.0)
        self.network = Network(self.scheduler, seed=seed, default_link=link)
        self.network.add_host(SERVER_HOST)
        self.secure = secure
        config = NetcodeServerConfig(
            protocol_id=PROTOCOL_ID,
            private_key=KEY if secure else None,
            public_address=(SERVER_HOST, 40000),
            insecure=not secure,
        )
        self.server_events: list[object] = []
        self.server = SimEndpoint(
            Server(
                config=config,
                random_bytes=random.Random(seed).randbytes,
                unix_time_offset=EPOCH - 50.0,
            ),
            self.network.host(SERVER_HOST),
            40000,
            on_event=self.server_events.append,
        )
        self.clients: list[SimEndpoint[Client]] = []
        self.client_events: list[list[object]] = []

    def add_client(self, client_id: int) -> SimEndpoint[Client]:
        name = f"10.0.1.{client_id}"
        self.network.add_host(name)
        events: list[object] = []
        endpoint = SimEndpoint(
            Client(config=NetcodeClientConfig(insecure=not self.secure)),
            self.network.host(name),
            on_event=events.append,
        )
        now = self.scheduler.now
        if self.secure:
            token = generate_connect_token(
                public_addresses=[(SERVER_HOST, 40000)],
                protocol_id=PROTOCOL_ID,
                expire_seconds=30,
                timeout_seconds=5,
                client_id=client_id,
                user_data=b"",
                private_key=KEY,
                now_unix=int(EPOCH + now - 50.0),
                random_bytes=random.Random(client_id).randbytes,
            )
            endpoint.poke(lambda c: c.connect(token, now))
        else:
            endpoint.poke(
                lambda c: c.connect_insecure(
                    server_addresses=[(SERVER_HOST, 40000)],
                    protocol_id=PROTOCOL_ID,
                    client_id=client_id,
                    now=now,
                )
            )
        self.clients.append(endpoint)
        self.client_events.append(events)
        return endpoint

    def run(self, seconds: float) -> None:
        self.scheduler.run(until=self.scheduler.now + seconds)


def _messages(events: list[object]) -> list[bytes]:
    return [e.payload for e in events if isinstance(e, MessageReceived)]


@pytest.mark.parametrize("secure", [True, False], ids=["secure", "insecure"])
def test_connect_exchange_and_disconnect(secure: bool) -> None:
    world = World(secure=secure, link=LinkConfig(latency=0.03))
    client = world.add_client(7)
    world.run(1.0)
    assert any(isinstance(e, Connected) for e in world.client_events[0])
    assert any(isinstance(e, ClientConnected) for e in world.server_events)
    client.poke(lambda c: [c.send(0, f"hello {i}".encode()) for i in range(5)])
    world.server.poke(lambda s: s.broadcast(0, b"welcome"))
    world.run(1.0)
    assert _messages(world.server_events) == [f"hello {i}".encode() for i in range(5)]
    assert _messages(world.client_events[0]) == [b"welcome"]
    assert sum(isinstance(e, MessageDelivered) for e in world.client_events[0]) == 5
    stats = client.obj.connection_statistics()
    assert stats.rtt == pytest.approx(0.06, abs=0.03)
    client.poke(lambda c: c.disconnect())
    world.run(0.5)
    assert any(isinstance(e, ClientDisconnected) for e in world.server_events)
    assert world.server.obj.clients == []


def test_reliable_delivery_and_clock_sync_over_umts() -> None:
    world = World(secure=True, seed=4, link=get_profile("umts").up)  # 170 ms, 1 % loss each way
    client = world.add_client(1)
    world.run(3.0)
    assert client.obj.connected
    sent = [i.to_bytes(4, "little") * (1 + i % 400) for i in range(150)]
    for payload in sent:
        client.poke(lambda c, p=payload: c.send(0, p))
        world.run(0.02)
    world.run(15.0)
    assert _messages(world.server_events) == sent
    assert client.obj.synchronized
    # the simulator has one clock: the server clock estimate must equal local time
    assert abs(client.obj.server_time(world.scheduler.now) - world.scheduler.now) < 0.015


def test_several_clients_are_served_independently() -> None:
    world = World(secure=False, link=LinkConfig(latency=0.01))
    for client_id in range(1, 6):
        world.add_client(client_id)
    world.run(1.0)
    assert world.server.obj.clients == [1, 2, 3, 4, 5]  # connection ids, never reused
    for cid in world.server.obj.clients:
        world.server.poke(lambda s, i=cid: s.send(i, 0, f"you are {i}".encode()))
    world.run(0.5)
    for k, events in enumerate(world.client_events):
        assert _messages(events) == [f"you are {k + 1}".encode()]


def test_send_before_connect_and_to_unknown_slot_raise() -> None:
    with pytest.raises(LocalProtocolError, match="connected client"):
        Client().send(0, b"x")
    server = Server(
        config=NetcodeServerConfig(protocol_id=1, public_address=("10.0.0.1", 1), insecure=True)
    )
    with pytest.raises(LocalProtocolError, match="never issued"):
        server.send(3, 0, b"x")


def test_violation_disconnects_the_peer() -> None:
    world = World(secure=False, link=LinkConfig(latency=0.01))
    client = world.add_client(9)
    world.run(0.5)
    # an authenticated payload (fresh sequence 500) with a record on channel 40, which the
    # server does not have: a violation, not line noise
    bad = struct.pack("<HHIB", 500, 0xFFFF, 0, 0) + bytes([40, 0, 0, 1, 65])
    client.poke(lambda c: c.netcode.send_payload(bad))
    world.run(0.5)
    assert any(isinstance(e, ConnectionViolated) for e in world.server_events)
    assert world.server.obj.clients == []


@pytest.mark.parametrize("make", ["server", "client"])
def test_conforms_to_the_sans_io_contract(make: str) -> None:
    def server(now: float) -> Server:
        return Server(
            config=NetcodeServerConfig(
                protocol_id=1, private_key=KEY, public_address=("10.0.0.1", 1)
            )
        )

    def client(now: float) -> Client:
        c = Client(config=NetcodeClientConfig(insecure=True))
        c.connect_insecure(server_addresses=[("10.0.0.1", 1)], protocol_id=1, client_id=1, now=now)
        return c

    check_sans_io(server if make == "server" else client, rng=random.Random(1))


def test_plain_netcode_client_beside_lagless() -> None:
    """With plain_unmarked, other netcode clients are served raw and lagless ones with channels."""
    scheduler = Scheduler(start=50.0)
    network = Network(scheduler, seed=8, default_link=LinkConfig(latency=0.01))
    for host in (SERVER_HOST, "10.0.2.1", "10.0.2.2"):
        network.add_host(host)
    server_events: list[object] = []
    server = SimEndpoint(
        Server(
            config=NetcodeServerConfig(
                protocol_id=PROTOCOL_ID, private_key=KEY, public_address=(SERVER_HOST, 40000)
            ),
            random_bytes=random.Random(3).randbytes,
            unix_time_offset=EPOCH - 50.0,
            plain_unmarked=True,
        ),
        network.host(SERVER_HOST),
        40000,
        on_event=server_events.append,
    )

    def token(client_id: int, user_data: bytes) -> bytes:
        return generate_connect_token(
            public_addresses=[(SERVER_HOST, 40000)],
            protocol_id=PROTOCOL_ID,
            expire_seconds=30,
            timeout_seconds=5,
            client_id=client_id,
            user_data=user_data,
            private_key=KEY,
            now_unix=int(EPOCH),
            random_bytes=random.Random(client_id).randbytes,
        )

    plain_events: list[object] = []
    plain = SimEndpoint(
        NetcodeClient(config=NetcodeClientConfig()),
        network.host("10.0.2.1"),
        on_event=plain_events.append,
    )
    plain.poke(lambda c: c.connect(token(1, bytes(range(200))), scheduler.now))
    lagless_events: list[object] = []
    lagless = SimEndpoint(Client(), network.host("10.0.2.2"), on_event=lagless_events.append)
    lagless.poke(lambda c: c.connect(token(2, mark_user_data(b"hi")), scheduler.now))
    scheduler.run(until=scheduler.now + 1.0)
    joined = {e.client_id: e for e in server_events if isinstance(e, ClientConnected)}
    assert joined[1].user_data == bytes(range(200)) + bytes(56)
    assert joined[2].user_data[:2] == b"hi"  # the mark is stripped
    assert server.obj.plain_clients == [joined[1].connection_id]
    assert server.obj.clients == [joined[2].connection_id]

    pattern = bytes(i % 256 for i in range(1200))  # what the reference client sends
    plain.poke(lambda c: c.send_payload(pattern))
    lagless.poke(lambda c: c.send(0, b"channel message"))
    scheduler.run(until=scheduler.now + 0.5)
    raw = [e for e in server_events if isinstance(e, PayloadReceived)]
    assert [e.payload for e in raw] == [pattern]
    assert _messages(server_events) == [b"channel message"]
    server.poke(lambda s: s.send_raw(joined[1].connection_id, pattern[::-1]))
    scheduler.run(until=scheduler.now + 0.5)
    assert [e.payload for e in plain_events if isinstance(e, PayloadReceived)] == [pattern[::-1]]
    with pytest.raises(LocalProtocolError, match="lagless client"):
        server.obj.send_raw(joined[2].connection_id, b"x")
    with pytest.raises(LocalProtocolError, match="plain netcode client"):
        server.obj.send(joined[1].connection_id, 0, b"x")
    assert not any(isinstance(e, ConnectionViolated) for e in server_events)


def test_take_events_hands_over_what_next_event_would_in_one_list() -> None:
    server_addr, client_addr = ("127.0.0.1", 40000), ("127.0.0.1", 50000)
    server = Server(
        config=NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, private_key=KEY, public_address=server_addr, insecure=True
        )
    )
    client = Client(config=NetcodeClientConfig(insecure=True))
    client.connect_insecure(
        server_addresses=[server_addr], protocol_id=PROTOCOL_ID, client_id=7, now=0.0
    )
    now = 0.0
    sent = False
    taken: dict[str, list[object]] = {"server": [], "client": []}
    for _ in range(40):
        client.handle_timer(now)
        server.handle_timer(now)
        for data, _ in client.datagrams_to_send(now):
            server.receive_datagram(data, client_addr, now)
        for data, _ in server.datagrams_to_send(now):
            client.receive_datagram(data, server_addr, now)
        if client.connected and not sent:
            sent = True
            for i in range(3):
                client.send(0, bytes([i]))
        taken["server"] += server.take_events()
        taken["client"] += client.take_events()
        assert server.next_event() is None  # all taken
        assert client.next_event() is None
        assert server.take_events() == []
        assert client.take_events() == []
        now = round(now + 0.05, 2)
    received = [e.payload for e in taken["server"] if isinstance(e, MessageReceived)]
    assert received == [b"\x00", b"\x01", b"\x02"]
    assert len([e for e in taken["client"] if isinstance(e, MessageDelivered)]) == 3
