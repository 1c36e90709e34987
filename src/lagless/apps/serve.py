"""``serve``: run a lagless (or plain netcode) server on real UDP until told to stop.

Implements the issue's ``lagless serve``: the full transport (channels inside netcode payloads)
by default, or ``raw`` netcode 1.02 whose payloads are the application's datagrams. Even in the
default mode a client whose token lacks the lagless mark (any other netcode 1.02 client, such as
the reference ``client`` of netcode-1.02 spec §14) is served as plain netcode: its payloads are
raw datagrams (`Server(plain_unmarked=True)`). ``echo`` sends every message (or raw payload)
back to its sender unchanged on the same channel.

``public_addresses`` are the further addresses clients dial to reach the server, such as a
``lagless proxy`` in front of it: a connect token naming any of them is accepted (netcode-1.02
spec §10.1 step 8; ``tests/cli/test_secure_proxy.py``). ``monitor`` receives a snapshot of every
connected client (`ClientStatus`) once per ``monitor_interval``, for a live view.

Operations (issue 16 part 3): ``log`` reports every connection event as a human line or a JSON
line (`lagless.io.logs`); ``metrics`` serves Prometheus metrics read from the server's own
statistics at scrape time (`lagless.apps.ops`); and however the run ends (``stop``, a signal,
``duration``) the server shuts down gracefully:

* each lagless client gets a last message on the reliable-ordered channel, the UTF-8 text of
  ``goodbye`` (default `SHUTDOWN_REASON`, ``"server shutting down"``), because a netcode
  disconnect packet carries no reason; the server waits until every such message is
  acknowledged, or ``shutdown_grace`` seconds (default 1 s) at most;
* then every client, lagless or plain, is disconnected (netcode's redundant disconnect packets,
  reason ``server_disconnected`` on the client) and the packets are flushed before the socket
  closes. A raw (``--raw``) server's payloads belong to the application, so its clients get the
  disconnect packets only.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.util import find_spec
from typing import TYPE_CHECKING, Final

from lagless._types import Address
from lagless.apps.netcode_keys import REFERENCE_PRIVATE_KEY, REFERENCE_PROTOCOL_ID
from lagless.errors import ConfigError
from lagless.io.endpoint import AsyncEndpoint
from lagless.io.logs import EventLog
from lagless.io.serve import serve_events
from lagless.io.udp import format_hostport, open_udp_socket, parse_hostport, resolve
from lagless.transport import (
    RELIABLE,
    ClientConnected,
    ClientDisconnected,
    ConnectionViolated,
    MessageDelivered,
    MessageReceived,
    NetcodeServer,
    NetcodeServerConfig,
    PayloadReceived,
    Server,
    ServerDisconnectReason,
)

if TYPE_CHECKING:  # prometheus-client is optional: imported only when --metrics is given
    from lagless.io.metrics import ServerMetrics

SHUTDOWN_REASON: Final = "server shutting down"
"""What a shutting-down server tells its clients (``lagless serve``'s goodbye, the game's kick)."""
SHUTDOWN_GRACE: Final = 1.0  # s a shutdown waits at most for the goodbyes to be acknowledged


def metrics_address(text: str | None, flag: str = "--metrics") -> Address | None:
    """Return the numeric address ``--metrics HOST:PORT`` names, or None when not given.

    Raises:
        ConfigError: the text is not HOST:PORT, the host does not resolve, or
            ``prometheus-client`` (the ``ops`` extra) is not installed.
    """
    if text is None:
        return None
    address = parse_hostport(text, field=flag)
    if find_spec("prometheus_client") is None:
        raise ConfigError(f"{flag} needs prometheus-client: pip install 'lagless[ops]'")
    _family, numeric = resolve(address, field=flag)
    return numeric


class ConnectionCounts:
    """Connections opened and closed (by reason), counted from the transport's events.

    Lives here rather than in `lagless.apps.ops` so that a server without ``--metrics`` needs
    no prometheus-client; the metrics read it at scrape time.
    """

    def __init__(self) -> None:
        self.opened = 0
        """``ClientConnected`` events seen."""
        self.closed: dict[str, int] = {}
        """Departures seen, by reason."""

    def connected(self) -> None:
        """Count one ``ClientConnected``."""
        self.opened += 1

    def disconnected(self, reason: str) -> None:
        """Count one departure with its reason (a lower-case `ServerDisconnectReason` name, or
        the game server's ``kicked``)."""
        self.closed[reason] = self.closed.get(reason, 0) + 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeOptions:
    """What ``lagless serve`` was asked to do."""

    address: Address
    """Where to bind; also the public address tokens must name (netcode spec §10.1 step 8)."""
    protocol_id: int = REFERENCE_PROTOCOL_ID
    """uint64 protocol id clients must use."""
    private_key: bytes = REFERENCE_PRIVATE_KEY
    """32-byte key shared with the token backend."""
    insecure: bool = False
    """No tokens, no encryption (development only; clients must match)."""
    raw: bool = False
    """Plain netcode: payloads are the application's datagrams, no lagless channels."""
    echo: bool = False
    """Send every message or payload back to its sender."""
    max_clients: int = 256
    """Slots, in [1, 256]."""
    public_addresses: tuple[Address, ...] = ()
    """Further numeric addresses clients dial to reach this server (e.g. a proxy in front)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientStatus:
    """One connected client as a live view shows it; SI units, None where unknown."""

    connection_id: int
    """The server's never-reused id of the connection."""
    address: Address | None
    """The client's source address, if known."""
    rtt: float | None
    """Smoothed round-trip time, seconds (None for a plain netcode client)."""
    loss: float | None
    """Fraction of recent packets lost, 0..1 (None for a plain netcode client)."""
    received_bps: float | None
    """Payload bytes received from it per second over the last second."""
    sent_bps: float | None
    """Payload bytes sent to it per second over the last second."""


def client_statuses(
    server: Server | NetcodeServer, addresses: Mapping[int, Address]
) -> list[ClientStatus]:
    """Return a `ClientStatus` for every client of ``server``, by connection id.

    Args:
        server: the transport server (a `NetcodeServer` has no per-connection statistics).
        addresses: source address by connection id, where known.
    """
    if not isinstance(server, Server):
        return [
            ClientStatus(
                connection_id=cid,
                address=addr,
                rtt=None,
                loss=None,
                received_bps=None,
                sent_bps=None,
            )
            for cid, addr in sorted(addresses.items())
        ]
    plain = set(server.plain_clients)
    rows = []
    for cid in sorted(server.clients):
        stats = None if cid in plain else server.connection_statistics(cid)
        rows.append(
            ClientStatus(
                connection_id=cid,
                address=addresses.get(cid),
                rtt=None if stats is None else stats.rtt,
                loss=None if stats is None else stats.loss,
                received_bps=None if stats is None else stats.received_bps,
                sent_bps=None if stats is None else stats.sent_bps,
            )
        )
    return rows


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSummary:
    """Counters of one ``serve`` run."""

    connected: int
    """Clients that connected."""
    messages: int
    """Messages (or raw payloads) received."""
    echoed: int
    """Messages (or raw payloads) sent back."""


async def serve(
    options: ServeOptions,
    *,
    out: Callable[[str], None],
    duration: float | None = None,
    ready: Callable[[Address], None] | None = None,
    stop: asyncio.Event | None = None,
    monitor: Callable[[list[ClientStatus]], None] | None = None,
    monitor_interval: float = 1.0,
    log: EventLog | None = None,
    metrics: Address | None = None,
    metrics_ready: Callable[[Address], None] | None = None,
    goodbye: str = SHUTDOWN_REASON,
    shutdown_grace: float = SHUTDOWN_GRACE,
) -> ServeSummary:
    """Serve until ``duration`` seconds pass or ``stop`` is set, shut down, return the counters.

    Args:
        options: address, keys and modes.
        out: receives one human-readable line per connection event and message (text mode).
        duration: seconds to run; ``None`` runs until ``stop`` (or forever).
        ready: called with the bound address once the socket is open.
        stop: set it (e.g. from a signal handler) to end the run cleanly.
        monitor: called with every connected client's status each ``monitor_interval`` seconds.
        monitor_interval: seconds between ``monitor`` calls.
        log: where events are reported; default: human lines through ``out``.
        metrics: serve Prometheus metrics over HTTP here (needs the ``ops`` extra).
        metrics_ready: called with the metrics endpoint's bound address.
        goodbye: the last message each lagless client gets before the disconnect.
        shutdown_grace: seconds the shutdown waits at most for the goodbyes' acknowledgements.

    Raises:
        ConfigError: the address or the metrics address cannot be bound.
    """
    events = log if log is not None else EventLog("lagless.serve", "text", out)
    sock = open_udp_socket(options.address, field="--port")
    try:
        # the public address tokens must name is the one bound: with port 0 the kernel's choice
        config = NetcodeServerConfig(
            protocol_id=options.protocol_id,
            private_key=None if options.insecure else options.private_key,
            public_address=(options.address[0], int(sock.getsockname()[1])),
            extra_public_addresses=options.public_addresses,
            max_clients=options.max_clients,
            insecure=options.insecure,
        )
    except BaseException:
        sock.close()
        raise
    unix_offset = time.time() - time.monotonic()
    obj: Server | NetcodeServer = (
        NetcodeServer(config=config, unix_time_offset=unix_offset)
        if options.raw
        else Server(config=config, unix_time_offset=unix_offset, plain_unmarked=True)
    )
    counts = {"connected": 0, "messages": 0, "echoed": 0}
    addresses: dict[int, Address] = {}
    connections = ConnectionCounts()
    goodbyes: set[tuple[int, int]] = set()  # (connection id, message id) not yet acknowledged

    def handle(event: object) -> None:
        match event:
            case ClientConnected(connection_id=cid, client_id=client_id, address=addr):
                counts["connected"] += 1
                connections.connected()
                addresses[cid] = addr
                plain = isinstance(obj, Server) and cid in obj.plain_clients
                kind = ", plain netcode" if plain else ""
                where = format_hostport(addr)
                events.info(
                    "client_connected",
                    f"client {cid} connected from {where} (id {client_id}{kind})",
                    client=cid,
                    client_id=client_id,
                    address=where,
                    plain=plain,
                )
            case ClientDisconnected(connection_id=cid, reason=reason):
                connections.disconnected(reason.name.lower())
                came_from = addresses.pop(cid, None)
                events.info(
                    "client_disconnected",
                    f"client {cid} disconnected ({reason.name.lower()})",
                    client=cid,
                    address=None if came_from is None else format_hostport(came_from),
                    reason=reason.name.lower(),
                )
            case ConnectionViolated(connection_id=cid, reason=violation):
                events.warning(
                    "client_violation",
                    f"client {cid} violated the protocol ({violation.value}); closing",
                    client=cid,
                    reason=violation.value,
                )
            case MessageReceived(connection_id=cid, channel=channel, payload=payload):
                counts["messages"] += 1
                if not events.json:
                    out(f"client {cid} ch{channel}: {_show(payload)}")
                if options.echo and isinstance(obj, Server):
                    counts["echoed"] += obj.send(cid, channel, payload) is not None
            case PayloadReceived(connection_id=cid, payload=payload):
                counts["messages"] += 1
                if not events.json:
                    out(f"client {cid} payload: {_show(payload)}")
                if options.echo:
                    if isinstance(obj, NetcodeServer):
                        counts["echoed"] += obj.send_payload(cid, payload)
                    else:
                        counts["echoed"] += obj.send_raw(cid, payload)
            case MessageDelivered(connection_id=cid, message_id=mid):
                goodbyes.discard((cid, mid))
            case _:
                pass

    def drop(event: object, _exc: Exception) -> None:
        # one client's event must never stop the server: serve_events logged it; drop the client
        cid = getattr(event, "connection_id", None)
        if cid is not None:
            obj.disconnect(cid, ServerDisconnectReason.APPLICATION_ERROR)

    loop = asyncio.get_running_loop()
    async with AsyncEndpoint(obj, sock, loop) as endpoint:
        exporter = None
        if metrics is not None:
            exporter = _start_metrics(metrics, loop, obj, connections, endpoint)
        try:
            if ready is not None:
                ready(endpoint.address)
            if exporter is not None and metrics_ready is not None:
                bound = exporter.address
                if bound is not None:
                    metrics_ready(bound)
            done = stop if stop is not None else asyncio.Event()
            timer = None
            if duration is not None:
                timer = loop.call_later(max(0.0, duration), done.set)
            watcher = None
            if monitor is not None:
                report = monitor
                watcher = asyncio.create_task(
                    _watch(lambda: report(client_statuses(obj, addresses)), monitor_interval, done)
                )
            try:
                await serve_events(endpoint, handle, on_error=drop, stop=done)
            finally:
                if timer is not None:
                    timer.cancel()
                if watcher is not None:
                    watcher.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await watcher
            await _shut_down(endpoint, handle, goodbyes, goodbye, shutdown_grace, events)
        finally:
            if exporter is not None:
                exporter.close()
    return ServeSummary(
        connected=counts["connected"], messages=counts["messages"], echoed=counts["echoed"]
    )


def _start_metrics(
    address: Address,
    loop: asyncio.AbstractEventLoop,
    obj: Server | NetcodeServer,
    connections: ConnectionCounts,
    endpoint: AsyncEndpoint[Server | NetcodeServer],
) -> ServerMetrics:
    """Serve ``obj``'s metrics at ``address``, read on ``loop``'s thread at each scrape."""
    from lagless.apps.ops import transport_families
    from lagless.io.metrics import OwnerThread, ServerMetrics

    exporter = ServerMetrics(OwnerThread.for_loop(loop))
    exporter.add_builder(lambda: transport_families(obj, connections, endpoint.statistics()))
    exporter.start(address)
    return exporter


async def _shut_down(
    endpoint: AsyncEndpoint[Server | NetcodeServer],
    handle: Callable[[object], None],
    goodbyes: set[tuple[int, int]],
    goodbye: str,
    grace: float,
    events: EventLog,
) -> None:
    """Say ``goodbye`` to every lagless client, wait for the acks (``grace`` s at most),
    disconnect everyone and flush the disconnect packets (see the module docstring)."""
    while (pending := endpoint.receive_nowait()) is not None:
        handle(pending)  # a client that connected in the last batch is told too
    obj = endpoint.obj
    lagless = obj.clients if isinstance(obj, Server) else []
    plain = obj.plain_clients if isinstance(obj, Server) else []
    total = (
        obj.netcode.num_connected_clients if isinstance(obj, Server) else obj.num_connected_clients
    )
    events.info(
        "shutdown",
        f"shutting down: telling {total} clients {goodbye!r}",
        clients=total,
        reason=goodbye,
    )
    if isinstance(obj, Server):
        text = goodbye.encode("utf-8")
        for cid in lagless:
            mid = obj.send(cid, RELIABLE, text)
            if mid is not None:
                goodbyes.add((cid, mid))
        endpoint.flush()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(grace):
                while goodbyes:
                    for event in await endpoint.receive_batch():
                        handle(event)
        for cid in (*lagless, *plain):
            if obj.is_connected(cid):  # it may have left during the grace
                obj.disconnect(cid, ServerDisconnectReason.SERVER_DISCONNECTED)
    else:
        obj.disconnect_all()
    endpoint.flush()
    while (event := endpoint.receive_nowait()) is not None:
        handle(event)


async def _watch(call: Callable[[], None], interval: float, done: asyncio.Event) -> None:
    """Call ``call()`` every ``interval`` seconds until ``done`` is set."""
    while not done.is_set():
        call()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(done.wait(), interval)


def _show(payload: bytes, limit: int = 60) -> str:
    """Printable form of a payload: text if it decodes, else a hex prefix with the length."""
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        return f"{len(payload)} bytes {payload[:16].hex()}{'…' if len(payload) > 16 else ''}"
    return text if len(text) <= limit else text[:limit] + "…"
