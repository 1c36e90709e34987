"""Graceful shutdown of ``lagless web`` (issue 16 part 3, docs/operations.md): on SIGTERM every
browser (WebSocket and WebTransport) and every UDP player is told why before its link closes,
the wait is bounded (1 s, a second signal cuts it), and the process exits 143 with its summary.
The page's JavaScript shows the reason (``server closed: <reason>``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import ssl
import subprocess
import time
from collections.abc import Callable
from typing import Any

import pytest
from aioquic.asyncio.client import connect as quic_connect
from aioquic.h3.connection import H3_ALPN, FrameType
from aioquic.h3.events import WebTransportStreamDataReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from lagless.demo.arena import PROTOCOL_ID, SNAPSHOT_FORMAT
from lagless.demo.net import UdpPlayer
from lagless.io.webtransport import StreamDeframer
from lagless.physics.codec import (
    MAX_GOODBYE_BYTES,
    Goodbye,
    Welcome,
    decode_message,
)
from lagless.physics.codec import encode_message as encode_physics
from lagless.web import LINK_VERSION, Hello, LinkMessage, decode_frame, encode_frame
from lagless.web.serve import (
    CLOSE_GOING_AWAY,
    WT_PATH,
    WebServers,
    WebStatus,
    page_config,
    serve_web,
)
from lagless.wire.errors import DecodeError
from tests.ops.helpers import ROOT, JsonServer, Samples, scrape
from tests.ops.test_rooms_logs import finish
from tests.web.cdp import CHROMIUM, chromium
from tests.web.test_webtransport import _Browser

REASON = "server shutting down"
HELLO = encode_frame(Hello(PROTOCOL_ID, LINK_VERSION))
STATIC = ROOT / "src" / "lagless" / "web" / "static"
NODE = shutil.which("node")
WT_CLOSE = 0x100 + (CLOSE_GOING_AWAY & 0xFF)  # the driver's QUIC application error for 1001


def _goodbye_in(frame: bytes) -> str | None:
    """The reason of a physics Goodbye carried by one link frame, else None."""
    decoded = decode_frame(frame)
    if not isinstance(decoded, LinkMessage):
        return None
    message = decode_message(decoded.payload, SNAPSHOT_FORMAT)
    return message.reason if isinstance(message, Goodbye) else None


def test_sigterm_tells_a_websocket_browser_and_a_udp_player_why_then_exits_143(
    json_server: Callable[..., JsonServer],
) -> None:
    server = json_server(
        "web",
        *("--host", "127.0.0.1", "--port", "0", "--udp-port", "0", "--bots", "1"),
        *("--no-webtransport", "--log-format", "json", "--metrics", "127.0.0.1:0"),
    )
    process = server.process
    serving = server.wait_event("serving")
    tcp = int(str(serving["address"]).rsplit(":", 1)[1])
    udp = int(str(serving["udp_address"]).rsplit(":", 1)[1])
    at = server.wait_event("metrics")
    player = UdpPlayer(("127.0.0.1", udp), seed=3, model="dr+0.15rtt", autopilot=False)
    samples: Samples = {}
    frames: list[bytes] = []
    closed: list[ConnectionClosed] = []
    signalled: list[float] = []

    async def browse() -> None:
        async with connect(f"ws://127.0.0.1:{tcp}/ws", compression=None) as ws:
            await ws.send(HELLO)
            deadline = time.monotonic() + 15.0
            while player.client.car_id is None or not frames:  # both players are in
                assert time.monotonic() < deadline, "the players never joined"
                player.advance()
                try:
                    frames.append(await asyncio.wait_for(ws.recv(), 0.02))  # type: ignore[arg-type]
                except TimeoutError:
                    continue
            samples.update(await asyncio.to_thread(scrape, str(at["address"])))
            process.send_signal(signal.SIGTERM)
            signalled.append(time.monotonic())
            try:
                while True:
                    player.advance()
                    try:
                        frames.append(await asyncio.wait_for(ws.recv(), 0.02))  # type: ignore[arg-type]
                    except TimeoutError:
                        continue
            except ConnectionClosed as exc:
                closed.append(exc)
            while player.client.ended is None and time.monotonic() < signalled[0] + 5.0:
                player.advance()
                await asyncio.sleep(0.01)

    try:
        asyncio.run(browse())
    finally:
        player.close()
    status, err = finish(server)
    exited = time.monotonic() - signalled[0]

    assert status == 128 + signal.SIGTERM, err
    assert exited < 2.5  # 1 s of grace at most, then the summary (noisy: a shared machine)
    assert [_goodbye_in(f) for f in frames if _goodbye_in(f)] == [REASON]
    assert _goodbye_in(frames[-1]) == REASON  # the goodbye is the last frame before the close
    (close,) = closed
    assert close.rcvd is not None
    assert (close.rcvd.code, close.rcvd.reason) == (CLOSE_GOING_AWAY, REASON)
    assert player.client.goodbye == REASON
    assert player.client.ended == "server_disconnected"
    assert samples["lagless_browsers", ()] == 1
    assert samples["lagless_players", ()] == 2
    assert samples["lagless_bots", ()] == 1
    assert samples["lagless_connections", (("kind", "lagless"),)] == 1  # the UDP player
    assert samples["lagless_link_sent_bytes_total", ()] > 0
    assert samples["lagless_received_packets_total", ()] > 0
    joined = server.events("client_connected")
    assert sorted(str(r["kind"]) for r in joined) == ["browser", "udp"]
    (shutdown,) = server.events("shutdown")
    assert (shutdown["clients"], shutdown["reason"]) == (2, REASON)
    (summary,) = server.events("summary")
    assert (summary["signal"], summary["players"], summary["browsers"]) == (15, 2, 1)
    events = [r["event"] for r in server.records]
    assert events.index("shutdown") < events.index("summary")
    assert "Traceback" not in err


def _browser_configuration() -> QuicConfiguration:
    return QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        max_datagram_frame_size=65536,
        verify_mode=ssl.CERT_NONE,
    )


async def _join(client: _Browser, port: int) -> tuple[int, StreamDeframer]:
    """Open a session, say HELLO on its stream, wait for the welcome; return the session and
    the stream's deframer."""
    session = client.open_session(port, WT_PATH)
    stream = client.h3.create_webtransport_stream(session)
    with client.h3._get_or_create_stream(stream) as mine:  # as in test_webtransport
        mine.frame_type, mine.session_id = FrameType.WEBTRANSPORT_STREAM, session
    client._quic.send_stream_data(stream, StreamDeframer.frame(HELLO))
    client.transmit()
    deframer = StreamDeframer(4098)
    first = await client.next(WebTransportStreamDataReceived)
    (welcome,) = deframer.feed(first.data)
    decoded = decode_frame(welcome)
    assert isinstance(decoded, LinkMessage)
    assert isinstance(decode_message(decoded.payload, SNAPSHOT_FORMAT), Welcome)
    return session, deframer


