"""Recipient selection (spec 002 §3.7, Eq. 2.1-2.6): weights, goal function, draw statistics."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import chisquare

from lagless.errors import LocalProtocolError
from lagless.gossip import (
    AvatarState,
    GossipConfig,
    PeerTable,
    draw_recipients,
    goal_function,
    selection_weights,
)
from lagless.gossip.selection import RecipientSelector

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


def _table(rng: random.Random, size: int) -> PeerTable:
    """A table with unaddressed, silent and position-less peers, removals and reused slots."""
    table = PeerTable(self_id=0, forget_timeout=10.0, max_peers=500)
    for aid in range(1, size + 1):
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
    for aid in range(1, size + 1, 11):
        table.remove(aid, 1.0, departed=False)
    for aid in (200, 201):  # new peers reuse freed slots
        record = table.touch(aid, 2.0)
        assert record is not None
        table.set_address(record, ("10.1.0.1", aid))
    return table


def _exact_pair_law(
    table: PeerTable, me: AvatarState, exclude: set[int], penalised: set[int], config: GossipConfig
) -> dict[tuple[int, int], float]:
    """P(first, second) of two draws without replacement, from select_peers's own weights."""
    records = [r for r in table if r.address is not None and r.avatar_id not in exclude]
    advertised = [r.free_bandwidth for r in table if r.free_bandwidth is not None]
    fb_max = max(advertised, default=0)
    b = [
        config.unknown_bandwidth if r.free_bandwidth is None else r.free_bandwidth / fb_max
        for r in records
    ]
    w = selection_weights(
        me.position,
        me.facing,
        [r.avatar.position if r.avatar is not None else (0.0, 0.0, 0.0) for r in records],
        [r.avatar is not None for r in records],
        b,
        [r.avatar_id in penalised for r in records],
        d_max=config.d_max,
    )
    total = float(w.sum())
    law = {}
    for i, ri in enumerate(records):
        for j, rj in enumerate(records):
            if i != j:
                law[(ri.avatar_id, rj.avatar_id)] = w[i] / total * w[j] / (total - w[i])
    return law


def test_selector_matches_exact_probabilities() -> None:
    # The cached, rejection-based selector draws ordered pairs with the exact law of Eq. 2.2
    # recomputed before each draw (chi-square over every ordered pair), through exclusions,
    # penalties that clamp v' to 0, silent peers and peers without a position.
    config = GossipConfig(d_max=500.0, fanout=2)
    rng = random.Random(7)
    table = _table(rng, 12)
    me = AvatarState(avatar_id=0, position=(200.0, 200.0, 0.0), facing=(0.0, 1.0, 0.0))
    exclude, penalised = {2, 6}, {3, 4, 201}
    law = _exact_pair_law(table, me, exclude, penalised, config)
    selector = RecipientSelector(table, config)
    counts: Counter[tuple[int, int]] = Counter()
    draws = 60_000
    for _ in range(draws):
        first, second = selector.select(me, exclude, penalised, rng=rng)
        counts[(first.avatar_id, second.avatar_id)] += 1
    assert set(counts) <= set(law)
    pairs = sorted(law)
    observed = np.array([counts[p] for p in pairs], dtype=float)
    expected = np.array([law[p] * draws for p in pairs])
    assert observed[expected == 0].sum() == 0  # pairs with a clamped v' = 0 never come up
    big = expected >= 5  # chi-square cells: the rare pairs are pooled into one
    rare = (expected > 0) & ~big
    obs = np.append(observed[big], observed[rare].sum()) if rare.any() else observed[big]
    exp = np.append(expected[big], expected[rare].sum()) if rare.any() else expected[big]
    assert len(obs) > 20
    assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-4


def test_selector_without_weight_left_draws_uniformly() -> None:
    # Every candidate penalised below zero: v' = 0 everywhere, so the fan-out is drawn uniformly.
    config = GossipConfig(d_max=1.0, fanout=3, alpha_penalty=10.0)
    table = PeerTable(self_id=0, forget_timeout=10.0, max_peers=50)
    for aid in range(1, 7):
        record = table.touch(aid, 0.0)
        assert record is not None
        table.set_address(record, ("10.0.0.1", aid))
    selector = RecipientSelector(table, config)
    me = AvatarState(avatar_id=0, position=(0.0, 0.0, 0.0), facing=(1.0, 0.0, 0.0))
    rng = random.Random(3)
    counts: Counter[int] = Counter()
    for _ in range(6000):
        got = [r.avatar_id for r in selector.select(me, {6}, set(range(1, 7)), rng=rng)]
        assert len(set(got)) == len(got) == 3
        assert 6 not in got
        counts.update(got)
    for aid in range(1, 6):
        assert counts[aid] / 6000 == pytest.approx(3 / 5, abs=0.03)


def test_selector_cache_follows_table_changes() -> None:
    # A selector that has drawn before gives the same recipients as a fresh one over an
    # identical table after both changed (moves, bandwidth, removals, new peers, a moved and
    # turned own avatar): no stale weights. (A table's change set has one reader: its selector.)
    config = GossipConfig(d_max=500.0, fanout=4)
    rng = random.Random(11)
    tables = [_table(random.Random(5), 120) for _ in range(2)]
    used = RecipientSelector(tables[0], config)
    me = AvatarState(avatar_id=0, position=(200.0, 200.0, 0.0), facing=(0.0, 1.0, 0.0))
    for trial in range(40):
        used.select(me, set(), set(), rng=random.Random(-trial))
        for _ in range(rng.randrange(1, 40)):
            aid, roll = rng.randrange(1, 140), rng.random()
            pos = (rng.uniform(0, 400), rng.uniform(0, 400), 0.0)
            for table in tables:
                record = table.touch(aid, 3.0) if roll > 0.95 else table.get(aid)
                if record is None:
                    continue
                if roll < 0.5 or roll > 0.95:
                    table.set_address(record, ("10.2.0.1", aid))
                    avatar = AvatarState(avatar_id=aid, position=pos, facing=(1, 0, 0))
                    table.set_avatar(record, avatar, 9)
                elif roll < 0.8:
                    table.set_bandwidth(record, int(pos[0] * 500))
                else:
                    table.remove(aid, 3.0, departed=False)
        if trial % 5 == 0:
            me = AvatarState(
                avatar_id=0, position=(rng.uniform(0, 400), 50.0, 0.0), facing=(1, 1, 0)
            )
        exclude = {rng.randrange(1, 140) for _ in range(3)}
        penalised = {rng.randrange(1, 140) for _ in range(6)}
        fresh = RecipientSelector(tables[1], config).select(
            me, exclude, penalised, rng=random.Random(trial)
        )
        again = used.select(me, exclude, penalised, rng=random.Random(trial))
        assert [r.avatar_id for r in again] == [r.avatar_id for r in fresh]
        assert len(fresh) == 4
        assert not {r.avatar_id for r in fresh} & exclude
