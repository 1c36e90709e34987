"""Scripted genre drivers (spec 000 §4.2-§4.5 test movements): determinism and motion statistics."""

from __future__ import annotations

import dataclasses
import math
import random

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.world import (
    ARENA_HALF_WIDTH,
    GENRES,
    PRESETS,
    SteeringModel,
    Trajectory,
    drive,
    simulate,
)

SEEDS = (0, 1, 2)


def _run(genre: str, seed: int) -> Trajectory:
    return simulate(genre, drive(genre, duration=60.0, rng=random.Random(seed)))


def _direction_events(tr: Trajectory, lag: float, vmax: float, test) -> int:
    """Count onsets of 'velocity at t vs t + lag satisfies test(cos angle)' while moving fast."""
    later = np.searchsorted(tr.t, tr.t + lag)
    i = np.nonzero(later < len(tr))[0]
    j = later[i]
    fast = (tr.speed[i] > 0.5 * vmax) & (tr.speed[j] > 0.5 * vmax)
    cos = (tr.vx[i] * tr.vx[j] + tr.vy[i] * tr.vy[j]) / np.maximum(tr.speed[i] * tr.speed[j], 1e-12)
    flag = fast & test(cos)
    return int(np.count_nonzero(np.diff(flag.astype(int)) == 1))


def _reversals(tr: Trajectory, lag: float, vmax: float) -> int:
    return _direction_events(tr, lag, vmax, lambda c: c < math.cos(math.radians(150)))


def _right_angle_turns(tr: Trajectory, lag: float, vmax: float) -> int:
    return _direction_events(tr, lag, vmax, lambda c: np.abs(c) < math.cos(math.radians(60)))


def _stopped(tr: Trajectory, vmax: float) -> float:
    return float(np.mean(tr.speed < 0.1 * vmax))


def _relative_direction(tr: Trajectory) -> np.ndarray:
    return np.abs(np.angle(np.exp(1j * (np.arctan2(tr.vy, tr.vx) - tr.heading))))


@pytest.mark.parametrize("genre", GENRES)
def test_drive_is_deterministic_per_seed(genre: str) -> None:
    a = drive(genre, duration=20.0, rng=random.Random(5))
    b = drive(genre, duration=20.0, rng=random.Random(5))
    c = drive(genre, duration=20.0, rng=random.Random(6))
    assert a == b
    assert a != c


@pytest.mark.parametrize("genre", GENRES)
@pytest.mark.parametrize("seed", SEEDS)
def test_drivers_stay_in_the_arena(genre: str, seed: int) -> None:
    tr = _run(genre, seed)
    extent = float(np.max(np.maximum(np.abs(tr.x), np.abs(tr.y))))
    assert extent <= 1.5 * ARENA_HALF_WIDTH[genre]
    assert extent >= 0.5 * ARENA_HALF_WIDTH[genre]  # and actually roams around


@pytest.mark.parametrize("seed", SEEDS)
def test_sports_turns_reverses_and_stops(seed: int) -> None:
    vmax = PRESETS["sports"].max_speed
    tr = _run("sports", seed)
    assert _reversals(tr, 1.0, vmax) >= 8
    assert _right_angle_turns(tr, 1.0, vmax) >= 8
    assert _stopped(tr, vmax) >= 0.015


@pytest.mark.parametrize("seed", SEEDS)
def test_shooter_strafes_reaims_and_backpedals(seed: int) -> None:
    vmax = PRESETS["shooter"].max_speed
    tr = _run("shooter", seed)
    rel = _relative_direction(tr)[tr.speed > 0.3 * vmax]
    strafing = np.mean((rel > math.radians(60)) & (rel < math.radians(120)))
    backwards = np.mean(rel > math.radians(150))
    turned = float(np.sum(np.abs(tr.turn_rate[1:]) * np.diff(tr.t)))
    assert strafing >= 0.2
    assert backwards >= 0.03
    assert turned >= 15.0  # radians of re-aiming per minute
    assert _reversals(tr, 1.0, vmax) >= 10
    assert _stopped(tr, vmax) >= 0.05


@pytest.mark.parametrize("seed", SEEDS)
def test_arcade_runs_along_axes_with_side_steps(seed: int) -> None:
    vmax = PRESETS["arcade"].max_speed
    tr = _run("arcade", seed)
    moving = tr.speed > 0.3 * vmax
    direction = np.arctan2(tr.vy, tr.vx)[moving]
    off_axis = np.minimum(np.abs(np.sin(direction)), np.abs(np.cos(direction)))
    assert np.mean(off_axis < math.sin(math.radians(2))) >= 0.93
    assert _reversals(tr, 1.0, vmax) >= 8
    assert _stopped(tr, vmax) >= 0.02
    assert np.mean(tr.speed) >= 0.85 * vmax  # "extremely fast": at full speed most of the time


@pytest.mark.parametrize("seed", SEEDS)
def test_simulation_has_long_arcs_and_retro_stops(seed: int) -> None:
    vmax = PRESETS["simulation"].max_speed
    tr = _run("simulation", seed)
    turned = float(np.sum(np.abs(tr.turn_rate[1:]) * np.diff(tr.t)))
    assert turned >= 20.0
    assert _stopped(tr, vmax) >= 0.03
    assert _reversals(tr, 3.0, vmax) >= 1
    assert np.mean(tr.speed) >= 0.3 * vmax


def test_frame_times() -> None:
    ranged = drive("sports", duration=10.0, rng=random.Random(1), frame_time=(0.03, 0.05))
    dts = ranged.dt_array()
    assert dts.min() >= 0.03
    assert dts.max() <= 0.05
    assert np.allclose(dts * 1000.0, np.round(dts * 1000.0))
    assert len(np.unique(dts)) > 10
    constant = drive("sports", duration=10.0, rng=random.Random(1), frame_time=0.025)
    assert set(constant.dt_array().tolist()) == {0.025}
    assert 10.0 <= constant.duration < 10.0 + 0.025 + 1e-9


@pytest.mark.parametrize(
    "kwargs",
    [
        {"genre": "racing"},
        {"duration": 0.0},
        {"duration": math.inf},
        {"frame_time": (0.05, 0.03)},
        {"frame_time": 0.0},
        {"preset": dataclasses.replace(PRESETS["sports"], model=SteeringModel.THRUST)},
    ],
)
def test_bad_arguments_raise(kwargs: dict[str, object]) -> None:
    args: dict[str, object] = {"genre": "sports", "duration": 1.0, **kwargs}
    genre = args.pop("genre")
    with pytest.raises(ConfigError):
        drive(genre, rng=random.Random(0), **args)  # type: ignore[arg-type]


def test_custom_preset_is_driven() -> None:
    slow = dataclasses.replace(PRESETS["sports"], acceleration=PRESETS["sports"].drag * 2.0)
    tr = simulate(slow, drive("sports", duration=20.0, rng=random.Random(3), preset=slow))
    assert tr.speed.max() <= 2.0 + 1e-9
    assert tr.speed.max() > 1.5
