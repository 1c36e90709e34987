"""Fuzz the physics-sync decoders (DESIGN.md "Bad input", issue 14 "every new message decoder").

``decode_message`` (input events, snapshots, welcomes of ``lagless.physics.codec``) raises only
``DecodeError``; whatever it accepts re-encodes to the same bytes, so nothing is half-read. The
objects that call it (``PhysicsServer``, ``PhysicsClient``) take any datagram without raising.
"""

from __future__ import annotations

import contextlib
import math
import random

from hypothesis import given
from hypothesis import strategies as st

from lagless.physics import (
    MAX_CARS,
    CarSnapshot,
    CarState,
    ClientConfig,
    InputEvent,
    Keys,
    PhysicsClient,
    PhysicsParams,
    PhysicsServer,
    ServerConfig,
    Snapshot,
    SnapshotFormat,
    Welcome,
    decode_message,
    encode_message,
)
from lagless.transport import Client, NetcodeClientConfig, NetcodeServerConfig, Server
from lagless.wire import DecodeError
from tests.property.fuzzing import FUZZ, fuzz_bytes, scaled

FMT = SnapshotFormat()
keys = st.integers(0, 15).map(Keys)
times = st.floats(0.0, 1e9, allow_nan=False)
states = st.builds(
    CarState,
    x=st.floats(-3000.0, 3000.0),
    y=st.floats(-3000.0, 3000.0),
    heading=st.floats(-10.0, 10.0),
    vx=st.floats(-80.0, 80.0),
    vy=st.floats(-80.0, 80.0),
    angular_velocity=st.floats(-30.0, 30.0),
    steer=st.floats(-1.0, 1.0),
    keys=keys,
)
cars = st.builds(
    CarSnapshot, car_id=st.integers(0, 255), state=states, input_seq=st.integers(0, 0xFFFF)
)
messages = st.one_of(
    st.builds(InputEvent, seq=st.integers(0, 0xFFFF), keys=keys, t=times),
    st.builds(Snapshot, t=times, cars=st.lists(cars, max_size=4).map(tuple)),
    st.builds(Welcome, car_id=st.integers(0, 255)),
)
encoded = messages.map(lambda m: encode_message(m, FMT))


@FUZZ
@given(fuzz_bytes(encoded))
def test_decode_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        message = decode_message(data, FMT)
        assert encode_message(message, FMT) == data
        if isinstance(message, Snapshot):
            assert len(message.cars) <= MAX_CARS
            assert math.isfinite(message.t)


@FUZZ
@given(messages)
def test_valid_messages_decode(message: InputEvent | Snapshot | Welcome) -> None:
    decoded = decode_message(encode_message(message, FMT), FMT)
    assert type(decoded) is type(message)


def _objects() -> tuple[PhysicsServer, PhysicsClient]:
    server = PhysicsServer(
        transport=Server(
            config=NetcodeServerConfig(
                protocol_id=7, public_address=("server", 9000), insecure=True
            ),
            random_bytes=random.Random(1).randbytes,
        ),
        params=PhysicsParams(),
        config=ServerConfig(),
        rng=random.Random(2),
        start=0.0,
    )
    client = PhysicsClient(
        transport=Client(config=NetcodeClientConfig(insecure=True)),
        params=PhysicsParams(network_simulated_latency=0.01),
        config=ClientConfig(),
        rng=random.Random(3),
    )
    client.transport.connect_insecure(
        server_addresses=[("server", 9000)], protocol_id=7, client_id=1, now=0.0
    )
    return server, client


@scaled(0.3)
@given(st.lists(fuzz_bytes(encoded), max_size=8))
def test_objects_take_any_datagram(datagrams: list[bytes]) -> None:
    server, client = _objects()
    now = 0.0
    for data in datagrams:
        now += 0.01
        for obj in (server, client):
            obj.receive_datagram(data, ("server", 9000), now)
            obj.handle_timer(now)
            obj.datagrams_to_send(now)
            assert obj.next_timer() is not None
    assert server.dropped_messages == 0  # garbage never got past the transport
