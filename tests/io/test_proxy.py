"""Tests for ``lagless proxy``: real processes on loopback, plus the Proxy class in one process.

The end-to-end tests start the proxy (``python -m lagless proxy``) and a UDP echo server as two
separate processes and measure, from this process, what a client sees through them.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.io.proxy import (
    DEFAULT_REORDER_DELAY,
    Proxy,
    ProxyConfig,
    ProxyStats,
    build_proxy_config,
    overrides_from_flags,
    run_proxy,
)
from lagless.io.udp import add_datagram_reader, open_udp_socket, parse_hostport
from lagless.netsim import Fate, LinkConfig, get_profile

ECHO_SERVER = """
import socket, sys
host = sys.argv[1]
sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
sock.bind((host, 0))
print(sock.getsockname()[1], flush=True)
while True:
    data, addr = sock.recvfrom(65535)
    sock.sendto(data, addr)
"""

ENV = {**os.environ, "COLUMNS": "400", "PYTHONIOENCODING": "utf-8", "NO_COLOR": "1"}


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def _readline(proc: subprocess.Popen[str], timeout: float) -> str:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, f"no output within {timeout} s; stderr: {_stderr(proc)}"
    return proc.stdout.readline().strip()


def _stderr(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None or proc.stderr is None:
        return "(still running)"
    return proc.stderr.read()


def _kill(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=5)


@contextmanager
def _processes(host: str, proxy_args: list[str]) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """Start the echo server, then the proxy forwarding to it; yield (proxy, proxy port)."""
    procs: list[subprocess.Popen[str]] = []
    try:
        echo = subprocess.Popen(
            [sys.executable, "-c", ECHO_SERVER, host],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        procs.append(echo)
        echo_port = int(_readline(echo, 10.0))
        bracketed = f"[{host}]" if ":" in host else host
        proxy = subprocess.Popen(
            [
                *(sys.executable, "-m", "lagless", "proxy", "--listen", f"{bracketed}:0"),
                *("--forward", f"{bracketed}:{echo_port}", "--quiet", *proxy_args),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
        )
        procs.append(proxy)
        banner = _readline(proxy, 15.0)
        words = banner.split()
        assert words[0] == "proxy", banner
        assert words[3] == f"{bracketed}:{echo_port}", banner
        yield proxy, parse_hostport(words[1])[1]
    finally:
        for proc in procs:
            _kill(proc)


def _exchange(
    host: str, port: int, count: int, *, spacing: float, tail: float
) -> tuple[dict[int, bytes], dict[int, list[tuple[bytes, float]]]]:
    """Send ``count`` numbered datagrams to the proxy; return what was sent and what came back."""
    rng = np.random.default_rng(12345)
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sent: dict[int, bytes] = {}
    sent_at: dict[int, float] = {}
    replies: dict[int, list[tuple[bytes, float]]] = {}
    with socket.socket(family, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        sock.connect((host, port))

        def receive_until(deadline: float) -> None:
            while True:
                left = deadline - time.perf_counter()
                ready, _, _ = select.select([sock], [], [], max(0.0, left))
                if not ready:
                    return
                data = sock.recv(65535)
                now = time.perf_counter()
                seq = int.from_bytes(data[:4], "big")
                replies.setdefault(seq, []).append((data, now - sent_at.get(seq, now)))

        start = time.perf_counter()
        for seq in range(count):
            size = int(rng.integers(4, 1200))
            payload = seq.to_bytes(4, "big") + rng.bytes(size - 4)
            sent[seq] = payload
            sent_at[seq] = time.perf_counter()
            sock.send(payload)
            receive_until(start + (seq + 1) * spacing)
        receive_until(time.perf_counter() + tail)
    return sent, replies


def _summary_rows(output: str) -> dict[str, dict[str, int]]:
    """Parse the summary table printed on exit into {direction: {counter: value}}."""
    rows: dict[str, dict[str, int]] = {"up": {}, "down": {}}
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("│").split("│")]
        if len(cells) == 3 and cells[1].isdigit() and cells[2].isdigit():
            rows["up"][cells[0]] = int(cells[1])
            rows["down"][cells[0]] = int(cells[2])
    assert "summary:" in output, output
    assert {"in", "forwarded", "lost", "pending"} <= set(rows["up"]), output
    return rows


def test_proxy_between_two_processes() -> None:
    count, loss, latency = 500, 0.2, 0.050
    args = ["--latency-ms", "50", "--loss", "0.2", "--seed", "1", "--duration", "3.5"]
    with _processes("127.0.0.1", args) as (proxy, port):
        sent, replies = _exchange("127.0.0.1", port, count, spacing=0.002, tail=0.4)
        out, err = proxy.communicate(timeout=10)
        assert proxy.returncode == 0, err
    # payload bytes unchanged, nothing invented, no duplicates on a link without duplication
    assert all(len(copies) == 1 for copies in replies.values())
    assert all(copies[0][0] == sent[seq] for seq, copies in replies.items())
    # round-trip survival is (1 - loss)^2 per datagram: 0.64; 5 binomial sigmas ~ +-54 of 500
    expected = count * (1 - loss) ** 2
    sigma = (count * (1 - loss) ** 2 * (1 - (1 - loss) ** 2)) ** 0.5
    assert abs(len(replies) - expected) < 5 * sigma, len(replies)
    rtts = sorted(copies[0][1] for copies in replies.values())
    median = statistics.median(rtts)
    print(f"replies {len(replies)}/{count}, rtt min {rtts[0]:.4f} median {median:.4f} s")
    assert rtts[0] >= 2 * latency - 0.002  # uvloop timers may fire up to ~1 ms early
    assert median <= 2 * latency + 0.030
    # the proxy's own counters, printed on exit, agree with what the client saw
    rows = _summary_rows(out)
    up, down = rows["up"], rows["down"]
    assert up["in"] == count
    assert up["forwarded"] + up[Fate.LOST.value] == count
    assert abs(up[Fate.LOST.value] - count * loss) < 5 * (count * loss * (1 - loss)) ** 0.5
    assert down["in"] == up["forwarded"]  # the echo server answered every datagram it got
    assert down["forwarded"] == len(replies)
    assert down["in"] == down["forwarded"] + down[Fate.LOST.value]
    assert up["pending"] == down["pending"] == 0


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="environment limit: this machine has no ::1")
def test_proxy_ipv6_stops_on_sigint() -> None:
    count, latency = 100, 0.020
    with _processes("::1", ["--latency-ms", "20", "--seed", "2"]) as (proxy, port):
        sent, replies = _exchange("::1", port, count, spacing=0.002, tail=0.3)
        proxy.send_signal(signal.SIGINT)
        out, err = proxy.communicate(timeout=10)
        assert proxy.returncode == 130, err
    assert {seq: copies[0][0] for seq, copies in replies.items()} == sent
    rtts = [copies[0][1] for copies in replies.values()]
    assert min(rtts) >= 2 * latency - 0.002
    assert statistics.median(rtts) <= 2 * latency + 0.030
    rows = _summary_rows(out)
    assert rows["up"]["forwarded"] == rows["down"]["forwarded"] == count


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--listen", "::1:9000", "--forward", "127.0.0.1:9"], "--listen"),
        (["--listen", "127.0.0.1:0", "--forward", "127.0.0.1:99999"], "--forward"),
        (["--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9", "--profile", "nope"], "profile"),
        (["--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9", "--loss", "1.5"], "--loss"),
    ],
)
def test_cli_errors_are_one_line(args: list[str], field: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "lagless", "proxy", *args, "--duration", "0"],
        capture_output=True,
        text=True,
        timeout=30,
        env=ENV,
        check=False,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert field in lines[0]


def test_overrides_apply_to_both_directions() -> None:
    umts = get_profile("umts")
    flags = overrides_from_flags(
        latency_ms=10, jitter_ms=5, loss=0.1, reorder=0.05, bandwidth_kbps=800
    )
    config = build_proxy_config("127.0.0.1:0", "[::1]:9000", profile="umts", overrides=flags)
    assert config.forward == ("::1", 9000)
    for link, base in ((config.up, umts.up), (config.down, umts.down)):
        assert link.latency == pytest.approx(0.010)
        assert link.jitter.amount == pytest.approx(0.005)
        assert link.jitter.kind == base.jitter.kind
        assert link.loss == pytest.approx(0.1)
        assert link.reorder == pytest.approx(0.05)
        assert link.reorder_delay == DEFAULT_REORDER_DELAY
        assert link.bandwidth == pytest.approx(100_000.0)  # 800 kbit/s = 100 kB/s
        assert link.mtu == base.mtu
    clean = build_proxy_config("127.0.0.1:0", "127.0.0.1:9", overrides=overrides_from_flags())
    assert clean.up == clean.down == LinkConfig()
    shaped = build_proxy_config(
        "127.0.0.1:0", "127.0.0.1:9", overrides=overrides_from_flags(jitter_ms=4)
    )
    assert shaped.up.jitter.kind == "uniform"
    assert shaped.up.jitter.amount == pytest.approx(0.004)
    flat = build_proxy_config(
        "127.0.0.1:0", "127.0.0.1:9", profile="umts", overrides=overrides_from_flags(jitter_ms=0)
    )
    assert flat.up.jitter.kind == "none"


@pytest.mark.parametrize(
    ("flags", "flag"),
    [
        ({"latency_ms": -1.0}, "--latency-ms"),
        ({"jitter_ms": float("nan")}, "--jitter-ms"),
        ({"loss": 1.01}, "--loss"),
        ({"duplicate": -0.1}, "--duplicate"),
        ({"reorder": 2.0}, "--reorder"),
        ({"reorder_delay_ms": float("inf")}, "--reorder-delay-ms"),
        ({"bandwidth_kbps": 0.0}, "--bandwidth-kbps"),
    ],
)
def test_flag_errors_name_the_flag(flags: dict[str, float], flag: str) -> None:
    with pytest.raises(ConfigError, match=flag):
        overrides_from_flags(**flags)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"listen": ("127.0.0.1", 70000)}, "listen"),
        ({"forward": ("127.0.0.1", 0)}, "forward"),
        ({"seed": -1}, "seed"),
        ({"max_clients": 0}, "max_clients"),
        ({"max_pending": True}, "max_pending"),
        ({"idle_timeout": 0.0}, "idle_timeout"),
    ],
)
def test_proxy_config_validates(changes: dict[str, object], field: str) -> None:
    base: dict[str, object] = {"listen": ("127.0.0.1", 0), "forward": ("127.0.0.1", 9)}
    with pytest.raises(ConfigError, match=field):
        ProxyConfig(**{**base, **changes})  # type: ignore[arg-type]


class _Sink:
    """An in-process UDP server on loopback that records (or echoes) what it receives."""

    def __init__(self, *, echo: bool) -> None:
        self.sock = open_udp_socket("127.0.0.1:0")
        self.address = self.sock.getsockname()
        self.got: list[tuple[bytes, float]] = []
        self._echo = echo
        self._remove = add_datagram_reader(asyncio.get_running_loop(), self.sock, self._on)

    def _on(self, data: bytes, addr: tuple[str, int]) -> None:
        self.got.append((data, asyncio.get_running_loop().time()))
        if self._echo:
            self.sock.sendto(data, addr)

    def close(self) -> None:
        self._remove()
        self.sock.close()


def _config(server: tuple[str, int], **kw: object) -> ProxyConfig:
    return ProxyConfig(listen=("127.0.0.1", 0), forward=server, **kw)  # type: ignore[arg-type]


def test_two_clients_get_their_own_replies() -> None:
    async def scenario() -> tuple[dict[str, list[bytes]], ProxyStats]:
        server = _Sink(echo=True)
        proxy = Proxy(_config(server.address, up=LinkConfig(latency=0.01), seed=3))
        await proxy.start()
        clients = {name: open_udp_socket("127.0.0.1:0") for name in ("a", "b")}
        received: dict[str, list[bytes]] = {name: [] for name in clients}
        removers = [
            add_datagram_reader(
                asyncio.get_running_loop(), sock, lambda d, _a, n=name: received[n].append(d)
            )
            for name, sock in clients.items()
        ]
        for i in range(20):
            for name, sock in clients.items():
                sock.sendto(f"{name}{i}".encode(), proxy.listen_address)
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.1)
        stats = proxy.stats()
        for remove in removers:
            remove()
        for sock in clients.values():
            sock.close()
        await proxy.close()
        server.close()
        return received, stats

    received, stats = asyncio.run(scenario())
    for name in ("a", "b"):
        assert received[name] == [f"{name}{i}".encode() for i in range(20)]
    assert stats.clients == stats.clients_seen == 2
    assert stats.up.forwarded_datagrams == stats.down.forwarded_datagrams == 40


def _delivered_under_seed(seed: int) -> list[int]:
    async def scenario() -> list[int]:
        server = _Sink(echo=False)
        proxy = Proxy(_config(server.address, up=LinkConfig(loss=0.5), seed=seed))
        await proxy.start()
        with open_udp_socket("127.0.0.1:0") as client:
            for i in range(200):
                client.sendto(i.to_bytes(2, "big"), proxy.listen_address)
                if i % 20 == 19:
                    await asyncio.sleep(0.005)
            await asyncio.sleep(0.05)
        stats = proxy.stats()
        await proxy.close()
        server.close()
        assert stats.up.received_datagrams == 200
        assert stats.up.forwarded_datagrams == len(server.got)
        return [int.from_bytes(data, "big") for data, _ in server.got]

    return asyncio.run(scenario())


def test_seeded_links_are_reproducible() -> None:
    first, again, other = (_delivered_under_seed(s) for s in (7, 7, 8))
    assert first == again
    assert first != other
    assert 60 < len(first) < 140  # 200 at 50 % loss: 5 sigma is ~35


def test_bandwidth_spreads_a_burst() -> None:
    async def scenario() -> tuple[list[float], float]:
        server = _Sink(echo=False)
        # 972-byte payload + 28 header bytes = 1000 bytes on the wire: 10 ms each at 100 kB/s
        link = LinkConfig(bandwidth=100_000.0, queue_limit=1_000_000)
        proxy = Proxy(_config(server.address, up=link, seed=1))
        await proxy.start()
        with open_udp_socket("127.0.0.1:0") as client:
            sent_at = asyncio.get_running_loop().time()
            for i in range(30):
                client.sendto(i.to_bytes(2, "big") + bytes(970), proxy.listen_address)
            await asyncio.sleep(0.45)
        await proxy.close()
        server.close()
        return [when for _, when in server.got], sent_at

    arrivals, sent_at = asyncio.run(scenario())
    assert len(arrivals) == 30
    spread = arrivals[-1] - arrivals[0]
    assert spread == pytest.approx(0.29, abs=0.03)  # 29 gaps of 10 ms
    assert arrivals[-1] - sent_at == pytest.approx(0.30, abs=0.03)


def test_client_limit_and_pending_limit() -> None:
    async def scenario() -> tuple[ProxyStats, ProxyStats]:
        server = _Sink(echo=False)
        proxy = Proxy(
            _config(
                server.address,
                up=LinkConfig(latency=0.2),
                max_clients=1,
                max_pending=5,
                idle_timeout=0.1,
            )
        )
        await proxy.start()
        with open_udp_socket("127.0.0.1:0") as a, open_udp_socket("127.0.0.1:0") as b:
            for _ in range(10):
                a.sendto(b"a", proxy.listen_address)
            await asyncio.sleep(0.02)
            for _ in range(3):
                b.sendto(b"b", proxy.listen_address)
            await asyncio.sleep(0.02)
            busy = proxy.stats()
            await asyncio.sleep(0.45)  # deliveries at 0.2 s, then idle > 0.1 s: session expires
        idle = proxy.stats()
        await proxy.close()
        server.close()
        return busy, idle

    busy, idle = asyncio.run(scenario())
    assert busy.up.received_datagrams == 13
    assert busy.up.pending == 5
    assert busy.up.overflow_datagrams == 5
    assert busy.up.rejected_datagrams == 3
    assert busy.up.dropped_datagrams == 8
    assert busy.clients == 1
    assert idle.up.forwarded_datagrams == 5
    assert idle.up.pending == 0
    assert idle.clients == 0
    assert idle.clients_seen == 1


def test_run_proxy_ticks_and_returns_final_stats() -> None:
    starts: list[ProxyStats] = []
    ticks: list[ProxyStats] = []
    config = _config(("127.0.0.1", 9))
    final = asyncio.run(
        run_proxy(
            config, duration=0.3, on_tick=ticks.append, on_start=starts.append, tick_interval=0.05
        )
    )
    assert len(starts) == 1
    assert starts[0].listen[1] != 0
    assert 4 <= len(ticks) <= 7
    assert final.elapsed == pytest.approx(0.3, abs=0.1)
    assert final.seed == starts[0].seed  # drawn once from OS entropy, reported for repeats
    with pytest.raises(ConfigError, match="duration"):
        asyncio.run(run_proxy(config, duration=-1.0))


def test_proxy_lifecycle_errors() -> None:
    proxy = Proxy(_config(("127.0.0.1", 9)))
    with pytest.raises(LocalProtocolError, match="start"):
        _ = proxy.listen_address

    async def twice() -> None:
        await proxy.start()
        try:
            await proxy.start()
        finally:
            await proxy.close()

    with pytest.raises(LocalProtocolError, match="twice"):
        asyncio.run(twice())


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="environment limit: this machine has no ::1")
def test_send_errors_are_counted_not_raised() -> None:
    # an IPv6 client may send 65 520 bytes; IPv4 carries at most 65 507: the forward send fails
    async def scenario() -> ProxyStats:
        server = _Sink(echo=False)
        proxy = Proxy(ProxyConfig(listen=("::1", 0), forward=server.address))
        await proxy.start()
        with open_udp_socket("[::1]:0") as client:
            client.sendto(bytes(65_520), proxy.listen_address)
            client.sendto(b"small", proxy.listen_address)
            await asyncio.sleep(0.05)
        stats = proxy.stats()
        await proxy.close()
        server.close()
        assert [data for data, _ in server.got] == [b"small"]
        return stats

    stats = asyncio.run(scenario())
    assert stats.up.received_datagrams == 2
    assert stats.up.send_errors == 1
    assert stats.up.forwarded_datagrams == 1
