"""ReplicationServer and ReplicationClient over the simulated network (issue 13 item 7)."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable

import pytest

from lagless._types import SansIO
from lagless.interest import AuraPolicy, Kappa, VfcConfig, VfcPolicy, View
from lagless.netsim import LinkConfig
from lagless.replication.client import ReplicationClient
from lagless.replication.display import Display
from lagless.replication.events import Target
from lagless.replication.messages import MAX_OPS, Destroy
from lagless.replication.objects import Role, World
from lagless.replication.server import ReplicationServer, _chunks
from lagless.replication.session import (
    EventReceived,
    ObjectAnnounced,
    ObjectDestroyed,
    OwnerChanged,
    SnapshotReceived,
    Welcomed,
)
from lagless.smoothing import create_display_model
from lagless.testing import check_sans_io
from lagless.transport.client import Client
from lagless.transport.netcode_client import NetcodeClientConfig
from lagless.transport.netcode_server import NetcodeServerConfig
from lagless.transport.server import Server

from .helpers import (
    CLASSES,
    EVENTS,
    PORT,
    PROTOCOL_ID,
    SERVER,
    Fire,
    Gadget,
    Kind,
    Ping,
    Ship,
    SimGame,
    Station,
)


def _joined(game: SimGame, clients: int = 2) -> SimGame:
    for n in range(1, clients + 1):
        game.add_client(n)
    game.run(1.0)
    for client in game.clients:
        assert client.obj.client_id is not None
    return game


def test_lifecycle_spawn_move_reference_destroy() -> None:
    game = _joined(SimGame(link=LinkConfig(latency=0.02)))
    a, b = game.clients
    server = game.server.obj
    station = server.spawn(Station, pos=(10.0, 10.0), name="alpha")
    ship = server.spawn(Ship, pos=(0.0, 0.0), dock=station, kind=Kind.TRADER, pilot="ann")
    game.run(0.5)
    for step in range(20):
        ship.pos = (0.25 * step, -0.1 * step)
        ship.heading = 0.05 * step
        game.run(0.05)
    game.run(0.5)
    for client in (a, b):
        replica = client.obj.world.find(ship.id)
        assert isinstance(replica, Ship)
        assert replica.role is Role.PROXY
        assert replica.pos == pytest.approx(ship.pos, abs=0.005)
        assert replica.heading == pytest.approx(ship.heading, abs=0.002)
        assert (replica.kind, replica.pilot, replica.hp) == (Kind.TRADER, "ann", 100)
        dock = replica.resolve(replica.dock)
        assert isinstance(dock, Station)
        assert dock.name == "alpha"
        assert dock.id == station.id
    events = game.client_events[0]
    announced = [e.obj.id for e in events if isinstance(e, ObjectAnnounced)]
    assert announced.index(station.id) < announced.index(ship.id)  # depending: station first
    assert any(isinstance(e, SnapshotReceived) for e in events)
    sid = station.id
    server.destroy(station)
    game.run(0.5)
    for client in (a, b):
        assert client.obj.world.find(sid) is None
        replica = client.obj.world.find(ship.id)
        assert replica is not None
        assert replica.resolve(replica.dock) is None
    assert any(isinstance(e, ObjectDestroyed) and e.ident == sid for e in events)
    assert server.drops.total() == 0


def test_owner_writes_own_fields_and_ownership_transfer() -> None:
    game = _joined(SimGame(link=LinkConfig(latency=0.01)))
    a, b = game.clients
    server = game.server.obj
    ship = server.spawn(Ship, owner=a.obj.client_id, pos=(1.0, 1.0))
    game.run(0.5)
    mine = a.obj.world.find(ship.id)
    theirs = b.obj.world.find(ship.id)
    assert mine is not None
    assert theirs is not None
    assert mine.role is Role.OWNER
    assert theirs.role is Role.PROXY
    mine.aim = 1.25
    with pytest.raises(Exception, match="written by the authority"):
        mine.pos = (5.0, 5.0)
    with pytest.raises(Exception, match="role is proxy"):
        theirs.aim = 0.5
    game.run(0.5)
    assert ship.aim == pytest.approx(1.25, abs=0.001)
    assert theirs.aim == pytest.approx(1.25, abs=0.001)
    server.set_owner(ship, b.obj.client_id)
    game.run(0.5)
    assert mine.role is Role.PROXY
    assert theirs.role is Role.OWNER
    assert any(isinstance(e, OwnerChanged) for e in game.client_events[1])
    mine.role = Role.OWNER  # a client that ignores the transfer cannot write any more
    mine.aim = -2.0
    game.run(0.5)
    assert ship.aim == pytest.approx(1.25, abs=0.001)
    assert game.server.obj.drops["not_owner"] >= 1


def test_events_targets_and_stamps() -> None:
    game = _joined(SimGame(link=LinkConfig(latency=0.01)), clients=3)
    a, b, c = game.clients
    server = game.server.obj
    ship = server.spawn(Ship, owner=b.obj.client_id)
    game.run(0.5)
    now = game.now
    a.poke(lambda cl: cl.send_event(Fire(power=42.0, shooter=ship.id), Target.owner_of(ship), now))
    a.poke(lambda cl: cl.send_event(Ping(note="hi"), Target.everyone(), now))
    server.send_event(Fire(power=1.0), Target.all_but_owner(ship), now)
    c_id = c.obj.client_id
    assert c_id is not None
    server.send_event(Fire(power=2.0), Target.set([c_id]), now)
    a.poke(lambda cl: cl.send_event(Fire(power=3.0), Target.server(), now))
    game.run(0.5)

    def got(events: list[object]) -> list[tuple[float, int | None]]:
        return [
            (round(getattr(e.event, "power", -1.0), 1), e.sender)
            for e in events
            if isinstance(e, EventReceived)
        ]

    a_id = a.obj.client_id
    assert sorted(got(game.client_events[0]), key=str) == [(1.0, None)]
    assert sorted(got(game.client_events[1]), key=str) == sorted(
        [(42.0, a_id), (-1.0, a_id)], key=str
    )
    assert sorted(got(game.client_events[2]), key=str) == sorted(
        [(-1.0, a_id), (1.0, None), (2.0, None)], key=str
    )
    server_got = got(game.server_events)
    assert sorted(server_got, key=str) == sorted([(3.0, a_id), (-1.0, a_id)], key=str)
    fire = next(
        e
        for e in game.client_events[1]
        if isinstance(e, EventReceived) and e.event.class_id == "Fire"
    )
    assert b.obj.world.resolve(fire.event.shooter) is b.obj.world.find(ship.id)
    assert abs(fire.time - now) < 0.05  # sender's synchronised time


def test_lossy_link_converges_with_delta() -> None:
    game = _joined(SimGame(link=LinkConfig(latency=0.03, loss=0.2), seed=5), clients=2)
    server = game.server.obj
    ships = [server.spawn(Ship, pos=(float(i), 0.0), vel=(1.0, 0.5)) for i in range(30)]
    game.run(1.0)
    for step in range(60):
        for i, ship in enumerate(ships):
            ship.pos = (i + 0.1 * step, 0.05 * step)
        game.run(0.05)
    game.run(1.5)
    for client in game.clients:
        for ship in ships:
            replica = client.obj.world.find(ship.id)
            assert replica is not None
            assert replica.pos == pytest.approx(ship.pos, abs=0.005)
    engine = server.engine
    assert engine.records_sent > 0
    assert engine.record_bits / engine.records_sent < 40  # mostly deltas despite 20 % loss


def test_interest_policy_limits_relevance() -> None:
    game = SimGame(link=LinkConfig(latency=0.01), policy=AuraPolicy(50.0))
    _joined(game)
    a, b = game.clients
    server = game.server.obj
    assert a.obj.client_id is not None
    assert b.obj.client_id is not None
    avatar_a = server.spawn(Ship, owner=a.obj.client_id, pos=(0.0, 0.0))
    avatar_b = server.spawn(Ship, owner=b.obj.client_id, pos=(500.0, 0.0))
    near_a = server.spawn(Station, pos=(20.0, 0.0), name="near a")
    near_b = server.spawn(Station, pos=(520.0, 0.0), name="near b")
    game.run(1.0)
    world_a, world_b = a.obj.world, b.obj.world
    assert world_a.find(near_a.id) is not None
    assert world_a.find(near_b.id) is None
    assert world_b.find(near_b.id) is not None
    assert world_b.find(near_a.id) is None
    assert world_a.find(avatar_b.id) is None
    avatar_b.pos = (10.0, 0.0)  # b flies over to a: it becomes relevant to a
    game.run(1.0)
    assert world_a.find(avatar_b.id) is not None
    assert world_a.find(avatar_b.id).pos == pytest.approx((10.0, 0.0), abs=0.005)  # type: ignore[union-attr]
    assert world_a.find(avatar_a.id) is not None


def test_client_leaving_and_sans_io_contract() -> None:
    game = _joined(SimGame(link=LinkConfig(latency=0.01)))
    a, _ = game.clients
    events = game.client_events[0]
    assert any(isinstance(e, Welcomed) for e in events)
    a.poke(lambda c: c.transport.disconnect())
    game.run(1.0)
    assert len(game.server.obj.clients) == 1


def _server(now: float) -> ReplicationServer:
    transport = Server(
        config=NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, public_address=(SERVER, PORT), insecure=True
        ),
        random_bytes=random.Random(int(now)).randbytes,
    )
    return ReplicationServer(transport, World(CLASSES), events=EVENTS)


def _client(now: float) -> ReplicationClient:
    transport = Client(config=NetcodeClientConfig(insecure=True))
    transport.connect_insecure(
        server_addresses=[(SERVER, PORT)], protocol_id=PROTOCOL_ID, client_id=9, now=now
    )
    return ReplicationClient(transport, World(CLASSES), events=EVENTS)


@pytest.mark.parametrize("factory", [_server, _client], ids=["server", "client"])
def test_sans_io_contract(factory: Callable[[float], SansIO]) -> None:
    check_sans_io(factory, rng=random.Random(7))


def test_display_smooths_remote_objects_through_interpolation() -> None:
    game = SimGame(link=LinkConfig(latency=0.03))
    game.add_client(1)
    model = create_display_model("interpolation")
    game.clients[0].obj.display = Display({Ship: model})
    game.run(1.0)
    server = game.server.obj
    ship = server.spawn(Ship, pos=(0.0, 0.0), vel=(4.0, 0.0))
    game.run(0.5)
    client = game.clients[0].obj
    shown: list[float] = []
    for step in range(40):
        ship.pos = (0.2 * step, 0.0)  # 4 m/s
        game.run(0.05)
        replica = client.world.find(ship.id)
        assert replica is not None
        display = client.display
        assert display is not None
        state = display.state(replica, game.now)
        if state is not None:
            shown.append(state.x)
    assert len(shown) > 30
    steps = [b - a for a, b in itertools.pairwise(shown[10:])]
    assert min(steps) > 0.0  # drawn moving forward every frame, no holds or jumps back
    assert max(steps) < 0.5
    assert 0.2 * 39 - shown[-1] < 1.5  # behind the truth by the render delay, not more
    assert Display({}).state(replica, game.now) is None


def test_large_initial_state_fragments_on_the_reliable_channel() -> None:
    game = _joined(SimGame(link=LinkConfig(latency=0.02, loss=0.1), seed=8), clients=1)
    server = game.server.obj
    gadgets = [server.spawn(Gadget, label=f"g{i:010d}", blob=bytes(8)) for i in range(1500)]
    game.run(6.0)
    world = game.clients[0].obj.world
    assert len(world) == 1500  # ~40 KB of announcements through 1 KiB fragments with 10 % loss
    for gadget in gadgets[::97]:
        copy = world.find(gadget.id)
        assert isinstance(copy, Gadget)
        assert copy.label == gadget.label
    assert server.engine.records_sent == 0  # nothing moved: announcements were enough
    assert _chunks([Destroy(i) for i in range(MAX_OPS + 1)])[1] == [Destroy(MAX_OPS)]


def test_vfc_bounds_decide_how_stale_a_far_replica_may_be() -> None:
    view = View(radii=(50.0, math.inf), kappa=((Kappa(theta=0.0),), (Kappa(theta=0.5),)))
    game = SimGame(link=LinkConfig(latency=0.01), policy=VfcPolicy(VfcConfig(default_view=view)))
    _joined(game, clients=1)
    server = game.server.obj
    client_id = game.clients[0].obj.client_id
    assert client_id is not None
    server.spawn(Ship, owner=client_id, pos=(0.0, 0.0))
    near = server.spawn(Ship, pos=(10.0, 0.0))
    far = server.spawn(Ship, pos=(500.0, 0.0))
    game.run(1.0)
    updates = {near.id: 0, far.id: 0}
    events = game.client_events[0]
    events.clear()
    for step in range(40):  # both move every tick for 2 s
        near.pos = (10.0 + 0.1 * step, 0.0)
        far.pos = (500.0 + 0.1 * step, 0.0)
        game.run(0.05)
    for event in events:
        if isinstance(event, SnapshotReceived):
            for obj in event.updated:
                if obj.id in updates:
                    updates[obj.id] += 1
    assert updates[near.id] >= 30  # θ = 0: every tick
    assert 2 <= updates[far.id] <= 6  # θ = 0.5 s: about four times in 2 s


def test_retargeted_depending_reference_announces_its_target() -> None:
    game = SimGame(link=LinkConfig(latency=0.01), policy=AuraPolicy(50.0))
    _joined(game, clients=1)
    server = game.server.obj
    client_id = game.clients[0].obj.client_id
    ship = server.spawn(Ship, owner=client_id, pos=(0.0, 0.0))
    far = server.spawn(Station, pos=(900.0, 900.0), name="far")
    game.run(1.0)
    world = game.clients[0].obj.world
    assert world.find(far.id) is None  # out of interest
    ship.dock = far
    game.run(0.5)
    replica = world.find(ship.id)
    assert replica is not None
    target = replica.resolve(replica.dock)
    assert isinstance(target, Station)
    assert target.name == "far"


def test_destroy_and_spawn_in_one_tick_reusing_a_row() -> None:
    game = SimGame(link=LinkConfig(latency=0.01), policy=AuraPolicy(100.0))
    _joined(game, clients=1)
    server = game.server.obj
    client_id = game.clients[0].obj.client_id
    server.spawn(Ship, owner=client_id, pos=(0.0, 0.0))
    old = server.spawn(Station, pos=(10.0, 0.0), name="old")
    game.run(0.5)
    old_id = old.id
    server.destroy(old)
    new = server.spawn(Station, pos=(20.0, 0.0), name="new")  # takes the freed row
    game.run(0.5)
    world = game.clients[0].obj.world
    assert world.find(old_id) is None
    replica = world.find(new.id)
    assert isinstance(replica, Station)
    assert replica.name == "new"
    new.pos = (30.0, 0.0)  # still tracked by the interest policy: its moves arrive
    game.run(0.5)
    assert replica.pos == pytest.approx((30.0, 0.0))


def test_owner_writes_survive_loss() -> None:
    game = _joined(SimGame(link=LinkConfig(latency=0.02, loss=0.3), seed=11), clients=1)
    server = game.server.obj
    client = game.clients[0].obj
    ship = server.spawn(Ship, owner=client.client_id)
    game.run(1.5)
    mine = client.world.find(ship.id)
    assert mine is not None
    for k in range(10):  # one write, then quiet: only the redundant sends can carry it
        mine.aim = round(0.3 * k - 1.0, 3)
        game.run(0.5)
        assert ship.aim == pytest.approx(mine.aim, abs=0.001), k
