"""Tests for lagless.io.udp: address parsing, socket opening, the add_reader drain loop, uvloop."""

from __future__ import annotations

import asyncio
import gc
import select
import socket
import sys

import pytest

from lagless.errors import ConfigError
from lagless.io.endpoint import open_endpoint
from lagless.io.udp import (
    DRAIN_BATCH,
    add_datagram_reader,
    drain,
    format_hostport,
    install_uvloop,
    open_udp_socket,
    parse_hostport,
    resolve,
    run,
    sleep_until,
    timer_slack,
    wildcard_for,
)
from tests.io.fake import Fake


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


HAS_IPV6 = _has_ipv6_loopback()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:9000", ("127.0.0.1", 9000)),
        ("localhost:0", ("localhost", 0)),
        ("[::1]:9000", ("::1", 9000)),
        ("[fe80::1%lo]:65535", ("fe80::1%lo", 65535)),
        (" example.org:53 ", ("example.org", 53)),
    ],
)
def test_parse_hostport_accepts(text: str, expected: tuple[str, int]) -> None:
    assert parse_hostport(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "9000",
        "host",
        "host:",
        ":9000",
        "host:65536",
        "host:-1",
        "host:9x",
        "[::1]",
        "[1.2.3.4]:80",
    ],
)
def test_parse_hostport_rejects(text: str) -> None:
    with pytest.raises(ConfigError, match="--listen"):
        parse_hostport(text, field="--listen")


def test_parse_hostport_rejects_bare_ipv6() -> None:
    with pytest.raises(ConfigError, match="brackets"):
        parse_hostport("::1:9000")


@pytest.mark.parametrize("addr", [("127.0.0.1", 1), ("::1", 9000), ("host.example", 0)])
def test_format_hostport_round_trips(addr: tuple[str, int]) -> None:
    assert parse_hostport(format_hostport(addr)) == addr


def test_resolve_unknown_host_is_config_error() -> None:
    with pytest.raises(ConfigError, match=r"--forward host 'no-such-host\.invalid'"):
        resolve(("no-such-host.invalid", 1), field="--forward")


def test_wildcard_for_family() -> None:
    assert wildcard_for(socket.AF_INET) == ("0.0.0.0", 0)
    assert wildcard_for(socket.AF_INET6) == ("::", 0)


def test_open_udp_socket_is_bound_and_non_blocking() -> None:
    with open_udp_socket("127.0.0.1:0") as sock:
        assert sock.family == socket.AF_INET
        assert sock.getsockname()[1] != 0
        assert sock.getblocking() is False


def test_open_udp_socket_reports_bind_failure() -> None:
    with (
        open_udp_socket(("127.0.0.1", 0)) as taken,
        pytest.raises(ConfigError, match=r"--listen cannot bind 127\.0\.0\.1:"),
    ):
        open_udp_socket(taken.getsockname(), field="--listen")


@pytest.mark.skipif(not HAS_IPV6, reason="environment limit: this machine has no ::1")
def test_open_udp_socket_ipv6_connected() -> None:
    with (
        open_udp_socket("[::1]:0") as server,
        open_udp_socket("[::1]:0", connect=server.getsockname()[:2]) as client,
    ):
        assert client.family == socket.AF_INET6
        client.send(b"six")
        server.setblocking(True)
        server.settimeout(2.0)
        data, sender = server.recvfrom(100)
        assert data == b"six"
        assert sender[1] == client.getsockname()[1]


def _pair() -> tuple[socket.socket, socket.socket]:
    receiver = open_udp_socket("127.0.0.1:0")
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.connect(receiver.getsockname())
    return receiver, sender


def _wait_readable(sock: socket.socket) -> None:
    ready, _, _ = select.select([sock], [], [], 2.0)
    assert ready, "datagram did not arrive within 2 s"


def test_drain_reads_until_empty_and_copies() -> None:
    receiver, sender = _pair()
    with receiver, sender:
        payloads = [bytes([i]) * (i + 1) for i in range(10)]
        for payload in payloads:
            sender.send(payload)
        _wait_readable(receiver)
        got: list[tuple[bytes, tuple[str, int]]] = []
        total = 0
        for _ in range(50):
            total += drain(receiver, lambda d, a: got.append((d, a)), 1000)
            if total == len(payloads):
                break
        assert [d for d, _ in got] == payloads
        assert all(a == sender.getsockname() for _, a in got)
        assert all(type(d) is bytes for d, _ in got)
        assert drain(receiver, lambda d, a: got.append((d, a)), 1000) == 0


def test_drain_respects_limit() -> None:
    receiver, sender = _pair()
    with receiver, sender:
        for i in range(5):
            sender.send(bytes([i]))
        _wait_readable(receiver)
        got: list[bytes] = []
        assert drain(receiver, lambda d, a: got.append(d), 2) == 2
        assert got == [b"\x00", b"\x01"]


def test_drain_survives_icmp_refused() -> None:
    closed = open_udp_socket("127.0.0.1:0")
    dead_addr = closed.getsockname()
    closed.close()
    with open_udp_socket("127.0.0.1:0", connect=dead_addr) as sock:
        sock.send(b"ping")  # the kernel answers with ICMP port unreachable
        got: list[bytes] = []
        for _ in range(20):
            assert drain(sock, lambda d, a: got.append(d), 10) == 0
        assert got == []


