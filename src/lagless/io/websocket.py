"""A WebSocket driver: binary frames to and from browsers, and the static files of a web page.

The WebSocket counterpart of ``lagless.io.udp`` (DESIGN.md "Layers": ``io`` owns sockets, asyncio
and clocks). ``open_websocket_server`` serves one TCP port with the ``websockets`` library (the
``web`` extra): a WebSocket upgrade on ``ws_path`` becomes a ``WebSocketLink`` whose binary frames
go to a ``LinkHandler``; any other GET is answered from an in-memory table of static files. The
driver knows nothing of what the frames mean (``lagless.web.frames`` does; this layer sits below
``transport``).

Decisions:
    * Writes are queued per link and written by one task per link, in order. A frame marked
      ``droppable`` (an unreliable message) is dropped and counted when ``DROP_BACKLOG`` frames
      already wait: a browser behind a slow TCP connection then loses stale snapshots, as over
      UDP, instead of falling further behind. A link with ``MAX_BACKLOG`` frames waiting is
      closed (1008, ``send queue full``): it acknowledges too little to keep up.
    * Incoming frames are limited to ``max_frame`` bytes by the library (a larger one closes the
      link with 1009), so a peer cannot make the driver allocate without bound; a text frame
      closes the link (1003, ``binary frames only``).
    * Keep-alive: the library pings every ``KEEPALIVE`` s and closes a link whose pong is more
      than ``KEEPALIVE`` s late, so a dead browser is noticed within 5-10 s (DESIGN.md
      "Timeouts"). Per-message compression is off: the frames are bit-packed already.
    * A peer gets ``CLOSE_TIMEOUT`` (1 s) to answer our close frame, then its TCP connection is
      cut: a hung client cannot hold a server's shutdown for the library's default 10 s
      (``tests/web/test_websocket_close.py``).
    * Static files are a table given up front (path -> type and bytes): nothing is read from
      disk per request, so no path can escape it. ``/`` serves ``/index.html``; the query string
      is ignored; responses say ``Cache-Control: no-store`` (a page always matches its server).
    * No exception from the handler stops the driver: it is logged on the ``lagless.io`` logger
      and the link is closed (1011). A connection closed before its first request line (a
      browser's speculative preconnect) is logged at DEBUG, not as an error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from lagless._types import Address

__all__ = [
    "DROP_BACKLOG",
    "KEEPALIVE",
    "MAX_BACKLOG",
    "Link",
    "LinkHandler",
    "StaticFile",
    "WebSocketLink",
    "WebSocketServer",
    "open_websocket_server",
]

DROP_BACKLOG: Final = 4  # frames waiting before a droppable frame is dropped
MAX_BACKLOG: Final = 1024  # frames waiting before the link is closed
KEEPALIVE: Final = 5.0  # s between the library's pings, and the most a pong may be late
CLOSE_TIMEOUT: Final = 1.0  # s a peer has to answer our close frame before TCP is cut
CLOSE_POLICY: Final = 1008  # WebSocket close code: policy violation
CLOSE_ERROR: Final = 1011  # WebSocket close code: internal error
CLOSE_UNSUPPORTED: Final = 1003  # WebSocket close code: unsupported data

_log = logging.getLogger("lagless.io")


class _QuietPreconnects(logging.LoggerAdapter):  # type: ignore[type-arg]
    """The library's logger, with a handshake that never started (a browser's speculative
    preconnect, closed unused) logged at DEBUG instead of ERROR with a traceback."""

    def log(self, level: int, msg: object, *args: object, **kwargs: object) -> None:
        if msg == "opening handshake failed":
            level = logging.DEBUG
            kwargs["exc_info"] = False
        super().log(level, msg, *args, **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class StaticFile:
    """One file the server answers a GET with."""

    content_type: str
    """The ``Content-Type`` header, e.g. ``text/javascript; charset=utf-8``."""
    body: bytes
    """The file's bytes."""


class Link(Protocol):
    """One browser's link, whatever carries it (``WebSocketLink``, ``WebTransportLink``)."""

    id: int
    """The driver's id of the link (unique across drivers, never reused)."""
    address: Address
    """The browser's ``(host, port)``."""
    bytes_in: int
    """Payload bytes of the frames received."""
    bytes_out: int
    """Payload bytes of the frames sent."""
    dropped: int
    """Frames dropped by the driver."""

    @property
    def closing(self) -> bool:
        """Return whether ``close`` was called."""

    def send(self, data: bytes, *, droppable: bool) -> None:
        """Queue one frame; a ``droppable`` one may be lost (an unreliable message)."""

    def close(self, code: int, reason: str) -> None:
        """Close the link with a WebSocket-style ``code`` and ``reason``."""


class LinkHandler(Protocol):
    """What a driver reports to (called on the event loop's thread, never concurrently)."""

    def link_opened(self, link: Link) -> None:
        """A link opened (a WebSocket handshake on ``ws_path``, a WebTransport session)."""

    def link_frame(self, link: Link, data: bytes) -> None:
        """A binary frame arrived."""

    def link_closed(self, link: Link) -> None:
        """The link closed, for whatever reason (called once, after ``link_opened``)."""


