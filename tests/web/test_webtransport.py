"""WebTransport: the stream deframer (fuzzed), the certificate, the offer, a session end to end."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import json
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

from aioquic.asyncio.client import connect as quic_connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, FrameType, H3Connection
from aioquic.h3.events import DatagramReceived, HeadersReceived, WebTransportStreamDataReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, QuicEvent
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st

from lagless.demo.arena import PROTOCOL_ID, SNAPSHOT_FORMAT
from lagless.io.webtransport import (
    MAX_STREAM_BACKLOG,
    STREAM_DROP_BACKLOG,
    StreamDeframer,
    WebTransportLink,
    open_webtransport_server,
)
from lagless.physics.codec import Snapshot, Welcome, decode_message
from lagless.web import LINK_VERSION, Hello, LinkMessage, decode_frame, encode_frame
from lagless.web.certificate import VALIDITY, make_certificate
from lagless.web.serve import WT_PATH, open_web_match

NOW = 1_790_000_000.0  # Unix s


@given(st.lists(st.binary(min_size=1, max_size=300), max_size=20), st.data())
def test_deframer_returns_the_frames_however_the_bytes_are_cut(
    frames: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(StreamDeframer.frame(f) for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    deframer = StreamDeframer(max_frame=300)
    out: list[bytes] = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        out.extend(deframer.feed(stream[a:b]))
    assert out == frames
    assert not deframer.broken


@given(st.binary(max_size=2000))
def test_deframer_never_raises_and_stays_bounded(data: bytes) -> None:
    deframer = StreamDeframer(max_frame=64)
    frames = deframer.feed(data)
    assert all(1 <= len(f) <= 64 for f in frames)
    assert sum(len(f) + 2 for f in frames) <= len(data)


def test_deframer_breaks_on_a_bad_length() -> None:
    deframer = StreamDeframer(max_frame=10)
    assert deframer.feed(b"\x02\x00ab\x0b\x00") == [b"ab"]
    assert deframer.broken
    assert deframer.feed(b"\x01\x00x") == []
    zero = StreamDeframer(max_frame=10)
    assert zero.feed(b"\x00\x00") == []
    assert zero.broken


def test_certificate_fits_the_pinning_rules() -> None:
    pinned = make_certificate(NOW, hosts=["127.0.0.1", "arena.example"])
    cert = pinned.certificate
    assert isinstance(pinned.private_key, ec.EllipticCurvePrivateKey)
    assert pinned.private_key.curve.name == "secp256r1"
    start = datetime.datetime.fromtimestamp(NOW, datetime.UTC)
    assert cert.not_valid_before_utc <= start <= cert.not_valid_after_utc
    assert cert.not_valid_after_utc - cert.not_valid_before_utc <= datetime.timedelta(days=14)
    assert cert.not_valid_after_utc - start == VALIDITY
    der = cert.public_bytes(serialization.Encoding.DER)
    assert pinned.sha256 == hashlib.sha256(der).digest()
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost", "arena.example"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert make_certificate(NOW).sha256 != pinned.sha256  # a new key every time


def test_the_page_is_offered_webtransport() -> None:
    async def main() -> None:
        local = ("127.0.0.1", 0)
        async with open_web_match(local, local, bots=0, seed=1, webtransport=local) as servers:
            assert servers.webtransport is not None
            url = f"http://127.0.0.1:{servers.web.address[1]}/config.json"
            body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
            offer = json.loads(body)["webtransport"]
            assert offer["port"] == servers.webtransport[1] != 0
            assert offer["path"] == WT_PATH
            assert len(offer["cert_sha256"]) == 32
            assert all(0 <= b <= 255 for b in offer["cert_sha256"])

    asyncio.run(main())


class _Browser(QuicConnectionProtocol):
    """A WebTransport client made of aioquic's pieces, the way a browser talks to the driver."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic, enable_webtransport=True)
        self.events: asyncio.Queue[object] = asyncio.Queue()

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ConnectionTerminated):
            self.events.put_nowait(event)
        for h3_event in self.h3.handle_event(event):
            self.events.put_nowait(h3_event)

    def open_session(self, port: int, path: str) -> int:
        session = self._quic.get_next_available_stream_id()
        headers = [
            (b":method", b"CONNECT"),
            (b":scheme", b"https"),
            (b":authority", f"127.0.0.1:{port}".encode()),
            (b":path", path.encode()),
            (b":protocol", b"webtransport"),
            (b"sec-webtransport-http3-draft02", b"1"),
        ]
        self.h3.send_headers(session, headers)
        self.transmit()
        return session

    async def next(self, kind: type[Any]) -> Any:
        while True:
            event = await asyncio.wait_for(self.events.get(), 5.0)
            if isinstance(event, kind):
                return event


