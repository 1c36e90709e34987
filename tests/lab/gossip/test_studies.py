"""E2-E4 layout and probabilities, and the E1 server model."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.lab.gossip.studies import group_layout, group_probabilities, server_load


def test_layout() -> None:
    pos, group = group_layout()
    assert pos.shape == (72, 3)
    assert set(group.tolist()) == set(range(1, 13))
    centre = np.array([pos[group == g, :2].mean(axis=0) for g in range(1, 13)])
    r = np.hypot(*centre.T)
    assert r[0::2] == pytest.approx(150.0)
    assert r[1::2] == pytest.approx(300.0)
    assert np.arctan2(centre[0, 1], centre[0, 0]) == pytest.approx(0.0, abs=1e-9)


def test_front_group_best_and_probabilities_sum_to_one() -> None:
    probs, _ = group_probabilities((1.0, 1.0, 0.5, 1.0))
    assert probs.sum() == pytest.approx(1.0)
    assert int(np.argmax(probs)) == 0
    # angle dominating (small a1/a2): the behind-group 7 drops further below the front group 1
    low, _ = group_probabilities((1.0, 4.0, 0.5, 1.0))
    assert low[6] / low[0] < probs[6] / probs[0]


def test_half_bandwidth_group_loses_at_high_alpha3() -> None:
    heavy, _ = group_probabilities((1.0, 1.0, 2.0, 1.0), extra_over=1, extra_bandwidth=0.5)
    light, _ = group_probabilities((1.0, 1.0, 1.0 / 8, 1.0), extra_over=1, extra_bandwidth=0.5)
    ratio_heavy = (heavy[-1] / 7) / (heavy[0] / 6)
    ratio_light = (light[-1] / 7) / (light[0] / 6)
    assert ratio_heavy < 0.8 < ratio_light < 1.0


def test_penalised_group_reordered() -> None:
    probs, _ = group_probabilities((1.0, 1.0, 0.5, 1.0), extra_over=3, extra_penalised=True)
    assert (probs[-1] / 7) < 0.5 * (probs[2] / 6)


def test_server_load_counts_aoi() -> None:
    pos = np.array([[0.0, 0.0], [10.0, 0.0], [900.0, 900.0]])
    total, mean, frag = server_load(pos, 1000.0, delta=False)
    assert total == pytest.approx(3 * 8 + 2 * 24)
    assert mean == pytest.approx(total / 3)
    assert frag == 0.0
    assert server_load(pos, 1000.0, delta=True)[0] == pytest.approx(3 * 8 + 2 * 12)
