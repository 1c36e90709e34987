"""netcode client and server state machines, alone and in full in-memory sessions."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import ConfigError, LocalProtocolError
from lagless.transport import (
    CLIENT_TRANSITIONS,
    ClientConnected,
    ClientDisconnected,
    ClientDisconnectReason,
    ClientInput,
    Connected,
    ConnectFailed,
    ConnectionResponsePacket,
    Disconnected,
    DropReason,
    NetcodeClient,
    NetcodeClientConfig,
    NetcodeClientState,
    NetcodeServer,
    NetcodeServerConfig,
    PacketCipher,
    PayloadReceived,
    ServerDisconnectReason,
    generate_connect_token,
    read_connect_token,
    write_packet,
)

KEY = bytes(range(32))
PROTOCOL = 0x1122334455667788
SERVER = ("127.0.0.1", 40000)
SERVER2 = ("127.0.0.1", 40001)
EPOCH = 1_700_000_000.0
S = NetcodeClientState


def token(
    client_id: int = 1,
    servers: tuple[tuple[str, int], ...] = (SERVER,),
    expire_seconds: int = 30,
    timeout: int = 5,
    now_unix: int = int(EPOCH),
    seed: int = 0,
) -> bytes:
    counter = iter(range(seed * 1000, seed * 1000 + 1000))
    return generate_connect_token(
        public_addresses=servers,
        protocol_id=PROTOCOL,
        expire_seconds=expire_seconds,
        timeout_seconds=timeout,
        client_id=client_id,
        user_data=b"user-%d" % client_id,
        private_key=KEY,
        now_unix=now_unix,
        random_bytes=lambda n: bytes([next(counter) % 256]) * n,
    )


def make_server(
    address: tuple[str, int] = SERVER, max_clients: int = 4, **kw: object
) -> NetcodeServer:
    config = NetcodeServerConfig(
        protocol_id=PROTOCOL,
        private_key=None if kw.get("insecure") else KEY,
        public_address=address,
        max_clients=max_clients,
        **kw,  # type: ignore[arg-type]
    )
    return NetcodeServer(
        config=config, random_bytes=lambda n: b"\x07" * n, unix_time_offset=EPOCH - 100.0
    )


class Net:
    """Zero-latency in-memory network with a fake clock starting at t = 100 s."""

    def __init__(self, servers: dict[tuple[str, int], NetcodeServer]) -> None:
        self.servers = servers
        self.clients: dict[tuple[str, int], NetcodeClient] = {}
        self.now = 100.0
        self.blocked: set[tuple[str, int]] = set()
        self.log: list[tuple[tuple[str, int], tuple[str, int], bytes]] = []

    def add_client(self, address: tuple[str, int], **kw: object) -> NetcodeClient:
        client = NetcodeClient(config=NetcodeClientConfig(**kw))  # type: ignore[arg-type]
        self.clients[address] = client
        return client

    def pump(self) -> None:
        for _ in range(20):
            moved = False
            for caddr, client in self.clients.items():
                client.handle_timer(self.now)
                for data, dest in client.datagrams_to_send(self.now):
                    moved = True
                    self.log.append((caddr, dest, data))
                    if caddr not in self.blocked and dest in self.servers:
                        self.servers[dest].receive_datagram(data, caddr, self.now)
            for saddr, server in self.servers.items():
                server.handle_timer(self.now)
                for data, dest in server.datagrams_to_send(self.now):
                    moved = True
                    self.log.append((saddr, dest, data))
                    if saddr not in self.blocked and dest in self.clients:
                        self.clients[dest].receive_datagram(data, saddr, self.now)
            if not moved:
                return

    def run(self, seconds: float) -> None:
        """Advance the clock from deadline to deadline (each object's ``next_timer``)."""
        end = self.now + seconds
        while True:
            objects = [*self.clients.values(), *self.servers.values()]
            timers = [t for o in objects if (t := o.next_timer()) is not None]
            deadline = min(timers, default=end)
            if deadline >= end:
                self.now = end
                self.pump()
                return
            self.now = max(self.now, deadline)
            self.pump()


def events(obj: NetcodeClient | NetcodeServer) -> list[object]:
    out = []
    while (event := obj.next_event()) is not None:
        out.append(event)
    return out


def connected_pair() -> tuple[Net, NetcodeServer, NetcodeClient]:
    server = make_server()
    net = Net({SERVER: server})
    client = net.add_client(("10.0.0.2", 5000))
    client.connect(token(), net.now)
    net.run(0.5)
    assert client.state is S.CONNECTED
    return net, server, client


# -- full sessions ------------------------------------------------------------------------


def test_connect_exchange_and_client_disconnect() -> None:
    net, server, client = connected_pair()
    assert events(client) == [Connected(client_index=0, connection_id=1, max_clients=4)]
    [connected] = events(server)
    assert isinstance(connected, ClientConnected)
    assert connected.client_id == 1
    assert connected.address == ("10.0.0.2", 5000)
    assert connected.user_data.rstrip(b"\x00") == b"user-1"
    client.send_payload(b"ping")
    server.send_payload(1, b"pong" * 300)
    net.pump()
    assert events(server) == [PayloadReceived(client_index=0, connection_id=1, payload=b"ping")]
    assert events(client) == [
        PayloadReceived(client_index=0, connection_id=1, payload=b"pong" * 300)
    ]
    net.run(3.0)  # keep-alives hold the connection open past nothing-to-say periods
    assert client.state is S.CONNECTED
    assert server.num_connected_clients == 1
    client.disconnect()
    assert client.state is S.DISCONNECTED
    assert events(client) == [Disconnected(reason=ClientDisconnectReason.LOCAL)]
    net.pump()
    assert events(server) == [
        ClientDisconnected(
            client_index=0, connection_id=1, reason=ServerDisconnectReason.CLIENT_DISCONNECTED
        )
    ]
    assert server.statistics().dropped[DropReason.NO_ENCRYPTION_MAPPING] == 9
    stats = client.statistics()
    assert stats.payloads_sent == 1
    assert stats.payloads_received == 1


def test_server_disconnect() -> None:
    net, server, client = connected_pair()
    assert server.disconnect(1)
    assert not server.is_client_connected(0)
    assert not server.is_connected(1)
    net.pump()
    assert client.state is S.DISCONNECTED
    assert events(client)[-1] == Disconnected(reason=ClientDisconnectReason.SERVER_DISCONNECTED)
    assert client.statistics().dropped[DropReason.UNEXPECTED_IN_STATE] == 9
    assert not server.disconnect(1)  # gone: a no-op that says so
    assert not server.send_payload(1, b"late")
    assert server.statistics().verbs_on_gone == 2
    with pytest.raises(LocalProtocolError, match="never issued"):
        server.disconnect(2)


def test_server_disconnect_does_not_try_next_server() -> None:
    server, other = make_server(), make_server(SERVER2)
    net = Net({SERVER: server, SERVER2: other})
    client = net.add_client(("10.0.0.2", 5000))
    client.connect(token(servers=(SERVER, SERVER2)), net.now)
    net.run(0.5)
    server.disconnect_all()
    net.run(1.0)
    assert client.state is S.DISCONNECTED
    assert other.statistics().datagrams_received == 0


def test_timeouts_both_ends() -> None:
    net, server, _client = connected_pair()
    net.blocked.add(("10.0.0.2", 5000))  # client goes silent towards the server
    net.run(5.2)
    assert server.num_connected_clients == 0
    assert ClientDisconnected(
        client_index=0, connection_id=1, reason=ServerDisconnectReason.TIMED_OUT
    ) in events(server)
    net.blocked = {SERVER}
    net2, _server2, client2 = connected_pair()
    net2.blocked.add(SERVER)
    net2.run(5.2)
    assert client2.state is S.CONNECTION_TIMED_OUT
    assert events(client2)[-1] == Disconnected(reason=ClientDisconnectReason.TIMED_OUT)
    assert client2.next_timer() is None


def test_request_timeout_when_server_silent() -> None:
    net = Net({})
    client = net.add_client(("10.0.0.2", 5000))
    client.connect(token(servers=(SERVER, SERVER2)), net.now)
    net.run(5.05)
    assert client.server_address == SERVER2  # moved on after the first timeout
    net.run(5.05)
    assert client.state is S.CONNECTION_REQUEST_TIMED_OUT
    assert events(client) == [ConnectFailed(state=S.CONNECTION_REQUEST_TIMED_OUT)]
    requests = [d for src, dest, d in net.log if d[0] == 0]
    assert 90 <= len(requests) <= 102  # 10 Hz on each server for 5 s


def test_server_full_denies() -> None:
    server = make_server(max_clients=1)
    net = Net({SERVER: server})
    first = net.add_client(("10.0.0.2", 5000))
    first.connect(token(client_id=1), net.now)
    net.run(0.5)
    second = net.add_client(("10.0.0.3", 5000))
    second.connect(token(client_id=2, seed=1), net.now)
    net.run(0.5)
    assert first.state is S.CONNECTED
    assert second.state is S.CONNECTION_DENIED
    assert events(second) == [ConnectFailed(state=S.CONNECTION_DENIED)]
    assert server.statistics().denied_sent == 1
    denied = [d for src, dest, d in net.log if dest == ("10.0.0.3", 5000)]
    assert [len(d) for d in denied] == [25]  # no amplification: 25 < 1078


def test_denied_tries_next_server() -> None:
    full = make_server(max_clients=1)
    spare = make_server(SERVER2)
    net = Net({SERVER: full, SERVER2: spare})
    net.add_client(("10.0.0.2", 5000)).connect(token(client_id=1), net.now)
    net.run(0.5)
    client = net.add_client(("10.0.0.3", 5000))
    client.connect(token(client_id=2, servers=(SERVER, SERVER2), seed=1), net.now)
    net.run(0.5)
    assert client.state is S.CONNECTED
    assert client.server_address == SERVER2


def test_expired_token() -> None:
    server = make_server()
    net = Net({SERVER: server})
    client = net.add_client(("10.0.0.2", 5000))
    client.connect(token(now_unix=int(EPOCH) - 60, expire_seconds=30, timeout=50), net.now)
    net.run(1.0)
    assert server.statistics().dropped[DropReason.TOKEN_EXPIRED] >= 9
    assert client.state is S.SENDING_CONNECTION_REQUEST
    net.run(29.5)
    assert client.state is S.CONNECT_TOKEN_EXPIRED  # lifetime 30 s from the attempt's start
    assert events(client) == [ConnectFailed(state=S.CONNECT_TOKEN_EXPIRED)]
    assert server.num_connected_clients == 0


def test_replayed_packet_is_dropped() -> None:
    net, server, client = connected_pair()
    client.send_payload(b"once")
    [(data, _)] = client.datagrams_to_send(net.now)
    server.receive_datagram(data, ("10.0.0.2", 5000), net.now)
    server.receive_datagram(data, ("10.0.0.2", 5000), net.now)
    payloads = [e for e in events(server) if isinstance(e, PayloadReceived)]
    assert payloads == [PayloadReceived(client_index=0, connection_id=1, payload=b"once")]
    assert server.statistics().dropped[DropReason.REPLAYED] == 1


def test_token_reuse_from_other_address() -> None:
    server = make_server()
    net = Net({SERVER: server})
    shared = token()
    net.add_client(("10.0.0.2", 5000)).connect(shared, net.now)
    net.pump()
    thief = net.add_client(("10.0.0.9", 5000))
    thief.connect(shared, net.now)
    net.run(0.3)
    assert server.statistics().dropped[DropReason.TOKEN_REUSED] >= 1
    assert thief.state is S.SENDING_CONNECTION_REQUEST


def test_forged_response_is_dropped() -> None:
    server = make_server()
    net = Net({SERVER: server})
    tok = token()
    client = net.add_client(("10.0.0.2", 5000))
    client.connect(tok, net.now)
    client.handle_timer(net.now)
    [(request, _)] = client.datagrams_to_send(net.now)
    server.receive_datagram(request, ("10.0.0.2", 5000), net.now)
    assert len(server.datagrams_to_send(net.now)) == 1
    c2s = PacketCipher(read_connect_token(tok).client_to_server_key)
    forged = ConnectionResponsePacket(sequence=1, challenge_sequence=0, challenge_token=bytes(300))
    server.receive_datagram(
        write_packet(forged, protocol_id=PROTOCOL, cipher=c2s), ("10.0.0.2", 5000), net.now
    )
    assert server.statistics().dropped[DropReason.CHALLENGE_TOKEN_INVALID] == 1
    assert server.num_connected_clients == 0
    assert server.datagrams_to_send(net.now) == []


def test_payload_queue_full() -> None:
    server = make_server(payload_queue_size=3)
    net = Net({SERVER: server})
    client = net.add_client(("10.0.0.2", 5000))
    client.connect(token(), net.now)
    net.run(0.5)
    events(server)
    for i in range(5):
        client.send_payload(bytes([i + 1]))
    net.pump()
    assert server.statistics().dropped[DropReason.PAYLOAD_QUEUE_FULL] == 2
    assert len([e for e in events(server) if isinstance(e, PayloadReceived)]) == 3


def test_foreign_source_dropped() -> None:
    net, _server, client = connected_pair()
    before = client.statistics().dropped[DropReason.WRONG_SOURCE_ADDRESS]
    client.receive_datagram(b"\x14" + bytes(30), ("6.6.6.6", 40000), net.now)
    assert client.statistics().dropped[DropReason.WRONG_SOURCE_ADDRESS] == before + 1
    assert client.state is S.CONNECTED


def test_insecure_session(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="lagless.transport"):
        server = make_server(("server", 1), insecure=True)
        net = Net({("server", 1): server})
        client = net.add_client(("client", 2), insecure=True)
    assert sum("INSECURE" in r.getMessage() for r in caplog.records) == 2
    with pytest.raises(LocalProtocolError):
        client.connect(token(), net.now)
    client.connect_insecure(
        server_addresses=[("server", 1)],
        protocol_id=PROTOCOL,
        client_id=77,
        now=net.now,
        user_data=b"hi",
    )
    net.run(0.5)
    assert client.state is S.CONNECTED
    [connected] = events(server)
    assert isinstance(connected, ClientConnected)
    assert connected.client_id == 77
    client.send_payload(b"clear text")
    net.pump()
    assert any(b"clear text" in data for _, _, data in net.log)
    assert events(server) == [
        PayloadReceived(client_index=0, connection_id=1, payload=b"clear text")
    ]
    secure = make_server()
    secure.receive_datagram(net.log[0][2], ("client", 2), net.now)
    assert secure.statistics().dropped[DropReason.VERSION_MISMATCH] == 1
    with pytest.raises(LocalProtocolError):
        NetcodeClient(config=NetcodeClientConfig()).connect_insecure(
            server_addresses=[SERVER], protocol_id=1, client_id=1, now=0.0
        )


def test_invalid_token_and_api_errors() -> None:
    client = NetcodeClient(config=NetcodeClientConfig())
    client.connect(b"garbage", 0.0)
    assert client.state is S.INVALID_CONNECT_TOKEN
    assert events(client) == [ConnectFailed(state=S.INVALID_CONNECT_TOKEN)]
    with pytest.raises(LocalProtocolError):
        client.send_payload(b"x")
    _net, server, connected = connected_pair()
    with pytest.raises(LocalProtocolError):
        connected.send_payload(bytes(1201))
    with pytest.raises(LocalProtocolError):
        server.send_payload(1, b"")
    with pytest.raises(LocalProtocolError, match="never issued"):
        server.send_payload(3, b"x")
    with pytest.raises(ConfigError):
        NetcodeServerConfig(protocol_id=1, private_key=KEY, public_address=SERVER, max_clients=257)
    with pytest.raises(ConfigError):
        NetcodeServerConfig(protocol_id=1, public_address=SERVER)
    with pytest.raises(ConfigError):
        NetcodeServerConfig(protocol_id=1, private_key=KEY, public_address=("host", 1))
    with pytest.raises(ConfigError):
        NetcodeClientConfig(send_interval=0.0)


def test_unconfirmed_client_gets_keep_alive_before_payload() -> None:
    server = make_server()
    client = NetcodeClient(config=NetcodeClientConfig())
    client.connect(token(), 100.0)
    client.handle_timer(100.0)
    [(request, _)] = client.datagrams_to_send(100.0)
    server.receive_datagram(request, ("10.0.0.2", 5000), 100.0)
    [(challenge, _)] = server.datagrams_to_send(100.0)
    client.receive_datagram(challenge, SERVER, 100.0)
    client.handle_timer(100.2)
    [(response, _)] = client.datagrams_to_send(100.2)
    server.receive_datagram(response, ("10.0.0.2", 5000), 100.2)
    first = server.datagrams_to_send(100.2)
    assert [len(d) for d, _ in first] == [26]  # the accepting keep-alive
    server.send_payload(1, b"data")
    assert [len(d) for d, _ in server.datagrams_to_send(100.2)] == [26, 17 + 1 + 4]


def test_timer_fires_strictly_after() -> None:
    client = NetcodeClient(config=NetcodeClientConfig())
    client.connect(token(), 100.0)
    client.handle_timer(100.0)
    assert len(client.datagrams_to_send(100.0)) == 1
    deadline = client.next_timer()
    assert deadline is not None
    assert deadline > 100.1
    client.handle_timer(100.0 + 0.1)  # exactly last_send + 0.1: not yet (reference uses >)
    assert client.datagrams_to_send(100.1) == []
    client.handle_timer(deadline)
    assert len(client.datagrams_to_send(deadline)) == 1


@settings(max_examples=300)
@given(st.binary(max_size=1300), st.sampled_from(["server", "client"]))
def test_garbage_never_raises_nor_changes_state(data: bytes, side: str) -> None:
    net, server, client = connected_pair()
    events(server)
    events(client)
    if side == "server":
        server.receive_datagram(data, ("10.0.0.2", 5000), net.now)
        server.receive_datagram(data, ("9.9.9.9", 1), net.now)
        assert server.num_connected_clients == 1
        assert events(server) == []
        assert sum(server.statistics().dropped.values()) == 2
    else:
        client.receive_datagram(data, SERVER, net.now)
        assert client.state is S.CONNECTED
        assert events(client) == []
        assert sum(client.statistics().dropped.values()) == 1


# -- the state table ----------------------------------------------------------------------


@given(st.sampled_from(NetcodeClientState), st.sampled_from(ClientInput))
def test_transition_table(state: NetcodeClientState, event: ClientInput) -> None:
    target = CLIENT_TRANSITIONS.get((state, event))
    if event is ClientInput.CONNECT:
        assert target is S.SENDING_CONNECTION_REQUEST
    elif event is ClientInput.CONNECT_INVALID_TOKEN:
        assert target is S.INVALID_CONNECT_TOKEN
    elif state <= S.DISCONNECTED:
        assert target is None
    if target is not None and target < 0:
        assert event is not ClientInput.LOCAL_DISCONNECT


def test_failure_exits() -> None:
    for (state, event), target in CLIENT_TRANSITIONS.items():
        if state < 0:
            assert event in (ClientInput.CONNECT, ClientInput.CONNECT_INVALID_TOKEN), (state, event)
        assert isinstance(target, NetcodeClientState)
    reached = {target for target in CLIENT_TRANSITIONS.values()}
    assert reached == set(NetcodeClientState)


def test_direct_delivery() -> None:
    """Payloads of a direct slot go to the sinks at once; bad copies are still counted."""
    got: list[tuple[str, int, bytes]] = []
    config = NetcodeServerConfig(protocol_id=PROTOCOL, private_key=KEY, public_address=SERVER)
    server = NetcodeServer(
        config=config,
        random_bytes=lambda n: b"\x07" * n,
        unix_time_offset=EPOCH - 100.0,
        payload_sink=lambda cid, payload, now: got.append(("server", cid, payload)),
    )
    net = Net({SERVER: server})
    client = NetcodeClient(
        config=NetcodeClientConfig(),
        payload_sink=lambda payload, now: got.append(("client", 0, payload)),
    )
    net.clients[("10.0.0.2", 5000)] = client
    client.connect(token(), net.now)
    net.run(0.5)
    [connected] = events(server)
    assert isinstance(connected, ClientConnected)
    server.deliver_directly(connected.connection_id)
    client.send_payloads([b"one", b"two"])
    [(first, _), (second, _)] = client.datagrams_to_send(net.now)
    tampered = second[:-1] + bytes([second[-1] ^ 1])
    for data in (first, first, tampered, second):
        server.receive_datagram(data, ("10.0.0.2", 5000), net.now)
    server.send_payloads(connected.connection_id, [b"three"])
    net.pump()
    assert got == [("server", 1, b"one"), ("server", 1, b"two"), ("client", 0, b"three")]
    assert events(server) == []
    assert [e for e in events(client) if isinstance(e, PayloadReceived)] == []
    dropped = server.statistics().dropped
    assert (dropped[DropReason.REPLAYED], dropped[DropReason.DECRYPT_FAILED]) == (1, 1)
    assert server.statistics().payloads_received == 2
    assert client.statistics().payloads_received == 1
    logged = sum(len(d) for src, _, d in net.log if src == ("10.0.0.2", 5000))
    assert client.statistics().bytes_sent == logged + len(first) + len(second)


def test_deliver_directly_needs_a_sink() -> None:
    _, server, _ = connected_pair()
    with pytest.raises(LocalProtocolError):
        server.deliver_directly(1)
