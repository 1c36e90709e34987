"""The demo split across machines over real UDP: ``--server`` and ``--connect HOST:PORT``.

``serve_match`` runs the arena's ``BotServer`` on an asyncio UDP endpoint (``lagless.io``); with a
network profile it binds the server to an ephemeral loopback port and puts
``lagless.io.proxy.Proxy`` in front of it on the public address, so every client's datagrams
cross the profile's links (``up`` client → server, ``down`` server → client). ``UdpPlayer`` is
the player's side: a ``PhysicsClient`` on a ``PollEndpoint`` pumped once per frame, for the
window or a headless client run.

Decisions:
    * The simulated link lives with the server (``--server --profile NAME``): the proxy models
      each client's own access link. A client cannot switch it live (the HUD names it
      ``server side``).
    * Server time is the event loop's clock (``loop.time()``, the clock ``AsyncEndpoint``
      drives the object with), so tick 0 is when the server starts.
    * The per-client rate a server reports is its bytes out (with 28 IPv4+UDP header bytes per
      datagram) over each second, divided by the players connected at its end.
    * ``on_serving`` hands the caller the running server and its endpoint (`MatchServer`), to be
      read on the loop's thread only: ``lagless demo --server --metrics`` exports the
      transport's connections, RTT, loss, traffic and drops from them (issue 16 part 3).
    * Graceful shutdown (issue 16 part 3): when the run ends, every connected client gets a
      `Goodbye` with the reason (``goodbye``, e.g. ``server shutting down``) on the reliable
      channel, since a netcode disconnect packet carries none. The server keeps running until
      each client's reliable deliveries have grown past their count at the goodbye (its
      acknowledgement: the only reliable message a demo server sends besides the welcome) or
      the client left, ``shutdown_grace`` seconds at most, then disconnects everyone and
      flushes; behind a profile the proxy stays up for the down link's latency (twice, plus its
      reordering delay and 50 ms, at most ``shutdown_grace``) so the disconnect packets cross it.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from lagless._types import Address
from lagless.demo.arena import (
    PROTOCOL_ID,
    SNAPSHOT_FORMAT,
    BotServer,
    TickStats,
    make_client,
    make_server,
)
from lagless.demo.match import CLEAN, check_profile
from lagless.demo.session import Autopilot, LiveStatus, Paths, live_status, shown_cars
from lagless.errors import ConfigError, LocalProtocolError
from lagless.io import PollEndpoint, Proxy, open_endpoint
from lagless.io.endpoint import AsyncEndpoint
from lagless.io.proxy import profile_proxy_config
from lagless.io.udp import resolve, wildcard_for
from lagless.netsim import get_profile
from lagless.physics import Keys, PhysicsClient
from lagless.physics.codec import Goodbye, encode_message
from lagless.smoothing.state import DisplayState
from lagless.transport import RELIABLE, Server, ServerDisconnectReason

__all__ = [
    "REMOTE_PROFILE",
    "SHUTDOWN_GRACE",
    "Goodbyes",
    "MatchServer",
    "ServerStatus",
    "UdpPlayer",
    "goodbye_linger",
    "serve_match",
]

REMOTE_PROFILE: Final = "server side"
"""What a ``--connect`` client's HUD shows as its profile: the link is the server's business."""
UDP_HEADER: Final = 28  # bytes of IPv4+UDP header per datagram
_AUTOPILOT_INTERVAL: Final = 0.05  # s
SHUTDOWN_GRACE: Final = 1.0  # s a shutdown waits at most for the goodbyes to be acknowledged
_SHUTDOWN_POLL: Final = 0.01  # s between checks for the goodbyes' acknowledgements


@dataclass(frozen=True, slots=True)
class MatchServer:
    """A running demo server as ``serve_match`` hands it to its caller (``on_serving``).

    Both belong to the event loop's thread: read them there (``lagless.io.metrics.OwnerThread``).
    """

    server: BotServer
    """The arena's server (its ``server.transport`` is the transport server)."""
    endpoint: AsyncEndpoint[BotServer]
    """The UDP endpoint driving it (``statistics()``: the driver's counters)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerStatus:
    """What a demo server reports once a second and at the end."""

    address: Address
    """Where clients connect (the proxy's address when a profile is on)."""
    elapsed: float
    """Seconds since the server started."""
    players: int
    """Players connected."""
    bots: int
    """Bots driving."""
    tick: TickStats
    """Server wall time per tick."""
    cpu: TickStats
    """Server CPU time per tick."""
    kbps_per_client: float
    """kB/s (1000 bytes, with IPv4+UDP headers) sent per connected player: over the last second
    in a report, the mean over the seconds with players in the final status."""
    profile: str
    """The profile between the clients and the server."""


class ClientRate:
    """kB/s per client over each report interval, and their mean over intervals with clients."""

    def __init__(self) -> None:
        self._last_t = 0.0
        self._last_bytes = 0
        self._samples: list[float] = []
        self.last = 0.0
        """kB/s per client over the latest interval (0 when no client was there)."""

    def sample(self, total_bytes: int, clients: int, elapsed: float) -> None:
        """Take the bytes sent so far, the clients now and the seconds since the start."""
        span = elapsed - self._last_t
        if clients and span > 0.0:
            self.last = (total_bytes - self._last_bytes) / span / 1000.0 / clients
            self._samples.append(self.last)
        else:
            self.last = 0.0
        self._last_t, self._last_bytes = elapsed, total_bytes

    @property
    def mean(self) -> float:
        """Mean kB/s per client over the intervals that had clients."""
        return sum(self._samples) / len(self._samples) if self._samples else 0.0


def _status(
    server: BotServer, address: Address, elapsed: float, profile: str, kbps: float
) -> ServerStatus:
    return ServerStatus(
        address=address,
        elapsed=elapsed,
        players=len(server.server.cars),
        bots=len(server.bots),
        tick=server.tick_stats(),
        cpu=server.tick_stats(cpu=True),
        kbps_per_client=kbps,
        profile=profile,
    )


async def serve_match(
    address: Address,
    *,
    bots: int,
    seed: int,
    profile: str,
    duration: float | None,
    stop: asyncio.Event,
    on_start: Callable[[ServerStatus], None],
    report: Callable[[ServerStatus], None] | None = None,
    on_serving: Callable[[MatchServer], None] | None = None,
    goodbye: str | None = None,
    shutdown_grace: float = SHUTDOWN_GRACE,
    on_shutdown: Callable[[int], None] | None = None,
) -> ServerStatus:
    """Serve the arena with bots over UDP until ``duration`` s pass or ``stop`` is set.

    Args:
        address: Numeric ``(ip, port)`` to serve on; port 0 picks a free one.
        bots: Bots on the server.
        seed: Seeds the server, the bots and the proxy's links.
        profile: A network profile to put in front of the server, or ``CLEAN``.
        duration: Seconds to run, or ``None`` until ``stop``.
        stop: Set it to stop the server.
        on_start: Called once the sockets are bound, with the address clients connect to.
        report: Called once a second with the server's status, or ``None``.
        on_serving: Called once, before ``on_start``, with the running server and endpoint.
        goodbye: The reason every client is told at the end (at most ``MAX_GOODBYE_BYTES``
            bytes of UTF-8); ``None`` disconnects them without one.
        shutdown_grace: Seconds the end waits at most for the goodbyes' acknowledgements.
        on_shutdown: Called when the run ends, before the goodbyes, with the clients connected.

    Returns:
        The final status.

    Raises:
        ConfigError: Unknown profile, bad duration, or an address that cannot be bound.
    """
    profile = check_profile(profile)
    if duration is not None and not (math.isfinite(duration) and duration > 0.0):
        raise ConfigError(f"--duration must be a number of seconds > 0, got {duration:g}")
    loop = asyncio.get_running_loop()
    proxied = profile != CLEAN
    bind = ("127.0.0.1", 0) if proxied else address
    server = make_server(address, bots=bots, rng=random.Random(seed), start=loop.time())
    proxy: Proxy | None = None
    async with open_endpoint(server, bind) as endpoint:
        public = endpoint.address
        try:
            if proxied:
                proxy = Proxy(profile_proxy_config(profile, address, endpoint.address, seed))
                await proxy.start()
                public = proxy.listen_address
            started = loop.time()
            rates = ClientRate()
            if on_serving is not None:
                on_serving(MatchServer(server, endpoint))
            on_start(_status(server, public, 0.0, profile, 0.0))
            next_report = started + 1.0
            end = math.inf if duration is None else started + duration
            while not stop.is_set() and loop.time() < end:
                timeout = max(0.0, min(next_report, end) - loop.time())
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout)
                while endpoint.receive_nowait() is not None:
                    pass  # CarJoined / CarLeft: the players show in the status
                if loop.time() >= next_report:
                    next_report += 1.0
                    rates.sample(
                        server.bytes_sent + UDP_HEADER * server.datagrams_sent,
                        len(server.server.cars),
                        loop.time() - started,
                    )
                    if report is not None:
                        report(_status(server, public, loop.time() - started, profile, rates.last))
            final = _status(server, public, loop.time() - started, profile, rates.mean)
            while endpoint.receive_nowait() is not None:
                pass
            transport = server.server.transport
            if on_shutdown is not None:
                on_shutdown(transport.netcode.num_connected_clients)
            left = await _shut_down(endpoint, goodbye, shutdown_grace)
            if proxy is not None and left:
                await asyncio.sleep(goodbye_linger(profile, shutdown_grace))
            return final
        finally:
            if proxy is not None:
                await proxy.close()


