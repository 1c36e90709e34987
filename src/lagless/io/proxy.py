"""A real-UDP link conditioner: forwards datagrams between processes through netsim link models.

Implements DESIGN.md "Layers" (``cli proxy``) with the link stages of ``lagless.netsim.link``
(spec 000 §3.7 latency/jitter/loss, spec 003 §6.3 bandwidth queue, plus burst loss, duplication and
reordering) applied to real sockets: every datagram goes through ``Link.send(len(data), now)`` with
``now = loop.time()``, and each arrival time it returns is scheduled with ``loop.call_at``, so the
same configuration behaves the same on the simulator and on a real network.

Decisions:
    * Each distinct client address gets its own session: an upstream socket connected to
      ``forward`` (so the server's replies route back to that client) and its own pair of links,
      ``up`` (client → server, ``Profile.up``) and ``down`` (server → client, ``Profile.down``).
      Clients do not share a bandwidth queue; the proxy models each client's own access link
      (``test_proxy.py::test_two_clients_get_their_own_replies``).
    * Link randomness comes from named streams ``proxy.client<N>.up`` / ``.down`` of one root seed,
      N counting clients in order of first datagram; without a seed a root seed is drawn from OS
      entropy and reported in ``ProxyStats.seed`` so a run can be repeated
      (``test_proxy.py::test_seeded_links_are_reproducible``).
    * Overrides replace the profile's field in both directions. ``--jitter-ms`` keeps the profile's
      jitter shape and only changes its amount; on a profile without jitter the shape is uniform
      U(0, amount) as in spec 000 §3.7. ``--reorder`` without a reorder delay uses the profile's, or
      ``DEFAULT_REORDER_DELAY`` (``test_proxy.py::test_overrides_apply_to_both_directions``).
    * Without a profile the link is clean (``LinkConfig()``: no delay, no loss) plus the overrides.
    * Memory is bounded: at most ``max_clients`` sessions (datagrams from further clients are
      counted in ``rejected_datagrams`` and dropped), at most ``max_pending`` datagrams waiting in
      each direction (more are counted in ``overflow_datagrams``), and sessions idle for
      ``idle_timeout`` with nothing in flight are closed
      (``test_proxy.py::test_client_limit_and_pending_limit``).
    * A failed ``send`` (full socket buffer, ICMP refusal) is counted in ``send_errors``, never
      raised: the proxy models a network, and networks drop
      (``test_proxy.py::test_send_errors_are_counted_not_raised``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import socket
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from lagless._types import Address
from lagless.errors import ConfigError, LocalProtocolError
from lagless.io.udp import (
    add_datagram_reader,
    format_hostport,
    open_udp_socket,
    parse_hostport,
    resolve,
    wildcard_for,
)
from lagless.netsim import Fate, JitterConfig, Link, LinkConfig, get_profile, stream

DEFAULT_MAX_CLIENTS: Final = 256  # sessions; each holds one socket
DEFAULT_IDLE_TIMEOUT: Final = 60.0  # seconds without traffic before a session is closed
DEFAULT_MAX_PENDING: Final = 65536  # datagrams waiting per direction (bounds memory)
DEFAULT_REORDER_DELAY: Final = 0.02  # seconds added to a reordered datagram when none is given
DEFAULT_TICK: Final = 0.25  # seconds between on_tick calls (4 Hz live counters)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkOverrides:
    """Link fields to replace in both directions of a profile, in SI units; ``None`` keeps it."""

    latency: float | None = None
    """One-way minimum delay (s)."""
    jitter: float | None = None
    """Jitter amount (s); the shape is the profile's, or uniform when the profile has none."""
    loss: float | None = None
    """Independent loss probability per datagram, in [0, 1]."""
    duplicate: float | None = None
    """Duplication probability per delivered datagram, in [0, 1]."""
    reorder: float | None = None
    """Probability that a datagram is held back so later ones overtake it, in [0, 1]."""
    reorder_delay: float | None = None
    """Extra delay (s) of a reordered datagram."""
    bandwidth: float | None = None
    """Bottleneck rate (bytes/s)."""

    def apply(self, config: LinkConfig) -> LinkConfig:
        """Return ``config`` with the set fields replaced (validated by ``LinkConfig``).

        Args:
            config: one direction of a profile.

        Returns:
            The overridden copy.

        Raises:
            ConfigError: the combination is invalid for ``LinkConfig``.
        """
        changes: dict[str, object] = {}
        for name in ("latency", "loss", "duplicate", "reorder", "reorder_delay", "bandwidth"):
            value = getattr(self, name)
            if value is not None:
                changes[name] = value
        if self.jitter is not None:
            old = config.jitter
            if self.jitter == 0.0:
                changes["jitter"] = JitterConfig(preserve_order=old.preserve_order)
            else:
                kind = "uniform" if old.kind == "none" else old.kind
                changes["jitter"] = JitterConfig(
                    kind=kind, amount=self.jitter, preserve_order=old.preserve_order
                )
        reorder = self.reorder if self.reorder is not None else config.reorder
        delay = self.reorder_delay if self.reorder_delay is not None else config.reorder_delay
        if reorder > 0.0 and delay == 0.0:
            changes["reorder_delay"] = DEFAULT_REORDER_DELAY
        return config.with_overrides(**changes)


