"""Input record/replay and 50-Hz path logs, as CSV (spec 004 §5.3.1 and §5.3.2).

Implements spec 004 §5.3.1 (all input events of a run are recorded and saved as CSV, and replayed
on the next start: ``userControlsFile`` / ``readUserControls`` / ``writeUserControls``) and
§5.3.2 (server and client each sample the car's position 50 times per second at the same
instants and write their list to CSV).

Formats::

    # input recording: t [s since the first change], keys held (0/1)
    t,up,down,left,right
    0.0,1,0,0,0
    1.37,1,0,1,0

    # path log: t [s server time], car id, x, y [m], heading [rad]
    t,car,x,y,heading

Decisions:
    * Recording times are relative to the recording's start, so a replay can start at any clock;
      floats are written with ``repr`` so a round trip is exact
      (``tests/physics/test_recording.py::test_input_round_trip``).
    * A recording holds only changes: consecutive equal keys are one event, times strictly
      increase (``ConfigError`` naming the line otherwise).
    * ``readUserControls`` wins over ``writeUserControls`` (the thesis writes only "if
      readUserControls == false"); ``read_user_controls`` / ``write_user_controls`` do the file
      I/O so the sans-I/O client only sees recordings.
    * ``InputPlayer.due(t)`` returns the keys of every change at or before ``t`` not yet
      returned, in order, so a caller polling at any rate sends exactly one input event per change.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lagless.errors import ConfigError, LocalProtocolError
from lagless.physics.car import Keys
from lagless.physics.params import PhysicsParams
from lagless.world.recording import data_rows, parse_float

__all__ = [
    "INPUT_CSV_HEADER",
    "PATH_CSV_HEADER",
    "InputPlayer",
    "InputRecorder",
    "InputRecording",
    "PathLog",
    "PathSample",
    "read_user_controls",
    "write_user_controls",
]

INPUT_CSV_HEADER: Final = "t,up,down,left,right"
PATH_CSV_HEADER: Final = "t,car,x,y,heading"
_KEY_COLUMNS: Final = (Keys.UP, Keys.DOWN, Keys.LEFT, Keys.RIGHT)


def _bit(lineno: int, name: str, field: str) -> bool:
    if field not in ("0", "1"):
        raise ConfigError(f"recording line {lineno}: {name} must be 0 or 1, got {field[:20]!r}")
    return field == "1"


@dataclass(frozen=True, slots=True, kw_only=True)
class InputRecording:
    """Recorded key changes: ``(t, keys)`` with ``t`` in seconds from the start of the recording."""

    events: tuple[tuple[float, Keys], ...]
    """The changes, times strictly increasing and ≥ 0, keys differing from the previous event."""

    def __post_init__(self) -> None:
        """Validate; raise ``ConfigError`` naming the event."""
        last_t, last_k = -math.inf, None
        for i, (t, keys) in enumerate(self.events):
            if not (math.isfinite(t) and t >= 0.0 and t > last_t):
                raise ConfigError(f"event {i}: t must be finite, >= 0 and increasing, got {t!r}")
            if not 0 <= int(keys) <= 15 or keys == last_k:
                raise ConfigError(f"event {i}: keys must be a new combination, got {keys!r}")
            last_t, last_k = t, keys

    @property
    def duration(self) -> float:
        """Time of the last change, s (0 when empty)."""
        return self.events[-1][0] if self.events else 0.0

    def to_csv(self) -> str:
        """Serialise as CSV ``t,up,down,left,right``."""
        lines = ["# lagless.physics input recording: t [s], keys held (0/1)", INPUT_CSV_HEADER]
        for t, keys in self.events:
            bits = ",".join("1" if keys & k else "0" for k in _KEY_COLUMNS)
            lines.append(f"{t!r},{bits}")
        return "\n".join(lines) + "\n"

    @classmethod
    def from_csv(cls, text: str) -> InputRecording:
        """Parse CSV ``t,up,down,left,right``.

        Raises:
            ConfigError: A malformed line or a bad sequence; the message names the line.
        """
        events: list[tuple[float, Keys]] = []
        for lineno, fields in data_rows(text, INPUT_CSV_HEADER, 5):
            t = parse_float(lineno, "t", fields[0])
            keys = Keys.NONE
            for name, key, field in zip(
                ("up", "down", "left", "right"), _KEY_COLUMNS, fields[1:], strict=True
            ):
                if _bit(lineno, name, field):
                    keys |= key
            events.append((t, keys))
        try:
            return cls(events=tuple(events))
        except ConfigError as exc:
            raise ConfigError(f"input recording: {exc}") from None


class InputRecorder:
    """Collects key changes into an ``InputRecording`` (``writeUserControls``).

    Args:
        start: Time of the recording's start, s (any clock; events are stored relative to it).
    """

    def __init__(self, start: float) -> None:
        """Create an empty recorder."""
        self._start = start
        self._events: list[tuple[float, Keys]] = []

    def record(self, now: float, keys: Keys) -> None:
        """Record that ``keys`` are held from ``now`` (s) on; repeats of the same keys are ignored.

        Raises:
            LocalProtocolError: ``now`` is before the start or the previous change.
        """
        t = now - self._start
        if self._events and keys == self._events[-1][1]:
            return
        if t < 0.0 or (self._events and t <= self._events[-1][0]):
            raise LocalProtocolError(f"input times must increase, got {t!r} s into the recording")
        self._events.append((t, Keys(keys)))

    def recording(self) -> InputRecording:
        """Return the changes recorded so far."""
        return InputRecording(events=tuple(self._events))


class InputPlayer:
    """Replays an ``InputRecording`` from a start time (``readUserControls``).

    Args:
        recording: The changes.
        start: Time at which the recording's ``t = 0`` is played, s.
    """

    def __init__(self, recording: InputRecording, start: float) -> None:
        """Create a player positioned before the first change."""
        self._events = recording.events
        self._start = start
        self._next = 0

    @property
    def finished(self) -> bool:
        """True once every change was returned."""
        return self._next >= len(self._events)

    def next_time(self) -> float | None:
        """Return the absolute time of the next change, s, or ``None`` when finished."""
        if self.finished:
            return None
        return self._start + self._events[self._next][0]

    def due(self, now: float) -> list[Keys]:
        """Return the keys of each change due at or before ``now`` (s) not yet returned."""
        out: list[Keys] = []
        events = self._events
        while self._next < len(events) and self._start + events[self._next][0] <= now:
            out.append(events[self._next][1])
            self._next += 1
        return out


@dataclass(frozen=True, slots=True)
class PathSample:
    """One path-log row: where a car is (server) or is shown (client) at server time ``t``."""

    t: float
    """Server time, s."""
    car_id: int
    """Car id."""
    x: float
    """x, m."""
    y: float
    """y, m."""
    heading: float
    """Heading, rad."""


class PathLog:
    """A 50-Hz path log (spec 004 §5.3.2): one row per car per sample instant."""

    def __init__(self) -> None:
        """Create an empty log."""
        self.samples: list[PathSample] = []

    def record(self, t: float, car_id: int, x: float, y: float, heading: float) -> None:
        """Append one row (server time ``t`` in s, position in m, heading in rad)."""
        self.samples.append(PathSample(t, car_id, x, y, heading))

    def for_car(self, car_id: int) -> list[PathSample]:
        """Return one car's rows in order."""
        return [s for s in self.samples if s.car_id == car_id]

    def to_csv(self) -> str:
        """Serialise as CSV ``t,car,x,y,heading`` (floats with ``repr``)."""
        lines = ["# lagless.physics path log: t [s server time], x, y [m], heading [rad]"]
        lines.append(PATH_CSV_HEADER)
        lines.extend(f"{s.t!r},{s.car_id},{s.x!r},{s.y!r},{s.heading!r}" for s in self.samples)
        return "\n".join(lines) + "\n"

    @classmethod
    def from_csv(cls, text: str) -> PathLog:
        """Parse CSV ``t,car,x,y,heading``.

        Raises:
            ConfigError: A malformed line; the message names the line and column.
        """
        log = cls()
        for lineno, fields in data_rows(text, PATH_CSV_HEADER, 5):
            if not fields[1].isdigit():
                raise ConfigError(f"path log line {lineno}: car must be an id, got {fields[1]!r}")
            values: Sequence[float] = [
                parse_float(lineno, name, f)
                for name, f in zip(("t", "x", "y", "heading"), fields[:1] + fields[2:], strict=True)
            ]
            log.record(values[0], int(fields[1]), values[1], values[2], values[3])
        return log


def read_user_controls(params: PhysicsParams) -> InputRecording | None:
    """Load the inputs to replay when the parameter file says ``readUserControls = true``.

    Args:
        params: The parameter file.

    Returns:
        The recording from ``userControlsFile``, or ``None`` when replay is off.

    Raises:
        ConfigError: The file cannot be read or is malformed (one line naming the file).
    """
    if not params.read_user_controls:
        return None
    path = Path(params.user_controls_file)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the user controls: {exc.strerror}") from None
    try:
        return InputRecording.from_csv(text)
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def write_user_controls(params: PhysicsParams, recording: InputRecording) -> bool:
    """Write a client's recorded inputs when ``writeUserControls`` is on and replay is off.

    Args:
        params: The parameter file.
        recording: The inputs (``PhysicsClient.recorded()``).

    Returns:
        True if ``userControlsFile`` was written.

    Raises:
        ConfigError: The file cannot be written.
    """
    if not params.write_user_controls or params.read_user_controls:
        return False
    path = Path(params.user_controls_file)
    try:
        path.write_text(recording.to_csv(), encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the user controls: {exc.strerror}") from None
    return True
