"""Prometheus exposition for one server: a private registry, scrape-time collectors, HTTP.

Implements the metrics half of issue 16 part 3 ("Operations") below the protocol layers: this
module knows nothing about transports or games. An application hands it callables that build
metric families from its own statistics (``lagless.apps.ops`` does that for the servers), and it
serves them in the Prometheus text format over HTTP. Needs ``prometheus-client`` (the ``ops``
extra); nothing else in lagless imports this module unless metrics are asked for.

Decisions:

* **One registry per server.** `ServerMetrics` owns a `prometheus_client.CollectorRegistry`, never
  the library's global one, so tests and several servers in one process never clash.
* **Read at scrape time, on the owner's thread.** Server statistics live in objects that only the
  event loop's thread may touch (reading a connection's statistics applies its pending acks).
  The HTTP server answers in its own threads, so a scrape asks the owner thread to build the
  families (`OwnerThread.call`) and waits at most ``timeout`` seconds for them; the hot path
  counts nothing twice. When the owner does not answer in time (a stalled loop), the scrape
  serves the families of the last scrape that did, so a stall shows as frozen values rather
  than as a failing endpoint.
* **Distributions over connections** (RTT, loss) are gauge histograms (`gauge_histogram`): the
  buckets count the connections whose current value falls at or below each bound, which is what
  a collector that reads state at scrape time can truthfully say. Durations the owner times
  itself (tick time) are ordinary histograms it observes (`ServerMetrics.histogram`).
* The HTTP server binds ``HOST:PORT`` (port 0 picks a free one, see `ServerMetrics.address`);
  a port that cannot be bound is a `ConfigError` naming ``--metrics``. It is prometheus-client's
  WSGI app in a thread-per-request server whose accept loop checks for shutdown every
  `POLL_INTERVAL` (50 ms, not the standard library's 0.5 s), so closing it does not hold up a
  server's exit after SIGTERM.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import queue
import socket
import threading
from collections.abc import Callable, Iterable, Sequence
from socketserver import ThreadingMixIn
from typing import Final, TypeVar, cast
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Histogram, make_wsgi_app
from prometheus_client.core import GaugeHistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from lagless._types import Address
from lagless.errors import ConfigError

__all__ = [
    "DEFAULT_SCRAPE_TIMEOUT",
    "FamilyBuilder",
    "OwnerThread",
    "ServerMetrics",
    "gauge_histogram",
]

T = TypeVar("T")

DEFAULT_SCRAPE_TIMEOUT: Final = 2.0  # s a scrape waits for the owner thread
POLL_INTERVAL: Final = 0.05  # s between the HTTP thread's checks for a shutdown request
_Request = tuple[Callable[[], object], concurrent.futures.Future[object]]
FamilyBuilder = Callable[[], Iterable[Metric]]
"""Builds metric families from live statistics; runs on the owner thread."""


class OwnerThread:
    """Runs callables on the thread that owns a server's state, on behalf of other threads.

    Args:
        wake: called (from the requesting thread) after a request is queued, to make the owner
            run `run_pending` soon; e.g. ``loop.call_soon_threadsafe(owner.run_pending)``.
            ``None`` when the owner polls `run_pending` itself (a game loop, once per frame).
    """

    def __init__(self, wake: Callable[[], None] | None = None) -> None:
        self._wake = wake
        self._owner = threading.get_ident()
        self._requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()

    @classmethod
    def for_loop(cls, loop: asyncio.AbstractEventLoop) -> OwnerThread:
        """An owner woken through ``loop.call_soon_threadsafe``; create it on the loop's thread."""
        owner = cls()

        def wake() -> None:
            loop.call_soon_threadsafe(owner.run_pending)

        owner._wake = wake
        return owner

    def call(self, fn: Callable[[], T], timeout: float) -> T:
        """Return ``fn()`` as run on the owner thread (directly when called from it).

        Raises:
            TimeoutError: the owner did not run it within ``timeout`` seconds.
            Exception: whatever ``fn`` raised.
        """
        if threading.get_ident() == self._owner:
            return fn()
        future: concurrent.futures.Future[object] = concurrent.futures.Future()
        self._requests.put((fn, future))
        if self._wake is not None:
            self._wake()
        return cast(T, future.result(timeout))

    def run_pending(self) -> int:
        """Run every queued request now (on the owner thread); return how many ran."""
        ran = 0
        while True:
            try:
                fn, future = self._requests.get_nowait()
            except queue.Empty:
                return ran
            ran += 1
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except Exception as exc:
                future.set_exception(exc)


