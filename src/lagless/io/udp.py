"""Non-blocking UDP socket helpers: address parsing, binding, an ``add_reader`` drain loop, uvloop.

Implements DESIGN.md "Speed rules" (receive path): a socket is registered with ``loop.add_reader``
and, on each readiness callback, drained with ``recvfrom`` until ``BlockingIOError``. The stock
``DatagramProtocol`` (one callback per datagram, a fresh 256 KiB read buffer each time) is never
used. uvloop is used when it is installed and is never required: `run`
runs a program on it (like ``asyncio.run``) and `install_uvloop` makes it the global default.

Decisions:

    * ``recvfrom(MAX_DATAGRAM)`` hands back the datagram's own ``bytes`` (CPython shrinks the
      buffer in place); measured 0.7 µs a datagram cheaper than ``recvfrom_into`` a reused buffer
      and a copy, and an IPv4 sender's ``(host, port)`` is passed on as the socket gives it.
    * ``"host:port"`` splits at the last colon; an IPv6 host must be bracketed (``"[::1]:9000"``)
      because ``"::1:9000"`` is ambiguous. Bare IPv6 text raises ``ConfigError``
      (``test_udp.py::test_parse_hostport_rejects_bare_ipv6``).
    * One readiness callback reads at most ``DRAIN_BATCH`` datagrams, then yields to the loop, so a
      flooded socket cannot starve timers; the reader stays registered, so the loop calls it again
      at once (``test_udp.py::test_drain_reads_more_than_one_batch``).
    * ``ConnectionRefusedError`` on a read is the kernel reporting an ICMP "port unreachable" for
      an earlier send on a connected socket; it is skipped, not fatal
      (``test_udp.py::test_drain_survives_icmp_refused``).
    * Sockets ask for ``SOCKET_BUFFER`` (4 MiB) of receive and send buffer; the kernel clamps it
      to ``net.core.rmem_max``/``wmem_max``. A server with 256 clients on a busy machine lost
      thousands of datagrams per run in the kernel with Linux's default 208 KiB and none with
      4 MiB (``benchmarks/server.py``) (``test_udp.py::test_sockets_ask_for_large_buffers``).
    * Bind and name-resolution failures raise ``ConfigError`` naming the address, so the CLI turns
      them into one line (``test_udp.py::test_open_udp_socket_reports_bind_failure``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import socket
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar

from lagless._types import Address
from lagless.errors import ConfigError

MAX_DATAGRAM: Final = 65535  # bytes: the largest UDP payload a recv can return
SOCKET_BUFFER: Final = 4 * 1024 * 1024  # bytes asked for SO_RCVBUF and SO_SNDBUF
DRAIN_BATCH: Final = 256  # datagrams read per readiness callback before yielding to the loop
TIMER_SLACK: Final = 0.001  # seconds added to a timer on a loop other than asyncio's own

R = TypeVar("R")

DatagramHandler = Callable[[bytes, Address], None]
"""Called once per received datagram with its bytes and the sender's ``(host, port)``."""


def parse_hostport(text: str, *, field: str = "address") -> Address:
    """Parse ``"host:port"`` or ``"[ipv6]:port"`` into an :data:`~lagless._types.Address`.

    Args:
        text: e.g. ``"127.0.0.1:9000"``, ``"localhost:0"``, ``"[::1]:9000"``.
        field: the name used in error messages (e.g. the CLI option ``"--listen"``).

    Returns:
        ``(host, port)``; brackets are removed from IPv6 hosts. Port 0 means "any free port".

    Raises:
        ConfigError: no port, a port outside [0, 65535], an empty host, an unbracketed IPv6 host,
            or brackets around something that is not an IPv6 address.
    """
    allowed = "expected HOST:PORT or [IPV6]:PORT with PORT in [0, 65535]"
    text = text.strip()
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise ConfigError(f"{field} must be HOST:PORT, got {text!r} ({allowed})")
    if host.startswith("[") or host.endswith("]"):
        if not (host.startswith("[") and host.endswith("]")):
            raise ConfigError(f"{field} has unbalanced brackets in {text!r} ({allowed})")
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host.split("%", 1)[0])
        except ValueError:
            raise ConfigError(
                f"{field} brackets must hold an IPv6 address, got {text!r} ({allowed})"
            ) from None
    elif ":" in host:
        raise ConfigError(f"{field} IPv6 hosts need brackets, got {text!r} (e.g. '[::1]:9000')")
    if not host:
        raise ConfigError(f"{field} has an empty host in {text!r} ({allowed})")
    if not port_text.isdigit() or int(port_text) > 65535:
        raise ConfigError(f"{field} has a bad port in {text!r} ({allowed})")
    return (host, int(port_text))


