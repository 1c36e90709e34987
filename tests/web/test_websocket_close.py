"""A WebSocket peer that never answers the close frame cannot hold a server's shutdown."""

from __future__ import annotations

import asyncio
import base64
import os
import time

from lagless.io.websocket import CLOSE_TIMEOUT, Link, open_websocket_server


class _Silent:
    """A link handler that only records the links it saw."""

    def __init__(self) -> None:
        self.opened: list[int] = []

    def link_opened(self, link: Link) -> None:
        self.opened.append(link.id)

    def link_frame(self, link: Link, data: bytes) -> None:
        del link, data

    def link_closed(self, link: Link) -> None:
        del link


async def _hung_client(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Complete the opening handshake, then never read or answer anything again."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            "GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    status = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 5.0)
    assert status.startswith(b"HTTP/1.1 101")
    return reader, writer


def test_a_peer_that_never_answers_the_close_is_cut_after_the_close_timeout() -> None:
    async def main() -> float:
        handler = _Silent()
        async with open_websocket_server(("127.0.0.1", 0), handler) as server:
            _, writer = await _hung_client(server.address[1])
            for _ in range(200):
                if handler.opened:
                    break
                await asyncio.sleep(0.01)
            assert handler.opened == [1]
            start = time.monotonic()
        elapsed = time.monotonic() - start
        writer.close()
        return elapsed

    elapsed = asyncio.run(main())
    assert elapsed < CLOSE_TIMEOUT + 1.5, f"shutdown took {elapsed:.2f} s"
