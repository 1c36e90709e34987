"""The VFC4FPS avatar record (``CubeOriObj``, 24 bytes), its datagrams and a quantised delta codec.

Implements spec 001 §3.9 (the ``CubeOriObj`` avatar and its 24-byte field layout decoded from
Fig. 4.3), §3.11 / §4.5 (the fixed-layout "delta" of the fields, concatenated for every object
due to one client in a round and squeezed by one zero-byte bitmap compression), and, as lagless's
improvement (issue 5 part 2), an optional bit-packed encoding of each record as the difference of
its quantised fields from the last value the client acknowledged.

Record layout (little endian, no padding, ``RECORD_DTYPE``)::

    id i16 | x y z u16 | yaw i16 | pitch i8 | vx vy vz i16 | fx fy i8 | fz i16 |
    physstate u8 | flags u8 | gunselect u8                                   = 24 bytes

Ambiguity decisions (spec 001 §3.9 leaves the quantisation open), pinned in
``tests/interest/test_records.py``:

* Positions are metres in steps of ``POSITION_STEP`` = 1/128 m (Cube 2 stores 1/16 world unit
  and we take ``CUBE_UNIT`` = 0.125 m per unit), unsigned, so a map spans at most 512 m; values
  are clipped (``test_quantisation_bounds``).
* Yaw is an angle in radians wrapped to 16 bits (step 2π/65536), counter-clockwise from +x; pitch
  is clipped to ±π/2 in steps of (π/2)/127; velocities use 1/128 m/s (±256 m/s); falling x/y use
  1/8 m/s in an i8, falling z 1/128 m/s. The orientation vector is
  ``(cos p cos y, cos p sin y, sin p)`` (``test_orientation_from_yaw_pitch``).
* A datagram of records holds at most ``MAX_RECORDS_PER_DATAGRAM`` = 37 records, so its worst
  case ``1 + 3k + 24k`` bytes fits one unreliable transport message (1024 bytes); more records
  due in a round go in several datagrams (``test_pack_splits_into_datagrams``).
* Delta records (bit-packed, LSB first): ``id`` 16 bits, ``tag`` 8 bits (this send's number for
  the (client, object) pair, 1..255 cycling), ``base`` 8 bits (the acknowledged send it is relative
  to; 0 = relative to the all-zero record), a 14-bit mask of changed fields, then per changed field
  a 2-bit width class (4, 8, 12 or 16 bits, capped at the field width) and the zig-zag of the
  wrapped difference. A delta datagram starts with a 16-bit datagram sequence number
  (``test_delta_round_trip``, ``test_delta_bits_match_writer``).
* A delta datagram holds at most 37 records and ``MAX_DELTA_BYTES`` = 1024 bytes (one unreliable
  transport message); ``delta_datagram_starts`` splits a round's records greedily by their
  measured bits (``test_delta_datagram_starts_respect_both_limits``).
* The client acknowledges delta datagrams with a 6-byte ``ack u16 | bits u32`` message (the newest
  datagram sequence it decoded in full, and bit ``i`` for ``ack - 1 - i``), the transport's own
  ack-field shape (``test_update_ack_round_trip``).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError
from lagless.wire import BitReader, BitWriter, DecodeError
from lagless.wire import zero_bitmap_compress as _compress
from lagless.wire import zero_bitmap_decompress as _decompress

__all__ = [
    "ACK_WINDOW",
    "CUBE_UNIT",
    "DELTA_FIELDS",
    "MAX_DELTA_BYTES",
    "MAX_DELTA_CHAIN",
    "MAX_RECORDS_PER_DATAGRAM",
    "PHYS_FALL",
    "PHYS_FLOOR",
    "POSITION_STEP",
    "RECORD_DTYPE",
    "RECORD_SIZE",
    "CubeOriObj",
    "DeltaRecord",
    "compressed_sizes",
    "delta_datagram_starts",
    "delta_record_bits",
    "dequantise_positions",
    "pack_records",
    "quantise_avatars",
    "read_delta_datagram",
    "read_update_ack",
    "unpack_records",
    "write_delta_datagram",
    "write_update_ack",
]

RECORD_DTYPE: Final = np.dtype(
    [
        ("id", "<i2"),
        ("x", "<u2"),
        ("y", "<u2"),
        ("z", "<u2"),
        ("yaw", "<i2"),
        ("pitch", "i1"),
        ("vx", "<i2"),
        ("vy", "<i2"),
        ("vz", "<i2"),
        ("fx", "i1"),
        ("fy", "i1"),
        ("fz", "<i2"),
        ("physstate", "u1"),
        ("flags", "u1"),
        ("gunselect", "u1"),
    ]
)
RECORD_SIZE: Final = 24  # bytes: the thesis's CubeOriObj field payload (spec 001 §3.9)
CUBE_UNIT: Final = 0.125  # metres per Cube 2 world unit (assumption: a 15-unit player ≈ 1.9 m)
POSITION_STEP: Final = 1.0 / 128.0  # metres: Cube 2's 1/16 world unit
VELOCITY_STEP: Final = 1.0 / 128.0  # metres per second
FALL_XY_STEP: Final = 1.0 / 8.0  # metres per second
YAW_STEP: Final = 2.0 * math.pi / 65536.0  # radians
PITCH_STEP: Final = (math.pi / 2.0) / 127.0  # radians
MAX_RECORDS_PER_DATAGRAM: Final = 37  # records: 1 + 3*37 + 24*37 = 1000 <= 1024 bytes
PHYS_FALL: Final = 1  # physstate of an airborne avatar (Cube 2 numbering)
PHYS_FLOOR: Final = 4  # physstate of an avatar on the floor (Cube 2 numbering)
DELTA_FIELDS: Final = tuple(RECORD_DTYPE.names or ())[1:]  # the 14 fields a delta record may change
_WIDTHS: Final = tuple(RECORD_DTYPE[name].itemsize * 8 for name in DELTA_FIELDS)
_CLASS_BITS: Final = (4, 8, 12, 16)
_DELTA_HEADER_BITS: Final = 16 + 8 + 8 + len(DELTA_FIELDS)
_SEQ_BITS: Final = 16
MAX_DELTA_BYTES: Final = 1024  # bytes: one unreliable transport message (DESIGN.md fragments)
MAX_DELTA_CHAIN: Final = 64  # sends: an older baseline is dropped (well below the 255 tags)
ACK_WINDOW: Final = 64  # datagrams: older sends are forgotten (server) or dropped (client)
_UPDATE_ACK: Final = struct.Struct("<HI")

assert RECORD_DTYPE.itemsize == RECORD_SIZE  # invariant: the layout of spec 001 §3.9


def _wrap_i16(values: npt.NDArray[np.float64]) -> npt.NDArray[np.int16]:
    return ((np.round(values).astype(np.int64) + 32768) % 65536 - 32768).astype(np.int16)


def _clip_round(values: npt.ArrayLike, step: float, lo: int, hi: int) -> npt.NDArray[np.int64]:
    return np.clip(np.round(np.asarray(values, dtype=np.float64) / step), lo, hi).astype(np.int64)


def quantise_avatars(
    ids: npt.ArrayLike,
    positions: npt.ArrayLike,
    yaw: npt.ArrayLike,
    pitch: npt.ArrayLike,
    velocity: npt.ArrayLike,
    falling: npt.ArrayLike,
    physstate: npt.ArrayLike,
    flags: npt.ArrayLike,
    gunselect: npt.ArrayLike,
) -> npt.NDArray[np.void]:
    """Quantise avatar states (SI units) into 24-byte records, vectorised.

    Error bounds after ``dequantise_positions``: position ≤ ``POSITION_STEP`` / 2 per axis inside
    [0, 512) m; yaw ≤ π/65536 rad; pitch ≤ (π/2)/254 rad inside ±π/2.

    Args:
        ids: object ids, shape (n,), in [0, 32767].
        positions: metres, shape (n, 3).
        yaw: radians, shape (n,).
        pitch: radians, shape (n,).
        velocity: metres per second, shape (n, 3).
        falling: falling velocity in metres per second, shape (n, 3).
        physstate: physics state codes, shape (n,), 0-255.
        flags: flag bytes, shape (n,).
        gunselect: selected weapon, shape (n,).

    Returns:
        A structured array of dtype ``RECORD_DTYPE``, shape (n,).

    Examples:
        >>> r = quantise_avatars([3], [[1.0, 2.0, 0.0]], [0.0], [0.0], [[0.0] * 3], [[0.0] * 3],
        ...                      [PHYS_FLOOR], [0], [1])
        >>> int(r["x"][0]), int(r["y"][0]), r.tobytes().hex()
        (128, 256, '030080000001000000000000000000000000000000040001')
    """
    idv = np.asarray(ids, dtype=np.int64).reshape(-1)
    if idv.size and (idv.min() < 0 or idv.max() > 32767):
        raise LocalProtocolError(f"ids must be in [0, 32767], got {idv.tolist()}")
    n = idv.shape[0]
    pos = np.asarray(positions, dtype=np.float64).reshape(n, 3)
    vel = np.asarray(velocity, dtype=np.float64).reshape(n, 3)
    fall = np.asarray(falling, dtype=np.float64).reshape(n, 3)
    out = np.zeros(n, dtype=RECORD_DTYPE)
    out["id"] = idv
    for i, name in enumerate(("x", "y", "z")):
        out[name] = _clip_round(pos[:, i], POSITION_STEP, 0, 65535)
    out["yaw"] = _wrap_i16(np.asarray(yaw, dtype=np.float64).reshape(n) / YAW_STEP)
    out["pitch"] = _clip_round(np.asarray(pitch).reshape(n), PITCH_STEP, -127, 127)
    for i, name in enumerate(("vx", "vy", "vz")):
        out[name] = _clip_round(vel[:, i], VELOCITY_STEP, -32768, 32767)
    out["fx"] = _clip_round(fall[:, 0], FALL_XY_STEP, -128, 127)
    out["fy"] = _clip_round(fall[:, 1], FALL_XY_STEP, -128, 127)
    out["fz"] = _clip_round(fall[:, 2], VELOCITY_STEP, -32768, 32767)
    out["physstate"] = np.asarray(physstate).reshape(n)
    out["flags"] = np.asarray(flags).reshape(n)
    out["gunselect"] = np.asarray(gunselect).reshape(n)
    return out


def dequantise_positions(records: npt.NDArray[np.void]) -> npt.NDArray[np.float64]:
    """Positions in metres, shape (n, 3), of records of dtype ``RECORD_DTYPE``."""
    return (
        np.stack([records[a].astype(np.float64) for a in ("x", "y", "z")], axis=1) * POSITION_STEP
    )


def dequantise_headings(records: npt.NDArray[np.void]) -> npt.NDArray[np.float64]:
    """Unit orientation vectors, shape (n, 3), from the records' yaw and pitch (see module)."""
    yaw = records["yaw"].astype(np.float64) * YAW_STEP
    pitch = records["pitch"].astype(np.float64) * PITCH_STEP
    c = np.cos(pitch)
    return np.stack([c * np.cos(yaw), c * np.sin(yaw), np.sin(pitch)], axis=1)


