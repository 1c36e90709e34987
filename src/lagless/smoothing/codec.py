"""Fixed-layout update and init payloads of the display models (spec 000 §3.5, Abb. 3.13).

Implements the ``createUpdateValues`` / ``processUpdate`` and ``createInitValues`` /
``processInitValues`` byte layouts of spec 000 §3.5. Abb. 3.13 counts Java types (``int`` = 4 B,
``long`` = 8 B); this module keeps those widths exactly, so the totals are byte-for-byte the
thesis's: DIS-DR 1st 25 / 33 B (without / with TC), DIS-DR 2nd 33 / 41 B, PHB-DR 21 B,
interpolation 21 B.

Update layout (fields in this order, little-endian, each present only if the layout has it)::

    offset size field                 type  unit on the wire
    0      1    entity id             u8    0..255
    1      8    position x, y         2xi32 1e-4 m            (±214.7 km)
    9      4    orientation           u32   2π/2³² rad        (whole turn, wraps)
    .      8    linear velocity x, y  2xi32 1e-4 m/s          (DIS-DR 1st, 2nd, spec-004 Hermite)
    .      8    linear accel. x, y    2xi32 1e-4 m/s²         (DIS-DR 2nd, X4)
    .      4    angular velocity      i32   1e-6 rad/s        (DIS-DR 1st, 2nd, X4)
    .      8    timestamp             i64   1e-6 s server time (TC, PHB, interpolation, Hermite)

Init layout (``INIT_SIZE`` = 43 B): entity id u8, model code u8 (``ModelCode``), flags u8 (bit 0:
time compensation), then every update field (position, orientation, velocity, acceleration,
angular velocity, timestamp).

Decisions:

* Java's ``int``/``long`` become fixed-point ``i32``/``i64`` at the resolutions above, not IEEE
  floats: the widths match Abb. 3.13 and the quantisation error is stated (half a step:
  5e-5 m, 5e-5 m/s, 5e-5 m/s², 7.3e-10 rad, 5e-7 rad/s, 5e-7 s)
  (``test_codec.py::test_round_trip_error_bound``).
* Little-endian, as every other lagless byte-aligned codec (``lagless.wire.Buffer``).
* A value outside its field's range or not finite is the caller's mistake: ``LocalProtocolError``
  naming the field (``test_codec.py::test_out_of_range_raises``). Any payload of exactly the right
  length decodes; any other length raises ``DecodeError`` (``test_codec.py::test_wrong_length``).
* Order 0 DR (an extension: Abb. 3.13 has no order-0 column) sends id, position and orientation:
  13 B, 21 B with TC. The spec-004 Hermite model sends id, position, orientation, velocity and
  timestamp: 29 B. X4 (spec 003 §4.3) replicates position, rotation, velocity (linear, angular) and
  acceleration: the DIS-DR 2nd layout without timestamp, 33 B.
"""

from __future__ import annotations

import enum
import math
import struct
from dataclasses import dataclass, field
from typing import Final

from lagless.errors import LocalProtocolError
from lagless.smoothing.state import KinematicState, wrap_angle
from lagless.wire import DecodeError

__all__ = [
    "ANGLE_UNIT",
    "ANGULAR_VELOCITY_UNIT",
    "INIT_SIZE",
    "LENGTH_UNIT",
    "TIME_UNIT",
    "DecodedInit",
    "DecodedUpdate",
    "ModelCode",
    "UpdateLayout",
    "decode_init",
    "encode_init",
    "peek_entity_id",
]

LENGTH_UNIT: Final = 1e-4  # metres (also m/s and m/s²) per i32 step
ANGLE_UNIT: Final = 2.0 * math.pi / 2**32  # radians per u32 orientation step
ANGULAR_VELOCITY_UNIT: Final = 1e-6  # rad/s per i32 step
TIME_UNIT: Final = 1e-6  # seconds per i64 timestamp step
_I32_MIN: Final = -(2**31)
_I32_MAX: Final = 2**31 - 1
_I64_MIN: Final = -(2**63)
_I64_MAX: Final = 2**63 - 1
_FLAG_TC: Final = 0x01


class ModelCode(enum.IntEnum):
    """The display model a payload belongs to (the init payload's second byte)."""

    DIS0 = 0
    DIS1 = 1
    DIS2 = 2
    PHB = 3
    INTERPOLATION = 4
    HERMITE = 5
    X4 = 6


