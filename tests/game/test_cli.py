"""``lagless game`` over real UDP: serve, discover, bots, rooms; errors and signals."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lagless.cli.app import app
from lagless.cli.common import run_app

ROOT = Path(__file__).resolve().parents[2]


def _lagless(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lagless", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("0.0.0.0", 0))
        return int(probe.getsockname()[1])


def _wait_for_line(proc: subprocess.Popen[str], start: str) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith(start), line
    return line


def test_serve_discover_bots_and_sigint() -> None:
    discovery = _free_port()
    game_port = _free_port()
    server = _lagless(
        "game", "serve", "-p", str(game_port), "--discovery-port", str(discovery), "--name", "t1"
    )
    try:
        _wait_for_line(server, "game server on 127.0.0.1:")
        found = _lagless(
            "game", "discover", "--to", f"127.255.255.255:{discovery}", "-n", "1", "--json"
        )
        out, err = found.communicate(timeout=20)
        assert found.returncode == 0, err
        result = json.loads(out.strip().splitlines()[-1])
        assert [s["name"] for s in result["servers"]] == ["t1"]
        assert result["servers"][0]["address"] == f"127.0.0.1:{game_port}"
        assert result["found_after_ms"][0] < 1000.0
        bots = _lagless("game", "bots", f"127.0.0.1:{game_port}", "-n", "2", "--duration", "2")
        out, err = bots.communicate(timeout=30)
        assert bots.returncode == 0, err
        assert out.strip().splitlines()[-1].startswith("2 bots connected")
        time.sleep(0.3)
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
    assert server.returncode == 130
    lines = out.strip().splitlines()
    assert sum(line.startswith("+ bot") for line in lines) == 2
    assert sum(line.startswith("- bot") and "client_disconnected" in line for line in lines) == 2
    assert lines[-1].startswith("2 players joined")
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["game", "serve", "--map", "nope"], "error: map 'nope' not found"),
        (["game", "serve", "--sim-rate", "0"], "error: sim_rate must be in"),
        (["game", "bots", "-n", "0"], "error: --count must be in [1, 256]"),
        (["game", "discover", "--to", "nowhere"], "error: --to must be HOST:PORT"),
    ],
)
def test_errors_are_one_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(app, args) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert err.startswith(message), err


def test_no_server_found_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    port = _free_port()
    assert (
        run_app(app, ["game", "discover", "--to", f"127.255.255.255:{port}", "--timeout", "0.3"])
        == 1
    )
    assert capsys.readouterr().out.strip() == "0 servers found"


def test_rooms_service_runs_and_stops(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(app, ["game", "rooms", "-p", "0", "--duration", "0.3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("room service on 127.0.0.1:")
    assert out.strip().splitlines()[-1] == "0 rooms open, 0 events relayed"
