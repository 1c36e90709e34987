"""Bots and maps for the VFC experiments: the thesis's map sizes and spread or clustered mobility.

Implements the synthetic avatar simulation spec 001 §6.3 asks for in place of Cube 2's bots
(§3.13): N avatars in a W×H map of Table 5.4, every one writing its avatar every round, moving by a
random-waypoint model whose destinations are either uniform over the map (``SPREAD``, like
flagstone's heat map) or drawn mostly around a few hotspots in the map's central third
(``CLUSTERED``, like urban_c's, §5.5). Bots look around while they move, so yaw changes every round,
as a player's or a Cube 2 bot's view does.

Ambiguity decisions, pinned in ``tests/interest/test_mobility.py``:

* World units are converted once with ``CUBE_UNIT`` = 0.125 m per unit; bots run at Cube 2's
  ``maxspeed`` of 100 units/s = 12.5 m/s and pause 0-2 s at each waypoint
  (``test_bots_stay_inside_and_move_at_speed``).
* The look direction is towards the nearest other bot within ``aim_range`` (600 units, the normal
  view's second radius: ffa bots fight the nearest enemy), else the direction of motion, plus an
  Ornstein-Uhlenbeck offset (time constant 1 s, stationary standard deviation about 1 rad);
  pitch is a small OU process around 0.
* The record's velocity is the planar running velocity (z velocity 0 on the ground, as Cube 2's
  movement velocity); vertical motion of jumps goes in the falling velocity.
* The ground is a smooth bump field of amplitude ``terrain_amplitude`` (0 = flat) and bots jump at
  ``jump_rate`` per second (6 m/s, gravity 20 m/s²), which fills the record's z velocity, falling
  velocity and physstate fields (flatter worlds compress better, spec 001 E6).
* ``CLUSTERED`` draws 80 % of destinations from 3 Gaussian hotspots (σ = 8 % of the smaller side)
  placed uniformly in the central third, the rest uniformly (``test_clustered_is_concentrated``).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError
from lagless.interest.records import CUBE_UNIT, PHYS_FALL, PHYS_FLOOR, quantise_avatars

__all__ = [
    "MAIN_MAPS",
    "MAPS",
    "Bots",
    "BotsConfig",
    "MapSpec",
    "Mobility",
    "get_map",
]

CUBE_MAX_SPEED: Final = 100.0 * CUBE_UNIT  # metres per second: Cube 2 maxspeed 100 units/s
GRAVITY: Final = 20.0  # metres per second squared
JUMP_SPEED: Final = 6.0  # metres per second
LOOK_TAU: Final = 1.0  # seconds: OU time constant of the look offset
LOOK_SIGMA: Final = 1.5  # radians per sqrt(second): OU noise (stationary sd ≈ 1.06 rad)
PITCH_SIGMA: Final = 0.15  # radians per sqrt(second)
TERRAIN_WAVELENGTH: Final = 40.0  # metres
GUN_CHANGE_RATE: Final = 0.05  # weapon changes per second


class Mobility(enum.Enum):
    """Where bots' waypoints are drawn."""

    SPREAD = "spread"
    """Uniformly over the map (flagstone-like heat map)."""
    CLUSTERED = "clustered"
    """Mostly around hotspots in the central third (urban_c-like)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MapSpec:
    """A map of the thesis's Table 5.4: its size in Cube 2 world units and its default mobility."""

    name: str
    """Map name as in the thesis."""
    width_units: float
    """Width in Cube 2 world units."""
    height_units: float
    """Height in Cube 2 world units."""
    mobility: Mobility = Mobility.SPREAD
    """Default mobility (only urban_c is clustered, from the heat maps of §5.5)."""

    @property
    def size(self) -> tuple[float, float]:
        """(width, height) in metres."""
        return (self.width_units * CUBE_UNIT, self.height_units * CUBE_UNIT)


def _m(name: str, w: float, h: float, mobility: Mobility = Mobility.SPREAD) -> MapSpec:
    return MapSpec(name=name, width_units=w, height_units=h, mobility=mobility)


MAPS: Final[dict[str, MapSpec]] = {
    m.name: m
    for m in (
        _m("aard3c", 250, 250),
        _m("academy", 250, 250),
        _m("aqueducts", 875, 750),
        _m("arabic", 875, 750),
        _m("akroseum", 1000, 1000),
        _m("dust2", 1000, 1000),
        _m("campo", 1000, 1000),
        _m("venice", 1000, 1000),
        _m("wcd", 1000, 1000),
        _m("redemption", 1250, 500),
        _m("core_transfer", 1250, 750),
        _m("face-capture", 1500, 250),
        _m("damnation", 1500, 500),
        _m("shipwreck", 1500, 1250),
        _m("flagstone", 1500, 1500),
        _m("hallo", 1500, 1500),
        _m("ph-capture", 1500, 1500),
        _m("river_c", 1500, 1500),
        _m("mach2", 1750, 750),
        _m("urban_c", 2250, 1750, Mobility.CLUSTERED),
    )
}
"""The 20 maps of the thesis's Table 5.4 / 5.5, by name."""
MAIN_MAPS: Final = ("wcd", "flagstone", "urban_c")  # the thesis's three main maps (§5.4)


