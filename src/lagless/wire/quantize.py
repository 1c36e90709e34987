"""Scalar and vectorised (numpy) quantisation with stated error bounds.

Implements spec 004 §3.3.1 / §4.4.3 (range-quantised floats: "declare a minimum and maximum") and
§5.1.1 (velocities compressed by a declared min/max speed), plus the angle and smallest-three
quaternion encodings used for orientation. Every function states its worst-case error. Decisions:

* **Linear quantiser.** ``n = steps(lo, hi, resolution) = ceil((hi - lo) / resolution)``, computed
  with a relative tolerance of 1e-9 so that ``1000 / 0.01`` gives 100000 steps and not 100001;
  ``q = floor((clip(v, lo, hi) - lo) / resolution + 0.5)`` (round half up, identical in the scalar
  and numpy paths); ``v' = min(lo + q * resolution, hi)``; ``bits = n.bit_length()``
  (``test_quantize.py::test_bits_for_range_examples``). Worst-case error for ``v`` in
  ``[lo, hi]`` is ``resolution / 2`` (plus float rounding of order ``1e-15 * max(|lo|, |hi|)``).
* **Out-of-range values saturate** (clip to ``[lo, hi]``) instead of raising: physics values that
  overshoot a declared range by a hair are normal. NaN is a caller mistake and raises
  ``LocalProtocolError`` (``test_quantize.py::test_clipping_and_nan``).
* **Dequantising saturates too**: ``q`` outside ``[0, n]`` maps to ``lo`` / ``hi``. Strict checks of
  received codes belong to the reader (``BitReader.serialize_float`` raises ``DecodeError`` for
  ``q > n``).
* **Angles** wrap to ``[0, 2π)``, ``q = round(θ / 2π · 2^bits) mod 2^bits``; worst-case circular
  error ``π / 2^bits`` (``test_quantize.py::test_angle_error_bound``).
* **Smallest-three quaternions** ``(w, x, y, z)``: the input is normalised, the largest-magnitude
  component is dropped and made non-negative (``q`` and ``-q`` are the same rotation), the other
  three are quantised over ``[-1/√2, 1/√2]`` with ``b`` bits each, on ``2^b - 2`` steps so that
  0 is exact (the identity rotation round-trips exactly; code ``2^b - 1`` is unused and
  saturates). Packed integer, LSB first: ``c0 | c1 << b | c2 << 2b | index << 3b`` (``3b + 2``
  bits; 32 for ``b = 10``), ``c0..c2`` in ``w, x, y, z`` order skipping the dropped one. The
  output is not renormalised. Worst-case per-component error against the sign-canonical input
  is ``6ε + 6ε²``, ``ε = (1/√2) / (2^b - 2)`` (``test_quantize.py::test_quaternion_error_bound``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError

__all__ = [
    "bits_for_range",
    "dequantize",
    "dequantize_angle",
    "dequantize_angle_array",
    "dequantize_array",
    "pack_quaternion_smallest_three",
    "pack_quaternions_smallest_three",
    "quantization_steps",
    "quantize",
    "quantize_angle",
    "quantize_angle_array",
    "quantize_array",
    "quaternion_error_bound",
    "unpack_quaternion_smallest_three",
    "unpack_quaternions_smallest_three",
]

TWO_PI: Final = 2.0 * math.pi  # radians
_STEP_TOLERANCE: Final = 1e-9  # relative; absorbs float error in (hi - lo) / resolution
_QUAT_RANGE: Final = 1.0 / math.sqrt(2.0)  # largest possible magnitude of a non-largest component
_MAX_ANGLE_BITS: Final = 32  # bits; beyond this float64 angles have no more precision to give
_MAX_QUAT_BITS: Final = 20  # bits per component; 3 * 20 + 2 = 62 fits a uint64
# Columns of the three transmitted components, indexed by the dropped component's position.
_KEEP: Final = np.array([[1, 2, 3], [0, 2, 3], [0, 1, 3], [0, 1, 2]], dtype=np.intp)


def quantization_steps(lo: float, hi: float, resolution: float) -> int:
    """Return ``n``, the largest quantised code for ``[lo, hi]`` at ``resolution``.

    Args:
        lo: Lower bound of the range (any unit; same unit as ``hi`` and ``resolution``).
        hi: Upper bound, ``>= lo``.
        resolution: Quantisation step, ``> 0``.

    Returns:
        ``ceil((hi - lo) / resolution)`` with a 1e-9 relative tolerance; codes are ``0..n``.

    Raises:
        LocalProtocolError: Non-finite bounds, ``hi < lo`` or ``resolution <= 0``.

    Examples:
        >>> quantization_steps(0.0, 1000.0, 0.01), quantization_steps(-50.0, 50.0, 0.01)
        (100000, 10000)
    """
    if not (math.isfinite(lo) and math.isfinite(hi) and hi >= lo):
        raise LocalProtocolError(f"range must be finite with hi >= lo, got lo={lo}, hi={hi}")
    if not (math.isfinite(resolution) and resolution > 0.0):
        raise LocalProtocolError(f"resolution must be finite and > 0, got {resolution}")
    x = (hi - lo) / resolution
    nearest = round(x)
    if abs(x - nearest) <= _STEP_TOLERANCE * max(1.0, x):
        return int(nearest)
    return math.ceil(x)


def bits_for_range(lo: float, hi: float, resolution: float) -> int:
    """Return the number of bits a value in ``[lo, hi]`` at ``resolution`` needs on the wire.

    Args:
        lo: Lower bound of the range.
        hi: Upper bound, ``>= lo``.
        resolution: Quantisation step, ``> 0`` (same unit as the bounds).

    Returns:
        ``ceil(log2(n + 1))`` with ``n = quantization_steps(lo, hi, resolution)``; 0 when
        ``lo == hi``.

    Raises:
        LocalProtocolError: Invalid range or resolution.

    Examples:
        >>> bits_for_range(0.0, 1000.0, 0.01), bits_for_range(-50.0, 50.0, 0.01)
        (17, 14)
        >>> bits_for_range(0, 100, 1)  # spec 004 §3.3.1: an integer in 0..100 needs 7 bits
        7
    """
    return quantization_steps(lo, hi, resolution).bit_length()


def quantize(value: float, lo: float, hi: float, resolution: float) -> int:
    """Quantise ``value`` to an integer code in ``[0, n]``.

    Values outside ``[lo, hi]`` are clipped first. Worst-case error of
    ``dequantize(quantize(v))`` for ``v`` in ``[lo, hi]``: ``resolution / 2``.

    Args:
        value: The value (same unit as the bounds).
        lo: Lower bound of the range.
        hi: Upper bound.
        resolution: Quantisation step.

    Returns:
        The code ``floor((clip(value) - lo) / resolution + 0.5)``, capped at ``n``.

    Raises:
        LocalProtocolError: ``value`` is NaN, or the range/resolution is invalid.

    Examples:
        >>> q = quantize(123.456, 0.0, 1000.0, 0.01); q
        12346
        >>> abs(dequantize(q, 0.0, 1000.0, 0.01) - 123.456) <= 0.01 / 2
        True
    """
    n = quantization_steps(lo, hi, resolution)
    if value != value:
        raise LocalProtocolError("value must not be NaN")
    clipped = min(max(value, lo), hi)
    return min(math.floor((clipped - lo) / resolution + 0.5), n)


def dequantize(q: int, lo: float, hi: float, resolution: float) -> float:
    """Map a code back to a value: ``min(lo + q * resolution, hi)``.

    Codes outside ``[0, n]`` saturate to ``lo`` / ``hi``. Error bound: see ``quantize``
    (``resolution / 2`` for a value that was in range).

    Args:
        q: The integer code.
        lo: Lower bound of the range.
        hi: Upper bound.
        resolution: Quantisation step.

    Returns:
        The reconstructed value in ``[lo, hi]``.

    Raises:
        LocalProtocolError: Invalid range or resolution.

    Examples:
        >>> dequantize(100000, 0.0, 1000.0, 0.01), dequantize(5000, -50.0, 50.0, 0.01)
        (1000.0, 0.0)
    """
    n = quantization_steps(lo, hi, resolution)
    q = min(max(q, 0), n)
    return min(lo + q * resolution, hi)


def _code_dtype(out: npt.NDArray[np.unsignedinteger] | None, bits: int) -> np.dtype[np.generic]:
    if out is None:
        return np.dtype(np.uint64)
    if out.dtype.kind != "u" or out.dtype.itemsize * 8 < bits:
        raise LocalProtocolError(
            f"out must be an unsigned integer array with >= {bits} bits per item, got {out.dtype}"
        )
    return out.dtype


def quantize_array(
    values: npt.ArrayLike,
    lo: float,
    hi: float,
    resolution: float,
    out: npt.NDArray[np.unsignedinteger] | None = None,
) -> npt.NDArray[np.unsignedinteger]:
    """Vectorised ``quantize``: clip to ``[lo, hi]``, then round half up to codes ``0..n``.

    Worst-case error after ``dequantize_array`` for in-range values: ``resolution / 2``.
    Out-of-range values are clipped (saturated) to the nearest bound.

    Args:
        values: Float array of any shape (same unit as the bounds).
        lo: Lower bound of the range.
        hi: Upper bound.
        resolution: Quantisation step.
        out: Optional unsigned integer array of the same shape to write into.

    Returns:
        The codes; ``uint64`` unless ``out`` is given, in which case ``out`` is returned.

    Raises:
        LocalProtocolError: Any value is NaN; invalid range, resolution or ``out``.

    Examples:
        >>> values = np.array([-1.0, 0.004, 0.005, 999.999, 2000.0])
        >>> codes = quantize_array(values, 0.0, 1000.0, 0.01)
        >>> codes.tolist()
        [0, 0, 1, 100000, 100000]
        >>> v = np.linspace(0.0, 1000.0, 1001)
        >>> back = dequantize_array(quantize_array(v, 0, 1000, 0.01), 0, 1000, 0.01)
        >>> bool(np.all(np.abs(back - v) <= 0.005 + 1e-9))
        True
    """
    n = quantization_steps(lo, hi, resolution)
    dtype = _code_dtype(out, n.bit_length())
    x = np.asarray(values, dtype=np.float64)
    scaled = np.subtract(x, lo)
    np.divide(scaled, resolution, out=scaled)
    np.add(scaled, 0.5, out=scaled)
    np.floor(scaled, out=scaled)
    if np.isnan(scaled).any():
        raise LocalProtocolError("values must not contain NaN")
    np.clip(scaled, 0.0, float(n), out=scaled)
    if out is None:
        return scaled.astype(dtype)
    np.copyto(out, scaled, casting="unsafe")
    return out


def dequantize_array(
    codes: npt.ArrayLike,
    lo: float,
    hi: float,
    resolution: float,
    out: npt.NDArray[np.float64] | None = None,
) -> npt.NDArray[np.float64]:
    """Vectorised ``dequantize``: ``min(lo + clip(q, 0, n) * resolution, hi)``.

    Codes above ``n`` saturate to ``hi``. Error bound: ``resolution / 2`` for values that were in
    range when quantised.

    Args:
        codes: Integer array of codes.
        lo: Lower bound of the range.
        hi: Upper bound.
        resolution: Quantisation step.
        out: Optional float64 array of the same shape to write into.

    Returns:
        Float64 values in ``[lo, hi]``.

    Raises:
        LocalProtocolError: Invalid range or resolution.

    Examples:
        >>> dequantize_array(np.array([0, 12346, 100000, 200000]), 0.0, 1000.0, 0.01).tolist()
        [0.0, 123.46000000000001, 1000.0, 1000.0]
    """
    n = quantization_steps(lo, hi, resolution)
    q = np.asarray(codes)
    result: npt.NDArray[np.float64] = np.minimum(q, n, out=out, dtype=np.float64, casting="unsafe")
    np.maximum(result, 0.0, out=result)
    np.multiply(result, resolution, out=result)
    np.add(result, lo, out=result)
    np.minimum(result, hi, out=result)
    return result


def _check_angle_bits(bits: int) -> int:
    if not 1 <= bits <= _MAX_ANGLE_BITS:
        raise LocalProtocolError(f"angle bits must be in [1, {_MAX_ANGLE_BITS}], got {bits}")
    return 1 << bits


def quantize_angle(theta: float, bits: int) -> int:
    """Quantise an angle (radians, any value) to a ``bits``-wide code; wraps to ``[0, 2π)``.

    Worst-case circular error of ``dequantize_angle(quantize_angle(θ, b), b)``: ``π / 2^b``
    (3.07e-3 rad for 10 bits).

    Args:
        theta: Angle in radians (finite).
        bits: Code width, 1..32.

    Returns:
        ``round_half_up(θ mod 2π / 2π · 2^bits) mod 2^bits``.

    Raises:
        LocalProtocolError: ``theta`` is not finite or ``bits`` is out of range.

    Examples:
        >>> [quantize_angle(a, 10) for a in (math.pi, -math.pi / 2, 6.2831)]
        [512, 768, 0]
    """
    size = _check_angle_bits(bits)
    if not math.isfinite(theta):
        raise LocalProtocolError(f"theta must be finite, got {theta}")
    return math.floor((theta % TWO_PI) / TWO_PI * size + 0.5) % size


def dequantize_angle(q: int, bits: int) -> float:
    """Map an angle code back to radians in ``[0, 2π)``: ``(q mod 2^bits) · 2π / 2^bits``.

    Error bound: see ``quantize_angle`` (``π / 2^bits``).

    Args:
        q: The code (taken modulo ``2^bits``).
        bits: Code width, 1..32.

    Returns:
        The angle in radians.

    Raises:
        LocalProtocolError: ``bits`` is out of range.

    Examples:
        >>> dequantize_angle(512, 10) == math.pi
        True
    """
    size = _check_angle_bits(bits)
    return (q % size) * TWO_PI / size


def quantize_angle_array(
    theta: npt.ArrayLike, bits: int, out: npt.NDArray[np.unsignedinteger] | None = None
) -> npt.NDArray[np.unsignedinteger]:
    """Vectorised ``quantize_angle``; worst-case circular error ``π / 2^bits``.

    Args:
        theta: Angles in radians (finite), any shape.
        bits: Code width, 1..32.
        out: Optional unsigned integer array of the same shape to write into.

    Returns:
        The codes; ``uint64`` unless ``out`` is given.

    Raises:
        LocalProtocolError: Any angle is not finite; invalid ``bits`` or ``out``.

    Examples:
        >>> quantize_angle_array(np.array([0.0, math.pi, -math.pi / 2, 7.0]), 10).tolist()
        [0, 512, 768, 117]
    """
    size = _check_angle_bits(bits)
    dtype = _code_dtype(out, bits)
    x = np.asarray(theta, dtype=np.float64)
    if not np.isfinite(x).all():
        raise LocalProtocolError("theta must be finite")
    scaled = np.mod(x, TWO_PI)
    np.multiply(scaled, size / TWO_PI, out=scaled)
    np.add(scaled, 0.5, out=scaled)
    np.floor(scaled, out=scaled)
    np.mod(scaled, size, out=scaled)
    if out is None:
        return scaled.astype(dtype)
    np.copyto(out, scaled, casting="unsafe")
    return out


def dequantize_angle_array(
    codes: npt.ArrayLike, bits: int, out: npt.NDArray[np.float64] | None = None
) -> npt.NDArray[np.float64]:
    """Vectorised ``dequantize_angle``: radians in ``[0, 2π)``; error bound ``π / 2^bits``.

    Args:
        codes: Integer codes (taken modulo ``2^bits``).
        bits: Code width, 1..32.
        out: Optional float64 array of the same shape to write into.

    Returns:
        Angles in radians.

    Raises:
        LocalProtocolError: ``bits`` is out of range.

    Examples:
        >>> angles = dequantize_angle_array(np.array([0, 256, 1024 + 512]), 10)
        >>> angles.tolist() == [0.0, math.pi / 2, math.pi]
        True
    """
    size = _check_angle_bits(bits)
    q = np.mod(np.asarray(codes, dtype=np.uint64), np.uint64(size))
    result = np.multiply(q, TWO_PI / size, out=out, dtype=np.float64, casting="unsafe")
    return result


def _check_quat_bits(bits: int) -> int:
    if not 2 <= bits <= _MAX_QUAT_BITS:
        raise LocalProtocolError(f"bits_per_component must be in [2, {_MAX_QUAT_BITS}], got {bits}")
    return (1 << bits) - 2


def quaternion_error_bound(bits_per_component: int = 10) -> float:
    """Return the worst-case per-component error of the smallest-three codec.

    The bound is ``6ε + 6ε²`` with ``ε = (1/√2) / (2^b - 2)`` the error of one quantised small
    component: the dropped component ``w = sqrt(1 - Σa²)`` is at least 1/2, so
    ``|ŵ - w| <= |Σâ² - Σa²| / w <= (2ε·Σ|a| + 3ε²) / w`` with ``Σ|a| <= 3/2``.

    Args:
        bits_per_component: Bits per quantised component, 2..20.

    Returns:
        The bound (dimensionless; quaternion components).

    Raises:
        LocalProtocolError: ``bits_per_component`` is out of range.

    Examples:
        >>> round(quaternion_error_bound(10), 6)
        0.004154
    """
    eps = _QUAT_RANGE / _check_quat_bits(bits_per_component)
    return 6.0 * eps + 6.0 * eps * eps


def pack_quaternion_smallest_three(
    q: Sequence[float] | npt.NDArray[np.float64], bits_per_component: int = 10
) -> int:
    """Pack a rotation quaternion ``(w, x, y, z)`` into ``3b + 2`` bits (smallest three).

    Layout (LSB first): ``c0 | c1 << b | c2 << 2b | index << 3b``, ``index`` = position of the
    dropped largest-magnitude component (0 = w). Error bound: ``quaternion_error_bound(b)``
    per component, against the input normalised and sign-flipped so the dropped component is >= 0.

    Args:
        q: Four components ``(w, x, y, z)``; normalised here, must be finite and non-zero.
        bits_per_component: Bits per transmitted component ``b``, 2..20.

    Returns:
        The packed code, in ``[0, 2^(3b+2))``.

    Raises:
        LocalProtocolError: Wrong length, non-finite or zero-norm input, or bad ``b``.

    Examples:
        >>> code = pack_quaternion_smallest_three((0.5, 0.5, -0.5, 0.5))
        >>> code < 2**32
        True
        >>> err = max(abs(a - b) for a, b in zip(unpack_quaternion_smallest_three(code),
        ...                                      (0.5, 0.5, -0.5, 0.5)))
        >>> err <= quaternion_error_bound(10)
        True
    """
    arr = np.asarray(q, dtype=np.float64)
    if arr.shape != (4,):
        raise LocalProtocolError(
            f"quaternion must have 4 components (w, x, y, z), got shape {arr.shape}"
        )
    return int(pack_quaternions_smallest_three(arr.reshape(1, 4), bits_per_component)[0])


def unpack_quaternion_smallest_three(
    code: int, bits_per_component: int = 10
) -> tuple[float, float, float, float]:
    """Unpack a smallest-three code into ``(w, x, y, z)`` (not renormalised).

    Error bound: ``quaternion_error_bound(b)`` per component. Codes from the network cannot make
    this fail: any ``3b + 2``-bit value decodes (higher bits are ignored).

    Args:
        code: The packed code.
        bits_per_component: Bits per transmitted component ``b``, 2..20.

    Returns:
        The quaternion; its largest-magnitude component is the non-negative reconstructed one.

    Raises:
        LocalProtocolError: Bad ``b``.

    Examples:
        >>> packed = pack_quaternion_smallest_three((1, 0, 0, 0))
        >>> w, x, y, z = unpack_quaternion_smallest_three(packed)
        >>> (w, abs(x) < 1e-3, abs(y) < 1e-3, abs(z) < 1e-3)
        (1.0, True, True, True)
    """
    result = unpack_quaternions_smallest_three(
        np.array([code & ((1 << 64) - 1)], dtype=np.uint64), bits_per_component
    )
    w, x, y, z = (float(v) for v in result[0])
    return (w, x, y, z)


def pack_quaternions_smallest_three(
    q: npt.ArrayLike, bits_per_component: int = 10
) -> npt.NDArray[np.uint64]:
    """Vectorised smallest-three packing of an ``(N, 4)`` array of ``(w, x, y, z)`` quaternions.

    Same layout and error bound (``quaternion_error_bound(b)`` per component) as
    ``pack_quaternion_smallest_three``.

    Args:
        q: Array of shape ``(N, 4)``; each row is normalised here (finite, non-zero).
        bits_per_component: Bits per transmitted component ``b``, 2..20.

    Returns:
        ``uint64`` codes of shape ``(N,)``.

    Raises:
        LocalProtocolError: Wrong shape, non-finite or zero-norm rows, or bad ``b``.

    Examples:
        >>> pack_quaternions_smallest_three(np.array([[1.0, 0, 0, 0], [0, 0, 0, -2.0]])).tolist()
        [536346111, 3757571583]
    """
    levels = _check_quat_bits(bits_per_component)
    arr = np.asarray(q, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise LocalProtocolError(f"quaternions must have shape (N, 4), got {arr.shape}")
    norms = np.sqrt(np.einsum("ij,ij->i", arr, arr))
    if not (np.isfinite(norms).all() and (norms > 0.0).all()):
        raise LocalProtocolError("quaternions must be finite and non-zero")
    unit = arr / norms[:, None]
    rows = np.arange(len(unit))
    index = np.argmax(np.abs(unit), axis=1)
    sign = np.where(unit[rows, index] < 0.0, -1.0, 1.0)
    unit *= sign[:, None]
    keep = _KEEP[index]  # (N, 3) columns of the three transmitted components
    small = np.take_along_axis(unit, keep, axis=1)
    codes = np.floor((small + _QUAT_RANGE) * (levels / (2.0 * _QUAT_RANGE)) + 0.5)
    np.clip(codes, 0, levels, out=codes)
    c = codes.astype(np.uint64)
    b = np.uint64(bits_per_component)
    packed: npt.NDArray[np.uint64] = (
        c[:, 0] | (c[:, 1] << b) | (c[:, 2] << (b + b)) | (index.astype(np.uint64) << (3 * b))
    )
    return packed


def unpack_quaternions_smallest_three(
    codes: npt.ArrayLike, bits_per_component: int = 10
) -> npt.NDArray[np.float64]:
    """Vectorised smallest-three unpacking into an ``(N, 4)`` float64 array of ``(w, x, y, z)``.

    Error bound: ``quaternion_error_bound(b)`` per component. Any code decodes (bits above
    ``3b + 2`` are ignored), so network input cannot make it raise.

    Args:
        codes: Integer codes, shape ``(N,)``.
        bits_per_component: Bits per transmitted component ``b``, 2..20.

    Returns:
        Quaternions, not renormalised.

    Raises:
        LocalProtocolError: Bad ``b``.

    Examples:
        >>> unpack_quaternions_smallest_three(np.array([536346111]))[0].round(3).tolist()
        [1.0, 0.0, 0.0, 0.0]
    """
    levels = _check_quat_bits(bits_per_component)
    c = np.asarray(codes).astype(np.uint64).reshape(-1)
    b = np.uint64(bits_per_component)
    mask = np.uint64((1 << bits_per_component) - 1)
    index = ((c >> (3 * b)) & np.uint64(3)).astype(np.intp)
    small = np.empty((len(c), 3), dtype=np.float64)
    for k in range(3):
        small[:, k] = ((c >> (b * np.uint64(k))) & mask).astype(np.float64)
    np.minimum(small, levels, out=small)  # the unused top code 2^b - 1 saturates
    small *= 2.0 * _QUAT_RANGE / levels
    small -= _QUAT_RANGE
    largest = np.sqrt(np.maximum(0.0, 1.0 - np.einsum("ij,ij->i", small, small)))
    result = np.empty((len(c), 4), dtype=np.float64)
    rows = np.arange(len(c))
    result[rows, index] = largest
    np.put_along_axis(result, _KEEP[index], small, axis=1)
    return result
