"""Run N synchronisation peers over the network simulator and measure what their players see.

Implements the measuring side of issue 15 for spec 000 §2.1, §2.3 and §2.14: every ``SyncPeer``
is ticked on its own clock, its datagrams cross ``lagless.netsim`` links through the transport's
``Connection`` (reliable-ordered channel for ``Outgoing.reliable``, unreliable otherwise), and
the harness records per peer and tick the displayed frame and checksum, so it can count the
frames on which peers showed different states (inconsistency, spec 000 §2.2) and how far apart
they were, beside each peer's own ``SyncStats`` (stalls, rollbacks, re-simulation, delay, bytes).

Units: seconds, bytes, metres (``DeterministicGame.divergence``), frames.

Decisions:
    * Topology ``mesh``: one connection per pair of peers, each direction a link of the profile
      (``Network.set_profile(p_i, p_j)`` for ``i < j``: one access hop per path). ``star``: every
      peer talks to a relay host that forwards each message to its destination, so a
      peer-to-peer path crosses two links (the profile's up then down, the setting under which
      spec 000 §3.7 measured mobile RTTs). The relay prefixes one byte, the far end's peer
      number, to every message it carries.
    * ``loss`` is extra independent loss on every link direction, combined with the profile's:
      ``1 - (1 - profile.loss) * (1 - loss)``.
    * Each peer has its own clock: ``local = true + clock_offset``; its first tick falls at a
      seeded random phase within one frame period, and each later tick ``peer.frame_period``
      seconds after the previous one (read after every tick, so a peer may slow down). The
      transport connections run on the true simulated time (they do not sync clocks here).
    * Inputs come from ``inputs(peer, tick)`` for the first ``duration`` seconds of ticks, then
      the game's neutral input for ``drain`` seconds, so peers that predict or wait can settle
      before the end; the final checksums are compared at the last frame every peer displayed.
    * Inconsistency counts frames, not ticks: for each frame the harness keeps the first state
      each peer displayed for it (a stalled peer shows a frame several times, a catching-up one
      skips some); once every peer has displayed a later frame, the frame is compared among the
      peers that showed it (at least two). ``max_divergence`` is the largest
      ``game.divergence`` between any peer's state and the first peer's on such a frame;
      ``longest_inconsistent_run`` is the longest run of consecutive inconsistent frames (how
      long a disagreement lasted before peers converged).
    * The connections use the transport's defaults except two: no clock sync (the algorithms
      that need a shared clock run their own over their messages), and a bad-mode send rate of
      90 packets/s, the good mode's start rate (``SESSION_CONNECTION``). The algorithms send
      a datagram per tick to each peer by design; Gaffer's 15 packets/s on a link whose RTT is
      over 250 ms (UMTS) or that loses over 10 % would pack four 60 Hz ticks into one packet and
      hold every message up to 67 ms, a cost of the transport's congestion policy, not of the
      algorithm under test.
    * Bandwidth per peer is reported twice: the payload bytes the peer handed out
      (``SyncStats.bytes_sent``) and the bytes its host put on the simulated wire (transport
      headers, acks and the 28 IPv4+UDP header bytes per datagram included), both per second of
      simulated time.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

import numpy as np

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.netsim import Handle, LinkConfig, Network, Scheduler, get_profile, random_stream
from lagless.sync.contract import DeterministicGame, SyncPeer, SyncStats
from lagless.sync.registry import make_peer
from lagless.transport import (
    RELIABLE,
    UNRELIABLE,
    CongestionConfig,
    Connection,
    ConnectionConfig,
)
from lagless.transport.events import MessageReceived

__all__ = [
    "SESSION_CONNECTION",
    "HarnessConfig",
    "HarnessResult",
    "InputScript",
    "PeerFactory",
    "PeerRecord",
    "run_keeping_peers",
    "run_session",
]

InputScript = Callable[[int, int], bytes]
"""``inputs(peer, tick) -> bytes``: the local player's input on that peer's ``tick``-th tick."""

PeerFactory = Callable[[int, random.Random], SyncPeer[Any]]
"""``factory(peer, rng) -> SyncPeer``: builds one peer (default: ``registry.make_peer``)."""

P = TypeVar("P", bound=SyncPeer[Any])

_PORT = 7000
_RELAY = "relay"

SESSION_CONNECTION: Final = ConnectionConfig(
    clock="none", congestion=CongestionConfig(good_send_rate=90.0, bad_send_rate=90.0)
)
"""Transport settings of every connection of a sync session (see the module docstring)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HarnessConfig:
    """One simulated session: algorithm, peers, network and timing.

    Attributes:
        algorithm: Registry name, e.g. ``"time-warp"`` (used when no factory is given).
        peers: Number of peers, 2 to 8.
        topology: ``"mesh"`` (peer to peer) or ``"star"`` (through a relay).
        profile: A ``lagless.netsim`` profile name, e.g. ``"lan"``, ``"wifi"``, ``"umts"``.
        loss: Extra independent loss per link direction, in [0, 1).
        duration: Seconds of scripted input.
        drain: Seconds of neutral input after it, before the run ends.
        frame_rate: Nominal ticks per second (Hz); peers get ``frame_period = 1 / frame_rate``.
        clock_offsets: Seconds added to each peer's clock (missing entries are 0).
        seed: Root seed of links, phases and the peers' generators.
        knobs: Extra keyword arguments for ``make_peer``.
    """

    algorithm: str = "time-warp"
    peers: int = 2
    topology: Literal["mesh", "star"] = "mesh"
    profile: str = "lan"
    loss: float = 0.0
    duration: float = 5.0
    drain: float = 1.5
    frame_rate: float = 60.0
    clock_offsets: tuple[float, ...] = ()
    seed: int = 0
    knobs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        if not 2 <= self.peers <= 8:
            raise ConfigError(f"peers must be in [2, 8], got {self.peers!r}")
        if self.topology not in ("mesh", "star"):
            raise ConfigError(f"topology must be 'mesh' or 'star', got {self.topology!r}")
        get_profile(self.profile)
        if not 0.0 <= self.loss < 1.0:
            raise ConfigError(f"loss must be in [0, 1), got {self.loss!r}")
        if not (self.duration > 0 and self.drain >= 0 and self.frame_rate > 0):
            raise ConfigError(
                "duration and frame_rate must be > 0 and drain >= 0, got "
                f"{self.duration!r}, {self.frame_rate!r}, {self.drain!r}"
            )
        if len(self.clock_offsets) > self.peers:
            raise ConfigError(f"clock_offsets has more than {self.peers} entries")


