"""VfcClient: object pool with ownership, client rounds, queued calls (spec 001 §3.5, §3.8)."""

from __future__ import annotations

import pytest

from lagless.errors import LocalProtocolError
from lagless.interest.control import UPDATE_CHANNEL
from lagless.interest.records import CubeOriObj
from lagless.interest.view import normal_view

from .test_server import World


def test_calls_before_welcome_are_queued() -> None:
    world = World()
    a = world.add_client(1)
    a.poke(lambda c: c.add_object(CubeOriObj(id=5)))
    a.poke(lambda c: c.set_view(normal_view(0.125), [5]))
    assert a.obj.client_id is None
    assert not a.obj.is_connected()
    world.run(0.5)
    assert a.obj.is_connected()
    assert world.server.obj.object_ids == [5]
    assert a.obj.get_view() is not None


def test_unchanged_objects_are_not_sent() -> None:
    world = World()
    a = world.add_client(1)
    a.poke(lambda c: c.add_object(CubeOriObj(id=5)))
    world.run(0.5)
    updates: list[int] = []
    original = a.obj.transport.send

    def spy(channel: int, payload: bytes) -> int:
        if channel == UPDATE_CHANNEL:
            updates.append(len(payload))
        return original(channel, payload)

    a.obj.transport.send = spy  # type: ignore[method-assign]
    world.run(1.0)
    assert updates == []
    a.obj.get_object_ref(5).x = 3.0
    world.run(0.5)
    assert len(updates) == 1
    a.obj.get_object_ref(5).x = 3.0 + 1e-4  # below the 1/128 m quantum: not a change
    world.run(0.5)
    assert len(updates) == 1


def test_ownership_rules() -> None:
    world = World()
    a, b = world.add_client(1), world.add_client(2)
    a.poke(lambda c: c.add_object(CubeOriObj(id=5, x=1.0)))
    b.poke(lambda c: c.add_object(CubeOriObj(id=6, x=2.0)))
    world.run(1.0)
    with pytest.raises(LocalProtocolError):
        a.obj.del_object(6)
    with pytest.raises(LocalProtocolError):
        a.obj.add_object(CubeOriObj(id=5))
    with pytest.raises(LocalProtocolError):
        a.obj.get_object_ref(99)
    a.poke(lambda c: c.set_client_id(42))
    world.run(0.5)
    assert a.obj.client_id == 42
    assert 42 in world.server.obj.client_ids
