"""``lagless gossip lobby|peer|swarm``: Silac (spec 002) on real UDP, thin commands over the apps.

``lobby`` runs the info server (spec 002 §2.11), ``peer`` one bot peer that finds its game through
a lobby, ``swarm`` many bot peers in one process with a summary of coverage and traffic. Errors
print one ``error: ...`` line and exit with status 2, whether run from the root app or as
``python -m lagless.cli.gossip``. The first SIGINT or SIGTERM ends every command with its summary
and exit status 130 or 143. ``lobby`` shows a live table of its games and traffic on a terminal.
"""

from __future__ import annotations

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
from lagless.cli.common import (
    bind_address,
    echo,
    exit_for,
    in_range,
    make_app,
    peer_address,
    run_app,
    run_until_signal,
    seconds,
    show,
)
from lagless.cli.live import LiveView, LobbyRates
from lagless.gossip.lobby import LobbyStatistics

MAX_PEERS: int = 1000

app = make_app(
    "Silac gossip P2P on real UDP: info server (lobby), a bot peer, a swarm of bot peers."
)


@app.command("lobby")
def lobby_command(
    host: str = typer.Option("127.0.0.1", "--host", help="name or IP to bind"),
    port: int = typer.Option(DEFAULT_LOBBY_PORT, "--port", "-p", help="UDP port"),
    duration: float | None = typer.Option(
        None, "--duration", help="seconds to run [default: until Ctrl-C]"
    ),
    seed: int | None = typer.Option(None, "--seed", help="seed of the contact sampling"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no live table"),
) -> None:
    """Run the Silac info server: active games, contact nodes, heartbeats (types 32-35)."""
    address = bind_address(host, port)
    seconds(duration, "--duration")
    view = LiveView(quiet=quiet)
    rates = LobbyRates()

    def ready(bound: Address) -> None:
        echo(f"lobby on {show(bound)}")

    def monitor(stats: LobbyStatistics) -> None:
        view.show(rates.table("gossip lobby", stats, 1.0))

    with view:
        summary: LobbySummary
        summary, signum = run_until_signal(
            lambda stop: run_lobby(
                address,
                out=echo,
                duration=duration,
                seed=seed,
                ready=ready,
                stop=stop,
                monitor=monitor if view.enabled else None,
            )
        )
    echo(
        f"{summary.opened} games opened, {summary.closed} closed, "
        f"{summary.heartbeats} heartbeats, {summary.answered} requests answered"
    )
    exit_for(signum)


@app.command("peer")
def peer_command(
    lobby: str = typer.Option(..., "--lobby", metavar="HOST:PORT", help="the lobby"),
    host: str = typer.Option(
        "127.0.0.1", "--host", help="name or IP to bind; other peers must reach it"
    ),
    port: int = typer.Option(0, "--port", "-p", help="UDP port [0: any free port]"),
    duration: float | None = typer.Option(
        None, "--duration", help="seconds to run, then leave [default: until Ctrl-C]"
    ),
    name: str | None = typer.Option(None, "--name", help="participant name [default: bot-PORT]"),
    seed: int | None = typer.Option(None, "--seed", help="seed of the bot and the peer"),
) -> None:
    """Run one bot peer: find a game through the lobby (or host one), walk and gossip."""
    lobby_address = peer_address(lobby, field="--lobby")
    local = bind_address(host, port)
    seconds(duration, "--duration")
    summary: PeerSummary
    summary, signum = run_until_signal(
        lambda stop: run_peer(
            lobby_address,
            out=echo,
            host=local[0],
            port=local[1],
            name=name,
            duration=duration,
            seed=seed,
            stop=stop,
        )
    )
    role = "hosted" if summary.hosted else "joined"
    echo(
        f"{role} game {summary.game_id:08x}; knew {summary.known_peers} peers; "
        f"{summary.updates_per_second:.0f} updates/s received, "
        f"{summary.bytes_per_second:.0f} B/s sent"
    )
    exit_for(signum)


@app.command("swarm")
def swarm_command(
    count: int = typer.Option(10, "--count", "-n", help=f"number of peers, 1..{MAX_PEERS}"),
    duration: float = typer.Option(10.0, "--duration", help="seconds to run"),
    lobby: str | None = typer.Option(
        None, "--lobby", metavar="HOST:PORT", help="a lobby to use [default: start one]"
    ),
    seed: int | None = typer.Option(None, "--seed", help="seed of every bot, peer, lobby draw"),
    host: str = typer.Option("127.0.0.1", "--host", help="name or IP every peer binds"),
) -> None:
    """Run N bot peers in this process, each on its own UDP socket; print coverage and traffic."""
    in_range(count, "--count", 1, MAX_PEERS)
    seconds(duration, "--duration")
    lobby_address = None if lobby is None else peer_address(lobby, field="--lobby")
    local = bind_address(host, 0)
    summary: SwarmSummary
    summary, signum = run_until_signal(
        lambda stop: run_swarm(
            count,
            out=echo,
            lobby=lobby_address,
            host=local[0],
            duration=duration,
            seed=seed,
            stop=stop,
        )
    )
    full = summary.full_knowledge_after
    echo(f"peers joined: {summary.joined}/{summary.peers} ({summary.games} game(s))")
    echo(f"coverage: mean {summary.coverage_mean:.3f}, min {summary.coverage_min:.3f}")
    echo("full knowledge after: " + ("never" if full is None else f"{full:.2f} s"))
    echo(f"window: {summary.window:.2f} s")
    echo(f"avatar updates received: {summary.updates_per_second:.1f} /s per peer")
    echo(f"messages originated: {summary.originated_per_second:.1f} /s per peer")
    echo(
        f"upload: {summary.bytes_per_second:.0f} B/s per peer "
        f"({summary.bytes_per_second_with_headers:.0f} B/s with IPv4+UDP headers)"
    )
    exit_for(signum)


def main() -> None:
    """Run the sub-app alone, in the root app's error style."""
    raise SystemExit(run_app(app))


if __name__ == "__main__":
    main()
