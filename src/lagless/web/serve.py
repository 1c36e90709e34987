"""The demo's arena served to browsers: WebSocket links and the page on one TCP port, UDP beside.

``open_web_match`` builds the demo's ``BotServer`` (``lagless.demo.arena``) on a ``HybridServer``
transport, drives it with a UDP ``AsyncEndpoint`` (so ``lagless demo --connect`` players join the
same match) and serves the browser page and its WebSocket links with
``lagless.io.websocket``. ``WebMatch`` is the glue: the sans-I/O object the UDP endpoint pumps
(it wraps the ``BotServer``) and the ``LinkHandler`` of the WebSocket server. After every pump it
hands the ``HybridServer``'s frames to the links and closes the links it names, so frames made
by a timer (the 20-Hz snapshots) leave in the same pump as the UDP datagrams.

Decisions:
    * One clock: link events are stamped with the UDP endpoint's clock (``endpoint.now()``), the
      clock the physics server ticks and stamps its snapshots with, so a PONG's server time and
      a snapshot's time are on the same axis.
    * The page's settings (protocol id, channels, arena size, snapshot ranges, display models,
      colours) are served as ``/config.json`` built from the Python constants, so the browser
      cannot drift from the server.
    * The per-browser rate is the WebSocket payload bytes written per second (no WebSocket,
      TCP or IP headers) over all links, divided by the browsers connected.
    * This module uses asyncio (``lagless.web`` is in the layer test's ``IO_ALLOWED``, like
      ``lagless.demo``, whose ``serve_match`` it mirrors); the protocol logic it drives
      (``HybridServer``, ``lagless.web.frames``) is sans-I/O.
    * Graceful shutdown (issue 16 part 3, docs/operations.md), as ``lagless demo --server``
      does it, extended to the links: every connected client, UDP or browser, gets the physics
      ``Goodbye`` with the reason (``server shutting down``) on the reliable channel (a link:
      one reliable MESSAGE frame). A WebSocket link is then closed with 1001 (going away) and
      the reason as soon as that frame is written (TCP keeps the order), and so is every link
      that never said HELLO (a WebTransport one with the QUIC application error
      ``0x100 + (1001 & 0xFF)`` = 0x1E9 and the reason, the driver's mapping). The wait that
      follows ends when every UDP client acknowledged its goodbye (its reliable deliveries
      grew) or left, every WebSocket link finished its close handshake and every WebTransport
      browser ended its session (the page does so on the goodbye: its acknowledgement), after
      ``shutdown_grace`` s (1 s), or when ``cut`` is set (a second signal); then the UDP
      clients get the netcode disconnect packets and the remaining links the same close as
      above. Behind ``--profile`` the proxy stays up for twice the down link's latency plus its
      reordering delay and 50 ms (at most ``shutdown_grace``) so the closes cross it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from importlib import resources
from importlib.util import find_spec
from typing import Any, Final

from lagless._types import Address
from lagless.demo.arena import (
    ARENA_HEIGHT,
    ARENA_WIDTH,
    DISPLAY_MODELS,
    PROTOCOL_ID,
    SNAPSHOT_FORMAT,
    SNAPSHOT_RATE,
    TICK_RATE,
    BotServer,
    TickStats,
    make_server,
)
from lagless.demo.match import CLEAN, check_profile
from lagless.demo.net import SHUTDOWN_GRACE, ClientRate, Goodbyes, goodbye_linger
from lagless.errors import ConfigError
from lagless.io import AsyncEndpoint, Proxy, open_endpoint
from lagless.io.proxy import profile_proxy_config
from lagless.io.websocket import (
    Link,
    StaticFile,
    WebSocketLink,
    WebSocketServer,
    open_websocket_server,
)
from lagless.transport import RELIABLE, UNRELIABLE
from lagless.transport.netcode_state import ServerDisconnectReason
from lagless.web.certificate import make_certificate
from lagless.web.frames import LINK_VERSION, MAX_FRAME
from lagless.web.hybrid import HybridServer

__all__ = [
    "CLOSE_GOING_AWAY",
    "COLOURS",
    "WS_PATH",
    "WT_PATH",
    "WebMatch",
    "WebServers",
    "WebStatus",
    "open_web_match",
    "page_config",
    "serve_web",
    "static_files",
    "web_status",
    "webtransport_available",
]

WS_PATH: Final = "/ws"
WT_PATH: Final = "/wt"
COLOURS: Final = {
    "background": (28, 30, 36),
    "wall": (150, 150, 160),
    "car": (70, 170, 255),
    "player": (255, 215, 0),
    "path": (45, 80, 120),
    "player_path": (130, 110, 30),
}
"""RGB colours of the page's canvas: the demo window's (``lagless.demo.render``)."""
_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
_CLOSE_NORMAL: Final = 1000
_CLOSE_POLICY: Final = 1008
CLOSE_GOING_AWAY: Final = 1001
"""WebSocket close code of a server shutting down (RFC 6455 §7.4.1, "going away")."""
_SHUTDOWN_POLL: Final = 0.01  # s between checks of the shutdown's acknowledgements


def page_config(webtransport: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return what the browser page must share with the server (served as ``/config.json``).

    Args:
        webtransport: ``{"port": UDP port, "path": ..., "cert_sha256": [32 bytes]}`` when the
            server takes WebTransport sessions, else ``None``.
    """
    fmt = SNAPSHOT_FORMAT
    return {
        "webtransport": webtransport,
        "protocol_id": PROTOCOL_ID,
        "link_version": LINK_VERSION,
        "ws_path": WS_PATH,
        "channels": {"reliable": RELIABLE, "unreliable": UNRELIABLE},
        "arena": {"width": ARENA_WIDTH, "height": ARENA_HEIGHT},
        "tick_rate": TICK_RATE,
        "snapshot_rate": SNAPSHOT_RATE,
        "snapshot_format": {
            "position_limit": fmt.position_limit,
            "position_resolution": fmt.position_resolution,
            "velocity_min": fmt.velocity_min,
            "velocity_max": fmt.velocity_max,
            "velocity_resolution": fmt.velocity_resolution,
            "angular_velocity_limit": fmt.angular_velocity_limit,
            "angular_velocity_resolution": fmt.angular_velocity_resolution,
            "heading_bits": fmt.heading_bits,
        },
        "display_models": {
            name: {
                "render_delay": view.render_delay,
                "rtt_factor": view.rtt_factor,
                "extrapolation_time": view.extrapolation_time,
                "correction_time": view.correction_time,
                "dr_order": 2 if view.use_acceleration else 1,
            }
            for name, view in DISPLAY_MODELS.items()
        },
        "colours": {name: list(rgb) for name, rgb in COLOURS.items()},
    }