async def _webtransport_goodbye(acknowledge: bool, cut_after: float | None) -> dict[str, Any]:
    """Serve in-process with one WebTransport browser, stop, and report what the browser saw
    and how long the shutdown took."""
    local = ("127.0.0.1", 0)
    stop = asyncio.Event()
    cut = asyncio.Event()
    running: list[WebServers] = []
    started: list[WebStatus] = []
    told: list[int] = []
    task = asyncio.create_task(
        serve_web(
            local,
            local,
            bots=0,
            seed=1,
            duration=None,
            stop=stop,
            on_start=started.append,
            webtransport=local,
            on_serving=running.append,
            goodbye=REASON,
            on_shutdown=told.append,
            cut=cut,
        )
    )
    while not started:
        await asyncio.sleep(0.01)
    wt = started[0].webtransport_address
    assert wt is not None
    async with quic_connect(
        "127.0.0.1", wt[1], configuration=_browser_configuration(), create_protocol=_Browser
    ) as client:
        assert isinstance(client, _Browser)
        session, deframer = await _join(client, wt[1])
        stop.set()
        stopped = time.monotonic()
        data = await client.next(WebTransportStreamDataReceived)
        goodbye = [_goodbye_in(f) for f in deframer.feed(data.data)]
        if acknowledge:  # what the page does: end the session on the goodbye
            client.h3.send_data(session, b"", end_stream=True)
            client.transmit()
        if cut_after is not None:
            await asyncio.sleep(cut_after)
            cut.set()
        final = await asyncio.wait_for(task, 5.0)
        took = time.monotonic() - stopped
        terminated = None
        if not acknowledge:
            terminated = await client.next(ConnectionTerminated)
    return {
        "goodbye": goodbye,
        "took": took,
        "told": told,
        "terminated": terminated,
        "browsers": final.browsers,
        "links": running[0].match.links,
    }


