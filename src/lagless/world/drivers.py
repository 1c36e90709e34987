"""Scripted players that produce realistic key recordings per genre, from an injected ``rng``.

Implements the test movements of spec 000 §4.2-§4.5, which the thesis recorded by hand once per
genre and replayed in TestRun mode (§3.6): sports (runs in 8 directions, turns, reversals, stops),
simulation (long thrust phases, arcs, coasting, turn-arounds, retro-burn stops), 3D shooter
("combat-like, with many strafes and quick re-aiming", §4.4) and arcade ("long runs in one
direction interrupted by quick side moves (placing bombs)", §4.5).

Decisions:
    * Drivers are closed-loop: they step an ``Entity`` with the genre's preset while recording, and
      head back to the centre as soon as the entity leaves a square arena (``ARENA_HALF_WIDTH``; the
      24 m x 32 m phone screen for the agile genres, larger for Simulation, which the thesis says
      leaves the screen, §4.7). Replaying the recording reproduces the same path
      (``tests/world/test_drivers.py::test_drivers_stay_in_the_arena``).
    * The driver holds a segment of keys for a drawn time and switches on the first frame after
      it ends, so segment lengths are quantised to frames, as a human's are.
    * Variable frame times are drawn uniformly from ``frame_time`` and rounded to 1 ms, the
      resolution the thesis recorded (spec 000 §3.6 "last game-loop duration (ms)"); the default
      ``FRAME_TIME_RANGE`` is 40 ± 10 ms.
    * Every draw comes from the injected ``rng``, in a fixed order: one seed gives one recording
      (``tests/world/test_drivers.py::test_drive_is_deterministic_per_seed``).
"""

from __future__ import annotations

import math
import random
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError
from lagless.world.entity import MAX_FRAME_TIME, Entity, wrap_angle
from lagless.world.kinematics import stopping_time
from lagless.world.presets import PRESETS, Preset
from lagless.world.recording import Frame, Recording
from lagless.world.steering import Keys

__all__ = ["ARENA_HALF_WIDTH", "FRAME_TIME_RANGE", "GENRES", "MAX_DURATION", "drive"]

GENRES: Final = ("sports", "simulation", "shooter", "arcade")
FRAME_TIME_RANGE: Final = (0.030, 0.050)  # seconds: 40 ms game loop ± 10 ms
MAX_DURATION: Final = 3600.0  # seconds: longest recording drive() produces
ARENA_HALF_WIDTH: Final[Mapping[str, float]] = types.MappingProxyType(
    {"sports": 12.0, "simulation": 40.0, "shooter": 12.0, "arcade": 12.0}  # metres
)
"""Half the side of the square each genre's driver stays in, m."""

_DIRECTIONS: Final = (
    Keys.RIGHT,
    Keys.UP | Keys.RIGHT,
    Keys.UP,
    Keys.UP | Keys.LEFT,
    Keys.LEFT,
    Keys.DOWN | Keys.LEFT,
    Keys.DOWN,
    Keys.DOWN | Keys.RIGHT,
)  # index i = heading i·45° (world frame, y up)

Segment = tuple[Keys, float]


@dataclass(slots=True)
class _Memo:
    """What a driver remembers between segments."""

    direction: int = 0
    homing: bool = False


def _outside(entity: Entity, arena: float) -> bool:
    return max(abs(entity.x), abs(entity.y)) > arena


def _home_index(entity: Entity, step: int) -> int:
    bearing = math.atan2(-entity.y, -entity.x)
    sector = math.radians(45.0 * step)
    return (round(bearing / sector) * step) % 8


def _plan_sports(entity: Entity, rng: random.Random, memo: _Memo) -> list[Segment]:
    if memo.homing:
        memo.direction = _home_index(entity, 1)
        return [(_DIRECTIONS[memo.direction], rng.uniform(0.8, 1.5))]
    r = rng.random()
    if r < 0.2:
        return [(Keys.NONE, rng.uniform(0.3, 1.0))]
    if r < 0.4:
        memo.direction += 4
    elif r < 0.65:
        memo.direction += rng.choice((-2, 2))
    else:
        memo.direction += rng.choice((-1, 0, 1))
    memo.direction %= 8
    return [(_DIRECTIONS[memo.direction], rng.uniform(0.4, 1.8))]