class _ScrapeCollector(Collector):
    """A prometheus collector that builds its families on the owner thread at scrape time."""

    def __init__(self, build: FamilyBuilder, owner: OwnerThread, timeout: float) -> None:
        self._build = build
        self._owner = owner
        self._timeout = timeout
        self._last: list[Metric] = []
        self._lock = threading.Lock()
        self.stale_scrapes = 0

    def describe(self) -> Iterable[Metric]:
        """Nothing up front: the families depend on live state (no collect at registration)."""
        return []

    def collect(self) -> Iterable[Metric]:
        """The families as the owner builds them now, or the last ones if it is too slow."""
        try:
            families = self._owner.call(lambda: list(self._build()), self._timeout)
        except TimeoutError:
            with self._lock:
                self.stale_scrapes += 1
                return list(self._last)
        with self._lock:
            self._last = families
        return families


class ServerMetrics:
    """The metrics of one server: a private registry, scrape-time families and an HTTP endpoint.

    Args:
        owner: the thread that owns the server's state (scrape-time builders run there).
        timeout: seconds a scrape waits for the owner before serving the last families.
    """

    def __init__(self, owner: OwnerThread, *, timeout: float = DEFAULT_SCRAPE_TIMEOUT) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        """The server's own registry (never prometheus' global one)."""
        self._owner = owner
        self._timeout = timeout
        self._collectors: list[_ScrapeCollector] = []
        self._http: tuple[WSGIServer, threading.Thread] | None = None
        self._address: Address | None = None

    @property
    def owner(self) -> OwnerThread:
        """The owner thread requests go through."""
        return self._owner

    def add_builder(self, build: FamilyBuilder) -> None:
        """Register ``build``; it runs on the owner thread at every scrape."""
        collector = _ScrapeCollector(build, self._owner, self._timeout)
        self.registry.register(collector)
        self._collectors.append(collector)

    def histogram(self, name: str, documentation: str, buckets: Sequence[float]) -> Histogram:
        """Register and return a histogram the owner observes itself (e.g. tick time, s)."""
        return Histogram(name, documentation, buckets=tuple(buckets), registry=self.registry)

    @property
    def stale_scrapes(self) -> int:
        """Scrapes that served the previous families because the owner did not answer in time."""
        return sum(collector.stale_scrapes for collector in self._collectors)

    def start(self, address: Address) -> Address:
        """Serve ``/metrics`` (any path) over HTTP at ``address``; return the bound address.

        Raises:
            ConfigError: the address cannot be bound (naming ``--metrics``).
        """
        host, port = address
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        server_class = type("_Server", (_HttpServer,), {"address_family": family})
        try:
            server: WSGIServer = make_server(
                host, port, make_wsgi_app(self.registry), server_class, handler_class=_Quiet
            )
        except OSError as exc:
            raise ConfigError(
                f"--metrics {host}:{port} cannot be bound: {exc.strerror or exc}"
            ) from None
        thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": POLL_INTERVAL},
            name=f"metrics {host}:{port}",
            daemon=True,
        )
        thread.start()
        self._http = (server, thread)
        bound = server.server_address
        self._address = (str(bound[0]), int(bound[1]))
        return self._address

    @property
    def address(self) -> Address | None:
        """Where the HTTP endpoint listens, once started."""
        return self._address

    def close(self) -> None:
        """Stop the HTTP endpoint (idempotent); the registry stays readable."""
        if self._http is None:
            return
        server, thread = self._http
        self._http = None
        server.shutdown()
        server.server_close()
        thread.join(timeout=1.0)


def gauge_histogram(
    name: str, documentation: str, values: Iterable[float], bounds: Sequence[float]
) -> GaugeHistogramMetricFamily:
    """A gauge histogram of ``values`` now: cumulative counts at each bound, then ``+Inf``.

    Args:
        name: metric name (units in the name, e.g. ``_seconds``).
        documentation: the HELP text.
        values: the current values (one per connection, say).
        bounds: the bucket upper bounds, ascending, without ``+Inf``.

    Raises:
        ConfigError: the bounds are not strictly ascending.
    """
    if any(b >= c for b, c in itertools.pairwise(bounds)):
        raise ConfigError(f"bounds of {name} must be strictly ascending, got {list(bounds)}")
    ordered = sorted(values)
    counts = [0] * len(bounds)
    total = 0.0
    k = 0
    for value in ordered:
        total += value
        while k < len(bounds) and value > bounds[k]:
            k += 1
        if k < len(bounds):
            counts[k] += 1
    buckets: list[tuple[str, float]] = []
    running = 0
    for bound, count in zip(bounds, counts, strict=True):
        running += count
        buckets.append((_bound_text(bound), running))
    buckets.append(("+Inf", len(ordered)))
    return GaugeHistogramMetricFamily(name, documentation, buckets=buckets, gsum_value=total)


class _HttpServer(ThreadingMixIn, WSGIServer):
    """One thread per request; request threads never keep the process alive."""

    daemon_threads = True


class _Quiet(WSGIRequestHandler):
    """Logs no line per request (a scrape every few seconds would flood stderr)."""

    def log_message(self, format: str, *args: object) -> None:
        """Log nothing."""


def _bound_text(bound: float) -> str:
    """Prometheus' spelling of a bucket bound (``0.05``, ``1.0``)."""
    return repr(float(bound))
