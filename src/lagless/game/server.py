"""The authoritative game server: a fixed-tick loop hosting replicated avatars (issue 14 item 1).

Implements spec 003 §5.4.1's ``Server`` (listen with an accept decision, connected-client list,
connect/disconnect callbacks, kick, per-frame ``move()``) and spec 000 §5.2's server components on
top of `lagless.replication`: entity collision (§5.2.1: AABB broad phase, convex SAT narrow phase,
`Collision` events with position, time and velocity), the level interface (§5.2.2, `Level` from a
Tiled map), the entity lifecycle with hitpoints, weapons and local rollback (§5.2.3, the
replication layer's `KillArbiter`) and cheat-proof hit evaluation (§5.2.4, its `LagCompensator`
plus wall occlusion from the level). Sans-I/O: every input takes ``now`` (s, monotonic).

Decisions:

* **Two rates.** The simulation steps at ``sim_rate`` (default 60 Hz) with a fixed ``dt``;
  snapshots leave at ``snapshot_rate`` (default 20 Hz, the replication tick). `move` runs every
  simulation tick due by ``now``, at most ``max_catch_up`` of them per call; after a longer stall
  the lost ticks are skipped and counted (``ticks_skipped``) rather than run in a burst.
* **Accept decision.** The transport completes the handshake; the server then decides: not
  listening, full (``max_players``) or the ``accept`` callback saying no disconnects the client at
  once (`PlayerRejected`). An accepted client gets an `Avatar` it owns at the spawn point
  farthest from every living avatar (ties drawn with the injected generator); so do respawns.
* **Kick** sends the client a guaranteed `Kicked` event, then disconnects it ``kick_grace``
  seconds later (so the reason can arrive); its avatar is removed at once. `shutdown` kicks
  everyone with one reason (``lagless game serve`` on SIGTERM: "server shutting down").
* **Hits** (spec 000 §5.2.4): a `Shoot` claim is judged by lag compensation at ``time -
  view_delay``; an accepted hit beyond the weapon's range or behind a wall (at that instant's
  distance) does not stand. A non-lethal hit takes hitpoints at once (`Hit` to everyone); a lethal
  one goes to the kill arbiter, stamped with the shot's absolute server time (the client's
  synchronised clock when it fired, clamped to now), and is committed or dropped after
  ``kill_window`` (`Killed` to everyone when committed; spec 000 §5.2.3's local rollback: "A
  shot B earlier" by that stamp drops "B kills C"); the victim respawns after
  ``respawn_delay`` with full hitpoints. Shots faster than the weapon's cooldown are dropped.
* **Collisions** push an avatar out of walls fully and out of another avatar half each; a
  `Collision` event goes to everyone when a contact starts (not every tick it lasts).
* **Bots** (`add_bot`) are server-owned avatars the application steers by writing their inputs;
  `bot_shoot` judges a bot's shot at the present (the server's own view needs no rewind) with the
  same range, wall and kill rules.
* Avatars are octagons of ``radius`` for collision and axis-aligned boxes of half size
  ``radius`` for hit tests; positions are clamped to the map.
* One client never stops the server: its malformed datagrams are counted by the transport, its
  malformed messages by the replication layer, its bad shots by ``drops``.

The replication layer consumes the transport's connection events itself; this module observes
them through a subclass of the transport `Server` (``_ObservedServer``) to learn each client's
address, token id and user data for the accept decision and each departure's reason.
"""

from __future__ import annotations

