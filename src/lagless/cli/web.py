"""``lagless web``: the demo's arena for browsers (WebSocket) and UDP players, in one match.

A thin command over ``lagless.web.serve``: ``lagless web --port 8080`` serves the page and its
WebSocket links on TCP port 8080, WebTransport sessions on UDP port 8080 (``--wt-port``), and
the demo's UDP server on ``--udp-port`` (so ``lagless demo --connect HOST:UDP_PORT`` players join
the same match); open ``http://HOST:8080/`` in a browser to play.

Decisions:
    * The table and the signals follow ``lagless demo --server`` (one row a second, rich on a
      terminal, nothing with ``--quiet``; SIGINT / SIGTERM end it with its summary line and exit
      status 130 / 143).
    * The printed URL names the bound host, or ``localhost`` when bound to a wildcard address.
    * WebTransport is on unless ``--no-webtransport``; without ``aioquic`` installed it is off
      with a one-line note (browsers use WebSocket then).
    * ``--profile`` puts the ``lagless proxy`` link models in front of the WebTransport sessions
      (like ``lagless demo --server --profile``); WebSocket links run over TCP and are not
      conditioned.
"""

from __future__ import annotations

from importlib.util import find_spec

import typer

from lagless.cli.common import bind_address, echo, exit_for, in_range, run_until_signal, seconds
from lagless.cli.demo import _Table
from lagless.errors import ConfigError

_EXTRAS = (("websockets", "websockets"), ("pymunk", "pymunk"))  # (module, package)


def _require_extras() -> None:
    missing = [name for module, name in _EXTRAS if find_spec(module) is None]
    if missing:
        raise ConfigError(
            f"lagless web needs {' and '.join(missing)}: pip install 'lagless[web,physics]'"
        )


def _hostport(host: str, port: int) -> str:
    shown = "localhost" if host in ("0.0.0.0", "::") else host
    return f"{f'[{shown}]' if ':' in shown else shown}:{port}"


def web(
    host: str = typer.Option("0.0.0.0", "--host", help="address to serve on (page and UDP)"),
    port: int = typer.Option(8080, "--port", "-p", help="TCP port of the page and WebSocket"),
    udp_port: int = typer.Option(40600, "--udp-port", help="UDP port for lagless demo --connect"),
    wt_port: int | None = typer.Option(
        None, "--wt-port", help="UDP port of WebTransport sessions (default: --port's number)"
    ),
    no_webtransport: bool = typer.Option(
        False, "--no-webtransport", help="serve WebSocket links only"
    ),
    profile: str = typer.Option(
        "none", "--profile", help="network profile in front of WebTransport: none, lte, umts, ..."
    ),
    bots: int = typer.Option(16, "--bots", help="bots on the server (0..48)"),
    seed: int = typer.Option(1, "--seed", help="seed of the match (bots)"),
    duration: float | None = typer.Option(None, "--duration", help="seconds to run"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no live table"),
) -> None:
    """Serve the demo's car arena to browsers (open the printed URL) and UDP players."""
    _require_extras()
    from lagless.demo.arena import MAX_BOTS
    from lagless.web.serve import WebStatus, serve_web, webtransport_available

    in_range(bots, "--bots", 0, MAX_BOTS)
    seconds(duration, "--duration")
    http = bind_address(host, port)
    udp = bind_address(host, udp_port)
    webtransport = None
    if not no_webtransport:
        if webtransport_available():
            webtransport = bind_address(host, port if wt_port is None else wt_port)
        else:
            echo("web: WebTransport off (pip install aioquic to offer it); WebSocket only")
    table = _Table(
        quiet, ("t_s", "players", "browsers", "bots", "tick_ms", "tick_p99_ms", "kBps_per_browser")
    )

    def on_start(status: WebStatus) -> None:
        wt = status.webtransport_address
        offer = "" if wt is None else f", WebTransport on UDP {wt[1]}"
        if wt is not None and status.profile != "none":
            offer += f" through profile {status.profile}"
        echo(
            f"web: open http://{_hostport(*status.http_address)}/ in a browser{offer}; UDP "
            f"players: lagless demo --connect {_hostport(*status.udp_address)} "
            f"({status.bots} bots)"
        )

    def report(status: WebStatus) -> None:
        table.row(
            (
                f"{status.elapsed:.0f}",
                str(status.players),
                str(status.browsers),
                str(status.bots),
                f"{status.tick.avg_ms:.2f}",
                f"{status.tick.p99_ms:.2f}",
                f"{status.kbps_per_browser:.2f}",
            )
        )

    try:
        final, signum = run_until_signal(
            lambda stop: serve_web(
                http,
                udp,
                bots=bots,
                seed=seed,
                duration=duration,
                stop=stop,
                on_start=on_start,
                report=report,
                webtransport=webtransport,
                profile=profile,
            )
        )
    finally:
        table.close()
    echo(
        f"web: {final.elapsed:.1f} s, {final.players} players ({final.browsers} browsers), "
        f"{final.bots} bots, tick {final.tick.avg_ms:.2f} ms avg, {final.tick.p99_ms:.2f} ms p99, "
        f"{final.kbps_per_browser:.2f} kB/s per browser (payload), "
        f"{final.frames_dropped} snapshot frames dropped"
    )
    exit_for(signum)
