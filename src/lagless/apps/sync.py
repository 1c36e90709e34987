"""Run one ``lagless.sync`` peer over real UDP: one process per peer, the arena as the game.

Issue 15 asks that every synchronisation algorithm (spec 000 §2.1, §2.3, §2.14 and GGPO-style
rollback) runs between separate processes over real UDP, not only in the simulator. This module
is the driver for that: it binds the peer's own address, keeps one transport ``Connection`` per
other peer (the reliable-ordered channel for ``Outgoing.reliable``, the unreliable one
otherwise), ticks the peer every ``frame_period`` on the event loop's clock with the arena's
scripted bot input, and reports what the peer displayed.

Units: seconds, frames, bytes.

Decisions:
    * Every datagram starts with one byte: ``0`` a hello of the start barrier, ``1`` a transport
      payload. A hello carries the sender's peer number and whether it has heard every other
      peer. A peer starts ticking once it has heard every other peer and each of them said it
      had heard everybody; a started peer answers every hello with "heard everybody", so a lost
      hello only costs one ``HELLO_INTERVAL``. Peers start within about one hello interval of
      each other.
    * The connections run without the netcode handshake and without encryption (development
      and tests on loopback, like the lab), with the harness's settings
      (``lagless.sync.harness.SESSION_CONNECTION``: no clock sync, bad-mode send rate 90
      packets/s), so a run over UDP and one in the simulator differ only in the network.
    * The run ends once the peer displayed ``frames + drain_frames``: inputs are the bots' for
      the first ``frames`` ticks and neutral afterwards, so peers that predict have settled.
      It then keeps ticking for ``linger`` seconds, so slower peers still get its messages.
      The report holds the checksums of the last ``REPORTED_FRAMES`` frames it displayed, so a
      caller can compare peers on a frame they all showed.
    * A run that has not finished after ``timeout`` seconds ends with ``completed = False``.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.io.udp import add_datagram_reader, open_udp_socket, resolve
from lagless.netsim import random_stream
from lagless.sync.arena import Arena, ScriptedInputs
from lagless.sync.contract import SyncPeer
from lagless.sync.harness import SESSION_CONNECTION
from lagless.sync.registry import make_peer
from lagless.sync.synctest import SyncTestReport, run_synctest
from lagless.transport import RELIABLE, UNRELIABLE, Connection
from lagless.transport.events import MessageReceived

__all__ = ["HELLO_INTERVAL", "PeerRunConfig", "PeerRunReport", "arena_synctest", "run_sync_peer"]

HELLO_INTERVAL: Final = 0.02
"""Seconds between hellos while waiting for the other peers."""
REPORTED_FRAMES: Final = 60
"""How many of the last displayed frames the report lists with their checksums."""

_HELLO = 0
_DATA = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerRunConfig:
    """One peer's run.

    Attributes:
        algorithm: Registry name (``lagless.sync.registry.ALGORITHMS``).
        peer: This peer's number: its index in ``addresses``.
        addresses: Every peer's UDP address, in peer order (2 to 8).
        frames: Ticks of scripted bot input.
        drain_frames: Frames of neutral input after them before the run ends.
        frame_rate: Ticks per second (Hz).
        seed: Seed of the arena, the bots and the peer's generator (equal on every peer).
        start_timeout: Seconds to wait for the other peers before giving up.
        timeout: Seconds the session may take after the start.
        linger: Seconds to keep ticking after the end frame, for slower peers.
        knobs: Extra keyword arguments for ``make_peer``.
    """

    algorithm: str
    peer: int
    addresses: tuple[Address, ...]
    frames: int = 300
    drain_frames: int = 60
    frame_rate: float = 60.0
    seed: int = 0
    start_timeout: float = 10.0
    timeout: float = 30.0
    linger: float = 1.0
    knobs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        if not 2 <= len(self.addresses) <= 8:
            raise ConfigError(f"--peers needs 2 to 8 addresses, got {len(self.addresses)}")
        if not 0 <= self.peer < len(self.addresses):
            raise ConfigError(f"--peer must be in [0, {len(self.addresses) - 1}], got {self.peer}")
        if self.frames < 1:
            raise ConfigError(f"--frames must be >= 1, got {self.frames}")
        if self.drain_frames < 0:
            raise ConfigError(f"--drain must be >= 0 frames, got {self.drain_frames}")
        if not self.frame_rate > 0:
            raise ConfigError(f"--frame-rate must be > 0 Hz, got {self.frame_rate}")


@dataclass(slots=True, kw_only=True)
class PeerRunReport:
    """What one peer displayed and counted.

    Attributes:
        algorithm: The algorithm's name.
        peer: This peer's number.
        peers: Number of peers.
        completed: The peer reached the end frame before the timeout.
        final_frame: The last frame it displayed.
        final_checksum: Checksum of that frame's displayed state.
        checksums: Checksum of each of the last ``REPORTED_FRAMES`` displayed frames (the last
            display of each).
        elapsed: Seconds from the start to the end frame (or the timeout).
        stats: The peer's ``SyncStats`` as a dict (lists summarised by count).
        wire_bytes_sent: UDP payload bytes this process sent (hellos and transport headers
            included, IPv4+UDP headers not).
    """

    algorithm: str
    peer: int
    peers: int
    completed: bool
    final_frame: int
    final_checksum: int
    checksums: dict[int, int]
    elapsed: float
    stats: dict[str, int | float]
    wire_bytes_sent: int

    def as_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (frame keys as strings)."""
        data = dataclasses.asdict(self)
        data["checksums"] = {str(k): v for k, v in self.checksums.items()}
        return data


