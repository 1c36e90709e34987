"""A manual clock for tests; it starts at a non-zero epoch so no code may assume ``now`` is 0."""

from __future__ import annotations

from typing import Final

from lagless.errors import LocalProtocolError

DEFAULT_EPOCH: Final = 1_000.0  # seconds; non-zero on purpose (STYLE §3)


class FakeClock:
    """A monotonic clock that moves only when told to.

    Args:
        start: the first reading, seconds.
    """

    def __init__(self, start: float = DEFAULT_EPOCH) -> None:
        self._now = float(start)

    def __call__(self) -> float:
        """Return the current reading, seconds."""
        return self._now

    @property
    def now(self) -> float:
        """The current reading, seconds."""
        return self._now

    def jump(self, seconds: float) -> float:
        """Move forward by ``seconds`` (≥ 0) and return the new reading.

        Raises:
            LocalProtocolError: for a negative step; a monotonic clock never goes back.
        """
        if seconds < 0:
            raise LocalProtocolError(f"seconds must be >= 0, got {seconds}")
        self._now += seconds
        return self._now
