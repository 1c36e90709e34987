"""A scripted key-pressing driver that records a sample drive (spec 004 §5.3.1).

Implements the "one earlier sample drive" of spec 004 §5.3.1 and §8.2 ("about 3 s or more of
driving with turns and direction changes"): a bot drives the pymunk car locally (``CarWorld``,
the server's own code) through random waypoints with the four keys, deciding every
``reaction_time``, and every key change is recorded into an ``InputRecording`` that clients then
replay over the network.

Decisions:
    * The course: each waypoint lies 60-140 m from the previous one, turned by up to ±100° from
      the previous leg, so the drive has straights, bends and left/right direction changes.
    * Per leg a target speed of 16-26 m/s (the thesis's inferred ≈ 20 m/s average, spec 004 §6.1);
      UP below ``target - 1``, DOWN (brake) above ``target + 2``, coasting in between; the target
      drops to 12 m/s while the heading error exceeds 0.6 rad.
    * Steering is bang-bang with a 0.06-rad dead band on the heading error to the waypoint; a
      waypoint counts as reached within 15 m.
"""

from __future__ import annotations

import math
import random

from lagless.errors import ConfigError
from lagless.physics.car import CarState, CarWorld, Keys
from lagless.physics.params import CarParams
from lagless.physics.recording import InputRecorder, InputRecording

__all__ = ["drive_course"]

_REACHED = 15.0  # m
_DEAD_BAND = 0.06  # rad
_SHARP = 0.6  # rad: above this heading error the bot slows down
_SHARP_SPEED = 12.0  # m/s


def drive_course(
    params: CarParams,
    *,
    duration: float,
    rng: random.Random,
    dt: float = 0.01,
    reaction_time: float = 0.05,
    start: CarState | None = None,
) -> InputRecording:
    """Record a bot's drive through random waypoints.

    Args:
        params: The car properties.
        duration: Length of the drive, s, in (0, 3600].
        rng: The only source of randomness.
        dt: Physics step, s.
        reaction_time: Time between the bot's decisions, s (≥ ``dt``).
        start: Start state (default: at rest at the origin, heading +x).

    Returns:
        The key changes, times from the start of the drive.

    Raises:
        ConfigError: Bad duration, step or reaction time.
    """
    if not (math.isfinite(duration) and 0.0 < duration <= 3600.0):
        raise ConfigError(f"duration must be in (0, 3600] s, got {duration!r}")
    if not (math.isfinite(dt) and 0.0 < dt <= 0.1):
        raise ConfigError(f"dt must be in (0, 0.1] s, got {dt!r}")
    if not (math.isfinite(reaction_time) and dt <= reaction_time <= 1.0):
        raise ConfigError(f"reaction_time must be in [dt, 1] s, got {reaction_time!r}")
    world = CarWorld(params)
    state = start if start is not None else CarState()
    world.add_car(0, state)
    recorder = InputRecorder(0.0)
    leg = state.heading
    wx, wy = state.x, state.y
    target = 0.0

    def next_waypoint() -> None:
        nonlocal leg, wx, wy, target
        leg += math.radians(rng.uniform(-100.0, 100.0))
        distance = rng.uniform(60.0, 140.0)
        wx, wy = wx + distance * math.cos(leg), wy + distance * math.sin(leg)
        target = rng.uniform(16.0, 26.0)

    next_waypoint()
    steps = round(duration / dt)
    every = max(1, round(reaction_time / dt))
    for n in range(steps):
        if n % every == 0:
            s = world.state(0)
            if math.hypot(wx - s.x, wy - s.y) < _REACHED:
                next_waypoint()
            error = math.remainder(math.atan2(wy - s.y, wx - s.x) - s.heading, 2.0 * math.pi)
            wanted = _SHARP_SPEED if abs(error) > _SHARP else target
            forward = s.vx * math.cos(s.heading) + s.vy * math.sin(s.heading)
            keys = Keys.NONE
            if forward < wanted - 1.0:
                keys |= Keys.UP
            elif forward > wanted + 2.0:
                keys |= Keys.DOWN
            if error > _DEAD_BAND:
                keys |= Keys.LEFT
            elif error < -_DEAD_BAND:
                keys |= Keys.RIGHT
            recorder.record(n * dt, keys)
            world.set_keys(0, keys)
        world.step(dt)
    return recorder.recording()
