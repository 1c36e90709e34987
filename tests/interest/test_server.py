"""VfcServer and VfcClient end to end over the simulated network (spec 001 §3.4-§3.10)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.interest.client import VfcClient
from lagless.interest.control import (
    ACK_CHANNEL,
    CONTROL_CHANNEL,
    UPDATE_CHANNEL,
    Join,
    encode_control,
)
from lagless.interest.records import POSITION_STEP, CubeOriObj, pack_records, write_update_ack
from lagless.interest.server import VfcServer, VfcServerConfig
from lagless.interest.session_events import ClientJoined, ClientLeft, Joined, Kicked, ObjectRemoved
from lagless.interest.view import Kappa, View
from lagless.io.sim import SimEndpoint
from lagless.netsim import LinkConfig, Network, Scheduler
from lagless.testing import check_sans_io
from lagless.transport.client import Client
from lagless.transport.netcode_client import NetcodeClientConfig
from lagless.transport.netcode_server import NetcodeServerConfig
from lagless.transport.server import Server
from tests.interest.send_spy import Send, spy_on_send

PROTOCOL_ID = 0x5646_4334_4650_5301
SERVER = "10.0.0.1"


class World:
    def __init__(
        self,
        *,
        link: LinkConfig | None = None,
        view: View | None = None,
        encoding: str = "records",
    ) -> None:
        self.scheduler = Scheduler(start=100.0)
        self.network = Network(self.scheduler, seed=3, default_link=link)
        self.network.add_host(SERVER)
        transport = Server(
            config=NetcodeServerConfig(
                protocol_id=PROTOCOL_ID, public_address=(SERVER, 40000), insecure=True
            ),
            random_bytes=random.Random(1).randbytes,
        )
        config = VfcServerConfig(encoding=encoding)
        if view is not None:
            config = VfcServerConfig(default_view=view, encoding=encoding)
        self.server_events: list[object] = []
        self.server = SimEndpoint(
            VfcServer(transport, config=config),
            self.network.host(SERVER),
            40000,
            on_event=self.server_events.append,
        )
        self.clients: list[SimEndpoint[VfcClient]] = []
        self.client_events: list[list[object]] = []

    def add_client(self, n: int) -> SimEndpoint[VfcClient]:
        host = f"10.0.1.{n}"
        self.network.add_host(host)
        events: list[object] = []
        endpoint = SimEndpoint(
            VfcClient(Client(config=NetcodeClientConfig(insecure=True))),
            self.network.host(host),
            on_event=events.append,
        )
        now = self.scheduler.now
        endpoint.poke(
            lambda c: c.transport.connect_insecure(
                server_addresses=[(SERVER, 40000)], protocol_id=PROTOCOL_ID, client_id=n, now=now
            )
        )
        self.clients.append(endpoint)
        self.client_events.append(events)
        return endpoint

    def run(self, seconds: float) -> None:
        self.scheduler.run(until=self.scheduler.now + seconds)


def test_updates_flow_between_clients() -> None:
    world = World(link=LinkConfig(latency=0.01))
    a, b = world.add_client(1), world.add_client(2)
    a.poke(lambda c: c.add_object(CubeOriObj(id=10, x=5.0, y=5.0)))
    b.poke(lambda c: c.add_object(CubeOriObj(id=20, x=8.0, y=5.0, yaw=math.pi)))
    world.run(1.0)
    assert any(isinstance(e, Joined) for e in world.client_events[0])
    assert sum(isinstance(e, ClientJoined) for e in world.server_events) == 2
    avatar = a.obj.get_object_ref(10)
    for step in range(30):  # the game writes through the reference every 33 ms
        avatar.x = 5.0 + 0.1 * step
        world.run(0.033)
    world.run(0.2)
    replica = b.obj.get_object_ref(10)
    assert abs(replica.x - avatar.x) <= POSITION_STEP / 2
    assert 10 in b.obj.get_updated_ids()
    assert 20 in a.obj.object_ids()
    assert world.server.obj.bytes_out[UPDATE_CHANNEL] > 0


def test_far_object_outside_fov_is_sent_at_most_every_theta() -> None:
    view = View(
        radii=(10.0, math.inf),
        fov=(math.radians(90), 2 * math.pi),
        kappa=(
            (Kappa(theta=0.0), Kappa(theta=0.0)),
            (Kappa(theta=0.0), Kappa(theta=0.3)),
        ),
    )
    world = World(view=view)
    a, b = world.add_client(1), world.add_client(2)
    a.poke(lambda c: c.add_object(CubeOriObj(id=1, x=100.0, y=100.0)))
    b.poke(lambda c: c.add_object(CubeOriObj(id=2, x=10.0, y=100.0, yaw=math.pi)))
    world.run(1.0)
    b.obj.get_updated_ids()
    avatar = a.obj.get_object_ref(1)
    received = 0
    for step in range(60):
        avatar.y = 100.0 + 0.05 * step
        world.run(0.033)
        received += len(b.obj.get_updated_ids())
    # 2 s of a far object behind the pivot: at most one send per 0.3 s + one round
    assert 4 <= received <= math.ceil(60 * 0.033 / 0.33) + 1
    assert a.obj.get_object_ref(2).x == 10.0


def test_foreign_records_are_dropped() -> None:
    world = World()
    a, b = world.add_client(1), world.add_client(2)
    a.poke(lambda c: c.add_object(CubeOriObj(id=1)))
    b.poke(lambda c: c.add_object(CubeOriObj(id=2)))
    world.run(0.5)
    forged = pack_records(CubeOriObj(id=1, x=50.0).to_record())[0]
    b.poke(lambda c: c.transport.send(UPDATE_CHANNEL, forged))
    b.poke(lambda c: c.transport.send(UPDATE_CHANNEL, b"\xff\x00garbage"))
    world.run(0.3)
    drops = world.server.obj.drops
    assert drops["foreign_record"] == 1
    assert drops["malformed_update"] == 1
    assert world.server.obj.get_object(1)["x"][0] == 0


def test_leave_deletes_objects_and_kick() -> None:
    world = World()
    a, b, c = world.add_client(1), world.add_client(2), world.add_client(3)
    a.poke(lambda cl: cl.add_object(CubeOriObj(id=1)))
    b.poke(lambda cl: cl.add_object(CubeOriObj(id=2)))
    world.run(0.5)
    a.poke(lambda cl: cl.disconnect())
    world.run(0.5)
    assert any(isinstance(e, ClientLeft) for e in world.server_events)
    assert any(isinstance(e, ObjectRemoved) and e.object_id == 1 for e in world.client_events[1])
    assert 1 not in b.obj.object_ids()
    victim = c.obj.client_id
    assert victim is not None
    world.server.poke(lambda s: s.kick(victim, "test", world.scheduler.now))
    world.run(1.0)
    assert any(isinstance(e, Kicked) for e in world.client_events[2])
    assert victim not in world.server.obj.client_ids


def test_control_channel_survives_loss() -> None:
    world = World(link=LinkConfig(latency=0.02, loss=0.3))
    a, _b = world.add_client(1), world.add_client(2)
    for i in range(20):
        a.poke(lambda c, i=i: c.add_object(CubeOriObj(id=100 + i, x=float(i))))
    world.run(8.0)
    assert world.server.obj.object_ids == list(range(100, 120))
    a.poke(lambda c: [c.del_object(100 + i) for i in range(0, 20, 2)])
    world.run(8.0)
    assert world.server.obj.object_ids == list(range(101, 120, 2))
    deleted = [e.object_id for e in world.client_events[1] if isinstance(e, ObjectRemoved)]
    assert deleted == list(range(100, 120, 2))  # reliable, in order, exactly once


def test_join_twice_and_garbage_control_never_raise() -> None:
    world = World()
    a = world.add_client(1)
    world.run(0.5)
    a.poke(lambda c: c.transport.send(0, encode_control(Join())))
    a.poke(lambda c: c.transport.send(0, b"\xc1\xc1"))
    world.run(0.5)
    assert world.server.obj.drops["malformed_control"] == 1
    assert len(world.server.obj.client_ids) == 1
    assert np.all(world.server.obj.policy.statistics().clients == 1)


def _circling(world: World, count: int) -> list[CubeOriObj]:
    """``count`` clients, each owning one avatar; returns the owners' avatar references."""
    endpoints = [world.add_client(n + 1) for n in range(count)]
    for n, ep in enumerate(endpoints):
        ep.poke(lambda c, n=n: c.add_object(CubeOriObj(id=n, x=40.0 + 10.0 * n, y=40.0)))
    world.run(1.5)
    return [ep.obj.get_object_ref(n) for n, ep in enumerate(endpoints)]


