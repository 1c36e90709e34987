"""Fixtures shared by the test packages: ``lagless`` server processes that are always cleaned up."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from tests.ops.helpers import ROOT, JsonServer


@pytest.fixture
def json_server() -> Iterator[Callable[..., JsonServer]]:
    """Start ``python -m lagless ARGS``; killed at teardown if still running."""
    started: list[JsonServer] = []

    def start(*args: str) -> JsonServer:
        process = subprocess.Popen(
            [sys.executable, "-m", "lagless", *args],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        server = JsonServer(process)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.process.kill()
        server.process.communicate()