class WebSocketLink:
    """One browser's WebSocket connection: queued writes, counters, close.

    Args:
        link_id: The driver's id of the link (unique, never reused).
        address: The browser's ``(host, port)``.
        connection: The library's connection.
    """

    def __init__(self, link_id: int, address: Address, connection: ServerConnection) -> None:
        """Create a link with nothing queued."""
        self.id = link_id
        self.address = address
        self._connection = connection
        self._queue: deque[bytes] = deque()
        self._ready = asyncio.Event()
        self._close: tuple[int, str] | None = None
        self.bytes_in = 0
        """Payload bytes of the frames received (no WebSocket or TCP/IP headers)."""
        self.bytes_out = 0
        """Payload bytes of the frames written."""
        self.frames_in = 0
        """Frames received."""
        self.frames_out = 0
        """Frames written."""
        self.dropped = 0
        """Droppable frames dropped because the link was behind."""

    def send(self, data: bytes, *, droppable: bool) -> None:
        """Queue one binary frame (see the module docstring for the backlog policy)."""
        if self._close is not None:
            return
        waiting = len(self._queue)
        if droppable and waiting >= DROP_BACKLOG:
            self.dropped += 1
            return
        if waiting >= MAX_BACKLOG:
            self.close(CLOSE_POLICY, "send queue full")
            return
        self._queue.append(data)
        self._ready.set()

    @property
    def closing(self) -> bool:
        """Return whether ``close`` was called."""
        return self._close is not None

    def close(self, code: int, reason: str) -> None:
        """Close the link with ``code`` and ``reason`` once the frames queued so far are written."""
        if self._close is None:
            self._close = (code, reason)
            self._ready.set()

    async def write_loop(self) -> None:
        """Write queued frames in order until the link closes (the driver runs it as a task)."""
        queue = self._queue
        connection = self._connection
        with contextlib.suppress(ConnectionClosed):
            while True:
                await self._ready.wait()
                self._ready.clear()
                while queue:
                    data = queue.popleft()
                    await connection.send(data)
                    self.frames_out += 1
                    self.bytes_out += len(data)
                if self._close is not None:
                    await connection.close(*self._close)
                    return


class WebSocketServer:
    """A running WebSocket and static-file server (see ``open_websocket_server``)."""

    def __init__(
        self,
        handler: LinkHandler,
        *,
        ws_path: str,
        static: Mapping[str, StaticFile],
        max_frame: int,
    ) -> None:
        """Create a server that is not listening yet (link ids count from 1)."""
        self._handler = handler
        self._ws_path = ws_path
        self._static = dict(static)
        self._max_frame = max_frame
        self._next_id = 1
        self.links: dict[int, WebSocketLink] = {}
        """Open links by id."""
        self.handler_errors = 0
        """Exceptions the handler raised (logged; the link was closed)."""
        self.requests = 0
        """Static-file requests answered (200 or 404)."""
        self._server: Server | None = None

    @property
    def address(self) -> Address:
        """The bound ``(host, port)`` (port 0 resolved)."""
        assert self._server is not None
        host, port = next(iter(self._server.sockets)).getsockname()[:2]
        return (str(host), int(port))

    async def start(self, address: Address) -> None:
        """Listen on ``address``."""
        self._server = await serve(
            self._serve,
            address[0],
            address[1],
            process_request=self._process_request,
            compression=None,
            max_size=self._max_frame,
            ping_interval=KEEPALIVE,
            ping_timeout=KEEPALIVE,
            close_timeout=CLOSE_TIMEOUT,
            logger=_QuietPreconnects(logging.getLogger("websockets.server")),
        )

    async def close(self) -> None:
        """Stop listening and close every link (1001, going away)."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    def _process_request(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == self._ws_path:
            return None
        self.requests += 1
        found = self._static.get("/index.html" if path == "/" else path)
        if found is None:
            return connection.respond(404, "not found\n")
        headers = Headers(
            [
                ("Content-Type", found.content_type),
                ("Content-Length", str(len(found.body))),
                ("Cache-Control", "no-store"),
            ]
        )
        return Response(200, "OK", headers, found.body)

    def _call(self, link: WebSocketLink, what: str, data: bytes = b"") -> bool:
        try:
            if what == "opened":
                self._handler.link_opened(link)
            elif what == "frame":
                self._handler.link_frame(link, data)
            else:
                self._handler.link_closed(link)
        except Exception:
            self.handler_errors += 1
            _log.error("websocket link %d: handler raised on %s", link.id, what, exc_info=True)
            link.close(CLOSE_ERROR, "server error")
            return False
        return True

    async def _serve(self, connection: ServerConnection) -> None:
        remote = connection.remote_address
        link = WebSocketLink(self._next_id, (str(remote[0]), int(remote[1])), connection)
        self._next_id += 1
        self.links[link.id] = link
        writer = asyncio.create_task(link.write_loop())
        try:
            if not self._call(link, "opened"):
                return
            async for message in connection:
                if isinstance(message, str):
                    link.close(CLOSE_UNSUPPORTED, "binary frames only")
                    break
                link.frames_in += 1
                link.bytes_in += len(message)
                if not self._call(link, "frame", message):
                    break
        except ConnectionClosed:
            pass
        finally:
            del self.links[link.id]
            self._call(link, "closed")
            if link.closing and not writer.done():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(writer, KEEPALIVE)
            writer.cancel()


@contextlib.asynccontextmanager
async def open_websocket_server(
    address: Address,
    handler: LinkHandler,
    *,
    ws_path: str = "/ws",
    static: Mapping[str, StaticFile] | None = None,
    max_frame: int = 65536,
) -> AsyncIterator[WebSocketServer]:
    """Serve WebSocket links on ``ws_path`` and ``static`` files on ``address`` while inside.

    Args:
        address: Numeric ``(host, port)``; port 0 picks a free one.
        handler: Gets every link's open, frames and close.
        ws_path: The path of the WebSocket endpoint.
        static: Path (``/index.html``) -> file; other paths get 404.
        max_frame: The largest frame a browser may send, bytes.

    Raises:
        OSError: The address cannot be bound.
    """
    server = WebSocketServer(handler, ws_path=ws_path, static=static or {}, max_frame=max_frame)
    await server.start(address)
    try:
        yield server
    finally:
        await server.close()
