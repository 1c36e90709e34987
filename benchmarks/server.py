"""Server benchmark: one lagless `Server` echoing many `Client`s that run in other processes.

Issue 11's goal: 256 clients × 20 reliable 32 B messages/s echoed with p99 RTT ≤ 5 ms on loopback
and the server under half a core; at 32 clients, ≥ 20× PyGaSe's event rate and a lower RTT at
60 events/s. This script measures exactly that, in one run, and prints the goals beside the
results.

Set-up: the server runs alone in one process (asyncio on `lagless.io.endpoint.open_endpoint`,
uvloop when installed), secure (connect tokens, ChaCha20-Poly1305 per packet), and echoes every
`MessageReceived` on the channel it came on from a `lagless.io.serve.serve_events` handler (the
endpoint is pumped once per batch of events). The clients run in
``--workers`` other processes (default 1: the machine this was written for has 2 cores), each
holding many `Client`s with one socket each on one event loop. A single pacer per worker sends
every client's messages on schedule (client phases spread evenly over the period). A lagless
client sets ``sparse_ack_delay`` to its stream's interval plus 10 ms, as the transport's
documentation advises for a request/response stream, so the ack of an echo rides on the next
message (``--default-acks`` keeps the default 10 ms: one ack-only datagram per echo more, and
about 10 % more server CPU at 256 clients). Neither end waits for deliveries, so both turn
`MessageDelivered` events off (``delivery_events=False``; PyGaSe reports none). Each message
carries its sequence number and send time (``time.monotonic``), so the RTT is measured on the
echo in the process that sent it.

Phases of one workload: connect every client (the count that made it is reported), warm up
(sending, not measured), measure for ``--seconds``, stop sending, then drain. A message sent in
the measured window counts as echoed when its echo arrives before the drain ends, else as lost.
Echoed messages/s counts echoes that arrived within the window. The server's CPU share is its
CPU time (user + system, from ``/proc/<pid>/stat``) over the window divided by the window's wall
time, so 0.5 means half of one core; the total adds the client processes, which share the same
cores. Kernel drops are the machine-wide ``Udp: RcvbufErrors`` delta over the window
(``/proc/net/snmp``; other programs' sockets count too). ``client lag`` is how late the pacer
sent (p99): when it is large, the client processes, not the server, were the bottleneck.

Workloads: a sweep of client counts at 20 messages/s each (the goal row is the largest); the
floor: the largest count again over plain UDP (a bare asyncio echo of the same datagrams, no
protocol, no encryption), which is what this machine, its load and its event loop give at best;
then the comparison with PyGaSe 0.3.1 (pure Python, curio, the best pure-Python peer of issue 11) on
the same harness: 32 clients × 60 events/s (RTT), and the most events/s echoed at 32 clients
when each client keeps ``WINDOW`` messages in flight ("as fast as allowed": a lagless client is
also limited by its congestion pacing, a PyGaSe client by its 40 packets/s of at most 5 events).
PyGaSe events are sent with ``retries=3`` (re-sent when their packet is not acknowledged within
1 s), its nearest thing to reliable delivery; its duplicates are ignored.

Each row also carries the server's own counters: per second over the window
(``server_echoes_per_s``, ``server_datagrams_in_per_s``, ``server_datagrams_out_per_s``: what
keep-alives, acks and clock sync add to the messages), and for the whole run (``server``:
handshakes and warm-up included).

Run: ``lagless bench server [--quick] [--json] [--clients 16,64] [--rate R] [--seconds S]
[--workers K] [--no-pygase] [--default-acks]`` or ``python benchmarks/server.py ...``. Linux
only for the CPU and drop columns (they read ``/proc``); elsewhere they are missing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import heapq
import json
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

from rich.console import Console
from rich.table import Table

from lagless._types import Address
from lagless.io.endpoint import AsyncEndpoint, open_endpoint
from lagless.io.serve import serve_events
from lagless.io.udp import add_datagram_reader, install_uvloop, open_udp_socket
from lagless.transport import (
    Client,
    ClientConnected,
    ClientDisconnected,
    Connected,
    ConnectFailed,
    ConnectionConfig,
    Disconnected,
    MessageReceived,
    NetcodeServerConfig,
    SendQueueFull,
    Server,
    generate_connect_token,
)
from lagless.transport.build import core

PROTOCOL_ID: Final = 0x4C41474C455353
KEY: Final = bytes(range(7, 39))
HOST: Final = "127.0.0.1"
RELIABLE: Final = 0  # lagless channel 0: reliable-ordered
MESSAGE: Final = struct.Struct("<IId")  # sequence number, client index, send time (s)
PAYLOAD_SIZE: Final = 32  # bytes per message, as in issue 11
PADDING: Final = bytes(PAYLOAD_SIZE - MESSAGE.size)
WINDOW: Final = 32  # messages in flight per client in the max-rate workload
LOSS_TIMEOUT: Final = 3.0  # seconds after which an unanswered max-rate message counts as lost
TOP_UP: Final = 0.002  # seconds between window refills in the max-rate workload
PACER_TICK: Final = 0.001  # seconds: the pacer's shortest sleep (uvloop rounds sleeps to whole ms)
START_DELAY: Final = 0.3  # seconds from the schedule's broadcast to the first send
PYGASE_RETRIES: Final = 3  # re-sends of an unacknowledged PyGaSe event
PYGASE_EVENT: Final = "E"
MARK: Final = "mark"  # parent to server: send your counters now
STOP: Final = "stop"  # parent to server: stop serving, send your final counters

LAGLESS: Final = "lagless"
UDP: Final = "plain UDP"
PYGASE: Final = "PyGaSe"
SWEEP: Final = "sweep"  # workload kinds
AT_RATE: Final = "60/s"
MAX_RATE: Final = "max rate"
FLOOR: Final = "floor"

GOAL_CLIENTS: Final = 256
GOAL_RATE: Final = 20.0  # messages/s per client
GOAL_P99_MS: Final = 5.0
GOAL_SERVER_CPU: Final = 0.5  # cores
GOAL_RATE_RATIO: Final = 20.0  # lagless max events/s over PyGaSe's, at COMPARE_CLIENTS
COMPARE_CLIENTS: Final = 32
COMPARE_RATE: Final = 60.0  # events/s per client
STREAM_ACK_MARGIN: Final = 0.01  # s a client's ack may wait beyond its stream's interval


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """Which workloads a run measures and for how long."""

    sweep: tuple[int, ...]
    """Client counts at ``rate`` messages/s each, lagless only; the last is the goal row."""
    rate: float
    """Messages/s per client in the sweep (`GOAL_RATE` for the goal)."""
    compare_clients: int
    """Clients in the PyGaSe comparison (RTT at `COMPARE_RATE` and max rate)."""
    seconds: float
    """Measured window of each sweep workload (s)."""
    compare_seconds: float
    """Measured window of each comparison workload (s)."""
    warmup: float
    """Seconds of sending before the window opens (s)."""
    drain: float
    """Seconds after the window for the last echoes (s)."""
    workers: int
    """Client processes per workload."""
    pygase: bool
    """Run PyGaSe in the comparison."""
    stream_acks: bool = True
    """lagless clients set ``sparse_ack_delay`` to their stream's interval (`client_connection`)."""


