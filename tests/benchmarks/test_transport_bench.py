"""The transport benchmark runs end to end at tiny sizes and returns sane, consistent rows.

No timing assertions: only that every stack produced every measure, that the numbers are positive
and finite, and that the derived columns agree with each other and with physics (a 100-byte
message cannot cost fewer than 100 bytes on the wire).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "transport.py"


@pytest.fixture(scope="module")
def rows(bench: ModuleType) -> list[dict[str, object]]:
    tiny = bench.Sizes(small=60, large=12, ping_seconds=0.2, trickle_seconds=0.1, memory=40)
    return bench.run(quick=True, sizes=tiny)


def _value(rows: list[dict[str, object]], stack: str, measure: str, unit: str) -> float:
    (match,) = [r for r in rows if (r["stack"], r["measure"], r["unit"]) == (stack, measure, unit)]
    return float(match["value"])  # type: ignore[arg-type]


def test_every_stack_reports_every_network_measure(
    bench: ModuleType, rows: list[dict[str, object]]
) -> None:
    network = {(r["measure"], r["unit"]) for r in rows if r["stack"] == bench.ENET}
    assert len(network) == 8
    for stack in bench.STACKS:
        assert {(r["measure"], r["unit"]) for r in rows if r["stack"] == stack} >= network
    raw = {(r["measure"], r["unit"]) for r in rows if r["stack"] == bench.RAW_UDP}
    assert raw == {(bench.RTT_P50, "ms"), (bench.RTT_P99, "ms")}
    poll = {(r["measure"], r["unit"]) for r in rows if r["stack"] == bench.LAGLESS_POLL}
    assert poll == {
        *(
            (f"throughput {label}", unit)
            for label in ("100 B", "1000 B")
            for unit in ("msg/s", "MB/s")
        ),
        ("wire per 100 B msg, bulk", "B"),
    }


def test_values_are_positive_and_finite(rows: list[dict[str, object]]) -> None:
    for r in rows:
        value = float(r["value"])  # type: ignore[arg-type]
        assert math.isfinite(value), r
        assert value > 0.0, r


def test_ratios_are_against_enet(bench: ModuleType, rows: list[dict[str, object]]) -> None:
    for r in rows:
        ratio = r["vs_enet"]
        if r["measure"].startswith("sans-I/O"):  # type: ignore[union-attr]
            assert ratio is None
            continue
        base = _value(rows, bench.ENET, str(r["measure"]), str(r["unit"]))
        assert ratio == pytest.approx(float(r["value"]) / base)  # type: ignore[arg-type]
        if r["stack"] == bench.ENET:
            assert ratio == pytest.approx(1.0)


def test_derived_columns_agree(bench: ModuleType, rows: list[dict[str, object]]) -> None:
    for stack in bench.THROUGHPUT_STACKS:
        for label, size in (("100 B", 100), ("1000 B", 1000)):
            rate = _value(rows, stack, f"throughput {label}", "msg/s")
            mbps = _value(rows, stack, f"throughput {label}", "MB/s")
            assert mbps == pytest.approx(rate * size / 1e6)
        assert _value(rows, stack, "wire per 100 B msg, bulk", "B") > 100.0  # payload + header
    for stack in bench.STACKS:
        assert _value(rows, stack, "RTT p99, 32 B at 60 Hz", "ms") >= _value(
            rows, stack, "RTT p50, 32 B at 60 Hz", "ms"
        )
        assert _value(rows, stack, "wire per 100 B msg, 60 Hz", "B") > 100.0


def test_in_memory_rows_cover_both_pairs_and_sizes(rows: list[dict[str, object]]) -> None:
    measures = {r["measure"] for r in rows if str(r["measure"]).startswith("sans-I/O")}
    assert measures == {
        f"sans-I/O {pair}, {size} B"
        for pair in ("Connection pair", "Server+Client")
        for size in (100, 1000)
    }


def test_goals_report_the_four_numbers_of_this_run(
    bench: ModuleType, rows: list[dict[str, object]]
) -> None:
    goals = {g["key"]: g for g in bench.goals(rows)}
    assert set(goals) == {
        "reliable_100B_vs_enet",
        "reliable_1000B_vs_enet",
        "rtt_p50_vs_raw_udp",
        "sansio_us_per_msg",
    }
    rtt = _value(rows, bench.LAGLESS, bench.RTT_P50, "ms") / _value(
        rows, bench.RAW_UDP, bench.RTT_P50, "ms"
    )
    assert goals["rtt_p50_vs_raw_udp"]["measured"] == pytest.approx(rtt)
    assert goals["rtt_p50_vs_raw_udp"]["met"] is (rtt <= 2.0)
    cost = _value(rows, bench.LAGLESS, bench.SANSIO_100, "µs/msg")
    assert goals["sansio_us_per_msg"]["measured"] == pytest.approx(cost)
    assert goals["sansio_us_per_msg"]["met"] is (cost <= 4.0)
    reference = bench.asyncio_ratios(rows)
    for label in ("100 B", "1000 B"):
        key = label.replace(" ", "")
        measure = f"throughput {label}"
        poll = _value(rows, bench.LAGLESS_POLL, measure, "msg/s")
        on_asyncio = _value(rows, bench.LAGLESS, measure, "msg/s")
        enet = _value(rows, bench.ENET, measure, "msg/s")
        goal = goals[f"reliable_{key}_vs_enet"]
        assert goal["measured"] == pytest.approx(poll / enet)
        assert goal["met"] is (poll / enet >= 0.5)
        assert reference[f"reliable_{key}_vs_enet_asyncio"] == pytest.approx(on_asyncio / enet)


def test_json_output_is_one_object(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    tiny = bench.Sizes(small=30, large=6, ping_seconds=0.1, trickle_seconds=0.05, memory=20)
    monkeypatch.setattr(bench, "QUICK", tiny)
    bench.main(["--quick", "--json"])
    out = capsys.readouterr().out
    (line,) = out.splitlines()
    summary = json.loads(line)
    for key in (
        "reliable_100B_vs_enet",
        "reliable_1000B_vs_enet",
        "rtt_p50_vs_raw_udp",
        "sansio_us_per_msg",
        "reliable_100B_vs_enet_asyncio",
        "reliable_1000B_vs_enet_asyncio",
    ):
        assert math.isfinite(summary[key])
    assert len(summary["goals"]) == 4
