"""Quantisation stays within its documented error bounds (scalar, numpy, angles, quaternions)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from lagless.errors import LocalProtocolError
from lagless.wire import (
    bits_for_range,
    dequantize,
    dequantize_angle,
    dequantize_angle_array,
    dequantize_array,
    pack_quaternion_smallest_three,
    pack_quaternions_smallest_three,
    quantization_steps,
    quantize,
    quantize_angle,
    quantize_angle_array,
    quantize_array,
    quaternion_error_bound,
    unpack_quaternion_smallest_three,
    unpack_quaternions_smallest_three,
)

FLOAT_SLACK = 1e-9  # absolute; float rounding in (v - lo) / resolution for |v| <= 1e4


@st.composite
def ranges(draw: st.DrawFn) -> tuple[float, float, float]:
    lo = draw(st.floats(-1e4, 1e4))
    span = draw(st.floats(1e-3, 1e4))
    resolution = span / draw(st.integers(1, 2**20))
    return lo, lo + span, resolution


def test_bits_for_range_examples() -> None:
    assert bits_for_range(0.0, 1000.0, 0.01) == 17  # 100000 steps
    assert bits_for_range(-50.0, 50.0, 0.01) == 14  # 10000 steps
    assert bits_for_range(0, 100, 1) == 7  # spec 004 §3.3.1
    assert bits_for_range(0, 2047, 1) == 11  # spec 004 §4.4.2
    assert bits_for_range(3.0, 3.0, 0.1) == 0
    assert quantization_steps(0.0, 1.0, 0.3) == 4  # ceil(3.33)
    assert quantization_steps(0.0, 0.3, 0.1) == 3  # 0.3 / 0.1 = 2.9999999999999996 -> 3


@given(ranges(), st.floats(0, 1))
def test_scalar_error_bound(rng: tuple[float, float, float], t: float) -> None:
    lo, hi, res = rng
    value = min(lo + t * (hi - lo), hi)
    q = quantize(value, lo, hi, res)
    assert 0 <= q <= quantization_steps(lo, hi, res)
    assert q.bit_length() <= bits_for_range(lo, hi, res)
    back = dequantize(q, lo, hi, res)
    assert lo <= back <= hi
    assert abs(back - value) <= res / 2 + FLOAT_SLACK


@given(
    ranges(),
    hnp.arrays(np.float64, st.integers(0, 200), elements=st.floats(0, 1)),
)
def test_array_error_bound_and_scalar_agreement(
    rng: tuple[float, float, float], t: np.ndarray
) -> None:
    lo, hi, res = rng
    values = np.minimum(lo + t * (hi - lo), hi)
    codes = quantize_array(values, lo, hi, res)
    assert codes.dtype == np.uint64
    assert codes.tolist() == [quantize(float(v), lo, hi, res) for v in values]
    back = dequantize_array(codes, lo, hi, res)
    assert np.all(np.abs(back - values) <= res / 2 + FLOAT_SLACK)
    assert np.all((back >= lo) & (back <= hi))


def test_clipping_and_nan() -> None:
    assert quantize(-5.0, 0.0, 10.0, 0.5) == 0
    assert quantize(math.inf, 0.0, 10.0, 0.5) == 20
    assert dequantize(99, 0.0, 10.0, 0.5) == 10.0
    assert dequantize(-3, 0.0, 10.0, 0.5) == 0.0
    # 10 is not a multiple of 4: n = ceil(2.5) = 3 and the top code (12) is clamped to hi.
    assert quantize(10.0, 0.0, 10.0, 4.0) == 3
    assert dequantize(3, 0.0, 10.0, 4.0) == 10.0
    codes = quantize_array(np.array([-1.0, 11.0, -math.inf]), 0.0, 10.0, 0.5)
    assert codes.tolist() == [0, 20, 0]
    assert dequantize_array(np.array([0, 20, 500]), 0.0, 10.0, 0.5).tolist() == [0.0, 10.0, 10.0]
    with pytest.raises(LocalProtocolError, match="NaN"):
        quantize(math.nan, 0.0, 1.0, 0.1)
    with pytest.raises(LocalProtocolError, match="NaN"):
        quantize_array(np.array([0.0, math.nan]), 0.0, 1.0, 0.1)
    with pytest.raises(LocalProtocolError, match="hi >= lo"):
        quantize(0.0, 1.0, 0.0, 0.1)
    with pytest.raises(LocalProtocolError, match="resolution"):
        bits_for_range(0.0, 1.0, -0.1)


def test_out_parameter() -> None:
    values = np.array([0.0, 0.5, 1.0])
    out = np.empty(3, dtype=np.uint32)
    assert quantize_array(values, 0.0, 1.0, 0.25, out=out) is out
    assert out.tolist() == [0, 2, 4]
    fout = np.empty(3)
    assert dequantize_array(out, 0.0, 1.0, 0.25, out=fout) is fout
    assert fout.tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(LocalProtocolError, match="unsigned"):
        quantize_array(values, 0.0, 1.0, 0.25, out=np.empty(3, dtype=np.int32))
    with pytest.raises(LocalProtocolError, match="bits"):
        quantize_array(values, 0.0, 1e6, 1e-3, out=np.empty(3, dtype=np.uint8))


def _circular_error(a: float | np.ndarray, b: float | np.ndarray) -> np.ndarray:
    d = np.mod(np.asarray(a) - np.asarray(b), 2 * math.pi)
    return np.minimum(d, 2 * math.pi - d)


@given(st.floats(-100.0, 100.0), st.integers(1, 32))
def test_angle_error_bound(theta: float, bits: int) -> None:
    q = quantize_angle(theta, bits)
    assert 0 <= q < 2**bits
    back = dequantize_angle(q, bits)
    assert 0.0 <= back < 2 * math.pi
    assert _circular_error(back, theta) <= math.pi / 2**bits + 1e-12


@given(hnp.arrays(np.float64, st.integers(0, 100), elements=st.floats(-50, 50)), st.integers(1, 32))
def test_angle_array_error_bound(theta: np.ndarray, bits: int) -> None:
    codes = quantize_angle_array(theta, bits)
    assert codes.tolist() == [quantize_angle(float(t), bits) for t in theta]
    back = dequantize_angle_array(codes, bits)
    assert np.all((back >= 0.0) & (back < 2 * math.pi))
    assert np.all(_circular_error(back, theta) <= math.pi / 2**bits + 1e-12)


def test_angle_errors() -> None:
    with pytest.raises(LocalProtocolError, match="bits"):
        quantize_angle(0.0, 0)
    with pytest.raises(LocalProtocolError, match="finite"):
        quantize_angle(math.inf, 8)
    with pytest.raises(LocalProtocolError, match="finite"):
        quantize_angle_array(np.array([math.nan]), 8)
    assert quantize_angle(2 * math.pi - 1e-9, 10) == 0  # wraps
    out = np.empty(2, dtype=np.uint16)
    assert quantize_angle_array([math.pi, -math.pi / 2], 10, out=out) is out
    assert out.tolist() == [512, 768]
    assert dequantize_angle(1024 + 256, 10) == math.pi / 2


def _canonical(q: np.ndarray) -> np.ndarray:
    unit = q / np.linalg.norm(q, axis=1, keepdims=True)
    idx = np.argmax(np.abs(unit), axis=1)
    sign = np.where(unit[np.arange(len(unit)), idx] < 0, -1.0, 1.0)
    return unit * sign[:, None]


def test_quaternion_error_bound() -> None:
    rng = np.random.default_rng(20240501)
    quats = rng.normal(size=(200_000, 4))
    quats = np.concatenate([quats, np.eye(4), -np.eye(4), np.full((1, 4), 0.5)])
    for bits in (6, 10, 16):
        codes = pack_quaternions_smallest_three(quats, bits)
        assert int(codes.max()) < 2 ** (3 * bits + 2)
        back = unpack_quaternions_smallest_three(codes, bits)
        err = np.abs(back - _canonical(quats)).max()
        assert err <= quaternion_error_bound(bits)
        # The bound is not vacuous: the measured error is within a factor 10 of it.
        assert err > quaternion_error_bound(bits) / 10


@given(hnp.arrays(np.float64, 4, elements=st.floats(-1, 1)), st.integers(2, 20))
def test_scalar_quaternion_matches_vectorised(q: np.ndarray, bits: int) -> None:
    if np.linalg.norm(q) < 1e-3:
        return
    code = pack_quaternion_smallest_three(q, bits)
    assert code == int(pack_quaternions_smallest_three(q[None, :], bits)[0])
    back = np.array(unpack_quaternion_smallest_three(code, bits))
    assert np.abs(back - _canonical(q[None, :])[0]).max() <= quaternion_error_bound(bits)


def test_identity_quaternion_exact() -> None:
    code = pack_quaternion_smallest_three((1.0, 0.0, 0.0, 0.0))
    assert unpack_quaternion_smallest_three(code) == (1.0, 0.0, 0.0, 0.0)
    assert code >> 30 == 0  # index 0 (w) dropped


@given(st.integers(0, 2**64 - 1), st.integers(2, 20))
def test_any_quaternion_code_decodes(code: int, bits: int) -> None:
    back = unpack_quaternion_smallest_three(code, bits)
    assert all(math.isfinite(c) for c in back)


def test_quaternion_errors() -> None:
    with pytest.raises(LocalProtocolError, match="non-zero"):
        pack_quaternion_smallest_three((0.0, 0.0, 0.0, 0.0))
    with pytest.raises(LocalProtocolError, match="4 components"):
        pack_quaternion_smallest_three((1.0, 0.0, 0.0))
    with pytest.raises(LocalProtocolError, match=r"\(N, 4\)"):
        pack_quaternions_smallest_three(np.ones((2, 3)))
    with pytest.raises(LocalProtocolError, match="bits_per_component"):
        quaternion_error_bound(21)
