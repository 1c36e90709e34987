"""VfcClient: object pool with ownership, client rounds, queued calls (spec 001 §3.5, §3.8)."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.errors import LocalProtocolError
from lagless.interest.client import KEPT_SENDS, MAX_QUEUED_CONTROLS, VfcClient
from lagless.interest.control import (
    CONTROL_CHANNEL,
    UPDATE_CHANNEL,
    ObjectDeleted,
    Welcome,
    encode_control,
)
from lagless.interest.records import RECORD_DTYPE, CubeOriObj, write_delta_datagram
from lagless.interest.view import normal_view
from lagless.transport import SendQueueFull
from lagless.transport.client import Client
from lagless.transport.netcode_client import NetcodeClientConfig
from tests.interest.send_spy import Send, spy_on_send

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

    def spy(original: Send) -> Send:
        def send(channel: int, payload: bytes) -> int | None:
            if channel == UPDATE_CHANNEL:
                updates.append(len(payload))
            return original(channel, payload)

        return send

    spy_on_send(a.obj, spy)
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


def test_delta_client_rejects_stale_and_missing() -> None:
    client = VfcClient(Client(config=NetcodeClientConfig(insecure=True)))
    client._on_control(encode_control(Welcome(client_id=3, encoding="delta")), 1.0)
    store = client._delta
    assert store is not None
    assert client.encoding == "delta"
    first = CubeOriObj(id=9, x=10.0).to_record()
    second = CubeOriObj(id=9, x=11.0).to_record()
    client._on_delta(store, write_delta_datagram(100, first, np.zeros(1, RECORD_DTYPE), [1], [0]))
    assert client.get_object_ref(9).x == 10.0
    assert (store.newest, store.ack_bits) == (100, 0)
    client._on_delta(store, write_delta_datagram(102, second, first, [2], [1]))
    assert client.get_object_ref(9).x == 11.0
    assert (store.newest, store.ack_bits) == (102, 0b10)
    # an older datagram arriving late is acknowledged and kept, but never overwrites the replica
    client._on_delta(store, write_delta_datagram(101, first, first, [5], [1]))
    assert client.get_object_ref(9).x == 11.0
    assert store.ack_bits == 0b11
    # a baseline the client never decoded: skipped, counted, not acknowledged
    client._on_delta(store, write_delta_datagram(103, first, second, [6], [77]))
    assert client.drops["missing_baseline"] == 1
    assert store.newest == 102
    # relative to tag 2: everything sent before that baseline is pruned
    client._on_delta(store, write_delta_datagram(104, first, second, [7], [2]))
    assert sorted(store.sends[9]) == [2, 7]
    assert client.get_object_ref(9).x == 10.0
    # far behind the newest: dropped unacknowledged
    client._on_delta(store, write_delta_datagram(104 - 65, second, first, [8], [7]))
    assert client.drops["stale_update"] == 1
    assert client.get_object_ref(9).x == 10.0
    client._on_delta(store, b"\x01")
    assert client.drops["malformed_update"] == 1


def test_delta_client_keeps_a_bounded_number_of_sends() -> None:
    client = VfcClient(Client(config=NetcodeClientConfig(insecure=True)))
    client._on_control(encode_control(Welcome(client_id=3, encoding="delta")), 1.0)
    store = client._delta
    assert store is not None
    zero = np.zeros(1, RECORD_DTYPE)
    for k in range(3 * KEPT_SENDS):
        record = CubeOriObj(id=4, x=float(k)).to_record()
        client._on_delta(store, write_delta_datagram(k, record, zero, [k % 255 + 1], [0]))
    assert len(store.sends[4]) == KEPT_SENDS
    assert len(store.records) == KEPT_SENDS
    assert min(store.sends[4].values()) == 2 * KEPT_SENDS
    client._on_control(encode_control(ObjectDeleted(object_id=4)), 2.0)
    assert store.records == {}
    assert 4 not in client.object_ids()


def test_full_control_queue_raises_and_changes_nothing() -> None:
    world = World()
    a = world.add_client(1)
    a.poke(lambda c: c.add_object(CubeOriObj(id=5)))
    a.poke(lambda c: c.set_view(normal_view(0.125), [5]))
    world.run(0.5)
    view = a.obj.get_view()

    def full(original: Send) -> Send:
        def send(channel: int, payload: bytes) -> int | None:
            if channel == CONTROL_CHANNEL:  # a server that stopped acking filled the channel
                raise SendQueueFull("channel 0 holds send_queue_limit=1024 unacked messages")
            return original(channel, payload)

        return send

    undo = spy_on_send(a.obj, full)
    with pytest.raises(SendQueueFull):
        a.obj.add_object(CubeOriObj(id=6))
    assert a.obj.object_ids() == [5]  # nothing changed: the call may be retried
    with pytest.raises(SendQueueFull):
        a.obj.del_object(5)
    assert a.obj.get_object_ref(5).id == 5
    with pytest.raises(SendQueueFull):
        a.obj.set_view(normal_view(0.5), [5])
    assert a.obj.get_view() == view
    undo()
    a.obj.add_object(CubeOriObj(id=6))  # retried once there is room
    world.run(0.5)
    assert world.server.obj.object_ids == [5, 6]
    spy_on_send(a.obj, full)
    a.obj.disconnect()  # the Leave cannot be queued: the client still leaves, counted
    assert a.obj.drops["leave_queue_full"] == 1
    assert a.obj.client_id is None


def test_calls_before_welcome_are_bounded() -> None:
    world = World()
    a = world.add_client(1)
    for object_id in range(MAX_QUEUED_CONTROLS):
        a.obj.add_object(CubeOriObj(id=object_id))
    with pytest.raises(SendQueueFull):
        a.obj.add_object(CubeOriObj(id=MAX_QUEUED_CONTROLS))
    assert len(a.obj.object_ids()) == MAX_QUEUED_CONTROLS
    world.run(1.0)
    assert len(world.server.obj.object_ids) == MAX_QUEUED_CONTROLS
