"""Silac on real UDP: the info server, a bot peer, and a swarm of bot peers in one process.

Implements the runnable side of spec 002 §3.4 (Fig. 2.14: the asyncio loop and each endpoint's
reader and timer play the receiver and sender threads, `GossipPeer` the executor and protocol
manager) and the join through the info server's contact nodes of §3.12. Backs
``lagless gossip lobby``, ``lagless gossip peer`` and ``lagless gossip swarm``. Decisions, pinned
in ``tests/apps/test_gossip_udp.py``:

* **One socket per peer** for gossip and lobby traffic, so the lobby lists the address the other
  peers can reach (and whose crc32 is the avatar id); datagrams from the lobby's address go to
  the `LobbyClient`, all others to the `GossipPeer` (``test_two_peers_meet_through_a_lobby``).
* **Lobby flow**: ask for the games list (32); take the listed game of the same map and game
  type with most participants and ask for its extra contacts (33); join through them. With no
  such game, host a new one. A join that fails or is rejected starts the flow over (a stale
  game disappears from the lobby after its members' timeout). Heartbeats (35) start once the
  peer is in a game.
* **Bot**: random waypoints in a square world, straight lines at a constant speed, a uniform
  0–2 s pause at each waypoint (Algorithm 2 of §3.3 without the Voronoi graph). Each bot starts
  at a random point.
* **Swarm**: peer 0 goes first; the others start ``STAGGER`` seconds apart once it is in a game,
  so n simultaneous empty lists cannot open n games. Avatar updates are counted, not printed.
* **Swarm metrics**: coverage = the fraction of the other swarm peers in a peer's table, sampled
  every ``SAMPLE_INTERVAL``; "full knowledge" is the first sample at which every peer knows every
  other, in seconds from the swarm's start; rates are per peer over the window from the moment
  all peers are in a game (or the second half of the run, if never) to the end; bytes are the
  gossip UDP payload, and again with 28 bytes of IPv4 + UDP header per datagram (DESIGN.md).
"""

from __future__ import annotations

import asyncio
import ipaddress
import math
import random
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Final

from lagless._types import Address
from lagless.errors import ConfigError, LaglessError
from lagless.gossip import (
    AvatarUpdated,
    GameEntry,
    GossipConfig,
    GossipEvent,
    GossipPeer,
    JoinAccepted,
    JoinFailed,
    JoinRejected,
    PeerJoined,
    PeerLeft,
    PeerState,
)
from lagless.gossip.lobby import (
    GameClosed,
    GameInfoReceived,
    GameOpened,
    GamesListed,
    Lobby,
    LobbyClient,
    LobbyClientConfig,
    LobbyConfig,
    LobbyStatistics,
    LobbyUnreachable,
)
from lagless.io.endpoint import AsyncEndpoint
from lagless.io.udp import format_hostport, open_udp_socket, resolve

__all__ = [
    "DEFAULT_LOBBY_PORT",
    "LobbyError",
    "LobbySummary",
    "PeerSummary",
    "SwarmSummary",
    "run_lobby",
    "run_peer",
    "run_swarm",
]

DEFAULT_LOBBY_PORT: Final = 40100  # UDP port of ``lagless gossip lobby`` (the thesis names none)
DEFAULT_WORLD_SIZE: Final = 200.0  # metres: side of the bots' square world
DEFAULT_SPEED: Final = 5.0  # metres per second: bot walking speed
MAX_PAUSE: Final = 2.0  # seconds: longest bot pause at a waypoint
STOP_POLL: Final = 0.1  # seconds between checks of the stop flag and the deadline
STATUS_INTERVAL: Final = 1.0  # seconds between status lines of ``run_peer`` and ``run_swarm``
SAMPLE_INTERVAL: Final = 0.1  # seconds between swarm coverage samples
STAGGER: Final = 0.01  # seconds between swarm peer starts
FIRST_PEER_WAIT: Final = 5.0  # seconds the swarm waits for peer 0 to be in a game
UDP_IPV4_OVERHEAD: Final = 28  # bytes of IPv4 + UDP header per datagram


