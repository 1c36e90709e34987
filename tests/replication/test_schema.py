"""Fields, schemas, tables, the world and savegames (issue 13 items 2-3, spec 003 §5.4)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lagless.errors import LocalProtocolError
from lagless.replication.fields import (
    AngleField,
    FloatField,
    IntField,
    RefField,
    StringField,
    Vec2Field,
)
from lagless.replication.ids import NULL_REF, IdPool, IdRef
from lagless.replication.objects import ClassRegistry, NetworkObject, Role, World
from lagless.wire import BitReader, BitWriter, DecodeError

from .helpers import CLASSES, Gadget, Kind, Ship, Station


def _gadget(world: World, **overrides: object) -> Gadget:
    values: dict[str, object] = {
        "flag": False,
        "kind": Kind.MINER,
        "level": 777,
        "ratio": 0.25,
        "angle": 5.0,
        "v2": (1.5, -2.25),
        "v3": (0.5, 0.25, -9.99),
        "rot": (0.0, 1.0, 0.0, 0.0),
        "label": "héllo",
        "blob": b"\x00\xff",
    }
    values.update(overrides)
    return world.spawn(Gadget, **values)


def test_schema_order_widths_and_layout() -> None:
    schema = Ship.schema
    assert [f.name for f in schema.fields] == [
        "pos",
        "vel",
        "heading",
        "aim",
        "kind",
        "hp",
        "shield",
        "dock",
        "pilot",
    ]
    assert [f.name for f in schema.continuous] == [
        "pos",
        "vel",
        "heading",
        "aim",
        "hp",
        "shield",
        "dock",
    ]
    # 2000 m at 1 cm: 200001 codes -> 18 bits; ±64 m/s at 1 cm -> 14; 12-bit angle; aim 13;
    # hp 0..200 -> 8 bits; bool 1; reference 32
    assert schema.widths.tolist() == [18, 18, 14, 14, 12, 13, 8, 1, 32]
    assert [f.name for f in schema.owner_fields] == ["aim"]
    assert Gadget.schema.dims == 1 + 1 + 1 + 1 + 1 + 2 + 3 + 4 + 2


def test_field_values_round_trip_through_codes() -> None:
    world = World(CLASSES)
    gadget = _gadget(world)
    schema = Gadget.schema
    table = world.tables[Gadget]
    codes = schema.encode(table.values[gadget._row : gadget._row + 1], schema.numeric)
    writer = BitWriter()
    schema.write_codes(writer, codes[0].tolist(), schema.numeric)
    schema.write_blobs(writer, [gadget.label, gadget.blob])
    reader = BitReader(writer.getvalue())
    back = np.array([schema.read_codes(reader, schema.numeric)], dtype=np.uint64)
    assert schema.read_blobs(reader) == ["héllo", b"\x00\xff"]
    other = World(CLASSES).spawn(Gadget)
    other_table = other._table
    assert other_table is not None
    schema.decode_into(back, other_table.values[other._row : other._row + 1], schema.numeric)
    assert (other.flag, other.kind, other.level) == (False, Kind.MINER, 777)
    assert other.ratio == pytest.approx(0.25, abs=0.0005)
    assert other.angle == pytest.approx(5.0, abs=math.pi / 1024)
    assert other.v2 == pytest.approx((1.5, -2.25), abs=0.005)
    assert other.v3 == pytest.approx((0.5, 0.25, -9.99), abs=0.005)
    assert np.abs(np.array(other.rot) - np.array([0.0, 1.0, 0.0, 0.0])).max() < 0.005


def test_bad_values_and_declarations() -> None:
    world = World(CLASSES)
    gadget = _gadget(world)
    for name, value in [
        ("level", 1001),
        ("level", 1.5),
        ("kind", 3),
        ("ratio", math.nan),
        ("v2", (1.0,)),
        ("label", "x" * 13),
        ("blob", "text"),
        ("rot", (0.0, 0.0, 0.0, 0.0)),
        ("flag", 1),
        ("other", "ship"),
    ]:
        with pytest.raises(LocalProtocolError):
            setattr(gadget, name, value)
    with pytest.raises(LocalProtocolError):
        world.spawn(Gadget, nope=1)
    with pytest.raises(LocalProtocolError):
        IntField(5, 1)
    with pytest.raises(LocalProtocolError):
        FloatField(0.0, 1.0, 0.1, delta_bits=9)
    with pytest.raises(LocalProtocolError):
        AngleField(40)
    with pytest.raises(LocalProtocolError):
        StringField(0)


def test_redeclared_field() -> None:
    with pytest.raises(LocalProtocolError, match="redeclares"):

        class Bad(Station):
            pos = Vec2Field(0.0, 1.0, 0.1)

    class Good(Station):
        speed = FloatField(0.0, 10.0, 0.1)

    assert [f.name for f in Good.schema.fields] == ["pos", "name", "speed"]
    assert Good.class_id == "Good"


def test_roles_limit_writes() -> None:
    world = World(CLASSES)
    proxy = world.spawn(Ship, role=Role.PROXY)
    owner = world.spawn(Ship, role=Role.OWNER, owner=3)
    with pytest.raises(LocalProtocolError, match="role is proxy"):
        proxy.hp = 3
    owner.aim = 1.0
    with pytest.raises(LocalProtocolError, match="written by the authority"):
        owner.hp = 3
    assert world.changes().owner_writes == {owner.id}


def test_references_resolve_and_die_with_their_object() -> None:
    world = World(CLASSES)
    station = world.spawn(Station, ident=7, name="old")
    ship = world.spawn(Ship, dock=station)
    other = world.spawn(Ship, dock=7)  # by ID: bound to the live assignment
    assert ship.resolve(ship.dock) is station
    assert other.resolve(other.dock) is station
    stale = ship.dock
    world.destroy(station)
    assert ship.dock == NULL_REF  # nulled in the table
    assert world.resolve(stale) is None
    new = world.spawn(Station, ident=7, name="new")
    assert world.resolve(stale) is None  # the wrong-station hazard
    assert world.resolve(IdRef(7, 0)) is new  # generation 0: whatever holds the ID
    with pytest.raises(LocalProtocolError):
        World(CLASSES).spawn(Ship, dock=new)  # an object of another world


def test_destroy_and_lookup() -> None:
    world = World(CLASSES)
    ships = [world.spawn(Ship) for _ in range(5)]
    world.destroy(ships[1])
    assert not ships[1].alive
    with pytest.raises(LocalProtocolError):
        _ = ships[1].hp
    with pytest.raises(LocalProtocolError):
        world.destroy(ships[1])
    assert [s.id for s in world] == [1, 3, 4, 5]
    assert world.spawn(Ship).id == 6
    assert world.tables[Ship].ids[:6].tolist() == [1, 6, 3, 4, 5, -1]  # row 1 reused
    changes = world.changes()
    assert [o.id for o in changes.spawned] == [1, -1, 3, 4, 5, 6]  # the destroyed one: NO_ID
    assert [(i, c) for i, c, _ in changes.destroyed] == [(2, Ship)]


def test_savegame_round_trip_keeps_ids_and_next_id() -> None:
    world = World(CLASSES, pool=IdPool("UniverseID", start=100))
    station = world.spawn(Station, pos=(1.0, 2.0), name="alpha")
    gone = world.spawn(Station)
    ship = world.spawn(Ship, pos=(3.0, 4.0), dock=station, owner=5, kind=Kind.FIGHTER, hp=42)
    gadget = _gadget(world, other=ship)
    world.destroy(gone)
    data = json.loads(json.dumps(world.save()))
    loaded = World(CLASSES, pool=IdPool("UniverseID", start=100))
    loaded.load(data)
    assert [o.id for o in loaded] == [station.id, ship.id, gadget.id]
    assert loaded.pool.next_id == world.pool.next_id == 104
    copy = loaded.find(ship.id)
    assert isinstance(copy, Ship)
    assert copy.values() | {"dock": None} == ship.values() | {"dock": None}
    assert copy.resolve(copy.dock) is loaded.find(station.id)
    assert copy.owner == 5
    g = loaded.find(gadget.id)
    assert isinstance(g, Gadget)
    assert g.label == "héllo"
    assert g.blob == b"\x00\xff"
    assert g.resolve(g.other) is copy
    for bad in [{}, {"format": "x"}, {**data, "objects": [{"class": "Nope", "fields": {}}]}]:
        with pytest.raises(LocalProtocolError):
            World(CLASSES).load(bad)


def test_registry() -> None:
    registry = ClassRegistry(CLASSES)
    assert registry.get("Ship") is Ship
    assert Ship in registry
    assert list(registry) == [Gadget, Ship, Station]

    class Ship2(NetworkObject):
        class_id = "Ship"

    with pytest.raises(LocalProtocolError, match="taken"):
        registry.register(Ship2)
    with pytest.raises(LocalProtocolError):
        World([Station]).spawn(Ship)


def test_read_blobs_rejects_bad_utf8() -> None:
    writer = BitWriter()
    Station.schema.write_codes(writer, [0, 0], Station.schema.numeric)
    writer.serialize_bytes(b"\xff\xfe", 24)
    reader = BitReader(writer.getvalue())
    Station.schema.read_codes(reader, Station.schema.numeric)
    with pytest.raises(DecodeError):
        Station.schema.read_blobs(reader)


def test_ref_field_json() -> None:
    field = RefField()
    assert field.to_json(NULL_REF) is None
    assert field.from_json({"id": 3}) == IdRef(3, 0)
    with pytest.raises(LocalProtocolError):
        field.from_json({"id": -1})


def test_reference_change_detection() -> None:
    world = World(CLASSES)
    a, b = world.spawn(Station), world.spawn(Station)
    ship = world.spawn(Ship)
    dock = Ship.schema.by_name["dock"]
    assert isinstance(dock, RefField)
    assert not dock.is_updated(ship)  # null, as before
    ship.dock = a
    assert dock.is_updated(ship)
    assert not dock.is_updated(ship)
    ship.dock = b
    assert dock.is_updated(ship)
    world.destroy(b)  # the reference is nulled: a change too
    assert dock.is_updated(ship)


def test_predict_must_name_a_continuous_vector_of_the_same_size() -> None:
    with pytest.raises(LocalProtocolError, match="predict"):

        class NoVelocity(NetworkObject):
            pos = Vec2Field(-1.0, 1.0, 0.01, predict="vel")

    with pytest.raises(LocalProtocolError, match="predict"):

        class WrongKind(NetworkObject):
            pos = Vec2Field(-1.0, 1.0, 0.01, predict="speed")
            speed = FloatField(0.0, 1.0, 0.01)

    class Good(NetworkObject):
        pos = Vec2Field(-1.0, 1.0, 0.01, predict="vel")
        vel = Vec2Field(-1.0, 1.0, 0.01)

    assert Good.schema.predict_from.tolist() == [2, 3, -1, -1]