import math
import os
import random
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.game.discovery import ServerAnnouncement
from lagless.game.entities import (
    DEFAULT_WEAPONS,
    GAME_CLASSES,
    GAME_EVENTS,
    Avatar,
    Collision,
    Hit,
    Kicked,
    Killed,
    Shoot,
    Weapon,
)
from lagless.game.events import (
    ClientInfo,
    KillDecided,
    PlayerJoined,
    PlayerLeft,
    PlayerRejected,
    ShotJudged,
)
from lagless.game.geometry import (
    ConvexPolygon,
    aabb_overlap_matrix,
    aabb_pairs,
    regular_polygon,
    sat_contact,
)
from lagless.game.level import Level
from lagless.interest import InterestPolicy
from lagless.replication import (
    DEFAULT_KILL_WINDOW,
    ClientJoined,
    ClientLeft,
    EventReceived,
    HitBox,
    HitClaim,
    HitShape,
    Kill,
    KillArbiter,
    KillDecision,
    LagCompConfig,
    LagCompensator,
    NetEvent,
    NetworkObject,
    ReplicationConfig,
    ReplicationServer,
    Target,
    World,
)
from lagless.replication.lagcomp import ray_distance
from lagless.transport import (
    ClientConnected,
    ClientDisconnected,
    ConnectionConfig,
    Event,
    NetcodeServerConfig,
    Server,
    ServerDisconnectReason,
)

__all__ = ["GameConfig", "GameServer"]

AcceptDecision = Callable[[ClientInfo], bool]
"""Called with each new client; return False to refuse it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GameConfig:
    """Settings of the game server (units: Hz, seconds, metres)."""

    sim_rate: float = 60.0
    """Simulation ticks per second (Hz)."""
    snapshot_rate: float = 20.0
    """Snapshots per second (Hz), the replication tick."""
    max_catch_up: int = 6
    """Simulation ticks one `GameServer.move` runs at most; more due are skipped."""
    max_players: int = 64
    """Accepted clients at most."""
    speed: float = 6.0
    """Top speed of an avatar (m/s)."""
    radius: float = 0.4
    """Avatar collision radius and hit box half size (m)."""
    hitpoints: int = 100
    """Hitpoints at (re)spawn."""
    respawn_delay: float = 2.0
    """Seconds from a committed kill to the respawn."""
    kill_window: float = DEFAULT_KILL_WINDOW
    """Local-rollback window of lethal hits (s), spec 000 §5.2.3."""
    lagcomp: LagCompConfig = field(default_factory=LagCompConfig)
    """Lag compensation settings (spec 000 §2.11)."""
    weapons: tuple[Weapon, ...] = DEFAULT_WEAPONS
    """The weapon table; an avatar's ``weapon`` field indexes it."""
    kick_grace: float = 0.2
    """Seconds between a kick's `Kicked` event and the disconnect."""

    def __post_init__(self) -> None:
        """Validate; raise `ConfigError` naming the field and the allowed values."""
        if not 1.0 <= self.sim_rate <= 1000.0:
            raise ConfigError(f"sim_rate must be in [1, 1000] Hz, got {self.sim_rate}")
        if not 1.0 <= self.snapshot_rate <= min(self.sim_rate, 240.0):
            raise ConfigError(
                f"snapshot_rate must be in [1, min(sim_rate, 240)] Hz, got {self.snapshot_rate}"
            )
        if not 1 <= self.max_catch_up <= 1000:
            raise ConfigError(f"max_catch_up must be in [1, 1000], got {self.max_catch_up}")
        if not 1 <= self.max_players <= 4096:
            raise ConfigError(f"max_players must be in [1, 4096], got {self.max_players}")
        for name in ("speed", "radius", "respawn_delay", "kill_window", "kick_grace"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0) or (name == "radius" and value <= 0):
                raise ConfigError(f"{name} must be a finite number >= 0 (radius > 0), got {value}")
        if not 1 <= self.hitpoints <= 1000:
            raise ConfigError(f"hitpoints must be in [1, 1000], got {self.hitpoints}")
        if not 1 <= len(self.weapons) <= 16:
            raise ConfigError(f"weapons must hold 1 to 16 weapons, got {len(self.weapons)}")


class _ObservedServer(Server):
    """The transport server, remembering what its connection events said (see module doc)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.arrivals: dict[int, ClientConnected] = {}
        self.departures: dict[int, ServerDisconnectReason] = {}

    def next_event(self) -> Event | None:
        """The transport's next event, noting connections and disconnections."""
        event = super().next_event()
        if isinstance(event, ClientConnected):
            self.arrivals[event.connection_id] = event
        elif isinstance(event, ClientDisconnected):
            self.departures[event.connection_id] = event.reason
        return event


