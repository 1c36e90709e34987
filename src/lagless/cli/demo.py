"""``lagless demo``: a playable car arena with bots, in a window or headless, local or split.

A thin command over ``lagless.demo`` (pygame-ce, the ``demo`` extra, is imported only when a mode
needs it):

* ``lagless demo``: server with bots and the player in one process on the simulator, in a
  pygame-ce window; without a display (no ``DISPLAY``/``WAYLAND_DISPLAY``/``SDL_VIDEODRIVER``
  on Linux) or with ``--headless`` the same match with the autopilot as the player, a live table
  and ``--out DIR/last-frame.png`` and ``DIR/summary.json`` at the end.
* ``lagless demo --server``: the server with bots on real UDP (``--host``/``--port``), behind a
  proxy with ``--profile``; ``lagless demo --connect HOST:PORT``: a player for it (window, or
  headless writing the same two files).

Decisions:
    * The headless run is paced to the wall clock unless ``--fast``; its default duration is 20 s;
      the window and the server run until closed or ``--duration``.
    * The live table is a rich table rewritten once a second on a terminal, one plain line a
      second otherwise, nothing with ``--quiet``; the closing summary line is always printed.
    * SIGINT / SIGTERM end any mode with its summary (files written) and exit status 130 / 143.
    * ``--server`` takes ``--metrics HOST:PORT`` and ``--log-format json`` (issue 16 part 3);
      its metrics are the transport's (connections, RTT and loss gauge histograms, bytes and
      packets in/out, drops by reason), read at scrape time on the loop's thread from the
      server ``serve_match`` hands over (``on_serving``), plus players, bots, ticks and
      snapshots, and the tick times and per-client rate of the once-a-second `ServerStatus`.
      Both options are an error without ``--server``.
    * ``--server`` shuts down gracefully: every client is told ``server shutting down`` (a
      physics ``Goodbye``) before its disconnect; ``--connect`` ends when its connection does
      and prints why.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from lagless.apps.serve import SHUTDOWN_REASON, metrics_address
from lagless.cli.common import (
    LOG_FORMAT_OPTION,
    METRICS_OPTION,
    echo,
    exit_for,
    in_range,
    peer_address,
    run_until_signal,
    seconds,
    show,
)
from lagless.errors import ConfigError
from lagless.io.logs import EventLog, LogFormat, check_log_format, install_json_logging

if TYPE_CHECKING:
    from lagless.demo.arena import TickStats
    from lagless.demo.net import MatchServer, ServerStatus, UdpPlayer
    from lagless.demo.session import LiveStatus
    from lagless.io.metrics import ServerMetrics

_HEADLESS_DURATION = 20.0  # s
_EXTRAS = (("pygame", "pygame-ce"), ("pymunk", "pymunk"))  # (module, package)


def require_extras() -> None:
    """Check pygame-ce and pymunk are installed before a match starts (it draws at its end).

    Raises:
        ConfigError: Naming the missing packages and the extras that bring them.
    """
    missing = [name for module, name in _EXTRAS if find_spec(module) is None]
    if missing:
        raise ConfigError(
            f"lagless demo needs {' and '.join(missing)}: pip install 'lagless[demo,physics]'"
        )


def has_display() -> bool:
    """Return whether a window can open (SDL picks a video driver, or the platform has one)."""
    if sys.platform in ("win32", "darwin"):
        return True
    return any(os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"))


class _Table:
    """The live table: rich on a terminal, plain lines otherwise, nothing when quiet."""

    def __init__(self, quiet: bool, columns: tuple[str, ...]) -> None:
        self._quiet = quiet
        self._columns = columns
        self._live: Live | None = None
        if not quiet and sys.stdout.isatty():
            self._live = Live(self._table(()), console=Console(), auto_refresh=False)
            self._live.start()

    def _table(self, row: tuple[str, ...]) -> Table:
        table = Table()
        for name in self._columns:
            table.add_column(name, justify="right")
        if row:
            table.add_row(*row)
        return table

    def row(self, values: tuple[str, ...]) -> None:
        if self._quiet:
            return
        if self._live is not None:
            self._live.update(self._table(values), refresh=True)
        else:
            echo("  ".join(f"{n}={v}" for n, v in zip(self._columns, values, strict=True)))

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()


_PLAYER_COLUMNS = (
    "t_s",
    "cars",
    "tick_ms",
    "tick_p99_ms",
    "rtt_ms",
    "loss_%",
    "in_kBps",
    "out_kBps",
)


def _player_row(t: float, status: LiveStatus, tick: TickStats | None) -> tuple[str, ...]:
    avg, p99 = ("-", "-") if tick is None else (f"{tick.avg_ms:.2f}", f"{tick.p99_ms:.2f}")
    return (
        f"{t:.0f}",
        str(status.cars),
        avg,
        p99,
        f"{status.rtt_ms:.0f}",
        f"{100.0 * status.loss:.1f}",
        f"{status.kbps_in:.2f}",
        f"{status.kbps_out:.2f}",
    )


def demo(
    bots: int = typer.Option(16, "--bots", help="bots on the server (0..48)"),
    headless: bool = typer.Option(False, "--headless", help="no window: bots only, table, files"),
    duration: float | None = typer.Option(
        None, "--duration", help="seconds to run (headless default 20; else until closed)"
    ),
    out: Path = typer.Option(Path("demo-out"), "--out", help="headless: directory for the files"),
    profile: str | None = typer.Option(
        None, "--profile", help="network profile: none, wifi, lte, umts, gprs, ... (default lte)"
    ),
    model: str = typer.Option("dr+0.15rtt", "--model", help="display model of the cars"),
    seed: int = typer.Option(1, "--seed", help="seed of the match (bots, links)"),
    fast: bool = typer.Option(False, "--fast", help="headless: run faster than real time"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no live table"),
    server: bool = typer.Option(False, "--server", help="serve the arena with bots over UDP"),
    connect: str | None = typer.Option(None, "--connect", help="HOST:PORT of a --server"),
    host: str = typer.Option("0.0.0.0", "--host", help="--server: address to serve on"),
    port: int = typer.Option(40600, "--port", "-p", help="--server: UDP port (0 picks one)"),
    metrics: str | None = METRICS_OPTION,
    log_format: str = LOG_FORMAT_OPTION,
) -> None:
    """Play a car arena with bots; headless, it writes last-frame.png and summary.json."""
    require_extras()
    from lagless.demo.arena import MAX_BOTS, view_name
    from lagless.demo.match import check_profile

    in_range(bots, "--bots", 0, MAX_BOTS)
    seconds(duration, "--duration")
    view_name(model)
    if server and connect is not None:
        raise ConfigError("--server and --connect exclude each other")
    fmt = check_log_format(log_format)
    if not server and (metrics is not None or fmt != "text"):
        raise ConfigError("--metrics and --log-format go with --server")
    if server:
        ops = _Ops(metrics_address(metrics), fmt)
        _serve(bots, seed, check_profile(profile or "none"), duration, host, port, quiet, ops)
    elif connect is not None:
        if profile is not None:
            raise ConfigError("--profile goes on the --server side; --connect uses its link")
        address = peer_address(connect, field="--connect")
        _connect(address, seed, model, headless, duration, out, quiet)
    else:
        chosen = check_profile(profile or "lte")
        if headless or not has_display():
            if not headless:
                echo("no display: running headless (pass --headless to say so)")
            _headless(bots, seed, chosen, model, duration, out, fast, quiet)
        else:
            _window(bots, seed, chosen, model, duration)


def _summary_line(summary: dict[str, object], out: Path) -> None:
    if "server_tick_ms_avg" in summary:
        who = f"{summary['players']} player + {summary['bots']} bots"
        tick = (
            f"server tick {summary['server_tick_ms_avg']} ms avg, "
            f"{summary['server_tick_ms_p99']} ms p99; "
        )
    else:
        who, tick = f"client with {summary['cars_shown']} cars shown", ""
    ended = summary.get("end_reason")
    why = "" if ended is None else f"ended: {ended}; "
    echo(
        f"demo: {who}, {summary['duration_s']} s, {tick}client {summary['client_kBps_avg']} "
        f"kB/s in (with IP/UDP headers); {why}wrote {out / 'last-frame.png'} and "
        f"{out / 'summary.json'}"
    )


def _headless(
    bots: int,
    seed: int,
    profile: str,
    model: str,
    duration: float | None,
    out: Path,
    fast: bool,
    quiet: bool,
) -> None:
    from lagless.demo.headless import run_headless

    table = _Table(quiet, _PLAYER_COLUMNS)
    try:
        result = run_headless(
            bots=bots,
            seed=seed,
            profile=profile,
            model=model,
            duration=duration if duration is not None else _HEADLESS_DURATION,
            out=out,
            realtime=not fast,
            report=lambda t, status, tick: table.row(_player_row(t, status, tick)),
        )
    finally:
        table.close()
    _summary_line(result.summary, out)
    exit_for(result.signum)


def _window(bots: int, seed: int, profile: str, model: str, duration: float | None) -> None:
    from lagless.demo.match import SimMatch
    from lagless.demo.window import run_window

    match = SimMatch(bots=bots, seed=seed, profile=profile, model=model, autopilot=False)
    start = time.monotonic()
    frames = run_window(
        match,
        lambda: match.advance(time.monotonic() - start),
        duration=duration,
        title=f"lagless demo: {bots} bots",
    )
    tick = match.tick_stats()
    echo(f"demo: {frames} frames, server tick {tick.avg_ms:.2f} ms avg, {tick.p99_ms:.2f} ms p99")


@dataclass(frozen=True, slots=True)
class _Ops:
    """``--metrics`` and ``--log-format`` of ``--server``."""

    metrics: tuple[str, int] | None
    log_format: LogFormat


def _serve(
    bots: int,
    seed: int,
    profile: str,
    duration: float | None,
    host: str,
    port: int,
    quiet: bool,
    ops: _Ops,
) -> None:
    from lagless.cli.common import bind_address
    from lagless.demo.net import serve_match

    address = bind_address(host, port)
    log = EventLog("lagless.demo", ops.log_format, echo)
    table = _Table(
        quiet or log.json, ("t_s", "players", "bots", "tick_ms", "tick_p99_ms", "kBps_per_client")
    )
    latest: list[ServerStatus] = []
    running: list[MatchServer] = []
    exporter = None

    def on_start(status: ServerStatus) -> None:
        nonlocal exporter
        log.info(
            "serving",
            f"demo server on {show(status.address)} ({status.bots} bots, profile {profile})",
            address=show(status.address),
            bots=status.bots,
            profile=profile,
        )
        if ops.metrics is not None:
            exporter = _demo_metrics(running[0], latest, ops.metrics)
            if exporter.address is not None:
                at = show(exporter.address)
                log.info("metrics", f"metrics on http://{at}/metrics", address=at)

    def report(status: ServerStatus) -> None:
        latest[:] = [status]
        if log.json and not quiet:
            log.info(
                "status",
                f"{status.players} players, {status.bots} bots, tick {status.tick.avg_ms:.2f} ms",
                elapsed_s=round(status.elapsed, 3),
                players=status.players,
                bots=status.bots,
                tick_ms=round(status.tick.avg_ms, 3),
                tick_p99_ms=round(status.tick.p99_ms, 3),
                kbps_per_client=round(status.kbps_per_client, 3),
            )
        table.row(
            (
                f"{status.elapsed:.0f}",
                str(status.players),
                str(status.bots),
                f"{status.tick.avg_ms:.2f}",
                f"{status.tick.p99_ms:.2f}",
                f"{status.kbps_per_client:.2f}",
            )
        )

    def on_shutdown(clients: int) -> None:
        log.info(
            "shutdown",
            f"shutting down: telling {clients} clients {SHUTDOWN_REASON!r}",
            clients=clients,
            reason=SHUTDOWN_REASON,
        )

    remove = install_json_logging() if log.json else None
    try:
        final, signum = run_until_signal(
            lambda stop: serve_match(
                address,
                bots=bots,
                seed=seed,
                profile=profile,
                duration=duration,
                stop=stop,
                on_start=on_start,
                report=report,
                on_serving=running.append,
                goodbye=SHUTDOWN_REASON,
                on_shutdown=on_shutdown,
            )
        )
        log.info(
            "summary",
            f"demo server: {final.elapsed:.1f} s, {final.players} players, {final.bots} bots, "
            f"tick {final.tick.avg_ms:.2f} ms avg, {final.tick.p99_ms:.2f} ms p99 "
            f"(CPU {final.cpu.avg_ms:.2f} ms avg, {final.cpu.p99_ms:.2f} ms p99), "
            f"{final.kbps_per_client:.2f} kB/s per client",
            elapsed_s=round(final.elapsed, 3),
            players=final.players,
            bots=final.bots,
            tick_ms=round(final.tick.avg_ms, 3),
            tick_p99_ms=round(final.tick.p99_ms, 3),
            cpu_ms=round(final.cpu.avg_ms, 3),
            kbps_per_client=round(final.kbps_per_client, 3),
            signal=signum,
        )
    finally:
        table.close()
        if exporter is not None:
            exporter.close()
        if remove is not None:
            remove()
    exit_for(signum)


def _demo_metrics(
    match: MatchServer, latest: list[ServerStatus], address: tuple[str, int]
) -> ServerMetrics:
    """Start the demo server's metrics endpoint: the transport and the match read live on the
    loop's thread at each scrape, the tick times from the last once-a-second status."""
    from lagless.apps.ops import demo_families, transport_families
    from lagless.io.metrics import OwnerThread, ServerMetrics

    exporter = ServerMetrics(OwnerThread.for_loop(asyncio.get_running_loop()))
    exporter.add_builder(
        lambda: [
            # the physics server keeps the transport's connection events: no opened/closed counts
            *transport_families(match.server.server.transport, None, match.endpoint.statistics()),
            *demo_families(match.server, latest[-1] if latest else None),
        ]
    )
    exporter.start(address)
    return exporter


def _connect(
    address: tuple[str, int],
    seed: int,
    model: str,
    headless: bool,
    duration: float | None,
    out: Path,
    quiet: bool,
) -> None:
    from lagless.demo.net import UdpPlayer

    window = not headless and has_display()
    player = UdpPlayer(address, seed=seed, model=model, autopilot=not window)
    try:
        if window:
            from lagless.demo.window import run_window

            run_window(player, player.advance, duration=duration, title="lagless demo (client)")
        else:
            _connect_headless(player, duration, out, quiet)
    finally:
        player.close()


def _connect_headless(player: UdpPlayer, duration: float | None, out: Path, quiet: bool) -> None:
    from lagless.demo.headless import run_client_headless

    table = _Table(quiet, _PLAYER_COLUMNS)
    try:
        result = run_client_headless(
            player,
            duration=duration if duration is not None else _HEADLESS_DURATION,
            out=out,
            report=lambda t, status: table.row(_player_row(t, status, None)),
        )
    finally:
        table.close()
    _summary_line(result.summary, out)
    exit_for(result.signum)