class Goodbyes:
    """Clients told a physics ``Goodbye`` on the reliable channel, until each acknowledged it.

    A client acknowledged its goodbye once its reliable deliveries grew past their count when
    it was told (or it left). A client without a lagless connection (a browser link of
    ``lagless web``) is told but not waited for here.

    Args:
        transport: The server the clients are connected to.
        reason: What they are told (at most ``MAX_GOODBYE_BYTES`` bytes of UTF-8).

    Raises:
        LocalProtocolError: ``reason`` too long.
    """

    def __init__(self, transport: Server, reason: str) -> None:
        """Encode the goodbye once; nobody is told yet."""
        self._transport = transport
        self._payload = encode_message(Goodbye(reason=reason), SNAPSHOT_FORMAT)
        self._waiting: dict[int, int] = {}  # connection id -> reliable deliveries when told

    def tell(self, connection_id: int) -> bool:
        """Send the goodbye to ``connection_id``; return whether it was still connected."""
        transport = self._transport
        stats = transport.connection_statistics(connection_id)
        if transport.send(connection_id, RELIABLE, self._payload) is None:
            return False
        if stats is not None:
            self._waiting[connection_id] = stats.messages.messages_delivered
        return True

    def pending(self) -> int:
        """Return how many told clients neither acknowledged their goodbye nor left."""
        transport = self._transport
        for cid, before in list(self._waiting.items()):
            stats = transport.connection_statistics(cid)
            if stats is None or stats.messages.messages_delivered > before:
                del self._waiting[cid]
        return len(self._waiting)