@dataclass(slots=True, kw_only=True)
class CubeOriObj:
    """The thesis's avatar shared object (spec 001 §3.8 ``IOrientableObject``, §3.9).

    Mutable on purpose: the game writes through the reference ``get_object_ref`` returns, with no
    commit (spec 001 §3.5). Units are SI.
    """

    id: int
    """Object id, 0-32767."""
    x: float = 0.0
    """Position x, metres."""
    y: float = 0.0
    """Position y, metres."""
    z: float = 0.0
    """Position z (up), metres."""
    yaw: float = 0.0
    """Heading in the horizontal plane, radians counter-clockwise from +x."""
    pitch: float = 0.0
    """Elevation, radians in [-π/2, π/2]."""
    vx: float = 0.0
    """Velocity x, metres per second."""
    vy: float = 0.0
    """Velocity y, metres per second."""
    vz: float = 0.0
    """Velocity z, metres per second."""
    fx: float = 0.0
    """Falling velocity x, metres per second."""
    fy: float = 0.0
    """Falling velocity y, metres per second."""
    fz: float = 0.0
    """Falling velocity z, metres per second."""
    physstate: int = PHYS_FLOOR
    """Physics state code."""
    flags: int = 0
    """Flag bits."""
    gunselect: int = 0
    """Selected weapon."""

    def orientation(self) -> tuple[float, float, float]:
        """Unit orientation vector derived from yaw and pitch (see module docstring)."""
        c = math.cos(self.pitch)
        return (c * math.cos(self.yaw), c * math.sin(self.yaw), math.sin(self.pitch))

    def distance_between(self, other: CubeOriObj) -> float:
        """Euclidean distance in metres to another object (``DistanceBetween``)."""
        return math.dist((self.x, self.y, self.z), (other.x, other.y, other.z))

    def compare_nu(self, other: CubeOriObj, base: float) -> float:
        """Value divergence in percent: displacement from ``other`` ÷ ``base`` metres × 100.

        Args:
            other: the instance last sent.
            base: the reference length in metres (> 0), e.g. the pivot distance (spec 001 §2.7).

        Returns:
            The divergence, percent.
        """
        if not base > 0.0:
            raise LocalProtocolError(f"base must be > 0 metres, got {base!r}")
        return 100.0 * self.distance_between(other) / base

    def clone(self) -> CubeOriObj:
        """Return an independent copy (``Clone``)."""
        return CubeOriObj(**{name: getattr(self, name) for name in self.__slots__})

    def to_record(self) -> npt.NDArray[np.void]:
        """Quantise into a one-element ``RECORD_DTYPE`` array."""
        return quantise_avatars(
            [self.id],
            [[self.x, self.y, self.z]],
            [self.yaw],
            [self.pitch],
            [[self.vx, self.vy, self.vz]],
            [[self.fx, self.fy, self.fz]],
            [self.physstate],
            [self.flags],
            [self.gunselect],
        )

    def encode(self) -> bytes:
        """The 24-byte field payload of spec 001 §3.9."""
        return self.to_record().tobytes()

    def assign(self, record: npt.NDArray[np.void]) -> None:
        """Overwrite every field from one decoded record (dequantised to SI units).

        Args:
            record: a ``RECORD_DTYPE`` array of shape (1,) or a scalar record.
        """
        rec = np.asarray(record, dtype=RECORD_DTYPE).reshape(1)
        self.id = int(rec["id"][0])
        self.x, self.y, self.z = (float(v) for v in dequantise_positions(rec)[0])
        self.yaw = float(rec["yaw"][0]) * YAW_STEP
        self.pitch = float(rec["pitch"][0]) * PITCH_STEP
        self.vx, self.vy, self.vz = (float(rec[a][0]) * VELOCITY_STEP for a in ("vx", "vy", "vz"))
        self.fx = float(rec["fx"][0]) * FALL_XY_STEP
        self.fy = float(rec["fy"][0]) * FALL_XY_STEP
        self.fz = float(rec["fz"][0]) * VELOCITY_STEP
        self.physstate = int(rec["physstate"][0])
        self.flags = int(rec["flags"][0])
        self.gunselect = int(rec["gunselect"][0])

    @classmethod
    def decode(cls, data: bytes) -> CubeOriObj:
        """Build an object from 24 record bytes.

        Raises:
            DecodeError: ``data`` is not 24 bytes or the id is negative.
        """
        if len(data) != RECORD_SIZE:
            raise DecodeError(f"a CubeOriObj record is {RECORD_SIZE} bytes, got {len(data)}")
        rec = np.frombuffer(data, dtype=RECORD_DTYPE)
        if rec["id"][0] < 0:
            raise DecodeError(f"record id must be >= 0, got {int(rec['id'][0])}")
        obj = cls(id=0)
        obj.assign(rec)
        return obj


