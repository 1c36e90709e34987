"""A real ``lagless serve`` process with ``--metrics`` and ``--log-format json``: live metrics over
HTTP, connect and disconnect events as JSON lines, and a SIGTERM that tells clients why."""

from __future__ import annotations

import asyncio
import importlib
import signal
from collections.abc import Callable

import pytest

from lagless.apps import REFERENCE_PROTOCOL_ID
from lagless.cli.app import app
from lagless.cli.common import run_app
from lagless.io.endpoint import AsyncEndpoint, open_endpoint
from lagless.transport import (
    RELIABLE,
    Client,
    ClientDisconnectReason,
    Connected,
    Disconnected,
    MessageReceived,
    NetcodeClientConfig,
)
from tests.ops.helpers import JsonServer, Samples, scrape

MESSAGES = 20  # per client


async def _connect(server: tuple[str, int], client_id: int) -> AsyncEndpoint[Client]:
    endpoint = open_endpoint(Client(config=NetcodeClientConfig(insecure=True)), "127.0.0.1:0")
    endpoint.call(
        lambda c: c.connect_insecure(
            server_addresses=[server],
            protocol_id=REFERENCE_PROTOCOL_ID,
            client_id=client_id,
            now=endpoint.now(),
        )
    )
    await endpoint.wait_for(Connected, timeout=10)
    return endpoint


async def _talk(endpoint: AsyncEndpoint[Client]) -> None:
    for n in range(MESSAGES):
        endpoint.call(lambda c, n=n: c.send(RELIABLE, f"ping {n}".encode()))
        reply = await endpoint.wait_for(MessageReceived, timeout=10)
        assert reply.payload == f"ping {n}".encode()


async def _until_gone(endpoint: AsyncEndpoint[Client]) -> tuple[list[bytes], Disconnected]:
    said: list[bytes] = []
    async with asyncio.timeout(10):
        while True:
            event = await endpoint.receive()
            if isinstance(event, MessageReceived):
                said.append(event.payload)
            elif isinstance(event, Disconnected):
                return said, event


def test_metrics_json_logs_and_a_graceful_sigterm(
    json_server: Callable[..., JsonServer],
) -> None:
    server = json_server(
        "serve", "--insecure", "--echo", "-p", "0", "--metrics", "127.0.0.1:0", "--log-format",
        "json",
    )  # fmt: skip
    host, port = str(server.wait_event("serving")["address"]).rsplit(":", 1)
    metrics_at = str(server.wait_event("metrics")["address"])

    async def main() -> tuple[Samples, Samples, list[bytes], Disconnected]:
        first = await _connect((host, int(port)), 11)
        second = await _connect((host, int(port)), 12)
        await asyncio.gather(_talk(first), _talk(second))
        await asyncio.sleep(0.2)  # the last acks carry RTT samples
        live = await asyncio.to_thread(scrape, metrics_at)
        first.call(lambda c: c.disconnect())
        first.close()
        await asyncio.sleep(0.3)
        after = await asyncio.to_thread(scrape, metrics_at)
        server.process.send_signal(signal.SIGTERM)
        said, gone = await _until_gone(second)
        second.close()
        return live, after, said, gone

    live, after, said, gone = asyncio.run(main())
    status, err = server.finish()

    assert live["lagless_connections", (("kind", "lagless"),)] == 2
    assert live["lagless_connections_opened_total", ()] == 2
    assert live["lagless_received_bytes_total", ()] > MESSAGES * 2 * len("ping 0")
    assert live["lagless_sent_bytes_total", ()] > MESSAGES * 2 * len("ping 0")
    assert live["lagless_received_packets_total", ()] >= MESSAGES * 2
    assert live["lagless_sent_packets_total", ()] >= MESSAGES * 2
    # the endpoint's count of what it handed to the socket, alone or in trains of several
    assert live["lagless_datagrams_sent_total", ()] >= live["lagless_sent_packets_total", ()]
    assert 0 <= live["lagless_udp_trains_total", ()] <= live["lagless_datagrams_sent_total", ()]
    assert live["lagless_rtt_seconds_gcount", ()] == 2
    assert live["lagless_rtt_seconds_bucket", (("le", "1.0"),)] == 2  # loopback: well below 1 s
    assert 0 < live["lagless_rtt_seconds_gsum", ()] < 2.0
    assert live["lagless_loss_ratio_gcount", ()] == 2
    assert live["lagless_dropped_packets_total", (("reason", "replayed"),)] == 0
    assert after["lagless_connections", (("kind", "lagless"),)] == 1
    closed = after["lagless_connections_closed_total", (("reason", "client_disconnected"),)]
    assert closed == 1

    assert said == [b"server shutting down"]
    assert gone.reason is ClientDisconnectReason.SERVER_DISCONNECTED
    assert status == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    connected = server.events("client_connected")
    assert sorted(r["client_id"] for r in connected) == [11, 12]
    assert all(str(r["address"]).startswith("127.0.0.1:") for r in connected)
    reasons = sorted(str(r["reason"]) for r in server.events("client_disconnected"))
    assert reasons == ["client_disconnected", "server_disconnected"]
    (shutdown,) = server.events("shutdown")
    assert (shutdown["clients"], shutdown["reason"]) == (1, "server shutting down")
    (summary,) = server.events("summary")
    assert (summary["clients"], summary["messages"], summary["signal"]) == (2, 2 * MESSAGES, 15)
    assert all(set(r) >= {"ts", "level", "logger", "event", "message"} for r in server.records)


def test_raw_server_disconnects_its_clients_on_sigterm(
    json_server: Callable[..., JsonServer],
) -> None:
    server = json_server("serve", "--insecure", "--raw", "-p", "0", "--log-format", "json")
    host, port = str(server.wait_event("serving")["address"]).rsplit(":", 1)

    async def main() -> Disconnected:
        client = await _connect((host, int(port)), 5)  # a lagless client on a raw server
        server.wait_event("client_connected")
        server.process.send_signal(signal.SIGTERM)
        said, gone = await _until_gone(client)
        client.close()
        assert said == []  # a raw server's payloads are the application's: no goodbye text
        return gone

    gone = asyncio.run(main())
    status, err = server.finish()
    assert gone.reason is ClientDisconnectReason.SERVER_DISCONNECTED
    assert status == 128 + signal.SIGTERM, err
    assert [r["reason"] for r in server.events("client_disconnected")] == ["server_disconnected"]


def test_bad_ops_options_are_one_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    for args, message in (
        (["serve", "--log-format", "xml"], "error: --log-format must be one of text, json"),
        (["serve", "--metrics", "nowhere"], "error: --metrics"),
        (["game", "serve", "--metrics", "127.0.0.1"], "error: --metrics"),
        (["game", "serve", "--log-format", "yaml"], "error: --log-format must be one of"),
        (["demo", "--metrics", "127.0.0.1:0"], "error: --metrics and --log-format go with"),
    ):
        assert run_app(app, args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith(message), (args, err)
        assert err.count("\n") == 1


def test_metrics_without_prometheus_client_name_the_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module("lagless.apps.serve")  # lagless.apps.serve is also a function
    monkeypatch.setattr(module, "find_spec", lambda _name: None)
    assert run_app(app, ["serve", "--metrics", "127.0.0.1:0"]) == 2
    err = capsys.readouterr().err
    assert err == "error: --metrics needs prometheus-client: pip install 'lagless[ops]'\n"
