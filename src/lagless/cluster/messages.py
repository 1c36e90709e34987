"""The cluster's wire messages between cell servers and players (issue 16 part 1).

Binary, little-endian, one message per NATS payload, the first byte naming the kind. Hot messages
(snapshots, border copies, hand-offs, inputs) are packed with precompiled ``struct.Struct``s;
the once-a-second statistics are msgspec JSON.

Layouts (sizes in bytes):

* ``CarRecord`` (39): player u16, generation u32, input_seq u32, keys u8, then x, y, heading, vx,
  vy, angular velocity, steer as float32 (m, rad, m/s, rad/s, fraction).
* ``Snapshot``: kind u8 = 1, server u8, tick u64, claims u16, cars u16, then ``claims`` x (cell
  u16, epoch u32) and ``cars`` x ``CarRecord``: every car the server owns, 20 times a second; it
  is also the server's heartbeat and the state a successor restores when it dies.
* ``Border``: kind u8 = 2, server u8, tick u64, cell u16, cars u16, ``cars`` x ``CarRecord``: the
  owned cars within the halo of a cell another server owns.
* ``Handoff``: kind u8 = 3, from u8, to u8, tick u64, one ``CarRecord``.
* ``Input``: kind u8 = 4, player u16, seq u32, keys u8: a player's keys from its ``seq``-th change.
* ``Stop``: kind u8 = 5: the entry point ends the run.
* ``Stats``: kind u8 = 6, then msgspec JSON of ``ServerStats``.

``decode`` never raises: a payload that is short, long, of an unknown kind, with a count that does
not match its length, non-finite floats or keys beyond the four key bits gives ``None``. It never
allocates more than the payload's own size.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Final

import msgspec

from lagless.physics import CarState, Keys

__all__ = [
    "Border",
    "CarRecord",
    "ClusterMessage",
    "Handoff",
    "Input",
    "ServerStats",
    "Snapshot",
    "Stats",
    "Stop",
    "decode",
    "encode",
]

SNAPSHOT: Final = 1
BORDER: Final = 2
HANDOFF: Final = 3
INPUT: Final = 4
STOP: Final = 5
STATS: Final = 6

_CAR = struct.Struct("<HIIB7f")
_SNAPSHOT = struct.Struct("<BBQHH")
_CLAIM = struct.Struct("<HI")
_BORDER = struct.Struct("<BBQHH")
_HANDOFF = struct.Struct("<BBBQ")
_INPUT = struct.Struct("<BHIB")
_ALL_KEYS = 15


@dataclass(frozen=True, slots=True)
class CarRecord:
    """One car as the cluster ships it: whose it is, its ownership generation, its state."""

    player: int
    """Player id, 0..65535."""
    generation: int
    """Ownership generation: +1 at every hand-off and take-over; the higher copy wins."""
    input_seq: int
    """The newest input (``Input.seq``) applied to the car; a client told this is committed."""
    state: CarState
    """The car's state (keys included)."""


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Every car ``server`` owns at ``tick``, and the cells it claims: ``(cell, epoch)``."""

    server: int
    tick: int
    claims: tuple[tuple[int, int], ...]
    cars: tuple[CarRecord, ...]


@dataclass(frozen=True, slots=True)
class Border:
    """Cars of ``server`` within the halo of ``cell`` (owned by another server) at ``tick``."""

    server: int
    tick: int
    cell: int
    cars: tuple[CarRecord, ...]


@dataclass(frozen=True, slots=True)
class Handoff:
    """Server ``source`` hands ``car`` (its state at ``tick``) to server ``target``."""

    source: int
    target: int
    tick: int
    car: CarRecord


@dataclass(frozen=True, slots=True)
class Input:
    """Player ``player`` holds ``keys`` from its ``seq``-th key change on (1, 2, ...)."""

    player: int
    seq: int
    keys: Keys


@dataclass(frozen=True, slots=True)
class Stop:
    """End of the run: servers publish their final ``Stats`` and exit."""


class ServerStats(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """A cell server's counters and tick times (ms), published once a second and at the end."""

    server: int
    ticks: int
    tick_ms_avg: float
    tick_ms_p99: float
    tick_ms_max: float
    cpu_ms_avg: float
    cars: int
    ghosts: int
    cells: int
    handoffs_sent: int
    handoffs_accepted: int
    takeovers: int
    cars_adopted: int
    cars_reclaimed: int
    duplicates_dropped: int
    late_handoffs: int
    ticks_skipped: int
    final: bool