def test_a_webtransport_browser_that_ends_its_session_on_the_goodbye_ends_the_wait() -> None:
    seen = asyncio.run(_webtransport_goodbye(acknowledge=True, cut_after=None))
    assert seen["goodbye"] == [REASON]
    assert seen["told"] == [1]
    assert seen["browsers"] == 1
    assert seen["links"] == {}
    assert seen["took"] < 0.8  # well inside the 1 s grace (noisy: a shared machine)


def test_a_silent_webtransport_browser_is_closed_with_a_code_and_the_reason_after_1_s() -> None:
    seen = asyncio.run(_webtransport_goodbye(acknowledge=False, cut_after=None))
    assert seen["goodbye"] == [REASON]
    terminated = seen["terminated"]
    assert isinstance(terminated, ConnectionTerminated)
    assert (terminated.error_code, terminated.reason_phrase) == (WT_CLOSE, REASON)
    assert 0.9 < seen["took"] < 2.0


def test_a_second_signal_cuts_the_wait_short() -> None:
    seen = asyncio.run(_webtransport_goodbye(acknowledge=False, cut_after=0.1))
    terminated = seen["terminated"]
    assert isinstance(terminated, ConnectionTerminated)
    assert (terminated.error_code, terminated.reason_phrase) == (WT_CLOSE, REASON)
    assert seen["took"] < 0.7


def test_links_without_hello_and_links_opened_during_the_wait_are_closed_at_once() -> None:
    async def main() -> list[tuple[str, int, str, float]]:
        local = ("127.0.0.1", 0)
        stop = asyncio.Event()
        started: list[WebStatus] = []
        task = asyncio.create_task(
            serve_web(
                local,
                local,
                bots=0,
                seed=1,
                duration=None,
                stop=stop,
                on_start=started.append,
                webtransport=local,
                goodbye=REASON,
            )
        )
        while not started:
            await asyncio.sleep(0.01)
        http, wt = started[0].http_address[1], started[0].webtransport_address
        assert wt is not None
        closes: list[tuple[str, int, str, float]] = []

        async def closed(name: str, ws: Any, since: float) -> None:
            with contextlib.suppress(ConnectionClosed):
                while True:
                    await ws.recv()
            assert ws.close_code is not None
            closes.append((name, ws.close_code, ws.close_reason, time.monotonic() - since))

        async with (
            quic_connect(
                "127.0.0.1", wt[1], configuration=_browser_configuration(), create_protocol=_Browser
            ) as client,
            connect(f"ws://127.0.0.1:{http}/ws") as early,  # never says HELLO
        ):
            assert isinstance(client, _Browser)
            await _join(client, wt[1])  # a silent session: the wait lasts the full second
            stop.set()
            await closed("no hello", early, time.monotonic())
            await asyncio.sleep(0.2)
            assert not task.done()
            async with connect(f"ws://127.0.0.1:{http}/ws") as late:
                await closed("during the wait", late, time.monotonic())
            await asyncio.wait_for(task, 5.0)
        return closes

    closes = asyncio.run(main())
    assert [c[:3] for c in closes] == [
        ("no hello", CLOSE_GOING_AWAY, REASON),
        ("during the wait", CLOSE_GOING_AWAY, REASON),
    ]
    assert all(took < 0.5 for *_, took in closes)  # at once, not after the grace


