"""``lagless serve``, ``lagless connect`` and ``lagless token``: thin commands over `lagless.apps`.

Defaults follow the netcode reference examples (protocol id 0x1122334455667788 and their public
test key, netcode-1.02 spec §14), so the reference client can connect to ``lagless serve --raw``
and ``lagless connect`` reaches the reference server without setup.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import typer

from lagless.apps import (
    REFERENCE_PROTOCOL_ID,
    ConnectOptions,
    ServeOptions,
    ServeSummary,
    connect_and_talk,
    make_token,
    parse_key,
    serve,
)
from lagless.errors import ConfigError
from lagless.io.udp import install_uvloop, parse_hostport

_KEY_HELP = (
    "32-byte key as 64 hex digits (default: the netcode reference examples' public test key)"
)


def _echo(line: str) -> None:
    typer.echo(line)
    sys.stdout.flush()


def _protocol_id(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise ConfigError(
            f"--protocol-id must be an integer (e.g. 0x1122334455667788), got {text!r}"
        ) from None
    if not 0 <= value < 1 << 64:
        raise ConfigError(f"--protocol-id must be a uint64, got {text}")
    return value


def serve_command(
    port: int = typer.Option(40000, "--port", "-p", help="UDP port"),
    host: str = typer.Option(
        "127.0.0.1", help="address to bind; also the public address tokens name"
    ),
    insecure: bool = typer.Option(False, help="no tokens, no encryption (development only)"),
    raw: bool = typer.Option(False, help="plain netcode 1.02: payloads are raw datagrams"),
    echo: bool = typer.Option(False, help="send every message or payload back to its sender"),
    private_key: str | None = typer.Option(None, help=_KEY_HELP),
    protocol_id: str = typer.Option(hex(REFERENCE_PROTOCOL_ID), help="uint64 protocol id"),
    max_clients: int = typer.Option(256, help="client slots, 1..256"),
    duration: float | None = typer.Option(
        None, help="seconds to run, then exit (default: until Ctrl-C)"
    ),
) -> None:
    """Run a lagless server (netcode 1.02 handshake and encryption, channels inside)."""
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be in [0, 65535], got {port}")
    address = parse_hostport(
        f"[{host}]:{port}" if ":" in host else f"{host}:{port}", field="--host"
    )
    options = ServeOptions(
        address=address,
        protocol_id=_protocol_id(protocol_id),
        private_key=parse_key(private_key),
        insecure=insecure,
        raw=raw,
        echo=echo,
        max_clients=max_clients,
    )
    mode = "insecure" if insecure else "secure"
    kind = "raw netcode" if raw else "lagless"
    install_uvloop()

    def ready(bound: tuple[str, int]) -> None:
        where = f"{bound[0]}:{bound[1]}"
        _echo(f"serving {kind} ({mode}) on {where}, protocol id {hex(options.protocol_id)}")
        if private_key is None and not insecure:
            _echo("note: using the netcode reference test key; pass --private-key in production")

    async def main() -> ServeSummary:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await serve(options, out=_echo, duration=duration, ready=ready, stop=stop)

    summary = asyncio.run(main())
    _echo(f"{summary.connected} clients, {summary.messages} messages, {summary.echoed} echoed")


def connect_command(
    server: str = typer.Argument(..., help="HOST:PORT of the server ([::1]:40000 for IPv6)"),
    insecure: bool = typer.Option(False, help="no token, no encryption (the server must match)"),
    raw: bool = typer.Option(False, help="plain netcode 1.02: send lines as raw payloads"),
    token: Path | None = typer.Option(
        None, help="file with a 2048-byte connect token (lagless token)"
    ),
    private_key: str | None = typer.Option(None, help=_KEY_HELP),
    protocol_id: str = typer.Option(hex(REFERENCE_PROTOCOL_ID), help="uint64 protocol id"),
    client_id: int | None = typer.Option(None, help="client id for a locally made token"),
    linger: float = typer.Option(0.5, help="seconds to wait for replies after the last line"),
) -> None:
    """Connect to a server, send each stdin line as a message, print the replies."""
    token_bytes = None
    if token is not None:
        try:
            token_bytes = token.read_bytes()
        except OSError as exc:
            raise ConfigError(f"--token cannot be read: {exc}") from None
    options = ConnectOptions(
        server=parse_hostport(server, field="SERVER"),
        protocol_id=_protocol_id(protocol_id),
        private_key=parse_key(private_key),
        token=token_bytes,
        client_id=client_id,
        insecure=insecure,
        raw=raw,
        linger=linger,
    )

    async def stdin_lines() -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                return
            yield line.rstrip("\n")

    install_uvloop()
    try:
        replies = asyncio.run(connect_and_talk(options, stdin_lines(), out=_echo))
    except KeyboardInterrupt:
        return
    _echo(f"{replies} replies")


def token_command(
    server: list[str] = typer.Option(
        ..., "--server", help="HOST:PORT the client dials (repeatable, up to 32)"
    ),
    client_id: int = typer.Option(..., help="uint64 id of the authenticated user"),
    private_key: str | None = typer.Option(None, help=_KEY_HELP),
    protocol_id: str = typer.Option(hex(REFERENCE_PROTOCOL_ID), help="uint64 protocol id"),
    expire: int = typer.Option(30, help="token lifetime, seconds"),
    timeout: int = typer.Option(5, help="connection timeout, seconds"),
    user_data: str = typer.Option("", help="up to 256 bytes of user data as hex"),
    out: Path | None = typer.Option(None, help="write the 2048 bytes here (default: print hex)"),
    plain: bool = typer.Option(False, help="no lagless mark: for a plain netcode 1.02 client"),
) -> None:
    """Generate a netcode 1.02 connect token (the backend's job) for `lagless connect --token`."""
    try:
        data = bytes.fromhex(user_data)
    except ValueError:
        raise ConfigError("--user-data must be hex digits") from None
    token = make_token(
        [parse_hostport(text, field="--server") for text in server],
        client_id=client_id,
        private_key=parse_key(private_key),
        protocol_id=_protocol_id(protocol_id),
        expire_seconds=expire,
        timeout_seconds=timeout,
        user_data=data,
        lagless=not plain,
    )
    if out is None:
        _echo(token.hex())
    else:
        out.write_bytes(token)
        _echo(f"wrote {len(token)} bytes to {out}")
