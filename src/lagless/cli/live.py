"""The live view of ``serve``, ``vfc serve`` and ``gossip lobby``: a compact table, once a second.

On a terminal the table (clients with RTT, loss and kB/s in each direction, or the lobby's games
and traffic) is redrawn in place once a second by ``rich.live`` below the event lines; it is off
with ``--quiet`` and when stdout is not a terminal, where only the event lines and the summary
are printed (``tests/cli/test_live.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table

from lagless.apps.serve import ClientStatus
from lagless.gossip.lobby import LobbyStatistics
from lagless.io.udp import format_hostport

MAX_ROWS: int = 20  # clients listed; the rest are counted in the caption


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000.0:.1f}"


def _percent(fraction: float | None) -> str:
    return "-" if fraction is None else f"{fraction * 100.0:.1f}"


def _kb(bytes_per_second: float | None) -> str:
    return "-" if bytes_per_second is None else f"{bytes_per_second / 1000.0:.1f}"


def clients_table(title: str, clients: Sequence[ClientStatus]) -> Table:
    """Return the table of connected clients: id, address, RTT ms, loss %, kB/s in and out."""
    table = Table(
        title=f"{title}: {len(clients)} clients", box=box.SIMPLE_HEAD, title_justify="left"
    )
    for name in ("client", "address"):
        table.add_column(name, no_wrap=True)
    for name in ("RTT ms", "loss %", "in kB/s", "out kB/s"):
        table.add_column(name, justify="right", no_wrap=True)
    for status in clients[:MAX_ROWS]:
        table.add_row(
            str(status.connection_id),
            "-" if status.address is None else format_hostport(status.address),
            _ms(status.rtt),
            _percent(status.loss),
            _kb(status.received_bps),
            _kb(status.sent_bps),
        )
    if len(clients) > MAX_ROWS:
        table.caption = f"and {len(clients) - MAX_ROWS} more"
    return table


class LobbyRates:
    """Turns successive `LobbyStatistics` into a table with kB/s in and out."""

    def __init__(self) -> None:
        self._last: LobbyStatistics | None = None

    def table(self, title: str, stats: LobbyStatistics, interval: float) -> Table:
        """Return the lobby's table; rates are over the last ``interval`` seconds."""
        last = self._last or stats
        self._last = stats
        span = max(interval, 1e-9)
        table = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left")
        for name in ("games", "members", "heartbeats", "answered", "in kB/s", "out kB/s"):
            table.add_column(name, justify="right", no_wrap=True)
        table.add_row(
            str(stats.games),
            str(stats.members),
            str(stats.heartbeats),
            str(stats.answered),
            _kb((stats.bytes_received - last.bytes_received) / span),
            _kb((stats.bytes_sent - last.bytes_sent) / span),
        )
        return table


class LiveView:
    """A table redrawn in place on a terminal; does nothing when quiet or not on a terminal."""

    def __init__(self, *, quiet: bool, console: Console | None = None) -> None:
        self._console = console or Console()
        self.enabled = not quiet and self._console.is_terminal
        self._live = Live(console=self._console, auto_refresh=False, transient=True)

    def __enter__(self) -> LiveView:
        if self.enabled:
            self._live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.enabled:
            self._live.stop()

    def show(self, table: Table) -> None:
        """Redraw the view with ``table`` (nothing happens when the view is off)."""
        if self.enabled:
            self._live.update(table, refresh=True)
