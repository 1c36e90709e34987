"""The server benchmark runs end to end at tiny sizes and reports sane, complete JSON.

No timing assertions (the machine is shared): only that every requested client connected, that
messages were echoed and measured, and that the goal rows and the PyGaSe comparison are there.
The load generator itself (`Load`) is checked on a fake clock.
"""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "server.py"


def _json(args: list[str]) -> dict[str, object]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)  # exactly one JSON object, nothing else on stdout
    assert isinstance(result, dict)
    return result


def _lagless() -> str:
    found = shutil.which("lagless", path=str(Path(sys.executable).parent))
    assert found is not None
    return found


@pytest.fixture(scope="module")
def quick() -> dict[str, object]:
    """One quick run through the CLI; ``--clients 3`` shows the arguments reach the script."""
    return _json([_lagless(), "bench", "server", "--quick", "--json", "--clients", "3"])


def test_quick_json_has_the_headline_fields(quick: dict[str, object]) -> None:
    assert quick["clients"] == quick["connected"] == 3
    p99 = quick["rtt_p99_ms"]
    assert isinstance(p99, float)
    assert p99 > 0
    assert p99 >= quick["rtt_p50_ms"]  # type: ignore[operator]
    cpu = quick["server_cpu_share"]
    assert isinstance(cpu, float)
    assert 0.0 <= cpu < 2.0
    assert quick["echoed_per_s"] > 0  # type: ignore[operator]
    assert quick["floor_rtt_p99_ms"] > 0  # type: ignore[operator]


def test_quick_json_every_workload_echoed(quick: dict[str, object]) -> None:
    rows = quick["workloads"]
    assert isinstance(rows, list)
    for row in rows:
        assert row["connected"] == row["clients"], row
        assert row["sent"] > 0, row
        assert row["echoed"] > 0, row
        assert 0 <= row["lost"] <= row["sent"], row
        assert math.isfinite(row["rtt_max_ms"]), row
        assert row["rtt_max_ms"] >= row["rtt_p99_ms"] >= row["rtt_p50_ms"] > 0, row
        assert row["server_echoes_per_s"] > 0, row  # the server's own count over the window
        if row["stack"] == "lagless":  # every echo leaves in a datagram, acks and clock sync too
            assert row["server_datagrams_out_per_s"] > 0, row


def test_quick_json_states_goals_and_pygase(quick: dict[str, object]) -> None:
    goals = quick["goals"]
    assert isinstance(goals, list)
    assert len(goals) >= 4
    assert all(isinstance(g["met"], bool) for g in goals)
    stacks = {row["stack"] for row in quick["workloads"]}  # type: ignore[attr-defined]
    if quick["pygase"] == "ran":
        assert stacks == {"lagless", "plain UDP", "PyGaSe"}
        assert len(goals) == 7
    else:  # the reason PyGaSe could not run is stated instead
        assert "PyGaSe" in str(quick["pygase"])
        assert stacks == {"lagless", "plain UDP"}


def test_cli_passes_arguments_through(quick: dict[str, object]) -> None:
    assert quick["plan"]["sweep"] == [3]  # type: ignore[index]  # --clients 3
    assert quick["plan"]["seconds"] == 1.0  # type: ignore[index]  # --quick
    rows = quick["workloads"]
    assert isinstance(rows, list)
    assert {row["clients"] for row in rows if row["workload"] == "sweep"} == {3}
    assert quick["plan"]["stream_acks"] is True  # type: ignore[index]  # no --default-acks


def test_clients_ack_on_their_stream_unless_told_to_keep_the_default(bench: ModuleType) -> None:
    default = bench.ConnectionConfig().sparse_ack_delay
    assert not bench.client_connection(20.0, stream_acks=True).delivery_events
    assert bench.client_connection(20.0, stream_acks=True).sparse_ack_delay == pytest.approx(
        0.05 + bench.STREAM_ACK_MARGIN
    )
    assert bench.client_connection(20.0, stream_acks=False).sparse_ack_delay == default
    assert bench.client_connection(0.0, stream_acks=True).sparse_ack_delay == default  # max rate
    plan, _ = bench._plan(["--quick", "--default-acks"])
    assert plan.stream_acks is False


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_the_bench_cleanly(signum: signal.Signals) -> None:
    child = subprocess.Popen(
        [_lagless(), "bench", "server", "--quick", "--no-pygase"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stderr is not None
    # inside the first workload, whatever the speed of the host and core: a fixed sleep of 3 s
    # let a quick run with the compiled core finish all four workloads before the signal
    seen = ""
    while "[1/4]" not in seen:
        line = child.stderr.readline()
        assert line, f"the bench ended before its first workload: {seen}"
        seen += line
    child.send_signal(signum)
    _, rest = child.communicate(timeout=30)
    err = seen + rest
    assert child.returncode == 128 + signum, err  # 130 for SIGINT, 143 for SIGTERM
    assert "Traceback" not in err
    assert "never retrieved" not in err
    assert "interrupted" in err


def _schedule(bench: ModuleType, window: float = 2.0) -> object:
    return bench.Schedule(start=10.0, measure_from=11.0, measure_to=11.0 + window, drain_to=20.0)


def test_load_paces_each_client_at_its_rate_with_spread_phases(bench: ModuleType) -> None:
    load = bench.Load(
        clients=2, active=[0, 1], phase_base=0, total=2, rate=10.0, schedule=_schedule(bench)
    )
    times: dict[int, list[float]] = {0: [], 1: []}
    now = 10.0
    while (at := load.next_time(now)) is not None:
        now = at
        for local, payload in load.due(now):
            assert len(payload) == bench.PAYLOAD_SIZE
            times[local].append(now)
    assert len(times[0]) == len(times[1]) == 30  # 3 s at 10/s
    assert times[1][0] - times[0][0] == pytest.approx(0.05)  # half a period apart
    assert times[0][1] - times[0][0] == pytest.approx(0.1)
    assert load.tally.sent == 40  # 2 clients × 2 s window × 10/s


def test_load_counts_echoes_duplicates_and_losses(bench: ModuleType) -> None:
    load = bench.Load(
        clients=1, active=[0], phase_base=0, total=1, rate=1.0, schedule=_schedule(bench)
    )
    assert len(load.due(10.0)) == 1  # warm-up: sent, not measured
    ((_, first),) = load.due(11.0)  # in the window
    load.echoed(0, first, 11.25)
    load.echoed(0, first, 11.5)  # a duplicate
    ((_, second),) = load.due(12.0)
    assert load.next_time(13.0) is None  # sending stops when the window closes
    assert load.tally.sent == 2
    assert load.tally.echoed == 1
    assert load.tally.duplicates == 1
    assert load.tally.rtts == [pytest.approx(0.25)]
    assert second  # never echoed: sent - echoed = 1 lost


def test_load_keeps_a_window_in_flight_at_max_rate(bench: ModuleType) -> None:
    load = bench.Load(
        clients=1, active=[0], phase_base=0, total=1, rate=0.0, schedule=_schedule(bench, 10.0)
    )
    burst = load.due(11.0)
    assert len(burst) == bench.WINDOW
    assert load.due(11.001) == []  # nothing echoed yet
    load.echoed(0, burst[0][1], 11.002)
    assert len(load.due(11.003)) == 1
    refill = load.due(11.0 + bench.LOSS_TIMEOUT + 0.001)  # the first burst timed out
    assert len(refill) == bench.WINDOW - 1
