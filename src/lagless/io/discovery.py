"""UDP sockets and a poll driver for LAN discovery: broadcast or multicast, shared discovery ports.

The io half of spec 003 checklist 7.1 (LAN discovery; the sans-I/O half is
``lagless.game.discovery``). `open_discovery_socket` opens a non-blocking UDP socket that may send
to broadcast addresses (``SO_BROADCAST``) and, for a responder, shares its port with other
processes on the host (``SO_REUSEADDR`` and, where the OS has it, ``SO_REUSEPORT``), so several
game servers on one machine all hear a broadcast query. `BroadcastEndpoint` drives any sans-I/O
object on such a socket from a game loop, like `PollEndpoint`: ``pump()`` once per frame,
``wait(timeout)`` to sleep until a datagram or the object's deadline.

Decisions: on Linux a datagram sent to a broadcast address (``255.255.255.255``, a subnet's
broadcast, or ``127.255.255.255`` on loopback) reaches every socket bound to the port with
``SO_REUSEADDR``, while a unicast datagram reaches only one of them; tests therefore use
``127.255.255.255``. Multicast is the alternative where broadcast is filtered: responders join a
group (e.g. ``lagless.game.DEFAULT_DISCOVERY_GROUP``, in the organisation-local 239.255/16
scope) and the client queries ``group:port``; it goes out with TTL 1 and loops back to the
sending host. A responder binds ``0.0.0.0`` (the wildcard) to hear broadcasts. A send the
OS refuses (no route, broadcast not permitted) is counted in ``send_errors``, never raised; an
exception from the driven object is counted in ``errors`` and logged, and the loop goes on.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import selectors
import socket
import struct
import time
from collections.abc import Callable
from types import TracebackType
from typing import Generic, TypeVar

from lagless._types import Address, SansIO
from lagless.errors import ConfigError
from lagless.io.drive import pump
from lagless.io.udp import drain, format_hostport, parse_hostport, resolve

__all__ = ["BroadcastEndpoint", "open_discovery_socket"]

T = TypeVar("T", bound=SansIO)
_log = logging.getLogger("lagless.io")
BATCH = 256  # datagrams read per pump at most
ERROR_RETRY = 0.01  # seconds before a pump that raised is tried again


def open_discovery_socket(
    local: Address | str,
    *,
    broadcast: bool = True,
    reuse: bool = False,
    group: str | None = None,
    interface: str = "0.0.0.0",
) -> socket.socket:
    """Open a non-blocking IPv4 UDP socket for discovery.

    Args:
        local: Where to bind (``"0.0.0.0:47800"`` for a responder, ``"0.0.0.0:0"`` for a client).
        broadcast: Allow sending to broadcast addresses.
        reuse: Share the port with other sockets (every responder on a host binds the same one).
        group: An IPv4 multicast group to join (a responder listening for multicast queries).
        interface: The interface (its IPv4 address) for joining ``group`` and for sending
            multicast; ``0.0.0.0`` lets the OS choose. Multicast goes out with TTL 1 (the LAN).

    Raises:
        ConfigError: bad address, not IPv4, not a multicast group, or the OS refused.
    """
    if isinstance(local, str):
        local = parse_hostport(local, field="discovery address")
    family, sockaddr = resolve(local, field="discovery address")
    if family != socket.AF_INET:
        raise ConfigError(f"discovery needs an IPv4 address, got {format_hostport(local)}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        if broadcast:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        if reuse:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if hasattr(socket, "SO_REUSEPORT"):
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        try:
            sock.bind(sockaddr)
        except OSError as exc:
            raise ConfigError(f"discovery cannot bind {format_hostport(sockaddr)}: {exc}") from None
        _multicast(sock, group, interface)
    except BaseException:
        sock.close()
        raise
    return sock


def _multicast(sock: socket.socket, group: str | None, interface: str) -> None:
    try:
        local = ipaddress.IPv4Address(interface)
        joined = None if group is None else ipaddress.IPv4Address(group)
    except ValueError:
        raise ConfigError(
            f"discovery group and interface must be IPv4 addresses, got {group}, {interface}"
        ) from None
    if joined is not None and not joined.is_multicast:
        raise ConfigError(f"discovery group must be a multicast address (224/4), got {group}")
    try:
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_LOOP, 1)
        if not local.is_unspecified:
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, local.packed)
        if joined is not None:
            membership = struct.pack("4s4s", joined.packed, local.packed)
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
    except OSError as exc:
        raise ConfigError(
            f"discovery cannot use multicast group {group} on {interface}: {exc}"
        ) from None


class BroadcastEndpoint(Generic[T]):
    """Drive a sans-I/O object on a discovery socket from a game loop (poll style).

    Args:
        obj: Any sans-I/O object (a discovery client or responder, or a game client).
        local: Address to bind.
        broadcast: Allow broadcast destinations.
        reuse: Share the port (responders).
        group: A multicast group to join (responders).
        interface: Interface address for multicast (see `open_discovery_socket`).
        clock: Monotonic clock in seconds.
    """

    def __init__(
        self,
        obj: T,
        local: Address | str = "0.0.0.0:0",
        *,
        broadcast: bool = True,
        reuse: bool = False,
        group: str | None = None,
        interface: str = "0.0.0.0",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.obj = obj
        self.sock = open_discovery_socket(
            local, broadcast=broadcast, reuse=reuse, group=group, interface=interface
        )
        self._clock = clock
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.sock, selectors.EVENT_READ)
        self._deadline: float | None = None
        self._closed = False
        self.errors = 0
        """Exceptions raised by the object and caught here."""
        self.send_errors = 0
        """Datagrams the OS refused to send."""
        self._pump()

    @property
    def address(self) -> Address:
        """The bound local address."""
        host, port = self.sock.getsockname()[:2]
        return (str(host), int(port))

    def now(self) -> float:
        """The endpoint's clock (s)."""
        return self._clock()

    def call(self, fn: Callable[[T], object]) -> None:
        """Run ``fn(obj)`` (an application verb), then pump."""
        fn(self.obj)
        self._pump()

    def pump(self) -> list[object]:
        """Read waiting datagrams, run due timers, send, and return the object's new events."""
        now = self._clock()

        def feed(data: bytes, addr: Address) -> None:
            self._guard(lambda: self.obj.receive_datagram(data, addr, now))

        try:
            drain(self.sock, feed, BATCH)
        except OSError:
            self.errors += 1
        if self._deadline is not None and now >= self._deadline:
            self._guard(lambda: self.obj.handle_timer(now))
        self._pump()
        events: list[object] = []
        while True:
            event = self._guard(self.obj.next_event)
            if event is None:
                return events
            events.append(event)

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep until a datagram arrives, the object's deadline, or ``timeout`` s; don't pump."""
        if self._deadline is not None:
            until = max(0.0, self._deadline - self._clock())
            timeout = until if timeout is None else min(timeout, until)
        return bool(self._selector.select(None if timeout is None else max(0.0, timeout)))

    def close(self) -> None:
        """Close the socket (idempotent)."""
        if not self._closed:
            self._closed = True
            self._selector.close()
            self.sock.close()

    def __enter__(self) -> BroadcastEndpoint[T]:
        """Return the endpoint."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the endpoint."""
        self.close()

    def _send(self, data: bytes, addr: Address) -> None:
        try:
            self.sock.sendto(data, addr)
        except OSError:
            self.send_errors += 1

    def _pump(self) -> None:
        now = self._clock()
        errors = self.errors
        deadline = self._guard(lambda: pump(self.obj, now, self._send))
        if self.errors > errors:
            self._deadline = now + ERROR_RETRY  # retry soon rather than never, or at once
        else:
            self._deadline = deadline if isinstance(deadline, float | int) else None

    def _guard(self, fn: Callable[[], object]) -> object:
        try:
            return fn()
        except Exception:
            self.errors += 1
            if self.errors <= 10:
                _log.exception("discovery endpoint: the driven object raised")
            return None
