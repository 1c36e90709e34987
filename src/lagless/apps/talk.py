"""``connect_and_talk``: connect to a server, send lines as messages, print what comes back.

Implements the issue's ``lagless connect HOST:PORT``: a client (full transport by default, raw
netcode with ``raw``) that sends each input line as one reliable-ordered message (channel 0) or
raw payload and prints every reply.

Decisions (``tests/cli/``):

* With a ``token`` the client dials the addresses the token names, in order, as netcode
  clients do (spec §4.3); ``server`` only makes a token locally when none is given. The
  "connected to" line names the address that answered (``test_secure_proxy.py``).
* No answer within ``connect_timeout`` ends with one hint naming the usual causes: the server is
  not running, or one side runs ``--insecure`` and the other does not (a secure server drops
  insecure requests unanswered, and the reverse).
* ``stop`` (set by the command on SIGINT or SIGTERM) ends the run at any point: the client
  disconnects and the replies so far are counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from lagless._types import Address
from lagless.apps.netcode_keys import REFERENCE_PRIVATE_KEY, REFERENCE_PROTOCOL_ID, make_token
from lagless.errors import LaglessError
from lagless.io.endpoint import AsyncEndpoint, open_endpoint
from lagless.io.udp import format_hostport
from lagless.transport import (
    RELIABLE,
    Client,
    Connected,
    ConnectFailed,
    Disconnected,
    MessageReceived,
    NetcodeClient,
    NetcodeClientConfig,
    PayloadReceived,
    read_connect_token,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectOptions:
    """What ``lagless connect`` was asked to do."""

    server: Address | None
    """The server's numeric public address; None only when ``token`` is given."""
    protocol_id: int = REFERENCE_PROTOCOL_ID
    """uint64 protocol id."""
    private_key: bytes = REFERENCE_PRIVATE_KEY
    """Key used to make a token locally when ``token`` is not given."""
    token: bytes | None = None
    """A 2048-byte connect token from a backend (``lagless token``); the client dials its
    addresses."""
    client_id: int | None = None
    """Client id for a locally made token; random when None."""
    insecure: bool = False
    """No token, no encryption (development only; the server must match)."""
    raw: bool = False
    """Plain netcode: lines are sent as raw payloads."""
    connect_timeout: float = 6.0
    """Seconds to wait for the connection before giving up."""
    linger: float = 0.5
    """Seconds to keep printing replies after the last line was sent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TalkSummary:
    """What one `connect_and_talk` run saw; SI units."""

    replies: int
    """Messages (or raw payloads) received."""
    rtt: float | None
    """Smoothed round-trip time at the end, seconds (None in raw mode or before connecting)."""
    loss: float | None
    """Fraction of recent packets lost at the end, 0..1 (None where ``rtt`` is None)."""


class ConnectError(LaglessError):
    """The client could not connect; the message says why."""


def token_addresses(token: bytes) -> tuple[Address, ...]:
    """Return the server addresses a connect token names (its public part), in dialling order.

    Raises:
        ConnectTokenError: the bytes are not a connect token.
    """
    return read_connect_token(token).server_addresses


async def connect_and_talk(
    options: ConnectOptions,
    lines: AsyncIterator[str],
    *,
    out: Callable[[str], None],
    stop: asyncio.Event | None = None,
) -> TalkSummary:
    """Connect, send every line, print replies, disconnect; return the replies and link quality.

    Args:
        options: where to connect and how.
        lines: the messages to send, one per line.
        out: receives the "connected" line and one line per reply.
        stop: set it to end the run early (the client still disconnects cleanly).

    Raises:
        ConnectError: the connection failed or timed out.
    """
    client_id = options.client_id
    if client_id is None:
        client_id = int.from_bytes(os.urandom(8), "little")
    config = NetcodeClientConfig(insecure=options.insecure)
    obj: Client | NetcodeClient = (
        NetcodeClient(config=config) if options.raw else Client(config=config)
    )
    targets = (
        token_addresses(options.token)
        if options.token is not None
        else (options.server,)
        if options.server is not None
        else ()
    )
    if not targets:
        raise ConnectError("give the server's HOST:PORT or a --token")
    local = "[::]:0" if ":" in targets[0][0] else "0.0.0.0:0"
    replies = [0]
    async with open_endpoint(obj, local) as endpoint:
        now = endpoint.now()
        if options.insecure:
            endpoint.call(
                lambda c: c.connect_insecure(
                    server_addresses=list(targets),
                    protocol_id=options.protocol_id,
                    client_id=client_id,
                    now=now,
                )
            )
        else:
            token = options.token or make_token(
                targets,
                client_id=client_id,
                private_key=options.private_key,
                protocol_id=options.protocol_id,
                lagless=not options.raw,
            )
            endpoint.call(lambda c: c.connect(token, now))
        work = asyncio.ensure_future(_talk(endpoint, obj, options, targets, lines, out, replies))
        waits: set[asyncio.Future[object]] = {work}
        if stop is not None:
            waits.add(asyncio.ensure_future(stop.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in waits:
                task.cancel()
            for task in waits:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            stats = (
                obj.connection_statistics() if isinstance(obj, Client) and obj.connected else None
            )
            endpoint.call(lambda c: c.disconnect())
            await asyncio.sleep(0.05)  # let the redundant disconnect packets leave
    return TalkSummary(
        replies=replies[0],
        rtt=None if stats is None else stats.rtt,
        loss=None if stats is None else stats.loss,
    )


async def _talk(
    endpoint: AsyncEndpoint[Client | NetcodeClient],
    obj: Client | NetcodeClient,
    options: ConnectOptions,
    targets: tuple[Address, ...],
    lines: AsyncIterator[str],
    out: Callable[[str], None],
    replies: list[int],
) -> None:
    await _wait_connected(endpoint, options, targets)
    server = obj.netcode.server_address if isinstance(obj, Client) else obj.server_address
    out(f"connected to {format_hostport(server or targets[0])}")
    printer = asyncio.create_task(_print_replies(endpoint, out, replies))
    try:
        async for line in lines:
            data = line.encode("utf-8")
            if isinstance(obj, Client):
                obj.send(RELIABLE, data)
            else:
                obj.send_payload(data)
            endpoint.flush()
        await asyncio.sleep(options.linger)
    finally:
        printer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await printer


async def _wait_connected(
    endpoint: AsyncEndpoint[Client | NetcodeClient],
    options: ConnectOptions,
    targets: tuple[Address, ...],
) -> None:
    where = ", ".join(format_hostport(addr) for addr in targets)
    try:
        async with asyncio.timeout(options.connect_timeout):
            while True:
                event = await endpoint.receive()
                if isinstance(event, Connected):
                    return
                if isinstance(event, ConnectFailed):
                    why = event.state.name.lower().replace("_", " ")
                    raise ConnectError(
                        _no_answer(where, options)
                        if "timed out" in why
                        else (f"connection to {where} failed: {why}")
                    )
                if isinstance(event, Disconnected):
                    why = event.reason.name.lower().replace("_", " ")
                    raise ConnectError(f"connection to {where} ended: {why}")
    except TimeoutError:
        raise ConnectError(_no_answer(where, options)) from None


def _no_answer(where: str, options: ConnectOptions) -> str:
    return (
        f"no answer from {where} within {options.connect_timeout:g} s "
        "(is the server running? secure/insecure mismatch?)"
    )


async def _print_replies(
    endpoint: AsyncEndpoint[Client | NetcodeClient],
    out: Callable[[str], None],
    replies: list[int],
) -> None:
    while True:
        event = await endpoint.receive()
        if isinstance(event, MessageReceived | PayloadReceived):
            replies[0] += 1
            out(event.payload.decode("utf-8", "replace"))
        elif isinstance(event, Disconnected):
            out(f"disconnected ({event.reason.name.lower()})")
            return
