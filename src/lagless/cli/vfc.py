"""``lagless vfc``: the VFC server and bot clients over real UDP (spec 001 §6.3, issue 5 part 3).

Thin typer commands: parse, call ``lagless.apps.vfc``, print (flushed per line, so a pipe sees
each one). Ctrl-C or SIGTERM ends either command cleanly. A bad argument prints one ``error:``
line and exits with status 2; losing the server prints one ``error:`` line and exits with 1.
Register with ``app.add_typer(vfc.app, name="vfc")``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer

from lagless.apps.vfc import ServerLost, run_bots, serve_vfc
from lagless.errors import ConfigError
from lagless.io.udp import run
from lagless.transport import parse_address

R = TypeVar("R")

app = typer.Typer(
    help="VFC4FPS interest management over real UDP (spec 001).", no_args_is_help=True
)


def _echo(line: str) -> None:
    typer.echo(line)
    sys.stdout.flush()


def _run(main: Callable[[asyncio.Event], Awaitable[R]]) -> R:
    """Run ``main(stop)`` on a fresh loop (uvloop when installed); Ctrl-C or SIGTERM sets
    ``stop``."""

    async def runner() -> R:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await main(stop)

    return run(runner())


@app.command("serve")
def serve_command(
    bind: str = typer.Option("127.0.0.1:40100", help="HOST:PORT to bind"),
    duration: float | None = typer.Option(None, help="seconds to run (default: forever)"),
) -> None:
    """Run a VFC server (insecure transport; development and lab only)."""
    try:
        address = parse_address(bind)
    except (ConfigError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    summary = _run(
        lambda stop: serve_vfc(
            address,
            out=_echo,
            duration=duration,
            ready=lambda a: _echo(f"vfc server on {a[0]}:{a[1]}"),
            stop=stop,
        )
    )
    _echo(f"{summary.joined} joined; {summary.update_bytes} update bytes sent")


@app.command("bots")
def bots_command(
    server: str = typer.Argument("127.0.0.1:40100", help="HOST:PORT of the VFC server"),
    count: int = typer.Option(8, "--count", "-n", help="number of bots, 1..256"),
    map_name: str = typer.Option("wcd", "--map", help="a map of the thesis's Table 5.4"),
    duration: float = typer.Option(10.0, help="seconds to run"),
    seed: int = typer.Option(0, help="mobility seed"),
) -> None:
    """Connect N bots to a VFC server and move them (spread or clustered by map)."""
    try:
        address = parse_address(server)
        if not 1 <= count <= 256:
            raise ConfigError(f"count must be in [1, 256], got {count}")
        summary = _run(
            lambda stop: run_bots(
                address,
                count=count,
                map_name=map_name,
                duration=duration,
                out=_echo,
                seed=seed,
                stop=stop,
            )
        )
    except (ConfigError, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except ServerLost as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    if summary.joined < count:
        raise typer.Exit(1)
