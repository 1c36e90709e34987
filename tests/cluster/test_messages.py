"""The cluster's wire messages: every kind round-trips, and no byte string makes decode raise."""

from __future__ import annotations

import math
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.cluster.messages import (
    Border,
    CarRecord,
    Handoff,
    Input,
    ServerStats,
    Snapshot,
    Stats,
    Stop,
    decode,
    encode,
)
from lagless.physics import CarState, Keys

f32 = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, width=32)
keys = st.integers(0, 15).map(Keys)
states = st.builds(
    CarState,
    x=f32,
    y=f32,
    heading=f32,
    vx=f32,
    vy=f32,
    angular_velocity=f32,
    steer=f32,
    keys=keys,
)
records = st.builds(
    CarRecord,
    player=st.integers(0, 0xFFFF),
    generation=st.integers(0, 0xFFFFFFFF),
    input_seq=st.integers(0, 0xFFFFFFFF),
    state=states,
)
u8 = st.integers(0, 0xFF)
ticks = st.integers(0, 2**64 - 1)
cars = st.lists(records, max_size=8).map(tuple)
messages = st.one_of(
    st.builds(
        Snapshot,
        u8,
        ticks,
        st.lists(st.tuples(st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF)), max_size=4).map(
            tuple
        ),
        cars,
    ),
    st.builds(Border, u8, ticks, st.integers(0, 0xFFFF), cars),
    st.builds(Handoff, u8, u8, ticks, records),
    st.builds(Input, st.integers(0, 0xFFFF), st.integers(0, 0xFFFFFFFF), keys),
    st.just(Stop()),
    st.builds(
        Stats,
        st.builds(
            ServerStats,
            server=u8,
            ticks=st.integers(0, 10**9),
            tick_ms_avg=st.floats(0, 100),
            tick_ms_p99=st.floats(0, 100),
            tick_ms_max=st.floats(0, 100),
            cpu_ms_avg=st.floats(0, 100),
            cars=st.integers(0, 256),
            ghosts=st.integers(0, 256),
            cells=st.integers(0, 64),
            handoffs_sent=st.integers(0, 10**6),
            handoffs_accepted=st.integers(0, 10**6),
            takeovers=st.integers(0, 64),
            cars_adopted=st.integers(0, 256),
            cars_reclaimed=st.integers(0, 256),
            duplicates_dropped=st.integers(0, 256),
            late_handoffs=st.integers(0, 10**6),
            ticks_skipped=st.integers(0, 10**6),
            final=st.booleans(),
        ),
    ),
)


@given(messages)
def test_every_message_round_trips(message: object) -> None:
    assert decode(encode(message)) == message  # type: ignore[arg-type]


@given(st.binary(max_size=400))
@settings(max_examples=400)
def test_garbage_never_raises(data: bytes) -> None:
    message = decode(data)
    assert message is None or decode(encode(message)) == message


@given(messages, st.data())
def test_truncated_or_extended_payloads_are_rejected(message: object, data: st.DataObject) -> None:
    payload = encode(message)  # type: ignore[arg-type]
    cut = data.draw(st.integers(0, len(payload) - 1))
    shorter = decode(payload[:cut])
    assert shorter is None or isinstance(shorter, Stats | Stop) or shorter != message
    if not isinstance(message, Stats):
        assert decode(payload + b"\x00") is None


@given(messages, st.data())
def test_flipped_bytes_never_raise(message: object, data: st.DataObject) -> None:
    payload = bytearray(encode(message))  # type: ignore[arg-type]
    index = data.draw(st.integers(0, len(payload) - 1))
    payload[index] = data.draw(st.integers(0, 255))
    decode(bytes(payload))


def test_a_count_beyond_the_payload_is_rejected_without_allocating() -> None:
    header = struct.pack("<BBQHH", 1, 0, 5, 0, 0xFFFF)
    assert decode(header) is None
    assert decode(struct.pack("<BBQHH", 1, 0, 5, 0xFFFF, 0)) is None


def test_non_finite_floats_and_unknown_keys_are_rejected() -> None:
    record = CarRecord(3, 1, 2, CarState(x=1.0, y=2.0))
    good = encode(Handoff(0, 1, 9, record))
    assert decode(good) == Handoff(0, 1, 9, record)
    nan = bytearray(good)
    nan[-28:-24] = struct.pack("<f", math.nan)
    assert decode(bytes(nan)) is None
    bad_keys = bytearray(good)
    bad_keys[struct.calcsize("<BBBQ") + 10] = 0x10
    assert decode(bytes(bad_keys)) is None
    assert decode(struct.pack("<BHIB", 4, 1, 1, 0x20)) is None
    assert decode(b"") is None
    assert decode(b"\x06{not json") is None
    assert decode(b'\x06{"serv\xffer": 1}') is None  # msgspec raises UnicodeDecodeError here
