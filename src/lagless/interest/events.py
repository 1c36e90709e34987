"""Positional event filtering: which clients a sound or a shot concerns (spec 001 §3.6, §3.8).

Implements ``ClientIDsAffectedByPositionableEvent`` in both forms as pure vectorised functions
over every client's pivots: a point event within a radius, and a segment event whose origin or
destination lies inside a zone of index ≤ k. The policies' ``filter_sound`` / ``filter_shot``
call these with their own pivot tables.

Ambiguity decisions (spec 001 §6.2), pinned in ``tests/interest/test_events.py``:

* The radius and the zone test are inclusive (``d ≤ r``), as zone classification is
  (``test_sound_radius_is_inclusive``).
* The shot test uses zones only, not FoV bands, as the thesis text describes
  (``test_shot_ignores_fov``); a client with several pivots is concerned when any pivot is.
* A client without a pivot with known position is never concerned (``test_no_pivot_no_events``).
* The sender is not excluded: the caller masks it out if it wants to.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError
from lagless.interest.view import dot

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]


def pivot_distance_squared(
    pivot_pos: FloatArray, pivot_valid: BoolArray, point: FloatArray
) -> FloatArray:
    """Squared distance from each client's nearest valid pivot to a point (inf if none).

    Args:
        pivot_pos: pivot positions in metres, shape (clients, pivots, dim).
        pivot_valid: which pivot slots hold a pivot with known position, (clients, pivots).
        point: the point in metres, shape (dim,).

    Returns:
        Squared distances in m², shape (clients,).

    Examples:
        >>> pos = np.array([[[3.0, 4.0], [0.0, 1.0]]]); valid = np.array([[True, False]])
        >>> pivot_distance_squared(pos, valid, np.zeros(2)).tolist()
        [25.0]
    """
    delta = pivot_pos - point
    d2 = np.where(pivot_valid, dot(delta, delta), np.inf)
    if d2.shape[1] == 0:
        return np.full(d2.shape[0], np.inf)
    return np.asarray(d2.min(axis=1), dtype=np.float64)


def within_radius(
    pivot_pos: FloatArray, pivot_valid: BoolArray, point: FloatArray, radius: float
) -> BoolArray:
    """Clients with a valid pivot within ``radius`` metres of ``point`` (spec 001 §3.6 sound).

    Args:
        pivot_pos: pivot positions in metres, shape (clients, pivots, dim).
        pivot_valid: valid pivot slots, shape (clients, pivots).
        point: event position in metres, shape (dim,).
        radius: radius in metres, ≥ 0 (inclusive).

    Returns:
        Boolean mask of shape (clients,).

    Raises:
        LocalProtocolError: radius is negative or NaN.

    Examples:
        >>> pos = np.array([[[3.0, 4.0]], [[3.0, 4.1]]]); valid = np.ones((2, 1), dtype=bool)
        >>> within_radius(pos, valid, np.zeros(2), 5.0).tolist()
        [True, False]
    """
    if not radius >= 0.0:
        raise LocalProtocolError(f"radius must be >= 0 metres, got {radius!r}")
    return pivot_distance_squared(pivot_pos, pivot_valid, point) <= radius * radius


def zone_of_point(
    pivot_pos: FloatArray, pivot_valid: BoolArray, point: FloatArray, radii_squared: FloatArray
) -> IntArray:
    """Innermost zone a point falls in over each client's valid pivots (boundary → inner).

    Args:
        pivot_pos: pivot positions in metres, shape (clients, pivots, dim).
        pivot_valid: valid pivot slots, shape (clients, pivots).
        point: the point in metres, shape (dim,).
        radii_squared: each client's squared zone radii, m², shape (clients, zones), padded
            with inf; a client with no valid pivot gets index ``zones``.

    Returns:
        Zone indices, shape (clients,).
    """
    d2 = pivot_distance_squared(pivot_pos, pivot_valid, point)
    zone = np.sum(d2[:, None] > radii_squared, axis=1).astype(np.intp)
    return np.asarray(np.where(np.isinf(d2), radii_squared.shape[1], zone), dtype=np.intp)


def shot_concerns(
    pivot_pos: FloatArray,
    pivot_valid: BoolArray,
    origin: FloatArray,
    destination: FloatArray,
    radii_squared: FloatArray,
    max_zone: int,
) -> BoolArray:
    """Clients for whom a shot's origin or destination is in a zone of index ≤ ``max_zone``.

    Spec 001 §3.6: the segment-in-FoV test is too costly, so only its end points are tested.

    Args:
        pivot_pos: pivot positions in metres, shape (clients, pivots, dim).
        pivot_valid: valid pivot slots, shape (clients, pivots).
        origin: shot origin in metres, shape (dim,).
        destination: shot destination in metres, shape (dim,).
        radii_squared: each client's squared zone radii, m², shape (clients, zones).
        max_zone: the largest zone index that counts (≥ 0).

    Returns:
        Boolean mask of shape (clients,).

    Raises:
        LocalProtocolError: max_zone is negative.
    """
    if max_zone < 0:
        raise LocalProtocolError(f"max_zone must be a zone index >= 0, got {max_zone!r}")
    near_origin = zone_of_point(pivot_pos, pivot_valid, origin, radii_squared) <= max_zone
    near_target = zone_of_point(pivot_pos, pivot_valid, destination, radii_squared) <= max_zone
    return (near_origin | near_target) & pivot_valid.any(axis=1)
