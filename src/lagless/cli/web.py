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
    * Operations (issue 16 part 3, docs/operations.md), as ``lagless demo --server``:
      ``--metrics HOST:PORT`` (the UDP players' transport families, the match's, and the
      browser links', `lagless.apps.ops.web_families`, read on the loop's thread at scrape
      time) and ``--log-format json`` (``serving``, ``metrics``, ``client_connected`` and
      ``client_disconnected`` per player, ``status`` a second, ``shutdown``, ``summary``; the
      table is off). In text mode the output is what it always was, plus the ``shutdown``
      line; players joining and leaving are logged in JSON mode only, as the table counts them.
    * Graceful shutdown: on the first SIGINT / SIGTERM (or the end of ``--duration``) every
      player, browser or UDP, is told ``server shutting down`` (`lagless.web.serve`); a second
      signal during that wait (1 s at most) cuts it short.
"""

from __future__ import annotations

import asyncio
from importlib.util import find_spec
from typing import TYPE_CHECKING

import typer

from lagless.apps.serve import SHUTDOWN_REASON, metrics_address
from lagless.cli.common import (
    LOG_FORMAT_OPTION,
    METRICS_OPTION,
    bind_address,
    echo,
    exit_for,
    in_range,
    run_until_signal,
    seconds,
    show,
)
from lagless.cli.demo import _Table
from lagless.errors import ConfigError
from lagless.io.logs import EventLog, check_log_format, install_json_logging

if TYPE_CHECKING:  # websockets and pymunk are checked for first (_require_extras)
    from lagless.io.metrics import ServerMetrics
    from lagless.web.serve import WebServers, WebStatus

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


def _status_fields(status: WebStatus) -> dict[str, object]:
    """The JSON fields of a status or summary record (seconds, ms, kB/s)."""
    return {
        "elapsed_s": round(status.elapsed, 3),
        "players": status.players,
        "browsers": status.browsers,
        "bots": status.bots,
        "tick_ms": round(status.tick.avg_ms, 3),
        "tick_p99_ms": round(status.tick.p99_ms, 3),
        "kbps_per_browser": round(status.kbps_per_browser, 3),
    }


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
    metrics: str | None = METRICS_OPTION,
    log_format: str = LOG_FORMAT_OPTION,
) -> None:
    """Serve the demo's car arena to browsers (open the printed URL) and UDP players.

    SIGTERM (or SIGINT) shuts it down gracefully: every browser and UDP player is told
    "server shutting down" before its link closes; the exit status is 143 (130).
    """
    _require_extras()
    from lagless.demo.arena import MAX_BOTS
    from lagless.physics.server import CarJoined, CarLeft
    from lagless.web.hybrid import LINK_CONNECTION_BASE
    from lagless.web.serve import serve_web, webtransport_available

    in_range(bots, "--bots", 0, MAX_BOTS)
    seconds(duration, "--duration")
    fmt = check_log_format(log_format)
    metrics_at = metrics_address(metrics)
    http = bind_address(host, port)
    udp = bind_address(host, udp_port)
    webtransport = None
    wt_missing = not no_webtransport and not webtransport_available()
    if not no_webtransport and not wt_missing:
        webtransport = bind_address(host, port if wt_port is None else wt_port)
    log = EventLog("lagless.web", fmt, echo)
    table = _Table(
        quiet or log.json,
        ("t_s", "players", "browsers", "bots", "tick_ms", "tick_p99_ms", "kBps_per_browser"),
    )
    running: list[WebServers] = []
    latest: list[WebStatus] = []
    exporter: ServerMetrics | None = None

    def on_start(status: WebStatus) -> None:
        nonlocal exporter
        wt = status.webtransport_address
        offer = "" if wt is None else f", WebTransport on UDP {wt[1]}"
        if wt is not None and status.profile != "none":
            offer += f" through profile {status.profile}"
        page = f"http://{_hostport(*status.http_address)}/"
        log.info(
            "serving",
            f"web: open {page} in a browser{offer}; UDP "
            f"players: lagless demo --connect {_hostport(*status.udp_address)} "
            f"({status.bots} bots)",
            url=page,
            address=show(status.http_address),
            udp_address=show(status.udp_address),
            webtransport_address=None if wt is None else show(wt),
            profile=status.profile,
            bots=status.bots,
        )
        if metrics_at is not None:
            exporter = _web_metrics(running[0], latest, metrics_at)
            if exporter.address is not None:
                at = show(exporter.address)
                log.info("metrics", f"web: metrics on http://{at}/metrics", address=at)

    def report(status: WebStatus) -> None:
        latest[:] = [status]
        if log.json and not quiet:
            log.info(
                "status",
                f"{status.players} players ({status.browsers} browsers), {status.bots} bots, "
                f"tick {status.tick.avg_ms:.2f} ms",
                **_status_fields(status),
            )
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

    def on_event(event: object) -> None:
        if not log.json or not isinstance(event, CarJoined | CarLeft):
            return
        cid = event.connection_id
        kind = "browser" if cid >= LINK_CONNECTION_BASE else "udp"
        if isinstance(event, CarJoined):
            log.info(
                "client_connected",
                f"{kind} player {cid} joined (car {event.car_id})",
                client=cid,
                car=event.car_id,
                kind=kind,
            )
        else:
            log.info(
                "client_disconnected",
                f"{kind} player {cid} left (car {event.car_id})",
                client=cid,
                car=event.car_id,
                kind=kind,
            )

    cut = asyncio.Event()  # set by a signal during the shutdown (run_until_signal)

    async def main(stop: asyncio.Event) -> WebStatus:
        def on_shutdown(clients: int) -> None:
            stop.set()  # from now on any signal cuts the wait short
            log.info(
                "shutdown",
                f"web: shutting down: telling {clients} clients {SHUTDOWN_REASON!r}",
                clients=clients,
                reason=SHUTDOWN_REASON,
            )

        return await serve_web(
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
            on_serving=running.append,
            on_event=on_event,
            goodbye=SHUTDOWN_REASON,
            on_shutdown=on_shutdown,
            cut=cut,
        )

    remove = install_json_logging() if log.json else None
    try:
        if wt_missing:
            log.warning(
                "webtransport_off",
                "web: WebTransport off (pip install aioquic to offer it); WebSocket only",
            )
        final, signum = run_until_signal(main, cut=cut)
        log.info(
            "summary",
            f"web: {final.elapsed:.1f} s, {final.players} players ({final.browsers} browsers), "
            f"{final.bots} bots, tick {final.tick.avg_ms:.2f} ms avg, "
            f"{final.tick.p99_ms:.2f} ms p99, "
            f"{final.kbps_per_browser:.2f} kB/s per browser (payload), "
            f"{final.frames_dropped} snapshot frames dropped",
            **_status_fields(final),
            frames_dropped=final.frames_dropped,
            signal=signum,
        )
    finally:
        table.close()
        if exporter is not None:
            exporter.close()
        if remove is not None:
            remove()
    exit_for(signum)


def _web_metrics(
    servers: WebServers, latest: list[WebStatus], address: tuple[str, int]
) -> ServerMetrics:
    """Start the web server's metrics endpoint: the UDP transport, the match and the browser
    links read live on the loop's thread at each scrape, the tick times from the last status."""
    from lagless.apps.ops import transport_families, web_families
    from lagless.io.metrics import OwnerThread, ServerMetrics

    exporter = ServerMetrics(OwnerThread.for_loop(asyncio.get_running_loop()))
    exporter.add_builder(
        lambda: [
            # the physics server keeps the transport's connection events: no opened/closed counts
            *transport_families(servers.match.hub, None, servers.endpoint.statistics()),
            *web_families(servers.match, latest[-1] if latest else None),
        ]
    )
    exporter.start(address)
    return exporter
