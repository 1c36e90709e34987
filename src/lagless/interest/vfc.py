"""Vector-Field Consistency with fields of view (VFC4FPS), vectorised over all clients × objects.

Implements spec 001 §2.5 (the Consistency Manager: ``update-received`` and ``round-triggered``),
§2.6 (zone and FoV band per pair, κ = C[zone][band]), §2.4 (several pivots), §2.7 (ν as a
displacement) and §2.8 (views and pivots change at run time, effective from the next round).
One round classifies every pair with pending updates against every pivot of its client at once
(a Python loop runs only over pivot slots, zones and bands) and sends the pair when any bound is
exceeded.

Ambiguity decisions (spec 001 §6.2), each pinned by a test in ``tests/interest/test_vfc.py``:

* Bounds are strict, as the thesis's "exceeded": θ when ``now - last_sent > θ``, σ when
  ``pending > σ``, ν when ``divergence > ν`` (``test_theta_triggers_strictly_after_bound``,
  ``test_sigma_triggers_exactly_when_exceeded``, ``test_nu_triggers_exactly_when_exceeded``).
  So σ = 0 or ν = 0 send on any update / any movement, as the thesis's ν = 0 cell intends.
* ν base (§2.7): ``NuMode.DISTANCE`` (default) divides the value divergence (Euclidean distance
  between the current value vector and the last one sent; the position by default) by the
  distance from the pivot to the object, floored at ``nu_min_distance``: a perceptual error,
  reading (a). ``NuMode.REFERENCE`` divides by the fixed ``nu_reference`` length: reading (b),
  and with ``nu_reference = 1`` m, ν is an absolute distance in metres
  (``test_nu_modes``).
* Several pivots (§2.4): each pivot gives a cell; the pair uses the element-wise minimum of θ,
  σ and the absolute ν threshold over the pivots: the most demanding. For a single-band,
  monotone view this is exactly the thesis's nearest-pivot rule (``test_multi_pivot``).
* A client with no pivot of known position sees every object in its outermost cell
  (``C[-1][-1]``), with the ν base ``nu_reference`` (``test_no_pivot_uses_outermost_cell``).
* A client that never called ``set_view`` uses ``VfcConfig.default_view`` (the thesis's normal
  view, Table 5.1).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError
from lagless.interest.core import BoolArray, PolicyCore
from lagless.interest.events import shot_concerns
from lagless.interest.policy import InterestConfig
from lagless.interest.view import COS_TOLERANCE, View, dot, normal_view


class NuMode(enum.Enum):
    """What the dimensionless ν of a view is relative to (spec 001 §2.7, §6.2)."""

    DISTANCE = "distance"
    """Divergence ÷ distance from the pivot to the object (perceptual, reading (a))."""
    REFERENCE = "reference"
    """Divergence ÷ ``nu_reference`` metres (a fixed length, reading (b))."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VfcConfig(InterestConfig):
    """Configuration of ``VfcPolicy`` (sizes and timing from ``InterestConfig``, plus ν)."""

    nu_mode: NuMode = NuMode.DISTANCE
    """Base of the ν percentage (spec 001 §2.7 leaves it open; see the module docstring)."""
    nu_reference: float = 1.0
    """Reference length in metres for ``NuMode.REFERENCE`` and for pivot-less clients."""
    nu_min_distance: float = 1.0
    """Floor in metres of the pivot distance in ``NuMode.DISTANCE`` (avoids dividing by 0)."""
    value_dims: int | None = None
    """Length of the value vector ν compares; ``None`` means ``dim`` (the position)."""
    default_view: View = field(default_factory=normal_view)
    """View of a client that never called ``set_view`` (thesis Table 5.1 in world units)."""

    def __post_init__(self) -> None:
        """Validate every field.

        Raises:
            ConfigError: naming the offending field.
        """
        InterestConfig.__post_init__(self)
        if not isinstance(self.nu_mode, NuMode):
            raise ConfigError(f"nu_mode must be a NuMode, got {self.nu_mode!r}")
        for name in ("nu_reference", "nu_min_distance"):
            value = getattr(self, name)
            if not 0.0 < value < math.inf:
                raise ConfigError(f"{name} must be a finite length > 0 metres, got {value!r}")
        if self.value_dims is not None and (
            not isinstance(self.value_dims, int) or self.value_dims < 1
        ):
            raise ConfigError(
                f"value_dims must be None or an integer >= 1, got {self.value_dims!r}"
            )
        if not isinstance(self.default_view, View):
            raise ConfigError(f"default_view must be a View, got {self.default_view!r}")


