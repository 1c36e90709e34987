"""Abb. 3.13 payloads: exact sizes, round trips, error bounds, and only DecodeError on bad bytes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.smoothing import (
    ANGLE_UNIT,
    HERMITE_LAYOUT,
    INIT_SIZE,
    INTERPOLATION_LAYOUT,
    LENGTH_UNIT,
    PHB_LAYOUT,
    X4_LAYOUT,
    KinematicState,
    ModelCode,
    angle_difference,
    decode_init,
    dis_layout,
    encode_init,
    peek_entity_id,
)
from lagless.wire import DecodeError

LAYOUTS = {
    "dis0": dis_layout(0, time_compensation=False),
    "dis0+tc": dis_layout(0, time_compensation=True),
    "dis1": dis_layout(1, time_compensation=False),
    "dis1+tc": dis_layout(1, time_compensation=True),
    "dis2": dis_layout(2, time_compensation=False),
    "dis2+tc": dis_layout(2, time_compensation=True),
    "phb": PHB_LAYOUT,
    "interpolation": INTERPOLATION_LAYOUT,
    "hermite": HERMITE_LAYOUT,
    "x4": X4_LAYOUT,
}
# Abb. 3.13 totals (spec 000 §3.5) plus the documented extension sizes.
SIZES = {
    "dis1": 25,
    "dis1+tc": 33,
    "dis2": 33,
    "dis2+tc": 41,
    "phb": 21,
    "interpolation": 21,
    "dis0": 13,
    "dis0+tc": 21,
    "hermite": 29,
    "x4": 33,
}

LEN = st.floats(-1e4, 1e4, allow_nan=False)
STATES = st.builds(
    KinematicState,
    t=st.floats(-1e6, 1e6, allow_nan=False),
    x=LEN,
    y=LEN,
    vx=LEN,
    vy=LEN,
    ax=LEN,
    ay=LEN,
    heading=st.floats(-100, 100, allow_nan=False),
    angular_velocity=st.floats(-100, 100, allow_nan=False),
)


@pytest.mark.parametrize("name", sorted(SIZES))
def test_payload_sizes_exact(name: str) -> None:
    layout = LAYOUTS[name]
    assert layout.size == SIZES[name]
    assert len(layout.encode(7, KinematicState(x=1.0, vx=2.0, t=3.0))) == SIZES[name]


def test_init_size() -> None:
    assert INIT_SIZE == 43
    assert len(encode_init(1, ModelCode.PHB, KinematicState(), time_compensation=True)) == 43


@pytest.mark.parametrize("name", sorted(LAYOUTS))
@given(state=STATES, entity=st.integers(0, 255))
def test_round_trip_error_bound(name: str, state: KinematicState, entity: int) -> None:
    layout = LAYOUTS[name]
    data = layout.encode(entity, state)
    assert len(data) == layout.size
    decoded = layout.decode(data)
    assert decoded.entity_id == entity == peek_entity_id(data)
    s = decoded.state
    half = LENGTH_UNIT / 2 + 1e-9
    assert abs(s.x - state.x) <= half
    assert abs(s.y - state.y) <= half
    assert abs(angle_difference(s.heading, state.heading)) <= ANGLE_UNIT / 2 + 1e-9
    if layout.velocity:
        assert abs(s.vx - state.vx) <= half
        assert abs(s.vy - state.vy) <= half
    else:
        assert s.vx == s.vy == 0.0
    if layout.acceleration:
        assert abs(s.ax - state.ax) <= half
    if layout.angular_velocity:
        assert abs(s.angular_velocity - state.angular_velocity) <= 5e-7 + 1e-9
    if layout.timestamp:
        assert abs(s.t - state.t) <= 5e-7 + 1e-6
    # The re-encoded decode is byte-identical (canonical encoding).
    assert layout.encode(entity, s) == data


@pytest.mark.parametrize("name", sorted(LAYOUTS))
@given(data=st.binary(max_size=64))
def test_arbitrary_bytes_only_decode_error(name: str, data: bytes) -> None:
    layout = LAYOUTS[name]
    try:
        decoded = layout.decode(data)
    except DecodeError:
        assert len(data) != layout.size
    else:
        assert len(data) == layout.size
        assert math.isfinite(decoded.state.x)


def test_wrong_length() -> None:
    data = LAYOUTS["dis1"].encode(0, KinematicState())
    with pytest.raises(DecodeError, match="25 bytes"):
        LAYOUTS["dis1"].decode(data + b"\x00")
    with pytest.raises(DecodeError):
        LAYOUTS["dis1"].decode(data[:-1])


def test_out_of_range_raises() -> None:
    layout = LAYOUTS["dis2"]
    with pytest.raises(LocalProtocolError, match="x must be"):
        layout.encode(0, KinematicState(x=1e6))
    with pytest.raises(LocalProtocolError, match="vy must be finite"):
        layout.encode(0, KinematicState(vy=math.inf))
    with pytest.raises(LocalProtocolError, match="heading"):
        layout.encode(0, KinematicState(heading=math.nan))
    with pytest.raises(LocalProtocolError, match="entity_id"):
        layout.encode(256, KinematicState())


@given(state=STATES, entity=st.integers(0, 255), tc=st.booleans(), code=st.sampled_from(ModelCode))
def test_init_round_trip(state: KinematicState, entity: int, tc: bool, code: ModelCode) -> None:
    init = decode_init(encode_init(entity, code, state, time_compensation=tc))
    assert (init.entity_id, init.model, init.time_compensation) == (entity, code, tc)
    assert abs(init.state.x - state.x) <= LENGTH_UNIT / 2 + 1e-9
    assert abs(init.state.ax - state.ax) <= LENGTH_UNIT / 2 + 1e-9


@given(data=st.binary(min_size=INIT_SIZE, max_size=INIT_SIZE))
def test_init_arbitrary_bytes(data: bytes) -> None:
    try:
        init = decode_init(data)
    except DecodeError:
        assert data[1] not in {c.value for c in ModelCode} or data[2] & 0xFE
    else:
        assert init.model.value == data[1]


def test_init_rejects_bad_code_and_flags() -> None:
    good = bytearray(encode_init(0, ModelCode.DIS1, KinematicState(), time_compensation=False))
    bad_code = bytes(good[:1]) + b"\x63" + bytes(good[2:])
    with pytest.raises(DecodeError, match="model code"):
        decode_init(bad_code)
    good[2] = 0x80
    with pytest.raises(DecodeError, match="flag"):
        decode_init(bytes(good))
    with pytest.raises(DecodeError):
        decode_init(b"")
