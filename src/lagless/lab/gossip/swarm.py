"""A swarm of Silac peers walking a random map, run on the simulator and measured (spec 002 §5).

Implements the test setup of spec 002 §3.3 and §5.0 for the ``gossip/*`` experiments: N
`GossipPeer` objects (or any subclass, through ``peer_factory``) on `lagless.netsim` hosts driven
by `lagless.io.sim.SimEndpoint`, each avatar moved by `lagless.gossip.ai.AvatarAI` on a
`lagless.gossip.worldmap.WorldMap`, every node behind the per-node uplink of
`lagless.lab.gossip.network.UplinkRouter`. The swarm records what the metrics of
`lagless.lab.gossip.metrics` need. Decisions, pinned in ``tests/lab/gossip/test_swarm.py``:

* Start-up: peer 0 hosts; peer i joins at ``i · join_window / N`` through one random peer that
  is already in the game (``test_swarm_converges``).
* Interactions (the thesis's "objects", §3.4): shots are Poisson per avatar at ``shot_rate``
  per second with a per-avatar counter as target (so (avatar, code) is unique); pickups are
  Poisson at ``pickup_rate`` of a uniformly random item id.
* Avatar moves are applied once per frame (``frame_time``) to all avatars at once, in index order.
* Free bandwidth is measured once per second as ``bandwidth`` minus the bytes the node put on
  the wire in the last second, and handed to ``advertise_bandwidth`` (the tail carries half,
  §2.12).
* A delay is (first arrival of a newer avatar state at n) - (time its owner sent it with hop 0);
  the replica matrices behind Inc / Inj hold, for every (n, k), k's position and send time as n
  last learnt them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from lagless.errors import ConfigError
from lagless.gossip import (
    AvatarUpdated,
    GossipConfig,
    GossipPeer,
    InteractionKind,
    InteractionReceived,
    JoinAccepted,
    PeerJoined,
    PeerState,
)
from lagless.gossip.ai import AvatarAI, AvatarAIConfig
from lagless.gossip.worldmap import WorldMap
from lagless.io.sim import SimEndpoint
from lagless.lab.gossip.network import UplinkConfig, UplinkRouter
from lagless.netsim import Datagram, Network, Scheduler, random_stream, stream

__all__ = ["DELAY_BINS", "PORT", "PeerFactory", "Swarm", "SwarmConfig", "host_name"]

PORT: Final = 4000  # every peer listens on this port of its own host
DELAY_BINS: Final = 15  # distance bins of 0.1 map size for delays (0 .. 1.5 map sizes)
_AVATAR_INFO: Final = 9  # base type of avatar info (spec 002 Table 2.1)
_SENT_MEMORY: Final = 3.0  # seconds a hop-0 send time is kept for delay matching

PeerFactory = Callable[..., GossipPeer]
"""``factory(config=, rng=, address=, position=, facing=, name=)`` -> a peer."""


def host_name(index: int) -> str:
    """Return the IPv4 literal host name of peer ``index`` (``10.0.x.y``)."""
    return f"10.{index // 62500}.{index // 250 % 250}.{index % 250 + 1}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SwarmConfig:
    """The world, network and workload of a swarm run (spec 002 §5.0; values are decisions).

    Raises:
        ConfigError: naming the first field out of range.
    """

    peers: int = 100
    """Peers that join at start-up."""
    map_size: float = 1000.0
    """Side of the square map, metres (D_max is its diagonal)."""
    obstacles: int = 40
    """Random rectangular obstacles."""
    uplink: UplinkConfig = field(default_factory=UplinkConfig)
    """Per-node uplink, loss and one-hop latency."""
    gossip: GossipConfig | None = None
    """Peer parameters; ``None``: defaults with ``d_max`` and the map box set from the map."""
    ai: AvatarAIConfig = field(default_factory=AvatarAIConfig)
    """Avatar movement (Algorithm 2)."""
    shot_rate: float = 0.5
    """Shots per avatar per second (transient interactions)."""
    pickup_rate: float = 0.05
    """Item pickups per avatar per second (important interactions)."""
    join_window: float = 5.0
    """Seconds over which the start-up peers join."""

    def __post_init__(self) -> None:
        if self.peers < 2:
            raise ConfigError(f"peers must be >= 2, got {self.peers}")
        for name in ("map_size", "join_window"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a finite number > 0, got {value!r}")
        for name in ("shot_rate", "pickup_rate"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite rate >= 0 per second, got {value!r}")

    def peer_config(self) -> GossipConfig:
        """Return the peers' config: ``gossip`` or defaults fitted to the map."""
        if self.gossip is not None:
            return self.gossip
        return GossipConfig(
            d_max=self.map_size * math.sqrt(2.0),
            world_min=(0.0, 0.0, -1.0),
            world_max=(self.map_size, self.map_size, 1.0),
        )