@dataclass(frozen=True, slots=True)
class Stats:
    """A ``ServerStats`` on the wire."""

    stats: ServerStats


ClusterMessage = Snapshot | Border | Handoff | Input | Stop | Stats


def _pack_car(out: bytearray, car: CarRecord) -> None:
    s = car.state
    out += _CAR.pack(
        car.player,
        car.generation,
        car.input_seq,
        int(s.keys),
        s.x,
        s.y,
        s.heading,
        s.vx,
        s.vy,
        s.angular_velocity,
        s.steer,
    )


def encode(message: ClusterMessage) -> bytes:
    """Return the payload of ``message`` (fields out of range raise ``struct.error``)."""
    out = bytearray()
    match message:
        case Snapshot(server=server, tick=tick, claims=claims, cars=cars):
            out += _SNAPSHOT.pack(SNAPSHOT, server, tick, len(claims), len(cars))
            for cell, epoch in claims:
                out += _CLAIM.pack(cell, epoch)
            for car in cars:
                _pack_car(out, car)
        case Border(server=server, tick=tick, cell=cell, cars=cars):
            out += _BORDER.pack(BORDER, server, tick, cell, len(cars))
            for car in cars:
                _pack_car(out, car)
        case Handoff(source=source, target=target, tick=tick, car=car):
            out += _HANDOFF.pack(HANDOFF, source, target, tick)
            _pack_car(out, car)
        case Input(player=player, seq=seq, keys=keys):
            out += _INPUT.pack(INPUT, player, seq, int(keys))
        case Stop():
            out.append(STOP)
        case Stats(stats=stats):
            out.append(STATS)
            out += msgspec.json.encode(stats)
    return bytes(out)


def _cars(data: bytes, offset: int, count: int) -> tuple[CarRecord, ...] | None:
    if len(data) - offset != count * _CAR.size:
        return None
    cars: list[CarRecord] = []
    for player, gen, seq, keys, *floats in _CAR.iter_unpack(data[offset:]):
        if keys & ~_ALL_KEYS or not all(math.isfinite(v) for v in floats):
            return None
        x, y, heading, vx, vy, w, steer = floats
        state = CarState(
            x=x,
            y=y,
            heading=heading,
            vx=vx,
            vy=vy,
            angular_velocity=w,
            steer=steer,
            keys=Keys(keys),
        )
        cars.append(CarRecord(player, gen, seq, state))
    return tuple(cars)


_STATS_DECODER = msgspec.json.Decoder(ServerStats)


def decode(data: bytes) -> ClusterMessage | None:
    """Return the message in ``data``, or ``None`` when it is not a valid cluster message."""
    if not data:
        return None
    kind = data[0]
    if kind == SNAPSHOT and len(data) >= _SNAPSHOT.size:
        _, server, tick, n_claims, n_cars = _SNAPSHOT.unpack_from(data)
        end = _SNAPSHOT.size + n_claims * _CLAIM.size
        if end > len(data):
            return None
        claims = tuple(_CLAIM.iter_unpack(data[_SNAPSHOT.size : end]))
        cars = _cars(data, end, n_cars)
        return None if cars is None else Snapshot(server, tick, claims, cars)
    if kind == BORDER and len(data) >= _BORDER.size:
        _, server, tick, cell, n_cars = _BORDER.unpack_from(data)
        cars = _cars(data, _BORDER.size, n_cars)
        return None if cars is None else Border(server, tick, cell, cars)
    if kind == HANDOFF and len(data) >= _HANDOFF.size:
        _, source, target, tick = _HANDOFF.unpack_from(data)
        cars = _cars(data, _HANDOFF.size, 1)
        return None if cars is None else Handoff(source, target, tick, cars[0])
    if kind == INPUT and len(data) == _INPUT.size:
        _, player, seq, keys = _INPUT.unpack(data)
        return None if keys & ~_ALL_KEYS else Input(player, seq, Keys(keys))
    if kind == STOP and len(data) == 1:
        return Stop()
    if kind == STATS:
        try:
            return Stats(_STATS_DECODER.decode(data[1:]))
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError):
            return None
    return None