FULL: Final = Plan(
    sweep=(16, 32, 64, 128, GOAL_CLIENTS),
    rate=GOAL_RATE,
    compare_clients=COMPARE_CLIENTS,
    seconds=10.0,
    compare_seconds=5.0,
    warmup=2.0,
    drain=2.0,
    workers=1,
    pygase=True,
)
QUICK: Final = Plan(
    sweep=(4,),
    rate=GOAL_RATE,
    compare_clients=4,
    seconds=1.0,
    compare_seconds=0.5,
    warmup=0.3,
    drain=0.3,
    workers=1,
    pygase=True,
)


@dataclass(frozen=True, slots=True)
class Workload:
    """One measured configuration."""

    stack: str
    """`LAGLESS` or `PYGASE`."""
    clients: int
    """Clients connecting (over all workers)."""
    rate: float
    """Messages/s per client, or 0 for as many as `WINDOW` in flight allows."""
    seconds: float
    """Measured window (s)."""


@dataclass(frozen=True, slots=True)
class Schedule:
    """Absolute ``time.monotonic()`` instants shared by every process of a workload (s)."""

    start: float
    """First send (the warm-up begins)."""
    measure_from: float
    """The window opens."""
    measure_to: float
    """The window closes and sending stops."""
    drain_to: float
    """The last echo counted."""


