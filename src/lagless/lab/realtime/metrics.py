"""Metrics of a Realtime Simulator run: position error, smoothness, jumps, send rates.

Implements the statistics overlay of spec 000 §4.1 (``avrgDataSent`` / ``maxDataSent`` payload
kB/s, ``avgDistanceError`` / ``maxDistanceError`` per frame) and spec 004 §5.3.5 (DeviationA, the
mean distance between true and shown path; DeviationB, the difference of the two paths'
"smoothness"), plus the objective jump/freeze counts spec 000 §4.1 asks for in place of the
subjective movement grade. Pure functions over numpy arrays; SI units (metres, seconds, bytes).

Decisions:
    * DeviationB's loose index ranges (spec 004 §5.3.5) are fixed as the population standard
      deviation of the n - 1 step lengths of n points (``test_metrics.py::test_smoothness``).
    * Jumps and freezes are local spikes of one path's step-length series, so a delayed but
      smooth path (interpolation, a render delay) counts none: a **jump** is a step longer than
      ``JUMP_FACTOR`` x the median of the two steps on each side plus a floor (the caller passes
      5 % of the entity length); a **freeze** (stutter) is a step shorter than ``FREEZE_FACTOR`` x
      that median while the median exceeds the floor. Spec 004's point-to-point hold-and-jump
      counts both (``test_metrics.py::test_jumps_and_freezes``). The true path has a few of its
      own (instant reversals); experiments report them as ``truth_jumps``/``truth_freezes``.
    * kB are 1000 bytes. The maximum rate is the largest payload sum over consecutive 1-second
      windows starting at the first frame (the thesis's per-second ``maxDataSent``); a trailing
      partial window counts only when the run is shorter than one window
      (``test_metrics.py::test_rates``).
    * Wire rates add ``UDP_IPV4_HEADER`` (28 bytes) per datagram: the Realtime Simulator's
      DatagramManager sends every update at once in its own datagram (spec 000 §3.3).
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError
from lagless.netsim import UDP_IPV4_HEADER

__all__ = [
    "FREEZE_FACTOR",
    "JUMP_FACTOR",
    "KB",
    "count_freezes",
    "count_jumps",
    "deviation_a",
    "deviation_b",
    "position_error",
    "send_rate",
    "smoothness",
    "step_lengths",
    "wire_sizes",
]

FloatArray = npt.NDArray[np.float64]

KB: Final = 1000.0  # bytes per kB in every rate the lab reports
JUMP_FACTOR: Final = 2.0  # a step longer than 2 x its neighbours' median (plus floor) is a jump
FREEZE_FACTOR: Final = 0.5  # a step shorter than half its (moving) neighbours' median freezes
RATE_WINDOW: Final = 1.0  # seconds: window of the maximum send rate (spec 000 §4.1)


def _pair(a: FloatArray, b: FloatArray, what: str) -> None:
    if a.shape != b.shape or a.ndim != 1:
        raise LocalProtocolError(f"{what} must be 1-D arrays of equal length")


def position_error(
    true_x: FloatArray, true_y: FloatArray, shown_x: FloatArray, shown_y: FloatArray
) -> FloatArray:
    """Return the per-frame distance between the true and the shown position (spec 000 §4.1).

    Args:
        true_x: True x per frame, m.
        true_y: True y per frame, m.
        shown_x: Displayed x per frame, m.
        shown_y: Displayed y per frame, m.

    Returns:
        Distances, m (``Dist`` of spec 004 Gl. 5.3).

    Example:
        >>> position_error(np.zeros(2), np.zeros(2), np.array([3.0, 0.0]), np.array([4.0, 1.0]))
        array([5., 1.])
    """
    _pair(true_x, shown_x, "positions")
    _pair(true_y, shown_y, "positions")
    return np.hypot(shown_x - true_x, shown_y - true_y)


def deviation_a(error: FloatArray) -> float:
    """Return spec 004's DeviationA (Gl. 5.2): the mean of the per-sample distances.

    Args:
        error: Distances from ``position_error``, m.

    Returns:
        The mean distance, m; NaN for an empty series.
    """
    return float(np.mean(error)) if error.size else math.nan


def step_lengths(x: FloatArray, y: FloatArray) -> FloatArray:
    """Return the n - 1 distances between consecutive samples of a path.

    Args:
        x: Path x, m.
        y: Path y, m.

    Returns:
        Step lengths, m.
    """
    _pair(x, y, "x and y")
    return np.hypot(np.diff(x), np.diff(y))


def smoothness(x: FloatArray, y: FloatArray) -> float:
    """Return spec 004's ``Smoothness`` (Gl. 5.5/5.6): population std of the step lengths.

    Args:
        x: Path x, m.
        y: Path y, m.

    Returns:
        The standard deviation of the n - 1 step lengths, m; 0 for fewer than two points.

    Example:
        >>> smoothness(np.array([0.0, 1.0, 2.0, 4.0]), np.zeros(4))
        0.4714045207910317
    """
    steps = step_lengths(x, y)
    return float(np.std(steps)) if steps.size else 0.0


def deviation_b(
    true_x: FloatArray, true_y: FloatArray, shown_x: FloatArray, shown_y: FloatArray
) -> float:
    """Return spec 004's DeviationB (Gl. 5.4): ``|Smoothness(true) - Smoothness(shown)|``.

    Args:
        true_x: True path x, m.
        true_y: True path y, m.
        shown_x: Displayed path x, m.
        shown_y: Displayed path y, m.

    Returns:
        The absolute difference of the two smoothness values, m.
    """
    _pair(true_x, shown_x, "paths")
    return abs(smoothness(true_x, true_y) - smoothness(shown_x, shown_y))


def _neighbour_median(steps: FloatArray) -> FloatArray:
    """Median of the two steps before and the two after each interior step (length n - 4)."""
    windows = np.lib.stride_tricks.sliding_window_view(steps, 5)
    return np.median(windows[:, [0, 1, 3, 4]], axis=1)


def count_jumps(steps: FloatArray, *, floor: float) -> int:
    """Count jumps: steps far longer than the steps around them (a teleport in the shown path).

    Args:
        steps: Step length per frame of one path, m (``step_lengths``).
        floor: Extra distance a step must exceed, m (> 0; e.g. 5 % of the entity length).

    Returns:
        Interior steps with ``step > JUMP_FACTOR x median(two steps each side) + floor``.

    Example:
        >>> count_jumps(np.array([0.1, 0.1, 0.1, 0.9, 0.1, 0.1, 0.1]), floor=0.05)
        1
    """
    if steps.ndim != 1:
        raise LocalProtocolError("steps must be a 1-D array")
    if steps.size < 5:
        return 0
    reference = _neighbour_median(steps)
    return int(np.count_nonzero(steps[2:-2] > JUMP_FACTOR * reference + floor))


def count_freezes(steps: FloatArray, *, floor: float) -> int:
    """Count freezes (stutter): a path that stands still between frames in which it moves.

    Args:
        steps: Step length per frame of one path, m.
        floor: Smallest neighbour step (median) that counts as moving, m.

    Returns:
        Interior steps with ``median(two steps each side) > floor`` and
        ``step < FREEZE_FACTOR x`` that median.

    Example:
        >>> steps = np.array([0.2, 0.2, 0.2, 0.0, 0.2, 0.2, 0.2, 0.2, 0.0, 0.2, 0.2])
        >>> count_freezes(steps, floor=0.05)
        2
    """
    if steps.ndim != 1:
        raise LocalProtocolError("steps must be a 1-D array")
    if steps.size < 5:
        return 0
    reference = _neighbour_median(steps)
    inner = steps[2:-2]
    return int(np.count_nonzero((reference > floor) & (inner < FREEZE_FACTOR * reference)))


def send_rate(
    send_times: FloatArray, sizes: FloatArray, *, start: float, duration: float
) -> tuple[float, float]:
    """Return the average and the maximum per-second send rate of a stream of datagrams.

    Args:
        send_times: Send time of each datagram, s.
        sizes: Bytes of each datagram (payload, or payload + headers for wire rates).
        start: Start of the run, s.
        duration: Length of the run, s (> 0).

    Returns:
        ``(average, maximum)`` in kB/s (1 kB = 1000 bytes); the maximum is over whole
        ``RATE_WINDOW`` windows from ``start``.

    Example:
        >>> send_rate(np.array([0.0, 0.5, 1.5]), np.array([500.0, 500.0, 300.0]),
        ...           start=0.0, duration=2.0)
        (0.65, 1.0)
    """
    _pair(send_times, sizes, "send times and sizes")
    if not duration > 0:
        raise LocalProtocolError(f"duration must be > 0 s, got {duration}")
    average = float(np.sum(sizes)) / duration / KB
    windows = max(1, int(duration // RATE_WINDOW))
    index = np.floor((send_times - start) / RATE_WINDOW).astype(np.int64)
    keep = (index >= 0) & (index < windows)
    sums = np.bincount(index[keep], weights=sizes[keep], minlength=windows)
    return average, float(np.max(sums)) / RATE_WINDOW / KB


def wire_sizes(payload_sizes: FloatArray) -> FloatArray:
    """Return on-wire datagram sizes: payload plus the 28-byte IPv4 + UDP header.

    Args:
        payload_sizes: Payload bytes per datagram.

    Returns:
        Bytes per datagram on the wire.
    """
    return payload_sizes + float(UDP_IPV4_HEADER)
