"""Positional event filtering: sounds within a radius, shots by zone index (spec 001 §3.6)."""

from __future__ import annotations

import math

import pytest

from lagless.errors import LocalProtocolError
from lagless.interest import (
    AuraPolicy,
    BroadcastPolicy,
    GridPolicy,
    VfcConfig,
    VfcPolicy,
    normal_view,
    zoom_view,
)


def _vfc(positions: list[tuple[float, float]]) -> tuple[VfcPolicy, list[int]]:
    vfc = VfcPolicy(VfcConfig(default_view=normal_view()))
    clients = [vfc.add_client() for _ in positions]
    for c, (x, y) in zip(clients, positions, strict=True):
        obj = vfc.add_object(owner=c)
        vfc.set_pivots(c, [obj])
        vfc.update_received([obj], [[x, y]], None, 0.0, headings=[[1.0, 0.0]])
    return vfc, clients


def test_sound_radius_is_inclusive() -> None:
    vfc, _ = _vfc([(0.0, 0.0), (30.0, 40.0), (30.0, 40.1)])
    assert vfc.filter_sound([0.0, 0.0], 50.0).tolist() == [True, True, False]
    with pytest.raises(LocalProtocolError, match="radius"):
        vfc.filter_sound([0.0, 0.0], -1.0)


def test_shot_origin_or_destination_within_zone() -> None:
    vfc, _ = _vfc([(0.0, 0.0), (1000.0, 0.0), (5000.0, 0.0)])
    # origin 300 m from client 0 (zone 0 edge), destination 500 m from client 1 (zone 1).
    origin, target = [300.0, 0.0], [1500.0, 0.0]
    assert vfc.filter_shot(origin, target, 0).tolist() == [True, False, False]
    assert vfc.filter_shot(origin, target, 1).tolist() == [True, True, False]
    assert vfc.filter_shot(origin, target, 2).tolist() == [True, True, True]
    with pytest.raises(LocalProtocolError, match="max_zone"):
        vfc.filter_shot(origin, target, -1)


def test_shot_ignores_fov() -> None:
    vfc, _ = _vfc([(0.0, 0.0)])
    assert vfc.filter_shot([-100.0, 0.0], [-200.0, 0.0], 0).tolist() == [True]  # behind


def test_zoom_filters_less() -> None:
    vfc, clients = _vfc([(0.0, 0.0)])
    assert vfc.filter_shot([500.0, 0.0], [500.0, 1.0], 0).tolist() == [False]
    vfc.set_view(clients[0], zoom_view())
    assert vfc.filter_shot([500.0, 0.0], [500.0, 1.0], 0).tolist() == [True]


def test_no_pivot_no_events() -> None:
    vfc, clients = _vfc([(0.0, 0.0), (0.0, 0.0)])
    vfc.set_pivots(clients[1], [])
    late = vfc.add_client()
    assert vfc.filter_sound([0.0, 0.0], 10.0).tolist() == [True, False, False]
    assert vfc.filter_shot([0.0, 0.0], [0.0, 0.0], 99).tolist() == [True, False, False]
    assert late == 2


def test_baseline_shot_filters() -> None:
    for policy, expected in (
        (BroadcastPolicy(), [True, True]),
        (AuraPolicy(100.0), [True, False]),
        (GridPolicy(100.0), [True, False]),
    ):
        for x in (0.0, 1000.0):
            c = policy.add_client()
            obj = policy.add_object(owner=c)
            policy.set_pivots(c, [obj])
            policy.update_received([obj], [[x, 0.0]], None, 0.0)
        assert policy.filter_shot([50.0, 0.0], [-50.0, 0.0], 0).tolist() == expected
        assert policy.filter_sound([1000.0, math.sqrt(2.0)], 1.5).tolist() == [False, True]