class LobbyError(LaglessError):
    """The info server did not answer, so no game could be found."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LobbySummary:
    """Counters of one `run_lobby` run."""

    opened: int
    """Games opened (first heartbeats)."""
    closed: int
    """Games closed (all members silent)."""
    heartbeats: int
    """Heartbeats taken."""
    answered: int
    """Requests answered."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PeerSummary:
    """What one `run_peer` run saw."""

    game_id: int
    """The game played (0 if none was joined)."""
    hosted: bool
    """True when this peer opened the game."""
    known_peers: int
    """Peers in the table at the end."""
    updates_per_second: float
    """Avatar updates received per second while in the game."""
    bytes_per_second: float
    """Gossip bytes sent per second while in the game (UDP payload)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SwarmSummary:
    """Measurements of one `run_swarm` run (definitions in the module docstring)."""

    peers: int
    """Peers started."""
    joined: int
    """Peers in a game at the end."""
    games: int
    """Distinct games the joined peers are in (1 when the swarm found itself)."""
    coverage_mean: float
    """Mean fraction of the other swarm peers known, at the end."""
    coverage_min: float
    """Lowest fraction of the other swarm peers known by any peer, at the end."""
    full_knowledge_after: float | None
    """Seconds from the swarm's start until every peer knew every other; None if never."""
    window: float
    """Seconds over which the rates below were measured."""
    updates_per_second: float
    """Avatar updates received per peer per second."""
    originated_per_second: float
    """Own messages originated per peer per second: one avatar info a frame (20 at 50 ms frames
    unless the process is CPU bound), plus join requests and corrections."""
    bytes_per_second: float
    """Gossip bytes sent per peer per second (UDP payload)."""
    bytes_per_second_with_headers: float
    """The same plus 28 bytes of IPv4 + UDP header per datagram."""


class _WaypointBot:
    """Random-waypoint walker in the square [0, size]² (z = 0); see the module docstring."""

    def __init__(self, *, rng: random.Random, size: float, speed: float) -> None:
        self._rng = rng
        self._size = size
        self._speed = speed
        self.position = self._point()
        self.facing: tuple[float, float, float] = (1.0, 0.0, 0.0)
        self._target = self._point()
        self._pause_until = -math.inf
        self._last: float | None = None

    def _point(self) -> tuple[float, float, float]:
        return (self._rng.uniform(0.0, self._size), self._rng.uniform(0.0, self._size), 0.0)

    def step(self, now: float) -> None:
        """Walk for the time since the last step (seconds)."""
        dt = 0.0 if self._last is None else max(0.0, now - self._last)
        self._last = now
        if now < self._pause_until:
            return
        x, y, _ = self.position
        dx, dy = self._target[0] - x, self._target[1] - y
        dist = math.hypot(dx, dy)
        travel = self._speed * dt
        if dist <= travel:
            self.position = self._target
            self._target = self._point()
            self._pause_until = now + self._rng.uniform(0.0, MAX_PAUSE)
            return
        self.position = (x + dx / dist * travel, y + dy / dist * travel, 0.0)
        self.facing = (dx / dist, dy / dist, 0.0)


