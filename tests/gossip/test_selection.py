"""Recipient selection (spec 002 §3.7, Eq. 2.1-2.6): weights, goal function, draw statistics."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.gossip import (
    AvatarState,
    GossipConfig,
    PeerTable,
    draw_recipients,
    goal_function,
    selection_weights,
)
from lagless.gossip.selection import select_from_table, select_peers

SAMPLES = 100_000


@pytest.mark.parametrize(
    ("beta", "expected"),
    [
        (0.0, 1.0),
        (math.pi / 4, 0.735),
        (math.pi / 3, 0.578),
        (math.pi / 2, 0.291),
        (math.pi, 0.0072),
    ],
)
def test_goal_function_values(beta: float, expected: float) -> None:
    assert goal_function(beta) == pytest.approx(expected, abs=5e-4)


def _scalar_weight(pos, facing, cand, b, s, d_max, alphas):
    a1, a2, a3, a4 = alphas
    delta = [c - p for c, p in zip(cand, pos, strict=True)]
    dist = math.sqrt(sum(x * x for x in delta))
    d = min(1.0, max(0.0, 1.0 - dist / d_max))
    fn = math.sqrt(sum(x * x for x in facing))
    if dist == 0.0:
        beta = 0.0
    elif fn == 0.0:
        beta = math.pi / 2
    else:
        cos = sum(x * y for x, y in zip(delta, facing, strict=True)) / (dist * fn)
        beta = math.acos(max(-1.0, min(1.0, cos)))
    return max(0.0, a1 * d + a2 * math.exp(-beta * beta / 2) + a3 * b - a4 * s)


coord = st.floats(-500, 500)
point = st.tuples(coord, coord, coord)


@given(
    point,
    point,
    st.lists(st.tuples(point, st.floats(0, 1), st.booleans()), min_size=1, max_size=8),
    st.tuples(st.floats(0, 3), st.floats(0, 3), st.floats(0, 3), st.floats(0, 3)),
)
@settings(max_examples=200)
def test_weights_match_eq_2_1_and_2_6(pos, facing, cands, alphas) -> None:
    got = selection_weights(
        pos,
        facing,
        [c for c, _, _ in cands],
        [True] * len(cands),
        [b for _, b, _ in cands],
        [s for _, _, s in cands],
        d_max=800.0,
        alphas=alphas,
    )
    want = [_scalar_weight(pos, facing, c, b, s, 800.0, alphas) for c, b, s in cands]
    assert got == pytest.approx(want, abs=1e-9)


def test_unknown_position_counts_only_bandwidth() -> None:
    w = selection_weights((0, 0, 0), (1, 0, 0), [[0, 0, 0]], [False], [0.8], [False], d_max=10.0)
    assert w[0] == pytest.approx(0.5 * 0.8)


def test_single_draw_matches_eq_2_2() -> None:
    rng = random.Random(1)
    weights = [2.4, 1.2, 0.6, 0.3, 0.05, 0.0]
    counts = Counter(draw_recipients(weights, 1, rng=rng)[0] for _ in range(SAMPLES))
    total = sum(weights)
    for i, w in enumerate(weights):
        # sigma <= 0.0016 at 100k samples: 0.007 is > 4 sigma, yet far below the gaps between p's
        assert counts[i] / SAMPLES == pytest.approx(w / total, abs=0.007)
    assert counts[5] == 0


def test_second_draw_renormalises_without_replacement() -> None:
    rng = random.Random(2)
    weights = [3.0, 1.0, 1.0]
    seconds = Counter()
    for _ in range(SAMPLES // 2):
        first, second = draw_recipients(weights, 2, rng=rng)
        assert first != second
        seconds[second] += 1
    # P(second = 0) = (p_1 + p_2) * 3/4 = 0.3; drawing with replacement would give 0.6
    p = [w / 5 for w in weights]
    expect0 = p[1] * 3 / 4 + p[2] * 3 / 4
    expect1 = p[0] * 1 / 2 + p[2] * 1 / 4
    assert seconds[0] / (SAMPLES // 2) == pytest.approx(expect0, abs=0.01)
    assert seconds[1] / (SAMPLES // 2) == pytest.approx(expect1, abs=0.01)


def test_draws_are_distinct_and_capped() -> None:
    rng = random.Random(3)
    for n in range(0, 8):
        got = draw_recipients([1.0] * n, 5, rng=rng)
        assert len(got) == min(n, 5)
        assert len(set(got)) == len(got)


def test_zero_weights_fall_back_to_uniform() -> None:
    rng = random.Random(4)
    counts = Counter()
    for _ in range(20_000):
        counts.update(draw_recipients([1.0, 0.0, 0.0, 0.0], 2, rng=rng))
    assert counts[0] == 20_000
    for i in (1, 2, 3):
        assert counts[i] / 20_000 == pytest.approx(1 / 3, abs=0.02)


def test_penalty_lowers_probability() -> None:
    """Eq. 2.6 with alpha1/alpha4 = 1: a node listed in the tail is chosen less often (E4)."""
    rng = random.Random(5)
    cands = [[10.0, 0.0, 0.0], [10.0, 0.0, 0.0]]
    w = selection_weights(
        (0, 0, 0), (1, 0, 0), cands, [True, True], [1.0, 1.0], [False, True], d_max=100.0
    )
    assert w[0] - w[1] == pytest.approx(1.0)
    picks = Counter(draw_recipients(w, 1, rng=rng)[0] for _ in range(20_000))
    assert picks[0] / 20_000 == pytest.approx(w[0] / w.sum(), abs=0.015)
    assert picks[0] > 1.5 * picks[1]


def test_front_and_near_beats_behind_and_far() -> None:
    w = selection_weights(
        (0, 0, 0),
        (1, 0, 0),
        [[50, 0, 0], [-50, 0, 0], [900, 0, 0], [0, 50, 0]],
        [True] * 4,
        [0.5] * 4,
        [False] * 4,
        d_max=1000.0,
    )
    assert np.argmax(w) == 0
    assert w[0] > w[3] > w[1]


def test_draw_rejects_bad_input() -> None:
    with pytest.raises(LocalProtocolError):
        draw_recipients([1.0, -1.0], 1, rng=random.Random(0))
    with pytest.raises(LocalProtocolError):
        draw_recipients([1.0], -1, rng=random.Random(0))


def test_table_draw_equals_record_draw() -> None:
    # select_from_table is the vectorised twin of select_peers: same records, same order,
    # same random stream -> the same recipients, through removals, silent peers and penalties.
    config = GossipConfig(d_max=500.0, fanout=4)
    rng = random.Random(7)
    table = PeerTable(self_id=0, forget_timeout=10.0, max_peers=500)
    for aid in range(1, 120):
        record = table.touch(aid, 0.0)
        assert record is not None
        if aid % 7:
            table.set_address(record, (f"10.0.{aid // 250}.{aid % 250}", 4000))
        if aid % 5:
            position = (rng.uniform(0, 400), rng.uniform(0, 400), 0.0)
            table.set_avatar(
                record, AvatarState(avatar_id=aid, position=position, facing=(1.0, 0, 0)), aid
            )
        if aid % 3:
            table.set_bandwidth(record, rng.randrange(1, 100_000))
    for aid in range(1, 120, 11):
        table.remove(aid, 1.0, departed=False)
    for aid in (200, 201):  # new peers reuse freed slots but come last in table order
        record = table.touch(aid, 2.0)
        assert record is not None
        table.set_address(record, ("10.1.0.1", aid))
    me = AvatarState(avatar_id=0, position=(200.0, 200.0, 0.0), facing=(0.0, 1.0, 0.0))
    for trial in range(50):
        exclude = {rng.randrange(1, 120) for _ in range(3)}
        penalised = {rng.randrange(1, 120) for _ in range(6)} | {201}
        records = [r for r in table if r.address is not None and r.avatar_id not in exclude]
        slow = select_peers(records, me, penalised, config=config, rng=random.Random(trial))
        fast = select_from_table(
            table, me, exclude, penalised, config=config, rng=random.Random(trial)
        )
        assert [r.avatar_id for r in fast] == [r.avatar_id for r in slow]
        assert len(fast) == 4