@contextlib.asynccontextmanager
async def _browser(port: int) -> AsyncIterator[_Browser]:
    """A `_Browser` connected to the WebTransport server on loopback ``port``."""
    configuration = QuicConfiguration(
        is_client=True,
        alpn_protocols=H3_ALPN,
        max_datagram_frame_size=65536,
        verify_mode=ssl.CERT_NONE,
    )
    async with quic_connect(
        "127.0.0.1", port, configuration=configuration, create_protocol=_Browser
    ) as client:
        assert isinstance(client, _Browser)
        yield client


def test_a_session_plays_over_stream_and_datagrams_and_bad_framing_ends_it() -> None:
    async def main() -> None:
        local = ("127.0.0.1", 0)
        async with open_web_match(local, local, bots=1, seed=1, webtransport=local) as servers:
            assert servers.webtransport is not None
            port = servers.webtransport[1]
            async with _browser(port) as client:
                wrong = client.open_session(port, "/elsewhere")
                reply = await client.next(HeadersReceived)
                assert (reply.stream_id, dict(reply.headers)[b":status"]) == (wrong, b"404")
                session = client.open_session(port, WT_PATH)
                reply = await client.next(HeadersReceived)
                assert dict(reply.headers)[b":status"] == b"200"
                stream = client.h3.create_webtransport_stream(session)
                # aioquic's client does not mark its own bidirectional WebTransport stream for
                # receiving (a browser does); mark it so the server's replies come out as
                # WebTransportStreamDataReceived rather than as a bad request stream
                with client.h3._get_or_create_stream(stream) as mine:
                    mine.frame_type, mine.session_id = FrameType.WEBTRANSPORT_STREAM, session
                hello = encode_frame(Hello(PROTOCOL_ID, LINK_VERSION))
                client._quic.send_stream_data(stream, StreamDeframer.frame(hello))
                client.transmit()
                welcome = await client.next(WebTransportStreamDataReceived)
                (frame,) = StreamDeframer(4098).feed(welcome.data)
                decoded = decode_frame(frame)
                assert isinstance(decoded, LinkMessage)
                assert isinstance(decode_message(decoded.payload, SNAPSHOT_FORMAT), Welcome)
                snapshot = await client.next(DatagramReceived)
                decoded = decode_frame(snapshot.data)
                assert isinstance(decoded, LinkMessage)
                assert isinstance(decode_message(decoded.payload, SNAPSHOT_FORMAT), Snapshot)
                assert len(servers.match.bot.server.cars) == 1

                client._quic.send_stream_data(stream, b"\xff\xff" + bytes(10))  # 65535 > 4098
                client.transmit()
                await client.next(ConnectionTerminated)
            for _ in range(100):
                if not servers.match.bot.server.cars:
                    break
                await asyncio.sleep(0.02)
            assert servers.match.bot.server.cars == {}
            assert servers.match.links == {}

    asyncio.run(main())


class _Links:
    """A LinkHandler that keeps what the driver reports."""

    def __init__(self) -> None:
        self.framed: list[WebTransportLink] = []
        self.closed: list[WebTransportLink] = []

    def link_opened(self, link: Any) -> None:
        pass

    def link_frame(self, link: Any, data: bytes) -> None:
        if link not in self.framed:
            self.framed.append(link)

    def link_closed(self, link: Any) -> None:
        self.closed.append(link)


def test_a_browser_that_stops_acknowledging_loses_droppable_frames_then_its_link() -> None:
    """The stream's unacknowledged bytes are bounded: drop droppable frames, then close."""

    async def main() -> None:
        pinned = make_certificate(time.time())
        links = _Links()
        async with open_webtransport_server(
            ("127.0.0.1", 0),
            links,
            certificate=pinned.certificate,
            private_key=pinned.private_key,
            path=WT_PATH,
        ) as server:
            port = server.address[1]
            async with _browser(port) as client:
                session = client.open_session(port, WT_PATH)
                await client.next(HeadersReceived)
                stream = client.h3.create_webtransport_stream(session)
                client._quic.send_stream_data(stream, StreamDeframer.frame(b"hello"))
                client.transmit()
                for _ in range(250):
                    if links.framed:
                        break
                    await asyncio.sleep(0.02)
                (link,) = links.framed
                # the browser goes silent: nothing it receives is acknowledged any more
                client.datagram_received = lambda data, addr: None  # type: ignore[method-assign]
                big = bytes(2000)  # over MAX_DATAGRAM: droppable or not, it goes on the stream
                sent = 0
                while not link.closing and sent < 2 * MAX_STREAM_BACKLOG // len(big):
                    link.send(big, droppable=False)
                    sent += 1
                    if sent == STREAM_DROP_BACKLOG // len(big) + 8:
                        before = link.dropped
                        link.send(big, droppable=True)
                        assert link.dropped == before + 1  # behind 64 KiB: dropped, not queued
                    await asyncio.sleep(0)
                assert link.closing
                assert sent * (len(big) + 2) <= MAX_STREAM_BACKLOG + 2 * (len(big) + 2)
                assert link.frames_out == sent - 1  # the frame that would overflow closed it
                link.send(big, droppable=False)  # a closed link takes nothing more
                assert link.frames_out == sent - 1

    asyncio.run(main())
