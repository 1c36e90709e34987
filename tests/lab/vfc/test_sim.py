"""The VFC lab run: accounting against spec 001 §5.1 and replica error (lagless.lab.vfc)."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.lab.vfc import RunConfig, simulate


def _run(**kw: object) -> dict[str, object]:
    cfg = RunConfig(map="wcd", players=12, seconds=1.0, **kw)  # type: ignore[arg-type]
    return simulate(cfg, rng=np.random.default_rng(0)).row


def test_broadcast_counts_section_5_1() -> None:
    row = _run(policy="broadcast")
    # the same sends packed like VFC: payload within 1 byte per record of the §5.1 count
    assert 1.0 < row["ratio_payload"] < 1.07  # type: ignore[operator]
    assert row["error_zone0_m_avg"] < 0.01  # type: ignore[operator]  # quantisation only
    assert row["missing_fraction"] == 0.0


def test_vfc_saves_traffic_at_bounded_error() -> None:
    row = _run()
    assert row["ratio"] > 1.5  # type: ignore[operator]
    assert row["error_zone0_m_avg"] < row["error_zone2_m_avg"] < 5.0  # type: ignore[operator]


def test_delta_encoding_beats_records_at_same_error() -> None:
    records, delta = _run(encoding="records"), _run(encoding="delta")
    assert delta["server_out_payload_kBps"] < 0.8 * records["server_out_payload_kBps"]  # type: ignore[operator]
    assert delta["error_zone1_m_avg"] == records["error_zone1_m_avg"]


def test_bad_config() -> None:
    with pytest.raises(ConfigError):
        RunConfig(map="wcd", players=1)
    with pytest.raises(ConfigError):
        RunConfig(map="wcd", players=4, view="wide")


def test_client_incoming_spread() -> None:
    cfg = RunConfig(map="wcd", players=12, seconds=2.0)
    vfc = simulate(cfg, rng=np.random.default_rng(0))
    bcast = simulate(
        RunConfig(map="wcd", players=12, seconds=2.0, policy="broadcast"),
        rng=np.random.default_rng(0),
    ).row
    row = vfc.row
    assert row["client_ratio_min"] < row["client_ratio_mean"] < row["client_ratio_max"]  # type: ignore[operator]
    # the ratio of the mean rates lies within the per-client range
    assert row["client_ratio_min"] <= row["client_ratio"] <= row["client_ratio_max"]  # type: ignore[operator]
    # VFC's incoming rate drifts more over 0.33 s windows than broadcast's near-constant one
    assert row["client_in_cv"] > 3 * row["broadcast_client_in_cv"]  # type: ignore[operator]
    assert bcast["client_in_cv"] < 0.05  # type: ignore[operator]
    assert abs(bcast["client_ratio_max"] - bcast["client_ratio_min"]) < 0.01  # type: ignore[operator]
    assert row["rounds"] == round(2.0 / 0.033)
    assert row["round_ms_avg"] is None