# -- datagrams of records (thesis format) ---------------------------------------------------------


def pack_records(
    records: npt.NDArray[np.void], *, per_datagram: int = MAX_RECORDS_PER_DATAGRAM
) -> list[bytes]:
    """Concatenate records and zero-bitmap compress them, ``per_datagram`` at a time (§4.5.2).

    Args:
        records: ``RECORD_DTYPE`` array, shape (n,).
        per_datagram: most records per datagram, 1..``MAX_RECORDS_PER_DATAGRAM``.

    Returns:
        One compressed payload per datagram (empty list for no records).

    Examples:
        >>> [p.hex() for p in pack_records(np.zeros(1, dtype=RECORD_DTYPE))]
        ['03000000']
    """
    if not 1 <= per_datagram <= MAX_RECORDS_PER_DATAGRAM:
        raise LocalProtocolError(
            f"per_datagram must be in [1, {MAX_RECORDS_PER_DATAGRAM}], got {per_datagram}"
        )
    raw = np.ascontiguousarray(records, dtype=RECORD_DTYPE)
    return [
        _compress(raw[i : i + per_datagram].tobytes()) for i in range(0, raw.shape[0], per_datagram)
    ]


def unpack_records(payload: bytes) -> npt.NDArray[np.void]:
    """Decompress one datagram of records (untrusted bytes).

    Returns:
        ``RECORD_DTYPE`` array (read-only view).

    Raises:
        DecodeError: malformed compression, a length not a multiple of 24, more than
            ``MAX_RECORDS_PER_DATAGRAM`` records, or a negative id.
    """
    raw = _decompress(payload)
    if len(raw) % RECORD_SIZE or len(raw) > RECORD_SIZE * MAX_RECORDS_PER_DATAGRAM:
        raise DecodeError(f"record datagram holds {len(raw)} bytes, not 24 x (0..37)")
    records = np.frombuffer(raw, dtype=RECORD_DTYPE)
    if records.size and records["id"].min() < 0:
        raise DecodeError("record ids must be >= 0")
    return records