class _Node:
    """A peer runner's protocol objects on one socket, seen by the driver as one sans-I/O object.

    Datagrams from the lobby go to the `LobbyClient`, the rest to the `GossipPeer`; the
    frequent `AvatarUpdated` events are counted here instead of being queued.
    """

    def __init__(
        self, peer: GossipPeer, client: LobbyClient, bot: _WaypointBot, config: GossipConfig
    ) -> None:
        self.peer = peer
        self.gossip_config = config
        self.client = client
        self.bot = bot
        self.updates = 0
        self.hosted = False

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        if addr == self.client.lobby:
            self.client.receive_datagram(data, addr, now)
        else:
            self.peer.receive_datagram(data, addr, now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        return self.client.datagrams_to_send(now) + self.peer.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        times = [t for t in (self.client.next_timer(), self.peer.next_timer()) if t is not None]
        return min(times, default=None)

    def handle_timer(self, now: float) -> None:
        for obj in (self.client, self.peer):
            deadline = obj.next_timer()
            if deadline is not None and deadline <= now:
                obj.handle_timer(now)

    def next_event(self) -> GossipEvent | None:
        event = self.client.next_event()
        if event is not None:
            return event
        while (event := self.peer.next_event()) is not None:
            if not isinstance(event, AvatarUpdated):
                return event
            self.updates += 1
        return None


@dataclass(slots=True)
class _Run:
    """Deadline and stop flag shared by a run's coroutines."""

    loop: asyncio.AbstractEventLoop
    stop_at: float | None
    stop: asyncio.Event | None
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def over(self) -> bool:
        return (
            self.done.is_set()
            or (self.stop is not None and self.stop.is_set())
            or (self.stop_at is not None and self.loop.time() >= self.stop_at)
        )

    def poll(self) -> float:
        if self.stop_at is None:
            return STOP_POLL
        return max(0.0, min(STOP_POLL, self.stop_at - self.loop.time()))


def _check_duration(duration: float | None) -> None:
    if duration is not None and not (math.isfinite(duration) and duration > 0):
        raise ConfigError(f"duration must be a finite number of seconds > 0, got {duration}")


async def run_lobby(
    address: Address,
    *,
    out: Callable[[str], None],
    config: LobbyConfig | None = None,
    duration: float | None = None,
    seed: int | None = None,
    ready: Callable[[Address], None] | None = None,
    stop: asyncio.Event | None = None,
    monitor: Callable[[LobbyStatistics], None] | None = None,
) -> LobbySummary:
    """Run the Silac info server (spec 002 §2.11) until ``duration`` passes or ``stop`` is set.

    Args:
        address: Where to bind, ``(host, port)``; port 0 picks a free port.
        out: Receives one line per game opened or closed.
        config: Lobby parameters (defaults: `LobbyConfig()`).
        duration: Seconds to run; ``None`` runs until ``stop``.
        seed: Seed of the contact sampling; ``None`` for a fresh one.
        ready: Called with the bound address once the socket is open.
        stop: Set it (e.g. from a signal handler) to end the run.
        monitor: Called with the lobby's counters every ``STATUS_INTERVAL`` seconds.

    Raises:
        ConfigError: a bad address or duration.
    """
    _check_duration(duration)
    loop = asyncio.get_running_loop()
    sock = open_udp_socket(address, field="--host")
    port = int(sock.getsockname()[1])
    lobby = Lobby(config=config or LobbyConfig(), rng=random.Random(seed), port=port)
    opened = closed = 0
    async with AsyncEndpoint(lobby, sock, loop) as ep:
        if ready is not None:
            ready(ep.address)
        run = _Run(loop, None if duration is None else loop.time() + duration, stop)
        next_status = loop.time()
        while not run.over():
            if monitor is not None and loop.time() >= next_status:
                next_status = loop.time() + STATUS_INTERVAL
                monitor(lobby.statistics())
            try:
                event = await ep.receive(timeout=run.poll())
            except TimeoutError:
                continue
            match event:
                case GameOpened(game_id=gid, map_id=map_id, game_type=kind, member=member):
                    opened += 1
                    where = format_hostport(member)
                    out(f"game {gid:08x} opened by {where} (map {map_id}, type {kind})")
                case GameClosed(game_id=gid):
                    closed += 1
                    out(f"game {gid:08x} closed (no heartbeat)")
                case _:
                    pass
        stats = lobby.statistics()
    return LobbySummary(
        opened=opened, closed=closed, heartbeats=stats.heartbeats, answered=stats.answered
    )


def _peer_address(host: str, port: int) -> Address:
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError(f"--host must be an IP literal peers can reach, got {host!r}") from None
    if ip.is_unspecified:
        raise ConfigError(f"--host must be a specific address peers can reach, not {host}")
    if not 0 <= port <= 65535:
        raise ConfigError(f"--port must be in [0, 65535], got {port}")
    return (host, port)


def _open_node(
    loop: asyncio.AbstractEventLoop,
    *,
    local: Address,
    lobby: Address,
    config: GossipConfig,
    client_config: LobbyClientConfig,
    rng: random.Random,
    world_size: float,
    name: str | None,
) -> AsyncEndpoint[_Node]:
    sock = open_udp_socket(local, field="--host")
    host, port = sock.getsockname()[:2]
    address = (str(host), int(port))
    bot = _WaypointBot(rng=random.Random(rng.random()), size=world_size, speed=DEFAULT_SPEED)
    peer = GossipPeer(
        config=config,
        rng=random.Random(rng.random()),
        address=address,
        position=bot.position,
        name=f"bot-{address[1]}" if name is None else name,
    )
    client = LobbyClient(config=client_config, lobby=lobby, port=address[1])
    return AsyncEndpoint(_Node(peer, client, bot, config), sock, loop)


def _choose(games: tuple[GameEntry, ...], config: GossipConfig) -> GameEntry | None:
    fitting = [
        g
        for g in games
        if (g.map_id, g.game_type) == (config.map_id, config.game_type) and g.contacts
    ]
    return max(fitting, key=lambda g: g.participants, default=None)


def _describe(event: object) -> str | None:
    match event:
        case PeerJoined(avatar_id=aid, address=addr, name=name):
            return f"peer {aid:08x} {name!r} joined from {format_hostport(addr)}"
        case PeerLeft(avatar_id=aid, reason=reason):
            return f"peer {aid:08x} left ({reason.value})"
        case JoinRejected(code=code, rejected_by=who):
            return f"join rejected by {who:08x}: {code.name.lower()}"
        case JoinFailed(attempts=attempts):
            return f"join failed after {attempts} requests; asking the lobby again"
        case _:
            return None


async def _join_game(
    ep: AsyncEndpoint[_Node], run: _Run, out: Callable[[str], None] | None, lobby_text: str
) -> bool:
    """The lobby flow of the module docstring; True once the peer is in a game."""
    node = ep.obj
    node.client.request_games(ep.now())
    ep.flush()
    while not run.over():
        try:
            event = await ep.receive(timeout=run.poll())
        except TimeoutError:
            continue
        now = ep.now()
        match event:
            case GamesListed(games=games):
                game = _choose(games, node.gossip_config)
                if game is None:
                    node.peer.join([], now)
                    node.hosted = True
                    node.client.start_heartbeat(node.peer.game_id, now)
                    ep.flush()
                    if out is not None:
                        out(f"hosting new game {node.peer.game_id:08x}")
                    return True
                node.client.request_game_info(game.game_id, now)
            case GameInfoReceived(game=game):
                if game.contacts:
                    node.peer.join(game.contacts, now, game_id=game.game_id)
                else:
                    node.client.request_games(now)
            case JoinAccepted(game_id=gid, accepted_by=who):
                node.client.start_heartbeat(gid, now)
                ep.flush()
                if out is not None:
                    out(f"joined game {gid:08x} (accepted by {who:08x})")
                return True
            case JoinRejected() | JoinFailed():
                if out is not None:
                    out(_describe(event) or "")
                node.client.request_games(now)
            case LobbyUnreachable(attempts=attempts):
                raise LobbyError(f"lobby {lobby_text} did not answer {attempts} requests")
            case _:
                line = _describe(event)
                if out is not None and line is not None:
                    out(line)
        ep.flush()
    return False


async def _play(
    ep: AsyncEndpoint[_Node], run: _Run, out: Callable[[str], None] | None, lobby_text: str
) -> None:
    """Join (or host) through the lobby, then report events until the run is over."""
    if not await _join_game(ep, run, out, lobby_text):
        return
    while not run.over():
        try:
            event = await ep.receive(timeout=run.poll())
        except TimeoutError:
            continue
        match event:
            case JoinRejected() | JoinFailed() | GamesListed() | GameInfoReceived():
                pass  # late answers to the join flow; the peer is already in a game
            case _:
                line = _describe(event)
                if out is not None and line is not None:
                    out(line)


def _leave(ep: AsyncEndpoint[_Node]) -> None:
    node = ep.obj
    node.client.stop_heartbeat()
    if node.peer.state in (PeerState.JOINING, PeerState.JOINED):
        node.peer.leave(ep.now())
    ep.flush()


def _gossip_config(config: GossipConfig | None, world_size: float) -> GossipConfig:
    if not (math.isfinite(world_size) and world_size > 0):
        raise ConfigError(f"world_size must be a finite number of metres > 0, got {world_size}")
    return config or GossipConfig(d_max=world_size * math.sqrt(2.0))


async def run_peer(
    lobby: Address,
    *,
    out: Callable[[str], None],
    host: str = "127.0.0.1",
    port: int = 0,
    name: str | None = None,
    config: GossipConfig | None = None,
    client_config: LobbyClientConfig | None = None,
    world_size: float = DEFAULT_WORLD_SIZE,
    duration: float | None = None,
    seed: int | None = None,
    ready: Callable[[Address], None] | None = None,
    stop: asyncio.Event | None = None,
) -> PeerSummary:
    """Run one bot peer: find a game through the lobby (or host one), walk, print events.

    Args:
        lobby: The info server's ``(host, port)``.
        out: Receives one line per membership event and a status line every second.
        host: IP literal to bind; it is the peer's address, so it must be reachable by others.
        port: UDP port; 0 picks a free one.
        name: Participant name (at most 64 UTF-8 bytes); default ``bot-<port>``.
        config: Gossip parameters (default: `GossipConfig` with ``d_max`` = world diagonal).
        client_config: Lobby client parameters (default: `LobbyClientConfig()`).
        world_size: Side of the bot's square world, metres.
        duration: Seconds to run; ``None`` runs until ``stop``.
        seed: Seed of the bot and the peer's draws; ``None`` for a fresh one.
        ready: Called with the bound address once the socket is open.
        stop: Set it to end the run; the peer then sends its leave message.

    Raises:
        ConfigError: a bad address, size or duration.
        LobbyError: the lobby did not answer.
    """
    _check_duration(duration)
    gossip = _gossip_config(config, world_size)
    loop = asyncio.get_running_loop()
    lobby_addr = resolve(lobby, field="--lobby")[1]
    ep = _open_node(
        loop,
        local=_peer_address(host, port),
        lobby=lobby_addr,
        config=gossip,
        client_config=client_config or LobbyClientConfig(),
        rng=random.Random(seed),
        world_size=world_size,
        name=name,
    )
    node = ep.obj
    run = _Run(loop, None if duration is None else loop.time() + duration, stop)
    async with ep:
        if ready is not None:
            ready(ep.address)
        out(f"peer {node.peer.avatar_id:08x} on {format_hostport(ep.address)}")
        player = asyncio.create_task(_play(ep, run, out, format_hostport(lobby_addr)))
        joined_at: float | None = None
        base = (0, 0)
        next_status = loop.time() + STATUS_INTERVAL
        try:
            while not run.over() and not player.done():
                await asyncio.sleep(gossip.frame_time)
                now = loop.time()
                if node.peer.state is not PeerState.JOINED:
                    continue
                if joined_at is None:
                    joined_at, base = now, (node.updates, node.peer.statistics().bytes_sent)
                node.bot.step(now)
                node.peer.set_avatar(position=node.bot.position, facing=node.bot.facing)
                if now >= next_status:
                    next_status = now + STATUS_INTERVAL
                    stats = node.peer.statistics()
                    span = max(now - joined_at, 1e-9)
                    out(
                        f"t={now - joined_at:.1f}s known {stats.peers} peers, "
                        f"{(node.updates - base[0]) / span:.0f} updates/s, "
                        f"{(stats.bytes_sent - base[1]) / span:.0f} B/s sent"
                    )
        finally:
            run.done.set()
            await asyncio.gather(player, return_exceptions=True)
            _leave(ep)
        failure = None if player.cancelled() else player.exception()
        if failure is not None:
            raise failure
        span = 0.0 if joined_at is None else loop.time() - joined_at
        stats = node.peer.statistics()
    return PeerSummary(
        game_id=node.peer.game_id,
        hosted=node.hosted,
        known_peers=stats.peers,
        updates_per_second=(node.updates - base[0]) / span if span > 0 else 0.0,
        bytes_per_second=(stats.bytes_sent - base[1]) / span if span > 0 else 0.0,
    )


def _coverage(node: _Node, ids: frozenset[int]) -> float:
    others = len(ids) - 1
    if others == 0:
        return 1.0
    known = ids.intersection(node.peer.known_peers()) - {node.peer.avatar_id}
    return len(known) / others


@dataclass(slots=True, kw_only=True)
class _Window:
    """Per-peer counters at the start of the measurement window."""

    at: float
    updates: list[int]
    originated: list[int]
    datagrams: list[int]
    sent: list[int]


def _snapshot(nodes: list[_Node], now: float) -> _Window:
    stats = [n.peer.statistics() for n in nodes]
    return _Window(
        at=now,
        updates=[n.updates for n in nodes],
        originated=[s.originated for s in stats],
        datagrams=[s.datagrams_sent for s in stats],
        sent=[s.bytes_sent for s in stats],
    )


def _summarise(nodes: list[_Node], window: _Window, now: float, full: float | None) -> SwarmSummary:
    end = _snapshot(nodes, now)
    span = max(now - window.at, 1e-9)
    n = len(nodes)
    ids = frozenset(node.peer.avatar_id for node in nodes)
    coverage = [_coverage(node, ids) for node in nodes]
    joined = [node for node in nodes if node.peer.state is PeerState.JOINED]

    def rate(a: list[int], b: list[int]) -> float:
        return (sum(b) - sum(a)) / span / n

    sent = rate(window.sent, end.sent)
    datagrams = rate(window.datagrams, end.datagrams)
    return SwarmSummary(
        peers=n,
        joined=len(joined),
        games=len({node.peer.game_id for node in joined}),
        coverage_mean=sum(coverage) / n,
        coverage_min=min(coverage),
        full_knowledge_after=full,
        window=span,
        updates_per_second=rate(window.updates, end.updates),
        originated_per_second=rate(window.originated, end.originated),
        bytes_per_second=sent,
        bytes_per_second_with_headers=sent + UDP_IPV4_OVERHEAD * datagrams,
    )


async def run_swarm(
    n: int,
    *,
    out: Callable[[str], None],
    lobby: Address | None = None,
    host: str = "127.0.0.1",
    duration: float = 10.0,
    seed: int | None = None,
    config: GossipConfig | None = None,
    client_config: LobbyClientConfig | None = None,
    world_size: float = DEFAULT_WORLD_SIZE,
    stop: asyncio.Event | None = None,
) -> SwarmSummary:
    """Run ``n`` bot peers in this process, each on its own UDP socket, and measure the swarm.

    Args:
        n: Number of peers, in [1, 1000].
        out: Receives a progress line every second.
        lobby: The info server's ``(host, port)``; ``None`` starts one in this process.
        host: IP literal every peer (and the own lobby) binds.
        duration: Seconds to run from the first peer's start.
        seed: Seed of every bot, peer and lobby draw; ``None`` for fresh ones.
        config: Gossip parameters (default: `GossipConfig` with ``d_max`` = world diagonal).
        client_config: Lobby client parameters (default: `LobbyClientConfig()`).
        world_size: Side of the bots' square world, metres.
        stop: Set it to end the run early.

    Returns:
        The measurements defined in the module docstring.

    Raises:
        ConfigError: a bad count, address, size or duration.
        LobbyError: the lobby did not answer peer 0.
    """
    if not 1 <= n <= 1000:
        raise ConfigError(f"n must be in [1, 1000], got {n}")
    _check_duration(duration)
    gossip = _gossip_config(config, world_size)
    clients = client_config or LobbyClientConfig()
    local = _peer_address(host, 0)
    loop = asyncio.get_running_loop()
    rng = random.Random(seed)
    async with AsyncExitStack() as stack:
        if lobby is None:
            sock = open_udp_socket(local, field="--host")
            own = Lobby(
                config=LobbyConfig(),
                rng=random.Random(rng.random()),
                port=int(sock.getsockname()[1]),
            )
            # nobody reads this lobby's events (the swarm samples the peers): no queue bound,
            # or backpressure would stop the lobby after max_events games opened and closed
            own_ep = AsyncEndpoint(own, sock, loop, max_events=None)
            lobby_ep = await stack.enter_async_context(own_ep)
            lobby_addr = lobby_ep.address
        else:
            lobby_addr = resolve(lobby, field="--lobby")[1]
        lobby_text = format_hostport(lobby_addr)
        endpoints: list[AsyncEndpoint[_Node]] = []
        for _ in range(n):
            ep = _open_node(
                loop,
                local=local,
                lobby=lobby_addr,
                config=gossip,
                client_config=clients,
                rng=random.Random(rng.random()),
                world_size=world_size,
                name=None,
            )
            await stack.enter_async_context(ep)
            endpoints.append(ep)
        run = _Run(loop, loop.time() + duration, stop)
        out(f"swarm of {n} peers on {host}, lobby {lobby_text}")
        tasks = [asyncio.create_task(_play(endpoints[0], run, None, lobby_text))]
        try:
            summary = await _drive_swarm(endpoints, tasks, run, out, lobby_text)
        finally:
            run.done.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            for ep in endpoints:
                _leave(ep)
    return summary


async def _drive_swarm(
    endpoints: list[AsyncEndpoint[_Node]],
    tasks: list[asyncio.Task[None]],
    run: _Run,
    out: Callable[[str], None],
    lobby_text: str,
) -> SwarmSummary:
    """Start the peers after peer 0, walk the bots, sample coverage; return the measurements."""
    # invariant: run_swarm always sets a deadline
    assert run.stop_at is not None
    loop = run.loop
    nodes = [ep.obj for ep in endpoints]
    n = len(nodes)
    ids = frozenset(node.peer.avatar_id for node in nodes)
    start = loop.time()
    duration = run.stop_at - start
    frame = nodes[0].gossip_config.frame_time
    first_deadline = start + FIRST_PEER_WAIT
    while nodes[0].peer.state is not PeerState.JOINED and not run.over():
        if tasks[0].done() or loop.time() > first_deadline:
            break
        await asyncio.sleep(SAMPLE_INTERVAL / 10)
    if tasks[0].done():
        await tasks[0]  # re-raises the LobbyError of an unreachable lobby
    await asyncio.sleep(SAMPLE_INTERVAL)  # let peer 0's first heartbeat reach the lobby
    window: _Window | None = None
    fallback: _Window | None = None
    full: float | None = None
    next_start = next_sample = next_status = loop.time()
    while not run.over():
        now = loop.time()
        while len(tasks) < n and now >= next_start:
            ep = endpoints[len(tasks)]
            tasks.append(asyncio.create_task(_play(ep, run, None, lobby_text)))
            next_start += STAGGER
        for node in nodes:
            if node.peer.state is PeerState.JOINED:
                node.bot.step(now)
                node.peer.set_avatar(position=node.bot.position, facing=node.bot.facing)
        if now >= next_sample:
            next_sample = now + SAMPLE_INTERVAL
            in_game = sum(node.peer.state is PeerState.JOINED for node in nodes)
            if window is None and in_game == n:
                window = _snapshot(nodes, now)
            if fallback is None and now - start >= duration / 2:
                fallback = _snapshot(nodes, now)
            coverage = [_coverage(node, ids) for node in nodes]
            if full is None and min(coverage) == 1.0:
                full = now - start
            if now >= next_status:
                next_status = now + STATUS_INTERVAL
                mean = sum(coverage) / n
                out(f"t={now - start:.1f}s in game {in_game}/{n}, coverage {mean:.3f}")
        await asyncio.sleep(frame)
    now = loop.time()
    return _summarise(nodes, window or fallback or _snapshot(nodes, start), now, full)
