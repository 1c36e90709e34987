"""Fuzz every decoder of the replication core (DESIGN.md "Bad input", issue 13 "Done when").

Decoders (``decode_control``, ``decode_owner_update``, ``decode_event``, ``decode_ack`` and
``SnapshotReader.read``) raise only ``DecodeError`` and allocate at most a constant times the
input's size; a live ``ReplicationServer`` and ``ReplicationClient`` take fuzzed messages of
every type without raising, count them, and still apply a valid message afterwards.
"""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Callable

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from lagless.replication.client import ReplicationClient
from lagless.replication.events import Target, TargetKind
from lagless.replication.fields import Vec2Field
from lagless.replication.messages import (
    Announce,
    BlobSet,
    ControlOp,
    Destroy,
    OwnerChange,
    Welcome,
    decode_control,
    decode_event,
    decode_owner_update,
    encode_control,
    encode_event,
    encode_owner_update,
)
from lagless.replication.objects import NetworkObject, Role, World
from lagless.replication.server import ReplicationServer
from lagless.replication.snapshot import SnapshotEngine, SnapshotReader, decode_ack, encode_ack
from lagless.transport.client import Client
from lagless.transport.netcode_client import NetcodeClientConfig
from lagless.transport.netcode_server import NetcodeServerConfig
from lagless.transport.server import Server
from lagless.wire import DecodeError
from tests.property.fuzzing import FUZZ, fuzz_bytes, scaled
from tests.replication.helpers import (
    CLASSES,
    EVENTS,
    PROTOCOL_ID,
    Fire,
    Gadget,
    Ping,
    Ship,
    Station,
)

EVENT_CLASSES = {cls.class_id: cls for cls in EVENTS}
ALLOC_SLACK = 256 * 1024  # bytes any decode may use regardless of input size
ALLOC_PER_BYTE = 400  # bytes of peak allocation allowed per input byte


def _bounded(decode: Callable[[bytes], object], data: bytes) -> None:
    """Run ``decode``; only DecodeError may escape, and peak allocation stays bounded."""
    tracemalloc.start()
    try:
        decode(data)
    except DecodeError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak <= ALLOC_SLACK + ALLOC_PER_BYTE * len(data), (peak, len(data))


def _server_world() -> World:
    world = World(CLASSES)
    station = world.spawn(Station, name="s")
    world.spawn(Ship, dock=station, owner=1, pilot="p")
    world.spawn(Gadget, label="g")
    return world


WORLD = _server_world()
OBJECTS = list(WORLD)


def _announce(obj: NetworkObject) -> Announce:
    schema = obj.schema
    assert obj._table is not None
    codes = schema.encode(obj._table.values[obj._row : obj._row + 1], schema.numeric)[0]
    blobs = tuple(getattr(obj, f.name) for f in schema.blobs)
    return Announce(type(obj), obj.id, obj.owner, b"data", tuple(codes.tolist()), blobs)


ops = st.one_of(
    st.builds(Welcome, st.integers(0, 2**40)),
    st.sampled_from([_announce(o) for o in OBJECTS]),
    st.builds(Destroy, st.integers(0, 2**40)),
    st.builds(OwnerChange, st.integers(0, 2**40), st.none() | st.integers(0, 2**20)),
    st.builds(BlobSet, st.integers(0, 100), st.integers(0, 3), st.binary(max_size=40)),
)
valid_control = st.lists(ops, max_size=6).map(lambda o: encode_control(list[ControlOp](o)))
valid_owner = st.sampled_from(
    [encode_owner_update([o for o in OBJECTS if isinstance(o, Ship)]), encode_owner_update([])]
)
targets = st.one_of(
    st.just(Target.server()),
    st.just(Target.everyone()),
    st.builds(
        lambda k, i: Target(k, i),
        st.sampled_from([TargetKind.OWNER, TargetKind.ALL_BUT_OWNER]),
        st.integers(0, 99),
    ),
    st.builds(Target.set, st.lists(st.integers(0, 1000), max_size=5)),
)
events = st.one_of(
    st.builds(lambda p: Fire(power=p, shooter=3), st.floats(0, 100)),
    st.builds(lambda n: Ping(note=n), st.text(max_size=4)),
)
valid_event = st.builds(
    lambda e, s, t, time: encode_event(e, s, t, time),
    events,
    st.none() | st.integers(0, 1000),
    targets,
    st.floats(-1e9, 1e9),
)
valid_ack = st.builds(encode_ack, st.integers(0, 65535), st.integers(0, 2**32 - 1))


