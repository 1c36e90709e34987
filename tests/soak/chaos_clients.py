"""Server processes and well- and ill-behaved clients for the chaos test (``test_chaos.py``).

Everything here talks to 127.0.0.1 only. Servers are the real ``lagless`` command-line processes
with stdout and stderr in files; clients are sans-I/O objects driven by `lagless.io` endpoints in
the test's event loop (optionally behind a `Tampered` filter that rewrites, duplicates or drops
their datagrams), raw UDP sockets for garbage and half-open handshakes, and ``lagless`` client
processes that the test kills with SIGKILL.

Every loop is bounded by a count and by a deadline, so a misbehaving server cannot hang the test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Generic, TypeVar

from lagless._types import Address, SansIO
from lagless.apps import make_token
from lagless.apps.vfc import VFC_PROTOCOL_ID
from lagless.gossip import codec
from lagless.gossip.lobby import GamesListed, LobbyClient, LobbyClientConfig
from lagless.gossip.messages import ExtraInfoRequest, Header, Heartbeat, Packet
from lagless.interest.client import VfcClient
from lagless.interest.control import CONTROL_CHANNEL, ChangeClientId, Leave, encode_control
from lagless.interest.records import CubeOriObj
from lagless.io.endpoint import AsyncEndpoint, open_endpoint
from lagless.io.offload import DatagramWriter
from lagless.transport import (
    ChannelConfig,
    Client,
    Connected,
    ConnectFailed,
    ConnectionConfig,
    Disconnected,
    MessageReceived,
    NetcodeClient,
    NetcodeClientConfig,
    PayloadReceived,
    SendQueueFull,
)
from lagless.transport.config import DEFAULT_CHANNELS
from lagless.transport.packet import PacketType

HOST: Final = "127.0.0.1"
LAGLESS: Final = Path(sys.executable).with_name("lagless")
ECHO_CHANNEL: Final = 0  # reliable ordered in the default channel set
CONNECT_TIMEOUT: Final = 10.0  # seconds a handshake may take on a loaded 2-core machine
ECHO_TIMEOUT: Final = 10  # s: the echo servers' token (and slot) timeout; at 5 s, 1 handshake in
# about 5 runs under the half-open flood on a loaded CI machine was still answering the challenge
FRAME: Final = 0.02  # seconds between the frames of the clients that send every frame

T = TypeVar("T", bound=SansIO)


# -- server processes -----------------------------------------------------------------------------


class ServerProcess:
    """One ``lagless`` server process; stdout and stderr go to files in ``directory``.

    Args:
        name: file name stem and label in messages.
        args: the ``lagless`` arguments.
        ready: pattern of the stdout line that names the bound address (groups: host, port).
        directory: where the output files go.
    """

    def __init__(self, name: str, args: list[str], ready: str, directory: Path) -> None:
        self.name = name
        self.args = args
        self._ready = re.compile(ready)
        self._out = directory / f"{name}.out"
        self._err = directory / f"{name}.err"
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with self._out.open("wb") as out, self._err.open("wb") as err:
            self.process = subprocess.Popen(
                [str(LAGLESS), *args], stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env
            )

    def wait_ready(self, timeout: float = 15.0) -> Address:
        """Return the bound address from the ready line.

        Raises:
            AssertionError: the process exited or printed no ready line within ``timeout``.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = self._ready.search(self.stdout())
            if match is not None:
                return (match.group(1), int(match.group(2)))
            assert self.alive(), f"{self.name} exited early:\n{self.stderr()}"
            time.sleep(0.05)
        raise AssertionError(f"{self.name} printed no ready line:\n{self.stdout()}{self.stderr()}")

    def alive(self) -> bool:
        """True while the process runs."""
        return self.process.poll() is None

    def stdout(self) -> str:
        """Everything the process printed to stdout so far."""
        return self._out.read_text(errors="replace")

    def stderr(self) -> str:
        """Everything the process printed to stderr so far."""
        return self._err.read_text(errors="replace")

    def stop(self, timeout: float = 10.0) -> int:
        """Send SIGTERM, wait, SIGKILL if it lingers; return the exit status."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(timeout)


def free_port() -> int:
    """A UDP port on 127.0.0.1 that was free a moment ago.

    For ``lagless serve`` in secure mode, whose public address (the one tokens must name) is the
    ``--port`` given, so ``--port 0`` cannot be used there.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def spawn_client(args: list[str], *, capture: bool = False) -> subprocess.Popen[bytes]:
    """Start a ``lagless`` client process with a stdin pipe; its output is discarded, or piped
    when ``capture`` (read it with ``communicate``)."""
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    return subprocess.Popen([str(LAGLESS), *args], stdin=subprocess.PIPE, stdout=out, stderr=out)


