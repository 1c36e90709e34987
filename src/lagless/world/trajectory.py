"""Ground-truth trajectories: replay a recording through an entity into numpy arrays.

Implements spec 000 §3.6 "Playback" (entities computed solely from the recorded inputs and frame
durations, deterministically) and provides the sender-side ground truth the lab compares remote
replicas against (spec 000 §4.1 ``avgDistanceError``; spec 004 §5.3.2 path recording).

Decisions:
    * A ``Trajectory`` has one sample per frame boundary: index 0 is the start state at ``t = 0``
      and index ``i`` the state after frame ``i`` (``tests/world/test_trajectory.py``).
    * ``play`` yields the state after each frame (not the start state), so it pairs one to one
      with the recording's frames.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, fields

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError
from lagless.world.entity import Entity, EntityState
from lagless.world.presets import Preset, get_preset
from lagless.world.recording import Recording

__all__ = ["Trajectory", "play", "simulate"]

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Trajectory:
    """Sampled kinematic states as struct-of-arrays (float64, equal 1-D shapes; SI units)."""

    t: FloatArray
    """Sample times, s, non-decreasing, starting at 0."""
    x: FloatArray
    """Position x, m."""
    y: FloatArray
    """Position y, m."""
    heading: FloatArray
    """Orientation, rad in [-π, π)."""
    vx: FloatArray
    """Velocity x, m/s."""
    vy: FloatArray
    """Velocity y, m/s."""
    ax: FloatArray
    """Total acceleration x, m/s²."""
    ay: FloatArray
    """Total acceleration y, m/s²."""
    turn_rate: FloatArray
    """Angular velocity, rad/s."""

    def __post_init__(self) -> None:
        """Check that every field is a 1-D float64 array of the same length."""
        n = self.t.shape
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, np.ndarray) or value.dtype != np.float64 or value.shape != n:
                raise ConfigError(f"{f.name} must be a float64 array of shape {n}")
        if len(n) != 1:
            raise ConfigError(f"t must be 1-D, got shape {n}")

    @classmethod
    def from_states(cls, times: list[float], states: list[EntityState]) -> Trajectory:
        """Build a trajectory from parallel lists of times and states.

        Args:
            times: Sample times, s.
            states: The state at each time.

        Returns:
            The trajectory.
        """
        if len(times) != len(states):
            raise ConfigError(f"times and states must have equal length, got {len(times)}")
        columns = {
            name: np.fromiter(
                (getattr(s, name) for s in states), dtype=np.float64, count=len(states)
            )
            for name in ("x", "y", "heading", "vx", "vy", "ax", "ay", "turn_rate")
        }
        return cls(t=np.asarray(times, dtype=np.float64), **columns)

    def __len__(self) -> int:
        """Number of samples."""
        return int(self.t.shape[0])

    @property
    def speed(self) -> FloatArray:
        """Speed at each sample, m/s."""
        return np.hypot(self.vx, self.vy)

    def state(self, index: int) -> EntityState:
        """Return the sample at ``index`` as an ``EntityState``.

        Args:
            index: Sample index (negative counts from the end).

        Returns:
            The state.
        """
        return EntityState(
            x=float(self.x[index]),
            y=float(self.y[index]),
            heading=float(self.heading[index]),
            vx=float(self.vx[index]),
            vy=float(self.vy[index]),
            ax=float(self.ax[index]),
            ay=float(self.ay[index]),
            turn_rate=float(self.turn_rate[index]),
        )


def play(entity: Entity, recording: Recording) -> Iterator[tuple[float, EntityState]]:
    """Replay a recording through an entity, yielding the state after each frame.

    Args:
        entity: The entity to drive; it is stepped in place.
        recording: Frames of (dt, keys[, target]).

    Yields:
        ``(t, state)``: elapsed time in seconds at the end of the frame and the state then.
    """
    t = 0.0
    for frame in recording.frames:
        entity.step(frame.dt, frame.controls)
        t += frame.dt
        yield t, entity.state()


def simulate(
    preset: Preset | str, recording: Recording, *, start: EntityState | None = None
) -> Trajectory:
    """Compute the ground-truth trajectory of a recording at the sender's frame rate.

    Args:
        preset: A ``Preset`` or the name of one in ``PRESETS``.
        recording: The inputs to replay.
        start: Starting state (default: at rest at the origin, heading 0).

    Returns:
        ``len(recording) + 1`` samples: the start state, then the state after every frame.
    """
    chosen = get_preset(preset) if isinstance(preset, str) else preset
    initial = EntityState() if start is None else start
    entity = Entity.from_state(chosen, initial)
    times = [0.0]
    states = [entity.state()]
    for t, state in play(entity, recording):
        times.append(t)
        states.append(state)
    return Trajectory.from_states(times, states)
