"""The arena: a small deterministic numpy game that every ``lagless.sync`` algorithm is measured on.

Issue 15 asks for one game shared by lockstep, bucket sync, local lag, Time Warp and rollback
(spec 000 §2.1, §2.3, §2.14): 2–8 players move and shoot by input bits in a square arena, bullets
hit players, and an optional crowd of extra entities drifts and bounces off the walls (1000 of
them for ``lagless bench sync``) so that saving, loading and re-simulating cost what a real numpy
state costs.

Units: positions in the state are integer millimetres, velocities integer millimetres per frame;
``divergence`` reports metres. Frames are integers; the frame rate (Hz) only sets speeds.

Decisions:
    * All simulation arithmetic is integer (int64), so two machines, two numpy versions or two
      orders of vectorised evaluation cannot round differently: determinism holds by construction.
    * One input byte per player: bit 0 up, bit 1 down, bit 2 left, bit 3 right, bit 4 shoot.
      Other bits are ignored; an empty input is the neutral input ``b"\\x00"``.
    * A shot flies in the direction the shooter last moved. Bullets live in a fixed pool; a shot
      of player ``p`` on ``frame`` takes slot ``((frame // cooldown) * players + p) % pool``: no
      search, no allocation, and the pool is large enough that a live bullet is never reused.
    * A hit costs 1 of 5 health; at 0 the player respawns at its start point with full health and
      its ``deaths`` count goes up.
    * The checksum is CRC-32 (``zlib.crc32``) chained over the bytes of every array ``step``
      reads, plus the frame number.
    * Entities start at positions and velocities drawn from ``numpy.random.default_rng(seed)``:
      peers built with the same ``seed`` start from the same state.
    * Scripted inputs (``ScriptedInputs``) change a few times per second like a human's; the input
      of a frame is a pure function of (seed, player, frame), whatever order frames are asked in.
"""

from __future__ import annotations

import bisect
import random
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

__all__ = ["Arena", "ArenaState", "ScriptedInputs", "arena_input", "bot_script"]

UP = 1
DOWN = 2
LEFT = 4
RIGHT = 8
SHOOT = 16

MAX_HEALTH = 5
HIT_RADIUS_MM = 500
COOLDOWN_FRAMES = 12

IntArray = npt.NDArray[np.int64]


def arena_input(
    *,
    up: bool = False,
    down: bool = False,
    left: bool = False,
    right: bool = False,
    shoot: bool = False,
) -> bytes:
    """The one-byte arena input for these buttons (bit 0 up, 1 down, 2 left, 3 right, 4 shoot)."""
    bits = (UP if up else 0) | (DOWN if down else 0) | (LEFT if left else 0)
    bits |= (RIGHT if right else 0) | (SHOOT if shoot else 0)
    return bytes((bits,))


@dataclass(slots=True)
class ArenaState:
    """One frame of the arena, struct-of-arrays (integer millimetres and frames).

    Attributes:
        frame: The frame number this state is at.
        pos: (players, 2) player positions, mm.
        facing: (players, 2) unit direction of the last move (-1, 0 or 1 per axis).
        health: (players,) health points, 1..5.
        cooldown: (players,) frames until the player may shoot again.
        deaths: (players,) how often each player was hit down.
        bullet_pos: (pool, 2) bullet positions, mm.
        bullet_vel: (pool, 2) bullet velocities, mm per frame.
        bullet_ttl: (pool,) frames left; 0 is a free slot.
        bullet_owner: (pool,) the shooter's index.
        entity_pos: (entities, 2) positions of the drifting crowd, mm.
        entity_vel: (entities, 2) their velocities, mm per frame.
    """

    frame: int
    pos: IntArray
    facing: IntArray
    health: IntArray
    cooldown: IntArray
    deaths: IntArray
    bullet_pos: IntArray
    bullet_vel: IntArray
    bullet_ttl: IntArray
    bullet_owner: IntArray
    entity_pos: IntArray
    entity_vel: IntArray

    def arrays(self) -> tuple[IntArray, ...]:
        """Every array of the state, in a fixed order (what the checksum covers)."""
        return (
            self.pos,
            self.facing,
            self.health,
            self.cooldown,
            self.deaths,
            self.bullet_pos,
            self.bullet_vel,
            self.bullet_ttl,
            self.bullet_owner,
            self.entity_pos,
            self.entity_vel,
        )

    def copy(self) -> ArenaState:
        """An independent deep copy."""
        return ArenaState(self.frame, *(a.copy() for a in self.arrays()))


