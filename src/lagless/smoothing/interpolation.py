"""Interpolation with a position history (Half-Life style): fixed-rate sender, delayed receiver.

Implements spec 000 §2.9 (§2.7.3 of the thesis): the sender sends position and orientation with
its timestamp every ``update_interval``; the receiver draws the entity at
``T_target = server_now - delta_time``, between the two history entries bracketing it, deletes
entries older than the target, and holds at the last position when starved.

Payload (21 B, Abb. 3.13): ``id u8 | x i32 | y i32 | heading u32 | t i64`` (units in
``lagless.smoothing.codec``).

Decisions:

* The receiver maps local time to server time with the offset ``server_time_now - now`` of the
  latest payload, so ``T_target`` is in the sender's clock, as the thesis's general algorithm
  assumes (``test_interpolation.py::test_exact_on_linear_motion``).
* Starved (``T_target`` past the newest entry): ``starve="hold"`` (the Simulator's behaviour) or
  ``"extrapolate"`` linearly from the last two entries (``test_interpolation.py::test_starvation``).
  Before the oldest entry the entity holds at it.
* The history is bounded by ``max_history`` entries (oldest dropped) so a flood of updates cannot
  grow memory; updates not newer than the newest entry are dropped as ``STALE``, updates older
  than the current target are still inserted but pruned at the next frame.
* Headings are interpolated along the shorter arc.
"""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass
from typing import Final, Literal

from lagless.errors import ConfigError
from lagless.smoothing.base import DropReason, PeriodicSender, Receiver
from lagless.smoothing.codec import DecodedUpdate, ModelCode, UpdateLayout
from lagless.smoothing.state import DisplayState, KinematicState, blend_heading

__all__ = [
    "INTERPOLATION_LAYOUT",
    "InterpolationConfig",
    "InterpolationReceiver",
    "InterpolationSender",
]

INTERPOLATION_LAYOUT: Final = UpdateLayout(
    velocity=False, acceleration=False, angular_velocity=False, timestamp=True
)
DEFAULT_UPDATE_INTERVAL: Final = 0.25  # seconds: the thesis test setting (spec 000 §2.9)
DEFAULT_DELTA_TIME: Final = 0.3  # seconds: "latency + 300 ms" minus the latency TC removes


@dataclass(frozen=True, slots=True, kw_only=True)
class InterpolationConfig:
    """An interpolation display model (spec 000 §2.9)."""

    update_interval: float = DEFAULT_UPDATE_INTERVAL
    """Sender period (s), > 0 (``Updateintervall``)."""
    delta_time: float = DEFAULT_DELTA_TIME
    """Render delay behind server time (s), ≥ 0 (``Deltazeit``)."""
    starve: Literal["hold", "extrapolate"] = "hold"
    """What to do when no entry lies beyond the target."""
    max_history: int = 64
    """Most history entries kept, ≥ 2."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not (math.isfinite(self.update_interval) and self.update_interval > 0):
            raise ConfigError(f"update_interval must be > 0 s, got {self.update_interval}")
        if not (math.isfinite(self.delta_time) and self.delta_time >= 0):
            raise ConfigError(f"delta_time must be >= 0 s, got {self.delta_time}")
        if self.starve not in ("hold", "extrapolate"):
            raise ConfigError(f"starve must be 'hold' or 'extrapolate', got {self.starve!r}")
        if self.max_history < 2:
            raise ConfigError(f"max_history must be >= 2, got {self.max_history}")

    @property
    def payload_size(self) -> int:
        """Return the update payload size (bytes): 21."""
        return INTERPOLATION_LAYOUT.size


class InterpolationSender(PeriodicSender):
    """Sends position, orientation and timestamp every ``update_interval``.

    Args:
        config: The model configuration.
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: InterpolationConfig, *, entity_id: int = 0) -> None:
        """Create a sender whose first update is due at once."""
        super().__init__(
            entity_id=entity_id,
            model=ModelCode.INTERPOLATION,
            layout=INTERPOLATION_LAYOUT,
            time_compensation=True,
            interval=config.update_interval,
        )
        self.config = config


class InterpolationReceiver(Receiver):
    """Draws the entity ``delta_time`` in the past between bracketing history entries.

    Args:
        config: The model configuration (must equal the sender's).
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: InterpolationConfig, *, entity_id: int = 0) -> None:
        """Create a receiver with an empty history."""
        super().__init__(
            entity_id=entity_id,
            model=ModelCode.INTERPOLATION,
            layout=INTERPOLATION_LAYOUT,
            time_compensation=True,
        )
        self.config = config
        self._history: deque[KinematicState] = deque(maxlen=config.max_history)
        self._offset = 0.0
        self._previous: KinematicState | None = None

    @property
    def history(self) -> tuple[KinematicState, ...]:
        """Return the position history, oldest first (timestamps in server time)."""
        return tuple(self._history)

    def _apply(
        self, decoded: DecodedUpdate, now: float, server_time_now: float
    ) -> DropReason | None:
        state = decoded.state
        if self._history and state.t <= self._history[-1].t:
            return DropReason.STALE
        self._previous = self._history[-1] if self._history else None
        self._history.append(state)
        self._offset = server_time_now - now
        return None

    def display(self, now: float) -> DisplayState | None:
        """Return the interpolated state at local time ``now`` (s), or ``None`` before data."""
        history = self._history
        if not history:
            return None
        target = now + self._offset - self.config.delta_time
        times = [s.t for s in history]
        i = bisect.bisect_right(times, target)
        # Delete entries older than the lower bracketing entry (spec 000 §2.9 pruning).
        for _ in range(max(0, i - 1)):
            history.popleft()
        if i == 0:
            first = history[0]
            return DisplayState(t=now, x=first.x, y=first.y, heading=first.heading, converged=False)
        if len(history) == 1:
            return self._starved(now, target)
        a, b = history[0], history[1]
        span = b.t - a.t
        f = (target - a.t) / span
        vx, vy = (b.x - a.x) / span, (b.y - a.y) / span
        return DisplayState(
            t=now,
            x=a.x + (b.x - a.x) * f,
            y=a.y + (b.y - a.y) * f,
            vx=vx,
            vy=vy,
            heading=blend_heading(a.heading, b.heading, f),
        )

    def _starved(self, now: float, target: float) -> DisplayState:
        last = self._history[-1]
        prev = self._previous
        if self.config.starve == "extrapolate" and prev is not None:
            span = last.t - prev.t
            vx, vy = (last.x - prev.x) / span, (last.y - prev.y) / span
            dt = target - last.t
            return DisplayState(
                t=now,
                x=last.x + vx * dt,
                y=last.y + vy * dt,
                vx=vx,
                vy=vy,
                heading=last.heading,
                converged=False,
            )
        return DisplayState(t=now, x=last.x, y=last.y, heading=last.heading, converged=False)
