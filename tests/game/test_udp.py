"""A game server and two clients as separate processes over real UDP on loopback.

Connect, move, kick and disconnect across processes (each is ``tests/game/udp_peer.py``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 40.0  # seconds for the whole exchange


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.game.udp_peer", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_connect_move_kick_disconnect_over_loopback() -> None:
    server = _start("server")
    assert server.stdout is not None
    port = server.stdout.readline().strip()
    clients = [_start("client", port, str(n)) for n in (1, 2)]
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
    first, second = (json.loads(out.strip().splitlines()[-1]) for out, _ in outs)
    assert sorted(summary["joined"]) == [[1, ""], [2, ""]]
    assert summary["moved"] >= 1.0
    assert sorted(summary["left"]) == [[1, "client_disconnected"], [2, "kicked"]]
    assert summary["drops"] == {}
    assert second["events"] == ["established", ["ended", "server_disconnected", "test"]]
    assert first["events"][:2] == ["established", "other_destroyed"]
    assert first["replica_x"] is not None
