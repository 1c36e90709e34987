"""A scripted key-pressing driver that records a sample drive (spec 004 §5.3.1).

Implements the "one earlier sample drive" of spec 004 §5.3.1 and §8.2 ("about 3 s or more of
driving with turns and direction changes"): a bot drives the pymunk car locally (``CarWorld``,
the server's own code) through random waypoints with the four keys, deciding every
``reaction_time``, and every key change is recorded into an ``InputRecording`` that clients then
replay over the network. ``CourseBot`` alone makes one decision per call, for bots that drive
live (a game's bot clients).

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

__all__ = ["CourseBot", "drive_course"]

_REACHED = 15.0  # m
_DEAD_BAND = 0.06  # rad
_SHARP = 0.6  # rad: above this heading error the bot slows down
_SHARP_SPEED = 12.0  # m/s


class CourseBot:
    """A bot that drives through random waypoints with the four keys (one decision per call).

    Args:
        rng: The only source of randomness (waypoints and leg speeds).
        start: Where the car starts (the first leg points along its heading).
    """

    def __init__(self, rng: random.Random, start: CarState) -> None:
        """Draw the first waypoint."""
        self._rng = rng
        self._leg = start.heading
        self.waypoint = (start.x, start.y)
        """The waypoint being driven to, m."""
        self.target_speed = 0.0
        """The leg's cruising speed, m/s."""
        self._next_waypoint()

    def _next_waypoint(self) -> None:
        rng = self._rng
        self._leg += math.radians(rng.uniform(-100.0, 100.0))
        distance = rng.uniform(60.0, 140.0)
        x, y = self.waypoint
        self.waypoint = (x + distance * math.cos(self._leg), y + distance * math.sin(self._leg))
        self.target_speed = rng.uniform(16.0, 26.0)

    def keys(self, state: CarState) -> Keys:
        """Return the keys to hold now for the car in ``state``."""
        wx, wy = self.waypoint
        if math.hypot(wx - state.x, wy - state.y) < _REACHED:
            self._next_waypoint()
            wx, wy = self.waypoint
        bearing = math.atan2(wy - state.y, wx - state.x)
        error = math.remainder(bearing - state.heading, 2.0 * math.pi)
        wanted = _SHARP_SPEED if abs(error) > _SHARP else self.target_speed
        forward = state.vx * math.cos(state.heading) + state.vy * math.sin(state.heading)
        keys = Keys.NONE
        if forward < wanted - 1.0:
            keys |= Keys.UP
        elif forward > wanted + 2.0:
            keys |= Keys.DOWN
        if error > _DEAD_BAND:
            keys |= Keys.LEFT
        elif error < -_DEAD_BAND:
            keys |= Keys.RIGHT
        return keys


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
    world.add_car(0, start if start is not None else CarState())
    bot = CourseBot(rng, world.state(0))
    recorder = InputRecorder(0.0)
    every = max(1, round(reaction_time / dt))
    for n in range(round(duration / dt)):
        if n % every == 0:
            keys = bot.keys(world.state(0))
            recorder.record(n * dt, keys)
            world.set_keys(0, keys)
        world.step(dt)
    return recorder.recording()
