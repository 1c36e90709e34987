"""Serving the page and links over real sockets: static files, the link protocol, the command."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from lagless.cli.app import app
from lagless.cli.common import run_app
from lagless.demo.arena import PROTOCOL_ID, SNAPSHOT_FORMAT
from lagless.demo.net import UdpPlayer
from lagless.io.websocket import DROP_BACKLOG, MAX_BACKLOG, WebSocketLink
from lagless.physics.codec import Snapshot, Welcome, decode_message
from lagless.web import LINK_VERSION, Hello, LinkMessage, Ping, Pong, decode_frame, encode_frame
from lagless.web.frames import MAX_FRAME
from lagless.web.serve import open_web_match, page_config

HELLO = encode_frame(Hello(PROTOCOL_ID, LINK_VERSION))


def _get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, reply.headers["Content-Type"], reply.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


async def _drain(ws: Any) -> None:
    while True:
        await asyncio.wait_for(ws.recv(), 5.0)


async def _until_no_cars(match: Any) -> None:
    for _ in range(100):
        if not match.bot.server.cars:
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"the players' cars are still there: {match.bot.server.cars}")


async def _serve_and(check: Any) -> None:
    async with open_web_match(("127.0.0.1", 0), ("127.0.0.1", 0), bots=2, seed=1) as servers:
        await check(servers.match, servers.web, servers.endpoint)


def test_static_files_and_config() -> None:
    async def check(_match: Any, web: Any, _endpoint: Any) -> None:
        base = f"http://127.0.0.1:{web.address[1]}"
        index = await asyncio.to_thread(_get, base + "/")
        assert index[:2] == (200, "text/html; charset=utf-8")
        assert b'import { start } from "./client.mjs"' in index[2]
        for name in ("client.mjs", "codec.mjs", "display.mjs"):
            status, kind, body = await asyncio.to_thread(_get, f"{base}/{name}?v=1")
            assert (status, kind) == (200, "text/javascript; charset=utf-8")
            assert b"export" in body
        status, kind, body = await asyncio.to_thread(_get, base + "/config.json")
        assert (status, kind) == (200, "application/json")
        assert json.loads(body) == json.loads(json.dumps(page_config()))
        missing = await asyncio.to_thread(_get, base + "/../../etc/passwd")
        assert missing[0] == 404

    asyncio.run(_serve_and(check))


def test_a_websocket_client_plays_and_leaves() -> None:
    async def check(match: Any, web: Any, endpoint: Any) -> None:
        async with connect(f"ws://127.0.0.1:{web.address[1]}/ws", compression=None) as ws:
            await ws.send(HELLO)
            await ws.send(encode_frame(Ping(42.0)))
            seen: dict[str, int] = {}
            while seen.get("Snapshot", 0) < 5:
                frame = decode_frame(await asyncio.wait_for(ws.recv(), 5.0))
                if isinstance(frame, Pong):
                    assert frame.client_time == 42.0
                    assert abs(frame.server_time - endpoint.now()) < 1.0
                    seen["Pong"] = 1
                else:
                    assert isinstance(frame, LinkMessage)
                    message = decode_message(frame.payload, SNAPSHOT_FORMAT)
                    assert isinstance(message, Welcome | Snapshot)
                    name = type(message).__name__
                    seen[name] = seen.get(name, 0) + 1
            assert seen["Welcome"] == 1
            assert seen["Pong"] == 1
            assert len(match.bot.server.cars) == 1
        await _until_no_cars(match)
        assert match.bytes_out > 0

    asyncio.run(_serve_and(check))


@pytest.mark.parametrize(
    ("send", "code", "reason"),
    [
        (b"\x09nonsense", 1008, "protocol_violation"),
        ("text", 1003, "binary frames only"),
        (b"\x02\x00" + bytes(MAX_FRAME), 1009, ""),
    ],
    ids=["garbage", "text", "too-big"],
)
def test_bad_links_are_closed(send: bytes | str, code: int, reason: str) -> None:
    async def check(match: Any, web: Any, _endpoint: Any) -> None:
        async with connect(f"ws://127.0.0.1:{web.address[1]}/ws", max_size=None) as ws:
            if isinstance(send, bytes) and send.startswith(b"\x02"):
                await ws.send(HELLO)
            await ws.send(send)
            with pytest.raises(ConnectionClosed) as closed:
                await _drain(ws)
            assert closed.value.rcvd is not None
            assert closed.value.rcvd.code == code
            assert closed.value.rcvd.reason.startswith(reason)
        await _until_no_cars(match)

    asyncio.run(_serve_and(check))


def test_link_backlog_drops_snapshots_and_closes_when_reliable_overflow() -> None:
    link = WebSocketLink(1, ("127.0.0.1", 1), connection=None)  # type: ignore[arg-type]
    for _ in range(DROP_BACKLOG + 3):
        link.send(b"snap", droppable=True)
    assert link.dropped == 3
    for _ in range(MAX_BACKLOG - DROP_BACKLOG):
        link.send(b"welcome", droppable=False)
    assert not link.closing
    link.send(b"one too many", droppable=False)
    assert link.closing
    link.send(b"after", droppable=False)
    assert link.dropped == 3


def test_the_command_serves_then_summarises(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["web", "--port", "0", "--udp-port", "0", "--host", "127.0.0.1", "--bots", "2"]
    assert run_app(app, [*args, "--duration", "1.2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("web: open http://127.0.0.1:")
    assert "lagless demo --connect 127.0.0.1:" in out[0]
    assert any(line.startswith("t_s=1  players=0  browsers=0  bots=2") for line in out)
    assert out[-1].startswith("web: 1.2 s, 0 players (0 browsers), 2 bots, tick ")
    assert run_app(app, [*args[:-1], "99"]) == 2
    assert "--bots must be in [0, 48], got 99" in capsys.readouterr().err
    assert run_app(app, [*args, "--profile", "lte", "--no-webtransport"]) == 2
    assert "--profile conditions WebTransport sessions" in capsys.readouterr().err
    assert run_app(app, [*args, "--profile", "dialup"]) == 2
    assert "unknown profile 'dialup'; valid: none, " in capsys.readouterr().err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_stops_the_command_with_its_summary(signum: signal.Signals) -> None:
    args = ["web", "--host", "127.0.0.1", "--port", "0", "--udp-port", "0", "--bots", "2", "-q"]
    process = subprocess.Popen(
        [sys.executable, "-m", "lagless", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        port = re.search(r"http://127\.0\.0\.1:(\d+)/", first)
        assert port is not None, first

        signalled: list[float] = []

        async def visit() -> None:  # a browser-like link is open when the signal comes
            async with connect(f"ws://127.0.0.1:{port.group(1)}/ws") as ws:
                await ws.send(HELLO)
                await asyncio.wait_for(ws.recv(), 5.0)
                process.send_signal(signum)
                signalled.append(time.monotonic())
                with pytest.raises(ConnectionClosed):
                    await _drain(ws)

        asyncio.run(visit())
        out, err = process.communicate(timeout=10)
        assert time.monotonic() - signalled[0] < 2.0
        assert process.returncode == 128 + signum, err
        assert out.startswith("web: ")
        assert re.search(r"^web: [\d.]+ s, [01] players \([01] browsers\), 2 bots, ", out, re.M)
        assert "Traceback" not in err
        assert "Task exception was never retrieved" not in err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_a_udp_player_and_a_browser_link_share_one_match() -> None:
    async def check(match: Any, web: Any, endpoint: Any) -> None:
        player = UdpPlayer(endpoint.address, seed=2, model="dr+0.15rtt", autopilot=False)
        try:
            async with connect(f"ws://127.0.0.1:{web.address[1]}/ws") as ws:
                await ws.send(HELLO)
                cars: set[int] = set()
                for _ in range(200):
                    player.advance()
                    try:
                        frame = decode_frame(await asyncio.wait_for(ws.recv(), 0.02))
                    except TimeoutError:
                        continue
                    assert isinstance(frame, LinkMessage)
                    message = decode_message(frame.payload, SNAPSHOT_FORMAT)
                    if isinstance(message, Snapshot):
                        cars = {car.car_id for car in message.cars}
                        if len(cars) == 4:
                            break
                assert player.client.car_id is not None
                assert cars == {0, 1, 62, 63}  # two players (UDP, browser) and two bots
                assert player.client.car_id in cars
                assert len(match.hub.link_connections) == 1
                assert len(match.bot.server.transport.clients) == 2
        finally:
            player.close()

    asyncio.run(_serve_and(check))
