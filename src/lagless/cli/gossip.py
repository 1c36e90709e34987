"""``lagless gossip lobby|peer|swarm``: Silac (spec 002) on real UDP, thin commands over the apps.

``lobby`` runs the info server (spec 002 §2.11), ``peer`` one bot peer that finds its game through
a lobby, ``swarm`` many bot peers in one process with a summary of coverage and traffic. Errors
print one ``error: ...`` line and exit with status 2, whether run from the root app or as
``python -m lagless.cli.gossip``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

import typer

from lagless._types import Address
from lagless.apps.gossip import (
    DEFAULT_LOBBY_PORT,
    LobbySummary,
    PeerSummary,
    SwarmSummary,
    run_lobby,
    run_peer,
    run_swarm,
)
from lagless.errors import ConfigError, LaglessError
from lagless.io.udp import format_hostport, install_uvloop, parse_hostport

R = TypeVar("R")

app = typer.Typer(
    help="Silac gossip P2P on real UDP: info server (lobby), a bot peer, a swarm of bot peers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _echo(line: str) -> None:
    typer.echo(line)
    sys.stdout.flush()


def _address(host: str, port: int, field: str) -> Address:
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be in [0, 65535], got {port}")
    return parse_hostport(f"[{host}]:{port}" if ":" in host else f"{host}:{port}", field=field)


def _run(main: Callable[[asyncio.Event], Awaitable[R]]) -> R:
    """Run ``main(stop)`` on a fresh loop (uvloop when installed); Ctrl-C or SIGTERM sets stop."""
    install_uvloop()

    async def runner() -> R:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        return await main(stop)

    return asyncio.run(runner())


@app.command("lobby")
def lobby_command(
    host: str = typer.Option("127.0.0.1", help="address to bind"),
    port: int = typer.Option(DEFAULT_LOBBY_PORT, "--port", "-p", help="UDP port"),
    duration: float | None = typer.Option(
        None, help="seconds to run, then exit (default: until Ctrl-C)"
    ),
    seed: int | None = typer.Option(None, help="seed of the contact sampling"),
) -> None:
    """Run the Silac info server: active games, contact nodes, heartbeats (types 32-35)."""
    address = _address(host, port, "--host")

    def ready(bound: Address) -> None:
        _echo(f"lobby on {format_hostport(bound)}")

    summary: LobbySummary = _run(
        lambda stop: run_lobby(
            address, out=_echo, duration=duration, seed=seed, ready=ready, stop=stop
        )
    )
    _echo(
        f"{summary.opened} games opened, {summary.closed} closed, "
        f"{summary.heartbeats} heartbeats, {summary.answered} requests answered"
    )


@app.command("peer")
def peer_command(
    lobby: str = typer.Option(..., help="HOST:PORT of the lobby"),
    host: str = typer.Option("127.0.0.1", help="IP to bind; other peers must reach it"),
    port: int = typer.Option(0, "--port", "-p", help="UDP port (0: any free port)"),
    duration: float | None = typer.Option(
        None, help="seconds to run, then leave (default: until Ctrl-C)"
    ),
    name: str | None = typer.Option(None, help="participant name (default: bot-PORT)"),
    seed: int | None = typer.Option(None, help="seed of the bot and the peer"),
) -> None:
    """Run one bot peer: find a game through the lobby (or host one), walk and gossip."""
    lobby_address = parse_hostport(lobby, field="--lobby")
    local = _address(host, port, "--host")
    summary: PeerSummary = _run(
        lambda stop: run_peer(
            lobby_address,
            out=_echo,
            host=local[0],
            port=local[1],
            name=name,
            duration=duration,
            seed=seed,
            stop=stop,
        )
    )
    role = "hosted" if summary.hosted else "joined"
    _echo(
        f"{role} game {summary.game_id:08x}; knew {summary.known_peers} peers; "
        f"{summary.updates_per_second:.0f} updates/s received, "
        f"{summary.bytes_per_second:.0f} B/s sent"
    )


@app.command("swarm")
def swarm_command(
    n: int = typer.Option(10, "-n", help="number of peers, 1..1000"),
    duration: float = typer.Option(10.0, help="seconds to run"),
    lobby: str | None = typer.Option(None, help="HOST:PORT of a lobby (default: start one)"),
    seed: int | None = typer.Option(None, help="seed of every bot, peer and lobby draw"),
    host: str = typer.Option("127.0.0.1", help="IP every peer binds"),
) -> None:
    """Run N bot peers in this process, each on its own UDP socket; print coverage and traffic."""
    lobby_address = None if lobby is None else parse_hostport(lobby, field="--lobby")
    summary: SwarmSummary = _run(
        lambda stop: run_swarm(
            n, out=_echo, lobby=lobby_address, host=host, duration=duration, seed=seed, stop=stop
        )
    )
    full = summary.full_knowledge_after
    _echo(f"peers joined: {summary.joined}/{summary.peers} ({summary.games} game(s))")
    _echo(f"coverage: mean {summary.coverage_mean:.3f}, min {summary.coverage_min:.3f}")
    _echo("full knowledge after: " + ("never" if full is None else f"{full:.2f} s"))
    _echo(f"window: {summary.window:.2f} s")
    _echo(f"avatar updates received: {summary.updates_per_second:.1f} /s per peer")
    _echo(f"messages originated: {summary.originated_per_second:.1f} /s per peer")
    _echo(
        f"upload: {summary.bytes_per_second:.0f} B/s per peer "
        f"({summary.bytes_per_second_with_headers:.0f} B/s with IPv4+UDP headers)"
    )


def main() -> None:
    """Run the sub-app alone; a library error becomes one line on stderr and exit status 2."""
    try:
        app()
    except LaglessError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