def _fixed(value: float, unit: float, lo: int, hi: int, name: str) -> int:
    if not math.isfinite(value):
        raise LocalProtocolError(f"{name} must be finite, got {value}")
    code = math.floor(value / unit + 0.5)
    if not lo <= code <= hi:
        raise LocalProtocolError(
            f"{name} must be in [{lo * unit:g}, {hi * unit:g}] to fit its field, got {value}"
        )
    return code


def _angle_code(heading: float) -> int:
    if not math.isfinite(heading):
        raise LocalProtocolError(f"heading must be finite, got {heading}")
    return math.floor((heading % (2.0 * math.pi)) / ANGLE_UNIT + 0.5) % 2**32


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodedUpdate:
    """An update payload after decoding."""

    entity_id: int
    """Entity id from byte 0 (0..255)."""
    state: KinematicState
    """The transmitted state; absent fields are 0 and ``t`` is the timestamp (s) or 0.0."""
    timestamped: bool
    """True when the payload carried a timestamp."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateLayout:
    """Which Abb. 3.13 fields an update payload carries; encodes and decodes it.

    The ``size`` is the exact payload length in bytes.
    """

    velocity: bool
    """Carries linear velocity (2 x i32)."""
    acceleration: bool
    """Carries linear acceleration (2 x i32)."""
    angular_velocity: bool
    """Carries angular velocity (i32)."""
    timestamp: bool
    """Carries the i64 timestamp in server time."""
    _struct: struct.Struct = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """Precompile the ``struct.Struct`` for this field set."""
        fmt = "<BiiI"
        fmt += "ii" if self.velocity else ""
        fmt += "ii" if self.acceleration else ""
        fmt += "i" if self.angular_velocity else ""
        fmt += "q" if self.timestamp else ""
        object.__setattr__(self, "_struct", struct.Struct(fmt))

    @property
    def size(self) -> int:
        """Return the payload size in bytes."""
        return self._struct.size

    def encode(self, entity_id: int, state: KinematicState) -> bytes:
        """Encode ``state`` as an update payload.

        Args:
            entity_id: Entity id, 0..255.
            state: The state to send; ``state.t`` is the timestamp (s, server time).

        Returns:
            Exactly ``size`` bytes.

        Raises:
            LocalProtocolError: A value is not finite or does not fit its field.
        """
        if not 0 <= entity_id <= 255:
            raise LocalProtocolError(f"entity_id must be in [0, 255], got {entity_id}")
        values: list[int] = [
            entity_id,
            _fixed(state.x, LENGTH_UNIT, _I32_MIN, _I32_MAX, "x"),
            _fixed(state.y, LENGTH_UNIT, _I32_MIN, _I32_MAX, "y"),
            _angle_code(state.heading),
        ]
        if self.velocity:
            values.append(_fixed(state.vx, LENGTH_UNIT, _I32_MIN, _I32_MAX, "vx"))
            values.append(_fixed(state.vy, LENGTH_UNIT, _I32_MIN, _I32_MAX, "vy"))
        if self.acceleration:
            values.append(_fixed(state.ax, LENGTH_UNIT, _I32_MIN, _I32_MAX, "ax"))
            values.append(_fixed(state.ay, LENGTH_UNIT, _I32_MIN, _I32_MAX, "ay"))
        if self.angular_velocity:
            values.append(
                _fixed(
                    state.angular_velocity,
                    ANGULAR_VELOCITY_UNIT,
                    _I32_MIN,
                    _I32_MAX,
                    "angular_velocity",
                )
            )
        if self.timestamp:
            values.append(_fixed(state.t, TIME_UNIT, _I64_MIN, _I64_MAX, "t"))
        return self._struct.pack(*values)

    def decode(self, data: bytes) -> DecodedUpdate:
        """Decode an update payload.

        Args:
            data: The payload bytes from the network.

        Returns:
            The decoded update.

        Raises:
            DecodeError: ``len(data)`` is not ``size``.
        """
        if len(data) != self._struct.size:
            raise DecodeError(f"update payload must be {self._struct.size} bytes, got {len(data)}")
        values = self._struct.unpack(data)
        entity_id, qx, qy, qh = values[:4]
        rest = list(values[4:])
        vx = vy = ax = ay = omega = t = 0.0
        if self.velocity:
            vx, vy = rest.pop(0) * LENGTH_UNIT, rest.pop(0) * LENGTH_UNIT
        if self.acceleration:
            ax, ay = rest.pop(0) * LENGTH_UNIT, rest.pop(0) * LENGTH_UNIT
        if self.angular_velocity:
            omega = rest.pop(0) * ANGULAR_VELOCITY_UNIT
        if self.timestamp:
            t = rest.pop(0) * TIME_UNIT
        state = KinematicState(
            t=t,
            x=qx * LENGTH_UNIT,
            y=qy * LENGTH_UNIT,
            vx=vx,
            vy=vy,
            ax=ax,
            ay=ay,
            heading=wrap_angle(qh * ANGLE_UNIT),
            angular_velocity=omega,
        )
        return DecodedUpdate(entity_id=entity_id, state=state, timestamped=self.timestamp)

    def quantized(self, state: KinematicState) -> KinematicState:
        """Return ``state`` as the receiver will decode it (sender ghosts use this).

        Args:
            state: The state to send.

        Returns:
            The state after an encode/decode round trip; ``t`` is kept exactly when the layout has
            no timestamp.

        Raises:
            LocalProtocolError: A value is not finite or does not fit its field.
        """
        decoded = self.decode(self.encode(0, state)).state
        if self.timestamp:
            return decoded
        return KinematicState(
            t=state.t,
            x=decoded.x,
            y=decoded.y,
            vx=decoded.vx,
            vy=decoded.vy,
            ax=decoded.ax,
            ay=decoded.ay,
            heading=decoded.heading,
            angular_velocity=decoded.angular_velocity,
        )


_FULL: Final = UpdateLayout(velocity=True, acceleration=True, angular_velocity=True, timestamp=True)
_INIT_HEAD: Final = struct.Struct("<BBB")
INIT_SIZE: Final = _INIT_HEAD.size - 1 + _FULL.size  # bytes: id, code, flags, full state


@dataclass(frozen=True, slots=True, kw_only=True)
class DecodedInit:
    """An init payload after decoding (spec 000 §3.5 ``processInitValues``)."""

    entity_id: int
    """Entity id (0..255)."""
    model: ModelCode
    """The sender's display model."""
    time_compensation: bool
    """The sender's time-compensation flag."""
    state: KinematicState
    """The initial state; ``t`` in server time (s)."""


