"""Ground-truth trajectories from recordings (spec 000 §3.6 Playback)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.world import (
    PRESETS,
    Entity,
    EntityState,
    Frame,
    Keys,
    Recording,
    Trajectory,
    load_recording,
    play,
    simulate,
)


def test_simulate_has_one_sample_per_frame_boundary() -> None:
    recording = load_recording("sports")
    trajectory = simulate("sports", recording)
    assert len(trajectory) == len(recording) + 1
    assert trajectory.t[0] == 0.0
    np.testing.assert_allclose(np.diff(trajectory.t), recording.dt_array(), rtol=0, atol=1e-12)
    assert trajectory.state(0) == EntityState()


def test_play_pairs_with_frames_and_matches_simulate() -> None:
    recording = load_recording("shooter")
    start = EntityState(x=1.0, y=-2.0, heading=0.5)
    trajectory = simulate(PRESETS["shooter"], recording, start=start)
    assert trajectory.state(0) == start
    played = list(play(Entity.from_state(PRESETS["shooter"], start), recording))
    assert len(played) == len(recording)
    for i in (0, 100, len(played) - 1):
        t, state = played[i]
        assert t == pytest.approx(trajectory.t[i + 1])
        assert state == trajectory.state(i + 1)


def test_simulate_is_deterministic() -> None:
    recording = load_recording("simulation")
    a, b = simulate("simulation", recording), simulate("simulation", recording)
    for name in ("x", "y", "heading", "vx", "vy", "ax", "ay", "turn_rate"):
        assert np.array_equal(getattr(a, name), getattr(b, name))


def test_acceleration_is_the_derivative_of_velocity() -> None:
    recording = Recording.from_frames([Frame(dt=0.001, keys=Keys.UP | Keys.LEFT)] * 500)
    trajectory = simulate("simulation", recording)
    dv = np.gradient(trajectory.vx, trajectory.t)[1:-1]
    np.testing.assert_allclose(dv, trajectory.ax[1:-1], atol=1e-3)
    assert trajectory.heading[-1] == pytest.approx(math.pi / 4)


def test_trajectory_rejects_ragged_arrays() -> None:
    good = np.zeros(3)
    with pytest.raises(ConfigError, match="vx"):
        Trajectory(
            t=good,
            x=good,
            y=good,
            heading=good,
            vx=np.zeros(2),
            vy=good,
            ax=good,
            ay=good,
            turn_rate=good,
        )