def format_hostport(addr: Address) -> str:
    """Format ``(host, port)`` as ``"host:port"``, bracketing IPv6 hosts (inverse of parsing).

    Args:
        addr: ``(host, port)``.

    Returns:
        Text that :func:`parse_hostport` maps back to the same ``(host, port)``.
    """
    host, port = addr[0], addr[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def resolve(addr: Address, *, field: str = "address") -> tuple[socket.AddressFamily, Address]:
    """Resolve ``(host, port)`` to its address family and numeric ``(ip, port)`` for datagrams.

    Args:
        addr: ``(host, port)``; the host may be a name (``"localhost"``) or a literal IP.
        field: the name used in error messages.

    Returns:
        ``(family, (ip, port))`` of the first ``getaddrinfo`` answer (``AF_INET`` or ``AF_INET6``).

    Raises:
        ConfigError: the host does not resolve.
    """
    try:
        infos = socket.getaddrinfo(addr[0], addr[1], type=socket.SOCK_DGRAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(f"{field} host {addr[0]!r} does not resolve: {exc}") from None
    for family, _type, _proto, _canon, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            return socket.AddressFamily(family), (str(sockaddr[0]), int(sockaddr[1]))
    raise ConfigError(f"{field} host {addr[0]!r} has no IPv4 or IPv6 address")


def open_udp_socket(
    local: Address | str,
    *,
    connect: Address | None = None,
    field: str = "address",
) -> socket.socket:
    """Open a non-blocking UDP socket bound to ``local``, optionally connected to ``connect``.

    Args:
        local: where to bind, as ``(host, port)`` or ``"host:port"`` text; port 0 picks a free one.
            The family (IPv4/IPv6) follows the host. IPv6 sockets are IPv6-only.
        connect: if given, the socket is connected, so it only receives datagrams from that peer
            and ``send`` needs no address.
        field: the name used in error messages (e.g. ``"--listen"``).

    Returns:
        The bound, non-blocking socket; the caller closes it.

    Raises:
        ConfigError: bad text, an unresolvable host, or the OS refused the bind or connect.
    """
    if isinstance(local, str):
        local = parse_hostport(local, field=field)
    family, sockaddr = resolve(local, field=field)
    sock = socket.socket(family, socket.SOCK_DGRAM)
    try:
        sock.setblocking(False)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        for option in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            with contextlib.suppress(OSError):  # the kernel clamps it to its maximum anyway
                sock.setsockopt(socket.SOL_SOCKET, option, SOCKET_BUFFER)
        try:
            sock.bind(sockaddr)
        except OSError as exc:
            raise ConfigError(f"{field} cannot bind {format_hostport(sockaddr)}: {exc}") from None
        if connect is not None:
            try:
                sock.connect(connect)
            except OSError as exc:
                raise ConfigError(
                    f"{field} cannot reach {format_hostport(connect)}: {exc}"
                ) from None
    except BaseException:
        sock.close()
        raise
    return sock


def wildcard_for(family: socket.AddressFamily) -> Address:
    """Return the any-address with port 0 for ``family``: ``("0.0.0.0", 0)`` or ``("::", 0)``.

    Args:
        family: ``AF_INET`` or ``AF_INET6``.

    Returns:
        An address that binds an ephemeral port on every interface of that family.
    """
    return ("::", 0) if family == socket.AF_INET6 else ("0.0.0.0", 0)


def drain(sock: socket.socket, handler: DatagramHandler, limit: int) -> int:
    """Read up to ``limit`` datagrams from a non-blocking ``sock`` and pass each to ``handler``.

    Args:
        sock: a non-blocking datagram socket.
        handler: called with each datagram's ``bytes`` and its sender's ``(host, port)``.
        limit: the most datagrams to read in this call.

    Returns:
        How many datagrams were handed to ``handler`` (fewer than ``limit`` means the socket is
        empty).
    """
    receive = sock.recvfrom
    count = 0
    while count < limit:
        try:
            data, sender = receive(MAX_DATAGRAM)
        except BlockingIOError:
            break
        except ConnectionRefusedError:
            # ICMP port-unreachable for an earlier send on a connected socket: not fatal for UDP.
            continue
        count += 1
        # IPv6 senders come as (host, port, flowinfo, scope_id)
        handler(data, sender if len(sender) == 2 else (sender[0], sender[1]))
    return count


def add_datagram_reader(
    loop: asyncio.AbstractEventLoop,
    sock: socket.socket,
    handler: DatagramHandler,
    *,
    batch: int = DRAIN_BATCH,
) -> Callable[[], None]:
    """Register ``sock`` with ``loop.add_reader``; each wake-up drains it into ``handler``.

    Args:
        loop: the running event loop (asyncio or uvloop).
        sock: a non-blocking datagram socket.
        handler: called once per datagram with its bytes and sender; it must not block.
        batch: the most datagrams read per wake-up before yielding to the loop.

    Returns:
        A function that unregisters the reader (it does not close the socket).
    """
    fd = sock.fileno()

    def on_readable() -> None:
        drain(sock, handler, batch)

    loop.add_reader(fd, on_readable)

    def remove() -> None:
        loop.remove_reader(fd)

    return remove


def is_stock_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` keeps asyncio's own clock (``time.monotonic``), as opposed to uvloop's."""
    return type(loop).time is asyncio.BaseEventLoop.time


def timer_slack(loop: asyncio.AbstractEventLoop) -> float:
    """Seconds to add to a timer on ``loop`` so that it never fires before its deadline.

    asyncio's own loop runs a timer once its clock reached the deadline: 0. Any other loop gets
    `TIMER_SLACK` (1 ms): uvloop keeps time in whole milliseconds and rounds a timer's delay to
    the nearest one, so a timer (or ``asyncio.sleep``) less than half a millisecond away fires at
    once, before ``loop.time()`` reached it, and a loop that waits for a deadline spins until it
    does.
    """
    return 0.0 if is_stock_loop(loop) else TIMER_SLACK


async def sleep_until(deadline: float, clock: Callable[[], float]) -> None:
    """Sleep until ``clock()`` (seconds, the running loop's pace) reaches ``deadline`` (s).

    Unlike ``asyncio.sleep(deadline - clock())`` it does not return early on uvloop (see
    `timer_slack`); it may return up to `TIMER_SLACK` late there.
    """
    wait = deadline - clock()
    if wait > 0.0:
        await asyncio.sleep(wait + timer_slack(asyncio.get_running_loop()))


def install_uvloop() -> bool:
    """Make new asyncio event loops uvloop loops, if uvloop is installed (the ``[fast]`` extra).

    Returns:
        ``True`` if uvloop's event-loop policy is now installed, ``False`` if uvloop is missing
        (asyncio's default loop is then used unchanged).
    """
    try:
        import uvloop
    except ImportError:
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


def run(main: Coroutine[Any, Any, R], *, debug: bool | None = None, freeze_gc: bool = True) -> R:
    """Run ``main`` like ``asyncio.run``, on a uvloop loop if uvloop is installed.

    Unlike `install_uvloop` it leaves the global event-loop policy alone.

    With ``freeze_gc`` it first moves every object allocated so far (imported modules, their
    functions and tables, the program's configuration) into the garbage collector's permanent
    generation (``gc.freeze()``), so the collections of a long-running program walk only what
    it made since. A transport allocates a few short-lived tuples per message; their survivors
    trigger full collections, which walked every import-time object: a fifth of the
    instructions per 100-byte message of two connections in a process that imported numpy
    (``benchmarks/transport.py``, callgrind: 46 000 before, 36 000 after). Nothing is freed
    late: frozen objects were alive anyway, and new garbage is collected as before.

    Args:
        main: the program's top-level coroutine.
        debug: asyncio debug mode; ``None`` keeps the default.
        freeze_gc: call ``gc.freeze()`` before the loop starts.

    Returns:
        What ``main`` returned.
    """
    if freeze_gc:
        gc.freeze()
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main, debug=debug)
    with asyncio.Runner(debug=debug, loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)