@dataclass(slots=True)
class PeerRecord:
    """What one peer showed, tick by tick.

    Attributes:
        times: True simulated time of each tick (s).
        frames: Displayed frame after each tick.
        checksums: Checksum of the displayed state after each tick.
        stats: The peer's ``SyncStats`` at the end.
        wire_bytes_sent: Bytes its host sent on the simulated wire, IPv4+UDP headers included.
    """

    times: list[float] = field(default_factory=list)
    frames: list[int] = field(default_factory=list)
    checksums: list[int] = field(default_factory=list)
    stats: SyncStats = field(default_factory=SyncStats)
    wire_bytes_sent: int = 0


@dataclass(slots=True)
class HarnessResult:
    """A finished session: per-peer records and the comparison across peers.

    Attributes:
        config: The session's settings.
        elapsed: Simulated seconds the session ran.
        records: One ``PeerRecord`` per peer.
        compared_frames: Frames shown by at least two peers and compared.
        inconsistent_frames: Of those, frames whose displayed checksums differed.
        max_divergence: Largest ``game.divergence`` on an inconsistent frame (game unit, m).
        mean_divergence: Mean of it over inconsistent frames (0 when none).
        longest_inconsistent_run: Most consecutive inconsistent frames.
        final_frame: The last frame every peer displayed.
        final_checksums: Each peer's displayed checksum of ``final_frame`` (None if skipped).
    """

    config: HarnessConfig
    elapsed: float
    records: list[PeerRecord]
    compared_frames: int = 0
    inconsistent_frames: int = 0
    max_divergence: float = 0.0
    mean_divergence: float = 0.0
    longest_inconsistent_run: int = 0
    final_frame: int = 0
    final_checksums: list[int | None] = field(default_factory=list)

    @property
    def converged(self) -> bool:
        """Every peer displayed ``final_frame`` with one and the same checksum."""
        sums = self.final_checksums
        return bool(sums) and None not in sums and len(set(sums)) == 1

    def metrics(self) -> dict[str, float | int | bool]:
        """The ``sync/compare`` columns: delays in ms, rates per second, bytes per peer."""
        stats = [r.stats for r in self.records]
        n = len(stats)
        seconds = max(self.elapsed, 1e-9)
        delays = [d for s in stats for d in s.input_delays]
        depths = [d for s in stats for d in s.rollback_depths]
        return {
            "input_delay_ms_p50": _percentile(delays, 50) * 1000.0,
            "input_delay_ms_p99": _percentile(delays, 99) * 1000.0,
            "resimulated_per_s": sum(s.frames_resimulated for s in stats) / n / seconds,
            "rollbacks_per_s": sum(len(s.rollback_depths) for s in stats) / n / seconds,
            "rollback_depth_p50": _percentile(depths, 50),
            "rollback_depth_p99": _percentile(depths, 99),
            "rollback_depth_max": max(depths, default=0),
            "inconsistent_frames": self.inconsistent_frames,
            "inconsistent_pct": 100.0 * self.inconsistent_frames / max(1, self.compared_frames),
            "max_divergence_m": self.max_divergence,
            "longest_inconsistent_run": self.longest_inconsistent_run,
            "stall_frames": sum(s.stall_frames for s in stats) / n,
            "late_discarded": sum(s.late_discarded for s in stats),
            "desyncs": sum(len(s.desyncs) for s in stats),
            "payload_bytes_per_s": sum(s.bytes_sent for s in stats) / n / seconds,
            "wire_bytes_per_s": sum(r.wire_bytes_sent for r in self.records) / n / seconds,
            "final_frame": self.final_frame,
            "converged": self.converged,
        }


