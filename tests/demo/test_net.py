"""``lagless demo --server`` and ``--connect`` over loopback UDP, with a profile's proxy between."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygame

from lagless.cli.app import app
from lagless.cli.common import run_app


def _start_server(*args: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lagless", "demo", "--server", "--host", "127.0.0.1", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    deadline = time.monotonic() + 20.0
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        found = re.search(r"demo server on (127\.0\.0\.1:\d+)", line)
        if found:
            return proc, found.group(1)
    proc.kill()
    raise AssertionError("the server did not start")


def test_server_and_client_exchange_state_through_the_profile(tmp_path: Path) -> None:
    proc, address = _start_server("--port", "0", "--bots", "6", "--profile", "lte", "--quiet")
    try:
        status = run_app(
            app,
            [
                "demo",
                "--connect",
                address,
                "--headless",
                "--duration",
                "2.5",
                "--out",
                str(tmp_path),
            ],
        )
        assert status == 0
        summary = json.loads((tmp_path / "summary.json").read_text())
        assert summary["cars_shown"] == 7  # six bots and the own car
        assert summary["client_snapshots"] > 30  # 20 Hz once connected
        assert summary["rtt_ms"] > 40.0  # LTE's ~50 ms RTT: the proxy is in the path
        assert 0.5 < summary["client_kBps_avg"] < 10.0
        assert pygame.image.load(str(tmp_path / "last-frame.png")).get_size() == (960, 640)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert proc.returncode == 130
    final = re.search(
        r"demo server: .* 6 bots, tick ([\d.]+) ms avg.* ([\d.]+) kB/s per client", out
    )
    assert final is not None, out
    assert 0.0 < float(final.group(1)) < 50.0
    assert float(final.group(2)) > 0.5  # the seconds with the player connected