def _plan_arcade(entity: Entity, rng: random.Random, memo: _Memo) -> list[Segment]:
    if memo.homing:
        memo.direction = _home_index(entity, 2)
        return [(_DIRECTIONS[memo.direction], rng.uniform(1.0, 2.0))]
    r = rng.random()
    if r < 0.15:
        return [(Keys.NONE, rng.uniform(0.2, 0.6))]
    if r < 0.30:
        memo.direction += 4
    elif r < 0.55:
        # a quick side step to drop a bomb, back, and on along the corridor
        side = (memo.direction + rng.choice((-2, 2))) % 8
        step = rng.uniform(0.15, 0.4)
        return [
            (_DIRECTIONS[side], step),
            (Keys.NONE, rng.uniform(0.05, 0.25)),
            (_DIRECTIONS[(side + 4) % 8], step),
            (_DIRECTIONS[memo.direction], rng.uniform(0.8, 2.5)),
        ]
    elif r < 0.75:
        memo.direction += rng.choice((-2, 2))
    memo.direction %= 8
    return [(_DIRECTIONS[memo.direction], rng.uniform(1.0, 3.0))]


def _turn_towards(entity: Entity, bearing: float) -> Segment:
    diff = wrap_angle(bearing - entity.heading)
    key = Keys.LEFT if diff >= 0.0 else Keys.RIGHT
    return key, abs(diff) / entity.preset.turn_speed


def _plan_shooter(entity: Entity, rng: random.Random, memo: _Memo) -> list[Segment]:
    if memo.homing:
        home = _turn_towards(entity, math.atan2(-entity.y, -entity.x))
        return [home, (Keys.UP, rng.uniform(0.8, 1.5))]
    r = rng.random()
    if r < 0.30:
        side = rng.choice((Keys.STRAFE_LEFT, Keys.STRAFE_RIGHT))
        extra = Keys.UP if rng.random() < 0.3 else Keys.NONE
        segments: list[Segment] = []
        for _ in range(rng.randint(2, 4)):
            segments.append((side | extra, rng.uniform(0.2, 0.7)))
            side = Keys.STRAFE_LEFT if side is Keys.STRAFE_RIGHT else Keys.STRAFE_RIGHT
        return segments
    if r < 0.50:
        turn = rng.choice((Keys.LEFT, Keys.RIGHT))
        strafe = rng.choice((Keys.NONE, Keys.STRAFE_LEFT, Keys.STRAFE_RIGHT))
        return [(turn | strafe, rng.uniform(0.1, 0.5))]
    if r < 0.70:
        if rng.random() < 0.3:
            return [(Keys.UP | rng.choice((Keys.LEFT, Keys.RIGHT)), rng.uniform(0.2, 0.6))]
        return [(Keys.UP, rng.uniform(0.5, 1.5))]
    if r < 0.82:
        return [(Keys.UP, rng.uniform(0.4, 1.0)), (Keys.DOWN, rng.uniform(0.3, 0.8))]
    return [(Keys.NONE, rng.uniform(0.2, 0.8))]


def _plan_simulation(entity: Entity, rng: random.Random, memo: _Memo) -> list[Segment]:
    preset = entity.preset
    if memo.homing:
        home = _turn_towards(entity, math.atan2(-entity.y, -entity.x))
        return [home, (Keys.UP, rng.uniform(1.5, 3.0))]
    r = rng.random()
    if r < 0.35:
        return [(Keys.UP, rng.uniform(1.0, 4.0))]
    if r < 0.60:
        return [(Keys.UP | rng.choice((Keys.LEFT, Keys.RIGHT)), rng.uniform(0.3, 1.5))]
    if r < 0.72:
        return [(Keys.NONE, rng.uniform(0.5, 2.0))]
    if r < 0.82:
        key = rng.choice((Keys.LEFT, Keys.RIGHT))
        return [(key, math.pi / preset.turn_speed), (Keys.UP, rng.uniform(1.0, 3.0))]
    if r < 0.92 and entity.speed > 0.25 * preset.max_speed:
        # retro-burn: face against the velocity, then thrust until (nearly) stopped
        key, turn_time = _turn_towards(entity, math.atan2(-entity.vy, -entity.vx))
        speed_after_turn = entity.speed * math.exp(-preset.drag * turn_time)
        burn = stopping_time(speed_after_turn, preset.drag, preset.acceleration)
        return [(key, turn_time), (Keys.UP, burn), (Keys.NONE, rng.uniform(0.5, 1.5))]
    return [(rng.choice((Keys.LEFT, Keys.RIGHT)), rng.uniform(0.3, 1.0))]


