"""``lagless serve``, ``lagless connect`` and ``lagless token``: thin commands over `lagless.apps`.

Defaults follow the netcode reference examples (protocol id 0x1122334455667788 and their public
test key, netcode-1.02 spec §14), so the reference client can connect to ``lagless serve --raw``
and ``lagless connect`` reaches the reference server without setup.

Decisions (``tests/cli/``):

* ``serve`` says at start when it will not answer (no ``--echo``), and shows a live table of its
  clients on a terminal (``--quiet`` turns it off).
* ``token`` writes the 2048-byte binary token to ``--out`` (default ``token.bin``); ``--hex``
  prints it as hex text instead. ``connect --token`` takes a file holding either form, or the
  hex text itself, and dials the addresses the token names (a ``lagless proxy`` in front of the
  server: the token names the proxy and ``serve --public-address`` lists it).
* ``connect`` reads stdin only when the event loop reports it readable, so Ctrl-C (or SIGTERM)
  stops it at once even while the terminal has no input.
* ``serve --metrics HOST:PORT`` serves Prometheus metrics (off by default; needs the ``ops``
  extra); ``--log-format json`` makes every stdout line a JSON object (the live table is then
  off, and received messages are not logged one by one). However ``serve`` ends, its clients
  are told first: see `lagless.apps.serve` (``tests/ops/``).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import typer

from lagless._types import Address
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
from lagless.apps.serve import ClientStatus, metrics_address
from lagless.apps.talk import token_addresses
from lagless.cli.common import (
    LOG_FORMAT_OPTION,
    METRICS_OPTION,
    bind_address,
    echo,
    exit_for,
    fail,
    in_range,
    peer_address,
    run_until_signal,
    seconds,
    show,
)
from lagless.cli.live import LiveView, clients_table
from lagless.errors import ConfigError
from lagless.io.logs import EventLog, check_log_format, install_json_logging
from lagless.transport.constants import CONNECT_TOKEN_BYTES, MAX_CLIENTS

DEFAULT_PORT: int = 40000  # UDP port of ``lagless serve``
DEFAULT_TOKEN_FILE: Path = Path("token.bin")
UINT64_MAX: int = (1 << 64) - 1
READ_CHUNK: int = 65536  # bytes read from stdin per readiness callback

_KEY_HELP = "32-byte key as 64 hex digits [default: the netcode reference examples' test key]"


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
    host: str = typer.Option("127.0.0.1", "--host", help="name or IP to bind"),
    port: int = typer.Option(DEFAULT_PORT, "--port", "-p", help="UDP port"),
    public_address: list[str] = typer.Option(
        [],
        "--public-address",
        metavar="HOST:PORT",
        help="a further address clients dial, e.g. a proxy in front (repeatable)",
    ),
    insecure: bool = typer.Option(False, "--insecure", help="no tokens, no encryption"),
    raw: bool = typer.Option(False, "--raw", help="plain netcode 1.02: payloads are raw"),
    echo_back: bool = typer.Option(False, "--echo", help="send every message back to its sender"),
    private_key: str | None = typer.Option(None, "--private-key", help=_KEY_HELP),
    protocol_id: str = typer.Option(
        hex(REFERENCE_PROTOCOL_ID), "--protocol-id", help="uint64 protocol id"
    ),
    max_clients: int = typer.Option(256, "--max-clients", help="client slots, 1..256"),
    duration: float | None = typer.Option(
        None, "--duration", help="seconds to run [default: until Ctrl-C]"
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no live table of clients"),
    metrics: str | None = METRICS_OPTION,
    log_format: str = LOG_FORMAT_OPTION,
) -> None:
    """Run a lagless server (netcode 1.02 handshake and encryption, channels inside).

    SIGTERM (or SIGINT) shuts it down gracefully: every lagless client gets the message
    "server shutting down", then a disconnect; the exit status is 143 (130).
    """
    address = bind_address(host, port)
    seconds(duration, "--duration")
    in_range(max_clients, "--max-clients", 1, MAX_CLIENTS)
    fmt = check_log_format(log_format)
    metrics_at = metrics_address(metrics)
    options = ServeOptions(
        address=address,
        protocol_id=_protocol_id(protocol_id),
        private_key=parse_key(private_key),
        insecure=insecure,
        raw=raw,
        echo=echo_back,
        max_clients=max_clients,
        public_addresses=tuple(
            peer_address(text, field="--public-address") for text in public_address
        ),
    )
    mode = "insecure" if insecure else "secure"
    kind = "raw netcode" if raw else "lagless"
    log = EventLog("lagless.serve", fmt, echo)
    view = LiveView(quiet=quiet or log.json)

    def ready(bound: Address) -> None:
        log.info(
            "serving",
            f"serving {kind} ({mode}) on {show(bound)}, protocol id {hex(options.protocol_id)}",
            address=show(bound),
            mode=mode,
            kind=kind,
            protocol_id=hex(options.protocol_id),
        )
        for extra in options.public_addresses:
            log.info(
                "public_address",
                f"also accepting tokens that name {show(extra)}",
                address=show(extra),
            )
        if private_key is None and not insecure:
            log.warning(
                "test_key",
                "note: using the netcode reference test key; pass --private-key in production",
            )
        if not echo_back:
            log.info(
                "no_echo",
                "note: without --echo the server prints what it receives and answers nothing",
            )

    def metrics_ready(bound: Address) -> None:
        log.info("metrics", f"metrics on http://{show(bound)}/metrics", address=show(bound))

    def monitor(clients: list[ClientStatus]) -> None:
        view.show(clients_table("lagless serve", clients))

    remove = install_json_logging() if log.json else None
    try:
        with view:
            summary: ServeSummary
            summary, signum = run_until_signal(
                lambda stop: serve(
                    options,
                    out=echo,
                    duration=duration,
                    ready=ready,
                    stop=stop,
                    monitor=monitor,
                    log=log,
                    metrics=metrics_at,
                    metrics_ready=metrics_ready,
                )
            )
        log.info(
            "summary",
            f"{summary.connected} clients, {summary.messages} messages, {summary.echoed} echoed",
            clients=summary.connected,
            messages=summary.messages,
            echoed=summary.echoed,
            signal=signum,
        )
    finally:
        if remove is not None:
            remove()
    exit_for(signum)


def read_token(text: str) -> bytes:
    """Return the connect token given as a file (binary or hex text) or as hex text.

    Raises:
        ConfigError: neither a readable file nor 4096 hex digits, or not 2048 bytes.
    """
    path = Path(text)
    if not re.fullmatch(r"\s*[0-9a-fA-F\s]{64,}", text) and path.is_file():
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ConfigError(f"--token {text} cannot be read: {exc.strerror or exc}") from None
        if len(data) == CONNECT_TOKEN_BYTES:
            return data
        text = data.decode("ascii", "replace")
    try:
        token = bytes.fromhex("".join(text.split()))
    except ValueError:
        raise ConfigError(
            f"--token must be a token file or its {2 * CONNECT_TOKEN_BYTES} hex digits "
            "(lagless token writes one)"
        ) from None
    if len(token) != CONNECT_TOKEN_BYTES:
        raise ConfigError(
            f"--token must hold {CONNECT_TOKEN_BYTES} bytes, got {len(token)} "
            "(lagless token writes one)"
        )
    return token


def connect_command(
    server: str | None = typer.Argument(
        None,
        metavar="HOST:PORT",
        help="server to reach ([::1]:40000 for IPv6); with --token, the token's addresses",
    ),
    insecure: bool = typer.Option(False, "--insecure", help="no token, no encryption"),
    raw: bool = typer.Option(False, "--raw", help="plain netcode 1.02: lines are raw payloads"),
    token: str | None = typer.Option(
        None, "--token", help="connect token: a file (binary or hex) or the hex text"
    ),
    private_key: str | None = typer.Option(None, "--private-key", help=_KEY_HELP),
    protocol_id: str = typer.Option(
        hex(REFERENCE_PROTOCOL_ID), "--protocol-id", help="uint64 protocol id"
    ),
    client_id: int | None = typer.Option(
        None, "--client-id", help="client id of a locally made token [default: random]"
    ),
    timeout: float = typer.Option(6.0, "--timeout", help="seconds to wait for the server"),
    linger: float = typer.Option(
        0.5, "--linger", help="seconds to wait for replies after the last line"
    ),
) -> None:
    """Connect to a server, send each stdin line as a message, print the replies."""
    if server is None and token is None:
        fail("give the server's HOST:PORT, or a --token that names it")
    seconds(timeout, "--timeout")
    seconds(linger, "--linger", zero=True)
    if client_id is not None:
        in_range(client_id, "--client-id", 0, UINT64_MAX)
    if token is not None and insecure:
        fail("--token and --insecure do not go together (an insecure client has no token)")
    target = None if server is None else peer_address(server, field="the server address")
    token_bytes = None if token is None else read_token(token)
    if token_bytes is not None and target is not None:
        named = token_addresses(token_bytes)
        if target not in named:
            fail(
                f"{show(target)} is not among the addresses the token names "
                f"({', '.join(map(show, named))}); leave HOST:PORT out to dial those"
            )
    options = ConnectOptions(
        server=target,
        protocol_id=_protocol_id(protocol_id),
        private_key=parse_key(private_key),
        token=token_bytes,
        client_id=client_id,
        insecure=insecure,
        raw=raw,
        connect_timeout=timeout,
        linger=linger,
    )
    talk, signum = run_until_signal(
        lambda stop: connect_and_talk(options, _stdin_lines(), out=echo, stop=stop)
    )
    quality = (
        ""
        if talk.rtt is None or talk.loss is None
        else (f"; RTT {talk.rtt * 1000:.2f} ms, loss {talk.loss * 100:.1f} %")
    )
    echo(f"{talk.replies} replies{quality}")
    exit_for(signum)


async def _stdin_lines() -> AsyncIterator[str]:
    """Yield stdin's lines, read only when the loop says stdin is readable.

    A pending read therefore never blocks the loop, so a signal ends ``connect`` at once; a
    regular file (which the loop cannot watch) is read directly, as it never blocks.
    """
    loop = asyncio.get_running_loop()
    fd = sys.stdin.fileno()
    chunks: asyncio.Queue[bytes] = asyncio.Queue()

    def readable() -> None:
        data = os.read(fd, READ_CHUNK)
        if not data:
            loop.remove_reader(fd)
        chunks.put_nowait(data)

    try:
        loop.add_reader(fd, readable)
    except (OSError, ValueError):
        for line in sys.stdin:
            yield line.rstrip("\n")
        return
    pending = b""
    try:
        while data := await chunks.get():
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                yield line.decode("utf-8", "replace")
        if pending:
            yield pending.decode("utf-8", "replace")
    finally:
        loop.remove_reader(fd)


def token_command(
    server: list[str] = typer.Option(
        ...,
        "--server",
        metavar="HOST:PORT",
        help="address the client dials (repeatable, up to 32)",
    ),
    client_id: int = typer.Option(..., "--client-id", help="uint64 id of the authenticated user"),
    private_key: str | None = typer.Option(None, "--private-key", help=_KEY_HELP),
    protocol_id: str = typer.Option(
        hex(REFERENCE_PROTOCOL_ID), "--protocol-id", help="uint64 protocol id"
    ),
    expire: int = typer.Option(30, "--expire", help="token lifetime, seconds"),
    timeout: int = typer.Option(5, "--timeout", help="connection timeout, seconds"),
    user_data: str = typer.Option("", "--user-data", help="up to 256 bytes of user data as hex"),
    out: Path = typer.Option(DEFAULT_TOKEN_FILE, "--out", help="file for the 2048-byte token"),
    as_hex: bool = typer.Option(False, "--hex", help="print the token as hex instead of a file"),
    plain: bool = typer.Option(False, "--plain", help="no lagless mark: a plain netcode client"),
) -> None:
    """Make a netcode 1.02 connect token (the backend's job) for `lagless connect --token`."""
    in_range(client_id, "--client-id", 0, UINT64_MAX)
    try:
        data = bytes.fromhex(user_data)
    except ValueError:
        raise ConfigError("--user-data must be hex digits") from None
    token = make_token(
        [peer_address(text, field="--server") for text in server],
        client_id=client_id,
        private_key=parse_key(private_key),
        protocol_id=_protocol_id(protocol_id),
        expire_seconds=expire,
        timeout_seconds=timeout,
        user_data=data,
        lagless=not plain,
    )
    if as_hex:
        echo(token.hex())
        return
    try:
        out.write_bytes(token)
    except OSError as exc:
        fail(f"--out {out} cannot be written: {exc.strerror or exc}")
    echo(f"wrote {len(token)} bytes to {out} (lagless connect --token {out})")
