"""``lagless proxy``: a real-UDP link conditioner between two processes, with live counters.

Implements DESIGN.md "Layers" (cli: proxy) over :mod:`lagless.io.proxy`. The command parses flags,
converts them to SI once (``overrides_from_flags``), runs ``run_proxy`` and prints.

Decisions:
    * A start-up line ``proxy HOST:PORT -> HOST:PORT seed N`` is always printed and flushed, even
      with ``--quiet``: it carries the real port when ``--listen`` asks for port 0 and the seed that
      repeats the run (``test_proxy.py::test_proxy_between_two_processes``).
    * ``--quiet`` (or a non-terminal stdout) hides only the live counters; the summary table is
      always printed on exit, whether by ``--duration`` or Ctrl-C/SIGTERM; a signal then sets
      the exit status to 130 or 143 (``test_proxy.py::test_proxy_ipv6_stops_on_sigint``,
      ``tests/cli/test_signals.py``).
    * Errors (bad address, unknown profile, out-of-range flag, bind failure) are ``ConfigError``;
      the root app prints them as one line on stderr with exit status 2
      (``test_proxy.py::test_cli_errors_are_one_line``).
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from lagless.cli.common import exit_for, run_until_signal, seconds
from lagless.io.proxy import (
    ProxyStats,
    build_proxy_config,
    describe,
    overrides_from_flags,
    run_proxy,
)
from lagless.netsim import Fate

_REFRESH_HZ = 4.0  # live-counter refreshes per second


def stats_table(stats: ProxyStats, *, title: str) -> Table:
    """Render a snapshot as a table: one row per counter, one column per direction.

    Args:
        stats: the snapshot to show.
        title: the table title.

    Returns:
        A rich table: datagrams and bytes in and forwarded, drops by reason, pending. Narrow, so
        it fits an 80-column terminal.
    """
    table = Table(
        title=f"{title}: {describe(stats)}, {stats.elapsed:.1f} s, "
        f"{stats.clients} clients ({stats.clients_seen} seen)"
    )
    table.add_column("counter")
    table.add_column("up (client→server)", justify="right")
    table.add_column("down (server→client)", justify="right")

    up, down = stats.up, stats.down
    rows: list[tuple[str, int, int]] = [
        ("in", up.received_datagrams, down.received_datagrams),
        ("in bytes", up.received_bytes, down.received_bytes),
        ("forwarded", up.forwarded_datagrams, down.forwarded_datagrams),
        ("fwd bytes", up.forwarded_bytes, down.forwarded_bytes),
        ("duplicated", up.duplicated_datagrams, down.duplicated_datagrams),
    ]
    rows += [(f.value, up.dropped[f], down.dropped[f]) for f in Fate if f is not Fate.DELIVERED]
    rows += [
        ("overflow", up.overflow_datagrams, down.overflow_datagrams),
        ("rejected", up.rejected_datagrams, down.rejected_datagrams),
        ("send errors", up.send_errors, down.send_errors),
        ("pending", up.pending, down.pending),
    ]
    for name, up_value, down_value in rows:
        table.add_row(name, str(up_value), str(down_value))
    return table


def proxy(
    listen: str = typer.Option(
        ..., "--listen", metavar="HOST:PORT", help="address clients send to ([IPV6]:PORT)"
    ),
    forward: str = typer.Option(
        ..., "--forward", metavar="HOST:PORT", help="the server's address ([IPV6]:PORT)"
    ),
    profile: str | None = typer.Option(
        None, help="network profile from lagless.netsim (e.g. umts, lte); default: clean link"
    ),
    latency_ms: float | None = typer.Option(None, help="one-way latency per direction (ms)"),
    jitter_ms: float | None = typer.Option(None, help="jitter amount per direction (ms)"),
    loss: float | None = typer.Option(None, help="loss probability per direction, 0..1"),
    duplicate: float | None = typer.Option(None, help="duplication probability, 0..1"),
    reorder: float | None = typer.Option(None, help="reorder probability, 0..1"),
    reorder_delay_ms: float | None = typer.Option(None, help="extra delay when reordered (ms)"),
    bandwidth_kbps: float | None = typer.Option(
        None, help="bottleneck rate per direction (kbit/s)"
    ),
    seed: int | None = typer.Option(None, help="root seed of the link randomness"),
    duration: float | None = typer.Option(None, help="run this many seconds, then exit"),
    quiet: bool = typer.Option(
        False, "--quiet", "-q", help="no live counters (summary still printed)"
    ),
) -> None:
    """Forward UDP between clients and a server through a simulated link (loss, delay, ...)."""
    seconds(duration, "--duration", zero=True)
    overrides = overrides_from_flags(
        latency_ms=latency_ms,
        jitter_ms=jitter_ms,
        loss=loss,
        duplicate=duplicate,
        reorder=reorder,
        reorder_delay_ms=reorder_delay_ms,
        bandwidth_kbps=bandwidth_kbps,
    )
    config = build_proxy_config(listen, forward, profile=profile, overrides=overrides, seed=seed)
    console = Console()
    live_wanted = not quiet and console.is_terminal
    live = Live(console=console, refresh_per_second=_REFRESH_HZ, transient=True)

    def on_start(stats: ProxyStats) -> None:
        print(describe(stats), flush=True)
        if live_wanted:
            live.start()

    def on_tick(stats: ProxyStats) -> None:
        if live_wanted:
            live.update(stats_table(stats, title="live"))

    try:
        final, signum = run_until_signal(
            lambda stop: run_proxy(
                config,
                duration=duration,
                on_tick=on_tick,
                on_start=on_start,
                tick_interval=1.0 / _REFRESH_HZ,
                stop=stop,
            )
        )
    finally:
        if live_wanted:
            live.stop()
    console.print(stats_table(final, title="summary"))
    sys.stdout.flush()
    exit_for(signum)
