"""``benchmarks/game_server.py`` runs end to end at a small size and reports consistent figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def _bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        f"lagless_bench_{name}", ROOT / "benchmarks" / f"{name}.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_game_server_bench_small_run() -> None:
    result = _bench("game_server").run(players=4, seconds=2.0)
    assert result["players"] == 4
    assert result["sim_ticks"] == 120  # 60 Hz for 2 s
    assert 0 < result["simulate_ms_median"] <= result["simulate_ms_p99"]
    assert result["server_ms_per_tick"] > result["simulate_ms_median"] / 2
    assert result["client_kBps_with_headers"] > result["client_kBps_payload"] > 0
    assert result["collision_all_pairs_ms"] > 0


def test_game_server_bench_with_server_bots() -> None:
    result = _bench("game_server").run(players=1, seconds=1.0, server_bots=3)
    assert result["players"] == 1
    assert result["server_bots"] == 3
    assert result["server_ms_per_tick"] > 0
