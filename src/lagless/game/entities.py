"""Replicated game entities, weapons and the game's events (spec 000 §5.2.1, §5.2.3, §5.2.4).

Implements the data side of spec 000 §5.2.3 ("an attribute ``Hitpoints`` on Entity; a Weapon
class model holding each weapon's damage") on the replication layer's `NetworkObject`: an
`Avatar` is a player's entity (position, velocity, heading, hitpoints, dead flag, weapon) whose
owner writes only its inputs (``steer``, ``aim``). The events are what the server and clients
exchange besides snapshots: `Shoot` (a client's claim of an instant-hit shot, judged by lag
compensation), `Hit`, `Killed` (kills after the local-rollback window), `Collision` (spec 000
§5.2.1: "a special event with the collision position, time and velocity"; the time is the event's
server-time stamp) and `Kicked`. Units: metres, seconds, radians.

Decisions: positions are quantised to 1 cm over ±1024 m, velocities to 1 cm/s over ±64 m/s; the
steer vector's length is clipped to 1 by the server; a weapon is replicated as its index in the
server's weapon table (`GameConfig.weapons`), the same table on every host.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from lagless.errors import ConfigError
from lagless.replication import (
    AngleField,
    BoolField,
    FloatField,
    IntField,
    NetEvent,
    NetworkObject,
    RefField,
    StringField,
    Vec2Field,
    Writer,
)

__all__ = [
    "DEFAULT_WEAPONS",
    "GAME_CLASSES",
    "GAME_EVENTS",
    "Avatar",
    "Collision",
    "Hit",
    "Kicked",
    "Killed",
    "Shoot",
    "Weapon",
]

MAX_HP = 1000  # hitpoints an entity can hold at most


@dataclass(frozen=True, slots=True)
class Weapon:
    """An instant-hit weapon (spec 000 §5.2.3's Weapon class model)."""

    name: str
    damage: int
    """Hitpoints one hit takes."""
    range: float
    """Longest hit (m)."""
    cooldown: float
    """Shortest time between two shots (s); faster shots are dropped."""

    def __post_init__(self) -> None:
        """Validate; raise `ConfigError` naming the field."""
        if not 0 < self.damage <= MAX_HP:
            raise ConfigError(f"weapon {self.name}: damage must be in [1, {MAX_HP}]")
        if not (math.isfinite(self.range) and self.range > 0):
            raise ConfigError(f"weapon {self.name}: range must be > 0 m")
        if not (math.isfinite(self.cooldown) and self.cooldown >= 0):
            raise ConfigError(f"weapon {self.name}: cooldown must be >= 0 s")


DEFAULT_WEAPONS: tuple[Weapon, ...] = (
    Weapon("blaster", damage=25, range=40.0, cooldown=0.25),
    Weapon("rail", damage=70, range=200.0, cooldown=1.2),
)
"""The weapon table of the default `GameConfig`."""


class Avatar(NetworkObject):
    """A player's entity: the server moves it from the owner's inputs."""

    position_field = "pos"
    pos = Vec2Field(-1024.0, 1024.0, 0.01)
    """Centre (m)."""
    vel = Vec2Field(-64.0, 64.0, 0.01)
    """Velocity (m/s)."""
    heading = AngleField(10)
    """Facing (rad)."""
    hp = IntField(0, MAX_HP, 100)
    """Hitpoints."""
    dead = BoolField(False)
    """True between death and respawn."""
    weapon = IntField(0, 15, 0)
    """Index into the server's weapon table."""
    name = StringField(16, initial_only=True)
    """The player's name."""
    steer = Vec2Field(-1.0, 1.0, 0.01, writer=Writer.OWNER)
    """Owner input: desired direction of motion, length <= 1 (fraction of top speed)."""
    aim = AngleField(10, writer=Writer.OWNER)
    """Owner input: aim direction (rad)."""


class Shoot(NetEvent):
    """Client to server: "I fired my weapon along ``direction`` from ``origin`` and hit ``target``".

    The event's time stamp is the client's synchronised server time when it fired; ``view_delay``
    is how far behind that it rendered the other entities (its interpolation delay, s), so the
    shot is judged at ``time - view_delay`` (spec 000 §2.11).
    """

    origin = Vec2Field(-1024.0, 1024.0, 0.01)
    direction = AngleField(12)
    target = RefField()
    view_delay = FloatField(0.0, 1.0, 0.001)


class Hit(NetEvent):
    """Server to all: an accepted hit that did not kill."""

    shooter = RefField()
    victim = RefField()
    damage = IntField(0, MAX_HP)
    hp = IntField(0, MAX_HP)


class Killed(NetEvent):
    """Server to all: a kill committed after the local-rollback window (spec 000 §5.2.3)."""

    shooter = RefField()
    victim = RefField()
    delay = FloatField(0.0, 1.0, 0.001)
    """Seconds from the shot (its server-time stamp) to this commit: the trip to the server plus
    the rollback window (clipped to 1 s)."""


class Collision(NetEvent):
    """Server to all: two entities (or an entity and a wall) started touching (spec 000 §5.2.1)."""

    guaranteed = False
    a = RefField()
    b = RefField()
    """The other entity, or the null reference for a wall."""
    pos = Vec2Field(-1024.0, 1024.0, 0.01)
    """Contact point (m)."""
    vel = Vec2Field(-128.0, 128.0, 0.01)
    """Relative velocity of ``a`` against ``b`` at contact (m/s)."""


class Kicked(NetEvent):
    """Server to one client: you are being disconnected, and why."""

    reason = StringField(48)


GAME_CLASSES: tuple[type[NetworkObject], ...] = (Avatar,)
"""The network object classes every game host registers."""
GAME_EVENTS: tuple[type[NetEvent], ...] = (Shoot, Hit, Killed, Collision, Kicked)
"""The event classes every game host registers."""