def static_files(webtransport: dict[str, Any] | None = None) -> dict[str, StaticFile]:
    """Return the page's files (package data ``lagless/web/static``) and ``/config.json``."""
    root = resources.files("lagless.web") / "static"
    files: dict[str, StaticFile] = {}
    for entry in root.iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _TYPES:
            files[f"/{entry.name}"] = StaticFile(_TYPES[suffix], entry.read_bytes())
    body = json.dumps(page_config(webtransport), indent=1).encode()
    files["/config.json"] = StaticFile("application/json", body)
    return files


@dataclass(frozen=True, slots=True, kw_only=True)
class WebStatus:
    """What a web match reports once a second and at the end."""

    http_address: Address
    """Where browsers open the page (``http://host:port/``)."""
    udp_address: Address
    """Where ``lagless demo --connect`` players connect."""
    webtransport_address: Address | None
    """Where browsers open WebTransport sessions (UDP), or ``None``."""
    profile: str
    """The network profile in front of the WebTransport sessions."""
    elapsed: float
    """Seconds since the match started."""
    players: int
    """Players connected (browsers and UDP)."""
    browsers: int
    """Browsers connected."""
    bots: int
    """Bots driving."""
    tick: TickStats
    """Server wall time per tick."""
    kbps_per_browser: float
    """WebSocket payload kB/s (1000 bytes) written per browser: over the last second in a
    report, the mean over the seconds with browsers in the final status."""
    frames_dropped: int
    """Snapshot frames dropped because a browser was behind (all links so far)."""