def _flag_number(flag: str, value: float | None, *, upper: float | None = None) -> float | None:
    if value is None:
        return None
    if not math.isfinite(value) or value < 0.0 or (upper is not None and value > upper):
        allowed = f"in [0, {upper:g}]" if upper is not None else "a finite number >= 0"
        raise ConfigError(f"{flag} must be {allowed}, got {value!r}")
    return float(value)


def overrides_from_flags(
    *,
    latency_ms: float | None = None,
    jitter_ms: float | None = None,
    loss: float | None = None,
    duplicate: float | None = None,
    reorder: float | None = None,
    reorder_delay_ms: float | None = None,
    bandwidth_kbps: float | None = None,
) -> LinkOverrides:
    """Convert command-line units to SI once: milliseconds to seconds, kbit/s to bytes/s.

    Args:
        latency_ms: one-way latency (ms).
        jitter_ms: jitter amount (ms).
        loss: loss probability in [0, 1].
        duplicate: duplication probability in [0, 1].
        reorder: reorder probability in [0, 1].
        reorder_delay_ms: extra delay of a reordered datagram (ms).
        bandwidth_kbps: bottleneck rate (kbit/s, 1 kbit = 1000 bit), > 0.

    Returns:
        The overrides in seconds and bytes/s.

    Raises:
        ConfigError: a value is out of range; the message names the flag.
    """
    latency = _flag_number("--latency-ms", latency_ms)
    jitter = _flag_number("--jitter-ms", jitter_ms)
    delay = _flag_number("--reorder-delay-ms", reorder_delay_ms)
    rate = _flag_number("--bandwidth-kbps", bandwidth_kbps)
    if rate == 0.0:
        raise ConfigError("--bandwidth-kbps must be > 0 (omit it for unlimited), got 0")
    return LinkOverrides(
        latency=None if latency is None else latency / 1000.0,
        jitter=None if jitter is None else jitter / 1000.0,
        loss=_flag_number("--loss", loss, upper=1.0),
        duplicate=_flag_number("--duplicate", duplicate, upper=1.0),
        reorder=_flag_number("--reorder", reorder, upper=1.0),
        reorder_delay=None if delay is None else delay / 1000.0,
        bandwidth=None if rate is None else rate * 1000.0 / 8.0,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyConfig:
    """Where the proxy listens and forwards, and the link models of the two directions."""

    listen: Address
    """Address clients send to; port 0 picks a free port (see ``Proxy.listen_address``)."""
    forward: Address
    """The server every client's datagrams are forwarded to."""
    up: LinkConfig = field(default_factory=LinkConfig)
    """Client → server link (``Profile.up``)."""
    down: LinkConfig = field(default_factory=LinkConfig)
    """Server → client link (``Profile.down``)."""
    seed: int | None = None
    """Root seed of the links' random streams; ``None`` draws one from OS entropy."""
    max_clients: int = DEFAULT_MAX_CLIENTS
    """Most concurrent client sessions (each holds one upstream socket)."""
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    """Seconds without traffic after which a session with nothing in flight is closed."""
    max_pending: int = DEFAULT_MAX_PENDING
    """Most datagrams scheduled but not yet sent, per direction."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        for name in ("listen", "forward"):
            addr = getattr(self, name)
            if not (
                isinstance(addr, tuple)
                and len(addr) == 2
                and isinstance(addr[0], str)
                and addr[0]
                and isinstance(addr[1], int)
                and 0 <= addr[1] <= 65535
            ):
                raise ConfigError(
                    f"{name} must be (host, port) with port in [0, 65535], got {addr!r}"
                )
        if self.forward[1] == 0:
            raise ConfigError("forward port must be in [1, 65535], got 0")
        if not isinstance(self.up, LinkConfig) or not isinstance(self.down, LinkConfig):
            raise ConfigError(f"up and down must be LinkConfig, got {self.up!r}, {self.down!r}")
        if self.seed is not None and (
            isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0
        ):
            raise ConfigError(f"seed must be an int >= 0 or None, got {self.seed!r}")
        for name in ("max_clients", "max_pending"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {value!r}")
        if not (
            isinstance(self.idle_timeout, int | float)
            and math.isfinite(self.idle_timeout)
            and self.idle_timeout > 0
        ):
            raise ConfigError(f"idle_timeout must be > 0 seconds, got {self.idle_timeout!r}")


def build_proxy_config(
    listen: str,
    forward: str,
    *,
    profile: str | None = None,
    overrides: LinkOverrides | None = None,
    seed: int | None = None,
) -> ProxyConfig:
    """Build a ``ProxyConfig`` from command-line text: addresses, a profile name and overrides.

    Args:
        listen: ``"host:port"`` or ``"[ipv6]:port"`` to listen on.
        forward: ``"host:port"`` or ``"[ipv6]:port"`` of the server.
        profile: a ``lagless.netsim`` profile name, or ``None`` for a clean link.
        overrides: fields replaced in both directions after the profile.
        seed: root seed of the link streams, or ``None`` for a random one.

    Returns:
        The validated configuration.

    Raises:
        ConfigError: a bad address, an unknown profile or an out-of-range override.
    """
    listen_addr = parse_hostport(listen, field="--listen")
    forward_addr = parse_hostport(forward, field="--forward")
    if profile is None:
        up = down = LinkConfig()
    else:
        chosen = get_profile(profile)
        up, down = chosen.up, chosen.down
    if overrides is not None:
        up, down = overrides.apply(up), overrides.apply(down)
    return ProxyConfig(listen=listen_addr, forward=forward_addr, up=up, down=down, seed=seed)


def profile_proxy_config(profile: str, listen: Address, forward: Address, seed: int) -> ProxyConfig:
    """A proxy on ``listen`` that forwards to ``forward`` through the named netsim profile.

    Both directions take the profile's link models, seeded by ``seed`` (how ``lagless demo
    --server --profile`` and ``lagless web --profile`` put a mobile network in front of a server).

    Raises:
        ConfigError: an unknown profile.
    """
    chosen = get_profile(profile)
    return ProxyConfig(listen=listen, forward=forward, up=chosen.up, down=chosen.down, seed=seed)


@dataclass(frozen=True, slots=True, kw_only=True)
class DirectionStats:
    """Counters of one direction (client → server or server → client) since the proxy started."""

    received_datagrams: int
    """Datagrams read from the sending side."""
    received_bytes: int
    """Payload bytes of those datagrams (UDP payload, no headers)."""
    forwarded_datagrams: int
    """Datagrams written to the receiving side, duplicates included."""
    forwarded_bytes: int
    """Payload bytes written to the receiving side, duplicates included."""
    duplicated_datagrams: int
    """Extra copies the link produced (each is also in ``forwarded_datagrams``)."""
    dropped: Mapping[Fate, int]
    """Datagrams the link model dropped, by ``Fate`` (every non-delivered fate has an entry)."""
    overflow_datagrams: int
    """Datagrams dropped because ``max_pending`` were already waiting."""
    rejected_datagrams: int
    """Datagrams dropped because ``max_clients`` sessions were open (client → server only)."""
    send_errors: int
    """Sends the operating system refused (full buffer, ICMP port unreachable)."""
    pending: int
    """Datagrams scheduled but not yet sent."""

    @property
    def dropped_datagrams(self) -> int:
        """All datagrams dropped by the link, the pending limit or the client limit."""
        return sum(self.dropped.values()) + self.overflow_datagrams + self.rejected_datagrams


@dataclass(frozen=True, slots=True, kw_only=True)
class ProxyStats:
    """A snapshot of the proxy's counters (see ``Proxy.stats``)."""

    listen: Address
    """The bound listening address (the real port when port 0 was asked for)."""
    forward: Address
    """The server address."""
    seed: int
    """The root seed of the link streams (drawn from OS entropy when none was given)."""
    elapsed: float
    """Seconds since ``start`` (loop clock)."""
    clients: int
    """Client sessions open now."""
    clients_seen: int
    """Distinct client sessions opened since start."""
    up: DirectionStats
    """Client → server counters."""
    down: DirectionStats
    """Server → client counters."""


