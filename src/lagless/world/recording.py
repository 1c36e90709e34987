"""Input recordings: per-frame key bitmask and frame time, saved as CSV (spec 000 §3.6, 004 §5.3.1).

Implements spec 000 §3.6 "Record Mode" (per frame, the bit array of pressed keys plus the last
game-loop duration; Playback recomputes the entity from them alone) and spec 004 §5.3.1 (input
events saved as CSV and replayed in every test run).

CSV format (UTF-8, ``\\n`` line ends, ``#`` comment lines and blank lines ignored)::

    dt,keys,target_x,target_y
    0.041,5,,
    0.039,0,12.5,-3.0

``dt`` in seconds, ``keys`` the decimal ``Keys`` bitmask, the target in metres or both empty.

Decisions:
    * Frame times are stored in seconds (SI), not the thesis's milliseconds; floats are written
      with ``repr`` so a round trip is exact
      (``tests/world/test_recording.py::test_csv_round_trip_is_exact``).
    * Every malformed line raises ``ConfigError`` naming its 1-based line number and the field
      (``tests/world/test_recording.py::test_garbage_csv_names_the_line``).
    * Shipped recordings live in ``lagless/world/recordings/*.csv`` (package data) and load by name
      with ``load_recording`` (``tests/world/test_recording.py::test_shipped_recordings_load``).
"""

from __future__ import annotations

import importlib.resources
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError
from lagless.world.entity import MAX_FRAME_TIME
from lagless.world.steering import ALL_KEYS, Controls, Keys

__all__ = [
    "CSV_HEADER",
    "Frame",
    "Recording",
    "available_recordings",
    "load_recording",
    "load_recording_text",
]

CSV_HEADER: Final = "dt,keys,target_x,target_y"
_NAME: Final = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
_KEYS_FIELD: Final = re.compile(r"[0-9]{1,3}")
_COMMENT: Final = "# lagless.world recording: dt [s], keys [Keys bitmask], target [m] or empty"