def compressed_sizes(nonzero: npt.ArrayLike, starts: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """Sizes of ``pack_records`` datagrams from per-record non-zero byte counts, vectorised.

    Args:
        nonzero: non-zero bytes of each record, shape (n,), grouped by datagram.
        starts: index of the first record of each datagram, ascending, shape (d,).

    Returns:
        Bytes of each datagram: ``1 + 3k + Σ nonzero`` (24-byte records, so m = 3k).

    Examples:
        >>> compressed_sizes([20, 18, 19], [0, 2]).tolist()
        [45, 23]
    """
    nz = np.asarray(nonzero, dtype=np.int64)
    first = np.asarray(starts, dtype=np.intp)
    if first.size == 0:
        return np.zeros(0, dtype=np.int64)
    counts = np.diff(np.append(first, nz.shape[0]))
    return np.asarray(1 + 3 * counts + np.add.reduceat(nz, first), dtype=np.int64)


# -- quantised delta encoding (lagless's improvement) ---------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class DeltaRecord:
    """One decoded delta record: which send it is and what it is relative to."""

    tag: int
    """This send's number for the (client, object) pair, 1-255."""
    base: int
    """The acknowledged send it is relative to (0 = the all-zero record)."""
    record: npt.NDArray[np.void]
    """The full record, rebuilt (``RECORD_DTYPE``, shape (1,))."""


def _field_ints(records: npt.NDArray[np.void]) -> npt.NDArray[np.int64]:
    return np.stack([records[name].astype(np.int64) for name in DELTA_FIELDS], axis=-1)


def _zigzag_diff(cur: npt.NDArray[np.int64], base: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    widths = np.array(_WIDTHS, dtype=np.int64)
    span = np.left_shift(1, widths)
    half = span >> 1
    d = (cur - base + half) % span - half
    return np.asarray(np.where(d >= 0, 2 * d, -2 * d - 1), dtype=np.int64)


def delta_record_bits(
    current: npt.NDArray[np.void], baseline: npt.NDArray[np.void]
) -> npt.NDArray[np.int64]:
    """Bits of each delta record relative to its baseline, vectorised (equals the writer's count).

    Args:
        current: ``RECORD_DTYPE`` array, shape (n,).
        baseline: ``RECORD_DTYPE`` array, shape (n,) (all-zero rows for absolute records).

    Returns:
        Bits per record, shape (n,).
    """
    z = _zigzag_diff(_field_ints(current), _field_ints(baseline))
    widths = np.array(_WIDTHS, dtype=np.int64)
    need = np.zeros(z.shape, dtype=np.int64)
    for bits in reversed(_CLASS_BITS):
        need = np.where(z < (1 << bits), np.minimum(bits, widths), need)
    cost = np.where(z != 0, 2 + need, 0)
    return np.asarray(_DELTA_HEADER_BITS + cost.sum(axis=-1), dtype=np.int64)


def write_delta_datagram(
    seq: int,
    records: npt.NDArray[np.void],
    baselines: npt.NDArray[np.void],
    tags: npt.ArrayLike,
    bases: npt.ArrayLike,
) -> bytes:
    """Encode a delta datagram: a 16-bit sequence, then one delta record per object.

    Args:
        seq: datagram sequence number, 0-65535 (acknowledged by the client).
        records: current ``RECORD_DTYPE`` records, shape (n,).
        baselines: the records they are relative to (zeros where ``bases`` is 0), shape (n,).
        tags: this send's tag per record, 1-255.
        bases: baseline tag per record, 0-255.

    Returns:
        The payload bytes.
    """
    writer = BitWriter()
    writer.serialize_uint(seq, _SEQ_BITS)
    z = _zigzag_diff(_field_ints(records), _field_ints(baselines)).tolist()
    for row, rec_id, tag, base in zip(
        z,
        records["id"].tolist(),
        np.asarray(tags).tolist(),
        np.asarray(bases).tolist(),
        strict=True,
    ):
        if not 1 <= tag <= 255 or not 0 <= base <= 255:
            raise LocalProtocolError(f"tag must be 1-255 and base 0-255, got {tag}, {base}")
        writer.serialize_uint(rec_id, 16)
        writer.serialize_uint(tag, 8)
        writer.serialize_uint(base, 8)
        writer.serialize_uint(sum(1 << i for i, v in enumerate(row) if v), len(DELTA_FIELDS))
        for value, width in zip(row, _WIDTHS, strict=True):
            if value:
                cls = next(c for c, bits in enumerate(_CLASS_BITS) if value < 1 << bits)
                writer.serialize_uint(cls, 2)
                writer.serialize_uint(value, min(_CLASS_BITS[cls], width))
    return writer.getvalue()


def delta_datagram_starts(bits: npt.ArrayLike) -> npt.NDArray[np.intp]:
    """Split one client's delta records of a round into datagrams, greedily, in order.

    Each datagram holds at most ``MAX_RECORDS_PER_DATAGRAM`` records and, with its 16-bit
    sequence, at most ``MAX_DELTA_BYTES`` bytes.

    Args:
        bits: bits of each record (``delta_record_bits``), shape (n,).

    Returns:
        Index of the first record of each datagram, ascending (empty for no records).

    Examples:
        >>> delta_datagram_starts([4000, 4000, 4000, 100]).tolist()
        [0, 2]
    """
    b = np.asarray(bits, dtype=np.int64).reshape(-1)
    budget = 8 * MAX_DELTA_BYTES - _SEQ_BITS
    starts: list[int] = []
    first = 0
    while first < b.shape[0]:
        starts.append(first)
        window = np.cumsum(b[first : first + MAX_RECORDS_PER_DATAGRAM])
        first += max(1, int(np.searchsorted(window, budget, side="right")))
    return np.asarray(starts, dtype=np.intp)


def write_update_ack(ack: int, bits: int) -> bytes:
    """Encode the client's acknowledgement of delta datagrams (6 bytes).

    Args:
        ack: the newest datagram sequence decoded in full, 0-65535.
        bits: bit ``i`` set when datagram ``ack - 1 - i`` was decoded in full, 32 bits.

    Examples:
        >>> write_update_ack(258, 1).hex()
        '020101000000'
    """
    if not 0 <= ack <= 0xFFFF or not 0 <= bits <= 0xFFFF_FFFF:
        raise LocalProtocolError(f"ack must be 0-65535 and bits 32-bit, got {ack}, {bits}")
    return _UPDATE_ACK.pack(ack, bits)


def read_update_ack(payload: bytes) -> tuple[int, int]:
    """Decode an acknowledgement (untrusted bytes) into ``(ack, bits)``.

    Raises:
        DecodeError: not exactly 6 bytes.
    """
    if len(payload) != _UPDATE_ACK.size:
        raise DecodeError(f"an update ack is {_UPDATE_ACK.size} bytes, got {len(payload)}")
    ack, bits = _UPDATE_ACK.unpack(payload)
    return int(ack), int(bits)


def read_delta_datagram(
    payload: bytes, baseline_of: Mapping[tuple[int, int], npt.NDArray[np.void]]
) -> tuple[int, list[DeltaRecord], int]:
    """Decode a delta datagram (untrusted bytes).

    Args:
        payload: the datagram payload.
        baseline_of: the client's stored records by ``(object id, tag)``.

    Returns:
        ``(seq, records, missing)``: the decoded records and how many were skipped because their
        baseline is not held (never happens when the server uses only acknowledged baselines).

    Raises:
        DecodeError: truncated or malformed bits, a zero tag or more than
            ``MAX_RECORDS_PER_DATAGRAM`` records.
    """
    reader = BitReader(payload)
    seq = reader.serialize_uint(0, _SEQ_BITS)
    out: list[DeltaRecord] = []
    missing = 0
    while reader.bits_remaining >= _DELTA_HEADER_BITS:
        if len(out) + missing >= MAX_RECORDS_PER_DATAGRAM:
            raise DecodeError(f"delta datagram holds more than {MAX_RECORDS_PER_DATAGRAM} records")
        rec_id = reader.serialize_uint(0, 16)
        tag = reader.serialize_uint(0, 8)
        base = reader.serialize_uint(0, 8)
        mask = reader.serialize_uint(0, len(DELTA_FIELDS))
        if tag == 0 or rec_id > 32767:
            raise DecodeError(f"delta record with tag {tag} and id {rec_id}")
        values = []
        for i, width in enumerate(_WIDTHS):
            if mask >> i & 1:
                cls = reader.serialize_uint(0, 2)
                values.append(reader.serialize_uint(0, min(_CLASS_BITS[cls], width)))
            else:
                values.append(0)
        reference = (
            np.zeros(1, dtype=RECORD_DTYPE) if base == 0 else baseline_of.get((rec_id, base))
        )
        if reference is None:
            missing += 1
            continue
        out.append(DeltaRecord(tag=tag, base=base, record=_apply(rec_id, reference, values)))
    if reader.bits_remaining >= 8:
        raise DecodeError("delta datagram has trailing bytes")
    return seq, out, missing


def _apply(rec_id: int, reference: npt.NDArray[np.void], zig: list[int]) -> npt.NDArray[np.void]:
    record = np.array(reference, dtype=RECORD_DTYPE).reshape(1)
    record["id"] = rec_id
    for name, value, width in zip(DELTA_FIELDS, zig, _WIDTHS, strict=True):
        diff = value >> 1 if value % 2 == 0 else -((value + 1) >> 1)
        unsigned = (int(record[name][0]) + diff) % (1 << width)
        if RECORD_DTYPE[name].kind == "i" and unsigned >= 1 << (width - 1):
            unsigned -= 1 << width
        record[name] = unsigned
    return record