class _Counters:
    """Mutable counters of one direction; ``snapshot`` freezes them."""

    __slots__ = (
        "dropped",
        "duplicated",
        "errors",
        "fwd_bytes",
        "fwd_datagrams",
        "in_bytes",
        "in_datagrams",
        "overflow",
        "pending",
        "rejected",
    )

    def __init__(self) -> None:
        self.in_datagrams = 0
        self.in_bytes = 0
        self.fwd_datagrams = 0
        self.fwd_bytes = 0
        self.duplicated = 0
        self.dropped: dict[Fate, int] = {f: 0 for f in Fate if f is not Fate.DELIVERED}
        self.overflow = 0
        self.rejected = 0
        self.errors = 0
        self.pending = 0

    def snapshot(self) -> DirectionStats:
        return DirectionStats(
            received_datagrams=self.in_datagrams,
            received_bytes=self.in_bytes,
            forwarded_datagrams=self.fwd_datagrams,
            forwarded_bytes=self.fwd_bytes,
            duplicated_datagrams=self.duplicated,
            dropped=types.MappingProxyType(dict(self.dropped)),
            overflow_datagrams=self.overflow,
            rejected_datagrams=self.rejected,
            send_errors=self.errors,
            pending=self.pending,
        )


class _Session:
    """One client: its address, its upstream socket and its two links."""

    __slots__ = ("client", "down", "last_seen", "pending", "remove_reader", "sock", "up")

    def __init__(self, client: Address, sock: socket.socket, up: Link, down: Link) -> None:
        self.client = client
        self.sock = sock
        self.up = up
        self.down = down
        self.last_seen = 0.0
        self.pending = 0
        self.remove_reader: Callable[[], None] | None = None