def goodbye_linger(profile: str, grace: float) -> float:
    """Seconds a proxy in front of a server must stay up so its last packets cross it: twice the
    profile's down latency plus its reordering delay and 50 ms, at most ``grace``."""
    down = get_profile(profile).down
    return min(grace, 2.0 * down.latency + down.reorder_delay + 0.05)


async def _shut_down(endpoint: AsyncEndpoint[BotServer], goodbye: str | None, grace: float) -> int:
    """Tell every client ``goodbye``, wait for the acknowledgements (``grace`` s at most),
    disconnect everyone and flush (see the module docstring); return how many were left."""
    loop = asyncio.get_running_loop()
    transport = endpoint.obj.server.transport
    goodbyes: Goodbyes | None = None
    if goodbye is not None:
        goodbyes = Goodbyes(transport, goodbye)
        for cid in transport.clients:
            goodbyes.tell(cid)
        endpoint.flush()
    deadline = loop.time() + grace
    while goodbyes is not None and goodbyes.pending() and loop.time() < deadline:
        await asyncio.sleep(_SHUTDOWN_POLL)
    left = [*transport.clients, *transport.plain_clients]
    for cid in left:
        transport.disconnect(cid, ServerDisconnectReason.SERVER_DISCONNECTED)
    endpoint.flush()
    while endpoint.receive_nowait() is not None:
        pass  # the CarLeft events of the clients just disconnected
    return len(left)


