"""A WebTransport driver (HTTP/3 over QUIC, ``aioquic``): the same links as ``io.websocket``.

A browser's WebTransport session is one link, reported to the same ``LinkHandler`` as a WebSocket
link (``lagless.io.websocket``), with the same ``send(data, droppable=...)`` and ``close``. What
WebTransport adds is a real unreliable path: a droppable frame (an unreliable message) goes as a
QUIC DATAGRAM, lost or not, never resent and never queued behind older data; every other frame
goes on one bidirectional stream, in order, as a 2-byte little-endian length and the frame
(``StreamDeframer``). The browser opens that stream with its first frame.

Decisions:
    * TLS: browsers accept a self-signed certificate for WebTransport when the page pins its
      SHA-256 (``serverCertificateHashes``), which needs an ECDSA P-256 certificate valid for at
      most 14 days; the caller makes it (``lagless.web.certificate``) and serves the hash.
    * A session on any other path than ``path`` gets 404; one QUIC connection may carry several
      sessions, each its own link, and the connection's end closes them all.
    * A droppable frame larger than ``MAX_DATAGRAM`` goes on the stream instead: a 64-car
      snapshot (1.2 kB) does not fit a 1200-byte QUIC packet.
    * QUIC paces DATAGRAM frames by its congestion window too, and aioquic queues the ones it
      cannot send yet without bound: on a lossy, slow link (the gprs profile) snapshots then
      arrived seconds late. A droppable frame is dropped (and counted) when ``DROP_BACKLOG``
      datagrams already wait, as over WebSocket: newer snapshots replace stale ones.
    * A stream whose length prefix exceeds ``max_frame`` or whose frame is empty closes the link
      (the deframer never buffers more than ``max_frame + 2`` bytes); datagrams over
      ``max_frame`` are dropped and counted.
    * The stream's send buffer is aioquic's, and aioquic holds every byte the peer has not
      acknowledged without bound (in the demo only the welcome, and snapshots of more than about
      60 cars, travel on it). A browser that stops acknowledging would grow it for ever, so the
      link bounds it by its unacknowledged bytes, as the WebSocket link bounds its queue: a
      droppable frame that has to go on the stream is dropped (and counted) once
      ``STREAM_DROP_BACKLOG`` bytes wait, and a frame that would take the wait past
      ``MAX_STREAM_BACKLOG`` bytes closes the link (1008, ``send queue full``) instead of being
      buffered: the browser acknowledges too little to keep up.
    * Idle timeout 10 s (DESIGN.md "Timeouts"): the browser keeps the connection alive by
      itself; a silent one is closed by QUIC.
    * No exception from the handler stops the driver: it is logged on the ``lagless.io`` logger
      and the link is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import AsyncIterator
from typing import Any, Final

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.asyncio.server import QuicServer, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import (
    DatagramReceived,
    DataReceived,
    H3Event,
    HeadersReceived,
    WebTransportStreamDataReceived,
)
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, ProtocolNegotiated, QuicEvent

from lagless._types import Address
from lagless.io.websocket import CLOSE_POLICY, DROP_BACKLOG, LinkHandler

__all__ = [
    "IDLE_TIMEOUT",
    "MAX_STREAM_BACKLOG",
    "STREAM_DROP_BACKLOG",
    "StreamDeframer",
    "WebTransportLink",
    "WebTransportServer",
    "open_webtransport_server",
]

IDLE_TIMEOUT: Final = 10.0  # s
MAX_DATAGRAM: Final = 1100  # bytes: a frame larger than this goes on the stream
STREAM_DROP_BACKLOG: Final = 64 * 1024  # bytes unacknowledged on the stream: droppable ones drop
MAX_STREAM_BACKLOG: Final = 1024 * 1024  # bytes unacknowledged on the stream: the link closes
_LENGTH: Final = struct.Struct("<H")

_log = logging.getLogger("lagless.io")


def _datagram_backlog(quic: Any) -> int:
    """Return the DATAGRAM frames aioquic holds back for the congestion window (0 if unknown)."""
    pending = getattr(quic, "_datagrams_pending", ())  # aioquic keeps the queue private
    return len(pending)


def _stream_backlog(quic: Any, stream_id: int) -> int:
    """Return the bytes aioquic holds on ``stream_id`` until the peer acknowledges them.

    aioquic keeps its streams and their send buffers private; 0 when they are not found.
    """
    stream = getattr(quic, "_streams", {}).get(stream_id)
    sender = getattr(stream, "sender", None)
    if sender is None:
        return 0
    return int(getattr(sender, "_buffer_stop", 0)) - int(getattr(sender, "_buffer_start", 0))


class StreamDeframer:
    """Splits a byte stream into frames, each a u16 little-endian length and that many bytes.

    Args:
        max_frame: The largest frame accepted, bytes (at most 65535).
    """

    def __init__(self, max_frame: int) -> None:
        """Start with nothing buffered."""
        self.max_frame = max_frame
        self._buffer = bytearray()
        self.broken = False
        """A length of 0 or over ``max_frame`` arrived: the stream is unusable from then on."""

    def feed(self, data: bytes) -> list[bytes]:
        """Take more bytes; return the frames they complete (none once ``broken``)."""
        if self.broken:
            return []
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        while len(buffer) >= 2:
            (size,) = _LENGTH.unpack_from(buffer)
            if not 1 <= size <= self.max_frame:
                self.broken = True
                buffer.clear()
                return frames
            if len(buffer) < 2 + size:
                break
            frames.append(bytes(buffer[2 : 2 + size]))
            del buffer[: 2 + size]
        return frames

    @staticmethod
    def frame(data: bytes) -> bytes:
        """Return ``data`` with its length prefix (1..65535 bytes)."""
        return _LENGTH.pack(len(data)) + data


class WebTransportLink:
    """One browser's WebTransport session: datagrams for droppable frames, a stream for the rest.

    Args:
        link_id: The driver's id of the link (unique, never reused).
        address: The browser's ``(host, port)``.
        protocol: The QUIC connection carrying the session.
        session_id: The session's CONNECT stream.
    """

    def __init__(
        self, link_id: int, address: Address, protocol: _Connection, session_id: int
    ) -> None:
        """Create a link whose stream the browser has not opened yet."""
        self.id = link_id
        self.address = address
        self._protocol = protocol
        self.session_id = session_id
        self.stream_id: int | None = None
        self.deframer = StreamDeframer(protocol.max_frame)
        self._closed = False
        self.bytes_in = 0
        """Payload bytes of the frames received (no length prefixes, QUIC or IP headers)."""
        self.bytes_out = 0
        """Payload bytes of the frames sent."""
        self.frames_in = 0
        """Frames received."""
        self.frames_out = 0
        """Frames sent."""
        self.dropped = 0
        """Frames not sent: datagrams behind a full congestion window, droppable ones behind
        ``STREAM_DROP_BACKLOG`` unacknowledged stream bytes, reliable ones before the browser
        opened its stream, oversized datagrams received."""

    @property
    def closing(self) -> bool:
        """Return whether the link was closed."""
        return self._closed

    def send(self, data: bytes, *, droppable: bool) -> None:
        """Send one frame: a DATAGRAM when droppable and small enough, else on the stream.

        See the module docstring for what is dropped, and when the link closes instead.
        """
        if self._closed:
            return
        h3 = self._protocol.h3
        if h3 is None:
            return
        quic = self._protocol.quic
        if droppable and len(data) <= MAX_DATAGRAM:
            if _datagram_backlog(quic) >= DROP_BACKLOG:
                self.dropped += 1  # the congestion window holds older ones back: drop this
                return
            h3.send_datagram(self.session_id, data)
        elif self.stream_id is not None:
            waiting = _stream_backlog(quic, self.stream_id)
            if droppable and waiting >= STREAM_DROP_BACKLOG:
                self.dropped += 1
                return
            frame = StreamDeframer.frame(data)
            if waiting + len(frame) > MAX_STREAM_BACKLOG:
                self.close(CLOSE_POLICY, "send queue full")
                return
            quic.send_stream_data(self.stream_id, frame)
        else:
            self.dropped += 1
            return
        self.frames_out += 1
        self.bytes_out += len(data)
        self._protocol.transmit()

    def ended(self) -> None:
        """The session or its connection ended: send nothing more."""
        self._closed = True

    def close(self, code: int, reason: str) -> None:
        """End the session (the whole QUIC connection: browsers open one per session)."""
        if self._closed:
            return
        self._closed = True
        self._protocol.quic.close(error_code=0x100 + (code & 0xFF), reason_phrase=reason)
        self._protocol.transmit()


class _Connection(QuicConnectionProtocol):
    """One QUIC connection: its HTTP/3 layer and its WebTransport sessions."""

    def __init__(self, *args: Any, owner: WebTransportServer, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = owner
        self.max_frame = owner.max_frame
        self.h3: H3Connection | None = None
        self.links: dict[int, WebTransportLink] = {}  # session id -> link

    @property
    def quic(self) -> Any:
        return self._quic

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ProtocolNegotiated):
            self.h3 = H3Connection(self._quic, enable_webtransport=True)
        elif isinstance(event, ConnectionTerminated):
            for session_id in list(self.links):
                self._end(session_id)
            return
        if self.h3 is not None:
            for h3_event in self.h3.handle_event(event):
                self._on_h3(h3_event)
        self.transmit()

    def _on_h3(self, event: H3Event) -> None:
        owner = self.owner
        if isinstance(event, HeadersReceived):
            self._on_headers(event)
        elif isinstance(event, DatagramReceived):
            link = self.links.get(event.stream_id)
            if link is None:
                return
            if len(event.data) > self.max_frame:
                link.dropped += 1
                return
            owner.deliver(link, event.data)
        elif isinstance(event, WebTransportStreamDataReceived):
            link = self.links.get(event.session_id)
            if link is None:
                return
            if link.stream_id is None:
                link.stream_id = event.stream_id
            if event.stream_id != link.stream_id:
                return  # frames come on the first stream only
            for frame in link.deframer.feed(event.data):
                owner.deliver(link, frame)
            if link.deframer.broken:
                link.close(1008, "bad stream framing")
        elif isinstance(event, DataReceived) and event.stream_ended:
            self._end(event.stream_id)

    def _on_headers(self, event: HeadersReceived) -> None:
        assert self.h3 is not None
        headers = dict(event.headers)
        owner = self.owner
        is_session = (
            headers.get(b":method") == b"CONNECT"
            and headers.get(b":protocol") == b"webtransport"
            and headers.get(b":path", b"").split(b"?", 1)[0] == owner.path.encode()
        )
        if not is_session:
            self.h3.send_headers(event.stream_id, [(b":status", b"404")], end_stream=True)
            return
        self.h3.send_headers(
            event.stream_id,
            [(b":status", b"200"), (b"sec-webtransport-http3-draft", b"draft02")],
        )
        host, port = self._quic._network_paths[0].addr[:2]  # aioquic keeps the peer private
        link = WebTransportLink(owner.next_id(), (str(host), int(port)), self, event.stream_id)
        self.links[event.stream_id] = link
        owner.opened(link)

    def _end(self, session_id: int) -> None:
        link = self.links.pop(session_id, None)
        if link is not None:
            link.ended()
            self.owner.closed(link)


class WebTransportServer:
    """A running WebTransport server (see ``open_webtransport_server``)."""

    def __init__(self, handler: LinkHandler, *, path: str, max_frame: int, first_id: int) -> None:
        """Create a server that is not listening yet."""
        self._handler = handler
        self.path = path
        self.max_frame = max_frame
        self._next_id = first_id
        self.links: dict[int, WebTransportLink] = {}
        """Open links by id."""
        self.handler_errors = 0
        """Exceptions the handler raised (logged; the link was closed)."""
        self._server: QuicServer | None = None

    @property
    def address(self) -> Address:
        """The bound ``(host, port)`` (UDP)."""
        assert self._server is not None
        transport = self._server._transport  # aioquic keeps its socket's transport private
        assert transport is not None
        host, port = transport.get_extra_info("sockname")[:2]
        return (str(host), int(port))

    def next_id(self) -> int:
        """Return a new link id."""
        self._next_id += 1
        return self._next_id - 1

    async def start(self, address: Address, certificate: Any, private_key: Any) -> None:
        """Listen on UDP ``address`` with ``certificate`` and its ``private_key``."""
        configuration = QuicConfiguration(
            is_client=False,
            alpn_protocols=H3_ALPN,
            max_datagram_frame_size=65536,
            idle_timeout=IDLE_TIMEOUT,
        )
        configuration.certificate = certificate
        configuration.private_key = private_key

        def create(*args: Any, **kwargs: Any) -> _Connection:
            return _Connection(*args, owner=self, **kwargs)

        self._server = await serve(
            address[0], address[1], configuration=configuration, create_protocol=create
        )

    def close(self) -> None:
        """Stop listening and drop every connection."""
        if self._server is not None:
            self._server.close()
            self._server = None

    def _call(self, link: WebTransportLink, what: str, data: bytes = b"") -> None:
        try:
            if what == "opened":
                self._handler.link_opened(link)
            elif what == "frame":
                self._handler.link_frame(link, data)
            else:
                self._handler.link_closed(link)
        except Exception:
            self.handler_errors += 1
            _log.error("webtransport link %d: handler raised on %s", link.id, what, exc_info=True)
            link.close(1011, "server error")

    def opened(self, link: WebTransportLink) -> None:
        """A session was accepted."""
        self.links[link.id] = link
        self._call(link, "opened")

    def deliver(self, link: WebTransportLink, frame: bytes) -> None:
        """A frame arrived on a link."""
        link.frames_in += 1
        link.bytes_in += len(frame)
        self._call(link, "frame", frame)

    def closed(self, link: WebTransportLink) -> None:
        """A session ended."""
        if self.links.pop(link.id, None) is not None:
            self._call(link, "closed")


@contextlib.asynccontextmanager
async def open_webtransport_server(
    address: Address,
    handler: LinkHandler,
    *,
    certificate: Any,
    private_key: Any,
    path: str = "/wt",
    max_frame: int = 65535,
    first_id: int = 1 << 40,
) -> AsyncIterator[WebTransportServer]:
    """Serve WebTransport sessions on ``path`` at UDP ``address`` while inside.

    Args:
        address: Numeric ``(host, port)``; port 0 picks a free one.
        handler: Gets every link's open, frames and close (``WebTransportLink`` objects).
        certificate: The TLS certificate (``cryptography`` ``x509.Certificate``).
        private_key: Its private key.
        path: The path of the WebTransport endpoint.
        max_frame: The largest frame a browser may send, bytes (at most 65535).
        first_id: The first link id (keep WebSocket and WebTransport ids apart).

    Raises:
        OSError: The address cannot be bound.
    """
    server = WebTransportServer(handler, path=path, max_frame=max_frame, first_id=first_id)
    await server.start(address, certificate, private_key)
    try:
        yield server
    finally:
        server.close()
        await asyncio.sleep(0)