@dataclass(slots=True)
class Tally:
    """What the clients of one worker measured (summed over workers by `merge`)."""

    sent: int = 0
    """Messages sent in the window."""
    echoed: int = 0
    """Of those, echoed before the drain ended."""
    received: int = 0
    """Echoes that arrived inside the window (any send time)."""
    refused: int = 0
    """Sends the client refused (queue full, or the connection had ended)."""
    duplicates: int = 0
    """Echoes of a message already echoed or already counted lost."""
    disconnected: int = 0
    """Clients that lost their connection during the run."""
    rtts: list[float] = field(default_factory=list)
    """Round trips of the window's echoed messages (s)."""
    lags: list[float] = field(default_factory=list)
    """How late the pacer sent each message of the window (s)."""

    def merge(self, other: Tally) -> None:
        """Add ``other``'s counts and samples to this tally."""
        for name in ("sent", "echoed", "received", "refused", "duplicates", "disconnected"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.rtts += other.rtts
        self.lags += other.lags


class Load:
    """The sans-I/O load of one worker: which client sends what when, and what echoes measured.

    Args:
        clients: how many clients the worker holds (local indices ``0..clients-1``).
        active: the local indices that connected; only they send.
        phase_base: this worker's first client index among all workers (spreads phases).
        total: clients over all workers.
        rate: messages/s per client, or 0 for `WINDOW` messages in flight per client.
        schedule: when to send and measure.
    """

    def __init__(
        self,
        *,
        clients: int,
        active: Sequence[int],
        phase_base: int,
        total: int,
        rate: float,
        schedule: Schedule,
    ) -> None:
        self.tally = Tally()
        """What was sent and echoed so far."""
        self._rate = rate
        self.schedule = schedule
        """When to send and measure."""
        self._active = list(active)
        self._next_seq = [0] * clients
        self._outstanding: list[dict[int, float]] = [{} for _ in range(clients)]
        self._due: list[tuple[float, int, int]] = []  # (scheduled s, local index, k-th send)
        self._phase = [
            (phase_base + local) / (total * rate) if rate > 0 else 0.0 for local in range(clients)
        ]
        if rate > 0:
            self._due = [(schedule.start + self._phase[local], local, 0) for local in self._active]
            heapq.heapify(self._due)

    def next_time(self, now: float) -> float | None:
        """When `due` next has something to send (s), or None once sending has stopped."""
        if now >= self.schedule.measure_to:
            return None
        if self._rate > 0:
            return self._due[0][0] if self._due else None
        return now + TOP_UP

    def due(self, now: float) -> list[tuple[int, bytes]]:
        """Return the ``(local index, payload)`` pairs to send at ``now`` (s), in order."""
        if now >= self.schedule.measure_to:
            self._due.clear()
            return []
        out: list[tuple[int, bytes]] = []
        in_window = now >= self.schedule.measure_from
        if self._rate > 0:
            due = self._due
            while due and due[0][0] <= now:
                at, local, k = heapq.heappop(due)
                out.append((local, self._payload(local, now, in_window)))
                if in_window:
                    self.tally.lags.append(now - at)
                later = self.schedule.start + self._phase[local] + (k + 1) / self._rate
                heapq.heappush(due, (later, local, k + 1))
            return out
        for local in self._active:
            outstanding = self._outstanding[local]
            # seq -> send time in sending order: the expired ones are at the front
            while outstanding:
                seq, sent = next(iter(outstanding.items()))
                if now - sent <= LOSS_TIMEOUT:
                    break
                del outstanding[seq]
            while len(outstanding) < WINDOW:
                out.append((local, self._payload(local, now, in_window)))
        return out

    def refused(self, local: int, payload: bytes) -> None:
        """Record that client ``local`` refused ``payload`` (it will never be echoed)."""
        seq = MESSAGE.unpack_from(payload)[0]
        self._outstanding[local].pop(seq, None)
        self.tally.refused += 1

    def echoed(self, local: int, payload: bytes, now: float) -> None:
        """Record the echo of ``payload`` reaching client ``local`` at ``now`` (s)."""
        seq, _, sent = MESSAGE.unpack_from(payload)
        schedule = self.schedule
        if schedule.measure_from <= now < schedule.measure_to:
            self.tally.received += 1
        if self._outstanding[local].pop(seq, None) is None:
            self.tally.duplicates += 1
            return
        if schedule.measure_from <= sent < schedule.measure_to and now < schedule.drain_to:
            self.tally.echoed += 1
            self.tally.rtts.append(now - sent)

    def _payload(self, local: int, now: float, in_window: bool) -> bytes:
        seq = self._next_seq[local]
        self._next_seq[local] = seq + 1
        self._outstanding[local][seq] = now
        if in_window:
            self.tally.sent += 1
        return MESSAGE.pack(seq, local, now) + PADDING


# -- helpers shared by the processes -----------------------------------------------------------


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def _child_setup() -> None:
    """In a child process: quiet PyGaSe's and curio's logs; use uvloop (Ctrl-C is ignored);
    freeze the import-time heap as `lagless.io.run` does (every stack's processes alike)."""
    logging.getLogger("curio").setLevel(logging.CRITICAL)
    logging.getLogger("PyGaSe").setLevel(logging.CRITICAL)
    install_uvloop()
    gc.freeze()


async def _pipe_message(conn: multiprocessing.connection.Connection) -> object:
    """Wait in the running asyncio loop for the next object on ``conn``."""
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()

    def on_readable() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(conn.fileno(), on_readable)
    try:
        await ready
    finally:
        loop.remove_reader(conn.fileno())
        os.set_blocking(conn.fileno(), True)  # add_reader made it non-blocking; send needs blocking
    return conn.recv()


# -- lagless server and clients ----------------------------------------------------------------


def lagless_server(conn: multiprocessing.connection.Connection, port: int) -> None:
    """Process entry: serve lagless clients on ``port`` and echo until told to stop."""
    _child_setup()
    asyncio.run(_lagless_serve(conn, port))


async def _lagless_serve(conn: multiprocessing.connection.Connection, port: int) -> None:
    server = Server(
        config=NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, private_key=KEY, public_address=(HOST, port)
        ),
        connection=ConnectionConfig(delivery_events=False),  # the echo never waits for them
        unix_time_offset=time.time() - asyncio.get_running_loop().time(),
    )
    stats = {"joined": 0, "left": 0, "echoes": 0, "gone": 0}

    def echo(event: object) -> None:
        if isinstance(event, MessageReceived):
            sent = server.send(event.connection_id, event.channel, event.payload)
            stats["echoes" if sent is not None else "gone"] += 1
        elif isinstance(event, ClientConnected):
            stats["joined"] += 1
        elif isinstance(event, ClientDisconnected):
            stats["left"] += 1

    def snapshot() -> dict[str, int]:
        netcode = server.netcode.statistics()
        return {
            **stats,
            "datagrams_in": netcode.datagrams_received,
            "datagrams_out": netcode.datagrams_sent,
            "dropped": sum(netcode.dropped.values()),
        }

    async with open_endpoint(server, (HOST, port)) as ep:
        stop = asyncio.Event()
        serving = asyncio.create_task(serve_events(ep, echo, stop=stop))
        conn.send("ready")
        while await _pipe_message(conn) == MARK:
            conn.send(snapshot())
        stop.set()
        await serving
    conn.send(snapshot())


def lagless_clients(
    conn: multiprocessing.connection.Connection,
    port: int,
    first: int,
    count: int,
    total: int,
    rate: float,
    stream_acks: bool,
) -> None:
    """Process entry: run ``count`` lagless clients (global indices from ``first``)."""
    _child_setup()
    config = client_connection(rate, stream_acks=stream_acks)
    asyncio.run(_lagless_clients(conn, port, first, count, total, rate, config))


def client_connection(rate: float, *, stream_acks: bool) -> ConnectionConfig:
    """The connection settings of the lagless clients sending ``rate`` messages/s each.

    With ``stream_acks`` a client sets ``sparse_ack_delay`` to its stream's interval plus
    `STREAM_ACK_MARGIN`, as `lagless.transport.connection` advises for a request/response
    stream: the ack of an echo rides on the next message instead of an ack-only datagram of
    its own. Without it (``--default-acks``), or at the max rate, the default ack delays. The
    clients never wait for deliveries, so they turn `MessageDelivered` events off (as the server
    does; PyGaSe reports none either).
    """
    if not stream_acks or rate <= 0.0:
        return ConnectionConfig(delivery_events=False)
    return ConnectionConfig(
        delivery_events=False, sparse_ack_delay=min(1.0, 1.0 / rate + STREAM_ACK_MARGIN)
    )