_Planner = Callable[[Entity, random.Random, _Memo], list[Segment]]
_PLANNERS: Final[Mapping[str, _Planner]] = types.MappingProxyType(
    {
        "sports": _plan_sports,
        "simulation": _plan_simulation,
        "shooter": _plan_shooter,
        "arcade": _plan_arcade,
    }
)


def _frame_time_sampler(
    frame_time: float | tuple[float, float], rng: random.Random
) -> Callable[[], float]:
    if isinstance(frame_time, tuple):
        lo, hi = frame_time
        if not (math.isfinite(lo) and math.isfinite(hi) and 0.001 <= lo <= hi <= MAX_FRAME_TIME):
            raise ConfigError(
                f"frame_time range must satisfy 0.001 <= lo <= hi <= {MAX_FRAME_TIME} s, "
                f"got {frame_time!r}"
            )
        return lambda: round(rng.uniform(lo, hi), 3)
    if not (math.isfinite(frame_time) and 0.0 < frame_time <= MAX_FRAME_TIME):
        raise ConfigError(f"frame_time must be in (0, {MAX_FRAME_TIME}] s, got {frame_time!r}")
    return lambda: frame_time


def drive(
    genre: str,
    *,
    duration: float,
    rng: random.Random,
    frame_time: float | tuple[float, float] = FRAME_TIME_RANGE,
    preset: Preset | None = None,
) -> Recording:
    """Record a scripted player of one genre (spec 000 §4.2-§4.5 test movements).

    Args:
        genre: One of ``GENRES``: ``sports``, ``simulation``, ``shooter``, ``arcade``.
        duration: Recording length, s, in (0, ``MAX_DURATION``]; the last frame may end up to one
            frame later.
        rng: The only source of randomness.
        frame_time: A constant frame time in seconds, or a ``(lo, hi)`` range drawn uniformly per
            frame and rounded to 1 ms.
        preset: Entity parameters the closed-loop driver steers (default ``PRESETS[genre]``); its
            steering model must be the genre's.

    Returns:
        The recording, starting from rest at the origin with heading 0.

    Raises:
        ConfigError: Unknown genre, bad duration or frame time, or a preset of another model.
    """
    if genre not in _PLANNERS:
        raise ConfigError(f"genre must be one of {', '.join(GENRES)}, got {genre!r}")
    if not (math.isfinite(duration) and 0.0 < duration <= MAX_DURATION):
        raise ConfigError(f"duration must be in (0, {MAX_DURATION}] s, got {duration!r}")
    chosen = PRESETS[genre] if preset is None else preset
    if chosen.model is not PRESETS[genre].model:
        raise ConfigError(
            f"preset model must be {PRESETS[genre].model.value} for genre {genre}, "
            f"got {chosen.model.value}"
        )
    next_dt = _frame_time_sampler(frame_time, rng)
    planner = _PLANNERS[genre]
    arena = ARENA_HALF_WIDTH[genre]
    entity = Entity(preset=chosen)
    memo = _Memo(direction=rng.randrange(8) if genre != "arcade" else 2 * rng.randrange(4))
    plan: list[Segment] = []
    keys, remaining = Keys.NONE, 0.0
    frames: list[Frame] = []
    elapsed = 0.0
    while elapsed < duration:
        if not memo.homing and _outside(entity, arena):
            # left the arena: drop the plan and head home at once
            plan, remaining = [], 0.0
        while remaining <= 0.0:
            if not plan:
                memo.homing = _outside(entity, arena)
                plan = planner(entity, rng, memo)
            keys, hold = plan.pop(0)
            remaining += hold
        dt = next_dt()
        frame = Frame(dt=dt, keys=keys)
        frames.append(frame)
        entity.step(dt, frame.controls)
        elapsed += dt
        remaining -= dt
    return Recording(frames=tuple(frames))