def test_a_second_sigterm_cuts_the_commands_wait_short(
    json_server: Callable[..., JsonServer],
) -> None:
    server = json_server(
        "web",
        *("--host", "127.0.0.1", "--port", "0", "--udp-port", "0", "--bots", "0"),
        *("--log-format", "json"),
    )
    process = server.process
    serving = server.wait_event("serving")
    port = int(str(serving["webtransport_address"]).rsplit(":", 1)[1])

    async def silent_browser() -> tuple[list[str | None], ConnectionTerminated, float]:
        async with quic_connect(
            "127.0.0.1", port, configuration=_browser_configuration(), create_protocol=_Browser
        ) as client:
            assert isinstance(client, _Browser)
            _session, deframer = await _join(client, port)
            process.send_signal(signal.SIGTERM)
            first = time.monotonic()
            data = await client.next(WebTransportStreamDataReceived)
            goodbye = [_goodbye_in(f) for f in deframer.feed(data.data)]
            await asyncio.sleep(0.1)
            process.send_signal(signal.SIGTERM)  # the second: no more waiting
            terminated = await client.next(ConnectionTerminated)
            return goodbye, terminated, time.monotonic() - first

    goodbye, terminated, took = asyncio.run(silent_browser())
    status, err = finish(server)
    assert goodbye == [REASON]
    assert (terminated.error_code, terminated.reason_phrase) == (WT_CLOSE, REASON)
    assert took < 0.8  # not the 1 s grace (noisy: a shared machine)
    assert status == 128 + signal.SIGTERM, err
    (summary,) = server.events("summary")
    assert summary["signal"] == 15


# -- the page's JavaScript ----------------------------------------------------------------------

HARNESS = """
import { readFileSync } from "node:fs";
import * as codec from "STATIC/codec.mjs";
import { ArenaClient } from "STATIC/client.mjs";
const job = JSON.parse(readFileSync(0, "utf8"));
const hex = (s) => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
const canvas = { getContext: () => ({}) };
const client = () => new ArenaClient(job.config, canvas, { textContent: "" });
const fields = codec.snapshotFields(job.config.snapshot_format);
const out = {};
out.decoded = job.messages.map((m) => codec.decodeMessage(hex(m), fields));
const told = client();
let acknowledged = 0;
told.link = { send: () => {}, acknowledgeGoodbye: () => { acknowledged += 1; } };
told.receive(hex(job.goodbyeFrame));
told.websocketClosed(1000, "");
out.told = { state: told.status().state, hud: told.hudLines()[1], acknowledged };
const closed = client();
closed.websocketClosed(1001, job.reason);
out.closed = closed.status().state;
const dropped = client();
dropped.websocketClosed(1006, "");
out.dropped = dropped.status().state;
process.stdout.write(JSON.stringify(out));
"""