def _percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), q)) if values else 0.0


def _with_loss(config: LinkConfig, loss: float) -> LinkConfig:
    if loss == 0.0:
        return config
    return dataclasses.replace(config, loss=1.0 - (1.0 - config.loss) * (1.0 - loss))


class _Comparer:
    """Keeps the first displayed state of each frame per peer until every peer moved past it."""

    def __init__(self, game: DeterministicGame[Any], peers: int) -> None:
        self._game = game
        self._peers = peers
        self._shown: dict[int, dict[int, tuple[int, Any]]] = {}
        self._progress = [-1] * peers
        self._next = 0
        self._run = 0
        self._divergence_sum = 0.0
        self.compared = 0
        self.inconsistent = 0
        self.max_divergence = 0.0
        self.longest_run = 0
        self.last: dict[int, int] = {}

    def show(self, peer: int, frame: int, checksum: int, state: Any) -> None:
        if frame >= self._next:
            shown = self._shown.setdefault(frame, {})
            if peer not in shown:
                shown[peer] = (checksum, self._game.save(state))
        self._progress[peer] = max(self._progress[peer], frame)
        self._compare_up_to(min(self._progress) - 1)

    def finish(self) -> None:
        self._compare_up_to(min(self._progress))

    def _compare_up_to(self, last: int) -> None:
        while self._next <= last:
            frame = self._next
            self._next += 1
            shown = self._shown.pop(frame, {})
            if len(shown) < 2:
                continue
            self.compared += 1
            self.last = {p: c for p, (c, _) in shown.items()}
            (first_sum, first_state), *others = shown.values()
            if all(c == first_sum for c, _ in others):
                self._run = 0
                continue
            self.inconsistent += 1
            self._run += 1
            self.longest_run = max(self.longest_run, self._run)
            worst = max(self._game.divergence(first_state, s) for _, s in others)
            self._divergence_sum += worst
            self.max_divergence = max(self.max_divergence, worst)

    @property
    def mean_divergence(self) -> float:
        return self._divergence_sum / self.inconsistent if self.inconsistent else 0.0


