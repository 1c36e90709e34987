"""Bots and maps of the VFC experiments (spec 001 §6.3, Table 5.4)."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.interest.mobility import MAPS, Bots, BotsConfig, Mobility, get_map
from lagless.interest.records import CUBE_UNIT


def test_table_5_4_maps() -> None:
    assert len(MAPS) == 20
    assert get_map("urban_c").size == (2250 * CUBE_UNIT, 1750 * CUBE_UNIT)
    assert get_map("urban_c").mobility is Mobility.CLUSTERED
    assert get_map("flagstone").mobility is Mobility.SPREAD
    with pytest.raises(ConfigError):
        get_map("de_dust")


def test_bots_stay_inside_and_move_at_speed() -> None:
    bots = Bots(BotsConfig(count=64, map=get_map("wcd")), rng=np.random.default_rng(1))
    rng = np.random.default_rng(2)
    w, h = get_map("wcd").size
    for _ in range(300):
        before = bots.xy.copy()
        bots.step(0.033, rng=rng)
        step = np.hypot(*(bots.xy - before).T)
        assert step.max() <= 12.5 * 0.033 + 1e-9
        assert (bots.xy >= 0).all()
        assert (bots.xy[:, 0] <= w).all()
        assert (bots.xy[:, 1] <= h).all()
    assert np.allclose(np.linalg.norm(bots.headings, axis=1), 1.0)


def _spread(model: Mobility) -> float:
    spec = get_map("flagstone")
    bots = Bots(BotsConfig(count=200, map=spec, mobility=model), rng=np.random.default_rng(3))
    rng = np.random.default_rng(4)
    samples = []
    for i in range(600):
        bots.step(0.033, rng=rng)
        if i % 30 == 0:
            samples.append(bots.xy.copy())
    xy = np.concatenate(samples)
    centre = np.array(spec.size) / 2
    return float(np.mean(np.hypot(*(xy - centre).T)))


def test_clustered_is_concentrated() -> None:
    spread, clustered = _spread(Mobility.SPREAD), _spread(Mobility.CLUSTERED)
    assert clustered < 0.75 * spread


def test_flat_world_records_have_more_zero_bytes() -> None:
    def zeros(amplitude: float, jumps: float) -> float:
        cfg = BotsConfig(count=64, map=get_map("wcd"), terrain_amplitude=amplitude, jump_rate=jumps)
        bots = Bots(cfg, rng=np.random.default_rng(5))
        rng = np.random.default_rng(6)
        counts = []
        for _ in range(100):
            bots.step(0.033, rng=rng)
            counts.append((bots.records().view(np.uint8) == 0).mean())
        return float(np.mean(counts))

    assert zeros(0.0, 0.0) > zeros(4.0, 0.5) + 0.02