def _move(avatars: list[CubeOriObj], step: int) -> None:
    """Avatars running circles over bumpy ground at about 2.5-7.5 m/s, every field in use."""
    for n, avatar in enumerate(avatars):
        rate = 0.3 * (1 + n % 3)  # radians per second
        angle = rate * 0.033 * step + n
        radius = 8.0 * (1 + n % 2)
        avatar.x = 40.0 + 10.0 * n + radius * math.cos(angle)
        avatar.y = 60.0 + radius * math.sin(angle)
        avatar.z = 3.0 + 0.5 * math.sin(3.0 * angle)
        avatar.yaw = angle + math.pi / 2
        avatar.pitch = 0.2 * math.sin(angle)
        avatar.vx = -radius * rate * math.sin(angle)
        avatar.vy = radius * rate * math.cos(angle)
        avatar.vz = 1.5 * radius * rate * math.cos(3.0 * angle) / radius
        avatar.gunselect = 2


def _errors(world: World, avatars: list[CubeOriObj]) -> list[float]:
    out = []
    for ep in world.clients:
        for avatar in avatars:
            if avatar.id in ep.obj.object_ids():
                replica = ep.obj.get_object_ref(avatar.id)
                out.append(math.dist((replica.x, replica.y), (avatar.x, avatar.y)))
    return out


