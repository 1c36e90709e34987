"""``benchmarks/replication.py`` runs end to end at a small size and reports consistent figures.

No timing assertion beyond sanity: the figures exist, are positive and agree with each other.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "replication.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lagless_bench_replication", BENCH)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_small_run_reports_every_figure() -> None:
    result = _bench().run(clients=6, entities=120, ticks=6, warmup=4, radius=200.0, naive_clients=2)
    assert result["clients"] == 6
    assert result["entities"] == 120
    for key in ("tick_ms", "tick_wall_ms", "ack_ms", "naive_tick_ms", "transport_send_ms"):
        assert result[key] > 0.0
    # a header at least (9 bytes), one unreliable message at most
    assert 9 <= result["bytes_per_client_per_tick"] <= 1016
    assert 10 < result["bits_per_record"] < 120
    ratio = result["naive_tick_ms"] / result["tick_ms"]  # from rounded figures: within 0.2
    assert abs(result["speedup_vs_naive"] - ratio) <= 0.2


def test_cli_json() -> None:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "lagless",
            "bench",
            "replication",
            "--quick",
            "--json",
            "--clients",
            "4",
            "--entities",
            "100",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert {"tick_ms", "clients", "entities", "bytes_per_client_per_tick"} <= set(result)
    assert result["clients"] == 4


def test_tick_and_send_is_the_sum() -> None:
    result = _bench().run(clients=3, entities=60, ticks=4, warmup=2, radius=300.0, naive_clients=1)
    assert result["tick_and_send_ms"] >= result["tick_ms"]
    assert result["tick_and_send_ms"] >= result["transport_send_ms"]
