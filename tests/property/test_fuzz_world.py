"""Fuzz the recording CSV readers (DESIGN.md "Bad input"; ``lagless.world.recording``).

``Recording.from_csv`` and ``CarRecording.from_csv`` raise only ``ConfigError`` on any text:
random text and valid recordings with their bytes mutated.
"""

from __future__ import annotations

import contextlib

from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import ConfigError
from lagless.world.car import CarFrame, CarRecording
from lagless.world.recording import Frame, Recording
from lagless.world.steering import ALL_KEYS, Keys
from tests.property.fuzzing import FUZZ, fuzz_bytes

dts = st.floats(1e-4, 1.0)
unit = st.floats(-1.0, 1.0)
frames = st.builds(
    Frame,
    dt=dts,
    keys=st.integers(0, int(ALL_KEYS)).map(Keys),
    target=st.none() | st.tuples(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6)),
)
recordings = st.lists(frames, max_size=6).map(lambda f: Recording.from_frames(f).to_csv().encode())
car_recordings = st.lists(st.builds(CarFrame, dt=dts, throttle=unit, steer=unit), max_size=6).map(
    lambda f: CarRecording(frames=tuple(f)).to_csv().encode()
)


def _texts(valid: st.SearchStrategy[bytes]) -> st.SearchStrategy[str]:
    mutated = fuzz_bytes(valid, max_size=300).map(lambda b: b.decode("utf-8", "replace"))
    return st.one_of(st.text(max_size=300), mutated)


@FUZZ
@given(_texts(recordings))
def test_recording_from_csv_raises_config_error_only(text: str) -> None:
    with contextlib.suppress(ConfigError):
        Recording.from_csv(text)


@FUZZ
@given(_texts(car_recordings))
def test_car_recording_from_csv_raises_config_error_only(text: str) -> None:
    with contextlib.suppress(ConfigError):
        CarRecording.from_csv(text)