async def _lagless_clients(
    conn: multiprocessing.connection.Connection,
    port: int,
    first: int,
    count: int,
    total: int,
    rate: float,
    config: ConnectionConfig,
) -> None:
    eps: list[AsyncEndpoint[Client]] = [
        open_endpoint(Client(connection=config)) for _ in range(count)
    ]
    try:
        now_unix = int(time.time())
        for local, ep in enumerate(eps):
            token = generate_connect_token(
                public_addresses=[(HOST, port)],
                protocol_id=PROTOCOL_ID,
                expire_seconds=300,
                timeout_seconds=10,
                client_id=first + local + 1,
                user_data=b"",
                private_key=KEY,
                now_unix=now_unix,
            )
            ep.call(lambda c, t=token, e=ep: c.connect(t, e.now()))

        async def connected(ep: AsyncEndpoint[Client]) -> bool:
            with contextlib.suppress(TimeoutError):
                while True:
                    event = await ep.receive(timeout=_connect_timeout(total))
                    if isinstance(event, Connected):
                        return True
                    if isinstance(event, ConnectFailed | Disconnected):
                        return False
            return False

        up = await asyncio.gather(*(connected(ep) for ep in eps))
        active = [local for local, ok in enumerate(up) if ok]
        conn.send(len(active))
        schedule = await _pipe_message(conn)
        assert isinstance(schedule, Schedule)  # invariant: the parent sends the schedule next
        load = Load(
            clients=count,
            active=active,
            phase_base=first,
            total=total,
            rate=rate,
            schedule=schedule,
        )

        def collect(local: int) -> Callable[[object], None]:
            # an endpoint handler: the echoes are taken inside the callback that read them
            def on_event(event: object) -> None:
                if isinstance(event, MessageReceived):
                    load.echoed(local, event.payload, time.monotonic())
                elif isinstance(event, Disconnected):
                    load.tally.disconnected += 1

            return on_event

        def send(batch: list[tuple[int, bytes]]) -> None:
            touched: set[int] = set()
            for local, payload in batch:
                try:
                    if eps[local].obj.send(RELIABLE, payload) is None:
                        load.refused(local, payload)
                except SendQueueFull:
                    load.refused(local, payload)
                touched.add(local)
            for local in touched:
                eps[local].flush()

        for local in active:
            eps[local].set_handler(collect(local))
        await _pace(load, send)
        for local in active:
            eps[local].set_handler(None)
        conn.send(load.tally)
    finally:
        for ep in eps:
            ep.close()


async def _pace(load: Load, send: Callable[[list[tuple[int, bytes]]], None]) -> None:
    """Hand ``send`` each batch of `Load.due` on time, then wait until the drain ends.

    It sleeps at least `PACER_TICK`: uvloop rounds a sleep to whole milliseconds, so a wait
    under half a millisecond returned at once and the pacer spun until the clock got there (at
    128 clients × 20/s, sends 0.4 ms apart, that was half of the client process's CPU). The
    messages due within that millisecond go out together.
    """
    while (at := load.next_time(time.monotonic())) is not None:
        delay = at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(max(delay, PACER_TICK))
        send(load.due(time.monotonic()))
    await asyncio.sleep(max(0.0, load.schedule.drain_to - time.monotonic()))


def _connect_timeout(clients: int) -> float:
    """Seconds a workload's clients get to connect (more clients, more handshakes queue up)."""
    return 10.0 + 0.05 * clients


# -- plain UDP: the floor of this machine and event loop --------------------------------------


def udp_server(conn: multiprocessing.connection.Connection, port: int) -> None:
    """Process entry: echo every datagram on ``port`` as it is (no protocol at all)."""
    _child_setup()
    asyncio.run(_udp_serve(conn, port))


async def _udp_serve(conn: multiprocessing.connection.Connection, port: int) -> None:
    sock = open_udp_socket((HOST, port))
    stats = {"echoes": 0, "send_errors": 0}

    def echo(data: bytes, addr: Address) -> None:
        try:
            sock.sendto(data, addr)
        except OSError:
            stats["send_errors"] += 1
            return
        stats["echoes"] += 1

    def snapshot() -> dict[str, int]:
        return {
            **stats,
            "datagrams_in": stats["echoes"] + stats["send_errors"],
            "datagrams_out": stats["echoes"],
        }

    remove = add_datagram_reader(asyncio.get_running_loop(), sock, echo)
    conn.send("ready")
    while await _pipe_message(conn) == MARK:
        conn.send(snapshot())
    remove()
    sock.close()
    conn.send(snapshot())


def udp_clients(
    conn: multiprocessing.connection.Connection,
    port: int,
    first: int,
    count: int,
    total: int,
    rate: float,
    stream_acks: bool,
) -> None:
    """Process entry: ``count`` plain UDP sockets sending the same load as the clients."""
    del stream_acks  # no acks at all
    _child_setup()
    asyncio.run(_udp_clients(conn, port, first, count, total, rate))


