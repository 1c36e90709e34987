"""Snapshot encoding benchmark: lagless.wire bit packing vs msgpack and pickle.

A snapshot is ``entities`` records of (id u16, x, y in [0, 1000) m at 1 cm, angle in 10 bits,
vx, vy in [-50, 50] m/s at 1 cm/s): 16 + 17 + 17 + 10 + 14 + 14 = 88 bits = 11 bytes per entity
with lagless.wire. The competitors send the same records as a list of tuples of Python floats
(msgpack, pickle protocol 5), the way a game without a bit packer would.

Run: ``python benchmarks/wire.py``. Import: ``run(entities, repeat) -> list[dict]``.
"""

from __future__ import annotations

import math
import pickle
import time
from collections.abc import Callable
from typing import Final

import msgpack
import numpy as np
from rich.console import Console
from rich.table import Table

from lagless.wire import (
    BitReader,
    BitWriter,
    dequantize_angle_array,
    dequantize_array,
    pack_bit_columns,
    quantize_angle_array,
    quantize_array,
    unpack_bit_columns,
)

POS_LO: Final = 0.0  # metres
POS_HI: Final = 1000.0  # metres
POS_RES: Final = 0.01  # metres
VEL_LO: Final = -50.0  # metres per second
VEL_HI: Final = 50.0  # metres per second
VEL_RES: Final = 0.01  # metres per second
ANGLE_BITS: Final = 10  # bits
WIDTHS: Final = (16, 17, 17, ANGLE_BITS, 14, 14)  # bits per field: id, x, y, angle, vx, vy
TWO_PI: Final = 2.0 * math.pi

Columns = dict[str, np.ndarray]


def make_snapshot(entities: int, seed: int = 1) -> Columns:
    """Return a random snapshot in struct-of-arrays form (SI units)."""
    rng = np.random.default_rng(seed)
    return {
        "id": np.arange(entities, dtype=np.uint64),
        "x": rng.uniform(POS_LO, POS_HI, entities),
        "y": rng.uniform(POS_LO, POS_HI, entities),
        "angle": rng.uniform(0.0, TWO_PI, entities),
        "vx": rng.uniform(VEL_LO, VEL_HI, entities),
        "vy": rng.uniform(VEL_LO, VEL_HI, entities),
    }


def as_tuples(snap: Columns) -> list[tuple[int, float, float, float, float, float]]:
    """The competitors' representation: one tuple of Python numbers per entity."""
    return list(
        zip(
            snap["id"].tolist(),
            snap["x"].tolist(),
            snap["y"].tolist(),
            snap["angle"].tolist(),
            snap["vx"].tolist(),
            snap["vy"].tolist(),
            strict=True,
        )
    )


# -- lagless.wire, per entity through the BitStream API (what a message's serialize() does) ---


def encode_bitwriter(rows: list[tuple[int, float, float, float, float, float]]) -> bytes:
    """Write each entity with BitWriter.serialize_* (scalar quantisation per field)."""
    w = BitWriter()
    for eid, x, y, angle, vx, vy in rows:
        w.serialize_bits(eid, 16)
        w.serialize_float(x, POS_LO, POS_HI, POS_RES)
        w.serialize_float(y, POS_LO, POS_HI, POS_RES)
        w.serialize_bits(math.floor(angle % TWO_PI / TWO_PI * 1024 + 0.5) % 1024, ANGLE_BITS)
        w.serialize_float(vx, VEL_LO, VEL_HI, VEL_RES)
        w.serialize_float(vy, VEL_LO, VEL_HI, VEL_RES)
    return w.getvalue()


def decode_bitreader(
    data: bytes, entities: int
) -> list[tuple[int, float, float, float, float, float]]:
    """Read each entity with BitReader.serialize_*."""
    r = BitReader(data)
    out = []
    for _ in range(entities):
        eid = r.serialize_bits(0, 16)
        x = r.serialize_float(0.0, POS_LO, POS_HI, POS_RES)
        y = r.serialize_float(0.0, POS_LO, POS_HI, POS_RES)
        angle = r.serialize_bits(0, ANGLE_BITS) * TWO_PI / 1024
        vx = r.serialize_float(0.0, VEL_LO, VEL_HI, VEL_RES)
        vy = r.serialize_float(0.0, VEL_LO, VEL_HI, VEL_RES)
        out.append((eid, x, y, angle, vx, vy))
    return out


# -- lagless.wire, vectorised: numpy quantisation + pack_bit_columns ---------------------------


def encode_numpy(snap: Columns) -> bytes:
    """Quantise every column at once and bit-pack the records with numpy."""
    cols = [
        snap["id"],
        quantize_array(snap["x"], POS_LO, POS_HI, POS_RES),
        quantize_array(snap["y"], POS_LO, POS_HI, POS_RES),
        quantize_angle_array(snap["angle"], ANGLE_BITS),
        quantize_array(snap["vx"], VEL_LO, VEL_HI, VEL_RES),
        quantize_array(snap["vy"], VEL_LO, VEL_HI, VEL_RES),
    ]
    return pack_bit_columns(cols, WIDTHS)