def _baselines_held(world: World) -> int:
    """Check every usable server baseline is byte-equal to a send its client decoded."""
    server = world.server.obj
    checked = 0
    for ep in world.clients:
        state = server._baselines[server._internal(ep.obj.client_id)]
        store = ep.obj._delta
        for index in np.flatnonzero(state.valid).tolist():
            oid = server._wire_ids[index]
            tag = int(state.base_send[index]) % 255 + 1
            assert store.records[(oid, tag)].tobytes() == state.records[index : index + 1].tobytes()
            checked += 1
    return checked


def test_delta_encoding_matches_records_without_loss() -> None:
    worlds = {e: World(link=LinkConfig(latency=0.02), encoding=e) for e in ("records", "delta")}
    avatars = {e: _circling(w, 4) for e, w in worlds.items()}
    assert worlds["delta"].clients[0].obj.encoding == "delta"
    for step in range(90):
        for e, w in worlds.items():
            _move(avatars[e], step)
            w.run(0.033)
        pools = [
            [
                [ep.obj.get_object_ref(i).to_record().tobytes() for i in ep.obj.object_ids()]
                for ep in w.clients
            ]
            for w in worlds.values()
        ]
        assert pools[0] == pools[1]  # the same sends, decoded to the same records
    sent = {e: w.server.obj.bytes_out[UPDATE_CHANNEL] for e, w in worlds.items()}
    assert sent["delta"] < 0.85 * sent["records"]


def test_delta_encoding_over_lossy_network() -> None:
    link = LinkConfig(latency=0.03, loss=0.2)
    worlds = {e: World(link=link, encoding=e) for e in ("records", "delta")}
    avatars = {e: _circling(w, 5) for e, w in worlds.items()}
    history = {a.id: {a.to_record().tobytes()} for a in avatars["delta"]}
    errors: dict[str, list[float]] = {"records": [], "delta": []}
    checked = 0
    for step in range(240):
        for e, w in worlds.items():
            _move(avatars[e], step)
            w.run(0.033)
            errors[e] += _errors(w, avatars[e])
        for a in avatars["delta"]:
            history[a.id].add(a.to_record().tobytes())
        for ep in worlds["delta"].clients:  # every replica is a record its owner really had
            for oid in ep.obj.object_ids():
                assert ep.obj.get_object_ref(oid).to_record().tobytes() in history[oid]
        checked += _baselines_held(worlds["delta"])
    mean = {e: float(np.mean(v)) for e, v in errors.items()}
    assert mean["delta"] <= mean["records"] + POSITION_STEP
    assert checked > 1000  # baselines were in use all along
    sent = {e: w.server.obj.bytes_out[UPDATE_CHANNEL] for e, w in worlds.items()}
    assert sent["delta"] < 0.85 * sent["records"]
    clients = worlds["delta"].clients
    assert sum(ep.obj.drops["missing_baseline"] for ep in clients) == 0


def test_delta_baselines_only_from_acks() -> None:
    world = World(link=LinkConfig(latency=0.02), encoding="delta")
    avatars = _circling(world, 2)
    receiver = world.clients[1]
    acks: list[bytes] = []

    def swallow(original: Send) -> Send:
        def send(channel: int, payload: bytes) -> int | None:  # the receiver's acks never leave
            if channel == ACK_CHANNEL:
                acks.append(payload)
                return 0
            return original(channel, payload)

        return send

    undo = spy_on_send(receiver.obj, swallow)
    server = world.server.obj
    state = server._baselines[server._internal(receiver.obj.client_id)]
    state.valid[:] = False
    state.base_send[:] = -1
    for step in range(30):
        _move(avatars, step)
        world.run(0.033)
    assert acks
    assert not state.valid.any()  # nothing acknowledged: every send stays absolute
    assert abs(receiver.obj.get_object_ref(0).x - avatars[0].x) < 1.0
    undo()
    for step in range(30, 40):
        _move(avatars, step)
        world.run(0.033)
    assert state.valid.any()
    assert _baselines_held(world) >= 1


