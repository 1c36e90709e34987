"""Bit-packed messages of physics sync: input events, 20-Hz snapshots, the welcome, the goodbye.

Implements spec 004 §5.1.1 (the client sends one message per input event; the server's snapshot
holds position, velocity and orientation of every car, "velocities bitstream-compressed using a
configured min and max velocity") and §3.3.1 / §4.4.3 (range-quantised values in a bitstream),
with ``lagless.wire``'s ``BitWriter`` / ``BitReader``. Bits are LSB first (``lagless.wire``).

Layouts (each message starts with a 2-bit kind)::

    input     kind=0 | seq u16 | keys 4 | t f64                                   = 86 bits, 11 B
    snapshot  kind=1 | t f64 | count range(0..MAX_CARS) | count x car            2+64+7 bits + cars
      car     id u8 | x, y float | heading angle | vx, vy float | ω float | steer float | keys 4
              | input_seq u16
    welcome   kind=2 | car_id u8                                                   = 10 bits, 2 B
    goodbye   kind=3 | length range(0..MAX_GOODBYE_BYTES) | length x u8 (UTF-8)   9 bits + text

``t`` is an IEEE double (server time, s); the float fields follow ``SnapshotFormat`` (default
per car: 22 + 22 + 16 + 14 + 14 + 16 + 8 + 4 + 16 + 8 = 140 bits, 17.5 B).

Decisions:
    * The car's angular velocity, steering, keys and last applied input sequence ride along
      although the thesis sent only position, velocity and orientation: client-side prediction
      (spec 004 §7.2) rewinds the local car to the full server state. The Hermite views use
      position, velocity and heading only.
    * Out-of-range floats are clipped to their range on encode (``serialize_float``); the range
      and resolution are the documented error bound (``tests/physics/test_codec.py``).
    * The goodbye (issue 16 part 3, not in the thesis) is the server's last word before it
      disconnects a client: why (``server shutting down``), since a netcode disconnect packet
      carries no reason. Its text is at most ``MAX_GOODBYE_BYTES`` bytes of UTF-8; a decoder
      never allocates more, and text that is not UTF-8 is a ``DecodeError``.
    * Decoders raise only ``DecodeError`` (truncated data, a code beyond a range, a non-finite
      time, a goodbye that is not UTF-8, trailing bits) (``tests/property/test_fuzz_physics.py``,
      ``tests/ops/test_demo_ops.py``).
"""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError, LocalProtocolError
from lagless.physics.car import ALL_KEYS, CarState, Keys
from lagless.wire import (
    BitReader,
    BitStream,
    BitWriter,
    DecodeError,
    bits_for_range,
    dequantize_angle,
    quantize_angle,
)

__all__ = [
    "MAX_CARS",
    "MAX_GOODBYE_BYTES",
    "CarSnapshot",
    "Goodbye",
    "InputEvent",
    "MessageKind",
    "Snapshot",
    "SnapshotFormat",
    "Welcome",
    "decode_message",
    "encode_message",
]

MAX_CARS: Final = 64  # cars per snapshot: 64 x 17.5 B fits the 1200-byte payload budget
MAX_GOODBYE_BYTES: Final = 120  # UTF-8 bytes of a goodbye's reason (a 7-bit length)
_F64: Final = struct.Struct("<d")
_U64: Final = struct.Struct("<Q")


class MessageKind(enum.IntEnum):
    """The 2-bit kind that starts every physics message."""

    INPUT = 0
    SNAPSHOT = 1
    WELCOME = 2
    GOODBYE = 3