class _Session:
    """The simulated network, the connections and the tick loop of one ``run_session``."""

    def __init__(
        self,
        config: HarnessConfig,
        game: DeterministicGame[Any],
        inputs: InputScript,
        peers: list[SyncPeer[Any]],
    ) -> None:
        self.config = config
        self.game = game
        self.inputs = inputs
        self.peers = peers
        self.scheduler = Scheduler()
        self.network = Network(self.scheduler, seed=config.seed)
        self.records = [PeerRecord() for _ in peers]
        self.comparer = _Comparer(game, len(peers))
        self.offsets = [
            config.clock_offsets[i] if i < len(config.clock_offsets) else 0.0
            for i in range(len(peers))
        ]
        self.input_ticks = math.ceil(config.duration * config.frame_rate)
        self.end = config.duration + config.drain
        self.timers: dict[tuple[str, str], Handle] = {}
        # connections by (owner host, far host)
        self.conns: dict[tuple[str, str], Connection] = {}
        self._build_network()

    def _build_network(self) -> None:
        cfg = self.config
        profile = get_profile(cfg.profile)
        up, down = _with_loss(profile.up, cfg.loss), _with_loss(profile.down, cfg.loss)
        names = [f"p{i}" for i in range(len(self.peers))]
        for index, name in enumerate(names):
            self.network.add_host(name).bind(_PORT, self._receiver(name, index))
        if cfg.topology == "star":
            self.network.add_host(_RELAY).bind(_PORT, self._receiver(_RELAY, -1))
            pairs = [(name, _RELAY) for name in names]
        else:
            pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
        for a, b in pairs:
            self.network.set_link(a, b, up)
            self.network.set_link(b, a, down)
            self.conns[(a, b)] = Connection(config=SESSION_CONNECTION, now=0.0, is_client=True)
            self.conns[(b, a)] = Connection(config=SESSION_CONNECTION, now=0.0, is_client=False)

    # -- the network side ----------------------------------------------------------------------

    def _receiver(self, host: str, index: int) -> Callable[[bytes, Address, float], None]:
        def receive(data: bytes, src: Address, now: float) -> None:
            key = (host, src[0])
            conn = self.conns.get(key)
            if conn is None:
                return
            conn.receive_payload(data, now)
            for event in conn.take_events():
                if isinstance(event, MessageReceived):
                    self._deliver(host, index, src[0], event.channel, event.payload, now)
            self._pump(key, now)
            if index >= 0:
                self._flush(index, now)

        return receive

    def _deliver(
        self, host: str, index: int, far: str, channel: int, payload: bytes, now: float
    ) -> None:
        if host == _RELAY:
            if not payload or payload[0] >= len(self.peers):
                return
            source = int(far[1:])
            key = (_RELAY, f"p{payload[0]}")
            self.conns[key].send(channel, bytes((source,)) + payload[1:])
            self._pump(key, now)
            return
        if self.config.topology == "star":
            if not payload or payload[0] >= len(self.peers):
                return
            source, payload = payload[0], payload[1:]
        else:
            source = int(far[1:])
        self.peers[index].receive(source, payload, now + self.offsets[index])

    def _pump(self, key: tuple[str, str], now: float) -> None:
        conn = self.conns[key]
        for payload in conn.payloads_to_send(now):
            self.network.send(payload, (key[0], _PORT), (key[1], _PORT))
        when = conn.next_timer()
        handle = self.timers.get(key)
        if handle is not None and not handle.cancelled:
            if when is not None and handle.when == when:
                return
            handle.cancel()
        if when is not None:
            self.timers[key] = self.scheduler.call_at(max(when, now), self._timer, key)

    def _timer(self, key: tuple[str, str]) -> None:
        now = self.scheduler.now
        self.conns[key].handle_timer(now)
        self._pump(key, now)

    def _flush(self, index: int, now: float) -> None:
        host = f"p{index}"
        touched: set[tuple[str, str]] = set()
        for out in self.peers[index].outgoing():
            channel = RELIABLE if out.reliable else UNRELIABLE
            if self.config.topology == "star":
                key = (host, _RELAY)
                self.conns[key].send(channel, bytes((out.destination,)) + out.payload)
            else:
                key = (host, f"p{out.destination}")
                if key not in self.conns:
                    continue
                self.conns[key].send(channel, out.payload)
            touched.add(key)
        for key in sorted(touched):
            self._pump(key, now)

    # -- the peers' side -----------------------------------------------------------------------

    def _tick(self, index: int, tick: int) -> None:
        now = self.scheduler.now
        peer = self.peers[index]
        local_input = self.inputs(index, tick) if tick < self.input_ticks else None
        peer.tick(now + self.offsets[index], local_input or self.game.neutral_input)
        self._flush(index, now)
        record = self.records[index]
        frame = peer.displayed_frame
        state = peer.displayed_state
        checksum = self.game.checksum(state)
        record.times.append(now)
        record.frames.append(frame)
        record.checksums.append(checksum)
        self.comparer.show(index, frame, checksum, state)
        following = now + peer.frame_period
        if following < self.end:
            self.scheduler.call_at(following, self._tick, index, tick + 1)

    def run(self, phase_rng: random.Random) -> HarnessResult:
        period = 1.0 / self.config.frame_rate
        for index in range(len(self.peers)):
            self.scheduler.call_at(phase_rng.uniform(0.0, period), self._tick, index, 0)
        self.scheduler.run(self.end)
        self.comparer.finish()
        final = min(r.frames[-1] for r in self.records if r.frames)
        finals: list[int | None] = []
        for index, record in enumerate(self.records):
            record.stats = self.peers[index].stats
            record.wire_bytes_sent = self.network.stats(f"p{index}").wire_bytes_sent
            finals.append(_checksum_of(record, final))
        comparer = self.comparer
        return HarnessResult(
            config=self.config,
            elapsed=self.end,
            records=self.records,
            compared_frames=comparer.compared,
            inconsistent_frames=comparer.inconsistent,
            max_divergence=comparer.max_divergence,
            mean_divergence=comparer.mean_divergence,
            longest_inconsistent_run=comparer.longest_run,
            final_frame=final,
            final_checksums=finals,
        )