class VfcPolicy(PolicyCore):
    """The VFC4FPS Consistency Manager (spec 001 §2.5–2.8) over numpy arrays.

    Examples:
        >>> import math
        >>> from lagless.interest.view import Kappa
        >>> view = View(radii=(math.inf,), kappa=((Kappa(theta=0.05),),))
        >>> vfc = VfcPolicy(VfcConfig(default_view=view))
        >>> a, b = vfc.add_client(), vfc.add_client()
        >>> obj = vfc.add_object(owner=a)
        >>> vfc.update_received([obj], [[1.0, 2.0]], None, now=0.0)
        >>> vfc.round(0.0).pairs()
        {(1, 0)}
    """

    def __init__(self, config: VfcConfig | None = None) -> None:
        """Create an empty policy.

        Args:
            config: the configuration; ``VfcConfig()`` when omitted.
        """
        cfg = VfcConfig() if config is None else config
        super().__init__(cfg, value_dims=cfg.dim if cfg.value_dims is None else cfg.value_dims)
        self.vfc_config = cfg
        self._zm = 1
        self._bm = 1
        self._alloc_tables(self._client_active.shape[0])

    def filter_shot(
        self, origin: npt.ArrayLike, destination: npt.ArrayLike, max_zone: int
    ) -> BoolArray:
        """Clients whose view zone ≤ ``max_zone`` holds the shot's origin or destination.

        Implements spec 001 §3.6 (shot effects); uses each client's own radii, so zoomed views
        (larger zones) receive more shots, as the thesis observed.

        Args:
            origin: shot origin in metres, shape (dim,).
            destination: shot destination in metres, shape (dim,).
            max_zone: the largest zone index that counts (≥ 0).

        Returns:
            Boolean mask indexed by client id.
        """
        pos, valid = self._pivot_geometry()
        r2 = self._r2[: self._clients.slots]
        start = self._point(origin, "origin")
        end = self._point(destination, "destination")
        return shot_concerns(pos, valid, start, end, r2, max_zone)

    def _default_view(self) -> View:
        return self.vfc_config.default_view

    def _on_client_added(self, client: int) -> None:
        self._write_row(client, self.vfc_config.default_view)

    def _on_view_changed(self, client: int, view: View) -> None:
        self._write_row(client, view)

    def _grow_clients(self, size: int) -> None:
        super()._grow_clients(size)
        old = (self._theta, self._sigma, self._nu, self._r2, self._cosh)
        self._alloc_tables(size)
        for new, previous in zip(
            (self._theta, self._sigma, self._nu, self._r2, self._cosh), old, strict=True
        ):
            new[: previous.shape[0]] = previous

    def _alloc_tables(self, clients: int) -> None:
        shape = (clients, self._zm, self._bm)
        self._theta = np.full(shape, math.inf)
        self._sigma = np.full(shape, math.inf)
        self._nu = np.full(shape, math.inf)
        self._r2 = np.full((clients, self._zm), math.inf)
        self._cosh = np.full((clients, self._bm), -1.0)

    def _write_row(self, client: int, view: View) -> None:
        """Copy a view into the padded per-client tables (edge-padded κ, inf radii, -1 cosines)."""
        if view.zones > self._zm or view.bands > self._bm:
            self._zm = max(self._zm, view.zones)
            self._bm = max(self._bm, view.bands)
            self._alloc_tables(self._client_active.shape[0])
            for other in np.flatnonzero(self._client_active[: self._clients.slots]).tolist():
                if other != client:
                    self._write_row(other, self.view_of(other))
        pad = ((0, self._zm - view.zones), (0, self._bm - view.bands))
        self._theta[client] = np.pad(view.theta, pad, mode="edge")
        self._sigma[client] = np.pad(view.sigma, pad, mode="edge")
        self._nu[client] = np.pad(view.nu, pad, mode="edge")
        self._r2[client] = math.inf
        self._r2[client, : view.zones] = view.radii_squared
        self._cosh[client] = -1.0
        self._cosh[client, : view.bands] = view.cos_half

    def _decide(
        self, now: float, candidate: BoolArray, first: BoolArray
    ) -> tuple[BoolArray, tuple[BoolArray, BoolArray, BoolArray] | None]:
        """Classify every pair against its client's pivots and test κ (spec 001 §2.5 steps 2-5)."""
        cfg = self.vfc_config
        nc, no = candidate.shape
        zm, bm = self._zm, self._bm
        theta = np.full((nc, no), math.inf)
        sigma = np.full((nc, no), math.inf)
        nu_abs = np.full((nc, no), math.inf)
        has_pivot = np.zeros(nc, dtype=np.bool_)
        columns = self._object_columns()
        tables = [t[:nc].reshape(nc, zm * bm) for t in (self._theta, self._sigma, self._nu)]
        for slot in range(self.config.max_pivots):
            rows, pivot_pos, pivot_heading = self._pivot_slot(slot)
            if rows.shape[0] == 0:
                continue
            every = rows.shape[0] == nc
            delta = [col - pivot_pos[:, i, None] for i, col in enumerate(columns)]
            d2 = delta[0] * delta[0]
            along = delta[0] * pivot_heading[:, 0, None]
            for i in range(1, len(delta)):
                d2 = d2 + delta[i] * delta[i]
                along = along + delta[i] * pivot_heading[:, i, None]
            norm = np.sqrt(d2 * dot(pivot_heading, pivot_heading)[:, None])
            cosine = np.where(norm > 0.0, along / np.where(norm > 0.0, norm, 1.0), 1.0)
            r2 = self._r2[rows]
            cosh = self._cosh[rows] - COS_TOLERANCE
            cell = np.zeros(d2.shape, dtype=np.intp)
            for z in range(zm - 1):
                cell += d2 > r2[:, z, None]
            cell *= bm
            for j in range(bm - 1):
                cell += cosine < cosh[:, j, None]
            base: npt.NDArray[np.float64] | float = cfg.nu_reference
            if cfg.nu_mode is NuMode.DISTANCE:
                base = np.maximum(np.sqrt(d2), cfg.nu_min_distance)
            found = [np.take_along_axis(t if every else t[rows], cell, axis=1) for t in tables]
            found[2] = found[2] * base
            for out, value in zip((theta, sigma, nu_abs), found, strict=True):
                if every:
                    np.minimum(out, value, out=out)
                else:
                    out[rows] = np.minimum(out[rows], value)
            has_pivot[rows] = True
        if not has_pivot.all():
            lost = ~has_pivot
            theta[lost] = self._theta[:nc, -1, -1][lost, None]
            sigma[lost] = self._sigma[:nc, -1, -1][lost, None]
            nu_abs[lost] = self._nu[:nc, -1, -1][lost, None] * cfg.nu_reference
        over_theta = (now - self._last_sent[:nc, :no]) > theta
        over_sigma = self._pending[:nc, :no] > sigma
        value = self._value[:no]
        last_value = self._last_value[:nc, :no]
        diff = value[None, :, 0] - last_value[:, :, 0]
        dist2 = diff * diff
        for i in range(1, self._value_dims):
            diff = value[None, :, i] - last_value[:, :, i]
            dist2 = dist2 + diff * diff
        over_nu = np.sqrt(dist2) > nu_abs
        send = candidate & (first | over_theta | over_sigma | over_nu)
        return send, (over_theta, over_sigma, over_nu)
