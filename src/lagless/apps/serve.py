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
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from lagless._types import Address
from lagless.apps.netcode_keys import REFERENCE_PRIVATE_KEY, REFERENCE_PROTOCOL_ID
from lagless.io.endpoint import AsyncEndpoint
from lagless.io.serve import serve_events
from lagless.io.udp import format_hostport, open_udp_socket
from lagless.transport import (
    ClientConnected,
    ClientDisconnected,
    ConnectionViolated,
    MessageReceived,
    NetcodeServer,
    NetcodeServerConfig,
    PayloadReceived,
    Server,
    ServerDisconnectReason,
)


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
) -> ServeSummary:
    """Serve until ``duration`` seconds pass or ``stop`` is set, then return the counters.

    Args:
        options: address, keys and modes.
        out: receives one human-readable line per connection event and message.
        duration: seconds to run; ``None`` runs until ``stop`` (or forever).
        ready: called with the bound address once the socket is open.
        stop: set it (e.g. from a signal handler) to end the run cleanly.
        monitor: called with every connected client's status each ``monitor_interval`` seconds.
        monitor_interval: seconds between ``monitor`` calls.
    """
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

    def handle(event: object) -> None:
        match event:
            case ClientConnected(connection_id=cid, client_id=client_id, address=addr):
                counts["connected"] += 1
                addresses[cid] = addr
                plain = isinstance(obj, Server) and cid in obj.plain_clients
                kind = ", plain netcode" if plain else ""
                where = format_hostport(addr)
                out(f"client {cid} connected from {where} (id {client_id}{kind})")
            case ClientDisconnected(connection_id=cid, reason=reason):
                addresses.pop(cid, None)
                out(f"client {cid} disconnected ({reason.name.lower()})")
            case ConnectionViolated(connection_id=cid, reason=violation):
                out(f"client {cid} violated the protocol ({violation.value}); closing")
            case MessageReceived(connection_id=cid, channel=channel, payload=payload):
                counts["messages"] += 1
                out(f"client {cid} ch{channel}: {_show(payload)}")
                if options.echo and isinstance(obj, Server):
                    counts["echoed"] += obj.send(cid, channel, payload) is not None
            case PayloadReceived(connection_id=cid, payload=payload):
                counts["messages"] += 1
                out(f"client {cid} payload: {_show(payload)}")
                if options.echo:
                    if isinstance(obj, NetcodeServer):
                        counts["echoed"] += obj.send_payload(cid, payload)
                    else:
                        counts["echoed"] += obj.send_raw(cid, payload)
            case _:
                pass

    def drop(event: object, _exc: Exception) -> None:
        # one client's event must never stop the server: serve_events logged it; drop the client
        cid = getattr(event, "connection_id", None)
        if cid is not None:
            obj.disconnect(cid, ServerDisconnectReason.APPLICATION_ERROR)

    async with AsyncEndpoint(obj, sock, asyncio.get_running_loop()) as endpoint:
        if ready is not None:
            ready(endpoint.address)
        done = stop if stop is not None else asyncio.Event()
        timer = None
        if duration is not None:
            timer = asyncio.get_running_loop().call_later(max(0.0, duration), done.set)
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
    return ServeSummary(
        connected=counts["connected"], messages=counts["messages"], echoed=counts["echoed"]
    )


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
