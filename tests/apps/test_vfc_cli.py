"""``lagless vfc serve`` / ``vfc bots`` over real loopback UDP (issue 5 part 3)."""

from __future__ import annotations

import asyncio
import logging

from typer.testing import CliRunner

from lagless._types import Address
from lagless.apps.vfc import run_bots, serve_vfc
from lagless.cli.vfc import app


def test_bots_reach_a_server_over_udp() -> None:
    lines: list[str] = []

    async def main() -> tuple[int, int, int]:
        bound: asyncio.Future[Address] = asyncio.get_running_loop().create_future()
        server = asyncio.create_task(
            serve_vfc(("127.0.0.1", 0), out=lines.append, duration=4.0, ready=bound.set_result)
        )
        address = await bound
        bots = await run_bots(address, count=4, map_name="aard3c", duration=2.0, out=lines.append)
        summary = await server
        return bots.joined, bots.replicas, summary.update_bytes

    joined, replicas, update_bytes = asyncio.run(main())
    assert joined == 4
    assert replicas > 4 * 3 * 10  # each bot refreshes 3 replicas many times in 2 s
    assert update_bytes > 0
    assert sum("joined" in line for line in lines) >= 4


def test_cli_rejects_bad_arguments() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["bots", "127.0.0.1:1", "--count", "0"])
    assert result.exit_code == 2
    assert "count must be in [1, 256]" in result.output
    result = runner.invoke(app, ["serve", "--host", "no-such-host.invalid"])
    assert result.exit_code == 2


def test_serve_prints_status_only_when_clients_or_objects_change() -> None:
    lines: list[str] = []
    seen: list[int] = []

    async def main() -> None:
        bound: asyncio.Future[Address] = asyncio.get_running_loop().create_future()
        server = asyncio.create_task(
            serve_vfc(
                ("127.0.0.1", 0),
                out=lines.append,
                duration=5.5,
                ready=bound.set_result,
                monitor=lambda clients: seen.append(len(clients)),
            )
        )
        address = await bound
        await asyncio.sleep(2.2)
        assert not [line for line in lines if line.startswith("clients ")]  # idle: silent
        await run_bots(address, count=2, map_name="aard3c", duration=2.0, out=lines.append)
        await server

    asyncio.run(main())
    status = [line for line in lines if line.startswith("clients ")]
    assert status[0].startswith("clients 2 objects 2")
    assert len(status) == len(set(line.split(" updates")[0] for line in status)) <= 3
    assert seen[0] == 0
    assert max(seen) == 2


def test_bots_command_leaves_the_transport_log_as_it_found_it() -> None:
    log = logging.getLogger("lagless.transport")
    before = list(log.filters)
    result = CliRunner().invoke(app, ["bots", "127.0.0.1:1", "--count", "0"])
    assert result.exit_code == 2
    assert log.filters == before