class Drone(NetworkObject):
    """A class with velocity-predicted position deltas."""

    pos = Vec2Field(-100.0, 100.0, 0.01, delta_bits=3, predict="vel")
    vel = Vec2Field(-10.0, 10.0, 0.01, delta_bits=3)


SNAPSHOT_CLASSES = (*CLASSES, Drone)


def _snapshots() -> tuple[list[bytes], Callable[[], SnapshotReader]]:
    server = World(SNAPSHOT_CLASSES)
    engine = SnapshotEngine(server)
    engine.add_client(1)
    rng = np.random.default_rng(9)
    ships = [server.spawn(Ship, pos=tuple(rng.uniform(-50, 50, 2))) for _ in range(8)]
    drones = [server.spawn(Drone, vel=tuple(rng.uniform(-5, 5, 2))) for _ in range(8)]
    for obj in server.changes().spawned:
        engine.object_added(obj)
    out = []
    for step in range(12):
        for _, obj in engine.announcements_due():
            engine.mark_announced(1, obj, delivered=True)
            engine.announced_codes(1, obj, engine.codes_of(obj))
        for ship in ships:
            x, y = ship.pos
            ship.pos = (x + 0.3, y - 0.1 * step)
            ship.hp = int(rng.integers(0, 200))
        for drone in drones:
            vx, vy = np.add(drone.vel, rng.normal(0.0, 0.3, 2))
            x, y = drone.pos
            drone.vel = (float(vx), float(vy))
            drone.pos = (x + vx * 0.05, y + vy * 0.05)
        payload = engine.tick(0.05 * step).get(1)
        if payload is not None:
            out.append(payload)
            engine.on_ack(1, step & 0xFFFF, 0xFFFFFFFF)

    def reader() -> SnapshotReader:
        client = World(SNAPSHOT_CLASSES)
        for obj in (*ships, *drones):
            client.spawn(type(obj), ident=obj.id, role=Role.PROXY)
        snapshots = SnapshotReader(client)
        for payload in out[:-1]:  # baselines, so mutated deltas reach the delta path
            snapshots.read(payload)
        return snapshots

    return out, reader


SNAPSHOTS, READER = _snapshots()


@FUZZ
@given(fuzz_bytes(valid_control))
def test_decode_control(data: bytes) -> None:
    _bounded(lambda d: decode_control(d, WORLD.registry), data)


@FUZZ
@given(fuzz_bytes(valid_owner))
def test_decode_owner_update(data: bytes) -> None:
    _bounded(lambda d: decode_owner_update(d, WORLD.find), data)


@FUZZ
@given(fuzz_bytes(valid_event))
def test_decode_event(data: bytes) -> None:
    _bounded(lambda d: decode_event(d, EVENT_CLASSES), data)


@FUZZ
@given(fuzz_bytes(valid_ack))
def test_decode_ack(data: bytes) -> None:
    _bounded(decode_ack, data)


@scaled(0.5)
@given(fuzz_bytes(st.sampled_from(SNAPSHOTS)))
def test_snapshot_reader(data: bytes) -> None:
    reader = READER()
    _bounded(reader.read, data)
    reader.read(SNAPSHOTS[0])  # still decodes valid input afterwards


def _live_server() -> ReplicationServer:
    transport = Server(
        config=NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, public_address=("10.0.0.1", 40000), insecure=True
        ),
        random_bytes=random.Random(2).randbytes,
    )
    server = ReplicationServer(transport, _server_world(), events=EVENTS)
    server.engine.add_client(1)
    return server


def _live_client() -> ReplicationClient:
    return ReplicationClient(
        Client(config=NetcodeClientConfig(insecure=True)), World(CLASSES), events=EVENTS
    )


any_message = st.one_of(
    valid_control, valid_owner, valid_event, valid_ack, st.sampled_from(SNAPSHOTS)
)


@scaled(0.5)
@given(st.lists(fuzz_bytes(any_message), min_size=1, max_size=4))
def test_live_objects_survive_fuzzed_messages(messages: list[bytes]) -> None:
    server = _live_server()
    client = _live_client()
    for payload in messages:
        server._on_message(1, payload, 1.0)
        client._on_message(payload)
    ship = next(o for o in server.world if isinstance(o, Ship))
    good = encode_owner_update([ship])
    ship.aim = 0.0
    server._on_message(1, good, 2.0)  # still serves a valid owner update
    client._on_message(encode_control([Welcome(7)]))
    assert client.client_id == 7
