"""Shared helpers of the command-line tests: ``lagless`` processes that are always cleaned up."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest


@dataclass
class Proc:
    """A ``python -m lagless ...`` process whose stdout lines are read on demand."""

    args: list[str]
    process: subprocess.Popen[str]
    lines: list[str] = field(default_factory=list)

    err_lines: list[str] = field(default_factory=list)

    def wait_line(
        self, pattern: str, timeout: float = 15.0, *, stderr: bool = False
    ) -> re.Match[str]:
        """Read stdout (or stderr) lines until one matches ``pattern``; fail after ``timeout`` s."""
        stream = self.process.stderr if stderr else self.process.stdout
        seen = self.err_lines if stderr else self.lines
        assert stream is not None
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        for line in seen:
            if found := regex.search(line):
                return found
        while time.monotonic() < deadline:
            line = stream.readline()
            if not line:
                break
            seen.append(line)
            if found := regex.search(line):
                return found
        raise AssertionError(f"{self.args}: no line matching {pattern!r} in {seen}")

    def finish(self, timeout: float, stdin: str | None = None) -> tuple[int, str, str]:
        """Send ``stdin`` (if any), wait for the exit; return the status, stdout and stderr."""
        out, err = self.process.communicate(stdin, timeout=timeout)
        return self.process.returncode, "".join(self.lines) + out, "".join(self.err_lines) + err


@pytest.fixture
def lagless() -> Iterator[Callable[..., Proc]]:
    """Start ``python -m lagless ARGS`` with piped stdin/stdout/stderr; killed at teardown.

    ``nice`` lowers a CPU-bound process's priority, so that it cannot starve the others on a
    2-core machine.
    """
    started: list[Proc] = []

    def start(
        *args: str, stdin: int | None = subprocess.PIPE, cwd: Path | None = None, nice: int = 0
    ) -> Proc:
        process = subprocess.Popen(
            [sys.executable, "-m", "lagless", *args],
            preexec_fn=(lambda: os.nice(nice)) if nice else None,
            cwd=cwd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        proc = Proc(list(args), process)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.process.poll() is None:
            proc.process.kill()
        proc.process.communicate()


@pytest.fixture
def free_port() -> Callable[[], int]:
    """Return a function giving a UDP port on 127.0.0.1 that was free a moment ago."""

    def pick() -> int:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.bind(("127.0.0.1", 0))
            return int(probe.getsockname()[1])

    return pick
