"""Silac on real loopback UDP: the lobby, bot peers and swarms, in-process and as processes.

The sub-app runs as ``python -m lagless.cli.gossip`` (the same typer app that the root
``lagless gossip`` mounts).
"""

from __future__ import annotations

import asyncio
import re
import socket
import subprocess
import sys

import pytest

from lagless.apps.gossip import (
    LobbyError,
    LobbySummary,
    PeerSummary,
    run_lobby,
    run_peer,
    run_swarm,
)
from lagless.errors import ConfigError


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _gossip(*args: str) -> list[str]:
    return [sys.executable, "-m", "lagless.cli.gossip", *args]


@pytest.mark.timeout(30)
def test_swarm_of_20_peers_learns_everyone() -> None:
    lines: list[str] = []
    summary = asyncio.run(run_swarm(20, duration=3.0, seed=1, out=lines.append))
    assert summary.peers == 20
    assert summary.joined == 20
    assert summary.games == 1  # the swarm found itself through its lobby
    assert summary.coverage_min >= 0.95
    assert summary.full_knowledge_after is not None
    assert summary.full_knowledge_after < 2.5
    # every peer hears from many others each second; at most 19 peers x 20 frames
    assert 40.0 < summary.updates_per_second <= 19 * 20 * 1.1
    assert summary.bytes_per_second > 1000.0
    assert summary.bytes_per_second_with_headers > summary.bytes_per_second
    assert lines[0].startswith("swarm of 20 peers on 127.0.0.1, lobby 127.0.0.1:")


@pytest.mark.timeout(30)
def test_two_peers_meet_through_a_lobby() -> None:
    async def main() -> tuple[LobbySummary, PeerSummary, PeerSummary]:
        bound: asyncio.Future[tuple[str, int]] = asyncio.get_running_loop().create_future()
        lobby = asyncio.create_task(
            run_lobby(("127.0.0.1", 0), out=log_lobby.append, duration=3.5, ready=bound.set_result)
        )
        where = await bound
        a = asyncio.create_task(run_peer(where, out=log_a.append, duration=3.0, seed=1))
        await asyncio.sleep(0.5)
        b = asyncio.create_task(run_peer(where, out=log_b.append, duration=2.0, seed=2))
        return await lobby, await a, await b

    log_lobby: list[str] = []
    log_a: list[str] = []
    log_b: list[str] = []
    lobby, a, b = asyncio.run(main())
    assert a.hosted
    assert not b.hosted
    assert a.game_id == b.game_id != 0
    assert b.known_peers == 1  # b knew a when it left
    assert a.known_peers == 0  # b's leave message removed it from a's table (spec 002 §2.5.6)
    assert any(line.endswith("left (left)") for line in log_a)
    assert b.updates_per_second > 5.0
    assert any(line.startswith("hosting new game") for line in log_a)
    assert any(line.startswith("joined game") for line in log_b)
    assert any("joined from 127.0.0.1:" in line for line in log_a)
    assert log_lobby == [f"game {a.game_id:08x} opened by {log_a[0].split()[-1]} (map 0, type 0)"]
    assert lobby.opened == 1
    assert lobby.answered >= 3  # a list, b list + info


@pytest.mark.timeout(15)
def test_unreachable_lobby_is_an_error() -> None:
    port = _free_port()  # nobody listens there
    with pytest.raises(LobbyError, match=f"lobby 127.0.0.1:{port} did not answer 4 requests"):
        asyncio.run(run_peer(("127.0.0.1", port), out=lambda line: None, duration=5.0))


def test_bad_arguments_raise_config_error() -> None:
    with pytest.raises(ConfigError, match="n must be in"):
        asyncio.run(run_swarm(0, out=print))
    with pytest.raises(ConfigError, match="--host must be a specific address"):
        asyncio.run(run_peer(("127.0.0.1", 1), out=print, host="0.0.0.0"))


@pytest.mark.timeout(40)
def test_lobby_and_swarm_processes_find_each_other() -> None:
    port = _free_port()
    lobby = subprocess.Popen(
        _gossip("lobby", "--port", str(port), "--duration", "15", "--seed", "3"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert lobby.stdout is not None
        first = lobby.stdout.readline()  # printed once the socket is bound
        assert first == f"lobby on 127.0.0.1:{port}\n", first
        swarm = subprocess.run(
            _gossip(
                "swarm",
                "-n",
                "10",
                "--lobby",
                f"127.0.0.1:{port}",
                "--duration",
                "3",
                "--seed",
                "4",
            ),
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
        assert swarm.returncode == 0, swarm.stderr
        out = swarm.stdout
        assert "peers joined: 10/10 (1 game(s))" in out, out
        coverage = re.search(r"coverage: mean ([\d.]+), min ([\d.]+)", out)
        assert coverage is not None, out
        assert float(coverage.group(2)) >= 0.9
        upload = re.search(r"upload: (\d+) B/s per peer", out)
        assert upload is not None, out
        assert int(upload.group(1)) > 1000
    finally:
        lobby.terminate()  # SIGTERM: a clean stop prints the summary
        lobby_out, lobby_err = lobby.communicate(timeout=10)
    assert re.search(r"game [0-9a-f]{8} opened by 127\.0\.0\.1:\d+ \(map 0, type 0\)", lobby_out)
    summary = re.search(r"1 games opened, 0 closed, (\d+) heartbeats", lobby_out)
    assert summary is not None, lobby_out + lobby_err
    assert int(summary.group(1)) >= 10  # every peer's first heartbeat at least


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["peer", "--lobby", "nonsense"], "error: --lobby must be HOST:PORT"),
        (["swarm", "-n", "0", "--duration", "1"], "error: --count must be in [1, 1000], got 0"),
        (["lobby", "--port", "70000"], "error: --port must be in [0, 65535], got 70000"),
    ],
)
def test_cli_errors_are_one_line_exit_2(args: list[str], message: str) -> None:
    result = subprocess.run(_gossip(*args), capture_output=True, text=True, timeout=20, check=False)
    assert result.returncode == 2
    assert result.stderr.startswith(message), result.stderr
    assert result.stderr.count("\n") == 1
