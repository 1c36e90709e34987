"""`lagless.io.metrics`: gauge histograms, owner-thread reads, one registry per server, HTTP."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.core import GaugeMetricFamily

from lagless.errors import ConfigError
from lagless.io.metrics import OwnerThread, ServerMetrics, gauge_histogram

BOUNDS = (0.001, 0.01, 0.1, 1.0)


def _buckets(family: object) -> dict[str, float]:
    samples = family.samples  # type: ignore[attr-defined]
    return {s.labels["le"]: s.value for s in samples if s.name.endswith("_bucket")}


@given(st.lists(st.floats(min_value=0.0, max_value=5.0), max_size=50))
def test_gauge_histogram_counts_values_at_or_below_each_bound(values: list[float]) -> None:
    family = gauge_histogram("x_seconds", "x", values, BOUNDS)
    buckets = _buckets(family)
    for bound in BOUNDS:
        assert buckets[repr(bound)] == sum(v <= bound for v in values)
    assert buckets["+Inf"] == len(values)
    gsum = next(s.value for s in family.samples if s.name == "x_seconds_gsum")
    assert gsum == pytest.approx(sum(values))


def test_gauge_histogram_refuses_unsorted_bounds() -> None:
    with pytest.raises(ConfigError, match="strictly ascending"):
        gauge_histogram("x", "x", [], (0.1, 0.1))


def test_owner_thread_runs_requests_on_its_own_thread() -> None:
    owner = OwnerThread()
    ran_on: list[int] = []
    results: list[int] = []
    stop = threading.Event()

    def other() -> None:
        results.append(owner.call(lambda: ran_on.append(threading.get_ident()) or 7, timeout=5))
        stop.set()

    worker = threading.Thread(target=other)
    worker.start()
    while not stop.is_set():
        owner.run_pending()
        time.sleep(0.001)
    worker.join()
    assert results == [7]
    assert ran_on == [threading.get_ident()]
    assert owner.call(lambda: 3, timeout=0) == 3  # on the owner thread: run directly


def test_a_silent_owner_times_out_and_the_scrape_serves_the_last_families() -> None:
    owner = OwnerThread()
    value = [1.0]
    metrics = ServerMetrics(owner, timeout=0.05)
    metrics.add_builder(lambda: [GaugeMetricFamily("lagless_x", "x", value=value[0])])
    seen: list[float | None] = []

    def scrape() -> None:
        seen.append(metrics.registry.get_sample_value("lagless_x"))

    first = threading.Thread(target=scrape)
    first.start()
    while first.is_alive():
        owner.run_pending()
        time.sleep(0.001)
    value[0] = 2.0
    second = threading.Thread(target=scrape)  # nobody runs the owner's requests now
    second.start()
    second.join()
    assert seen == [1.0, 1.0]
    assert metrics.stale_scrapes == 1
    owner.run_pending()  # the late request finds its scrape gone and is dropped quietly


def test_two_servers_in_one_process_have_their_own_registries() -> None:
    a, b = ServerMetrics(OwnerThread()), ServerMetrics(OwnerThread())
    a.add_builder(lambda: [GaugeMetricFamily("lagless_players", "p", value=1)])
    b.add_builder(lambda: [GaugeMetricFamily("lagless_players", "p", value=2)])
    hist_a = a.histogram("lagless_tick_seconds", "t", (0.01, 0.1))
    b.histogram("lagless_tick_seconds", "t", (0.01, 0.1))
    hist_a.observe(0.05)
    assert a.registry.get_sample_value("lagless_players") == 1
    assert b.registry.get_sample_value("lagless_players") == 2
    assert a.registry.get_sample_value("lagless_tick_seconds_count") == 1
    assert b.registry.get_sample_value("lagless_tick_seconds_count") == 0


def test_http_endpoint_serves_the_text_format_and_closes() -> None:
    metrics = ServerMetrics(OwnerThread(lambda: None))
    metrics.add_builder(lambda: [GaugeMetricFamily("lagless_rooms", "r", value=4)])
    done = threading.Event()
    bound = metrics.start(("127.0.0.1", 0))
    assert metrics.address == bound
    try:
        body: list[str] = []

        def get() -> None:
            with urllib.request.urlopen(f"http://127.0.0.1:{bound[1]}/metrics", timeout=5) as r:
                body.append(r.read().decode())
            done.set()

        client = threading.Thread(target=get)
        client.start()
        while not done.wait(0.001):
            metrics.owner.run_pending()
        client.join()
        assert "# TYPE lagless_rooms gauge" in body[0]
        assert "lagless_rooms 4.0" in body[0]
    finally:
        metrics.close()
    metrics.close()  # idempotent
    with socket.socket() as probe:
        probe.settimeout(1)
        assert probe.connect_ex(bound) != 0  # nothing listens any more


def test_a_busy_port_is_a_config_error_naming_the_flag() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=r"--metrics 127\.0\.0\.1:\d+ cannot be bound"):
            ServerMetrics(OwnerThread()).start(("127.0.0.1", port))
