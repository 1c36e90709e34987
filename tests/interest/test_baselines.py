"""Baselines: full broadcast, aura and grid AoI behave as defined and share the interface."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.interest import AuraPolicy, BroadcastPolicy, GridPolicy, Trigger, VfcPolicy
from lagless.interest.core import PolicyCore


def _world(policy: PolicyCore) -> tuple[int, int, int, int]:
    """Observer client (pivot at the origin) and a mover client with one object."""
    a, b = policy.add_client(), policy.add_client()
    avatar, obj = policy.add_object(owner=a), policy.add_object(owner=b)
    policy.set_pivots(a, [avatar])
    policy.update_received([avatar], [[0.0, 0.0]], None, 0.0)
    policy.round(0.0)
    return a, b, avatar, obj


def _sent(policy: PolicyCore, client: int, obj: int, x: float, y: float, now: float) -> bool:
    policy.update_received([obj], [[x, y]], None, now)
    return obj in policy.round(now).objects_for(client).tolist()


def test_broadcast_sends_every_change_to_every_other_client() -> None:
    b = BroadcastPolicy()
    a, _, _, obj = _world(b)
    assert [_sent(b, a, obj, 1e6 * k, 0.0, k * 0.033) for k in range(1, 5)] == [True] * 4
    assert b.round(1.0).pairs() == set()  # nothing changed, nothing sent
    stats = b.statistics()
    assert stats.triggers[Trigger.FIRST] == 2
    assert stats.triggers[Trigger.INTEREST] == 3


def test_aura_boundary() -> None:
    aura = AuraPolicy(5.0)
    a, _, _, obj = _world(aura)
    assert _sent(aura, a, obj, 3.0, 4.0, 0.1)  # exactly on the radius: inside
    assert not _sent(aura, a, obj, 3.0, 4.001, 0.2)


def test_aura_sends_pending_object_on_entry() -> None:
    aura = AuraPolicy(10.0)
    a, _, _, obj = _world(aura)
    assert not _sent(aura, a, obj, 50.0, 0.0, 0.1)
    aura.update_received([0], [[45.0, 0.0]], None, 0.2)  # the observer walks towards it
    assert aura.round(0.2).objects_for(a).tolist() == [obj]


def test_grid_neighbourhood() -> None:
    grid = GridPolicy(10.0)
    a, _, _, obj = _world(grid)  # pivot in cell (0, 0)
    assert _sent(grid, a, obj, 19.9, -9.9, 0.1)  # cell (1, -1): touching
    assert not _sent(grid, a, obj, 20.0, 0.0, 0.2)  # cell (2, 0)
    assert not _sent(grid, a, obj, 5.0, -10.1, 0.3)  # cell (0, -2)
    assert _sent(grid, a, obj, -0.1, 9.0, 0.4)  # cell (-1, 0)


def test_no_pivot_baselines() -> None:
    for policy, expected in ((AuraPolicy(1e9), False), (GridPolicy(1e9), False)):
        a, _, _, obj = _world(policy)
        policy.set_pivots(a, [])
        assert _sent(policy, a, obj, 0.0, 0.0, 0.1) is expected
        assert policy.filter_sound([0.0, 0.0], 1e9).tolist() == [False, False]
    b = BroadcastPolicy()
    a, _, _, obj = _world(b)
    b.set_pivots(a, [])
    assert _sent(b, a, obj, 0.0, 0.0, 0.1)


@pytest.mark.parametrize(
    "factory", [BroadcastPolicy, lambda: AuraPolicy(100.0), lambda: GridPolicy(50.0), VfcPolicy]
)
def test_policies_are_interchangeable(factory: type[PolicyCore]) -> None:
    rng = np.random.default_rng(5)
    policy = factory()
    clients = [policy.add_client() for _ in range(6)]
    objects = [policy.add_object(owner=c) for c in clients]
    for c, o in zip(clients, objects, strict=True):
        policy.set_pivots(c, [o])
    sent = 0
    for k in range(10):
        policy.update_received(objects, rng.uniform(0, 300, (6, 2)), None, k * 0.033)
        plan = policy.round(k * 0.033)
        assert all(o != c for c, o in zip(plan.clients, plan.objects, strict=True))
        sent += len(plan)
    assert 0 < sent <= 10 * 30
    assert policy.statistics().sends == sent
    assert policy.statistics().rounds == 10


def test_baseline_config_validation() -> None:
    with pytest.raises(ConfigError, match="radius"):
        AuraPolicy(0.0)
    with pytest.raises(ConfigError, match="cell_size"):
        GridPolicy(float("inf"))