def get_map(name: str) -> MapSpec:
    """Return the map called ``name``.

    Raises:
        ConfigError: unknown name (the message lists the valid ones).
    """
    if name not in MAPS:
        raise ConfigError(f"map must be one of {', '.join(MAPS)}, got {name!r}")
    return MAPS[name]


@dataclass(frozen=True, slots=True, kw_only=True)
class BotsConfig:
    """How many bots, where, and how they move."""

    count: int
    """Number of avatars (≥ 1)."""
    map: MapSpec
    """The map they move in."""
    mobility: Mobility | None = None
    """Waypoint distribution; ``None`` takes the map's default."""
    speed: float = CUBE_MAX_SPEED
    """Running speed, metres per second (Cube 2: 12.5)."""
    pause_max: float = 2.0
    """Longest pause at a waypoint, seconds (uniform in [0, pause_max])."""
    hotspots: int = 3
    """Hotspots of the clustered model."""
    hot_fraction: float = 0.8
    """Share of clustered destinations drawn around a hotspot."""
    terrain_amplitude: float = 4.0
    """Height of the ground bumps, metres (0 = flat)."""
    jump_rate: float = 0.2
    """Jumps per second per bot."""
    aim_range: float = 600.0 * CUBE_UNIT
    """Metres within which a bot looks at the nearest other bot (ffa fighting); 0 = never."""

    def __post_init__(self) -> None:
        """Validate.

        Raises:
            ConfigError: naming the offending field.
        """
        if not isinstance(self.count, int) or not 1 <= self.count <= 32767:
            raise ConfigError(f"count must be an int in [1, 32767], got {self.count!r}")
        if not isinstance(self.map, MapSpec):
            raise ConfigError(f"map must be a MapSpec, got {self.map!r}")
        for name in ("speed", "pause_max", "terrain_amplitude", "jump_rate", "aim_range"):
            value = getattr(self, name)
            if not 0.0 <= value < math.inf:
                raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")
        if not 0.0 <= self.hot_fraction <= 1.0:
            raise ConfigError(f"hot_fraction must be in [0, 1], got {self.hot_fraction!r}")
        if not isinstance(self.hotspots, int) or self.hotspots < 1:
            raise ConfigError(f"hotspots must be an int >= 1, got {self.hotspots!r}")

    @property
    def model(self) -> Mobility:
        """The mobility in force (the explicit one or the map's)."""
        return self.map.mobility if self.mobility is None else self.mobility