def encode_init(
    entity_id: int, model: ModelCode, state: KinematicState, *, time_compensation: bool
) -> bytes:
    """Encode an init payload (``INIT_SIZE`` bytes).

    Args:
        entity_id: Entity id, 0..255.
        model: The sender's display model.
        state: The initial state; ``state.t`` in server time (s).
        time_compensation: The sender's TC setting.

    Returns:
        ``INIT_SIZE`` bytes.

    Raises:
        LocalProtocolError: A value is not finite or does not fit its field.
    """
    full = _FULL.encode(entity_id, state)
    return _INIT_HEAD.pack(entity_id, int(model), _FLAG_TC if time_compensation else 0) + full[1:]


def decode_init(data: bytes) -> DecodedInit:
    """Decode an init payload.

    Args:
        data: The payload bytes from the network.

    Returns:
        The decoded init values.

    Raises:
        DecodeError: Wrong length, unknown model code or unknown flag bits.
    """
    if len(data) != INIT_SIZE:
        raise DecodeError(f"init payload must be {INIT_SIZE} bytes, got {len(data)}")
    entity_id, code, flags = _INIT_HEAD.unpack_from(data)
    if code not in ModelCode._value2member_map_:
        raise DecodeError(f"unknown display model code {code}")
    if flags & ~_FLAG_TC:
        raise DecodeError(f"unknown init flag bits {flags:#04x}")
    state = _FULL.decode(bytes([entity_id]) + data[_INIT_HEAD.size :]).state
    return DecodedInit(
        entity_id=entity_id,
        model=ModelCode(code),
        time_compensation=bool(flags & _FLAG_TC),
        state=state,
    )


def peek_entity_id(data: bytes) -> int | None:
    """Return the entity id of any update or init payload, for demultiplexing.

    Args:
        data: Payload bytes.

    Returns:
        Byte 0, or ``None`` for an empty payload.
    """
    return data[0] if data else None
