"""The live view: a server's clients with RTT, loss and kB/s, drawn only on a terminal."""

from __future__ import annotations

import asyncio
import io

from rich.console import Console

from lagless._types import Address
from lagless.apps import ServeOptions, make_token, serve
from lagless.apps.serve import ClientStatus
from lagless.cli.live import LiveView, LobbyRates, clients_table
from lagless.gossip.lobby import LobbyStatistics
from lagless.io.endpoint import open_endpoint
from lagless.transport import RELIABLE, Client, Connected, MessageReceived


def _render(table: object) -> str:
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(table)
    assert isinstance(console.file, io.StringIO)
    return console.file.getvalue()


def test_serve_reports_connected_clients_with_rtt_each_second() -> None:
    reports: list[list[ClientStatus]] = []

    async def main() -> Address:
        bound: asyncio.Future[Address] = asyncio.get_running_loop().create_future()
        stop = asyncio.Event()
        options = ServeOptions(address=("127.0.0.1", 0), echo=True)
        server = asyncio.create_task(
            serve(
                options,
                out=lambda _line: None,
                ready=bound.set_result,
                stop=stop,
                monitor=reports.append,
                monitor_interval=0.2,
            )
        )
        address = await bound
        async with open_endpoint(Client(), "127.0.0.1:0") as cli:
            token = make_token([address], client_id=3)
            cli.call(lambda c: c.connect(token, cli.now()))
            await cli.wait_for(Connected, timeout=5)
            for _ in range(5):
                cli.call(lambda c: c.send(RELIABLE, b"ping" * 100))
                await cli.wait_for(MessageReceived, timeout=5)
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.3)
            local = cli.address
        stop.set()
        await server
        return local

    local = asyncio.run(main())
    assert reports[0] == []
    busy = [rows for rows in reports if rows and rows[0].rtt]
    assert busy, reports
    row = busy[-1][0]
    assert row.connection_id == 1
    assert row.address == local
    assert row.rtt is not None
    assert 0 < row.rtt < 0.5
    assert row.loss == 0.0
    assert row.received_bps is not None
    assert row.received_bps > 0
    text = _render(clients_table("lagless serve", busy[-1]))
    assert "lagless serve: 1 clients" in text
    assert f"127.0.0.1:{local[1]}" in text
    assert f"{row.rtt * 1000:.1f}" in text


def test_clients_table_shows_units_and_unknowns() -> None:
    rows = [
        ClientStatus(
            connection_id=4,
            address=("::1", 5000),
            rtt=0.0123,
            loss=0.05,
            received_bps=2500.0,
            sent_bps=1000.0,
        ),
        ClientStatus(
            connection_id=5, address=None, rtt=None, loss=None, received_bps=None, sent_bps=None
        ),
    ]
    text = _render(clients_table("t", rows))
    for header in ("RTT ms", "loss %", "in kB/s", "out kB/s"):
        assert header in text
    assert "[::1]:5000" in text
    line = next(line for line in text.splitlines() if "[::1]:5000" in line)
    assert line.split()[2:] == ["12.3", "5.0", "2.5", "1.0"]
    unknown = next(line for line in text.splitlines() if line.strip().startswith("5 "))
    assert unknown.split()[1:] == ["-"] * 5


def test_lobby_table_turns_counters_into_rates() -> None:
    def stats(received: int, sent: int) -> LobbyStatistics:
        return LobbyStatistics(
            dropped={},
            datagrams_received=0,
            bytes_received=received,
            datagrams_sent=0,
            bytes_sent=sent,
            heartbeats=7,
            answered=2,
            expired=0,
            games=1,
            members=3,
        )

    rates = LobbyRates()
    rates.table("lobby", stats(0, 0), 1.0)
    text = _render(rates.table("lobby", stats(4000, 2000), 2.0))
    row = next(line for line in text.splitlines() if line.split()[:2] == ["1", "3"])
    assert row.split() == ["1", "3", "7", "2", "2.0", "1.0"]


def test_live_view_draws_only_on_a_terminal_and_not_when_quiet() -> None:
    tty = Console(file=io.StringIO(), force_terminal=True, width=80)
    pipe = Console(file=io.StringIO(), force_terminal=False, width=80)
    table = clients_table("t", [])
    with LiveView(quiet=False, console=tty) as view:
        assert view.enabled
        view.show(table)
    assert isinstance(tty.file, io.StringIO)
    assert "t: 0 clients" in tty.file.getvalue()
    for console, quiet in ((pipe, False), (Console(file=io.StringIO(), force_terminal=True), True)):
        with LiveView(quiet=quiet, console=console) as view:
            assert not view.enabled
            view.show(table)
        assert isinstance(console.file, io.StringIO)
        assert console.file.getvalue() == ""
