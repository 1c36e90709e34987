"""VfcPolicy: each bound triggers exactly when it should, the histogram, views, pivots, owners."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.interest import (
    BroadcastPolicy,
    Kappa,
    NuMode,
    Trigger,
    VfcConfig,
    VfcPolicy,
    View,
    normal_view,
    vfc_view,
    zoom_view,
)


class World:
    """Observer client A (pivot = its avatar at the origin, heading +x) and object O of B."""

    def __init__(self, view: View, **config: object) -> None:
        self.vfc = VfcPolicy(VfcConfig(default_view=view, **config))  # type: ignore[arg-type]
        self.a = self.vfc.add_client()
        self.b = self.vfc.add_client()
        self.avatar = self.vfc.add_object(owner=self.a)
        self.obj = self.vfc.add_object(owner=self.b)
        self.vfc.set_pivots(self.a, [self.avatar])
        values = [[0.0]] if "value_dims" in config else None
        self.vfc.update_received([self.avatar], [[0.0, 0.0]], values, 0.0, headings=[[1.0, 0.0]])

    def move(self, x: float, y: float, now: float) -> None:
        self.vfc.update_received([self.obj], [[x, y]], None, now)

    def sent(self, now: float) -> list[int]:
        """Triggers of the sends of O to A this round ([] when not sent)."""
        plan = self.vfc.round(now)
        mask = (plan.clients == self.a) & (plan.objects == self.obj)
        return plan.reasons[mask].tolist()


def single(**bounds: float) -> View:
    return View(radii=(math.inf,), kappa=((Kappa(**bounds),),))


def test_first_update_is_sent_at_once_whatever_kappa() -> None:
    w = World(single())
    assert w.sent(0.0) == []  # O has no known state yet
    w.move(10.0, 0.0, 0.0)
    assert w.sent(0.0) == [Trigger.FIRST]
    w.move(20.0, 0.0, 1.0)
    assert w.sent(100.0) == []  # all bounds disabled: never again


def test_theta_triggers_strictly_after_bound() -> None:
    w = World(single(theta=0.125))
    w.move(10.0, 0.0, 0.0)
    assert w.sent(0.0) == [Trigger.FIRST]
    w.move(11.0, 0.0, 0.05)
    assert w.sent(0.0625) == []
    assert w.sent(0.125) == []  # elapsed == theta is not "exceeded"
    assert w.sent(0.1875) == [Trigger.THETA]
    assert w.sent(10.0) == []  # no pending update: an unchanged object is never re-sent
    w.move(12.0, 0.0, 10.0)
    assert w.sent(10.0) == [Trigger.THETA]  # last send long ago: the new update goes at once


def test_sigma_triggers_exactly_when_exceeded() -> None:
    w = World(single(sigma=2))
    w.move(10.0, 0.0, 0.0)
    assert w.sent(0.0) == [Trigger.FIRST]
    w.move(11.0, 0.0, 0.01)
    w.move(12.0, 0.0, 0.02)
    assert w.sent(0.03) == []  # 2 missed updates: not more than sigma
    w.move(13.0, 0.0, 0.04)
    assert w.sent(0.05) == [Trigger.SIGMA]
    w.move(14.0, 0.0, 0.06)
    assert w.sent(0.07) == []  # the send reset the pending count


def test_sigma_counts_repeats_in_one_call() -> None:
    w = World(single(sigma=2))
    w.move(10.0, 0.0, 0.0)
    w.sent(0.0)
    w.vfc.update_received([w.obj] * 3, [[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]], None, 0.1)
    assert w.sent(0.1) == [Trigger.SIGMA]


def test_nu_triggers_exactly_when_exceeded() -> None:
    w = World(single(nu=2.0), nu_mode=NuMode.REFERENCE, nu_reference=1.0)
    w.move(10.0, 0.0, 0.0)
    assert w.sent(0.0) == [Trigger.FIRST]
    w.move(12.0, 0.0, 0.1)
    assert w.sent(0.1) == []  # moved exactly nu metres
    w.move(10.0, 2.0, 0.2)
    assert w.sent(0.2) == []  # still exactly 2 m from the value last sent
    w.move(12.5, 0.0, 0.3)
    assert w.sent(0.3) == [Trigger.NU]
    w.move(12.5, 0.0, 0.4)
    assert w.sent(0.4) == []  # compared with the value sent at 0.3


def test_nu_zero_sends_any_movement_only() -> None:
    w = World(single(nu=0.0))
    w.move(10.0, 0.0, 0.0)
    w.sent(0.0)
    w.move(10.0, 0.0, 0.1)
    assert w.sent(0.1) == []
    w.move(10.0, 1e-9, 0.2)
    assert w.sent(0.2) == [Trigger.NU]


@pytest.mark.parametrize(
    ("mode", "nu", "expected"),
    [
        (NuMode.DISTANCE, 1.5, []),  # 70.7 m moved at 50 m from the pivot: 1.414
        (NuMode.DISTANCE, 1.4, [Trigger.NU]),
        (NuMode.REFERENCE, 1.0, []),  # 70.7 m over a 100 m reference: 0.707
        (NuMode.REFERENCE, 0.7, [Trigger.NU]),
    ],
)
def test_nu_modes(mode: NuMode, nu: float, expected: list[int]) -> None:
    w = World(single(nu=nu), nu_mode=mode, nu_reference=100.0)
    w.move(50.0, 0.0, 0.0)
    w.sent(0.0)
    w.move(0.0, 50.0, 0.1)
    assert w.sent(0.1) == expected


def test_values_replace_positions_for_nu() -> None:
    w = World(single(nu=0.5), nu_mode=NuMode.REFERENCE, value_dims=1)
    w.vfc.update_received([w.obj], [[10.0, 0.0]], [[3.0]], 0.0)
    w.sent(0.0)
    w.vfc.update_received([w.obj], [[500.0, 0.0]], [[3.5]], 0.1)
    assert w.sent(0.1) == []  # position jumped but the value moved by 0.5 only
    w.vfc.update_received([w.obj], [[500.0, 0.0]], [[3.6]], 0.2)
    assert w.sent(0.2) == [Trigger.NU]
    with pytest.raises(LocalProtocolError, match="values are required"):
        w.vfc.update_received([w.obj], [[1.0, 0.0]], None, 0.3)


def test_histogram_counts_each_bound() -> None:
    w = World(single(theta=0.05, sigma=1, nu=1.0), nu_mode=NuMode.REFERENCE)
    w.move(0.0, 5.0, 0.0)
    w.sent(0.0)  # FIRST
    w.move(0.0, 7.0, 0.1)
    assert w.sent(0.1) == [Trigger.THETA]  # theta and nu both exceeded
    w.move(0.0, 7.0, 0.11)
    w.move(0.0, 7.0, 0.12)
    assert w.sent(0.12) == [Trigger.SIGMA]  # sigma only
    w.move(0.0, 9.0, 0.13)
    assert w.sent(0.13) == [Trigger.NU]  # nu only
    stats = w.vfc.statistics()
    assert stats.triggers[Trigger.FIRST] == 2  # O and A's avatar to B
    assert stats.triggers[Trigger.THETA] == 1
    assert stats.triggers[Trigger.SIGMA] == 1
    assert stats.triggers[Trigger.NU] == 1
    assert stats.exceeded == {Trigger.THETA: 1, Trigger.SIGMA: 1, Trigger.NU: 2}
    assert stats.sends == 5
    assert stats.rounds == 4
    assert (stats.clients, stats.objects) == (2, 2)


def test_owner_never_receives_own_object() -> None:
    rng = np.random.default_rng(3)
    for policy in (VfcPolicy(VfcConfig(default_view=single(theta=0.0))), BroadcastPolicy()):
        clients = [policy.add_client() for _ in range(4)]
        objects = [policy.add_object(owner=c) for c in clients]
        for c, o in zip(clients, objects, strict=True):
            policy.set_pivots(c, [o])
        for k in range(5):
            policy.update_received(objects, rng.uniform(0, 100, (4, 2)), None, k * 0.033)
            plan = policy.round(k * 0.033)
            assert len(plan) == 12
            for c, o in zip(clients, objects, strict=True):
                assert o not in plan.objects_for(c).tolist()


def test_view_change_takes_effect_next_round() -> None:
    w = World(normal_view())
    w.move(400.0, 0.0, 0.0)  # zone 1 (300 < 400 <= 600), inside the 100 degree band
    w.sent(0.0)
    w.move(401.0, 0.0, 0.04)
    assert w.sent(0.04) == []  # theta 60 ms, nu 3 % of 401 m
    w.vfc.set_view(w.a, zoom_view())  # zone 0, band 0: theta 30 ms, nu 0
    assert w.vfc.view_of(w.a) == zoom_view()
    assert w.sent(0.045) == [Trigger.THETA]
    w.vfc.set_view(w.a, normal_view())
    w.move(402.0, 0.0, 0.05)
    assert w.sent(0.05) == []


def test_spectator_pivot_switch() -> None:
    w = World(vfc_view())
    followed = w.vfc.add_object()
    w.vfc.update_received([followed], [[1100.0, 0.0]], None, 0.0)
    w.move(1000.0, 0.0, 0.0)
    w.sent(0.0)
    w.move(1000.0, 0.0, 0.04)
    assert w.sent(0.04) == []  # 1000 m from the avatar: zone 2, theta 90 ms
    w.vfc.set_pivots(w.a, [followed])
    assert w.vfc.pivots_of(w.a) == [followed]
    assert w.sent(0.041) == [Trigger.THETA]  # 100 m from the followed avatar: theta 30 ms


def test_multi_pivot() -> None:
    w = World(vfc_view())
    second = w.vfc.add_object(owner=w.a)
    w.vfc.update_received([second], [[1000.0, 0.0]], None, 0.0)
    w.move(900.0, 0.0, 0.0)
    w.sent(0.0)
    w.move(900.0, 0.0, 0.04)
    assert w.sent(0.04) == []  # one pivot, 900 m away: theta 90 ms
    w.vfc.set_pivots(w.a, [w.avatar, second])
    w.move(900.0, 0.0, 0.05)
    assert w.sent(0.05) == [Trigger.THETA]  # nearest pivot 100 m away: zone 0, theta 30 ms


def test_multi_pivot_takes_most_demanding_cell() -> None:
    view = View(
        radii=(100.0, math.inf),
        fov=(math.radians(90.0), 2 * math.pi),
        kappa=(
            (Kappa(theta=0.01), Kappa(theta=0.5)),
            (Kappa(theta=0.02), Kappa(theta=1.0)),
        ),
    )
    w = World(view)
    behind = w.vfc.add_object(owner=w.a)
    # A second pivot nearer to O but facing away: its cell (zone 0, outer band) is 0.5 s,
    # the avatar's cell (zone 1, inner band) is 0.02 s; the most demanding one wins.
    w.vfc.update_received([behind], [[190.0, 0.0]], None, 0.0, headings=[[1.0, 0.0]])
    w.vfc.set_pivots(w.a, [behind, w.avatar])
    w.move(150.0, 0.0, 0.0)
    w.sent(0.0)
    w.move(150.0, 0.0, 0.03)
    assert w.sent(0.03) == [Trigger.THETA]


def test_no_pivot_uses_outermost_cell() -> None:
    w = World(normal_view())
    w.vfc.set_pivots(w.a, [])
    w.move(10.0, 0.0, 0.0)
    w.sent(0.0)
    w.move(10.0, 0.0, 0.2)
    assert w.sent(0.2) == []  # outermost cell: theta 300 ms
    assert w.sent(0.31) == [Trigger.THETA]


def test_new_client_gets_snapshot() -> None:
    w = World(single())
    w.move(10.0, 0.0, 0.0)
    w.sent(0.0)
    late = w.vfc.add_client()
    plan = w.vfc.round(0.1)
    assert plan.pairs() == {(late, w.avatar), (late, w.obj)}
    assert plan.reasons.tolist() == [Trigger.FIRST, Trigger.FIRST]


def test_remove_object_clears_pivots_and_ids_are_reused() -> None:
    w = World(single(theta=0.0))
    w.vfc.remove_object(w.avatar)
    assert w.vfc.pivots_of(w.a) == []
    again = w.vfc.add_object()
    assert again == w.avatar
    w.move(1.0, 0.0, 0.0)
    assert w.vfc.round(0.0).pairs() == {(w.a, w.obj)}
    w.vfc.remove_client(w.b)
    assert w.vfc.add_client() == w.b
    with pytest.raises(LocalProtocolError, match="client"):
        w.vfc.set_pivots(99, [])


def test_growth_beyond_initial_capacity() -> None:
    vfc = VfcPolicy(VfcConfig(initial_clients=1, initial_objects=1, default_view=single(theta=0)))
    clients = [vfc.add_client() for _ in range(37)]
    objects = [vfc.add_object(owner=c) for c in clients]
    vfc.set_view(clients[-1], normal_view())
    vfc.update_received(objects, np.zeros((37, 2)), None, 0.0)
    assert len(vfc.round(0.0)) == 37 * 36


def test_bad_calls_raise_local_protocol_error() -> None:
    w = World(single())
    with pytest.raises(LocalProtocolError, match="object_ids"):
        w.vfc.update_received([7], [[0.0, 0.0]], None, 0.0)
    with pytest.raises(LocalProtocolError, match="positions"):
        w.vfc.update_received([w.obj], [[0.0, 0.0, 0.0]], None, 0.0)
    with pytest.raises(LocalProtocolError, match="pivots"):
        w.vfc.set_pivots(w.a, [w.obj, w.obj])
    with pytest.raises(LocalProtocolError, match="view"):
        w.vfc.set_view(w.a, "zoom")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="nu_reference"):
        VfcConfig(nu_reference=0.0)
    with pytest.raises(ConfigError, match="dim"):
        VfcConfig(dim=4)


def test_next_timer_follows_round_period() -> None:
    vfc = VfcPolicy()
    assert vfc.next_timer() is None
    vfc.round(1.0)
    assert vfc.next_timer() == pytest.approx(1.033)