class WebMatch:
    """The glue between the ``BotServer``, its ``HybridServer`` and the two drivers.

    A sans-I/O object for the UDP endpoint (it delegates to ``bot``) and the ``LinkHandler`` of
    the WebSocket server. Call ``attach`` with the endpoint before the first link opens.

    Args:
        bot: The demo's server, built on a ``HybridServer`` transport.
    """

    def __init__(self, bot: BotServer) -> None:
        """Wrap ``bot``; no driver yet."""
        transport = bot.server.transport
        if not isinstance(transport, HybridServer):
            raise ConfigError("WebMatch needs a BotServer on a HybridServer transport")
        self.bot = bot
        self.hub: HybridServer = transport
        self.links: dict[int, Link] = {}
        """Open links (WebSocket and WebTransport) by id."""
        self._endpoint: AsyncEndpoint[WebMatch] | None = None
        self.frames_dropped_closed = 0  # drops of links that have closed
        self.bytes_out_closed = 0  # bytes written to links that have closed
        self.goodbye: str | None = None
        """The reason given to every client once ``shutdown`` ran (links close with it)."""
        self._goodbyes: Goodbyes | None = None  # the UDP clients told, until they acknowledge
        self._close_links = False  # close WebSocket and HELLO-less links on the next pump

    def attach(self, endpoint: AsyncEndpoint[WebMatch]) -> None:
        """Use ``endpoint`` (the UDP driver pumping this object) for its clock and pumps."""
        self._endpoint = endpoint

    @property
    def frames_dropped(self) -> int:
        """Return the droppable frames dropped on all links so far."""
        return self.frames_dropped_closed + sum(link.dropped for link in self.links.values())

    @property
    def bytes_out(self) -> int:
        """Return the WebSocket payload bytes written to all links so far."""
        return self.bytes_out_closed + sum(link.bytes_out for link in self.links.values())

    # -- LinkHandler ----------------------------------------------------------------------------

    def _pump(self, fn: Callable[[float], None]) -> None:
        endpoint = self._endpoint
        assert endpoint is not None, "attach the endpoint first"
        endpoint.call(lambda _obj: fn(endpoint.now()))

    def link_opened(self, link: Link) -> None:
        """Register the link with the hub; during a shutdown close it at once (1001, reason)."""
        if self.goodbye is not None:
            link.close(CLOSE_GOING_AWAY, self.goodbye)
            return
        self.links[link.id] = link
        self._pump(lambda now: self.hub.open_link(link.id, link.address, now))

    def link_frame(self, link: Link, data: bytes) -> None:
        """Hand one frame to the hub."""
        self._pump(lambda now: self.hub.receive_frame(link.id, data, now))

    def link_closed(self, link: Link) -> None:
        """Tell the hub the link is gone."""
        if self.links.pop(link.id, None) is not None:
            self.frames_dropped_closed += link.dropped
            self.bytes_out_closed += link.bytes_out
        self._pump(lambda now: self.hub.close_link(link.id, now))

    # -- sans-I/O interface (the UDP endpoint's object) -----------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Feed a UDP datagram to the server."""
        self.bot.receive_datagram(data, addr, now)

    def handle_timer(self, now: float) -> None:
        """Run the server's timers, ticks and bots."""
        self.bot.handle_timer(now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """Return the UDP datagrams; write the links' frames and close the links due."""
        out = self.bot.datagrams_to_send(now)
        for frame in self.hub.frames_to_send():
            link = self.links.get(frame.link_id)
            if link is not None:
                link.send(frame.data, droppable=frame.droppable)
        for close in self.hub.links_to_close():
            link = self.links.get(close.link_id)
            if link is not None:
                link.close(*self._close_code(close.reason))
        if self._close_links:
            self._close_links = False
            self._close_on_shutdown()
        return out

    def next_timer(self) -> float | None:
        """Return the server's next deadline."""
        return self.bot.next_timer()

    def next_event(self) -> object | None:
        """Return the server's next event (``CarJoined`` / ``CarLeft``)."""
        return self.bot.next_event()

    # -- graceful shutdown (see the module docstring) -------------------------------------------

    def shutdown(self, reason: str) -> int:
        """Send every connected client, UDP or link, a physics ``Goodbye`` with ``reason`` on the
        reliable channel; the pump that writes the links' frames then closes every WebSocket
        link and every link without HELLO (1001 and ``reason``). Call it through the endpoint
        (``endpoint.call``) so that pump follows.

        Returns:
            How many clients were told.

        Raises:
            LocalProtocolError: ``reason`` is over ``MAX_GOODBYE_BYTES`` bytes of UTF-8.
        """
        goodbyes = Goodbyes(self.hub, reason)
        self._goodbyes = goodbyes
        self.goodbye = reason
        told = sum(goodbyes.tell(cid) for cid in self.hub.clients)
        self._close_links = True
        return told

    def goodbyes_pending(self) -> int:
        """Return the UDP clients that neither acknowledged their goodbye nor left, plus the
        links still open (a WebSocket one until its close handshake ends, a WebTransport one
        until the browser ends its session)."""
        udp = 0 if self._goodbyes is None else self._goodbyes.pending()
        return udp + len(self.links)

    def close_all(self) -> int:
        """Disconnect every client: UDP ones with the netcode disconnect packets, links with
        1001 and the goodbye (1000 ``server_disconnected`` when there was none); return how
        many were connected. Call it through the endpoint so the closes leave."""
        hub = self.hub
        left = [*hub.clients, *hub.plain_clients]
        for cid in left:
            hub.disconnect(cid, ServerDisconnectReason.SERVER_DISCONNECTED)
        self._close_links = self.goodbye is not None
        return len(left)

    def _close_code(self, reason: ServerDisconnectReason) -> tuple[int, str]:
        if reason != ServerDisconnectReason.SERVER_DISCONNECTED:
            return _CLOSE_POLICY, reason.name.lower()
        if self.goodbye is not None:
            return CLOSE_GOING_AWAY, self.goodbye
        return _CLOSE_NORMAL, reason.name.lower()

    def _close_on_shutdown(self) -> None:
        goodbye = self.goodbye
        assert goodbye is not None
        for link in self.links.values():
            if isinstance(link, WebSocketLink) or self.hub.connection_of(link.id) is None:
                link.close(CLOSE_GOING_AWAY, goodbye)


@dataclass(frozen=True, slots=True)
class WebServers:
    """A running web match and the servers it is reached through."""

    match: WebMatch
    """The glue (its ``bot`` is the demo's server)."""
    web: WebSocketServer
    """The page and WebSocket links (``web.address``, TCP)."""
    endpoint: AsyncEndpoint[WebMatch]
    """The UDP endpoint for ``lagless demo --connect`` (``endpoint.address``)."""
    webtransport: Address | None
    """Where browsers open WebTransport sessions (UDP; the proxy's address when a profile is
    on), or ``None`` when not served."""
    profile: str
    """The network profile in front of the WebTransport sessions (``none`` for a clean link)."""


def webtransport_available() -> bool:
    """Return whether ``aioquic`` (the ``web`` extra) is installed."""
    return find_spec("aioquic") is not None


@contextlib.asynccontextmanager
async def open_web_match(
    http: Address,
    udp: Address,
    *,
    bots: int,
    seed: int,
    webtransport: Address | None = None,
    profile: str = CLEAN,
) -> AsyncIterator[WebServers]:
    """Run the arena with ``bots`` bots for browsers on ``http`` and UDP players on ``udp``.

    Args:
        http: Numeric ``(host, port)`` of the page and WebSocket links; port 0 picks one.
        udp: Numeric ``(host, port)`` of the UDP endpoint; port 0 picks one.
        bots: Bots on the server.
        seed: Seeds the server and the bots.
        webtransport: Numeric UDP ``(host, port)`` for WebTransport sessions (port 0 picks
            one), or ``None`` for WebSocket only.
        profile: A network profile (``lagless.netsim``) to put in front of the WebTransport
            sessions, or ``none``: the QUIC server then binds an ephemeral loopback port and
            ``lagless.io.Proxy`` listens on ``webtransport``, seeded with ``seed``, so every
            datagram of a session crosses the profile's links. WebSocket links (TCP) and UDP
            players are not conditioned.

    Yields:
        The match and its servers.

    Raises:
        ConfigError: An address that cannot be bound, bad ``bots``, an unknown profile, a
            profile without WebTransport, or WebTransport asked for without ``aioquic``.
    """
    profile = check_profile(profile)
    if webtransport is None and profile != CLEAN:
        raise ConfigError("--profile conditions WebTransport sessions; it needs WebTransport on")
    if webtransport is not None and not webtransport_available():
        raise ConfigError("WebTransport needs aioquic: pip install 'lagless[web]'")
    loop = asyncio.get_running_loop()
    bot = make_server(
        udp, bots=bots, rng=random.Random(seed), start=loop.time(), transport_type=HybridServer
    )
    match = WebMatch(bot)
    async with open_endpoint(match, udp) as endpoint, contextlib.AsyncExitStack() as stack:
        match.attach(endpoint)
        wt_address: Address | None = None
        wt_page: dict[str, Any] | None = None
        try:
            if webtransport is not None:
                from lagless.io.webtransport import open_webtransport_server

                pinned = make_certificate(time.time(), hosts=[http[0], webtransport[0]])
                proxied = profile != CLEAN
                wt = await stack.enter_async_context(
                    open_webtransport_server(
                        ("127.0.0.1", 0) if proxied else webtransport,
                        match,
                        certificate=pinned.certificate,
                        private_key=pinned.private_key,
                        path=WT_PATH,
                        max_frame=MAX_FRAME,
                    )
                )
                wt_address = wt.address
                if proxied:
                    proxy = Proxy(profile_proxy_config(profile, webtransport, wt.address, seed))
                    await proxy.start()
                    stack.push_async_callback(proxy.close)
                    wt_address = proxy.listen_address
                wt_page = {
                    "port": wt_address[1],
                    "path": WT_PATH,
                    "cert_sha256": list(pinned.sha256),
                }
            web = await stack.enter_async_context(
                open_websocket_server(
                    http,
                    match,
                    ws_path=WS_PATH,
                    static=static_files(wt_page),
                    max_frame=MAX_FRAME,
                )
            )
        except OSError as exc:
            raise ConfigError(f"cannot serve on {http[0]}:{http[1]}: {exc.strerror}") from None
        yield WebServers(match, web, endpoint, wt_address, profile)


def web_status(servers: WebServers, elapsed: float, kbps: float) -> WebStatus:
    """Read a ``WebStatus`` off a running match."""
    match = servers.match
    return WebStatus(
        http_address=servers.web.address,
        udp_address=servers.endpoint.address,
        webtransport_address=servers.webtransport,
        profile=servers.profile,
        elapsed=elapsed,
        players=len(match.bot.server.cars),
        browsers=len(match.hub.link_connections),
        bots=len(match.bot.bots),
        tick=match.bot.tick_stats(),
        kbps_per_browser=kbps,
        frames_dropped=match.frames_dropped,
    )


async def serve_web(
    http: Address,
    udp: Address,
    *,
    bots: int,
    seed: int,
    duration: float | None,
    stop: asyncio.Event,
    on_start: Callable[[WebStatus], None],
    report: Callable[[WebStatus], None] | None = None,
    webtransport: Address | None = None,
    profile: str = CLEAN,
    on_serving: Callable[[WebServers], None] | None = None,
    on_event: Callable[[object], None] | None = None,
    goodbye: str | None = None,
    shutdown_grace: float = SHUTDOWN_GRACE,
    on_shutdown: Callable[[int], None] | None = None,
    cut: asyncio.Event | None = None,
) -> WebStatus:
    """Serve the arena to browsers and UDP players until ``duration`` s pass or ``stop`` is set.

    Args:
        http: Numeric ``(host, port)`` of the page; port 0 picks one.
        udp: Numeric ``(host, port)`` for ``lagless demo --connect``; port 0 picks one.
        bots: Bots on the server.
        seed: Seeds the server and the bots.
        duration: Seconds to run, or ``None`` until ``stop``.
        stop: Set it to stop.
        on_start: Called once the servers listen.
        report: Called once a second with the status, or ``None``.
        webtransport: UDP ``(host, port)`` for WebTransport sessions, or ``None``.
        profile: A network profile in front of the WebTransport sessions (``open_web_match``).
        on_serving: Called once, before ``on_start``, with the running servers (read them on
            the loop's thread only).
        on_event: Called with each event of the game server (``CarJoined``, ``CarLeft``).
        goodbye: The reason every client is told at the end (at most ``MAX_GOODBYE_BYTES``
            bytes of UTF-8); ``None`` disconnects them without one.
        shutdown_grace: Seconds the end waits at most for the acknowledgements (module
            docstring, "Graceful shutdown").
        on_shutdown: Called when the run ends, before the goodbyes, with the clients connected
            (UDP and browsers).
        cut: Set it during the shutdown to end the wait at once (a second signal).

    Returns:
        The final status (read when the run ended, before the shutdown).

    Raises:
        ConfigError: Bad duration, or an address that cannot be bound.
    """
    if duration is not None and not (math.isfinite(duration) and duration > 0.0):
        raise ConfigError(f"--duration must be a number of seconds > 0, got {duration:g}")
    loop = asyncio.get_running_loop()
    async with open_web_match(
        http, udp, bots=bots, seed=seed, webtransport=webtransport, profile=profile
    ) as servers:
        started = loop.time()
        rates = ClientRate()
        if on_serving is not None:
            on_serving(servers)
        on_start(web_status(servers, 0.0, 0.0))
        next_report = started + 1.0
        end = math.inf if duration is None else started + duration

        def drain() -> None:
            while (event := servers.endpoint.receive_nowait()) is not None:
                if on_event is not None:
                    on_event(event)

        while not stop.is_set() and loop.time() < end:
            timeout = max(0.0, min(next_report, end) - loop.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout)
            drain()
            if loop.time() >= next_report:
                next_report += 1.0
                elapsed = loop.time() - started
                rates.sample(
                    servers.match.bytes_out, len(servers.match.hub.link_connections), elapsed
                )
                if report is not None:
                    report(web_status(servers, elapsed, rates.last))
        final = web_status(servers, loop.time() - started, rates.mean)
        drain()
        if on_shutdown is not None:
            on_shutdown(len(servers.match.hub.clients) + len(servers.match.hub.plain_clients))
        left = await _shut_down(servers, goodbye, shutdown_grace, cut)
        drain()
        if servers.profile != CLEAN and left:
            await asyncio.sleep(goodbye_linger(servers.profile, shutdown_grace))
        return final


async def _shut_down(
    servers: WebServers, goodbye: str | None, grace: float, cut: asyncio.Event | None
) -> bool:
    """Tell every client ``goodbye``, wait for the acknowledgements (``grace`` s at most, until
    ``cut`` is set), then disconnect and close everyone (see the module docstring); return
    whether any client or link was left to close."""
    loop = asyncio.get_running_loop()
    endpoint = servers.endpoint
    match = servers.match
    if goodbye is not None:
        endpoint.call(lambda m: m.shutdown(goodbye))
    deadline = loop.time() + grace
    cut = cut if cut is not None else asyncio.Event()
    while match.goodbyes_pending() and loop.time() < deadline and not cut.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(cut.wait(), min(_SHUTDOWN_POLL, deadline - loop.time()))
    links = len(match.links)
    return endpoint.call(lambda m: m.close_all()) + links > 0
