"""Input recordings: CSV round trip, garbage handling, shipped files (spec 000 §3.6, 004 §5.3.1)."""

from __future__ import annotations

import random
from importlib.resources import files

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import ConfigError
from lagless.world import (
    GENRES,
    Frame,
    Keys,
    Recording,
    available_recordings,
    drive,
    drive_laps,
    load_car_recording,
    load_recording,
)

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6)
frames = st.builds(
    Frame,
    dt=st.floats(min_value=1e-6, max_value=1.0),
    keys=st.integers(0, 127).map(Keys),
    target=st.none() | st.tuples(finite, finite),
)


@given(st.lists(frames, max_size=30))
@settings(max_examples=200, deadline=None)
def test_csv_round_trip_is_exact(items: list[Frame]) -> None:
    recording = Recording.from_frames(items)
    assert Recording.from_csv(recording.to_csv()) == recording


GOOD = "dt,keys,target_x,target_y\n0.04,1,,\n"


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("", 1, "header"),
        ("dt,keys\n0.04,1\n", 1, "header"),
        (GOOD + "abc,1,,\n", 3, "dt"),
        (GOOD + "nan,1,,\n", 3, "dt"),
        (GOOD + "0,1,,\n", 3, "dt"),
        (GOOD + "2.5,1,,\n", 3, "dt"),
        (GOOD + "0.04,300,,\n", 3, "keys"),
        (GOOD + "0.04,-1,,\n", 3, "keys"),
        (GOOD + "0.04,1.5,,\n", 3, "keys"),
        (GOOD + "0.04,1,3.0,\n", 3, "target"),
        (GOOD + "0.04,1,x,2\n", 3, "target_x"),
        ("# comment\n\n" + GOOD + "0.04,1\n", 5, "fields"),
        (GOOD + "0.04,1,,,\n", 3, "fields"),
    ],
)
def test_garbage_csv_names_the_line(text: str, line: int, field: str) -> None:
    with pytest.raises(ConfigError, match=f"line {line}: .*{field}"):
        Recording.from_csv(text)


@given(st.text(max_size=200))
@settings(max_examples=300, deadline=None)
def test_arbitrary_text_parses_or_raises_config_error(text: str) -> None:
    try:
        recording = Recording.from_csv(GOOD + text)
    except ConfigError:
        return
    assert len(recording) >= 1


def test_comments_and_blank_lines_are_ignored() -> None:
    text = "# a\n\n dt , keys , target_x , target_y \n# b\n0.04, 5 ,1.5,-2\n\n"
    assert Recording.from_csv(text) == Recording(
        frames=(Frame(dt=0.04, keys=Keys.UP | Keys.LEFT, target=(1.5, -2.0)),)
    )


def test_arrays_and_duration() -> None:
    recording = Recording.from_frames([Frame(dt=0.04, keys=Keys.UP), Frame(dt=0.02)])
    assert recording.duration == pytest.approx(0.06)
    assert recording.dt_array().tolist() == [0.04, 0.02]
    assert recording.keys_array().tolist() == [1, 0]


@pytest.mark.parametrize("genre", GENRES)
def test_shipped_recordings_load(genre: str) -> None:
    recording = load_recording(genre)
    assert 60.0 <= recording.duration < 60.1
    assert recording == drive(genre, duration=60.0, rng=random.Random(0))  # its stated recipe


def test_shipped_car_recording_loads() -> None:
    recording = load_car_recording("car-laps")
    assert recording == drive_laps(duration=60.0, rng=random.Random(0))


def test_shipped_files_are_small() -> None:
    assert set(available_recordings()) == {*GENRES, "car-laps"}
    for name in available_recordings():
        size = len(files("lagless.world").joinpath("recordings", f"{name}.csv").read_bytes())
        assert size < 50_000


@pytest.mark.parametrize("name", ["nope", "../presets", "SPORTS", ""])
def test_unknown_recording_raises(name: str) -> None:
    with pytest.raises(ConfigError, match="recording must be one of"):
        load_recording(name)


def test_car_recording_is_not_a_key_recording() -> None:
    with pytest.raises(ConfigError, match="header"):
        load_recording("car-laps")
