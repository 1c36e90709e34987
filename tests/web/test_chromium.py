"""The browser client in real headless Chromium (Debian's ``/usr/bin/chromium``, DevTools protocol).

One match (the demo's arena with 4 bots) on ``open_web_match``; Chromium opens its page at
``http://localhost:PORT/``, over WebSocket (the server offers nothing else) and over
WebTransport (offered with a pinned certificate; the page names 127.0.0.1 for "localhost"),
and over WebTransport through the umts profile (``lagless.io.Proxy``: 170 ms each way, jitter
that reorders, 1 % loss).
Checked: the page connects on the expected link and receives snapshots, a held arrow key
reaches the server as input events and the server's car moves, the page's own car follows the
server's, the HUD shows RTT, kB/s and the display model, switching the model works, and a
screenshot shows every car in the demo's colours.
"""

from __future__ import annotations

import asyncio
import io
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lagless.physics import Keys
from lagless.web import LINK_CONNECTION_BASE
from lagless.web.serve import COLOURS, open_web_match
from tests.web.cdp import CHROMIUM, Page, chromium

BOTS = 4
RTT_MS = {"none": (0.0, 500.0), "umts": (300.0, 1000.0)}  # the HUD's RTT per link profile
TRACK = 2.0  # m: how far the page's own car may be from the server's
SPAWN_X = 20.0  # m: car 0 starts at (20, 10) heading +x (lagless.demo.arena.spawn)
SHOT_DIR = os.environ.get("LAGLESS_WEB_SHOTS")  # keep the screenshots there when set
PIXELS_PER_CAR = 30  # a car is 12 x 6.4 px (77 px²); its exact-colour interior is more


async def _until(page: Page, expression: str, timeout: float) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not true within {timeout} s: {expression}")
        await asyncio.sleep(0.1)


def _colour_pixels(png: bytes, rgb: tuple[int, int, int]) -> int:
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    import pygame

    image = pygame.image.load(io.BytesIO(png), "shot.png")
    pixels = pygame.surfarray.array3d(image)
    return int(np.all(pixels == np.array(rgb, dtype=pixels.dtype), axis=-1).sum())


async def _scenario(transport: str, profile: str) -> None:
    offer = ("127.0.0.1", 0) if transport == "webtransport" else None
    local = ("127.0.0.1", 0)
    async with (
        open_web_match(
            local, local, bots=BOTS, seed=3, webtransport=offer, profile=profile
        ) as servers,
        chromium() as browser,
    ):
        match = servers.match
        page = await browser.open_page(f"http://localhost:{servers.web.address[1]}/")
        status = await _until(
            page,
            "window.lagless && window.lagless.status().snapshots >= 10 && window.lagless.status()",
            15.0,
        )
        assert status["state"] == "connected"
        assert status["transport"] == transport
        kinds = {type(link).__name__ for link in match.links.values()}
        assert kinds == {"WebTransportLink" if transport == "webtransport" else "WebSocketLink"}
        server = match.bot.server
        (car_id,) = [k for c, k in server.cars.items() if c >= LINK_CONNECTION_BASE]
        assert status["carId"] == car_id == 0
        assert status["carsShown"] == BOTS + 1
        low, high = RTT_MS[profile]
        assert low < status["rttMs"] < high
        start = server.world.state(car_id)
        assert start.x == pytest.approx(SPAWN_X, abs=0.5)

        await page.key("keyDown", "ArrowUp")
        await asyncio.sleep(1.2)
        await page.key("keyUp", "ArrowUp")
        moved = server.world.state(car_id)
        assert moved.x - start.x > 3.0, moved  # the server drove the car forward (8 m typical)
        for _ in range(40):  # the release is on its way (the page sends it as the key goes up)
            if server.inputs_applied >= 2:
                break
            await asyncio.sleep(0.05)
        assert server.inputs_applied == 2  # UP pressed, then released
        assert server.world.state(car_id).keys == Keys.NONE
        assert match.hub.link_messages_received >= 2
        await asyncio.sleep(0.3)  # the car rolls on along y = 10 m, slowing down
        before = server.world.state(car_id)
        shown = await page.evaluate(
            "(() => { const c = window.lagless.cars(performance.now() / 1000)"
            ".get(window.lagless.carId); return [c.x, c.y]; })()"
        )
        after = server.world.state(car_id)
        # the view (dead reckoning ahead of the newest snapshot) shows the car where the server
        # has it while the page answered, within TRACK m (a loaded server ticks late)
        assert before.x - TRACK <= shown[0] <= after.x + TRACK, (before, shown, after)
        assert abs(shown[1] - after.y) < TRACK, (shown, after)

        status = await page.evaluate("window.lagless.status()")
        assert status["inputsSent"] >= 2
        assert 0.0 <= status["loss"] < 0.2  # loopback: at most a datagram or two
        assert status["kbpsIn"] > 0.5  # 20 snapshots a second of 5 cars
        hud = await page.evaluate("document.getElementById('hud').textContent")
        assert "RTT" in hud
        assert "loss" in hud
        assert "kB/s" in hud
        assert "model dr+0.15rtt" in hud

        png = await page.screenshot()
        if SHOT_DIR:
            (Path(SHOT_DIR) / f"web-{transport}-{profile}.png").write_bytes(png)
        assert _colour_pixels(png, COLOURS["player"]) >= PIXELS_PER_CAR
        assert _colour_pixels(png, COLOURS["car"]) >= BOTS * PIXELS_PER_CAR

        await page.evaluate("window.lagless.setModel('delay100')")
        hud = await _until(
            page,
            "document.getElementById('hud').textContent.includes('model delay100') && "
            "document.getElementById('hud').textContent",
            5.0,
        )
        assert "cars 5" in hud


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("transport", "profile"),
    [("websocket", "none"), ("webtransport", "none"), ("webtransport", "umts")],
    ids=["websocket", "webtransport", "webtransport-umts"],
)
def test_browser_joins_drives_and_draws_the_match(transport: str, profile: str) -> None:
    assert os.path.exists(CHROMIUM), "Debian's chromium is missing (.ci/run installs it)"
    started = time.monotonic()
    asyncio.run(_scenario(transport, profile))
    assert time.monotonic() - started < 20.0  # about 4 s on a quiet machine