def _node(job: dict[str, Any]) -> dict[str, Any]:
    assert NODE is not None, "node is missing (.ci/run installs Debian's nodejs)"
    script = HARNESS.replace("STATIC", STATIC.as_posix())
    done = subprocess.run(
        [NODE, "--input-type=module", "-e", script],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _mutations(rng: random.Random, count: int) -> list[bytes]:
    """Goodbyes (valid, then truncated, extended, bit-flipped, random) for the JS decoder."""
    reasons = ["", REASON, "é" * 60, "x" * MAX_GOODBYE_BYTES, "\u2603 ok"]
    valid = [encode_physics(Goodbye(reason=r), SNAPSHOT_FORMAT) for r in reasons]
    out = list(valid)
    for _ in range(count):
        base = bytearray(rng.choice(valid))
        how = rng.randrange(4)
        if how == 0 and base:
            del base[rng.randrange(len(base)) :]
        elif how == 1:
            base += bytes(rng.randrange(256) for _ in range(rng.randint(1, 3)))
        elif how == 2 and base:
            i = rng.randrange(len(base))
            base[i] ^= 1 << rng.randrange(8)
        else:
            base = bytearray(rng.randbytes(rng.randint(0, 130)))
            base[:1] = bytes([(base[0] if base else 0) | 3])  # kind 3 in the low 2 bits
        out.append(bytes(base))
    return out


def test_the_page_decodes_goodbyes_as_python_does_and_shows_the_reason() -> None:
    messages = _mutations(random.Random(7), 300)
    goodbye = encode_physics(Goodbye(reason=REASON), SNAPSHOT_FORMAT)
    frame = encode_frame(LinkMessage(0, goodbye))
    out = _node(
        {
            "config": page_config(),
            "messages": [m.hex() for m in messages],
            "goodbyeFrame": frame.hex(),
            "reason": REASON,
        }
    )
    for data, js in zip(messages, out["decoded"], strict=True):
        try:
            python = decode_message(data, SNAPSHOT_FORMAT)
        except DecodeError:
            python = None
        if isinstance(python, Goodbye):
            assert js == {"kind": "goodbye", "reason": python.reason}, data.hex()
        elif python is None:
            assert js is None, data.hex()
    assert out["told"]["state"] == f"server closed: {REASON}"
    assert out["told"]["hud"].endswith(f"server closed: {REASON} via none")
    assert out["told"]["acknowledged"] == 1
    assert out["closed"] == f"server closed: {REASON}"
    assert out["dropped"] == "closed (1006)"


async def _page_sees_the_goodbye(transport: str) -> tuple[dict[str, Any], float, str]:
    local = ("127.0.0.1", 0)
    stop = asyncio.Event()
    started: list[WebStatus] = []
    task = asyncio.create_task(
        serve_web(
            local,
            local,
            bots=1,
            seed=1,
            duration=None,
            stop=stop,
            on_start=started.append,
            webtransport=local if transport == "webtransport" else None,
            goodbye=REASON,
        )
    )
    async with chromium() as browser:
        while not started:
            await asyncio.sleep(0.01)
        page = await browser.open_page(f"http://localhost:{started[0].http_address[1]}/")
        deadline = time.monotonic() + 15.0
        while not await page.evaluate(
            "window.lagless !== undefined && window.lagless.status().state === 'connected'"
        ):
            assert time.monotonic() < deadline, "the page never connected"
            await asyncio.sleep(0.05)
        stop.set()
        stopped = time.monotonic()
        await asyncio.wait_for(task, 5.0)
        took = time.monotonic() - stopped
        await asyncio.sleep(0.2)  # the page's next frame draws the HUD
        status = await page.evaluate("window.lagless.status()")
        hud = await page.evaluate("document.getElementById('hud').textContent")
    return status, took, hud


@pytest.mark.timeout(60)
@pytest.mark.parametrize("transport", ["websocket", "webtransport"])
def test_chromium_shows_the_servers_reason(transport: str) -> None:
    assert os.path.exists(CHROMIUM), "Debian's chromium is missing (.ci/run installs it)"
    status, took, hud = asyncio.run(_page_sees_the_goodbye(transport))
    assert status["transport"] == transport
    assert (status["state"], status["goodbye"]) == (f"server closed: {REASON}", REASON)
    assert f"server closed: {REASON} via {transport}" in hud
    assert took < 0.8  # the page closed its side at once: no 1 s wait (noisy: shared machine)