class Arena:
    """The shared deterministic game (a ``DeterministicGame[ArenaState]``).

    Args:
        players: 2 to 8 players.
        entities: Extra drifting entities (0 for plain matches, 1000 for the benchmark).
        seed: Seed of the entities' start positions and velocities (same seed, same game).
        size_m: Side of the square arena, metres.
        frame_rate: Frames per second (Hz); speeds below are per second.
        player_speed: Player speed, m/s.
        bullet_speed: Bullet speed, m/s.
        bullet_life: Bullet lifetime, seconds.
    """

    def __init__(
        self,
        players: int = 2,
        *,
        entities: int = 0,
        seed: int = 0,
        size_m: float = 40.0,
        frame_rate: float = 60.0,
        player_speed: float = 6.0,
        bullet_speed: float = 20.0,
        bullet_life: float = 1.0,
    ) -> None:
        if not 2 <= players <= 8:
            raise ValueError(f"players must be 2..8, got {players}")
        if entities < 0:
            raise ValueError(f"entities must be >= 0, got {entities}")
        if size_m <= 0 or frame_rate <= 0:
            raise ValueError("size_m and frame_rate must be > 0")
        self._players = players
        self._entities = entities
        self._seed = seed
        self.frame_rate = frame_rate
        self.size_mm = round(size_m * 1000)
        self.player_step_mm = max(1, round(player_speed * 1000 / frame_rate))
        self.bullet_step_mm = max(1, round(bullet_speed * 1000 / frame_rate))
        self.bullet_frames = max(1, round(bullet_life * frame_rate))
        self.pool = players * (self.bullet_frames // COOLDOWN_FRAMES + 2)
        angles = np.arange(players, dtype=np.float64) * (2.0 * np.pi / players)
        radius = self.size_mm * 0.35
        centre = self.size_mm // 2
        spawn = np.stack([np.cos(angles), np.sin(angles)], axis=1) * radius
        self._spawn: IntArray = (np.rint(spawn).astype(np.int64) + centre).astype(np.int64)

    @property
    def players(self) -> int:
        """How many players the game has."""
        return self._players

    @property
    def entities(self) -> int:
        """How many extra drifting entities the state carries."""
        return self._entities

    @property
    def neutral_input(self) -> bytes:
        """No buttons pressed."""
        return b"\x00"

    def initial_state(self) -> ArenaState:
        """Frame 0: players on a circle facing right, no bullets, entities from ``seed``."""
        n, pool = self._players, self.pool
        rng = np.random.default_rng(self._seed)
        entity_pos = rng.integers(0, self.size_mm, size=(self._entities, 2), dtype=np.int64)
        max_v = max(1, self.player_step_mm)
        entity_vel = rng.integers(-max_v, max_v + 1, size=(self._entities, 2), dtype=np.int64)
        facing = np.zeros((n, 2), dtype=np.int64)
        facing[:, 0] = 1
        return ArenaState(
            frame=0,
            pos=self._spawn.copy(),
            facing=facing,
            health=np.full(n, MAX_HEALTH, dtype=np.int64),
            cooldown=np.zeros(n, dtype=np.int64),
            deaths=np.zeros(n, dtype=np.int64),
            bullet_pos=np.zeros((pool, 2), dtype=np.int64),
            bullet_vel=np.zeros((pool, 2), dtype=np.int64),
            bullet_ttl=np.zeros(pool, dtype=np.int64),
            bullet_owner=np.zeros(pool, dtype=np.int64),
            entity_pos=entity_pos,
            entity_vel=entity_vel,
        )

    def decode_inputs(self, inputs: Sequence[bytes]) -> IntArray:
        """The input bits of every player as an int64 array (missing or empty input: neutral)."""
        bits = np.zeros(self._players, dtype=np.int64)
        for i, raw in enumerate(inputs[: self._players]):
            if raw:
                bits[i] = raw[0]
        return bits

    def step(self, state: ArenaState, inputs: Sequence[bytes], frame: int) -> ArenaState:
        """Advance ``state`` (of ``frame``) by one frame in place and return it."""
        bits = self.decode_inputs(inputs)
        size = self.size_mm
        dx = ((bits & RIGHT) > 0).astype(np.int64) - ((bits & LEFT) > 0)
        dy = ((bits & DOWN) > 0).astype(np.int64) - ((bits & UP) > 0)
        move = np.stack([dx, dy], axis=1)
        moving = (dx != 0) | (dy != 0)
        state.facing[moving] = move[moving]
        np.clip(state.pos + move * self.player_step_mm, 0, size, out=state.pos)

        np.subtract(state.cooldown, 1, out=state.cooldown)
        np.maximum(state.cooldown, 0, out=state.cooldown)
        shooting = np.flatnonzero(((bits & SHOOT) > 0) & (state.cooldown == 0))
        if shooting.size:
            slots = ((frame // COOLDOWN_FRAMES) * self._players + shooting) % self.pool
            state.bullet_pos[slots] = state.pos[shooting]
            state.bullet_vel[slots] = state.facing[shooting] * self.bullet_step_mm
            state.bullet_ttl[slots] = self.bullet_frames
            state.bullet_owner[slots] = shooting
            state.cooldown[shooting] = COOLDOWN_FRAMES

        live = state.bullet_ttl > 0
        state.bullet_pos[live] += state.bullet_vel[live]
        state.bullet_ttl[live] -= 1
        out = ((state.bullet_pos < 0) | (state.bullet_pos > size)).any(axis=1)
        state.bullet_ttl[out] = 0
        self._hits(state)

        epos, evel = state.entity_pos, state.entity_vel
        epos += evel
        low, high = epos < 0, epos > size
        epos[low] = -epos[low]
        epos[high] = 2 * size - epos[high]
        evel[low | high] = -evel[low | high]
        state.frame = frame + 1
        return state

    def _hits(self, state: ArenaState) -> None:
        """Bullets within ``HIT_RADIUS_MM`` of another player hit it (lowest slot first wins)."""
        live = np.flatnonzero(state.bullet_ttl > 0)
        if not live.size:
            return
        delta = state.bullet_pos[live, None, :] - state.pos[None, :, :]
        close = (delta * delta).sum(axis=2) <= HIT_RADIUS_MM * HIT_RADIUS_MM
        close &= state.bullet_owner[live, None] != np.arange(self._players)[None, :]
        bullet_hits = close.any(axis=1)
        if not bullet_hits.any():
            return
        victims = close.argmax(axis=1)[bullet_hits]
        state.bullet_ttl[live[bullet_hits]] = 0
        np.subtract.at(state.health, victims, 1)
        down = state.health <= 0
        state.deaths[down] += 1
        state.health[down] = MAX_HEALTH
        state.pos[down] = self._spawn[down]

    def save(self, state: ArenaState) -> ArenaState:
        """An independent copy of ``state``."""
        return state.copy()

    def load(self, saved: ArenaState) -> ArenaState:
        """A working copy of ``saved`` that ``step`` may change."""
        return saved.copy()

    def checksum(self, state: ArenaState) -> int:
        """CRC-32 of the frame number and every array's bytes."""
        crc = zlib.crc32(state.frame.to_bytes(8, "little", signed=True))
        for array in state.arrays():
            crc = zlib.crc32(array.tobytes(), crc)
        return crc

    def divergence(self, a: ArenaState, b: ArenaState) -> float:
        """The largest distance between the same player in ``a`` and ``b``, metres."""
        delta = (a.pos - b.pos).astype(np.float64)
        return float(np.sqrt((delta * delta).sum(axis=1)).max()) / 1000.0


class ScriptedInputs:
    """A bot's inputs: a new random button combination every 0.1–0.5 s, seeded.

    The input of frame ``f`` depends only on (``seed``, ``player``, ``f``): segments are drawn
    lazily from one ``random.Random`` in frame order and cached, so asking for frames in any
    order, or twice, gives the same answer.

    Args:
        player: The player index (mixed into the seed so bots differ).
        seed: The run's seed.
        frame_rate: Frames per second (Hz).
        changes_per_second: Mean input changes per second (a human's is about 2–5).
        shoot_chance: Probability that a segment holds the shoot button.
    """

    def __init__(
        self,
        player: int,
        seed: int = 0,
        *,
        frame_rate: float = 60.0,
        changes_per_second: float = 4.0,
        shoot_chance: float = 0.3,
    ) -> None:
        if changes_per_second <= 0 or frame_rate <= 0:
            raise ValueError("changes_per_second and frame_rate must be > 0")
        self._rng = random.Random(seed * 1_000_003 + player)
        self._mean_frames = frame_rate / changes_per_second
        self._shoot_chance = shoot_chance
        self._starts: list[int] = [0]
        self._inputs: list[bytes] = [self._draw()]
        self._next_start = self._segment_end(0)

    def _draw(self) -> bytes:
        bits = 0
        horizontal = self._rng.randrange(3)
        vertical = self._rng.randrange(3)
        bits |= (0, LEFT, RIGHT)[horizontal] | (0, UP, DOWN)[vertical]
        if self._rng.random() < self._shoot_chance:
            bits |= SHOOT
        return bytes((bits,))

    def _segment_end(self, start: int) -> int:
        length = self._rng.uniform(0.4, 1.6) * self._mean_frames
        return start + max(1, round(length))

    def at_frame(self, frame: int) -> bytes:
        """The input this bot holds on ``frame`` (frames before 0 count as 0)."""
        frame = max(0, frame)
        while self._next_start <= frame:
            self._starts.append(self._next_start)
            self._inputs.append(self._draw())
            self._next_start = self._segment_end(self._next_start)
        return self._inputs[bisect.bisect_right(self._starts, frame) - 1]


def bot_script(bots: Sequence[ScriptedInputs]) -> Callable[[int, int], bytes]:
    """The harness's ``inputs(peer, tick)`` of one bot per peer: ``bots[peer].at_frame(tick)``."""

    def inputs(peer: int, tick: int) -> bytes:
        return bots[peer].at_frame(tick)

    return inputs