def _name(user_data: bytes) -> str:
    return user_data[:64].split(b"\0", 1)[0].decode("utf-8", "replace")[:16]


class GameServer:
    """An authoritative game server over a transport `Server` and a `ReplicationServer`.

    Args:
        netcode: The transport's netcode settings (protocol id, key or insecure, address).
        level: The map (walls, spawns).
        rng: The generator of every random choice (spawn points).
        config: Rates, avatar and weapon settings.
        connection: The transport's reliability settings.
        random_bytes: Source of cryptographic randomness for the transport.
        classes: Extra network object classes (besides `Avatar`).
        events: Extra event classes clients may send (besides the game's).
        policy: An interest policy for the snapshots (None: every avatar to every client).
    """

    def __init__(
        self,
        netcode: NetcodeServerConfig,
        level: Level,
        *,
        rng: random.Random,
        config: GameConfig | None = None,
        connection: ConnectionConfig | None = None,
        random_bytes: Callable[[int], bytes] = os.urandom,
        classes: Iterable[type[NetworkObject]] = (),
        events: Iterable[type[NetEvent]] = (),
        policy: InterestPolicy | None = None,
    ) -> None:
        self.config = GameConfig() if config is None else config
        self.level = level
        self.rng = rng
        self.transport = _ObservedServer(
            config=netcode, connection=connection, random_bytes=random_bytes
        )
        self.world = World([*GAME_CLASSES, *classes])
        self.replication = ReplicationServer(
            self.transport,
            self.world,
            config=ReplicationConfig(tick_rate=self.config.snapshot_rate),
            policy=policy,
            events=[*GAME_EVENTS, *events],
        )
        self.lagcomp = LagCompensator(self.config.lagcomp)
        self.arbiter = KillArbiter(self.config.kill_window)
        self._shape = regular_polygon(0.0, 0.0, self.config.radius)
        self.dt = 1.0 / self.config.sim_rate
        """Simulation step (s)."""
        self.ticks = 0
        """Simulation ticks run."""
        self.ticks_skipped = 0
        """Simulation ticks skipped after stalls longer than ``max_catch_up`` ticks."""
        self.drops: Counter[str] = Counter()
        """Client requests refused, by reason (``cooldown``, ``shooter_dead``, ...)."""
        self._listening = False
        self._accept: AcceptDecision | None = None
        self._on_connect: Callable[[ClientInfo], None] | None = None
        self._on_disconnect: Callable[[ClientInfo, str], None] | None = None
        self._players: dict[int, ClientInfo] = {}
        self._avatars: dict[int, Avatar] = {}
        self._bots: dict[int, Avatar] = {}
        self._kicks: dict[int, float] = {}
        self._kicked: set[int] = set()
        self._respawns: dict[int, float] = {}
        self._last_shot: dict[int, float] = {}
        self._contacts: set[tuple[int, int]] = set()
        self._next_tick: float | None = None
        self._now = 0.0
        self._events: deque[object] = deque()

    # -- spec 003 §5.4.1 ----------------------------------------------------------------------

    def listen(
        self,
        accept: AcceptDecision | None = None,
        *,
        on_connect: Callable[[ClientInfo], None] | None = None,
        on_disconnect: Callable[[ClientInfo, str], None] | None = None,
    ) -> None:
        """Start accepting clients (thesis ``DoListen``).

        Args:
            accept: Decides on each new client (None accepts all, up to ``max_players``).
            on_connect: Called with each accepted client (``ClientConnected``).
            on_disconnect: Called with each accepted client that left and why
                (``ClientDisconnected``).
        """
        self._listening = True
        self._accept = accept
        self._on_connect = on_connect
        self._on_disconnect = on_disconnect

    def stop_listening(self) -> None:
        """Refuse new clients from now on; connected ones stay (thesis ``StopListening``)."""
        self._listening = False

    @property
    def is_listening(self) -> bool:
        """Whether new clients are accepted."""
        return self._listening

    @property
    def clients(self) -> list[ClientInfo]:
        """The connected, accepted clients in connection order (``GetConnectedClients``)."""
        return [self._players[c] for c in sorted(self._players)]

    def announcement(self, name: str, port: int) -> ServerAnnouncement:
        """What a `DiscoveryResponder` should say about this server right now (pass it a
        ``lambda: server.announcement(name, port)``); ``port`` is the bound game port."""
        return ServerAnnouncement(
            name, len(self._players), self.config.max_players, port, self.level.name
        )

    def avatar_of(self, client: int) -> Avatar | None:
        """The avatar a client owns, or None."""
        return self._avatars.get(client)

    def add_bot(self, name: str) -> Avatar:
        """Spawn a server-owned avatar (a bot) at a spawn point; the application steers it by
        writing its ``steer`` and ``aim`` and fires with `bot_shoot`."""
        bot = self.replication.spawn(
            Avatar, pos=self._spawn_point(), hp=self.config.hitpoints, name=name[:16]
        )
        self._bots[bot.id] = bot
        return bot

    def remove_bot(self, bot: Avatar) -> bool:
        """Remove a bot; return whether it was one of this server's bots."""
        if self._bots.pop(bot.id, None) is None:
            return False
        self._respawns.pop(bot.id, None)
        self._last_shot.pop(bot.id, None)
        self.replication.destroy(bot)
        return True

    @property
    def bots(self) -> list[Avatar]:
        """The bots, in the order they were added."""
        return list(self._bots.values())

    def bot_shoot(
        self, bot: Avatar, target: Avatar, now: float, *, direction: float | None = None
    ) -> bool:
        """Fire a bot's weapon at ``target`` as the server sees it now (no rewind: the server's
        view is the present), aimed at its centre unless ``direction`` (rad) is given.

        Returns:
            True if the shot hit (damage taken now, or a kill handed to the rollback window).
        """
        if bot.id not in self._bots or not target.alive or target.dead:
            return False
        weapon = self._armed(bot, now)
        if weapon is None:
            return False
        (x, y), (tx, ty) = bot.pos, target.pos
        angle = math.atan2(ty - y, tx - x) if direction is None else direction
        ray = (math.cos(angle), math.sin(angle))
        r = self.config.radius
        if not self._clear_shot(HitBox(tx, ty, r, r), (x, y), ray, weapon):
            return False
        self._hit(bot, target, weapon, now, now)
        return True

    def kick(self, client: int, reason: str, now: float) -> bool:
        """Kick a client: tell it ``reason`` (at most 48 bytes), disconnect it soon after.

        Returns:
            True if it was connected and not already being kicked.
        """
        if client not in self._players or client in self._kicks:
            return False
        text = reason.encode("utf-8")[:48].decode("utf-8", "ignore")
        self.replication.send_event(Kicked(reason=text), Target.set([client]), now)
        self._kicks[client] = now + self.config.kick_grace
        self._kicked.add(client)
        self._remove_avatar(client)
        return True

    def shutdown(self, reason: str, now: float) -> int:
        """Stop listening and kick every player with ``reason`` (a graceful shutdown, issue 16
        part 3): each gets a guaranteed `Kicked` event, then its disconnect ``kick_grace``
        seconds later; run the server until `clients` is empty. Returns the players kicked."""
        self._listening = False
        return sum(self.kick(client, reason, now) for client in list(self._players))

    def close(self, now: float) -> None:
        """Stop listening and disconnect every client (thesis ``Close``)."""
        self._listening = False
        for client in list(self._players):
            self.transport.disconnect(client)
        self._absorb(now)

    def move(self, now: float) -> int:
        """Run every simulation tick due by ``now`` (thesis per-frame ``Move``); return how many."""
        self._now = max(self._now, now)
        if self._next_tick is None:
            self._next_tick = now
        ran = 0
        while self._next_tick <= now and ran < self.config.max_catch_up:
            self.simulate(self._next_tick)
            self._next_tick += self.dt
            ran += 1
        if self._next_tick <= now:
            behind = math.floor((now - self._next_tick) / self.dt) + 1
            self.ticks_skipped += behind
            self._next_tick += behind * self.dt
        return ran

    # -- sans-I/O -----------------------------------------------------------------------------

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        """Take one datagram; never raises on bad input."""
        self._now = max(self._now, now)
        self.replication.receive_datagram(data, addr, now)
        self._absorb(now)

    def handle_timer(self, now: float) -> None:
        """Run due simulation ticks, kicks, transport timers and snapshots."""
        self._absorb(now)
        self.move(now)
        for client, due in list(self._kicks.items()):
            if due <= now:
                del self._kicks[client]
                self.transport.disconnect(client)
        self.replication.handle_timer(now)
        self._absorb(now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        """The datagrams to send now."""
        return self.replication.datagrams_to_send(now)

    def next_timer(self) -> float | None:
        """The earliest of the next simulation tick, kick and transport or snapshot deadline."""
        times = [self.replication.next_timer(), self._next_tick, *self._kicks.values()]
        return min((t for t in times if t is not None), default=None)

    def next_event(self) -> object | None:
        """The next game event (`PlayerJoined`, `PlayerLeft`, `ShotJudged`, ... or a client's
        custom `EventReceived`), or None."""
        return self._events.popleft() if self._events else None

    # -- the simulation -----------------------------------------------------------------------

    def simulate(self, now: float) -> None:
        """One fixed step of ``dt`` at tick time ``now``: respawns, motion, collisions, kills,
        lag-compensation record. Override to add game logic (call this first)."""
        self.ticks += 1
        for ident, due in list(self._respawns.items()):
            if due <= now:
                del self._respawns[ident]
                self._respawn(ident, now)
        live = [a for a in self._all_avatars() if not a.dead]
        if live:
            self._step(live, now)
        for decision in self.arbiter.release(now):
            self._decided(decision, now)
        shapes: dict[int, HitShape] = {}
        r = self.config.radius
        for avatar in live:
            if not avatar.dead:
                x, y = avatar.pos
                shapes[avatar.id] = HitBox(x, y, r, r)
        self.lagcomp.record(now, shapes)

    def _step(self, live: list[Avatar], now: float) -> None:
        cfg = self.config
        pos = np.array([a.pos for a in live], dtype=np.float64)
        steer = np.array([a.steer for a in live], dtype=np.float64)
        length = np.maximum(np.hypot(steer[:, 0], steer[:, 1]), 1.0)
        vel = steer / length[:, None] * cfg.speed
        pos += vel * self.dt
        r = cfg.radius
        pos[:, 0] = np.clip(pos[:, 0], r, self.level.width - r)
        pos[:, 1] = np.clip(pos[:, 1], r, self.level.height - r)
        contacts: set[tuple[int, int]] = set()
        boxes = np.concatenate([pos - r, pos + r], axis=1)
        if len(self.level.walls):
            candidates = np.argwhere(aabb_overlap_matrix(boxes, self.level.wall_boxes))
            for i, w in candidates.tolist():
                wall: ConvexPolygon = self.level.walls[w]
                contact = sat_contact(self._shape.translated(pos[i, 0], pos[i, 1]), wall)
                if contact is not None:
                    pos[i] += np.array(contact.normal) * contact.depth
                    key = (live[i].id, -1 - w)
                    contacts.add(key)
                    if key not in self._contacts:
                        self._collision(live[i], None, pos[i], vel[i], r, contact.normal, now)
            boxes = np.concatenate([pos - r, pos + r], axis=1)
        for i, j in aabb_pairs(boxes):
            shape = self._shape
            a = shape.translated(pos[i, 0], pos[i, 1])
            contact = sat_contact(a, shape.translated(pos[j, 0], pos[j, 1]))
            if contact is None:
                continue
            push = np.array(contact.normal) * (contact.depth / 2.0)
            pos[i] += push
            pos[j] -= push
            key = (live[i].id, live[j].id)
            contacts.add(key)
            if key not in self._contacts:
                self._collision(live[i], live[j], pos[i], vel[i] - vel[j], r, contact.normal, now)
        self._contacts = contacts
        for k, avatar in enumerate(live):
            avatar.pos = (float(pos[k, 0]), float(pos[k, 1]))
            avatar.vel = (float(vel[k, 0]), float(vel[k, 1]))
            avatar.heading = avatar.aim

    def _collision(
        self,
        a: Avatar,
        b: Avatar | None,
        pos: np.ndarray[Any, Any],
        vel: np.ndarray[Any, Any],
        r: float,
        normal: tuple[float, float],
        now: float,
    ) -> None:
        point = (float(pos[0] - normal[0] * r), float(pos[1] - normal[1] * r))
        event = Collision(a=a, b=b, pos=point, vel=(float(vel[0]), float(vel[1])))
        self.replication.send_event(event, Target.everyone(), now)

    def _spawn_point(self) -> tuple[float, float]:
        """The spawn point farthest from every living avatar (ties drawn with ``rng``)."""
        live = [a.pos for a in self._all_avatars() if a.alive and not a.dead]
        spawns = self.level.spawns
        if not live:
            return self.rng.choice(spawns)
        room = [min(math.dist(s, p) for p in live) for s in spawns]
        best = max(room)
        return self.rng.choice([s for s, d in zip(spawns, room, strict=True) if d >= best - 1e-9])

    def _respawn(self, ident: int, now: float) -> None:
        avatar = self.world.find(ident)
        if not isinstance(avatar, Avatar):
            return
        avatar.pos = self._spawn_point()
        avatar.hp = self.config.hitpoints
        avatar.dead = False
        self.arbiter.respawn(ident, now)

    def _decided(self, decision: KillDecision, now: float) -> None:
        self._events.append(KillDecided(decision))
        if not decision.committed:
            return
        kill = decision.kill
        victim = self.world.find(kill.victim)
        if not isinstance(victim, Avatar) or victim.dead:
            return
        victim.hp = 0
        victim.dead = True
        victim.vel = (0.0, 0.0)
        self._respawns[victim.id] = now + self.config.respawn_delay
        delay = min(max(now - kill.time, 0.0), 1.0)
        shooter = self.world.find(kill.shooter)
        self.replication.send_event(
            Killed(shooter=shooter, victim=victim, delay=delay), Target.everyone(), now
        )

    # -- shots --------------------------------------------------------------------------------

    def _armed(self, avatar: Avatar | None, now: float) -> Weapon | None:
        """The avatar's weapon if it may fire at ``now`` (alive, cooldown over), else None."""
        if avatar is None or avatar.dead:
            self.drops["shooter_dead"] += 1
            return None
        weapon = self.config.weapons[min(avatar.weapon, len(self.config.weapons) - 1)]
        if now - self._last_shot.get(avatar.id, -math.inf) < weapon.cooldown * 0.9:
            self.drops["cooldown"] += 1
            return None
        self._last_shot[avatar.id] = now
        return weapon

    def _shoot(self, client: int, shot: Shoot, sent: float, now: float) -> None:
        avatar = self._avatars.get(client)
        weapon = self._armed(avatar, now)
        if avatar is None or weapon is None:
            return
        target = self.world.resolve(shot.target)
        stats = self.transport.connection_statistics(client)
        rtt = stats.rtt if stats is not None else 0.0
        direction = (math.cos(shot.direction), math.sin(shot.direction))
        claim = HitClaim(
            shooter=avatar.id,
            target=target.id if isinstance(target, Avatar) else -1,
            origin=shot.origin,
            direction=direction,
            view_time=sent - shot.view_delay,
        )
        verdict = self.lagcomp.evaluate(claim, now, rtt=rtt, interpolation_delay=shot.view_delay)
        blocked = False
        if verdict.accepted and isinstance(target, Avatar) and verdict.time is not None:
            shape = self.lagcomp.history.shape_at(target.id, verdict.time)
            blocked = not self._clear_shot(shape, shot.origin, direction, weapon)
        self._events.append(ShotJudged(client, verdict, blocked))
        if verdict.accepted and not blocked and isinstance(target, Avatar):
            # the kill's time is the shot's absolute server-time stamp (when the trigger was
            # pulled), clamped to now: spec 000 §5.2.3 orders kills by it
            self._hit(avatar, target, weapon, min(sent, now), now)

    def _clear_shot(
        self,
        shape: HitShape | None,
        origin: tuple[float, float],
        direction: tuple[float, float],
        weapon: Weapon,
    ) -> bool:
        """Whether a ray hits ``shape`` within the weapon's range with no wall before it."""
        distance = None if shape is None else ray_distance(shape, origin, direction)
        if distance is None or distance > weapon.range:
            return False
        return self.level.first_wall_hit(origin, direction, distance) is None

    def _hit(
        self, shooter: Avatar, target: Avatar, weapon: Weapon, time: float, now: float
    ) -> None:
        if weapon.damage < target.hp:
            target.hp -= weapon.damage
            hit = Hit(shooter=shooter, victim=target, damage=weapon.damage, hp=target.hp)
            self.replication.send_event(hit, Target.everyone(), now)
        else:
            self.arbiter.submit(Kill(shooter.id, target.id, time), now)

    # -- clients ------------------------------------------------------------------------------

    def _absorb(self, now: float) -> None:
        while (event := self.replication.next_event()) is not None:
            if isinstance(event, ClientJoined):
                self._joined(event.client, now)
            elif isinstance(event, ClientLeft):
                self._left(event.client)
            elif isinstance(event, EventReceived):
                if isinstance(event.event, Shoot):
                    if event.sender is not None:
                        self._shoot(event.sender, event.event, event.time, now)
                elif event.sender in self._players:
                    self._events.append(event)

    def _joined(self, client: int, now: float) -> None:
        arrival = self.transport.arrivals.pop(client, None)
        if arrival is None:
            return
        info = ClientInfo(client, arrival.address, arrival.client_id, _name(arrival.user_data), now)
        reason = None
        if not self._listening:
            reason = "not_listening"
        elif len(self._players) >= self.config.max_players:
            reason = "full"
        elif self._accept is not None and not self._accept(info):
            reason = "refused"
        if reason is not None:
            self.transport.disconnect(client)
            self._events.append(PlayerRejected(info, reason))
            return
        self._players[client] = info
        avatar = self.replication.spawn(
            Avatar,
            owner=client,
            pos=self._spawn_point(),
            hp=self.config.hitpoints,
            name=info.name,
        )
        self._avatars[client] = avatar
        self._events.append(PlayerJoined(info, avatar.id))
        if self._on_connect is not None:
            self._on_connect(info)

    def _left(self, client: int) -> None:
        cause = self.transport.departures.pop(client, None)
        self.transport.arrivals.pop(client, None)
        info = self._players.pop(client, None)
        self._kicks.pop(client, None)
        if info is None:
            self._kicked.discard(client)
            return
        self._remove_avatar(client)
        if client in self._kicked:
            self._kicked.discard(client)
            reason = "kicked"
        else:
            reason = cause.name.lower() if cause is not None else "unknown"
        self._events.append(PlayerLeft(info, reason))
        if self._on_disconnect is not None:
            self._on_disconnect(info, reason)

    def _all_avatars(self) -> list[Avatar]:
        return [*self._avatars.values(), *self._bots.values()]

    def _remove_avatar(self, client: int) -> None:
        avatar = self._avatars.pop(client, None)
        if avatar is not None and avatar.alive:
            self._respawns.pop(avatar.id, None)
            self._last_shot.pop(avatar.id, None)
            self.replication.destroy(avatar)