def _checksum_of(record: PeerRecord, frame: int) -> int | None:
    """The last checksum this peer displayed for ``frame`` (None if it never showed it)."""
    for shown, checksum in zip(reversed(record.frames), reversed(record.checksums), strict=True):
        if shown == frame:
            return checksum
    return None


def run_session(
    config: HarnessConfig,
    game: DeterministicGame[Any],
    inputs: InputScript,
    factory: PeerFactory | None = None,
) -> HarnessResult:
    """Run ``config.peers`` peers of ``config.algorithm`` on ``game`` over the simulator.

    Args:
        config: Algorithm, peers, topology, profile, loss, timing and seed.
        game: The deterministic game (shared by the peers: it must keep no state of its own).
        inputs: ``inputs(peer, tick)``, the local player's input on each tick.
        factory: Builds each peer from its number and seeded generator; by default
            ``make_peer(config.algorithm, game, peer, peers, rng, frame_period=...,
            **config.knobs)``.

    Returns:
        The records and the cross-peer comparison (see ``HarnessResult.metrics``).
    """
    period = 1.0 / config.frame_rate

    def default(peer: int, rng: random.Random) -> SyncPeer[Any]:
        knobs = {"frame_period": period, **config.knobs}
        return make_peer(config.algorithm, game, peer, config.peers, rng, **knobs)

    build = factory or default
    peers = [
        build(i, random_stream(config.seed, f"sync.harness.peer{i}")) for i in range(config.peers)
    ]
    session = _Session(config, game, inputs, peers)
    return session.run(random_stream(config.seed, "sync.harness.phase"))


def run_keeping_peers(
    config: HarnessConfig,
    game: DeterministicGame[Any],
    inputs: InputScript,
    make: Callable[[int, random.Random], P],
) -> tuple[HarnessResult, list[P]]:
    """`run_session` with the peers ``make`` builds, returned with the result in peer order.

    For the columns the harness does not measure (a lockstep turn length, a bucket's late
    inputs, Time Warp's anti-messages), read from the peers after the run.
    """
    built: list[P] = []

    def factory(peer: int, rng: random.Random) -> SyncPeer[Any]:
        made = make(peer, rng)
        built.append(made)
        return made

    return run_session(config, game, inputs, factory), built