async def kill_after(process: subprocess.Popen[bytes], seconds: float, lines: int = 0) -> None:
    """Feed ``lines`` stdin lines (if it has a stdin pipe), wait, then SIGKILL and reap it."""
    if process.stdin is not None:
        try:
            process.stdin.write(b"".join(b"line %d\n" % i for i in range(lines)))
            process.stdin.flush()
        except BrokenPipeError:
            pass
    await asyncio.sleep(seconds)
    process.kill()
    await asyncio.to_thread(process.wait)
    if process.stdin is not None:
        process.stdin.close()


# -- datagram filters -----------------------------------------------------------------------------


class Tampered(Generic[T]):
    """A sans-I/O object seen through filters: each datagram becomes zero or more datagrams.

    Args:
        obj: the object.
        outgoing: maps each datagram the object sends to the datagrams that really leave.
        incoming: maps each datagram that arrives to the ones the object sees.
    """

    def __init__(
        self,
        obj: T,
        *,
        outgoing: Callable[[bytes], Iterable[bytes]] | None = None,
        incoming: Callable[[bytes], Iterable[bytes]] | None = None,
    ) -> None:
        self.obj = obj
        self._outgoing = outgoing
        self._incoming = incoming

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Hand the filtered datagrams to the object."""
        for item in [data] if self._incoming is None else self._incoming(data):
            self.obj.receive_datagram(item, addr, now)

    def handle_timer(self, now: float) -> None:
        """Delegate."""
        self.obj.handle_timer(now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """The object's datagrams, filtered."""
        out = self.obj.datagrams_to_send(now)
        if self._outgoing is None:
            return out
        return [(item, addr) for data, addr in out for item in self._outgoing(data)]

    def next_timer(self) -> float | None:
        """Delegate."""
        return self.obj.next_timer()

    def next_event(self) -> object | None:
        """Delegate."""
        return self.obj.next_event()


def _payload_body(data: bytes) -> int | None:
    """Offset of a netcode payload packet's body, or None for any other packet type."""
    if not data or data[0] & 0x0F != PacketType.PAYLOAD:
        return None
    return 1 + (data[0] >> 4)


def deny_acks(data: bytes) -> list[bytes]:
    """Rewrite an insecure payload packet so its ack header acknowledges nothing.

    The header is ``sequence u16, ack u16, ack_bits u32`` (transport/connection.py); the ack is
    moved half the sequence space away, where the peer has sent nothing, and the bits cleared.
    """
    start = _payload_body(data)
    if start is None or len(data) < start + 8:
        return [data]
    (ack,) = struct.unpack_from("<H", data, start + 2)
    head = struct.pack("<HI", ack ^ 0x8000, 0)
    return [data[: start + 2] + head + data[start + 8 :]]


def mute_payloads(data: bytes) -> list[bytes]:
    """Drop payload packets, pass the rest: a client that handshakes and keeps alive at most,
    and never delivers a message or an ack."""
    return [] if _payload_body(data) is not None else [data]


