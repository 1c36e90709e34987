"""Every synchronisation algorithm between separate processes over real UDP on loopback.

Issue 15 "Done when": each algorithm runs 2–8 peers over real UDP in separate processes. One
``lagless sync peer`` process per peer (the ``sync`` sub-app run on its own), all algorithms'
sessions at once (the start barrier of ``lagless.apps.sync`` waits for slow starters); the peers
of a session must show the same checksum on the last frame they all displayed, and have exchanged
messages to get there.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.sync.registry import algorithms

FRAMES = 60
DRAIN = 60
THREE_PEERS = {"time-warp", "rollback"}
# ``lagless sync`` alone: the root app imports every command, which doubles each process's start
CLI = "import sys; from lagless.cli.common import run_app; from lagless.cli.sync import app; "
CLI += "sys.exit(run_app(app))"


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@pytest.fixture(scope="module")
def sessions() -> dict[str, list[Any]]:
    names = algorithms()
    sizes = {name: 3 if name in THREE_PEERS else 2 for name in names}
    ports = iter(_free_ports(sum(sizes.values())))
    running: dict[str, list[subprocess.Popen[str]]] = {}
    for name in names:
        peers = ",".join(f"127.0.0.1:{next(ports)}" for _ in range(sizes[name]))
        running[name] = [
            subprocess.Popen(
                [sys.executable, "-c", CLI, "peer", "--algorithm", name,
                 "--peer", str(i), "--peers", peers, "--frames", str(FRAMES),
                 "--drain", str(DRAIN), "--seed", "3", "--timeout", "25", "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(sizes[name])
        ]  # fmt: skip
    results: dict[str, list[Any]] = {}
    for name, procs in running.items():
        results[name] = []
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            report = json.loads(out) if proc.returncode == 0 and out.strip() else None
            results[name].append(report or {"returncode": proc.returncode, "stderr": err})
    return results


@pytest.mark.parametrize("algorithm", algorithms())
def test_peers_in_separate_processes_agree(sessions: dict[str, list[Any]], algorithm: str) -> None:
    reports = sessions[algorithm]
    assert all("checksums" in r for r in reports), reports
    assert all(r["completed"] for r in reports)
    assert all(r["final_frame"] >= FRAMES + DRAIN for r in reports)
    common = set.intersection(*(set(r["checksums"]) for r in reports))
    assert common, "the peers share no displayed frame"
    last = max(common, key=int)
    assert len({r["checksums"][last] for r in reports}) == 1, (last, reports)
    assert all(r["stats"]["bytes_sent"] > 0 and r["stats"]["bytes_received"] > 0 for r in reports)


def test_synctest_command(capsys: pytest.CaptureFixture[str]) -> None:
    from lagless.cli.common import run_app
    from lagless.cli.sync import app

    assert run_app(app, ["synctest", "--frames", "120", "--players", "3", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is True
    assert report["frames"] == 120
    assert report["resimulated_frames"] == report["rollbacks"] * 8


def test_peer_command_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from lagless.cli.common import run_app
    from lagless.cli.sync import app

    ports = _free_ports(2)
    peers = f"127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"
    args = ["peer", "--peer", "0", "--peers", peers, "--timeout", "0.3"]
    assert run_app(app, [*args, "--algorithm", "warp-9"]) == 2
    assert capsys.readouterr().err.startswith("error: --algorithm must be one of")
    assert run_app(app, [*args, "--algorithm", "time-warp"]) == 2  # nobody answers
    err = capsys.readouterr().err
    assert err.startswith("error: peers [1] did not answer")
    assert err.count("\n") == 1
    assert run_app(app, ["peer", "--algorithm", "lockstep", "--peer", "5", "--peers", peers]) == 2
    assert "--peer must be in [0, 1]" in capsys.readouterr().err


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=80), max_size=30))
def test_garbage_datagrams_never_raise(datagrams: list[bytes]) -> None:
    from lagless.apps.sync import PeerRunConfig, _Runner
    from lagless.sync.harness import SESSION_CONNECTION
    from lagless.transport import Connection

    ports = _free_ports(2)
    addresses = (("127.0.0.1", ports[0]), ("127.0.0.1", ports[1]))

    async def feed() -> set[int]:
        runner = _Runner(PeerRunConfig(algorithm="time-warp", peer=0, addresses=addresses))
        try:
            for data in datagrams:  # before the start: only hellos count
                runner.on_datagram(data, addresses[1])
                runner.on_datagram(data, ("127.0.0.1", 9))  # a stranger
            heard = set(runner.heard)
            runner.conns[1] = Connection(config=SESSION_CONNECTION, now=0.0, is_client=True)
            for data in datagrams:  # after it: transport payloads
                runner.on_datagram(bytes((1,)) + data, addresses[1])
            return heard
        finally:
            runner.close()

    heard = asyncio.run(feed())
    assert heard == ({1} if any(d[:2] == b"\x00\x01" and len(d) == 3 for d in datagrams) else set())
