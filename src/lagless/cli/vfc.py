"""``lagless vfc``: the VFC server and bot clients over real UDP (spec 001 §6.3, issue 5 part 3).

Thin typer commands: parse, call ``lagless.apps.vfc``, print (flushed per line, so a pipe sees
each one). The first SIGINT or SIGTERM ends either command with its summary and exit status 130
or 143. A bad argument prints one ``error:`` line and exits with status 2; bots that cannot reach
the server print one ``error:`` line and exit with 1. The transport's INSECURE warning is printed
once per process, not once per bot. Register with ``app.add_typer(vfc.app, name="vfc")``.
"""

from __future__ import annotations

import logging

import typer

from lagless.apps.serve import ClientStatus
from lagless.apps.vfc import ServerLost, run_bots, serve_vfc
from lagless.cli.common import (
    bind_address,
    echo,
    exit_for,
    fail,
    in_range,
    make_app,
    peer_address,
    run_until_signal,
    seconds,
    show,
)
from lagless.cli.live import LiveView, clients_table
from lagless.errors import ConfigError

DEFAULT_PORT: int = 40200  # UDP port of ``lagless vfc serve`` (gossip lobby: 40100, serve: 40000)
MAX_BOTS: int = 256

app = make_app("VFC4FPS interest management over real UDP (spec 001).")


class _Once(logging.Filter):
    """Lets each distinct log message through once."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self._seen:
            return False
        self._seen.add(message)
        return True


@app.command("serve")
def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="name or IP to bind"),
    port: int = typer.Option(DEFAULT_PORT, "--port", "-p", help="UDP port"),
    duration: float | None = typer.Option(
        None, "--duration", help="seconds to run [default: until Ctrl-C]"
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no live table of clients"),
) -> None:
    """Run a VFC server (insecure transport; development and lab only)."""
    try:
        address = bind_address(host, port)
        seconds(duration, "--duration")
    except ConfigError as exc:
        fail(str(exc))
    view = LiveView(quiet=quiet)

    def monitor(clients: list[ClientStatus]) -> None:
        view.show(clients_table("vfc serve", clients))

    with view:
        summary, signum = run_until_signal(
            lambda stop: serve_vfc(
                address,
                out=echo,
                duration=duration,
                ready=lambda bound: echo(f"vfc server on {show(bound)}"),
                stop=stop,
                monitor=monitor,
            )
        )
    echo(f"{summary.joined} joined; {summary.update_bytes} update bytes sent")
    exit_for(signum)


@app.command("bots")
def bots_command(
    server: str = typer.Argument(
        f"127.0.0.1:{DEFAULT_PORT}", metavar="HOST:PORT", help="the VFC server"
    ),
    count: int = typer.Option(8, "--count", "-n", help=f"number of bots, 1..{MAX_BOTS}"),
    map_name: str = typer.Option("wcd", "--map", help="a map of the thesis's Table 5.4"),
    duration: float = typer.Option(10.0, "--duration", help="seconds to run"),
    seed: int = typer.Option(0, "--seed", help="mobility seed"),
) -> None:
    """Connect N bots to a VFC server and move them (spread or clustered by map)."""
    once = _Once()
    transport_log = logging.getLogger("lagless.transport")
    transport_log.addFilter(once)
    try:
        address = peer_address(server, field="the server address")
        in_range(count, "--count", 1, MAX_BOTS)
        seconds(duration, "--duration")
        summary, signum = run_until_signal(
            lambda stop: run_bots(
                address,
                count=count,
                map_name=map_name,
                duration=duration,
                out=echo,
                seed=seed,
                stop=stop,
            )
        )
    except ConfigError as exc:
        fail(str(exc))
    except ServerLost as exc:
        fail(str(exc), status=1)
    finally:
        transport_log.removeFilter(once)
    exit_for(signum)
    if summary.joined < count:
        fail(f"only {summary.joined} of {count} bots were connected at the end", status=1)
