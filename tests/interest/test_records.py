"""The 24-byte CubeOriObj record, its datagrams and the quantised delta codec (spec 001 §3.9)."""

from __future__ import annotations

import contextlib
import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.interest.records import (
    MAX_DELTA_BYTES,
    MAX_RECORDS_PER_DATAGRAM,
    PHYS_FLOOR,
    POSITION_STEP,
    RECORD_DTYPE,
    CubeOriObj,
    compressed_sizes,
    delta_datagram_starts,
    delta_record_bits,
    dequantise_positions,
    pack_records,
    quantise_avatars,
    read_delta_datagram,
    read_update_ack,
    unpack_records,
    write_delta_datagram,
    write_update_ack,
)
from lagless.wire import DecodeError


def _random_records(rng: np.random.Generator, n: int) -> np.ndarray:
    return quantise_avatars(
        np.arange(n),
        rng.uniform(0, 300, (n, 3)),
        rng.uniform(-4, 4, n),
        rng.uniform(-1.5, 1.5, n),
        rng.normal(0, 10, (n, 3)),
        rng.normal(0, 3, (n, 3)),
        rng.integers(0, 5, n),
        rng.integers(0, 256, n),
        rng.integers(0, 7, n),
    )


def test_exact_layout() -> None:
    obj = CubeOriObj(id=0x0102, x=1.0, y=2.0, z=0.5, yaw=0.0, pitch=0.0, vx=-1.0, gunselect=3)
    data = obj.encode()
    assert len(data) == 24 == RECORD_DTYPE.itemsize
    # id, x=128, y=256, z=64, yaw 0, pitch 0, vx=-128, vy, vz, fx, fy, fz, phys, flags, gun
    assert data.hex() == "020180000001400000000080ff0000000000000000040003"


def test_quantisation_bounds() -> None:
    rng = np.random.default_rng(1)
    pos = rng.uniform(0.0, 500.0, (200, 3))
    recs = quantise_avatars(
        np.arange(200),
        pos,
        np.zeros(200),
        np.zeros(200),
        np.zeros((200, 3)),
        np.zeros((200, 3)),
        np.full(200, PHYS_FLOOR),
        np.zeros(200),
        np.zeros(200),
    )
    assert np.abs(dequantise_positions(recs) - pos).max() <= POSITION_STEP / 2 + 1e-12
    clipped = quantise_avatars(
        [0], [[-5.0, 600.0, 1.0]], [0], [0], [[0] * 3], [[0] * 3], [0], [0], [0]
    )
    assert int(clipped["x"][0]) == 0
    assert int(clipped["y"][0]) == 65535


def test_orientation_from_yaw_pitch() -> None:
    obj = CubeOriObj(id=1, yaw=math.pi / 2, pitch=0.0)
    assert obj.orientation() == pytest.approx((0.0, 1.0, 0.0), abs=1e-12)
    up = CubeOriObj(id=1, yaw=0.0, pitch=math.pi / 2)
    assert up.orientation() == pytest.approx((0.0, 0.0, 1.0), abs=1e-12)
    back = CubeOriObj.decode(CubeOriObj(id=3, yaw=-2.0, pitch=0.5).encode())
    assert back.yaw == pytest.approx(-2.0, abs=1e-4)
    assert back.pitch == pytest.approx(0.5, abs=0.007)


def test_compare_nu_is_percent_of_base() -> None:
    a, b = CubeOriObj(id=1, x=3.0, y=4.0), CubeOriObj(id=1)
    assert a.compare_nu(b, 50.0) == pytest.approx(10.0)
    c = a.clone()
    c.x = 0.0
    assert a.x == 3.0


def test_pack_splits_into_datagrams_and_round_trips() -> None:
    recs = _random_records(np.random.default_rng(2), 80)
    payloads = pack_records(recs)
    assert len(payloads) == 3
    assert all(len(p) <= 1024 for p in payloads)
    assert np.concatenate([unpack_records(p) for p in payloads]).tobytes() == recs.tobytes()
    nz = np.count_nonzero(recs.view(np.uint8).reshape(-1, 24), axis=1)
    starts = np.arange(0, 80, MAX_RECORDS_PER_DATAGRAM)
    assert compressed_sizes(nz, starts).tolist() == [len(p) for p in payloads]