class Proxy:
    """A UDP link conditioner between clients and one server, driven by the running event loop.

    Args:
        config: addresses, link models, seed and limits.
    """

    def __init__(self, config: ProxyConfig) -> None:
        """Create a stopped proxy; ``start`` binds the socket."""
        if not isinstance(config, ProxyConfig):
            raise ConfigError(f"config must be a ProxyConfig, got {config!r}")
        self._config = config
        self._seed = (
            config.seed
            if config.seed is not None
            else int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> 1)
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sock: socket.socket | None = None
        self._remove_reader: Callable[[], None] | None = None
        self._forward_family = socket.AF_INET
        self._forward: Address = config.forward
        self._sessions: dict[Address, _Session] = {}
        self._clients_seen = 0
        self._started = 0.0
        self._up = _Counters()
        self._down = _Counters()
        self._sweep: asyncio.TimerHandle | None = None
        self._bound: Address | None = None
        self._closed = False

    @property
    def config(self) -> ProxyConfig:
        """The configuration the proxy was built with."""
        return self._config

    @property
    def listen_address(self) -> Address:
        """The bound listening ``(host, port)``; the real port when port 0 was asked for.

        Raises:
            LocalProtocolError: the proxy is not started.
        """
        if self._bound is None:
            raise LocalProtocolError("listen_address needs a started proxy; call start() first")
        return self._bound

    async def start(self) -> None:
        """Resolve the server, bind the listening socket and start forwarding.

        Raises:
            ConfigError: the server does not resolve or the listen address cannot be bound.
            LocalProtocolError: the proxy was already started.
        """
        if self._sock is not None or self._closed:
            raise LocalProtocolError("start() called twice; a Proxy runs once")
        loop = asyncio.get_running_loop()
        self._forward_family, self._forward = resolve(self._config.forward, field="--forward")
        self._sock = open_udp_socket(self._config.listen, field="--listen")
        name = self._sock.getsockname()
        self._bound = (str(name[0]), int(name[1]))
        self._loop = loop
        self._started = loop.time()
        self._remove_reader = add_datagram_reader(loop, self._sock, self._from_client)
        self._sweep = loop.call_later(self._config.idle_timeout / 4.0, self._expire_idle)

    async def close(self) -> None:
        """Stop forwarding, drop what is still in flight and close every socket (idempotent)."""
        self._closed = True
        if self._remove_reader is not None:
            self._remove_reader()
            self._remove_reader = None
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for session in list(self._sessions.values()):
            self._close_session(session)
        if self._sock is not None:
            self._sock.close()

    def stats(self) -> ProxyStats:
        """Return a frozen snapshot of the counters.

        Returns:
            Counters per direction, sessions, elapsed time (s) and the root seed.
        """
        elapsed = 0.0 if self._loop is None else self._loop.time() - self._started
        return ProxyStats(
            listen=self._bound if self._bound is not None else self._config.listen,
            forward=self._forward,
            seed=self._seed,
            elapsed=elapsed,
            clients=len(self._sessions),
            clients_seen=self._clients_seen,
            up=self._up.snapshot(),
            down=self._down.snapshot(),
        )

    def _open_session(self, client: Address, now: float) -> _Session | None:
        if len(self._sessions) >= self._config.max_clients:
            return None
        try:
            sock = open_udp_socket(
                wildcard_for(self._forward_family), connect=self._forward, field="--forward"
            )
        except ConfigError:
            return None
        index = self._clients_seen
        self._clients_seen += 1
        up = Link(self._config.up, rng=stream(self._seed, f"proxy.client{index}.up"))
        down = Link(self._config.down, rng=stream(self._seed, f"proxy.client{index}.down"))
        session = _Session(client, sock, up, down)
        session.last_seen = now
        loop = self._loop
        assert loop is not None  # invariant: sessions open only after start()
        session.remove_reader = add_datagram_reader(
            loop, sock, lambda data, _addr: self._from_server(session, data)
        )
        self._sessions[client] = session
        return session

    def _close_session(self, session: _Session) -> None:
        if session.remove_reader is not None:
            session.remove_reader()
            session.remove_reader = None
        session.sock.close()
        self._sessions.pop(session.client, None)

    def _expire_idle(self) -> None:
        loop = self._loop
        assert loop is not None  # invariant: the sweep is scheduled only after start()
        now = loop.time()
        for session in list(self._sessions.values()):
            if session.pending == 0 and now - session.last_seen > self._config.idle_timeout:
                self._close_session(session)
        self._sweep = loop.call_later(self._config.idle_timeout / 4.0, self._expire_idle)

    def _from_client(self, data: bytes, client: Address) -> None:
        loop = self._loop
        assert loop is not None  # invariant: the reader is registered by start()
        now = loop.time()
        counters = self._up
        counters.in_datagrams += 1
        counters.in_bytes += len(data)
        session = self._sessions.get(client)
        if session is None:
            session = self._open_session(client, now)
            if session is None:
                counters.rejected += 1
                return
        session.last_seen = now
        self._schedule(session, session.up, counters, data, now, self._send_up)

    def _from_server(self, session: _Session, data: bytes) -> None:
        loop = self._loop
        assert loop is not None  # invariant: the reader is registered by start()
        now = loop.time()
        counters = self._down
        counters.in_datagrams += 1
        counters.in_bytes += len(data)
        session.last_seen = now
        self._schedule(session, session.down, counters, data, now, self._send_down)

    def _schedule(
        self,
        session: _Session,
        link: Link,
        counters: _Counters,
        data: bytes,
        now: float,
        deliver: Callable[[_Session, bytes, _Counters], None],
    ) -> None:
        outcome = link.send(len(data), now)
        if not outcome.arrivals:
            counters.dropped[outcome.fate] += 1
            return
        loop = self._loop
        assert loop is not None  # invariant: datagrams arrive only after start()
        counters.duplicated += len(outcome.arrivals) - 1
        for when in outcome.arrivals:
            if counters.pending >= self._config.max_pending:
                counters.overflow += 1
                continue
            counters.pending += 1
            session.pending += 1
            loop.call_at(when, deliver, session, data, counters)

    def _send_up(self, session: _Session, data: bytes, counters: _Counters) -> None:
        if self._closed:
            return  # in flight when the proxy closed: counted in the final ``pending``
        counters.pending -= 1
        session.pending -= 1
        try:
            session.sock.send(data)
        except OSError:
            counters.errors += 1
            return
        counters.fwd_datagrams += 1
        counters.fwd_bytes += len(data)

    def _send_down(self, session: _Session, data: bytes, counters: _Counters) -> None:
        if self._closed:
            return  # in flight when the proxy closed: counted in the final ``pending``
        counters.pending -= 1
        session.pending -= 1
        sock = self._sock
        assert sock is not None  # invariant: deliveries are scheduled only after start()
        try:
            sock.sendto(data, session.client)
        except OSError:
            counters.errors += 1
            return
        counters.fwd_datagrams += 1
        counters.fwd_bytes += len(data)