@dataclass(frozen=True, slots=True)
class SnapshotFormat:
    """Ranges and resolutions of the snapshot's quantised fields (both ends must agree)."""

    position_limit: float = 2048.0
    """Positions are clipped to ``[-limit, limit]``, m."""
    position_resolution: float = 0.001
    """Position step, m (error ≤ half of it)."""
    velocity_min: float = -50.0
    """Lowest velocity component, m/s (spec 004 §5.1.1 "configured min")."""
    velocity_max: float = 50.0
    """Highest velocity component, m/s (spec 004 §5.1.1 "configured max")."""
    velocity_resolution: float = 0.01
    """Velocity step, m/s."""
    angular_velocity_limit: float = 20.0
    """Turn rates are clipped to ``[-limit, limit]``, rad/s."""
    angular_velocity_resolution: float = 0.001
    """Turn-rate step, rad/s."""
    heading_bits: int = 16
    """Bits of the heading (error ≤ π / 2^bits rad)."""

    def __post_init__(self) -> None:
        """Validate; raise ``ConfigError`` naming the field."""
        checks = (
            ("position_limit", self.position_limit),
            ("position_resolution", self.position_resolution),
            ("velocity_resolution", self.velocity_resolution),
            ("angular_velocity_limit", self.angular_velocity_limit),
            ("angular_velocity_resolution", self.angular_velocity_resolution),
        )
        for name, value in checks:
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
        if not (math.isfinite(self.velocity_min) and self.velocity_min < self.velocity_max):
            raise ConfigError(
                f"velocity_min must be < velocity_max, got {self.velocity_min!r} "
                f"and {self.velocity_max!r}"
            )
        if not 4 <= self.heading_bits <= 32:
            raise ConfigError(f"heading_bits must be in [4, 32], got {self.heading_bits}")
        for lo, hi, res in self._ranges():
            if bits_for_range(lo, hi, res) > 32:
                raise ConfigError(f"range [{lo}, {hi}] at {res} needs more than 32 bits")

    def _ranges(self) -> tuple[tuple[float, float, float], ...]:
        p = self.position_limit
        w = self.angular_velocity_limit
        return (
            (-p, p, self.position_resolution),
            (self.velocity_min, self.velocity_max, self.velocity_resolution),
            (-w, w, self.angular_velocity_resolution),
        )

    @property
    def car_bits(self) -> int:
        """Return the bits of one car in a snapshot."""
        pos, vel, omega = (bits_for_range(*r) for r in self._ranges())
        return 8 + 2 * pos + self.heading_bits + 2 * vel + omega + _STEER_BITS + 4 + 16


_STEER_RESOLUTION: Final = 1.0 / 127.0
_STEER_BITS: Final = bits_for_range(-1.0, 1.0, _STEER_RESOLUTION)


@dataclass(frozen=True, slots=True, kw_only=True)
class InputEvent:
    """One key change of one client (guaranteed delivery, spec 004 §5.1.1)."""

    seq: int
    """Wrapping 16-bit number of the change (the first is 1)."""
    keys: Keys
    """Keys held from now on."""
    t: float
    """Sender's estimate of server time at the change, s (``NetworkEvent.getTimestamp``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CarSnapshot:
    """One car in a snapshot."""

    car_id: int
    """Car id, 0..255."""
    state: CarState
    """The car's state (quantised)."""
    input_seq: int
    """Sequence of the last input event the server applied to this car (0 = none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """The server's state of every car at server time ``t`` (20 Hz, spec 004 §5.1.1)."""

    t: float
    """Server time of the state, s."""
    cars: tuple[CarSnapshot, ...]
    """The cars, at most ``MAX_CARS``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Welcome:
    """The server's answer to a new client: which car it drives."""

    car_id: int
    """The client's car id, 0..255."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Goodbye:
    """The server's last message to a client before it disconnects it: the reason."""

    reason: str
    """Why, e.g. ``server shutting down``; at most ``MAX_GOODBYE_BYTES`` bytes of UTF-8."""


Message = InputEvent | Snapshot | Welcome | Goodbye


def _double(stream: BitStream, value: float) -> float:
    raw = stream.serialize_bits(_U64.unpack(_F64.pack(value))[0] if stream.is_writing else 0, 64)
    result = float(_F64.unpack(_U64.pack(raw))[0])
    if not math.isfinite(result):
        raise DecodeError("time is not finite")
    return result