def test_worst_case_datagram_fits_a_transport_message() -> None:
    recs = np.frombuffer(b"\x01" * 24 * MAX_RECORDS_PER_DATAGRAM, dtype=RECORD_DTYPE)
    assert len(pack_records(recs)[0]) == 1 + 3 * 37 + 24 * 37 <= 1024


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=1200))
def test_unpack_garbage_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        unpack_records(data)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 37))
def test_delta_round_trip(seed: int, n: int) -> None:
    rng = np.random.default_rng(seed)
    cur, base = _random_records(rng, n), _random_records(rng, n)
    absolute = rng.uniform(0, 1, n) < 0.3
    base[absolute] = np.zeros(1, dtype=RECORD_DTYPE)
    tags = rng.integers(1, 256, n)
    bases = np.where(absolute, 0, 9)
    payload = write_delta_datagram(77, cur, base, tags, bases)
    store = {(int(cur["id"][i]), 9): base[i : i + 1] for i in range(n)}
    seq, out, missing = read_delta_datagram(payload, store)
    assert seq == 77
    assert missing == 0
    assert b"".join(r.record.tobytes() for r in out) == cur.tobytes()
    assert [r.tag for r in out] == tags.tolist()
    bits = int(delta_record_bits(cur, base).sum()) + 16
    assert len(payload) == (bits + 7) // 8


def test_delta_is_smaller_than_records_for_small_moves() -> None:
    rng = np.random.default_rng(5)
    base = _random_records(rng, 20)
    cur = base.copy()
    cur["x"] += 40
    cur["y"] -= 25
    assert int(delta_record_bits(cur, base).max()) <= 46 + 2 * (2 + 8)
    assert len(write_delta_datagram(1, cur, base, np.ones(20, int), np.ones(20, int))) < 20 * 9


def test_delta_with_unknown_baseline_is_skipped() -> None:
    rng = np.random.default_rng(6)
    cur = _random_records(rng, 3)
    payload = write_delta_datagram(1, cur, cur, [1, 2, 3], [5, 5, 5])
    _, out, missing = read_delta_datagram(payload, {})
    assert out == []
    assert missing == 3


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_delta_garbage_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        read_delta_datagram(data, {})


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(46, 250), max_size=120))
def test_delta_datagram_starts_respect_both_limits(bits: list[int]) -> None:
    starts = delta_datagram_starts(bits).tolist()
    assert starts == ([0] if bits else []) + starts[1:]
    bounds = [*starts, len(bits)]
    for first, end in itertools.pairwise(bounds):
        assert 1 <= end - first <= MAX_RECORDS_PER_DATAGRAM
        assert 2 + (sum(bits[first:end]) + 7) // 8 <= MAX_DELTA_BYTES
        if end < len(bits):  # greedy: the next record would not have fitted
            fuller = bits[first : end + 1]
            assert len(fuller) > MAX_RECORDS_PER_DATAGRAM or 2 + (sum(fuller) + 7) // 8 > 1024


def test_worst_case_delta_datagram_fits_a_transport_message() -> None:
    cur = np.frombuffer(b"\x7f" * 24 * 80, dtype=RECORD_DTYPE).copy()
    cur["id"] = np.arange(80)
    base = np.zeros(80, dtype=RECORD_DTYPE)
    base["x"] = base["y"] = base["z"] = 0x8000 + 0x7F7F
    bits = delta_record_bits(cur, base)
    starts = delta_datagram_starts(bits)
    for part in np.split(np.arange(80), starts[1:]):
        payload = write_delta_datagram(1, cur[part], base[part], np.ones(part.size, int), part * 0)
        assert len(payload) <= MAX_DELTA_BYTES


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 0xFFFF), st.integers(0, 2**32 - 1))
def test_update_ack_round_trip(ack: int, bits: int) -> None:
    payload = write_update_ack(ack, bits)
    assert len(payload) == 6
    assert read_update_ack(payload) == (ack, bits)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=20))
def test_update_ack_garbage_raises_decode_error_only(data: bytes) -> None:
    try:
        assert read_update_ack(data) == (
            int.from_bytes(data[:2], "little"),
            int.from_bytes(data[2:], "little"),
        )
    except DecodeError:
        assert len(data) != 6
    with pytest.raises(LocalProtocolError):
        write_update_ack(70000, 0)
