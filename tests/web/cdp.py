"""A small DevTools-protocol driver for Debian's headless Chromium (no playwright, no download).

Chromium starts with the flags the task prescribes, a fresh ``--user-data-dir`` and
``--remote-debugging-port=0``; the port it picked is read from ``DevToolsActivePort`` in that
directory, and the browser's WebSocket endpoint is driven with ``websockets`` (already a
dependency): create a page target, attach to it (flattened sessions), then ``Runtime.evaluate``,
``Input.dispatchKeyEvent`` and ``Page.captureScreenshot``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-port=0",
    "--window-size=1000,760",
    "--force-device-scale-factor=1",
)
KEY_CODES = {"ArrowUp": 38, "ArrowDown": 40, "ArrowLeft": 37, "ArrowRight": 39}


class CdpError(RuntimeError):
    """A DevTools command failed."""


class Browser:
    """One DevTools connection to a running Chromium."""

    def __init__(self, ws: ClientConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for raw in self._ws:
            message = json.loads(raw)
            future = self._waiting.pop(message.get("id", -1), None)
            if future is not None and not future.done():
                future.set_result(message)

    async def send(
        self, method: str, params: dict[str, Any] | None = None, session: str | None = None
    ) -> dict[str, Any]:
        """Send one command and return its result."""
        command_id = next(self._ids)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[command_id] = future
        command: dict[str, Any] = {"id": command_id, "method": method, "params": params or {}}
        if session is not None:
            command["sessionId"] = session
        await self._ws.send(json.dumps(command))
        reply = await asyncio.wait_for(future, 20.0)
        if "error" in reply:
            raise CdpError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    async def open_page(self, url: str) -> Page:
        """Open ``url`` in a new page and attach to it."""
        target = await self.send("Target.createTarget", {"url": url})
        attached = await self.send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
        )
        return Page(self, attached["sessionId"])

    async def close(self) -> None:
        """Stop reading."""
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


class Page:
    """One attached page."""

    def __init__(self, browser: Browser, session: str) -> None:
        self._browser = browser
        self._session = session

    async def evaluate(self, expression: str) -> Any:
        """Evaluate ``expression`` in the page; return its value (JSON)."""
        result = await self._browser.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            self._session,
        )
        if "exceptionDetails" in result:
            raise CdpError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def key(self, kind: str, key: str) -> None:
        """Press (``keyDown``) or release (``keyUp``) ``key`` (an arrow)."""
        code = KEY_CODES[key]
        params = {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code}
        await self._browser.send("Input.dispatchKeyEvent", params, self._session)

    async def screenshot(self) -> bytes:
        """Return a PNG of the page's viewport."""
        shot = await self._browser.send("Page.captureScreenshot", {"format": "png"}, self._session)
        return base64.b64decode(shot["data"])


@contextlib.asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    """Start headless Chromium with a fresh profile; yield a DevTools connection; stop it."""
    profile = Path(tempfile.mkdtemp(prefix="lagless-chromium-"))
    process = await asyncio.create_subprocess_exec(
        CHROMIUM,
        *FLAGS,
        f"--user-data-dir={profile}",
        "about:blank",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        env={**os.environ, "HOME": str(profile)},
    )
    try:
        port_file = profile / "DevToolsActivePort"
        for _ in range(300):
            if port_file.exists() and len(port_file.read_text().splitlines()) >= 2:
                break
            if process.returncode is not None:
                raise CdpError(f"chromium exited with {process.returncode}")
            await asyncio.sleep(0.05)
        else:
            raise CdpError("chromium did not open its DevTools port within 15 s")
        port, path = port_file.read_text().splitlines()[:2]
        async with connect(f"ws://127.0.0.1:{port}{path}", max_size=None) as ws:
            browser = Browser(ws)
            try:
                yield browser
            finally:
                await browser.close()
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 5.0)
            except TimeoutError:
                process.kill()
                await process.wait()
        shutil.rmtree(profile, ignore_errors=True)