def _check_dt(dt: float) -> None:
    if not (math.isfinite(dt) and 0.0 < dt <= MAX_FRAME_TIME):
        raise ConfigError(f"dt must be in (0, {MAX_FRAME_TIME}] s, got {dt!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Frame:
    """One recorded game-loop frame: its duration and the input held during it."""

    dt: float
    """Duration of the frame, s, in (0, ``MAX_FRAME_TIME``]."""
    keys: Keys = Keys.NONE
    """Keys held during the frame."""
    target: tuple[float, float] | None = None
    """Point & Click target in metres, or ``None``."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        _check_dt(self.dt)
        Controls(keys=self.keys, target=self.target)

    @property
    def controls(self) -> Controls:
        """The frame's input as ``Controls``."""
        return Controls(keys=self.keys, target=self.target)


def _fmt(value: float) -> str:
    return repr(float(value))


def data_rows(text: str, header: str, width: int) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, fields)`` of a recording CSV after checking its header.

    Args:
        text: The CSV text.
        header: The exact header line expected before the data.
        width: Number of comma-separated fields per data line.

    Yields:
        The 1-based line number and the stripped fields of each data line.

    Raises:
        ConfigError: Missing or wrong header, or a line with the wrong number of fields.
    """
    seen_header = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not seen_header:
            if line.replace(" ", "") != header:
                raise ConfigError(f"recording line {lineno}: header must be {header!r}")
            seen_header = True
            continue
        fields = [f.strip() for f in line.split(",")]
        if len(fields) != width:
            raise ConfigError(
                f"recording line {lineno}: expected {width} fields, got {len(fields)}"
            )
        yield lineno, fields
    if not seen_header:
        raise ConfigError(f"recording line 1: header {header!r} is missing")


def parse_float(lineno: int, name: str, field: str) -> float:
    """Parse one finite float field of a recording CSV line.

    Args:
        lineno: 1-based line number (for the error message).
        name: Column name (for the error message).
        field: The field text.

    Returns:
        The value.

    Raises:
        ConfigError: The field is not a finite decimal number.
    """
    try:
        value = float(field)
    except ValueError:
        raise ConfigError(
            f"recording line {lineno}: {name} must be a number, got {field[:20]!r}"
        ) from None
    if not math.isfinite(value):
        raise ConfigError(f"recording line {lineno}: {name} must be finite, got {field[:20]!r}")
    return value


def _parse_frame(lineno: int, fields: list[str]) -> Frame:
    dt = parse_float(lineno, "dt", fields[0])
    if not _KEYS_FIELD.fullmatch(fields[1]) or int(fields[1]) & ~int(ALL_KEYS):
        raise ConfigError(
            f"recording line {lineno}: keys must be an integer in [0, {int(ALL_KEYS)}], "
            f"got {fields[1][:20]!r}"
        )
    if fields[2] == "" and fields[3] == "":
        target = None
    elif fields[2] == "" or fields[3] == "":
        raise ConfigError(f"recording line {lineno}: target_x and target_y must both be set")
    else:
        target = (
            parse_float(lineno, "target_x", fields[2]),
            parse_float(lineno, "target_y", fields[3]),
        )
    try:
        return Frame(dt=dt, keys=Keys(int(fields[1])), target=target)
    except ConfigError as exc:
        raise ConfigError(f"recording line {lineno}: {exc}") from None


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    """A recorded input sequence: frames of (dt, keys[, target]) (spec 000 §3.6 "Record Mode")."""

    frames: tuple[Frame, ...]
    """The frames in play order."""

    @classmethod
    def from_frames(cls, frames: Sequence[Frame]) -> Recording:
        """Build a recording from any sequence of frames.

        Args:
            frames: Frames in play order.

        Returns:
            The recording.
        """
        return cls(frames=tuple(frames))

    def __len__(self) -> int:
        """Number of frames."""
        return len(self.frames)

    @property
    def duration(self) -> float:
        """Total recorded time, s."""
        return math.fsum(f.dt for f in self.frames)

    def dt_array(self) -> npt.NDArray[np.float64]:
        """Frame times as a float64 array, s."""
        return np.fromiter((f.dt for f in self.frames), dtype=np.float64, count=len(self.frames))

    def keys_array(self) -> npt.NDArray[np.uint8]:
        """Key bitmasks as a uint8 array."""
        return np.fromiter((f.keys for f in self.frames), dtype=np.uint8, count=len(self.frames))

    def to_csv(self) -> str:
        """Serialise to the CSV format of the module docstring (exact round trip)."""
        lines = [_COMMENT, CSV_HEADER]
        for f in self.frames:
            tx, ty = ("", "") if f.target is None else (_fmt(f.target[0]), _fmt(f.target[1]))
            lines.append(f"{_fmt(f.dt)},{int(f.keys)},{tx},{ty}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_csv(cls, text: str) -> Recording:
        """Parse the CSV format of the module docstring.

        Args:
            text: CSV text.

        Returns:
            The recording.

        Raises:
            ConfigError: A malformed line; the message names the line and the field.
        """
        return cls(frames=tuple(_parse_frame(n, f) for n, f in data_rows(text, CSV_HEADER, 4)))


def available_recordings() -> tuple[str, ...]:
    """Names of the recordings shipped in ``lagless/world/recordings/``, sorted."""
    folder = importlib.resources.files("lagless.world").joinpath("recordings")
    return tuple(sorted(p.name[:-4] for p in folder.iterdir() if p.name.endswith(".csv")))


def load_recording_text(name: str) -> str:
    """Read the CSV text of a shipped recording.

    Args:
        name: A name from ``available_recordings()``.

    Returns:
        The file's text.

    Raises:
        ConfigError: The name is not a shipped recording.
    """
    names = available_recordings()
    if not _NAME.fullmatch(name) or name not in names:
        raise ConfigError(f"recording must be one of {', '.join(names)}, got {name!r}")
    folder = importlib.resources.files("lagless.world").joinpath("recordings")
    return folder.joinpath(f"{name}.csv").read_text(encoding="utf-8")


def load_recording(name: str) -> Recording:
    """Load a shipped key recording (``sports``, ``simulation``, ``shooter``, ``arcade``).

    Args:
        name: A name from ``available_recordings()`` (car recordings load with
            ``lagless.world.car.load_car_recording``).

    Returns:
        The recording.

    Raises:
        ConfigError: Unknown name or malformed file.
    """
    return Recording.from_csv(load_recording_text(name))