async def _udp_clients(
    conn: multiprocessing.connection.Connection,
    port: int,
    first: int,
    count: int,
    total: int,
    rate: float,
) -> None:
    socks = [open_udp_socket((HOST, 0), connect=(HOST, port)) for _ in range(count)]
    removers: list[Callable[[], None]] = []
    try:
        conn.send(count)  # nothing to connect
        schedule = await _pipe_message(conn)
        assert isinstance(schedule, Schedule)  # invariant: the parent sends the schedule next
        load = Load(
            clients=count,
            active=range(count),
            phase_base=first,
            total=total,
            rate=rate,
            schedule=schedule,
        )
        loop = asyncio.get_running_loop()
        for local, sock in enumerate(socks):

            def on_echo(data: bytes, _addr: Address, local: int = local) -> None:
                load.echoed(local, data, time.monotonic())

            removers.append(add_datagram_reader(loop, sock, on_echo))

        def send(batch: list[tuple[int, bytes]]) -> None:
            for local, payload in batch:
                try:
                    socks[local].send(payload)
                except OSError:
                    load.refused(local, payload)

        await _pace(load, send)
        conn.send(load.tally)
    finally:
        for remove in removers:
            remove()
        for sock in socks:
            sock.close()


# -- PyGaSe server and clients -----------------------------------------------------------------


def pygase_server(conn: multiprocessing.connection.Connection, port: int) -> None:
    """Process entry: run a PyGaSe server on ``port`` echoing every event until told to stop."""
    _child_setup()
    import pygase

    server = pygase.Server(pygase.GameStateStore())
    stats = {"echoes": 0}

    def on_event(data: bytes, client_address: tuple[str, int]) -> None:
        server.dispatch_event(
            PYGASE_EVENT, data, target_client=client_address, retries=PYGASE_RETRIES
        )
        stats["echoes"] += 1

    server.register_event_handler(PYGASE_EVENT, on_event)
    server.run_in_thread(port, HOST)
    conn.send("ready")
    while conn.recv() == MARK:
        conn.send(dict(stats))
    stats["joined"] = len(server.connections)
    conn.send(stats)


def pygase_clients(
    conn: multiprocessing.connection.Connection,
    port: int,
    first: int,
    count: int,
    total: int,
    rate: float,
    stream_acks: bool,
) -> None:
    """Process entry: run ``count`` PyGaSe clients in one curio kernel."""
    del stream_acks  # PyGaSe has no such setting
    _child_setup()
    import curio

    curio.run(_pygase_clients, conn, port, first, count, total, rate)


async def _pygase_clients(
    conn: multiprocessing.connection.Connection,
    port: int,
    first: int,
    count: int,
    total: int,
    rate: float,
) -> None:
    import curio
    import pygase

    clients = [pygase.Client() for _ in range(count)]
    loads: list[Load] = []  # set once the schedule arrives; handlers look it up

    def handler(local: int) -> Callable[[bytes], None]:
        def on_echo(data: bytes) -> None:
            if loads:
                loads[0].echoed(local, data, time.monotonic())

        return on_echo

    tasks = []
    for local, client in enumerate(clients):
        client.register_event_handler(PYGASE_EVENT, handler(local))
        tasks.append(await curio.spawn(client.connect, port, HOST))
    deadline = time.monotonic() + _connect_timeout(total)
    up = pygase.connection.ConnectionStatus.get("Connected")
    while time.monotonic() < deadline and not all(
        c.connection is not None and c.connection.status == up for c in clients
    ):
        await curio.sleep(0.05)
    active = [
        local
        for local, c in enumerate(clients)
        if c.connection is not None and c.connection.status == up
    ]
    conn.send(len(active))
    schedule = await curio.run_in_thread(conn.recv)
    load = Load(
        clients=count, active=active, phase_base=first, total=total, rate=rate, schedule=schedule
    )
    loads.append(load)
    while (at := load.next_time(time.monotonic())) is not None:
        await curio.sleep(max(0.0, at - time.monotonic()))
        for local, payload in load.due(time.monotonic()):
            clients[local].dispatch_event(PYGASE_EVENT, payload, retries=PYGASE_RETRIES)
    await curio.sleep(max(0.0, schedule.drain_to - time.monotonic()))
    load.tally.disconnected = sum(c.connection.status != up for c in clients if c.connection)
    for client in clients:
        await client.disconnect()
    for task in tasks:
        with contextlib.suppress(curio.TaskTimeout):
            await curio.timeout_after(2.0, task.join)
    conn.send(load.tally)


ENTRIES: Final = {
    UDP: (udp_server, udp_clients),
    LAGLESS: (lagless_server, lagless_clients),
    PYGASE: (pygase_server, pygase_clients),
}


# -- the parent: processes, clocks, counters ---------------------------------------------------


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``), else None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _udp_rcvbuf_errors() -> int | None:
    """The machine's ``Udp: RcvbufErrors`` count (datagrams dropped on full buffers), or None."""
    try:
        lines = [ln.split() for ln in Path("/proc/net/snmp").read_text().splitlines()]
    except OSError:
        return None
    udp = [ln for ln in lines if ln and ln[0] == "Udp:"]
    if len(udp) < 2 or "RcvbufErrors" not in udp[0]:
        return None
    return int(udp[1][udp[0].index("RcvbufErrors")])


def _diff(after: float | None, before: float | None) -> float | None:
    return None if after is None or before is None else after - before


