"""VFC views φ: zone radii, field-of-view bands, the κ matrix, and zone/band classification.

Implements spec 001 §2.2 (κ = [θ, σ, ν], ∞ disables a bound), §2.3 and §2.6 (a view: increasing
zone radii with the last infinite, increasing FoV apex angles with the last 360°, one κ per
(zone, band) cell), §2.9 (the thesis's normal, zoom, single-band and example views) and the
classification of ``Phi.ShouldBeSentToClient`` (§2.6). Units are SI: radii in metres, angles in
radians (full apex angles, symmetric about the heading), θ in seconds.

Ambiguity decisions (spec 001 §6.2):

* A distance exactly equal to a zone radius belongs to the inner zone (``d ≤ Z[i]``); distances
  are compared squared, so integer-valued cases are exact
  (``tests/interest/test_view.py::test_zone_boundary_belongs_to_inner_zone``).
* An angle exactly at a band edge belongs to the inner band (``angle ≤ F[j] / 2``), compared on
  cosines with a tolerance of ``COS_TOLERANCE`` so that an edge computed in floating point still
  counts as on the edge (``test_band_boundary_belongs_to_inner_band``).
* An object at the pivot's position, or a pivot without orientation (zero heading), is in the
  innermost band: the most demanding choice, so nothing is starved by a degenerate geometry
  (``test_degenerate_cases_use_innermost_band``).
* κ must relax monotonically outward along zones and along bands (the thesis's requirement,
  checked here at construction: ``test_view_rejects_non_monotone_kappa``).
* ν is dimensionless here: the divergence it bounds is defined by the policy
  (``lagless.interest.vfc.NuMode``). The thesis views convert ν % to a fraction (3 % → 0.03).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

FULL_CIRCLE: Final = 2.0 * math.pi  # radians: the mandatory last FoV band (spec 001 §2.6)
COS_TOLERANCE: Final = 1e-12  # cosine units: a band edge computed in floating point still counts
THESIS_FOV_MARGIN: Final = math.radians(20.0)  # radians per side: the 140° / 75° bands (§2.9)


@dataclass(frozen=True, slots=True, kw_only=True)
class Kappa:
    """One consistency vector κ = [θ, σ, ν] (spec 001 §2.2); ``math.inf`` disables a bound.

    A replica needs a new update as soon as any bound is *exceeded* (strict ``>``).
    """

    theta: float = math.inf
    """Longest time a replica may go without an update, seconds (thesis: ms, -1 = ∞)."""
    sigma: float = math.inf
    """Most updates a replica may miss: an integer count, or ``math.inf``."""
    nu: float = math.inf
    """Largest value divergence, dimensionless (its base is the policy's ``NuMode``)."""

    def __post_init__(self) -> None:
        """Validate the three bounds.

        Raises:
            ConfigError: a bound is negative or NaN, or sigma is neither an integer nor inf.
        """
        for name in ("theta", "sigma", "nu"):
            value = getattr(self, name)
            if not value >= 0.0:
                raise ConfigError(f"Kappa.{name} must be >= 0 or math.inf, got {value!r}")
        if not math.isinf(self.sigma) and self.sigma != int(self.sigma):
            raise ConfigError(f"Kappa.sigma must be an integer or math.inf, got {self.sigma!r}")

    @classmethod
    def from_thesis(cls, theta_ms: float, sigma: float, nu_percent: float) -> Kappa:
        """Build κ from the thesis's ``KVec`` units (§3.9): θ in ms, ν in %, -1 meaning ∞.

        Args:
            theta_ms: time bound in milliseconds, or -1 for ∞.
            sigma: sequence bound in updates, or -1 for ∞.
            nu_percent: value bound in percent, or -1 for ∞.

        Returns:
            The κ in SI units (θ seconds, ν a fraction).

        Examples:
            >>> Kappa.from_thesis(30, -1, 3)
            Kappa(theta=0.03, sigma=inf, nu=0.03)
        """
        return cls(
            theta=math.inf if theta_ms == -1 else theta_ms / 1000.0,
            sigma=math.inf if sigma == -1 else sigma,
            nu=math.inf if nu_percent == -1 else nu_percent / 100.0,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """A VFC4FPS view φ (spec 001 §2.3, §2.6): zones × FoV bands, one κ per cell.

    The pivots are not part of the view here: a policy keeps them per client
    (``set_pivots``), so a spectator switch does not rebuild the view.
    """

    radii: tuple[float, ...]
    """Zone radii in metres, strictly increasing, the last ``math.inf`` (spec 001 §2.6)."""
    fov: tuple[float, ...] = (FULL_CIRCLE,)
    """Full apex angles of the FoV bands in radians, strictly increasing, the last 2π."""
    kappa: tuple[tuple[Kappa, ...], ...]
    """κ matrix indexed ``kappa[zone][band]`` (shape ``(len(radii), len(fov))``)."""
    require_monotone: bool = True
    """Reject κ matrices that tighten outward along zones or bands (spec 001 §2.6)."""
    theta: FloatArray = field(init=False, repr=False, compare=False)
    """θ of every cell, seconds, shape (zones, bands); derived."""
    sigma: FloatArray = field(init=False, repr=False, compare=False)
    """σ of every cell, updates (inf = disabled), shape (zones, bands); derived."""
    nu: FloatArray = field(init=False, repr=False, compare=False)
    """ν of every cell, dimensionless, shape (zones, bands); derived."""
    radii_squared: FloatArray = field(init=False, repr=False, compare=False)
    """Squared zone radii, m², shape (zones,); derived."""
    cos_half: FloatArray = field(init=False, repr=False, compare=False)
    """cos(F[j] / 2) of every band, shape (bands,); derived (the last is -1)."""

    def __post_init__(self) -> None:
        """Validate radii, angles and κ, and build the numpy tables.

        Raises:
            ConfigError: naming the offending field and the allowed values.
        """
        radii = tuple(float(r) for r in self.radii)
        if not radii or any(not r > 0.0 for r in radii):
            raise ConfigError(f"View.radii must be non-empty and > 0, got {self.radii!r}")
        if any(b <= a for a, b in itertools.pairwise(radii)):
            raise ConfigError(f"View.radii must be strictly increasing, got {self.radii!r}")
        if not math.isinf(radii[-1]) or any(math.isinf(r) for r in radii[:-1]):
            raise ConfigError(f"View.radii must end with (only) math.inf, got {self.radii!r}")
        fov = tuple(float(a) for a in self.fov)
        if not fov or any(not 0.0 < a <= FULL_CIRCLE + 1e-9 for a in fov):
            raise ConfigError(f"View.fov angles must be in (0, 2*pi] radians, got {self.fov!r}")
        if any(b <= a for a, b in itertools.pairwise(fov)):
            raise ConfigError(f"View.fov must be strictly increasing, got {self.fov!r}")
        if abs(fov[-1] - FULL_CIRCLE) > 1e-9:
            raise ConfigError(f"View.fov must end with 2*pi (360 degrees), got {self.fov!r}")
        fov = (*fov[:-1], FULL_CIRCLE)
        rows = tuple(tuple(row) for row in self.kappa)
        if len(rows) != len(radii) or any(len(row) != len(fov) for row in rows):
            raise ConfigError(
                f"View.kappa must have shape (zones={len(radii)}, bands={len(fov)}), "
                f"got {[len(row) for row in rows]}"
            )
        if any(not isinstance(k, Kappa) for row in rows for k in row):
            raise ConfigError("View.kappa entries must be Kappa instances")
        object.__setattr__(self, "radii", radii)
        object.__setattr__(self, "fov", fov)
        object.__setattr__(self, "kappa", rows)
        tables = {
            name: np.array([[getattr(k, name) for k in row] for row in rows], dtype=np.float64)
            for name in ("theta", "sigma", "nu")
        }
        if self.require_monotone:
            for name, table in tables.items():
                if np.any(table[1:] < table[:-1]) or np.any(table[:, 1:] < table[:, :-1]):
                    raise ConfigError(
                        f"View.kappa {name} must not decrease outward along zones or bands"
                    )
        for name, table in tables.items():
            table.flags.writeable = False
            object.__setattr__(self, name, table)
        squared = np.square(np.array(radii, dtype=np.float64))
        cos_half = np.cos(np.array(fov, dtype=np.float64) / 2.0)
        cos_half[-1] = -1.0  # the 360° band matches every direction exactly
        for name, table in (("radii_squared", squared), ("cos_half", cos_half)):
            table.flags.writeable = False
            object.__setattr__(self, name, table)

    @property
    def zones(self) -> int:
        """Number of zones (≥ 1)."""
        return len(self.radii)

    @property
    def bands(self) -> int:
        """Number of FoV bands (≥ 1)."""
        return len(self.fov)

    def zoomed(self, fov: tuple[float, ...], radius_factor: float) -> View:
        """Return the zoom variant (spec 001 §2.8): new apex angles, radii scaled, κ unchanged.

        Args:
            fov: the zoomed apex angles in radians (same number of bands; last 2π).
            radius_factor: multiplier (> 0) of every finite radius; the thesis uses 2.

        Returns:
            The zoomed view.

        Raises:
            ConfigError: radius_factor is not > 0, or the new angles are invalid.
        """
        if not radius_factor > 0.0 or math.isinf(radius_factor):
            raise ConfigError(f"radius_factor must be finite and > 0, got {radius_factor!r}")
        return View(
            radii=tuple(r * radius_factor for r in self.radii),
            fov=fov,
            kappa=self.kappa,
            require_monotone=self.require_monotone,
        )

    def classify(
        self,
        pivot_pos: npt.ArrayLike,
        pivot_heading: npt.ArrayLike,
        obj_pos: npt.ArrayLike,
    ) -> tuple[IntArray, IntArray]:
        """Zone and band of objects seen from one pivot (spec 001 §2.6), vectorised.

        Args:
            pivot_pos: pivot position in metres, shape (dim,) or broadcastable to obj_pos.
            pivot_heading: pivot orientation, shape like pivot_pos; normalised here; a zero
                vector means "no orientation" (innermost band).
            obj_pos: object positions in metres, shape (n, dim) or (dim,).

        Returns:
            ``(zone, band)`` integer arrays of shape (n,) (or 0-d for a single object).

        Examples:
            >>> v = View(radii=(1.0, math.inf), kappa=((Kappa(),), (Kappa(),)))
            >>> v.classify([0.0, 0.0], [1.0, 0.0], [[1.0, 0.0], [1.5, 0.0]])[0].tolist()
            [0, 1]
        """
        obj = np.asarray(obj_pos, dtype=np.float64)
        delta = obj - np.asarray(pivot_pos, dtype=np.float64)
        heading = np.broadcast_to(np.asarray(pivot_heading, dtype=np.float64), delta.shape)
        d2 = dot(delta, delta)
        zone = zone_index(d2, self.radii_squared)
        cosine = heading_cosine(delta, heading, d2)
        band = band_index(cosine, self.cos_half)
        return zone, band


def zone_index(d2: FloatArray, radii_squared: FloatArray) -> IntArray:
    """Zone of each squared distance: ``min{i : d ≤ Z[i]}`` (boundary → inner zone).

    Args:
        d2: squared distances, m², any shape.
        radii_squared: squared zone radii, increasing, last inf; shape (zones,).

    Returns:
        Zone indices, same shape as d2.

    Examples:
        >>> zone_index(np.array([1.0, 4.0, 4.01]), np.array([1.0, 4.0, np.inf])).tolist()
        [0, 1, 2]
    """
    return np.searchsorted(radii_squared, d2, side="left").astype(np.intp)


def heading_cosine(delta: FloatArray, heading: FloatArray, d2: FloatArray) -> FloatArray:
    """Cosine of the angle between pivot heading and pivot→object (spec 001 §2.6).

    Degenerate cases (object at the pivot, zero heading) return 1.0 (innermost band).

    Args:
        delta: object minus pivot position, metres, shape (..., dim).
        heading: pivot orientation (need not be normalised), shape (..., dim).
        d2: squared length of delta, m², shape (...).

    Returns:
        Cosines in [-1, 1], shape (...).
    """
    norm = np.sqrt(d2 * dot(heading, heading))
    safe = np.where(norm > 0.0, norm, 1.0)
    return np.asarray(np.where(norm > 0.0, dot(delta, heading) / safe, 1.0), dtype=np.float64)


def dot(a: FloatArray, b: FloatArray) -> FloatArray:
    """Dot product over the last axis, summed left to right (the order the reference uses).

    Args:
        a: array of shape (..., dim).
        b: array of the same shape.

    Returns:
        Array of shape (...).

    Examples:
        >>> dot(np.array([[3.0, 4.0]]), np.array([[3.0, 4.0]])).tolist()
        [25.0]
    """
    total = a[..., 0] * b[..., 0]
    for i in range(1, a.shape[-1]):
        total = total + a[..., i] * b[..., i]
    return np.asarray(total, dtype=np.float64)


def band_index(cosine: FloatArray, cos_half: FloatArray) -> IntArray:
    """FoV band of each cosine: ``min{j : angle ≤ F[j] / 2}`` (edge → inner band).

    Args:
        cosine: cosine of the angle from the heading, any shape.
        cos_half: cos(F[j] / 2) per band, decreasing, last -1; shape (bands,).

    Returns:
        Band indices, same shape as cosine.

    Examples:
        >>> band_index(np.array([1.0, 0.0, -1.0]), np.array([0.0, -1.0])).tolist()
        [0, 0, 1]
    """
    band = np.zeros(np.shape(cosine), dtype=np.intp)
    for edge in cos_half[:-1]:
        band += cosine < edge - COS_TOLERANCE
    return band


def _thesis_view(
    radii: tuple[float, float], fov_deg: tuple[float, ...], rows: list[list[Kappa]], unit: float
) -> View:
    """Build a view from a thesis table given as rows = FoV bands, columns = zones."""
    if not unit > 0.0 or math.isinf(unit):
        raise ConfigError(f"unit must be finite and > 0 metres per world unit, got {unit!r}")
    kappa = tuple(tuple(rows[band][zone] for band in range(len(rows))) for zone in range(3))
    return View(
        radii=(radii[0] * unit, radii[1] * unit, math.inf),
        fov=tuple(math.radians(a) for a in fov_deg),
        kappa=kappa,
    )


_K = Kappa.from_thesis
_THESIS_ROWS: Final = [
    [_K(30, -1, 0), _K(60, -1, 3), _K(90, -1, 5)],
    [_K(60, -1, 6), _K(90, -1, 9), _K(130, -1, 13)],
    [_K(90, -1, 9), _K(200, -1, 20), _K(300, -1, 30)],
]


def normal_view(unit: float = 1.0) -> View:
    """The thesis's "normal" view, Table 5.1 (spec 001 §2.9): FoV 100°/140°/360°, radii 300/600/∞.

    Args:
        unit: metres per Cube 2 world unit (the radii are 300 and 600 world units).

    Returns:
        The view; θ in seconds, ν as a fraction, σ = ∞ everywhere.
    """
    return _thesis_view((300.0, 600.0), (100.0, 140.0, 360.0), _THESIS_ROWS, unit)


def zoom_view(unit: float = 1.0) -> View:
    """The thesis's "zoom" view, Table 5.2: FoV 35°/75°/360°, radii 600/1200/∞, κ as normal.

    Args:
        unit: metres per Cube 2 world unit.

    Returns:
        The view.
    """
    return _thesis_view((600.0, 1200.0), (35.0, 75.0, 360.0), _THESIS_ROWS, unit)


def vfc_view(unit: float = 1.0) -> View:
    """The thesis's single-band "VFC" view, Table 5.3: one 360° band, radii 300/600/∞.

    Args:
        unit: metres per Cube 2 world unit.

    Returns:
        The view (plain VFC, the baseline of the FoV extension).
    """
    return _thesis_view((300.0, 600.0), (360.0,), [_THESIS_ROWS[0]], unit)


def example_view(unit: float = 1.0) -> View:
    """The illustrative view of Table 3.1: FoV 90°/150°/360°, radii 150/250/∞, σ finite.

    Args:
        unit: metres per Cube 2 world unit.

    Returns:
        The view.
    """
    rows = [
        [_K(30, 1, 5), _K(60, 2, 10), _K(90, 3, 15)],
        [_K(45, 2, 10), _K(75, 3, 15), _K(105, 4, 20)],
        [_K(90, 3, 15), _K(120, 4, 20), _K(200, 5, 25)],
    ]
    return _thesis_view((150.0, 250.0), (90.0, 150.0, 360.0), rows, unit)
