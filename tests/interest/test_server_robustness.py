"""The VFC server under the failures of issue 11: clients that vanish together, ``Leave`` followed
by more messages in the same packet, kicked clients that leave, clients that never acknowledge.

Each scenario raised `LocalProtocolError` out of ``VfcServer`` or left ghost clients in its policy
before connection ids and the fixes in ``lagless.interest.server``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from lagless.apps.vfc import VFC_PROTOCOL_ID
from lagless.interest.client import VfcClient
from lagless.interest.control import (
    CONTROL_CHANNEL,
    AddObject,
    ChangeClientId,
    Join,
    Leave,
    encode_control,
)
from lagless.interest.records import CubeOriObj
from lagless.interest.server import VfcServer
from lagless.interest.session_events import ClientLeft, Kicked, ObjectAdded, ObjectRemoved
from lagless.transport import Client, NetcodeClientConfig, NetcodeServerConfig, Server
from tests.soak.chaos_clients import deny_acks

SERVER = ("192.0.2.1", 40000)
TIMEOUT = 5  # seconds: the clients' connection timeout


class Wire:
    """A VFC server and ``count`` clients joined over a lossless wire, stepped every 33 ms.

    A client in ``muted`` has vanished: nothing it sends arrives, nothing reaches it. A client
    in ``filters`` has its outgoing datagrams rewritten.
    """

    def __init__(self, count: int) -> None:
        self.now = 100.0
        self.server = VfcServer(
            Server(
                config=NetcodeServerConfig(
                    protocol_id=VFC_PROTOCOL_ID, public_address=SERVER, insecure=True
                ),
                random_bytes=random.Random(1).randbytes,
            )
        )
        self.addrs = [(f"192.0.2.{10 + n}", 50000) for n in range(count)]
        self.clients = []
        for n in range(count):
            client = VfcClient(Client(config=NetcodeClientConfig(insecure=True)))
            client.transport.connect_insecure(
                server_addresses=[SERVER],
                protocol_id=VFC_PROTOCOL_ID,
                client_id=n + 1,
                now=self.now,
                timeout_seconds=TIMEOUT,
            )
            client.add_object(CubeOriObj(id=10 * n, x=5.0 + n))
            client.add_object(CubeOriObj(id=10 * n + 1, x=6.0 + n))
            self.clients.append(client)
        self.muted: set[int] = set()
        self.filters: dict[int, Callable[[bytes], Iterable[bytes]]] = {}
        self.events: list[object] = []
        self.client_events: list[list[object]] = [[] for _ in range(count)]
        self.run(1.0)
        assert all(c.is_connected() for c in self.clients)

    def run(self, seconds: float) -> None:
        """Advance ``seconds``, delivering every datagram in the step it was sent."""
        for _ in range(round(seconds / 0.033)):
            self.now += 0.033
            t = self.now
            for obj in (self.server, *self.clients):
                deadline = obj.next_timer()
                if deadline is not None and deadline <= t:
                    obj.handle_timer(t)
            for n, (addr, client) in enumerate(zip(self.addrs, self.clients, strict=True)):
                for data, _ in client.datagrams_to_send(t):
                    for item in self.filters[n](data) if n in self.filters else [data]:
                        if n not in self.muted:
                            self.server.receive_datagram(item, addr, t)
            for data, addr in self.server.datagrams_to_send(t):
                n = self.addrs.index(addr)
                if n not in self.muted:
                    self.clients[n].receive_datagram(data, SERVER, t)
            while (event := self.server.next_event()) is not None:
                self.events.append(event)
            for client, events in zip(self.clients, self.client_events, strict=True):
                while (event := client.next_event()) is not None:
                    events.append(event)

    def left(self) -> list[int]:
        """Public ids of the ``ClientLeft`` events so far."""
        return [e.client_id for e in self.events if isinstance(e, ClientLeft)]


def test_clients_timing_out_together_leave_no_ghosts() -> None:
    wire = Wire(3)
    gone = [wire.clients[0].client_id, wire.clients[1].client_id]
    wire.muted.update({0, 1})
    wire.run(TIMEOUT + 1.5)
    stats = wire.server.policy.statistics()
    survivor = wire.clients[2].client_id
    assert sorted(wire.left()) == sorted(gone)
    assert wire.server.client_ids == [survivor]
    assert wire.server.object_ids == [20, 21]
    assert (stats.clients, stats.objects) == (1, 2)
    # the first leave told the second leaver, whose connection had just gone, about its objects
    assert wire.server.transport.netcode.statistics().verbs_on_gone >= 1
    removed = sorted(e.object_id for e in wire.client_events[2] if isinstance(e, ObjectRemoved))
    assert removed == [0, 1, 10, 11]


def test_leave_then_change_client_id_in_one_packet() -> None:
    wire = Wire(2)
    leaver = wire.clients[0]
    public = leaver.client_id
    assert public is not None
    for message in (
        Leave(),
        ChangeClientId(client_id=7),
        AddObject(record=CubeOriObj(id=99).encode()),
        Join(),
    ):
        leaver.transport.send(CONTROL_CHANNEL, encode_control(message))
    wire.run(0.5)
    assert wire.left() == [public]
    assert not any(isinstance(e, ObjectAdded) and e.object_id == 99 for e in wire.events)
    assert wire.server.client_ids == [wire.clients[1].client_id]
    assert wire.server.object_ids == [10, 11]
    assert wire.server.drops["not_joined"] == 2  # ChangeClientId and AddObject
    assert wire.server.drops["gone"] == 1  # the Join behind the Leave
    assert wire.server.policy.statistics().clients == 1
    assert not leaver.transport.connected


def test_kicked_client_that_leaves_during_the_grace() -> None:
    wire = Wire(2)
    victim = wire.clients[0].client_id
    assert victim is not None
    wire.server.kick(victim, "chaos", wire.now)
    wire.clients[0].disconnect()
    wire.run(1.0)
    assert wire.left() == [victim]
    assert wire.server.client_ids == [wire.clients[1].client_id]
    assert wire.server.policy.statistics().clients == 1
    assert not any(isinstance(e, Kicked) for e in wire.client_events[1])


def test_client_that_never_acks_is_dropped_with_its_objects() -> None:
    wire = Wire(2)
    spammer = wire.clients[0]
    wire.filters[0] = deny_acks
    rng = random.Random(5)
    for _ in range(200):
        if not spammer.transport.connected:
            break
        for _ in range(16):  # each is answered with a reliable ClientIdChanged
            spammer.set_client_id(rng.randrange(1 << 31))
        wire.run(0.033)
    assert not spammer.transport.connected  # dropped: its send queue filled (SEND_QUEUE_FULL)
    wire.run(0.5)
    assert len(wire.left()) == 1
    assert wire.server.client_ids == [wire.clients[1].client_id]
    assert wire.server.object_ids == [10, 11]
    assert wire.server.policy.statistics().clients == 1
    removed = sorted(e.object_id for e in wire.client_events[1] if isinstance(e, ObjectRemoved))
    assert removed == [0, 1]