def _percentile(samples: list[float], q: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1e3


class Progress:
    """One status line on stderr: rewritten in place on a terminal, one line per step otherwise."""

    def __init__(self) -> None:
        self._tty = sys.stderr.isatty()
        self._width = 0

    def show(self, text: str) -> None:
        """Replace the status line with ``text``."""
        if self._tty:
            sys.stderr.write("\r" + text.ljust(self._width))
            self._width = len(text)
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def tick(self, text: str) -> None:
        """Update the status line with ``text`` on a terminal only (a countdown)."""
        if self._tty:
            self.show(text)

    def done(self) -> None:
        """End the status line."""
        if self._tty and self._width:
            sys.stderr.write("\r" + " " * self._width + "\r")
            sys.stderr.flush()


@contextlib.contextmanager
def _processes() -> Iterator[list[multiprocessing.process.BaseProcess]]:
    """Yield a list to put child processes in; end every one of them on the way out.

    After a normal run the children get a few seconds to exit by themselves; after an error or
    Ctrl-C they are terminated at once.
    """
    children: list[multiprocessing.process.BaseProcess] = []
    grace = 0.0
    try:
        yield children
        grace = 3.0
    finally:
        for child in children:
            child.join(timeout=grace)
            if child.is_alive():
                child.terminate()
                child.join(timeout=2.0)
            if child.is_alive():
                child.kill()
                child.join()


def _start(child: multiprocessing.process.BaseProcess) -> None:
    """Start ``child`` with SIGINT ignored (inherited through exec), so Ctrl-C reaches only us."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        child.start()
    finally:
        signal.signal(signal.SIGINT, previous)


def _expect(conn: multiprocessing.connection.Connection, timeout: float, what: str) -> object:
    if not conn.poll(timeout):
        raise RuntimeError(f"no {what} within {timeout:.0f} s")
    return conn.recv()


def _sleep_until(at: float, progress: Progress, label: str) -> None:
    while (left := at - time.monotonic()) > 0:
        progress.tick(f"{label} {left:4.1f} s")
        time.sleep(min(left, 0.25))


def measure(workload: Workload, plan: Plan, progress: Progress, label: str) -> dict[str, object]:
    """Run one workload in fresh processes and return its row (see the module docstring)."""
    server_entry, client_entry = ENTRIES[workload.stack]
    ctx = multiprocessing.get_context("spawn")
    port = _free_port()
    with _processes() as children:
        server_end, child_end = ctx.Pipe()
        server = ctx.Process(target=server_entry, args=(child_end, port), daemon=True)
        _start(server)
        children.append(server)
        workers = plan.workers
        shares = [
            workload.clients // workers + (k < workload.clients % workers) for k in range(workers)
        ]
        ends: list[multiprocessing.connection.Connection] = []
        first = 0
        for share in (s for s in shares if s > 0):
            parent_end, child_end = ctx.Pipe()
            worker = ctx.Process(
                target=client_entry,
                args=(
                    child_end,
                    port,
                    first,
                    share,
                    workload.clients,
                    workload.rate,
                    plan.stream_acks,
                ),
                daemon=True,
            )
            _start(worker)
            children.append(worker)
            ends.append(parent_end)
            first += share
        pids = " ".join(str(child.pid) for child in children[1:])
        progress.show(f"{label}: connecting (server pid {server.pid}, client pids {pids})")
        _expect(server_end, 30.0, "server start")  # the clients retry until it listens
        timeout = _connect_timeout(workload.clients) + 30.0
        connected = sum(int(_expect(end, timeout, "connect report")) for end in ends)  # type: ignore[call-overload]
        start = time.monotonic() + START_DELAY
        schedule = Schedule(
            start=start,
            measure_from=start + plan.warmup,
            measure_to=start + plan.warmup + workload.seconds,
            drain_to=start + plan.warmup + workload.seconds + plan.drain,
        )
        for end in ends:
            end.send(schedule)
        _sleep_until(schedule.measure_from, progress, f"{label}: warming up")
        cpu_before = [_cpu_seconds(int(child.pid or 0)) for child in children]
        server_end.send(MARK)
        counted_before = _expect(server_end, 10.0, "server counters")
        drops_before = _udp_rcvbuf_errors()
        wall_before = time.monotonic()
        _sleep_until(schedule.measure_to, progress, f"{label}: measuring")
        wall = time.monotonic() - wall_before
        cpu_after = [_cpu_seconds(int(child.pid or 0)) for child in children]
        server_end.send(MARK)
        counted_after = _expect(server_end, 10.0, "server counters")
        drops = _diff(_udp_rcvbuf_errors(), drops_before)
        progress.show(f"{label}: draining")
        tally = Tally()
        for end in ends:
            part = _expect(end, plan.drain + 30.0, "client results")
            assert isinstance(part, Tally)  # invariant: workers send their tally last
            tally.merge(part)
        server_end.send(STOP)
        server_stats = _expect(server_end, 10.0, "server statistics")
    cpu = [_diff(a, b) for a, b in zip(cpu_after, cpu_before, strict=True)]
    assert isinstance(counted_before, dict)  # invariant: servers answer MARK with their counters
    assert isinstance(counted_after, dict)
    window = {
        f"server_{key}_per_s": (counted_after[key] - counted_before[key]) / wall
        for key in ("echoes", "datagrams_in", "datagrams_out")
        if key in counted_after
    }
    server_cpu = cpu[0]
    total_cpu = None if any(c is None for c in cpu) else sum(c for c in cpu if c is not None)
    return {
        "stack": workload.stack,
        "clients": workload.clients,
        "connected": connected,
        "rate_per_client": workload.rate,
        "seconds": round(wall, 3),
        "sent": tally.sent,
        "echoed": tally.echoed,
        "lost": tally.sent - tally.echoed - tally.refused,
        "refused": tally.refused,
        "duplicates": tally.duplicates,
        "disconnected": tally.disconnected,
        "echoed_per_s": tally.received / wall,
        "rtt_p50_ms": _ms(_percentile(tally.rtts, 0.5)),
        "rtt_p99_ms": _ms(_percentile(tally.rtts, 0.99)),
        "rtt_max_ms": _ms(max(tally.rtts, default=None)),
        "client_lag_p99_ms": _ms(_percentile(tally.lags, 0.99)),
        "server_cpu_share": None if server_cpu is None else server_cpu / wall,
        "total_cpu_share": None if total_cpu is None else total_cpu / wall,
        "kernel_drops": drops,
        **window,
        "server": server_stats,  # whole run: handshakes and warm-up included
    }


# -- the run -----------------------------------------------------------------------------------

Row = dict[str, object]


def pygase_problem() -> str | None:
    """Why PyGaSe cannot run here (not installed, or it fails to import), or None if it can."""
    try:
        import curio  # noqa: F401
        import pygase  # noqa: F401
    except Exception as exc:  # any import-time failure of a 2019 package is a reason to report
        return f"PyGaSe unavailable: {type(exc).__name__}: {exc} (pip install pygase==0.3.1)"
    return None


def _ratio(a: object, b: object) -> float | None:
    if not isinstance(a, int | float) or not isinstance(b, int | float) or b == 0:
        return None
    return float(a) / float(b)


def _goals(goal: Row, compare: dict[tuple[str, str], Row]) -> list[Row]:
    """The goal rows of issue 11: goal text, measured text, met, for one run's rows."""
    clients = int(goal["clients"])  # type: ignore[call-overload]
    p99 = goal["rtt_p99_ms"]
    cpu = goal["server_cpu_share"]
    rows: list[Row] = [
        {
            "goal": f"{clients} clients × {goal['rate_per_client']:g} msg/s: all connect",
            "target": f"{clients}",
            "measured": f"{goal['connected']}",
            "met": goal["connected"] == clients,
        },
        {
            "goal": f"{clients} clients × {goal['rate_per_client']:g} msg/s: RTT p99",
            "target": f"≤ {GOAL_P99_MS:g} ms",
            "measured": "—" if p99 is None else f"{p99:.2f} ms",
            "met": isinstance(p99, float) and p99 <= GOAL_P99_MS,
        },
        {
            "goal": f"{clients} clients × {goal['rate_per_client']:g} msg/s: server CPU",
            "target": f"< {GOAL_SERVER_CPU:g} core",
            "measured": "—" if cpu is None else f"{cpu:.2f} core",
            "met": isinstance(cpu, float) and cpu < GOAL_SERVER_CPU,
        },
        {
            "goal": f"{clients} clients × {goal['rate_per_client']:g} msg/s: messages lost",
            "target": "0",
            "measured": f"{goal['lost']} of {goal['sent']}",
            "met": goal["lost"] == 0 and goal["refused"] == 0,
        },
    ]
    if (PYGASE, MAX_RATE) not in compare:
        return rows
    n = compare[LAGLESS, MAX_RATE]["clients"]
    ratio = _ratio(
        compare[LAGLESS, MAX_RATE]["echoed_per_s"], compare[PYGASE, MAX_RATE]["echoed_per_s"]
    )
    rows.append(
        {
            "goal": f"{n} clients, max events/s echoed: lagless / PyGaSe",
            "target": f"≥ {GOAL_RATE_RATIO:g}×",
            "measured": "—" if ratio is None else f"{ratio:.1f}×",
            "met": ratio is not None and ratio >= GOAL_RATE_RATIO,
        }
    )
    for q in ("p50", "p99"):
        ours = compare[LAGLESS, AT_RATE][f"rtt_{q}_ms"]
        theirs = compare[PYGASE, AT_RATE][f"rtt_{q}_ms"]
        rows.append(
            {
                "goal": f"{n} clients × {COMPARE_RATE:g} events/s: RTT {q} below PyGaSe's",
                "target": "—" if theirs is None else f"< {theirs:.1f} ms",
                "measured": "—" if ours is None else f"{ours:.2f} ms",
                "met": isinstance(ours, float) and isinstance(theirs, float) and ours < theirs,
            }
        )
    return rows


def run(plan: Plan, progress: Progress) -> dict[str, object]:
    """Measure every workload of ``plan``; return the result object ``--json`` prints."""
    load_before = os.getloadavg()
    problem = pygase_problem() if plan.pygase else "PyGaSe skipped (--no-pygase)"
    jobs: list[tuple[str, Workload]] = [
        (SWEEP, Workload(LAGLESS, n, plan.rate, plan.seconds)) for n in plan.sweep
    ]
    jobs.append((FLOOR, Workload(UDP, plan.sweep[-1], plan.rate, plan.seconds)))
    stacks = (LAGLESS,) if problem else (LAGLESS, PYGASE)
    for stack in stacks:
        jobs.append(
            (
                AT_RATE,
                Workload(stack, plan.compare_clients, COMPARE_RATE, plan.compare_seconds),
            )
        )
        jobs.append((MAX_RATE, Workload(stack, plan.compare_clients, 0.0, plan.compare_seconds)))
    rows: list[Row] = []
    compare: dict[tuple[str, str], Row] = {}
    errors: list[str] = []
    for number, (name, workload) in enumerate(jobs, 1):
        rate = "max" if workload.rate == 0 else f"{workload.rate:g}/s"
        label = f"[{number}/{len(jobs)}] {workload.stack} {workload.clients} clients × {rate}"
        try:
            row = measure(workload, plan, progress, label)
        except RuntimeError as exc:
            if workload.stack != PYGASE:
                raise
            errors.append(f"{label}: {exc}")
            continue
        row["workload"] = name
        rows.append(row)
        if name in (AT_RATE, MAX_RATE):
            compare[workload.stack, name] = row
    progress.done()
    if errors and problem is None:
        problem = "; ".join(errors)
        compare = {k: v for k, v in compare.items() if k[0] == LAGLESS}
    goal = rows[len(plan.sweep) - 1]
    floor = rows[len(plan.sweep)]
    result: dict[str, object] = {
        "clients": goal["clients"],
        "connected": goal["connected"],
        "rate_per_client": goal["rate_per_client"],
        "echoed_per_s": goal["echoed_per_s"],
        "rtt_p50_ms": goal["rtt_p50_ms"],
        "rtt_p99_ms": goal["rtt_p99_ms"],
        "rtt_max_ms": goal["rtt_max_ms"],
        "lost": goal["lost"],
        "server_cpu_share": goal["server_cpu_share"],
        "total_cpu_share": goal["total_cpu_share"],
        "kernel_drops": goal["kernel_drops"],
        "floor_rtt_p99_ms": floor["rtt_p99_ms"],
        "floor_server_cpu_share": floor["server_cpu_share"],
        "goals": _goals(goal, compare),
        "workloads": rows,
        "pygase": problem or "ran",
        "plan": asdict(plan),
        "cpus": os.cpu_count(),
        "uvloop": install_uvloop(),
        "core": core(),
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
    }
    return result


def _cell(value: object, digits: int = 1) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def print_tables(result: dict[str, object], console: Console) -> None:
    """Print the goals table and the per-workload table of ``result``."""
    goals = Table(
        title=f"lagless bench server: issue 11 goals (loopback, secure; core: {result['core']})"
    )
    for column in ("goal", "target", "measured", "met"):
        goals.add_column(column, justify="left" if column == "goal" else "right")
    for g in result["goals"]:  # type: ignore[attr-defined]
        goals.add_row(
            g["goal"], g["target"], g["measured"], "[green]yes" if g["met"] else "[red]no"
        )
    console.print(goals)
    table = Table(title="workloads (RTT of 32 B reliable messages echoed by one server process)")
    columns = (
        ("workload", "workload", 0),
        ("stack", "stack", 0),
        ("clients", "connected", 0),
        ("msg/s per client", "rate_per_client", 0),
        ("echoed/s", "echoed_per_s", 0),
        ("RTT p50 ms", "rtt_p50_ms", 2),
        ("p99 ms", "rtt_p99_ms", 2),
        ("max ms", "rtt_max_ms", 1),
        ("lost", "lost", 0),
        ("server CPU", "server_cpu_share", 2),
        ("total CPU", "total_cpu_share", 2),
        ("kernel drops", "kernel_drops", 0),
        ("client lag p99 ms", "client_lag_p99_ms", 1),
    )
    for title, _, _ in columns:
        left = title in ("workload", "stack")
        table.add_column(title, justify="left" if left else "right", no_wrap=left)
    for row in result["workloads"]:  # type: ignore[attr-defined]
        cells = []
        for _, key, digits in columns:
            value = row[key]
            if key == "connected":
                value = f"{value}/{row['clients']}"
            elif key == "rate_per_client":
                value = "max" if value == 0 else f"{value:g}"
            cells.append(_cell(value, digits))
        table.add_row(*cells)
    console.print(table)
    console.print(
        f"Plain UDP echo at the goal size (no protocol): RTT p99 "
        f"{_cell(result['floor_rtt_p99_ms'], 2)} ms, server CPU "
        f"{_cell(result['floor_server_cpu_share'], 2)} core. PyGaSe: {result['pygase']}. "
        "CPU in cores over the measured window (/proc); total = "
        f"server + client processes on {result['cpus']} cores. Kernel drops: machine-wide UDP "
        f"RcvbufErrors. uvloop: {result['uvloop']}. Load average before/after: "
        f"{result['load_average_before'][0]:.2f} / {result['load_average_after'][0]:.2f}."  # type: ignore[index]
    )


def _plan(argv: Sequence[str]) -> tuple[Plan, bool]:
    parser = argparse.ArgumentParser(
        prog="lagless bench server", description=__doc__.split("\n")[0] if __doc__ else None
    )
    parser.add_argument("--quick", action="store_true", help="a few seconds at small sizes")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--clients", help="comma-separated sweep of client counts, e.g. 16,256")
    parser.add_argument("--rate", type=float, help="messages/s per client in the sweep")
    parser.add_argument("--seconds", type=float, help="measured window per sweep workload (s)")
    parser.add_argument("--workers", type=int, help="client processes per workload")
    parser.add_argument("--no-pygase", action="store_true", help="skip the PyGaSe comparison")
    parser.add_argument(
        "--default-acks",
        action="store_true",
        help="lagless clients keep the default sparse_ack_delay instead of their stream's interval",
    )
    args = parser.parse_args(list(argv))
    plan = QUICK if args.quick else FULL
    changes: dict[str, object] = {}
    if args.clients:
        changes["sweep"] = tuple(int(n) for n in args.clients.split(","))
    if args.rate is not None:
        changes["rate"] = args.rate
    if args.seconds is not None:
        changes["seconds"] = args.seconds
    if args.workers is not None:
        changes["workers"] = args.workers
    if args.no_pygase:
        changes["pygase"] = False
    if args.default_acks:
        changes["stream_acks"] = False
    return Plan(**{**asdict(plan), **changes}), bool(args.json)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the benchmark; print the tables, or with ``--json`` one JSON object on stdout."""
    plan, as_json = _plan(sys.argv[1:] if argv is None else argv)
    progress = Progress()
    try:
        result = run(plan, progress)
    except KeyboardInterrupt as exc:
        progress.done()
        print("bench server: interrupted", file=sys.stderr)
        # `lagless bench` turns SIGTERM into a KeyboardInterrupt that carries its number
        sys.exit(128 + int(getattr(exc, "signum", signal.SIGINT)))
    if as_json:
        print(json.dumps(result))
    else:
        print_tables(result, Console(width=max(Console().width, 140)))


if __name__ == "__main__":
    main()
