"""Physics messages (spec 004 §5.1.1, §3.3.1): sizes, round trips within bounds, errors."""

from __future__ import annotations

import math

import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.physics import (
    MAX_CARS,
    CarSnapshot,
    CarState,
    InputEvent,
    Keys,
    Snapshot,
    SnapshotFormat,
    Welcome,
    decode_message,
    encode_message,
)
from lagless.wire import DecodeError

FMT = SnapshotFormat()
STATE = CarState(
    x=123.4567,
    y=-45.6789,
    heading=-2.5,
    vx=19.876,
    vy=-3.21,
    angular_velocity=0.4321,
    steer=-0.37,
    keys=Keys.UP | Keys.RIGHT,
)


def test_sizes() -> None:
    assert FMT.car_bits == 140
    assert len(encode_message(InputEvent(seq=1, keys=Keys.UP, t=1.0), FMT)) == 11
    assert len(encode_message(Welcome(car_id=3), FMT)) == 2
    one = Snapshot(t=5.0, cars=(CarSnapshot(car_id=1, state=STATE, input_seq=9),))
    assert len(encode_message(one, FMT)) == math.ceil((2 + 64 + 7 + 140) / 8)


def test_snapshot_round_trip_within_bounds() -> None:
    cars = tuple(CarSnapshot(car_id=k, state=STATE, input_seq=65535 - k) for k in range(3))
    decoded = decode_message(encode_message(Snapshot(t=1234.5678, cars=cars), FMT), FMT)
    assert isinstance(decoded, Snapshot)
    assert decoded.t == 1234.5678  # the time is an exact double
    for k, car in enumerate(decoded.cars):
        s = car.state
        assert car.car_id == k
        assert car.input_seq == 65535 - k
        assert abs(s.x - STATE.x) <= FMT.position_resolution / 2 + 1e-9
        assert abs(s.y - STATE.y) <= FMT.position_resolution / 2 + 1e-9
        assert abs(s.vx - STATE.vx) <= FMT.velocity_resolution / 2 + 1e-9
        assert abs(s.vy - STATE.vy) <= FMT.velocity_resolution / 2 + 1e-9
        assert abs(s.angular_velocity - STATE.angular_velocity) <= 0.0005 + 1e-9
        assert abs(math.remainder(s.heading - STATE.heading, 2 * math.pi)) <= math.pi / 2**16
        assert abs(s.steer - STATE.steer) <= 1 / 254 + 1e-9
        assert s.keys == STATE.keys


def test_velocity_is_range_compressed_and_clipped() -> None:
    fast = CarState(vx=80.0, vy=-80.0)
    out = decode_message(
        encode_message(
            Snapshot(t=0.0, cars=(CarSnapshot(car_id=0, state=fast, input_seq=0),)), FMT
        ),
        FMT,
    )
    assert isinstance(out, Snapshot)
    assert (out.cars[0].state.vx, out.cars[0].state.vy) == (FMT.velocity_max, FMT.velocity_min)
    narrow = SnapshotFormat(velocity_min=-10.0, velocity_max=10.0, velocity_resolution=0.1)
    assert narrow.car_bits == FMT.car_bits - 2 * (14 - 8)  # 201 steps: 8 bits instead of 14


def test_input_and_welcome_round_trip() -> None:
    event = InputEvent(seq=65535, keys=Keys.DOWN | Keys.LEFT, t=98765.4321)
    assert decode_message(encode_message(event, FMT), FMT) == event
    assert decode_message(encode_message(Welcome(car_id=255), FMT), FMT) == Welcome(car_id=255)


def test_encode_rejects_out_of_range() -> None:
    with pytest.raises(LocalProtocolError):
        encode_message(InputEvent(seq=65536, keys=Keys.UP, t=0.0), FMT)
    with pytest.raises(LocalProtocolError):
        encode_message(InputEvent(seq=1, keys=Keys.UP, t=math.inf), FMT)
    car = CarSnapshot(car_id=0, state=CarState(), input_seq=0)
    with pytest.raises(LocalProtocolError):
        encode_message(Snapshot(t=0.0, cars=(car,) * (MAX_CARS + 1)), FMT)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x03",  # kind 3 does not exist
        encode_message(InputEvent(seq=1, keys=Keys.UP, t=1.0), FMT)[:-1],  # truncated
        encode_message(Welcome(car_id=1), FMT) + b"\x00",  # trailing byte
        bytes([0b01]) + b"\xff" * 8 + b"\x00",  # snapshot with a NaN time
    ],
)
def test_decode_rejects(data: bytes) -> None:
    with pytest.raises(DecodeError):
        decode_message(data, FMT)


def test_format_validation() -> None:
    with pytest.raises(ConfigError, match="velocity_min"):
        SnapshotFormat(velocity_min=5.0, velocity_max=5.0)
    with pytest.raises(ConfigError, match="position_resolution"):
        SnapshotFormat(position_resolution=0.0)
    with pytest.raises(ConfigError, match="32 bits"):
        SnapshotFormat(position_resolution=1e-9)
