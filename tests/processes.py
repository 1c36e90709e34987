"""Run a server process and its client processes over real UDP on loopback, and read their reports.

The peers are modules under ``tests`` run with ``python -m``: the server prints its port on its
first line, every process prints one JSON object as its last line and exits 0 when its part went
as planned. Used by the cross-process tests of replication and the game server.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 40.0  # seconds for the whole exchange


def _start(module: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _last_json(out: str) -> Any:
    return json.loads(out.strip().splitlines()[-1])


def run_server_and_clients(
    module: str, clients: list[list[str]], timeout: float = TIMEOUT
) -> tuple[Any, list[Any]]:
    """Start ``module server``, then ``module client PORT *args`` per entry; return their reports.

    Every process must exit 0 within ``timeout`` seconds (the assertion shows its stderr); any
    process still running at the end is killed.
    """
    server = _start(module, "server")
    assert server.stdout is not None
    port = server.stdout.readline().strip()
    started = [_start(module, "client", port, *args) for args in clients]
    try:
        server_out, server_err = server.communicate(timeout=timeout)
        outs = [proc.communicate(timeout=timeout) for proc in started]
    finally:
        for proc in (server, *started):
            if proc.poll() is None:
                proc.kill()
    assert server.returncode == 0, server_err
    for proc, (_, err) in zip(started, outs, strict=True):
        assert proc.returncode == 0, err
    return _last_json(server_out), [_last_json(out) for out, _ in outs]
