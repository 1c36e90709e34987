"""Lab ``sync/compare``: one row per algorithm x network, and the expected trade-offs hold."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.lab import Result, run
from lagless.lab.experiments.sync_compare import ALGORITHMS, SPEC, aim_assist
from lagless.sync.arena import SHOOT, Arena


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Result:
    return run(SPEC, seed=0, quick=True, out=tmp_path_factory.mktemp("sync-compare"))


def _row(result: Result, algorithm: str, profile: str) -> dict[str, float]:
    rows = [
        r for r in result.tables["runs"] if (r["algorithm"], r["profile"]) == (algorithm, profile)
    ]
    assert len(rows) == 1
    return {k: v for k, v in rows[0].items() if isinstance(v, int | float)}  # type: ignore[misc]


def test_every_algorithm_and_network_is_a_row(result: Result) -> None:
    quick = SPEC.quick
    runs = result.tables["runs"]
    assert {r["algorithm"] for r in runs} == set(ALGORITHMS)
    expected = len(ALGORITHMS) * len(quick["profiles"]) * len(quick["losses"])  # type: ignore[arg-type]
    assert len(runs) == expected == result.metrics["runs"]
    for row in runs:
        assert row["inputs"] == (
            "aim-assist" if row["algorithm"] in {"time-warp", "local-rollback"} else "raw"
        )
        assert float(row["wire_bytes_per_s"]) > float(row["payload_bytes_per_s"]) > 0  # type: ignore[arg-type]


def test_lockstep_is_consistent_and_pays_in_delay(result: Result) -> None:
    for profile in SPEC.quick["profiles"]:  # type: ignore[union-attr]
        lockstep = _row(result, "lockstep", str(profile))
        warp = _row(result, "time-warp", str(profile))
        assert lockstep["inconsistent_frames"] == 0
        assert lockstep["resimulated_per_s"] == 0
        assert warp["input_delay_ms_p50"] == 0  # optimistic: the local input shows at once
        assert lockstep["input_delay_ms_p50"] > warp["input_delay_ms_p50"]


def test_a_long_rtt_costs_the_optimistic_algorithms_rollback(result: Result) -> None:
    for name in ("time-warp", "local-rollback"):
        near, far = _row(result, name, "lan"), _row(result, name, "umts")
        assert far["resimulated_per_s"] > near["resimulated_per_s"]
        assert far["rollback_depth_max"] > near["rollback_depth_max"]
        assert far["inconsistent_pct"] > near["inconsistent_pct"]


def test_local_rollback_holds_messages_instead_of_anti_messaging(result: Result) -> None:
    assert result.metrics["local_rollback_anti_messages_per_s_mean"] == 0
    held = _row(result, "local-rollback", "umts")
    warp = _row(result, "time-warp", "umts")
    # holding its own events back makes the others' rollbacks deeper
    assert held["rollback_depth_max"] > warp["rollback_depth_max"]


def test_aim_assist_fires_only_with_a_target_in_line() -> None:
    game = Arena(3)
    state = game.initial_state()
    state.pos[:] = np.array([[10_000, 10_000], [20_000, 10_500], [10_000, 30_000]])
    state.facing[0] = (1, 0)
    shoot = bytes((SHOOT | 8,))
    assert aim_assist(state, 0, 0, shoot) == shoot  # player 1 is 10 m ahead, 0.5 m off the line
    state.facing[0] = (-1, 0)
    assert aim_assist(state, 0, 0, shoot) == b"\x08"  # behind: the shot is held back
    state.facing[0] = (0, 1)
    assert aim_assist(state, 0, 0, shoot) == shoot  # player 2 straight below
    assert aim_assist(state, 0, 0, b"\x04") == b"\x04"


def test_bad_parameters_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="algorithms"):
        run(SPEC, seed=0, quick=True, out=None, overrides={"algorithms": ["warp-10"]})
    with pytest.raises(ConfigError, match="losses"):
        run(SPEC, seed=0, quick=True, out=None, overrides={"losses": [1.5]})
