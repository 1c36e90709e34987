"""Views φ: validation, the thesis's views, and zone / band classification with boundaries."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.interest import (
    Kappa,
    View,
    example_view,
    normal_view,
    vfc_view,
    zoom_view,
)

K = Kappa()


def _view(radii: tuple[float, ...], fov_deg: tuple[float, ...]) -> View:
    return View(
        radii=radii,
        fov=tuple(math.radians(a) for a in fov_deg),
        kappa=tuple(tuple(K for _ in fov_deg) for _ in radii),
    )


def test_zone_boundary_belongs_to_inner_zone() -> None:
    view = _view((5.0, 10.0, math.inf), (360.0,))
    objects = [[3.0, 4.0], [5.000001, 0.0], [6.0, 8.0], [10.0, 0.001], [0.0, 0.0], [1e9, 0.0]]
    zone, band = view.classify([0.0, 0.0], [1.0, 0.0], objects)
    assert zone.tolist() == [0, 1, 1, 2, 0, 2]
    assert band.tolist() == [0] * 6


def test_zone_uses_pivot_position() -> None:
    view = _view((5.0, math.inf), (360.0,))
    zone, _ = view.classify([10.0, 10.0], [1.0, 0.0], [[13.0, 14.0], [13.0, 14.1]])
    assert zone.tolist() == [0, 1]


def test_band_boundary_belongs_to_inner_band() -> None:
    view = _view((math.inf,), (90.0, 180.0, 360.0))
    objects = [
        [1.0, 1.0],  # exactly 45 degrees: edge of the 90 degree band
        [1.0, -1.0],  # the other side, symmetric
        [1.0, 1.0001],  # just outside
        [0.0, 1.0],  # exactly 90 degrees: edge of the 180 degree band
        [-0.001, 1.0],  # just outside
        [-1.0, 0.0],  # straight behind
        [5.0, 0.0],  # straight ahead
    ]
    _, band = view.classify([0.0, 0.0], [1.0, 0.0], objects)
    assert band.tolist() == [0, 0, 1, 1, 2, 2, 0]


def test_band_edge_at_thesis_angle() -> None:
    view = normal_view()
    half = math.radians(50.0)
    inside = [300.0 * math.cos(half), 300.0 * math.sin(half)]
    outside = [300.0 * math.cos(half + 1e-6), 300.0 * math.sin(half + 1e-6)]
    zone, band = view.classify([0.0, 0.0], [1.0, 0.0], [inside, outside])
    assert band.tolist() == [0, 1]
    assert zone.tolist() == [0, 0]


def test_heading_need_not_be_normalised_and_3d_works() -> None:
    view = _view((math.inf,), (90.0, 360.0))
    _, band = view.classify([0.0, 0.0, 0.0], [0.0, 0.0, 7.0], [[0.0, 0.9, 1.0], [0.0, 1.1, 1.0]])
    assert band.tolist() == [0, 1]


def test_degenerate_cases_use_innermost_band() -> None:
    view = _view((math.inf,), (90.0, 360.0))
    _, at_pivot = view.classify([2.0, 2.0], [1.0, 0.0], [[2.0, 2.0]])
    _, no_heading = view.classify([0.0, 0.0], [0.0, 0.0], [[-5.0, 0.0]])
    assert at_pivot.tolist() == [0]
    assert no_heading.tolist() == [0]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"radii": (10.0, 5.0, math.inf)}, "radii"),
        ({"radii": (10.0, 20.0)}, "radii"),
        ({"radii": (0.0, math.inf)}, "radii"),
        ({"radii": (math.inf, math.inf)}, "radii"),
        ({"fov": (math.radians(90.0), math.radians(180.0))}, "fov"),
        ({"fov": (math.radians(180.0), math.radians(90.0), 2 * math.pi)}, "fov"),
        ({"fov": (0.0, 2 * math.pi)}, "fov"),
    ],
)
def test_view_rejects_bad_geometry(kwargs: dict[str, object], field: str) -> None:
    radii = kwargs.get("radii", (10.0, math.inf))
    fov = kwargs.get("fov", (2 * math.pi,))
    assert isinstance(radii, tuple)
    assert isinstance(fov, tuple)
    kappa = tuple(tuple(K for _ in fov) for _ in radii)
    with pytest.raises(ConfigError, match=f"View.{field}"):
        View(radii=radii, fov=fov, kappa=kappa)


def test_view_rejects_wrong_kappa_shape() -> None:
    with pytest.raises(ConfigError, match=r"View.kappa must have shape \(zones=2, bands=1\)"):
        View(radii=(1.0, math.inf), kappa=((K,),))


def test_view_rejects_non_monotone_kappa() -> None:
    tight, loose = Kappa(theta=0.03), Kappa(theta=0.09)
    with pytest.raises(ConfigError, match="theta must not decrease"):
        View(radii=(1.0, math.inf), kappa=((loose,), (tight,)))
    with pytest.raises(ConfigError, match="nu must not decrease"):
        View(
            radii=(math.inf,),
            fov=(1.0, 2 * math.pi),
            kappa=((Kappa(nu=0.5), Kappa(nu=0.1)),),
        )
    relaxed = View(radii=(1.0, math.inf), kappa=((loose,), (tight,)), require_monotone=False)
    assert relaxed.theta[:, 0].tolist() == [0.09, 0.03]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"theta": -1.0}, "theta"), ({"sigma": 1.5}, "sigma"), ({"nu": math.nan}, "nu")],
)
def test_kappa_validation(kwargs: dict[str, float], field: str) -> None:
    with pytest.raises(ConfigError, match=f"Kappa.{field}"):
        Kappa(**kwargs)


def test_kappa_from_thesis_units() -> None:
    k = Kappa.from_thesis(130, -1, 13)
    assert (k.theta, k.sigma, k.nu) == (0.13, math.inf, 0.13)
    assert Kappa.from_thesis(-1, 4, -1) == Kappa(theta=math.inf, sigma=4, nu=math.inf)


def test_normal_view_is_table_5_1() -> None:
    view = normal_view()
    assert view.radii == (300.0, 600.0, math.inf)
    assert np.allclose(np.degrees(view.fov), [100.0, 140.0, 360.0])
    # kappa[zone][band]; the thesis prints rows = FoV bands, columns = zones.
    assert np.allclose(view.theta * 1000, [[30, 60, 90], [60, 90, 200], [90, 130, 300]])
    assert np.allclose(view.nu * 100, [[0, 6, 9], [3, 9, 20], [5, 13, 30]])
    assert np.all(np.isinf(view.sigma))


def test_zoom_and_vfc_views_are_tables_5_2_and_5_3() -> None:
    zoom, normal, vfc = zoom_view(), normal_view(), vfc_view()
    assert zoom.radii == (600.0, 1200.0, math.inf)
    assert np.allclose(np.degrees(zoom.fov), [35.0, 75.0, 360.0])
    assert np.array_equal(zoom.theta, normal.theta)
    assert np.array_equal(zoom.nu, normal.nu)
    assert vfc.bands == 1
    assert vfc.radii == (300.0, 600.0, math.inf)
    assert np.allclose(vfc.theta[:, 0] * 1000, [30, 60, 90])
    assert np.allclose(vfc.nu[:, 0] * 100, [0, 3, 5])


def test_example_view_is_table_3_1_and_unit_scales_radii() -> None:
    view = example_view(unit=0.5)
    assert view.radii == (75.0, 125.0, math.inf)
    assert np.allclose(view.sigma, [[1, 2, 3], [2, 3, 4], [3, 4, 5]])
    assert np.allclose(view.theta[2] * 1000, [90, 105, 200])


def test_zoomed_scales_radii_and_keeps_kappa() -> None:
    zoom = normal_view().zoomed(tuple(math.radians(a) for a in (35.0, 75.0, 360.0)), 2.0)
    assert zoom == zoom_view()
    with pytest.raises(ConfigError, match="radius_factor"):
        normal_view().zoomed(normal_view().fov, 0.0)