class UdpPlayer:
    """A player's client over real UDP, pumped once per frame (window or headless).

    Args:
        server: ``(host, port)`` of a ``--server`` (a name or an IP).
        seed: Seeds the client and the autopilot.
        model: Display model of the cars.
        autopilot: Drive the own car with a bot (headless); otherwise ``set_keys`` does.

    Raises:
        ConfigError: The server's host does not resolve.
    """

    def __init__(self, server: Address, *, seed: int, model: str, autopilot: bool) -> None:
        """Open the socket and start connecting."""
        family, numeric = resolve(server, field="--connect")
        rng = random.Random(seed)
        self.client: PhysicsClient = make_client(rng)
        self.endpoint = PollEndpoint(self.client, wildcard_for(family))
        self.profile = REMOTE_PROFILE
        self.model = model
        self.paths = Paths()
        self.predict = True
        """Show the own car predicted (``set_predict``)."""
        self._autopilot = Autopilot(random.Random(rng.getrandbits(64))) if autopilot else None
        self._next_drive = -math.inf
        self.client.transport.connect_insecure(
            server_addresses=[numeric],
            protocol_id=PROTOCOL_ID,
            client_id=rng.getrandbits(63),
            now=time.monotonic(),
        )
        self.endpoint.flush()
        self._rate_samples: list[float] = []
        self._next_rate = time.monotonic() + 1.0

    def set_profile(self, name: str) -> None:
        """Refuse: the link of a ``--connect`` client is the server's (``--server --profile``).

        Raises:
            ConfigError: Always.
        """
        raise ConfigError(f"profile {name!r}: put --profile on the --server side")

    def set_model(self, model: str) -> None:
        """Show the cars through display model ``model`` from now on."""
        self.model = model

    def set_predict(self, predict: bool) -> None:
        """Show the own car predicted (True) or through the display model (False)."""
        self.predict = predict

    def set_keys(self, keys: Keys) -> None:
        """Hold ``keys`` on the own car from now on."""
        self.client.set_keys(keys, time.monotonic())
        self.endpoint.flush()

    def advance(self) -> dict[int, DisplayState]:
        """Pump the socket, drive (autopilot) and return the cars shown now."""
        self.endpoint.pump()
        now = time.monotonic()
        if self._autopilot is not None and now >= self._next_drive:
            self._next_drive = now + _AUTOPILOT_INTERVAL
            keys = self._autopilot.keys(self.client, self.model, now, predict=self.predict)
            if keys is not None:
                self.set_keys(keys)
        if now >= self._next_rate:
            self._next_rate += 1.0
            self._rate_samples.append(self.status(0).kbps_in)
        shown = shown_cars(self.client, self.model, now, predict=self.predict)
        self.paths.sample(shown, now)
        return shown

    def wait(self, timeout: float) -> None:
        """Sleep until a datagram, the client's next deadline or ``timeout`` s."""
        self.endpoint.wait(timeout)

    def status(self, cars: int) -> LiveStatus:
        """Return the HUD figures with ``cars`` cars shown."""
        return live_status(
            self.client, cars, model=self.model, profile=self.profile, predict=self.predict
        )

    def tick_stats(self) -> TickStats | None:
        """Return ``None``: the server's tick time is measured on the server."""
        return None

    def score_line(self) -> str | None:
        """Return ``None``: the ram scores are kept on the server (not on the wire)."""
        return None

    def kbps_in_avg(self) -> float:
        """Return the mean of the once-a-second payload kB/s received so far (0 before 1 s)."""
        samples = self._rate_samples
        return sum(samples) / len(samples) if samples else 0.0

    def packets_received(self) -> int:
        """Return the payload packets received so far (0 before connecting)."""
        try:
            return self.client.transport.connection_statistics().packets_received
        except LocalProtocolError:
            return 0

    def close(self) -> None:
        """Disconnect and close the socket."""
        self.client.transport.disconnect()
        self.endpoint.flush()
        self.endpoint.close()