class Bots:
    """N avatars moving by random waypoints, vectorised (struct of arrays, SI units).

    Examples:
        >>> import numpy as np
        >>> bots = Bots(BotsConfig(count=4, map=get_map("wcd")), rng=np.random.default_rng(1))
        >>> bots.step(0.033, rng=np.random.default_rng(2)); bots.positions.shape
        (4, 3)
    """

    def __init__(self, config: BotsConfig, *, rng: np.random.Generator) -> None:
        """Spawn the bots at destinations of the model and pick their first waypoints.

        Args:
            config: count, map and mobility.
            rng: the generator for spawns and waypoints.
        """
        self.config = config
        n = config.count
        w, h = config.map.size
        self._size = np.array([w, h])
        side = min(w, h)
        self._hot = rng.uniform(self._size / 3.0, 2.0 * self._size / 3.0, (config.hotspots, 2))
        self._hot_sigma = 0.08 * side
        self.xy = self._destinations(n, rng)
        self._target = self._destinations(n, rng)
        self._pause = np.zeros(n)
        self._look = rng.normal(0.0, 1.0, n)
        self.pitch = np.zeros(n)
        self.air = np.zeros(n)
        self.fall_z = np.zeros(n)
        self.airborne = np.zeros(n, dtype=np.bool_)
        self.velocity = np.zeros((n, 3))
        self.gunselect = rng.integers(0, 7, n)
        self._base = rng.uniform(-math.pi, math.pi, n)
        self.yaw = self._base + self._look

    def _destinations(self, n: int, rng: np.random.Generator) -> npt.NDArray[np.float64]:
        uniform = np.asarray(rng.uniform(0.0, 1.0, (n, 2)) * self._size, dtype=np.float64)
        if self.config.model is Mobility.SPREAD:
            return uniform
        pick = rng.integers(0, self._hot.shape[0], n)
        near = self._hot[pick] + rng.normal(0.0, self._hot_sigma, (n, 2))
        hot = rng.uniform(0.0, 1.0, n) < self.config.hot_fraction
        out = np.where(hot[:, None], near, uniform)
        return np.clip(out, 0.0, self._size)

    def ground(self, xy: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Ground height in metres at horizontal positions (n, 2)."""
        k = 2.0 * math.pi / TERRAIN_WAVELENGTH
        bumps = 1.0 + np.sin(k * xy[:, 0]) * np.cos(k * xy[:, 1])
        return np.asarray(0.5 * self.config.terrain_amplitude * bumps, dtype=np.float64)

    @property
    def positions(self) -> npt.NDArray[np.float64]:
        """Positions in metres, shape (n, 3) (z = ground + jump height)."""
        return np.column_stack([self.xy, self.ground(self.xy) + self.air])

    @property
    def headings(self) -> npt.NDArray[np.float64]:
        """Unit look vectors, shape (n, 3)."""
        c = np.cos(self.pitch)
        return np.column_stack([c * np.cos(self.yaw), c * np.sin(self.yaw), np.sin(self.pitch)])

    def step(self, dt: float, *, rng: np.random.Generator) -> None:
        """Advance every bot by ``dt`` seconds.

        Args:
            dt: time step, seconds (> 0).
            rng: the generator for pauses, waypoints, look noise, jumps and weapons.
        """
        cfg = self.config
        n = cfg.count
        to_target = self._target - self.xy
        dist = np.hypot(to_target[:, 0], to_target[:, 1])
        moving = self._pause <= 0.0
        travel = np.minimum(cfg.speed * dt, dist) * moving
        direction = to_target / np.where(dist > 0.0, dist, 1.0)[:, None]
        self.xy = self.xy + direction * travel[:, None]
        arrived = moving & (dist <= cfg.speed * dt)
        self._pause = np.where(arrived, rng.uniform(0.0, cfg.pause_max, n), self._pause - dt)
        if arrived.any():
            self._target[arrived] = self._destinations(int(arrived.sum()), rng)
        decay = math.exp(-dt / LOOK_TAU)
        noise = LOOK_SIGMA * math.sqrt(LOOK_TAU / 2.0 * (1.0 - decay * decay))
        self._look = self._look * decay + noise * rng.normal(0.0, 1.0, n)
        heading = np.arctan2(direction[:, 1], direction[:, 0])
        self._base = np.where(moving & (dist > 0.0), heading, self._base)
        if cfg.aim_range > 0.0 and n > 1:
            sep = self.xy[None, :, :] - self.xy[:, None, :]
            d2 = np.einsum("ijk,ijk->ij", sep, sep)
            np.fill_diagonal(d2, np.inf)
            nearest = np.argmin(d2, axis=1)
            rows = np.arange(n)
            engaged = d2[rows, nearest] <= cfg.aim_range * cfg.aim_range
            toward = np.arctan2(sep[rows, nearest, 1], sep[rows, nearest, 0])
            self._base = np.where(engaged, toward, self._base)
        self.yaw = np.angle(np.exp(1j * (self._base + self._look)))
        pitch_noise = PITCH_SIGMA * math.sqrt(LOOK_TAU / 2.0 * (1.0 - decay * decay))
        self.pitch = np.clip(self.pitch * decay + pitch_noise * rng.normal(0.0, 1.0, n), -1.2, 1.2)
        jump = ~self.airborne & (rng.uniform(0.0, 1.0, n) < cfg.jump_rate * dt)
        self.airborne |= jump
        self.fall_z = np.where(jump, JUMP_SPEED, self.fall_z)
        self.fall_z = np.where(self.airborne, self.fall_z - GRAVITY * dt, 0.0)
        self.air = np.where(self.airborne, self.air + self.fall_z * dt, 0.0)
        landed = self.airborne & (self.air <= 0.0)
        self.airborne &= ~landed
        self.air = np.where(landed, 0.0, self.air)
        self.fall_z = np.where(landed, 0.0, self.fall_z)
        planar = direction * (travel / dt)[:, None]
        self.velocity = np.column_stack([planar, np.zeros(n)])
        swap = rng.uniform(0.0, 1.0, n) < GUN_CHANGE_RATE * dt
        self.gunselect = np.where(swap, rng.integers(0, 7, n), self.gunselect)

    def records(self, ids: npt.ArrayLike | None = None) -> npt.NDArray[np.void]:
        """The bots' 24-byte avatar records (``RECORD_DTYPE``); ids default to 0..n-1.

        Args:
            ids: object id of each bot, shape (n,).

        Returns:
            Structured records, shape (n,).
        """
        n = self.config.count
        falling = np.zeros((n, 3))
        falling[:, 2] = self.fall_z
        return quantise_avatars(
            np.arange(n) if ids is None else ids,
            self.positions,
            self.yaw,
            self.pitch,
            self.velocity,
            falling,
            np.where(self.airborne, PHYS_FALL, PHYS_FLOOR),
            np.zeros(n, dtype=np.int64),
            self.gunselect,
        )