@dataclass(slots=True)
class _Interaction:
    origin: int
    code: int
    time: float
    important: bool
    distances: np.ndarray
    present: np.ndarray
    received: set[int] = field(default_factory=set)


class Swarm:
    """N peers, their avatars and the simulated network, with the recorders of the experiments.

    Args:
        config: World, network and workload.
        seed: Root seed; every random stream is named under it.
        capacity: Peers that may exist in total (start-up peers plus later newcomers).
        peer_factory: Builds each peer (default `GossipPeer`).
    """

    def __init__(
        self,
        config: SwarmConfig,
        *,
        seed: int,
        capacity: int | None = None,
        peer_factory: PeerFactory = GossipPeer,
    ) -> None:
        self.config = config
        self._seed = seed
        self._factory = peer_factory
        self._gossip = config.peer_config()
        self.capacity = capacity if capacity is not None else config.peers
        if self.capacity < config.peers:
            raise ConfigError(f"capacity must be >= peers ({config.peers}), got {self.capacity}")
        self.world = WorldMap.random(
            size=config.map_size, obstacles=config.obstacles, rng=stream(seed, "gossip.map")
        )
        self.scheduler = Scheduler(start=0.0)
        self.network = Network(self.scheduler, seed=seed)
        self.router = UplinkRouter(
            self.network,
            config=config.uplink,
            rng=stream(seed, "gossip.uplink"),
            on_send=self._on_send,
        )
        self.router.install()
        self._rng = random_stream(seed, "gossip.swarm")
        n = self.capacity
        self.peers: list[GossipPeer] = []
        self.endpoints: list[SimEndpoint[GossipPeer]] = []
        self.ais: list[AvatarAI] = []
        self.positions = np.zeros((n, 2))
        """True avatar positions (x, y), metres, one row per peer."""
        self._index: dict[int, int] = {}
        self._host_index: dict[str, int] = {}
        self._shots = [0] * n
        self._wire_last = [0] * n
        self.joined_at = np.full(n, np.inf)
        """Time each peer's join was accepted (``inf`` until then), seconds."""
        self._sent: list[dict[int, float]] = [{} for _ in range(n)]
        # replica matrices (spec 002 §3.13): what n last learnt about k
        self.replica_pos = np.zeros((n, n, 2))
        self.replica_sent = np.full((n, n), np.nan)
        self.replica_known = np.zeros((n, n), dtype=bool)
        # measurement window
        self.measuring = False
        self.delay_sum = np.zeros(DELAY_BINS)
        self.delay_count = np.zeros(DELAY_BINS, dtype=np.int64)
        self.delays_by_hop: dict[int, list[float]] = {0: [], 1: [], 2: []}
        self.sent_types: dict[int, int] = {}
        self.sent_hops: dict[int, int] = {}
        self.interactions: list[_Interaction] = []
        self._open: dict[tuple[int, int], _Interaction] = {}
        self.known_at: dict[int, dict[int, float]] = {}
        """For watched newcomers: {newcomer: {peer index: time it learnt the newcomer}}."""
        self.learnt_at: dict[int, dict[int, float]] = {}
        """For watched newcomers: {newcomer: {peer index: time the newcomer learnt it}}."""
        self.listener: Callable[[int, object], None] | None = None
        """Optional extra recorder, called as ``listener(peer index, event)`` for every event."""
        self.inc_sum = np.zeros(n)
        self.inj_sum = np.zeros(n)
        self.samples = 0
        for i in range(n):
            self._add(i)
        self.scheduler.call_at(0.0, self._frame)
        self.scheduler.call_at(1.0, self._advertise)

    # -- construction ---------------------------------------------------------------------------

    def _add(self, i: int) -> None:
        name = host_name(i)
        host = self.network.add_host(name)
        ai = AvatarAI(
            self.world, config=self.config.ai, rng=random_stream(self._seed, f"gossip.ai.{i}")
        )
        self.ais.append(ai)
        self.positions[i] = ai.position
        peer = self._factory(
            config=self._gossip,
            rng=random_stream(self._seed, f"gossip.peer.{i}"),
            address=(name, PORT),
            position=(ai.position[0], ai.position[1], 0.0),
            facing=(ai.facing[0], ai.facing[1], 0.0),
            name=f"p{i}",
        )
        self.peers.append(peer)
        self._index[peer.avatar_id] = i
        self._host_index[name] = i
        self.endpoints.append(SimEndpoint(peer, host, PORT, on_event=self._handler(i)))

    def start(self) -> None:
        """Schedule the start-up joins: peer 0 hosts, the others join one random member each."""
        step = self.config.join_window / self.config.peers
        self.scheduler.call_at(0.0, self._host)
        for i in range(1, self.config.peers):
            self.scheduler.call_at(i * step, self.join, i, 1)

    def _host(self) -> None:
        self.endpoints[0].poke(lambda p: p.join([], self.scheduler.now, game_id=0x5EED))
        self.joined_at[0] = self.scheduler.now

    def members(self) -> list[int]:
        """Return the indices of peers that are in the game."""
        return [i for i, p in enumerate(self.peers) if p.state is PeerState.JOINED]

    def join(self, i: int, contacts: int) -> None:
        """Make peer ``i`` join now through ``contacts`` random members."""
        members = self.members()
        chosen = self._rng.sample(members, min(contacts, len(members)))
        addresses = [self.peers[j].address for j in chosen]
        self.endpoints[i].poke(lambda p: p.join(addresses, self.scheduler.now, game_id=0x5EED))

    def watch(self, i: int) -> None:
        """Record when every peer learns newcomer ``i`` and when ``i`` learns every peer."""
        self.known_at[i] = {}
        self.learnt_at[i] = {}

    def run(self, until: float) -> None:
        """Run the simulation until virtual time ``until`` (s)."""
        self.scheduler.run(until)

    # -- periodic work --------------------------------------------------------------------------

    def _frame(self) -> None:
        now = self.scheduler.now
        dt = self._gossip.frame_time
        rng = self._rng
        shot_p = self.config.shot_rate * dt
        pick_p = self.config.pickup_rate * dt
        for i, peer in enumerate(self.peers):
            ai = self.ais[i]
            ai.step(dt)
            x, y = ai.position
            fx, fy = ai.facing
            self.positions[i, 0] = x
            self.positions[i, 1] = y
            if peer.state is not PeerState.JOINED:
                continue
            peer.set_avatar(position=(x, y, 0.0), facing=(fx, fy, 0.0))
            if shot_p and rng.random() < shot_p:
                self._shots[i] = (self._shots[i] + 1) & 0xFFFFF
                self._interact(i, InteractionKind.SHOT, self._shots[i], now)
            if pick_p and rng.random() < pick_p:
                item = rng.randrange(1 << 20)
                if item not in peer.items():
                    self._interact(i, InteractionKind.PICKUP, item, now)
        self.scheduler.call_at(now + dt, self._frame)

    def _interact(self, i: int, kind: InteractionKind, target: int, now: float) -> None:
        interaction = self.peers[i].send_interaction(kind, now, target=target)
        if not self.measuring:
            return
        d = np.hypot(*(self.positions - self.positions[i]).T).astype(np.float32)
        present = self.joined_at <= now
        present[i] = False
        record = _Interaction(
            origin=i,
            code=interaction.code,
            time=now,
            important=interaction.important,
            distances=d,
            present=present,
        )
        self.interactions.append(record)
        self._open[(i, interaction.code)] = record

    def _advertise(self) -> None:
        bandwidth = self.config.uplink.bandwidth
        for i, peer in enumerate(self.peers):
            sent = self.network.stats(host_name(i)).wire_bytes_sent
            peer.advertise_bandwidth(int(max(bandwidth - (sent - self._wire_last[i]), 0.0)))
            self._wire_last[i] = sent
        self.scheduler.call_at(self.scheduler.now + 1.0, self._advertise)

    def sample_consistency(self, *, eps: float = 1.0, d_min: float = 1.0) -> None:
        """Add one sample of inc_n(t) and inj_n(t) (Eq. 1.1, 1.4) for every peer in the game.

        Args:
            eps: Position error above which a replica is in a wrong state, metres.
            d_min: Smallest distance used in 1/d², metres.
        """
        now = self.scheduler.now
        present = self.joined_at <= now
        p = self.positions
        d = np.hypot(p[:, None, 0] - p[None, :, 0], p[:, None, 1] - p[None, :, 1])
        w = 1.0 / np.maximum(d, d_min) ** 2
        np.fill_diagonal(w, 0.0)
        both = present[:, None] & present[None, :]
        known = self.replica_known & both
        err = np.hypot(*(self.replica_pos - p[None, :, :]).transpose(2, 0, 1))
        wrong = known & (err > eps)
        self.inc_sum += np.where(present, (wrong * w).sum(axis=1), 0.0)
        age = np.where(known, now - np.nan_to_num(self.replica_sent, nan=now), 0.0)
        pair = known & known.T
        self.inj_sum += np.where(present, (np.abs(age - age.T) * w * pair).sum(axis=1), 0.0)
        self.samples += 1

    # -- recorders ------------------------------------------------------------------------------

    def _on_send(self, datagram: Datagram) -> None:
        data = datagram.data
        if len(data) < 12:
            return
        i = self._host_index.get(datagram.src[0])
        base, hop = data[0] & 0xBF, data[1]
        if i is not None and hop == 0 and base == _AVATAR_INFO:
            number = int.from_bytes(data[8:12], "big")
            sent = self._sent[i]
            if number not in sent:
                sent[number] = self.scheduler.now
                if len(sent) > 4 * _SENT_MEMORY / self._gossip.frame_time:
                    cut = self.scheduler.now - _SENT_MEMORY
                    self._sent[i] = {m: t for m, t in sent.items() if t >= cut}
        if self.measuring:
            self.sent_types[base] = self.sent_types.get(base, 0) + 1
            self.sent_hops[hop] = self.sent_hops.get(hop, 0) + 1

    def _handler(self, i: int) -> Callable[[object], None]:
        def on_event(event: object) -> None:
            if self.listener is not None:
                self.listener(i, event)
            match event:
                case AvatarUpdated(avatar=avatar, message_number=number, hop=hop):
                    self._avatar(i, avatar.avatar_id, avatar.position, number, hop)
                case InteractionReceived(avatar_id=aid, interaction=interaction):
                    k = self._index.get(aid)
                    if k is not None:
                        record = self._open.get((k, interaction.code))
                        if record is not None:
                            record.received.add(i)
                case PeerJoined(avatar_id=aid):
                    self._joined(i, aid)
                case JoinAccepted():
                    self.joined_at[i] = min(self.joined_at[i], self.scheduler.now)
                case _:
                    pass

        return on_event

    def _avatar(
        self, i: int, aid: int, position: tuple[float, float, float], number: int, hop: int
    ) -> None:
        k = self._index.get(aid)
        if k is None:
            return
        now = self.scheduler.now
        sent = self._sent[k].get(number)
        self.replica_pos[i, k, 0] = position[0]
        self.replica_pos[i, k, 1] = position[1]
        self.replica_known[i, k] = True
        self.replica_sent[i, k] = now if sent is None else sent
        if sent is None or not self.measuring:
            return
        delay = now - sent
        dx = self.positions[i, 0] - self.positions[k, 0]
        dy = self.positions[i, 1] - self.positions[k, 1]
        b = min(int(math.hypot(dx, dy) / self.config.map_size * 10.0), DELAY_BINS - 1)
        self.delay_sum[b] += delay
        self.delay_count[b] += 1
        if hop in self.delays_by_hop:
            self.delays_by_hop[hop].append(delay)

    def _joined(self, i: int, aid: int) -> None:
        k = self._index.get(aid)
        if k is None:
            return
        now = self.scheduler.now
        if k in self.known_at:
            self.known_at[k].setdefault(i, now)
        if i in self.learnt_at:
            self.learnt_at[i].setdefault(k, now)