async def _collect_through_reader(count: int, batch: int = DRAIN_BATCH) -> list[bytes]:
    loop = asyncio.get_running_loop()
    receiver, sender = _pair()
    got: list[bytes] = []
    done = asyncio.Event()

    def handler(data: bytes, addr: tuple[str, int]) -> None:
        got.append(data)
        if len(got) == count:
            done.set()

    with receiver, sender:
        remove = add_datagram_reader(loop, receiver, handler, batch=batch)
        try:
            for i in range(count):
                sender.send(i.to_bytes(4, "big"))
            await asyncio.wait_for(done.wait(), 5.0)
        finally:
            remove()
    return got


def test_drain_reads_more_than_one_batch() -> None:
    # 40 datagrams queued at once, read 3 per wake-up: the reader must fire again until empty
    count = 40
    got = asyncio.run(_collect_through_reader(count, batch=3))
    assert got == [i.to_bytes(4, "big") for i in range(count)]


def test_install_uvloop_uses_uvloop_when_present() -> None:
    uvloop = pytest.importorskip("uvloop")
    try:
        assert install_uvloop() is True
        loop = asyncio.new_event_loop()
        try:
            assert isinstance(loop, uvloop.Loop)
        finally:
            loop.close()
        got = asyncio.run(_collect_through_reader(40, batch=3))
        assert got == [i.to_bytes(4, "big") for i in range(40)]
    finally:
        asyncio.set_event_loop_policy(None)


def test_install_uvloop_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)
    before = asyncio.get_event_loop_policy()
    assert install_uvloop() is False
    assert asyncio.get_event_loop_policy() is before


async def _endpoint_round_trip() -> tuple[str, bytes]:
    """Echo one datagram through an endpoint on the running loop; name the loop's module."""
    async with open_endpoint(Fake()) as server, open_endpoint(Fake()) as client:
        client.call(lambda fake: fake.outbox.append((b"echo", server.address)))
        reply = await client.receive(timeout=5)
    assert isinstance(reply, bytes)
    return type(asyncio.get_running_loop()).__module__, reply


def test_run_uses_uvloop_when_present() -> None:
    pytest.importorskip("uvloop")
    before = asyncio.get_event_loop_policy()
    module, reply = run(_endpoint_round_trip(), freeze_gc=False)
    assert module.startswith("uvloop")
    assert reply == b"ev echo"
    assert asyncio.get_event_loop_policy() is before  # the global policy is left alone


def test_run_without_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "uvloop", None)
    module, reply = run(_endpoint_round_trip(), freeze_gc=False)
    assert module.startswith("asyncio")
    assert reply == b"ev echo"


async def _frozen() -> int:
    return gc.get_freeze_count()


def test_run_freezes_the_import_time_heap_unless_told_not_to() -> None:
    before = gc.get_freeze_count()
    try:
        assert run(_frozen(), freeze_gc=False) == before
        assert run(_frozen()) > before  # what the process allocated since, frozen too
    finally:
        gc.unfreeze()  # give the test process its collector back


@pytest.mark.skipif(not HAS_IPV6, reason="environment limit: this machine has no ::1")
def test_drain_gives_ipv6_senders_as_host_and_port() -> None:
    with (
        open_udp_socket("[::1]:0") as receiver,
        open_udp_socket("[::1]:0", connect=receiver.getsockname()[:2]) as sender,
    ):
        sender.send(b"hello")
        _wait_readable(receiver)
        got: list[tuple[bytes, tuple[str, int]]] = []
        assert drain(receiver, lambda d, a: got.append((d, a)), 10) == 1
        assert got == [(b"hello", tuple(sender.getsockname()[:2]))]


def test_sockets_ask_for_large_buffers() -> None:
    sock = open_udp_socket("127.0.0.1:0")
    try:
        default = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            base = default.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        finally:
            default.close()
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF) > base  # Linux: clamped, x2
    finally:
        sock.close()


@pytest.mark.parametrize("ahead", [0.0002, 0.0006, 0.003])
def test_sleep_until_never_returns_before_the_deadline_on_uvloop(ahead: float) -> None:
    """uvloop rounds a sleep to whole milliseconds; ``sleep_until`` still waits for the deadline."""
    import uvloop

    async def main() -> tuple[int, int]:
        loop = asyncio.get_running_loop()
        early_plain = early_until = 0
        for _ in range(20):
            deadline = loop.time() + ahead
            await asyncio.sleep(deadline - loop.time())
            early_plain += loop.time() < deadline
            deadline = loop.time() + ahead
            await sleep_until(deadline, loop.time)
            early_until += loop.time() < deadline
        return early_plain, early_until

    early_plain, early_until = uvloop.run(main())
    assert early_until == 0
    if ahead < 0.0005:
        assert early_plain > 0  # the rounding this guards against is still there


def test_timer_slack_is_zero_on_asyncio_and_a_millisecond_on_uvloop() -> None:
    import uvloop

    async def slack() -> float:
        return timer_slack(asyncio.get_running_loop())

    assert asyncio.run(slack()) == 0.0
    assert uvloop.run(slack()) == 0.001