def decode_numpy(data: bytes, entities: int) -> Columns:
    """Unpack the records and dequantise every column at once."""
    eid, x, y, angle, vx, vy = unpack_bit_columns(data, entities, WIDTHS)
    return {
        "id": eid,
        "x": dequantize_array(x, POS_LO, POS_HI, POS_RES),
        "y": dequantize_array(y, POS_LO, POS_HI, POS_RES),
        "angle": dequantize_angle_array(angle, ANGLE_BITS),
        "vx": dequantize_array(vx, VEL_LO, VEL_HI, VEL_RES),
        "vy": dequantize_array(vy, VEL_LO, VEL_HI, VEL_RES),
    }


def _best_us(fn: Callable[[], object], repeat: int) -> float:
    """Best-of-``repeat`` wall time of one call, in microseconds."""
    best = math.inf
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def _check(snap: Columns, decoded: Columns) -> None:
    """Fail loudly if the lagless codecs break their error bounds."""
    assert np.array_equal(decoded["id"], snap["id"])  # invariant: ids are exact
    for key, res in (("x", POS_RES), ("y", POS_RES), ("vx", VEL_RES), ("vy", VEL_RES)):
        assert np.abs(decoded[key] - snap[key]).max() <= res / 2 + 1e-9  # invariant: bound
    d = np.mod(decoded["angle"] - snap["angle"], TWO_PI)
    assert np.minimum(d, TWO_PI - d).max() <= math.pi / 1024 + 1e-12  # invariant: bound


def run(entities: int = 1000, repeat: int = 50) -> list[dict[str, object]]:
    """Encode and decode one snapshot with every codec; return one row per codec.

    Args:
        entities: Entities per snapshot (ids must fit 16 bits).
        repeat: Timing repetitions; the best is reported.

    Returns:
        Rows with ``codec``, ``bytes``, ``encode_us``, ``decode_us``, ``bytes_vs_msgpack``,
        ``bytes_vs_pickle``, ``encode_vs_msgpack``, ``decode_vs_msgpack``.
    """
    snap = make_snapshot(entities)
    rows = as_tuples(snap)

    bw = encode_bitwriter(rows)
    nv = encode_numpy(snap)
    assert bw == nv  # invariant: both lagless paths produce the same bytes
    _check(snap, decode_numpy(nv, entities))
    back = decode_bitreader(bw, entities)
    assert [r[0] for r in back] == snap["id"].tolist()  # invariant: ids are exact
    mp = msgpack.packb(rows)
    pk = pickle.dumps(rows, protocol=5)

    codecs: list[tuple[str, bytes, Callable[[], object], Callable[[], object]]] = [
        (
            "wire BitWriter/entity",
            bw,
            lambda: encode_bitwriter(rows),
            lambda: decode_bitreader(bw, entities),
        ),
        (
            "wire numpy columns",
            nv,
            lambda: encode_numpy(snap),
            lambda: decode_numpy(nv, entities),
        ),
        (
            "msgpack tuples",
            mp,
            lambda: msgpack.packb(rows),
            lambda: msgpack.unpackb(mp),
        ),
        (
            "pickle tuples",
            pk,
            lambda: pickle.dumps(rows, protocol=5),
            lambda: pickle.loads(pk),  # our own bytes, for comparison only; never on the wire
        ),
    ]
    measured = [
        (name, len(data), _best_us(enc, repeat), _best_us(dec, repeat))
        for name, data, enc, dec in codecs
    ]
    _, mp_bytes, mp_enc, mp_dec = measured[2]
    pk_bytes = measured[3][1]
    return [
        {
            "codec": name,
            "bytes": size,
            "encode_us": enc_us,
            "decode_us": dec_us,
            "bytes_vs_msgpack": size / mp_bytes,
            "bytes_vs_pickle": size / pk_bytes,
            "encode_vs_msgpack": enc_us / mp_enc,
            "decode_vs_msgpack": dec_us / mp_dec,
        }
        for name, size, enc_us, dec_us in measured
    ]


def main() -> None:
    """Run the benchmark at 1000 entities and print a rich table."""
    entities = 1000
    table = Table(title=f"wire: one {entities}-entity snapshot (best of 50)")
    for col in ("codec", "bytes", "vs msgpack", "vs pickle", "encode µs", "decode µs"):
        table.add_column(col, justify="left" if col == "codec" else "right")
    table.add_column("enc/dec vs msgpack", justify="right")
    for r in run(entities):
        table.add_row(
            str(r["codec"]),
            f"{r['bytes']}",
            f"{r['bytes_vs_msgpack']:.3f}",
            f"{r['bytes_vs_pickle']:.3f}",
            f"{r['encode_us']:.0f}",
            f"{r['decode_us']:.0f}",
            f"{r['encode_vs_msgpack']:.2f} / {r['decode_vs_msgpack']:.2f}",
        )
    Console(width=max(Console().width, 100)).print(table)


if __name__ == "__main__":
    main()