def _summary(peer: SyncPeer[Any]) -> dict[str, int | float]:
    stats = peer.stats
    delays = sorted(stats.input_delays)
    return {
        "frames_simulated": stats.frames_simulated,
        "frames_resimulated": stats.frames_resimulated,
        "rollbacks": len(stats.rollback_depths),
        "rollback_depth_max": max(stats.rollback_depths, default=0),
        "stall_frames": stats.stall_frames,
        "input_delay_ms_p50": 1000.0 * delays[len(delays) // 2] if delays else 0.0,
        "bytes_sent": stats.bytes_sent,
        "bytes_received": stats.bytes_received,
        "late_discarded": stats.late_discarded,
        "desyncs": len(stats.desyncs),
    }


class _Runner:
    """The socket, the connections, the start barrier and the tick loop of one peer."""

    def __init__(self, config: PeerRunConfig) -> None:
        self.config = config
        self.me = config.peer
        numeric = [resolve(a, field="--peers")[1] for a in config.addresses]
        self.addresses = numeric
        self.index = {addr: i for i, addr in enumerate(numeric)}
        self.others = [i for i in range(len(numeric)) if i != self.me]
        self.game = Arena(len(numeric), seed=config.seed, frame_rate=config.frame_rate)
        rng = random_stream(config.seed, f"sync.udp.peer{self.me}")
        knobs = {"frame_period": 1.0 / config.frame_rate, **config.knobs}
        self.peer = make_peer(config.algorithm, self.game, self.me, len(numeric), rng, **knobs)
        self.bot = ScriptedInputs(self.me, config.seed, frame_rate=config.frame_rate)
        self.heard: set[int] = set()
        self.ready: set[int] = set()
        self.started = asyncio.Event()
        self.conns: dict[int, Connection] = {}
        self.timers: dict[int, asyncio.TimerHandle] = {}
        self.wire = 0
        self.loop = asyncio.get_running_loop()
        self.sock = open_udp_socket(numeric[self.me], field="--peers")

    def send(self, data: bytes, other: int) -> None:
        try:
            self.sock.sendto(data, self.addresses[other])
        except (BlockingIOError, ConnectionRefusedError):
            return  # UDP: a full buffer or an ICMP error from a peer not up yet loses the datagram
        self.wire += len(data)

    def hello(self, other: int) -> None:
        everybody = self.started.is_set() or len(self.heard) == len(self.others)
        self.send(bytes((_HELLO, self.me, 1 if everybody else 0)), other)

    def on_datagram(self, data: bytes, sender: Address) -> None:
        other = self.index.get(sender)
        if other is None or other == self.me or not data:
            return
        if data[0] == _HELLO and len(data) == 3 and data[1] == other:
            first = other not in self.heard
            self.heard.add(other)
            if data[2] == 1:
                self.ready.add(other)
            if self.started.is_set() or first:
                self.hello(other)
            if len(self.ready) == len(self.others) and len(self.heard) == len(self.others):
                self.started.set()
            return
        conn = self.conns.get(other)
        if data[0] != _DATA or conn is None:
            return
        now = self.loop.time()
        conn.receive_payload(data[1:], now)
        for event in conn.take_events():
            if isinstance(event, MessageReceived):
                self.peer.receive(other, event.payload, now)
        self.pump(other, now)
        self.flush(now)

    def pump(self, other: int, now: float) -> None:
        conn = self.conns[other]
        for payload in conn.payloads_to_send(now):
            self.send(bytes((_DATA,)) + payload, other)
        old = self.timers.pop(other, None)
        if old is not None:
            old.cancel()
        when = conn.next_timer()
        if when is not None:
            self.timers[other] = self.loop.call_at(max(when, now), self.on_timer, other)

    def on_timer(self, other: int) -> None:
        self.timers.pop(other, None)
        now = self.loop.time()
        self.conns[other].handle_timer(now)
        self.pump(other, now)

    def flush(self, now: float) -> None:
        touched: set[int] = set()
        for out in self.peer.outgoing():
            conn = self.conns.get(out.destination)
            if conn is None:
                continue
            conn.send(RELIABLE if out.reliable else UNRELIABLE, out.payload)
            touched.add(out.destination)
        for other in sorted(touched):
            self.pump(other, now)

    async def barrier(self) -> None:
        deadline = self.loop.time() + self.config.start_timeout
        while not self.started.is_set():
            if self.loop.time() > deadline:
                missing = sorted(set(self.others) - (self.heard & self.ready))
                raise ConfigError(f"peers {missing} did not answer within the start timeout")
            for other in self.others:
                self.hello(other)
            try:
                await asyncio.wait_for(self.started.wait(), HELLO_INTERVAL)
            except TimeoutError:
                continue
        # tell everyone once more, so a peer whose last hello we answered before starting starts
        for other in self.others:
            self.hello(other)

    async def session(self, stop: asyncio.Event | None) -> PeerRunReport:
        cfg = self.config
        now = self.loop.time()
        for other in self.others:
            self.conns[other] = Connection(
                config=SESSION_CONNECTION, now=now, is_client=self.me < other
            )
        end_frame = cfg.frames + cfg.drain_frames
        shown: dict[int, int] = {}
        start = now
        due = now
        tick = 0
        finished_at: float | None = None
        final = (0, 0)
        while True:
            now = self.loop.time()
            if stop is not None and stop.is_set():
                break
            if finished_at is None and now - start > cfg.timeout:
                break
            if finished_at is not None and now - finished_at >= cfg.linger:
                break
            raw = self.bot.at_frame(tick) if tick < cfg.frames else self.game.neutral_input
            self.peer.tick(now, raw)
            self.flush(now)
            frame = self.peer.displayed_frame
            shown[frame] = self.game.checksum(self.peer.displayed_state)
            if frame - REPORTED_FRAMES in shown and finished_at is None:
                del shown[frame - REPORTED_FRAMES]
            if finished_at is None and frame >= end_frame:
                finished_at = now
                final = (frame, shown[frame])
            tick += 1
            due += self.peer.frame_period
            await asyncio.sleep(max(0.0, due - self.loop.time()))
        completed = finished_at is not None
        if not completed:
            frame = self.peer.displayed_frame
            final = (frame, self.game.checksum(self.peer.displayed_state))
        recent = {f: c for f, c in shown.items() if f <= final[0]}
        keep = sorted(recent)[-REPORTED_FRAMES:]
        return PeerRunReport(
            algorithm=cfg.algorithm,
            peer=self.me,
            peers=len(self.addresses),
            completed=completed,
            final_frame=final[0],
            final_checksum=final[1],
            checksums={f: recent[f] for f in keep},
            elapsed=(finished_at if finished_at is not None else self.loop.time()) - start,
            stats=_summary(self.peer),
            wire_bytes_sent=self.wire,
        )

    def close(self) -> None:
        for handle in self.timers.values():
            handle.cancel()
        self.sock.close()


async def run_sync_peer(config: PeerRunConfig, stop: asyncio.Event | None = None) -> PeerRunReport:
    """Run one peer of a session over UDP until its end frame, the timeout or ``stop``.

    Raises:
        ConfigError: an address does not resolve or bind, an unknown algorithm, or the other
            peers did not answer within ``config.start_timeout``.
    """
    runner = _Runner(config)
    remove = add_datagram_reader(runner.loop, runner.sock, runner.on_datagram)
    try:
        await runner.barrier()
        return await runner.session(stop)
    finally:
        remove()
        runner.close()


def arena_synctest(
    *,
    players: int = 2,
    entities: int = 0,
    frames: int = 600,
    check_distance: int = 8,
    seed: int = 0,
) -> SyncTestReport:
    """Run ``lagless.sync.synctest`` on the arena with scripted bots (GGPO's synctest)."""
    game = Arena(players, entities=entities, seed=seed)
    bots: Sequence[ScriptedInputs] = [ScriptedInputs(p, seed) for p in range(players)]
    return run_synctest(game, lambda f: [bot.at_frame(f) for bot in bots], frames, check_distance)
