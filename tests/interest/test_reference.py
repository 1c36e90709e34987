"""The vectorised VFC round equals the naive per-pair reference on random small worlds."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.interest import (
    NaiveVfcPolicy,
    NuMode,
    VfcConfig,
    VfcPolicy,
    example_view,
    normal_view,
    vfc_view,
    zoom_view,
)

VIEWS = [normal_view(0.1), zoom_view(0.1), vfc_view(0.1), example_view(0.1)]
# A 5 m grid makes exact zone boundaries happen; free floats cover everything in between.
coord = st.integers(-12, 12).map(lambda v: v * 5.0) | st.floats(-60.0, 60.0)
heading = st.integers(-1, 1).map(float) | st.floats(-1.0, 1.0)


@st.composite
def scripts(draw: st.DrawFn) -> tuple[VfcConfig, list[tuple[object, ...]]]:
    config = VfcConfig(
        initial_clients=2,
        initial_objects=2,
        max_pivots=2,
        nu_mode=draw(st.sampled_from(NuMode)),
        nu_reference=10.0,
        default_view=draw(st.sampled_from(VIEWS)),
    )
    steps: list[tuple[object, ...]] = []
    clients = draw(st.integers(1, 4))
    objects = draw(st.integers(1, 5))
    steps.extend([("client",)] * clients)
    steps.extend(("object", draw(st.integers(-1, clients - 1))) for _ in range(objects))
    for c in range(clients):
        pivots = draw(st.lists(st.integers(0, objects - 1), max_size=2, unique=True))
        steps.append(("pivots", c, pivots))
    now = 0.0
    kinds = ["update"] * 4 + ["round"] * 4 + ["client", "object", "view", "pivots"]
    for _ in range(draw(st.integers(4, 40))):
        kind = draw(st.sampled_from(kinds))
        if kind == "client":
            steps.append(("client",))
            clients += 1
        elif kind == "object":
            steps.append(("object", draw(st.integers(-1, clients - 1))))
            objects += 1
        elif kind == "update":
            ids = draw(st.lists(st.integers(0, objects - 1), min_size=1, max_size=6))
            pos = [[draw(coord), draw(coord)] for _ in ids]
            head = [[draw(heading), draw(heading)] for _ in ids]
            steps.append(("update", ids, pos, head, now))
        elif kind == "round":
            now += draw(st.sampled_from([0.011, 0.033, 0.1, 0.25]))
            steps.append(("round", now))
        elif kind == "view":
            steps.append(("view", draw(st.integers(0, clients - 1)), draw(st.sampled_from(VIEWS))))
        else:
            pivots = draw(st.lists(st.integers(0, objects - 1), max_size=2, unique=True))
            steps.append(("pivots", draw(st.integers(0, clients - 1)), pivots))
    steps.append(("round", now + 0.033))
    return config, steps


@settings(max_examples=200, deadline=None)
@given(scripts())
def test_vectorised_round_equals_naive_reference(
    script: tuple[VfcConfig, list[tuple[object, ...]]],
) -> None:
    config, steps = script
    fast, naive = VfcPolicy(config), NaiveVfcPolicy(config)
    rounds = 0
    for step in steps:
        match step:
            case ("client",):
                assert fast.add_client() == naive.add_client()
            case ("object", owner):
                owner_id = None if owner == -1 else owner
                assert fast.add_object(owner_id) == naive.add_object(owner_id)  # type: ignore[arg-type]
            case ("update", ids, pos, head, now):
                for policy in (fast, naive):
                    policy.update_received(ids, pos, None, now, headings=head)  # type: ignore[arg-type]
            case ("view", client, view):
                fast.set_view(client, view)  # type: ignore[arg-type]
                naive.set_view(client, view)  # type: ignore[arg-type]
            case ("pivots", client, pivots):
                fast.set_pivots(client, pivots)  # type: ignore[arg-type]
                naive.set_pivots(client, pivots)  # type: ignore[arg-type]
            case ("round", now):
                a, b = fast.round(now), naive.round(now)  # type: ignore[arg-type]
                assert np.array_equal(a.clients, b.clients)
                assert np.array_equal(a.objects, b.objects)
                assert np.array_equal(a.reasons, b.reasons)
                rounds += 1
    assert rounds >= 1


def test_reference_agrees_on_a_dense_random_world() -> None:
    rng = np.random.default_rng(7)
    config = VfcConfig(initial_clients=4, initial_objects=4)
    fast, naive = VfcPolicy(config), NaiveVfcPolicy(config)
    for policy in (fast, naive):
        for c in range(20):
            policy.add_client()
            policy.add_object(owner=c)
            policy.set_pivots(c, [c])
    total = 0
    for k in range(12):
        pos = rng.uniform(0, 1000, (20, 2))
        head = rng.normal(size=(20, 2))
        a_plan = b_plan = None
        for policy in (fast, naive):
            policy.update_received(np.arange(20), pos, None, k * 0.033, headings=head)
        a_plan, b_plan = fast.round(k * 0.033), naive.round(k * 0.033)
        assert a_plan.pairs() == b_plan.pairs()
        assert np.array_equal(a_plan.reasons, b_plan.reasons)
        total += len(a_plan)
    assert 20 * 19 < total < 12 * 20 * 19  # first round full, later rounds filtered
