"""A replication server and two clients as separate processes over real UDP on loopback.

Issue 13 "Done when": spawn, move, reference, destroy and events across processes (each process
is ``tests/replication/udp_peer.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 40.0  # seconds for the whole exchange


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.replication.udp_peer", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_server_and_two_clients_over_loopback() -> None:
    server = _start("server")
    assert server.stdout is not None
    port = int(server.stdout.readline())
    clients = [_start("client", str(port), str(n)) for n in (1, 2)]
    try:
        server_out, server_err = server.communicate(timeout=TIMEOUT)
        outs = [c.communicate(timeout=TIMEOUT) for c in clients]
    finally:
        for proc in (server, *clients):
            if proc.poll() is None:
                proc.kill()
    assert server.returncode == 0, server_err
    for proc, (_, err) in zip(clients, outs, strict=True):
        assert proc.returncode == 0, err
    summary = json.loads(server_out.strip().splitlines()[-1])
    seen = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    station, ship = summary["station"], summary["ship"]
    owner = min(s["client"] for s in seen)
    for client in seen:
        assert client["announced"][:2] == [["Station", station], ["Ship", ship]]
        assert client["destroyed"] == [["Station", station], ["Ship", ship]]
        assert client["ship_pos"] == pytest.approx(summary["ship_pos"], abs=0.005)  # 1 cm codes
        assert client["dock_after_destroy"] == -1  # the reference died with the station
        assert ["Fire", None, True] in client["events"]
        assert client["role"] == ("owner" if client["client"] == owner else "proxy")
    owner_seen = next(s for s in seen if s["client"] == owner)
    assert owner_seen["dock_name"] == "alpha"
    assert summary["aim"] == 0.5  # the owner's write reached the authority
    assert sorted(summary["events"]) == sorted(["Ping", s["client"]] for s in seen)
    assert summary["drops"] == {}
