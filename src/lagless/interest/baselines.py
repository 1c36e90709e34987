"""Baseline interest policies: full broadcast, aura (radius) and grid area of interest.

Implements the comparison points of spec 001: the "original" full-broadcast mode of §6.1 item 15
(every changed object goes to the N-1 other clients each round, the thesis's baseline for
every traffic ratio) and the all-or-nothing AoI filters VFC is contrasted with (§1, §2.4). They
share ``PolicyCore`` with ``VfcPolicy``, so a server swaps them freely; aura and grid share
``_ProximityPolicy`` and differ only in what "near a pivot" means; all three share
``filter_shot`` (``_BaselinePolicy``). The view is stored (for
``view_of``) but does not affect their decisions.

Ambiguity decisions, pinned in ``tests/interest/test_baselines.py``:

* Every baseline sends a changed object in the first round after the change when it is of
  interest; an object outside the interest set keeps its pending updates and is sent on the
  round it enters (``test_aura_sends_pending_object_on_entry``).
* Aura: of interest when within ``radius`` of any pivot, inclusive (``test_aura_boundary``).
* Grid: cells are ``floor(position / cell_size)`` per axis; of interest when the object's cell
  is a pivot's cell or touches it (Chebyshev distance ≤ 1, 3^dim cells)
  (``test_grid_neighbourhood``).
* A client with no pivot of known position receives nothing from aura and grid, everything
  from broadcast; its events follow the same rule (``test_no_pivot_baselines``).
* ``filter_shot`` ignores ``max_zone`` for the baselines: a shot concerns the clients for whom
  its origin or destination is of interest.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError, LocalProtocolError
from lagless.interest.core import BoolArray, FloatArray, PolicyCore
from lagless.interest.events import within_radius
from lagless.interest.policy import InterestConfig


class _BaselinePolicy(PolicyCore):
    """A policy that ignores the view: a shot reaches the clients concerned by either end."""

    def __init__(self, config: InterestConfig | None) -> None:
        """Create an empty policy.

        Args:
            config: sizes and timing; ``InterestConfig()`` when omitted.
        """
        super().__init__(InterestConfig() if config is None else config, value_dims=0)

    def filter_shot(
        self, origin: npt.ArrayLike, destination: npt.ArrayLike, max_zone: int
    ) -> BoolArray:
        """Clients concerned by the origin or the destination (see the class docstring).

        Args:
            origin: shot origin in metres, shape (dim,).
            destination: shot destination in metres, shape (dim,).
            max_zone: ignored by this baseline (must be ≥ 0).

        Returns:
            Boolean mask indexed by client id.
        """
        if max_zone < 0:
            raise LocalProtocolError(f"max_zone must be a zone index >= 0, got {max_zone!r}")
        return self._near_origin(origin, "origin") | self._near_origin(destination, "destination")

    def _near_origin(self, point: npt.ArrayLike, name: str) -> BoolArray:
        """Mask by client id: the client is concerned by ``point`` (validated as ``name``)."""
        raise NotImplementedError  # pragma: no cover - abstract


class BroadcastPolicy(_BaselinePolicy):
    """Full broadcast (spec 001 §6.1 item 15): every changed object to every other client.

    Every registered client is concerned by every shot (no filtering).

    Examples:
        >>> b = BroadcastPolicy()
        >>> c0, c1 = b.add_client(), b.add_client()
        >>> o = b.add_object(owner=c0)
        >>> b.update_received([o], [[0.0, 0.0]], None, now=0.0)
        >>> b.round(0.0).pairs()
        {(1, 0)}
    """

    def __init__(self, config: InterestConfig | None = None) -> None:
        """Create an empty policy.

        Args:
            config: sizes and timing; ``InterestConfig()`` when omitted.
        """
        super().__init__(config)

    def _near_origin(self, point: npt.ArrayLike, name: str) -> BoolArray:
        self._point(point, name)
        return self._client_active[: self._clients.slots].copy()

    def _decide(
        self, now: float, candidate: BoolArray, first: BoolArray
    ) -> tuple[BoolArray, tuple[BoolArray, BoolArray, BoolArray] | None]:
        return candidate, None


class _ProximityPolicy(_BaselinePolicy):
    """Aura and grid: an object (or a shot's origin or destination) reaches clients near a pivot.

    Subclasses define nearness with ``_near_origin`` (one point against every pivot) and
    ``_near_pivots`` (every object against one pivot slot).
    """

    def __init__(self, size: float, name: str, config: InterestConfig | None) -> None:
        """Validate the policy's size and create an empty policy.

        Args:
            size: the aura radius or the grid cell side in metres (> 0).
            name: the constructor argument ``size`` came from, for the error message.
            config: sizes and timing; ``InterestConfig()`` when omitted.

        Raises:
            ConfigError: size is not a finite number > 0.
        """
        if not 0.0 < size < math.inf:
            raise ConfigError(f"{name} must be a finite number of metres > 0, got {size!r}")
        super().__init__(config)

    def _decide(
        self, now: float, candidate: BoolArray, first: BoolArray
    ) -> tuple[BoolArray, tuple[BoolArray, BoolArray, BoolArray] | None]:
        near = np.zeros(candidate.shape, dtype=np.bool_)
        near_pivot = self._near_pivots(candidate.shape[1])
        for slot in range(self.config.max_pivots):
            rows, pivot_pos, _ = self._pivot_slot(slot)
            near[rows] |= near_pivot(pivot_pos)
        return candidate & near, None

    def _near_pivots(self, objects: int) -> Callable[[FloatArray], BoolArray]:
        """Return, for the first ``objects`` object slots, the test against one pivot slot.

        The returned function maps pivot positions (rows, dim) to a (rows, objects) mask.
        """
        raise NotImplementedError  # pragma: no cover - abstract


class AuraPolicy(_ProximityPolicy):
    """Aura AoI: a changed object goes to the clients with a pivot within ``radius`` metres."""

    def __init__(self, radius: float, config: InterestConfig | None = None) -> None:
        """Create an empty policy.

        Args:
            radius: aura radius in metres (> 0, inclusive).
            config: sizes and timing; ``InterestConfig()`` when omitted.

        Raises:
            ConfigError: radius is not a finite number > 0.
        """
        super().__init__(radius, "radius", config)
        self.radius = radius

    def _near_origin(self, point: npt.ArrayLike, name: str) -> BoolArray:
        pos, valid = self._pivot_geometry()
        return within_radius(pos, valid, self._point(point, name), self.radius)

    def _near_pivots(self, objects: int) -> Callable[[FloatArray], BoolArray]:
        columns = self._object_columns()

        def near(pivot_pos: FloatArray) -> BoolArray:
            delta = [col - pivot_pos[:, i, None] for i, col in enumerate(columns)]
            d2 = delta[0] * delta[0]
            for i in range(1, len(delta)):
                d2 = d2 + delta[i] * delta[i]
            return d2 <= self.radius * self.radius

        return near


class GridPolicy(_ProximityPolicy):
    """Grid AoI: a changed object goes to clients with a pivot in the same or a touching cell."""

    def __init__(self, cell_size: float, config: InterestConfig | None = None) -> None:
        """Create an empty policy.

        Args:
            cell_size: side of a square (cubic) cell in metres (> 0).
            config: sizes and timing; ``InterestConfig()`` when omitted.

        Raises:
            ConfigError: cell_size is not a finite number > 0.
        """
        super().__init__(cell_size, "cell_size", config)
        self.cell_size = cell_size

    def cell_of(self, positions: npt.ArrayLike) -> npt.NDArray[np.int64]:
        """Return the integer cell coordinates of positions (``floor(p / cell_size)``).

        Args:
            positions: positions in metres, shape (..., dim).

        Returns:
            Cell coordinates, same shape.

        Examples:
            >>> GridPolicy(10.0).cell_of([[0.0, 9.99], [-0.1, 10.0]]).tolist()
            [[0, 0], [-1, 1]]
        """
        cells = np.floor(np.asarray(positions, dtype=np.float64) / self.cell_size)
        return cells.astype(np.int64)

    def _near_origin(self, point: npt.ArrayLike, name: str) -> BoolArray:
        pos, valid = self._pivot_geometry()
        cell = self.cell_of(self._point(point, name))
        near: BoolArray = np.all(np.abs(self.cell_of(pos) - cell) <= 1, axis=2) & valid
        out: BoolArray = np.any(near, axis=1)
        return out

    def _near_pivots(self, objects: int) -> Callable[[FloatArray], BoolArray]:
        object_cells = self.cell_of(self._pos[:objects])

        def near(pivot_pos: FloatArray) -> BoolArray:
            pivot_cells = self.cell_of(pivot_pos)
            touching = np.ones((pivot_pos.shape[0], objects), dtype=np.bool_)
            for i in range(self.config.dim):
                touching &= np.abs(object_cells[None, :, i] - pivot_cells[:, i, None]) <= 1
            return touching

        return near