def test_acks_to_a_records_server_are_dropped() -> None:
    world = World()
    a = world.add_client(1)
    world.run(0.5)
    assert a.obj.encoding == "records"
    a.poke(lambda c: c.transport.send(ACK_CHANNEL, write_update_ack(3, 0)))
    world.run(0.3)
    assert world.server.obj.drops["unexpected_ack"] == 1
    with pytest.raises(ConfigError):
        VfcServerConfig(encoding="zip")


SERVER_ADDR = ("192.0.2.1", 40000)
CLIENT_ADDRS = (("192.0.2.2", 50000), ("192.0.2.3", 50000))


def linked(now: float, encoding: str) -> tuple[VfcServer, list[VfcClient]]:
    """A server and two joined clients with one moving avatar each, wired directly, up to ``now``.

    Two simulated seconds of 33 ms steps end just before ``now``, so the objects are mid-session
    (updates, acks and baselines in use) when a conformance check takes over at ``now``.
    """
    server = VfcServer(
        Server(
            config=NetcodeServerConfig(
                protocol_id=PROTOCOL_ID, public_address=SERVER_ADDR, insecure=True
            ),
            random_bytes=random.Random(1).randbytes,
        ),
        config=VfcServerConfig(encoding=encoding),
    )
    start = now - 2.0
    clients = []
    for n in range(2):
        client = VfcClient(Client(config=NetcodeClientConfig(insecure=True)))
        client.transport.connect_insecure(
            server_addresses=[SERVER_ADDR], protocol_id=PROTOCOL_ID, client_id=n + 1, now=start
        )
        client.add_object(CubeOriObj(id=n, x=3.0 + n, y=4.0))
        clients.append(client)
    route = dict(zip(CLIENT_ADDRS, clients, strict=True))
    for step in range(60):
        t = start + step * 0.033
        _move([clients[0].get_object_ref(0)], step)
        for obj in (server, *clients):
            deadline = obj.next_timer()
            if deadline is not None and deadline <= t:
                obj.handle_timer(t)
        for addr, client in route.items():
            for data, _ in client.datagrams_to_send(t):
                server.receive_datagram(data, addr, t)
        for data, addr in server.datagrams_to_send(t):
            route[addr].receive_datagram(data, SERVER_ADDR, t)
    return server, clients


@pytest.mark.parametrize("encoding", ["records", "delta"])
def test_server_and_client_conform_to_sans_io(encoding: str) -> None:
    server, clients = linked(1000.0, encoding)
    assert clients[1].get_updated_ids() == [0]  # the session is live before the checks start
    assert server.bytes_out[UPDATE_CHANNEL] > 0
    check_sans_io(lambda now: linked(now, encoding)[0], rng=random.Random(0), peer=CLIENT_ADDRS[1])
    check_sans_io(lambda now: linked(now, encoding)[1][1], rng=random.Random(0), peer=SERVER_ADDR)
    check_sans_io(lambda now: linked(now, encoding)[0], rng=random.Random(1))


@pytest.mark.parametrize("encoding", ["records", "delta"])
def test_garbage_messages_on_every_channel_are_counted(encoding: str) -> None:
    server, clients = linked(1000.0, encoding)
    rng = random.Random(4)
    t = 1000.0
    for _ in range(40):
        for channel in (CONTROL_CHANNEL, ACK_CHANNEL, UPDATE_CHANNEL):
            junk = rng.randbytes(rng.randrange(1, 200))
            clients[1].transport.send(channel, junk)
            server.transport.send(server.transport.clients[0], channel, junk)
        t += 0.033
        for obj in (server, *clients):
            obj.handle_timer(t)
        for addr, client in zip(CLIENT_ADDRS, clients, strict=True):
            for data, _ in client.datagrams_to_send(t):
                server.receive_datagram(data, addr, t)
        for data, addr in server.datagrams_to_send(t):
            clients[CLIENT_ADDRS.index(addr)].receive_datagram(data, SERVER_ADDR, t)
    assert sum(server.drops.values()) >= 80
    assert sum(clients[0].drops.values()) >= 40
    assert server.object_ids == [0, 1]