async def run_proxy(
    config: ProxyConfig,
    *,
    duration: float | None = None,
    on_tick: Callable[[ProxyStats], None] | None = None,
    on_start: Callable[[ProxyStats], None] | None = None,
    tick_interval: float = DEFAULT_TICK,
    handle_signals: bool = False,
    stop: asyncio.Event | None = None,
) -> ProxyStats:
    """Run a proxy until ``duration`` elapses, a stop signal arrives or the task is cancelled.

    Args:
        config: the proxy configuration.
        duration: seconds to run, or ``None`` to run until stopped.
        on_tick: called every ``tick_interval`` seconds with a fresh snapshot (live counters).
        on_start: called once with the first snapshot, after the socket is bound.
        tick_interval: seconds between ``on_tick`` calls.
        handle_signals: stop cleanly on SIGINT/SIGTERM (for command-line use; main thread only).
        stop: set it to stop the proxy (the final counters are still returned).

    Returns:
        The final counters, taken before the sockets close (``pending`` is what was dropped).

    Raises:
        ConfigError: a bad address or a bind failure (see ``Proxy.start``), or a bad duration.
    """
    if duration is not None and not (math.isfinite(duration) and duration >= 0.0):
        raise ConfigError(f"duration must be a finite number of seconds >= 0, got {duration!r}")
    if not (math.isfinite(tick_interval) and tick_interval > 0.0):
        raise ConfigError(f"tick_interval must be > 0 seconds, got {tick_interval!r}")
    loop = asyncio.get_running_loop()
    proxy = Proxy(config)
    await proxy.start()
    stop = stop if stop is not None else asyncio.Event()
    signals: list[signal.Signals] = []
    if handle_signals:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError, ValueError):
                continue
            signals.append(sig)
    deadline = None if duration is None else loop.time() + duration
    try:
        if on_start is not None:
            on_start(proxy.stats())
        while not stop.is_set():
            wait = tick_interval if deadline is None else min(tick_interval, deadline - loop.time())
            if wait <= 0.0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
            if on_tick is not None:
                on_tick(proxy.stats())
        return proxy.stats()
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
        await proxy.close()


def describe(stats: ProxyStats) -> str:
    """One line naming the proxy's endpoints and seed, e.g. for a start-up banner.

    Args:
        stats: any snapshot of the proxy.

    Returns:
        ``"proxy 127.0.0.1:4000 -> 127.0.0.1:5000 seed 1"``.
    """
    return (
        f"proxy {format_hostport(stats.listen)} -> {format_hostport(stats.forward)} "
        f"seed {stats.seed}"
    )