def _car(stream: BitStream, car: CarSnapshot, fmt: SnapshotFormat) -> CarSnapshot:
    s = car.state
    p, pr = fmt.position_limit, fmt.position_resolution
    v0, v1, vr = fmt.velocity_min, fmt.velocity_max, fmt.velocity_resolution
    w, wr = fmt.angular_velocity_limit, fmt.angular_velocity_resolution
    car_id = stream.serialize_uint(car.car_id, 8)
    x = stream.serialize_float(s.x, -p, p, pr)
    y = stream.serialize_float(s.y, -p, p, pr)
    code = quantize_angle(s.heading, fmt.heading_bits) if stream.is_writing else 0
    code = stream.serialize_uint(code, fmt.heading_bits)
    heading = math.remainder(dequantize_angle(code, fmt.heading_bits), 2.0 * math.pi)
    vx = stream.serialize_float(s.vx, v0, v1, vr)
    vy = stream.serialize_float(s.vy, v0, v1, vr)
    omega = stream.serialize_float(s.angular_velocity, -w, w, wr)
    steer = stream.serialize_float(s.steer, -1.0, 1.0, _STEER_RESOLUTION)
    keys = stream.serialize_uint(int(s.keys), 4)
    seq = stream.serialize_uint(car.input_seq, 16)
    state = CarState(
        x=x,
        y=y,
        heading=heading,
        vx=vx,
        vy=vy,
        angular_velocity=omega,
        steer=steer,
        keys=Keys(keys & ALL_KEYS),
    )
    return CarSnapshot(car_id=car_id, state=state, input_seq=seq)


def encode_message(message: Message, fmt: SnapshotFormat) -> bytes:
    """Bit-pack one message.

    Args:
        message: An input event, snapshot, welcome or goodbye.
        fmt: The snapshot field ranges.

    Returns:
        The bytes (zero-padded to a whole byte).

    Raises:
        LocalProtocolError: A field is out of its range (a sequence beyond 16 bits, a car id beyond
            255, more than ``MAX_CARS`` cars, a non-finite time, a goodbye's reason longer than
            ``MAX_GOODBYE_BYTES`` bytes of UTF-8).
    """
    w = BitWriter()
    if isinstance(message, InputEvent):
        w.serialize_uint(MessageKind.INPUT, 2)
        w.serialize_uint(message.seq, 16)
        w.serialize_uint(int(message.keys), 4)
        _check_time(message.t)
        _double(w, message.t)
    elif isinstance(message, Snapshot):
        w.serialize_uint(MessageKind.SNAPSHOT, 2)
        _check_time(message.t)
        _double(w, message.t)
        w.serialize_range(len(message.cars), 0, MAX_CARS)
        for car in message.cars:
            _car(w, car, fmt)
    elif isinstance(message, Welcome):
        w.serialize_uint(MessageKind.WELCOME, 2)
        w.serialize_uint(message.car_id, 8)
    else:
        w.serialize_uint(MessageKind.GOODBYE, 2)
        w.serialize_bytes(message.reason.encode("utf-8"), MAX_GOODBYE_BYTES)
    return w.getvalue()


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise DecodeError("a goodbye's reason is not UTF-8") from None


def _check_time(t: float) -> None:
    if not math.isfinite(t):
        raise LocalProtocolError(f"t must be finite, got {t!r}")


def decode_message(data: bytes, fmt: SnapshotFormat) -> Message:
    """Decode one message.

    Args:
        data: The bytes received.
        fmt: The snapshot field ranges (the sender's).

    Returns:
        The message.

    Raises:
        DecodeError: Truncated data, a value beyond its range, a non-finite time, a goodbye
            that is not UTF-8 or trailing bits; nothing else.
    """
    r = BitReader(data)
    kind = r.serialize_uint(0, 2)
    message: Message
    if kind == MessageKind.INPUT:
        seq = r.serialize_uint(0, 16)
        keys = Keys(r.serialize_uint(0, 4))
        message = InputEvent(seq=seq, keys=keys, t=_double(r, 0.0))
    elif kind == MessageKind.SNAPSHOT:
        t = _double(r, 0.0)
        count = r.serialize_range(0, 0, MAX_CARS)
        blank = CarSnapshot(car_id=0, state=CarState(), input_seq=0)
        cars = tuple(_car(r, blank, fmt) for _ in range(count))
        message = Snapshot(t=t, cars=cars)
    elif kind == MessageKind.WELCOME:
        message = Welcome(car_id=r.serialize_uint(0, 8))
    else:
        message = Goodbye(reason=_text(r.serialize_bytes(b"", MAX_GOODBYE_BYTES)))
    left = r.bits_remaining
    if left >= 8 or r.serialize_bits(0, left) != 0:
        raise DecodeError(f"{left} trailing bits after a physics message")
    return message
