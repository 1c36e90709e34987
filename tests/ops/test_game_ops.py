"""Real ``lagless game serve`` and ``lagless demo --server`` processes with ``--metrics`` and
``--log-format json``: live player, tick and traffic metrics; SIGTERM kicks every player with
the reason "server shutting down" and exits 143."""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Callable

from lagless.cli.game import GAME_PROTOCOL_ID
from lagless.game import ConnectionEnded, ConnectionEstablished, GameClient
from lagless.io.endpoint import PollEndpoint
from tests.ops.helpers import JsonServer, scrape

FRAME = 0.005  # s between client pumps


def _pump(
    clients: list[PollEndpoint[GameClient]], until: Callable[[], bool], timeout: float
) -> list[object]:
    events: list[object] = []
    deadline = time.monotonic() + timeout
    while not until() and time.monotonic() < deadline:
        clients[0].wait(FRAME)
        for client in clients:
            events.extend(client.pump())
    return events


def test_game_server_metrics_logs_and_a_graceful_sigterm(
    json_server: Callable[..., JsonServer],
) -> None:
    server = json_server(
        "game", "serve", "-p", "0", "--discovery-port", "0", "--metrics", "127.0.0.1:0",
        "--log-format", "json",
    )  # fmt: skip
    host, port = str(server.wait_event("serving")["address"]).rsplit(":", 1)
    metrics_at = str(server.wait_event("metrics")["address"])
    clients: list[PollEndpoint[GameClient]] = []
    try:
        for n in range(2):
            player = GameClient(GAME_PROTOCOL_ID, rng=random.Random(n))
            endpoint = PollEndpoint(player, "127.0.0.1:0")
            player.connect((host, int(port)), endpoint.now(), client_id=n + 1, name=f"p{n}")
            endpoint.flush()
            clients.append(endpoint)
        events = _pump(clients, lambda: all(c.obj.avatar is not None for c in clients), 10.0)
        assert sum(isinstance(e, ConnectionEstablished) for e in events) == 2
        _pump(clients, lambda: False, 0.8)  # a few snapshots and acks: RTT samples
        live = scrape(metrics_at)
        server.process.send_signal(signal.SIGTERM)
        events = _pump(clients, lambda: all(not c.obj.is_connected for c in clients), 10.0)
    finally:
        for client in clients:
            client.close()
    status, err = server.finish()

    assert live["lagless_players", ()] == 2
    assert live["lagless_connections", (("kind", "lagless"),)] == 2
    assert live["lagless_connections_opened_total", ()] == 2
    assert live["lagless_ticks_total", ()] > 20  # 60 Hz for about a second
    assert live["lagless_tick_seconds_count", ()] > 20
    assert live["lagless_tick_seconds_bucket", (("le", "0.1"),)] > 20
    assert live["lagless_snapshots_total", ()] > 5
    assert live["lagless_sent_bytes_total", ()] > 1000
    assert live["lagless_received_bytes_total", ()] > 100
    assert live["lagless_rtt_seconds_gcount", ()] == 2
    assert live["lagless_rtt_seconds_bucket", (("le", "1.0"),)] == 2

    ended = [e for e in events if isinstance(e, ConnectionEnded)]
    assert [(e.reason, e.kicked) for e in ended] == [
        ("server_disconnected", "server shutting down")
    ] * 2
    assert status == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert sorted(str(r["name"]) for r in server.events("client_connected")) == ["p0", "p1"]
    left = server.events("client_disconnected")
    assert sorted((str(r["name"]), r["reason"]) for r in left) == [
        ("p0", "kicked"),
        ("p1", "kicked"),
    ]
    (shutdown,) = server.events("shutdown")
    assert (shutdown["clients"], shutdown["reason"]) == (2, "server shutting down")
    (summary,) = server.events("summary")
    assert (summary["players"], summary["signal"]) == (2, 15)


def test_demo_server_metrics_and_json_status(json_server: Callable[..., JsonServer]) -> None:
    server = json_server(
        "demo", "--server", "--bots", "2", "--host", "127.0.0.1", "-p", "0", "--metrics",
        "127.0.0.1:0", "--log-format", "json",
    )  # fmt: skip
    assert server.wait_event("serving")["bots"] == 2
    metrics_at = str(server.wait_event("metrics")["address"])
    status = server.wait_event("status")  # the first once-a-second report
    live = scrape(metrics_at)
    server.process.send_signal(signal.SIGTERM)
    code, err = server.finish()
    assert status["bots"] == 2
    assert live["lagless_bots", ()] == 2
    assert live["lagless_players", ()] == 0
    assert live["lagless_ticks_total", ()] > 0
    assert 0 < live["lagless_tick_seconds_recent", (("stat", "avg"),)] < 0.1
    p99 = live["lagless_tick_seconds_recent", (("stat", "p99"),)]
    assert p99 >= live["lagless_tick_seconds_recent", (("stat", "avg"),)]
    assert code == 128 + signal.SIGTERM, err
    (summary,) = server.events("summary")
    assert (summary["bots"], summary["signal"]) == (2, 15)


def test_room_service_metrics(json_server: Callable[..., JsonServer]) -> None:
    server = json_server("game", "rooms", "-p", "0", "--metrics", "127.0.0.1:0")
    stream = server.process.stdout
    assert stream is not None
    first, second = stream.readline(), stream.readline()
    assert first.startswith("room service on 127.0.0.1:")
    assert second.startswith("metrics on http://127.0.0.1:")
    live = scrape(second.split("http://", 1)[1].split("/", 1)[0])
    server.process.send_signal(signal.SIGTERM)
    out, err = server.process.communicate(timeout=10)
    assert (live["lagless_rooms", ()], live["lagless_room_members", ()]) == (0, 0)
    assert live["lagless_connections", (("kind", "lagless"),)] == 0
    assert live["lagless_received_packets_total", ()] == 0
    assert ("lagless_connections_opened_total", ()) not in live  # it keeps those events to itself
    assert server.process.returncode == 128 + signal.SIGTERM, err
    assert "0 rooms open" in out