def stutter(data: bytes) -> list[bytes]:
    """Send every datagram twice, then a truncated copy (after the intact ones, so the copy is
    always a duplicate or undecryptable and never replaces the real packet)."""
    cut = max(1, len(data) // 2)
    return [data, data, data[:cut]]


# -- transport clients ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Target:
    """A ``lagless serve`` process as its clients see it."""

    address: Address
    """Where it listens."""
    protocol_id: int
    """Its protocol id."""
    private_key: bytes | None
    """Its key; None for an insecure server."""

    @property
    def insecure(self) -> bool:
        """True for a server without tokens and encryption."""
        return self.private_key is None

    def connect(self, client: Client | NetcodeClient, client_id: int, now: float) -> None:
        """Start ``client``'s handshake (a fresh token for a secure server).

        A `NetcodeClient` connects as a plain netcode client (no lagless mark).
        """
        if self.private_key is None:
            client.connect_insecure(
                server_addresses=[self.address],
                protocol_id=self.protocol_id,
                client_id=client_id,
                now=now,
                timeout_seconds=ECHO_TIMEOUT,
            )
        else:
            token = make_token(
                [self.address],
                client_id=client_id,
                private_key=self.private_key,
                protocol_id=self.protocol_id,
                timeout_seconds=ECHO_TIMEOUT,
                lagless=isinstance(client, Client),
            )
            client.connect(token, now)


def new_client(target: Target, queue_limit: int = 1024) -> Client:
    """A transport client for ``target`` whose reliable channels queue ``queue_limit`` messages."""
    channels = tuple(
        ChannelConfig(kind=ch.kind, priority=ch.priority, send_queue_limit=queue_limit)
        for ch in DEFAULT_CHANNELS
    )
    default = ConnectionConfig()
    messages = dataclasses.replace(default.messages, channels=channels)
    return Client(
        config=NetcodeClientConfig(insecure=target.insecure),
        connection=dataclasses.replace(default, messages=messages),
    )


async def wait_connected(
    ep: AsyncEndpoint[T], client: Client | NetcodeClient, timeout: float = CONNECT_TIMEOUT
) -> None:
    """Wait for ``client``'s ``Connected``.

    Raises:
        AssertionError: the handshake failed or took longer than ``timeout`` (the message says
            how far it got and how late this event loop ran, to tell a stuck server from an
            overloaded test process).
    """
    lag = asyncio.create_task(_loop_lag(timeout))
    try:
        async with asyncio.timeout(timeout):
            while True:
                event = await ep.receive()
                if isinstance(event, Connected):
                    return
                assert not isinstance(event, ConnectFailed | Disconnected), event
    except TimeoutError:
        raise AssertionError(
            f"no connection within {timeout} s: client state {client.state.name}, "
            f"this loop ran up to {lag.result() if lag.done() else await _cancel(lag):.2f} s late; "
            f"{_handshake_traffic(ep, client)}"
        ) from None
    finally:
        lag.cancel()


def _handshake_traffic(ep: AsyncEndpoint[T], client: Client | NetcodeClient) -> str:
    """What a stuck handshake saw: its local port, datagrams each way, and its drops by reason
    (to tell lost replies from replies it could not use)."""
    netcode = client.netcode if isinstance(client, Client) else client
    stats = netcode.statistics()
    drops = ", ".join(f"{r.value} {n}" for r, n in stats.dropped.items() if n) or "none"
    return (
        f"local port {ep.address[1]}, {stats.datagrams_sent} datagrams sent, "
        f"{stats.datagrams_received} received, drops: {drops}"
    )


async def _loop_lag(seconds: float) -> float:
    """The longest delay of a 50 ms sleep over ``seconds`` (the event loop's lateness)."""
    loop = asyncio.get_running_loop()
    worst = 0.0
    end = loop.time() + seconds
    try:
        while loop.time() < end:
            start = loop.time()
            await asyncio.sleep(0.05)
            worst = max(worst, loop.time() - start - 0.05)
    except asyncio.CancelledError:
        pass
    return worst


async def _cancel(task: asyncio.Task[float]) -> float:
    task.cancel()
    return await task


def open_client(
    target: Target, rng: random.Random, obj: T, client: Client | NetcodeClient, port: int = 0
) -> AsyncEndpoint[T]:
    """Bind ``obj`` (``client`` or a wrapper around it) on loopback (at ``port``, 0 for any)
    and start the handshake."""
    ep = open_endpoint(obj, f"{HOST}:{port}")
    target.connect(client, rng.getrandbits(63), ep.now())
    ep.flush()
    return ep


async def echo_session(
    target: Target,
    rng: random.Random,
    *,
    messages: int,
    timeout: float = 10.0,
    outgoing: Callable[[bytes], Iterable[bytes]] | None = None,
    port: int = 0,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> None:
    """A well-behaved client: connect (from ``port``, 0 for any) within ``connect_timeout``
    seconds, send ``messages`` distinct lines, get each back in order within ``timeout``.

    Raises:
        AssertionError: no connection, a missing, extra or reordered echo, or a timeout.
    """
    client = new_client(target)
    tampered = Tampered(client, outgoing=outgoing)
    async with open_client(target, rng, tampered, client, port) as ep:
        await wait_connected(ep, client, connect_timeout)
        sent = [b"echo %d %016x" % (i, rng.getrandbits(64)) for i in range(messages)]
        for payload in sent:
            client.send(ECHO_CHANNEL, payload)
        ep.flush()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(timeout):
                while len(got) < len(sent):
                    event = await ep.receive()
                    assert not isinstance(event, Disconnected), f"dropped after {len(got)} echoes"
                    if isinstance(event, MessageReceived):
                        got.append(event.payload)
        except TimeoutError:
            raise AssertionError(f"{len(got)} of {len(sent)} echoes within {timeout} s") from None
        assert got == sent
        client.disconnect()
        ep.flush()


async def restart_on_same_port(target: Target, rng: random.Random) -> None:
    """A client vanishes and a new one starts at once on its port (a game restarted behind the
    same NAT port): the server must let it in after about ``takeover_after`` (1 s) of the old
    slot's silence, not after the old one's 10 s timeout.

    Raises:
        AssertionError: no connection within 3 s, or a wrong echo.
    """
    client = new_client(target)
    async with open_client(target, rng, client, client) as ep:
        await wait_connected(ep, client)
        client.send(ECHO_CHANNEL, b"before the restart")
        ep.flush()
        port = ep.address[1]
    await echo_session(target, rng, messages=5, port=port, connect_timeout=3.0)


async def burst_and_leave(target: Target, rng: random.Random, *, burst: int) -> None:
    """Connect, then send ``burst`` messages and disconnect in the same frame."""
    client = new_client(target)
    async with open_client(target, rng, client, client) as ep:
        await wait_connected(ep, client)
        for i in range(burst):
            client.send(rng.randrange(4), b"burst %d" % i)
        client.disconnect()
        ep.flush()


async def vanish(
    target: Target,
    rng: random.Random,
    *,
    burst: int,
    outgoing: Callable[[bytes], Iterable[bytes]] | None = None,
) -> None:
    """Connect, send ``burst`` messages, close the socket without a disconnect."""
    client = new_client(target)
    async with open_client(target, rng, Tampered(client, outgoing=outgoing), client) as ep:
        await wait_connected(ep, client)
        for i in range(burst):
            client.send(ECHO_CHANNEL, b"vanish %d" % i)
        ep.flush()
        await asyncio.sleep(rng.uniform(0.0, 0.2))


async def never_ack(target: Target, rng: random.Random, *, seconds: float) -> bool:
    """An insecure client whose acks acknowledge nothing, sending 64 messages a frame.

    The server's echoes pile up unacknowledged; this client's own queue is 65 536 messages deep,
    so a slow server never makes it stop. Returns True as soon as the server disconnected it
    (under half a second on an idle machine), False if it had not after ``seconds``.
    """
    client = new_client(target, queue_limit=65536)
    async with open_client(target, rng, Tampered(client, outgoing=deny_acks), client) as ep:
        await wait_connected(ep, client)
        deadline = ep.now() + seconds
        count = 0
        while ep.now() < deadline:
            while (event := ep.receive_nowait()) is not None:
                if isinstance(event, Disconnected):
                    return True
            for _ in range(64):
                try:
                    client.send(ECHO_CHANNEL, b"no ack %d" % count)
                except SendQueueFull:
                    break
                count += 1
            ep.flush()
            await asyncio.sleep(FRAME)
    return False


async def plain_session(
    target: Target, rng: random.Random, *, payloads: int, leave_at_once: bool
) -> None:
    """A plain netcode client (raw payloads, echoed raw by ``lagless serve --echo``).

    With ``leave_at_once`` it sends ``payloads`` payloads and disconnects in the same frame;
    otherwise it waits for the echoes. Raw payloads are unreliable, so it asks only that some
    arrive and that each is one it sent.

    Raises:
        AssertionError: no connection, no echo within 5 s, or an echo it never sent.
    """
    client = NetcodeClient(config=NetcodeClientConfig(insecure=target.insecure))
    async with open_client(target, rng, client, client) as ep:
        await wait_connected(ep, client)
        sent = {b"plain %d %016x" % (i, rng.getrandbits(64)) for i in range(payloads)}
        for payload in sent:
            client.send_payload(payload)
        if leave_at_once:
            client.disconnect()
            ep.flush()
            return
        ep.flush()
        try:
            echo = await ep.wait_for(PayloadReceived, 5.0)
        except TimeoutError:
            raise AssertionError("no raw echo within 5 s") from None
        assert echo.payload in sent
        client.disconnect()
        ep.flush()


async def reconnect_loop(target: Target, rng: random.Random, *, cycles: int) -> None:
    """Connect, echo two messages, disconnect; ``cycles`` times, each from a new socket."""
    for _ in range(cycles):
        await echo_session(target, rng, messages=2)


def handshake_requests(
    target: Target, rng: random.Random, count: int, *, other_mode: bool = False
) -> list[bytes]:
    """The first datagram (the connection request) of ``count`` fresh clients of ``target``, or
    of its other security mode (insecure against secure and the other way round)."""
    mode = target
    if other_mode:
        mode = Target(target.address, target.protocol_id, b"\x07" * 32 if target.insecure else None)
    requests = []
    for _ in range(count):
        client = new_client(mode)
        now = time.monotonic()
        mode.connect(client, rng.getrandbits(63), now)
        client.handle_timer(now)
        requests.extend(data for data, _ in client.datagrams_to_send(now)[:1])
    assert len(requests) == count
    return requests


# -- raw sockets ----------------------------------------------------------------------------------


@dataclass(slots=True)
class RawSender:
    """Loopback UDP sockets that send and never read (replies are dropped by the kernel)."""

    sockets: list[socket.socket] = field(default_factory=list)
    sent: int = 0

    def open(self, count: int) -> None:
        """Add ``count`` sockets on fresh ports."""
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.bind((HOST, 0))
            sock.setblocking(False)
            self.sockets.append(sock)

    def send(self, data: bytes, addr: Address, rng: random.Random) -> None:
        """Send ``data`` from a random one of the sockets; a full buffer loses it."""
        assert addr[0] == HOST
        try:
            rng.choice(self.sockets).sendto(data, addr)
            self.sent += 1
        except OSError:
            pass

    def close(self) -> None:
        """Close every socket."""
        for sock in self.sockets:
            sock.close()
        self.sockets.clear()


def garbage(rng: random.Random, samples: list[bytes]) -> bytes:
    """One hostile datagram: random bytes, a valid-looking prefix, or a mangled sample."""
    kind = rng.randrange(5)
    if kind == 0 or not samples:
        return rng.randbytes(rng.randrange(0, 1300))
    if kind == 1:  # netcode prefix with a plausible sequence length, random rest
        return bytes([rng.randrange(16) << 4 | rng.randrange(8)]) + rng.randbytes(
            rng.randrange(0, 1200)
        )
    sample = rng.choice(samples)
    if kind == 2:  # truncated
        return sample[: rng.randrange(len(sample) + 1)]
    if kind == 3:  # one flipped byte
        if not sample:
            return sample
        i = rng.randrange(len(sample))
        return sample[:i] + bytes([sample[i] ^ (1 + rng.randrange(255))]) + sample[i + 1 :]
    return sample  # replayed intact


def garbage_train(
    rng: random.Random, samples: list[bytes], target: Address
) -> list[tuple[bytes, Address]]:
    """2 to 32 hostile datagrams of one size (the last may be shorter): one offload train."""
    size = rng.randrange(1, 1300)
    train = [(garbage(rng, samples).ljust(size, b"\0")[:size], target) for _ in range(31)]
    train = train[: rng.randrange(1, 32)]
    train.append((rng.randbytes(rng.randrange(1, size + 1)), target))
    return train


async def spray(
    target: Address,
    rng: random.Random,
    *,
    samples: list[bytes],
    count: int,
    seconds: float,
    sockets: int = 8,
) -> int:
    """Send ``count`` hostile datagrams over ``seconds`` from ``sockets`` sockets; return sent.

    Every third frame also sends a train of them in one system call (`lagless.io.offload`), so a
    server that reads runs of datagrams at once (UDP GRO) gets hostile runs too.
    """
    sender = RawSender()
    sender.open(sockets)
    trains = DatagramWriter(sender.sockets[0])
    try:
        batches = max(1, int(seconds / FRAME))
        per_batch = max(1, count // batches)
        for batch in range(batches):
            for _ in range(per_batch):
                sender.send(garbage(rng, samples), target, rng)
            if batch % 3 == 0:
                trains.send_all(garbage_train(rng, samples, target))
            await asyncio.sleep(FRAME)
    finally:
        sender.close()
    assert trains.trains > 0 or not trains.gso  # invariant: Linux sent its trains whole
    return sender.sent + trains.datagrams


async def half_open(target: Target, rng: random.Random, *, count: int, seconds: float) -> None:
    """``count`` handshakes that never answer the challenge, spread over ``seconds``.

    Each comes from its own short-lived socket (so its own port), so more of them than the
    server's 1024 encryption mappings can be pending at once without holding that many files.
    """
    batch = 32  # requests made and sent between two yields to the event loop
    for start in range(0, count, batch):
        sender = RawSender()
        sender.open(min(batch, count - start))
        requests = handshake_requests(target, rng, len(sender.sockets))
        try:
            for sock, request in zip(sender.sockets, requests, strict=True):
                sock.sendto(request, target.address)
        finally:
            sender.close()
        await asyncio.sleep(seconds * batch / count)


# -- VFC clients ----------------------------------------------------------------------------------


def new_vfc(address: Address, rng: random.Random) -> tuple[VfcClient, Client]:
    """A VFC client (and its transport, connecting) for the insecure VFC server at ``address``.

    The handshake starts at ``time.monotonic()``, the clock of the test's asyncio loop.
    """
    transport = Client(config=NetcodeClientConfig(insecure=True))
    transport.connect_insecure(
        server_addresses=[address],
        protocol_id=VFC_PROTOCOL_ID,
        client_id=rng.getrandbits(63),
        now=time.monotonic(),
    )
    return VfcClient(transport), transport


async def wait_joined(
    ep: AsyncEndpoint[T], vfc: VfcClient, timeout: float = CONNECT_TIMEOUT
) -> None:
    """Wait until the server welcomed ``vfc``.

    Raises:
        AssertionError: not within ``timeout``.
    """
    deadline = ep.now() + timeout
    while not vfc.is_connected():
        assert ep.now() < deadline, f"not welcomed within {timeout} s"
        await asyncio.sleep(FRAME)


async def vfc_session(
    address: Address,
    rng: random.Random,
    *,
    objects: int,
    ending: str,
    seconds: float,
    outgoing: Callable[[bytes], Iterable[bytes]] | None = None,
) -> None:
    """Join, share ``objects`` moving objects for ``seconds``, then end the session.

    ``ending``: ``"leave"`` (``DisconnectFromServer``), ``"vanish"`` (close the socket),
    ``"leave+change-id"`` (``Leave`` then ``ChangeClientId`` in one packet), ``"spam-change-id"``
    (32 ``ChangeClientId`` a frame until the server drops it, then vanish), ``"mute"`` (no more
    payload packets leave, so nothing is acknowledged, for 1 s, then vanish).
    """
    vfc, transport = new_vfc(address, rng)
    base = rng.randrange(500) * 64  # ids must fit 15 bits; a clash is rejected, also fine
    muted = False

    def filtered(data: bytes) -> Iterable[bytes]:
        if muted:
            return mute_payloads(data)
        return [data] if outgoing is None else outgoing(data)

    async with open_endpoint(Tampered(vfc, outgoing=filtered), f"{HOST}:0") as ep:
        ep.flush()
        for i in range(objects):
            vfc.add_object(CubeOriObj(id=base + i, x=rng.uniform(0, 100), y=rng.uniform(0, 100)))
        ep.flush()
        await wait_joined(ep, vfc)
        deadline = ep.now() + seconds
        while ep.now() < deadline and vfc.is_connected():
            for i in range(objects):
                vfc.get_object_ref(base + i).x += rng.uniform(-1.0, 1.0)
            if ending == "spam-change-id":
                for _ in range(32):
                    vfc.set_client_id(rng.randrange(1 << 31))
                ep.flush()
            await asyncio.sleep(FRAME)
        if ending == "leave":
            vfc.disconnect()
        elif ending == "leave+change-id":
            transport.send(CONTROL_CHANNEL, encode_control(Leave()))
            transport.send(CONTROL_CHANNEL, encode_control(ChangeClientId(client_id=7)))
        elif ending == "mute":
            muted = True
            await asyncio.sleep(1.0)
        ep.flush()
        await asyncio.sleep(0.05)


# -- lobby clients --------------------------------------------------------------------------------


def lobby_samples(rng: random.Random, count: int) -> list[bytes]:
    """Valid lobby datagrams: heartbeats of random games and games-list or info requests."""
    samples = []
    for i in range(count):
        header = Header(
            sender_port=rng.randrange(1, 1 << 16),
            game_id=rng.randrange(1, 1 << 32) if i % 3 else 0,
            message_number=i,
        )
        payload = (
            Heartbeat(map_id=0, game_type=rng.randrange(2))
            if header.game_id and i % 2
            else ExtraInfoRequest(wanted_contacts=rng.randrange(1, 64))
        )
        samples.append(codec.encode(Packet(header=header, payload=payload)))
    return samples


async def ask_lobby(lobby: Address, timeout: float = 5.0) -> GamesListed:
    """A well-behaved lobby client: ask for the games list and return the answer.

    Raises:
        AssertionError: no answer within ``timeout`` (the client retries meanwhile).
    """
    client = LobbyClient(
        config=LobbyClientConfig(retry_interval=0.25, request_attempts=64), lobby=lobby, port=0
    )
    async with open_endpoint(client, f"{HOST}:0") as ep:
        ep.obj.request_games(ep.now())
        ep.flush()
        try:
            return await ep.wait_for(GamesListed, timeout)
        except TimeoutError:
            raise AssertionError(f"the lobby did not answer within {timeout} s") from None
