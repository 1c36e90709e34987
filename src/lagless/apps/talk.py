"""``connect_and_talk``: connect to a server, send lines as messages, print what comes back.

Implements the issue's ``lagless connect HOST:PORT``: a client (full transport by default, raw
netcode with ``raw``) that sends each input line as one reliable-ordered message (channel 0) or
raw payload and prints every reply.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from lagless._types import Address
from lagless.apps.netcode_keys import REFERENCE_PRIVATE_KEY, REFERENCE_PROTOCOL_ID, make_token
from lagless.errors import LaglessError
from lagless.io.endpoint import AsyncEndpoint, open_endpoint
from lagless.transport import (
    Client,
    Connected,
    ConnectFailed,
    Disconnected,
    MessageReceived,
    NetcodeClient,
    NetcodeClientConfig,
    PayloadReceived,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectOptions:
    """What ``lagless connect`` was asked to do."""

    server: Address
    """The server's public address."""
    protocol_id: int = REFERENCE_PROTOCOL_ID
    """uint64 protocol id."""
    private_key: bytes = REFERENCE_PRIVATE_KEY
    """Key used to make a token locally when ``token`` is not given."""
    token: bytes | None = None
    """A 2048-byte connect token from a backend (``lagless token``)."""
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


class ConnectError(LaglessError):
    """The client could not connect; the message says why."""


async def connect_and_talk(
    options: ConnectOptions,
    lines: AsyncIterator[str],
    *,
    out: Callable[[str], None],
) -> int:
    """Connect, send every line, print replies, disconnect; return the number of replies.

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
    local = "[::]:0" if ":" in options.server[0] else "0.0.0.0:0"
    async with open_endpoint(obj, local) as endpoint:
        now = endpoint.now()
        if options.insecure:
            endpoint.call(
                lambda c: c.connect_insecure(
                    server_addresses=[options.server],
                    protocol_id=options.protocol_id,
                    client_id=client_id,
                    now=now,
                )
            )
        else:
            token = options.token or make_token(
                [options.server],
                client_id=client_id,
                private_key=options.private_key,
                protocol_id=options.protocol_id,
                lagless=not options.raw,
            )
            endpoint.call(lambda c: c.connect(token, now))
        await _wait_connected(endpoint, options)
        out(f"connected to {options.server[0]}:{options.server[1]}")
        printer = asyncio.create_task(_print_replies(endpoint, out))
        try:
            async for line in lines:
                data = line.encode("utf-8")
                if isinstance(obj, Client):
                    obj.send(0, data)
                else:
                    obj.send_payload(data)
                endpoint.flush()
            await asyncio.sleep(options.linger)
        finally:
            printer.cancel()
            (replies,) = await asyncio.gather(printer, return_exceptions=True)
            endpoint.call(lambda c: c.disconnect())
            await asyncio.sleep(0.05)  # let the redundant disconnect packets leave
        return replies if isinstance(replies, int) else 0


async def _wait_connected(
    endpoint: AsyncEndpoint[Client | NetcodeClient], options: ConnectOptions
) -> None:
    where = f"{options.server[0]}:{options.server[1]}"
    try:
        async with asyncio.timeout(options.connect_timeout):
            while True:
                event = await endpoint.receive()
                if isinstance(event, Connected):
                    return
                if isinstance(event, ConnectFailed):
                    why = event.state.name.lower().replace("_", " ")
                    raise ConnectError(f"connection to {where} failed: {why}")
                if isinstance(event, Disconnected):
                    why = event.reason.name.lower().replace("_", " ")
                    raise ConnectError(f"connection to {where} ended: {why}")
    except TimeoutError:
        raise ConnectError(f"no answer from {where} within {options.connect_timeout} s") from None


async def _print_replies(
    endpoint: AsyncEndpoint[Client | NetcodeClient], out: Callable[[str], None]
) -> int:
    count = 0
    try:
        while True:
            event = await endpoint.receive()
            if isinstance(event, MessageReceived | PayloadReceived):
                count += 1
                out(event.payload.decode("utf-8", "replace"))
            elif isinstance(event, Disconnected):
                out(f"disconnected ({event.reason.name.lower()})")
                return count
    except asyncio.CancelledError:
        return count
