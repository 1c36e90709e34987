"""When a dead-reckoning sender sends: ghost thresholds, heartbeat and pre-reckoning triggers.

Implements spec 000 §2.7 "Principle" (sender ghost, send when |true - ghost| exceeds a
threshold), "Threshold choice" (fixed position and orientation thresholds; the sensitive-region
variant of Cai et al. with a laxer threshold outside the region) and "Pre-reckoning" (start, stop,
turn over an angle threshold ≈ 80°), plus a heartbeat (spec 003 §4.4: "or after a heartbeat
timeout").

Decisions:

* "Exceeds" is strict: an error exactly equal to the threshold does not send
  (``test_thresholds.py::test_position_threshold_is_strict``,
  ``test_thresholds.py::test_heading_threshold_is_strict``).
* The heartbeat fires when ``now - last_send ≥ heartbeat`` (``test_thresholds.py::test_heartbeat``).
* Pre-reckoning compares the current true velocity with the previous *frame's* true velocity, as
  the spec words it ("the previous and current velocity vectors"); an entity is "moving" when its
  speed exceeds ``moving_speed`` (``test_thresholds.py::test_prereckoning_start_stop_turn``).
* With the sensitive region configured, the caller passes the distance to the nearest observer;
  an unknown distance uses the strict (inside) thresholds
  (``test_thresholds.py::test_sensitive_region``).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError
from lagless.smoothing.state import KinematicState, angle_difference

__all__ = ["ThresholdConfig", "ThresholdTrigger", "TriggerReason"]

DEFAULT_POSITION_THRESHOLD: Final = 0.1  # metres: 1 px = 10 % of the 10-px entity (spec 000 §2.7)
DEFAULT_HEADING_THRESHOLD: Final = math.radians(1.0)  # radians: the 1° recommendation (spec 000 §4)
DEFAULT_TURN_ANGLE: Final = math.radians(80.0)  # radians: pre-reckoning angle (spec 000 §2.7)
DEFAULT_MOVING_SPEED: Final = 1e-3  # m/s: below this an entity counts as stationary


class TriggerReason(enum.Enum):
    """Why a sender sent an update."""

    FIRST = "first"
    """No update was sent before."""
    POSITION = "position"
    """|true position - ghost position| exceeded the position threshold."""
    HEADING = "heading"
    """|true heading - ghost heading| exceeded the orientation threshold."""
    HEARTBEAT = "heartbeat"
    """Nothing was sent for ``heartbeat`` seconds."""
    START = "start"
    """Pre-reckoning: a stationary entity started moving."""
    STOP = "stop"
    """Pre-reckoning: a moving entity stopped."""
    TURN = "turn"
    """Pre-reckoning: the direction changed by more than ``turn_angle`` in one frame."""
    PERIODIC = "periodic"
    """A fixed-rate model's send interval elapsed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ThresholdConfig:
    """Send rules of a threshold-driven (dead-reckoning) sender, spec 000 §2.7."""

    position: float = DEFAULT_POSITION_THRESHOLD
    """Position threshold (m); > 0."""
    heading: float = DEFAULT_HEADING_THRESHOLD
    """Orientation threshold (rad); > 0. Use π for "irrelevant" (direct steering)."""
    heartbeat: float | None = None
    """Send at least this often (s); ``None`` disables the heartbeat."""
    prereckoning: bool = False
    """Enable the start / stop / turn triggers."""
    turn_angle: float = DEFAULT_TURN_ANGLE
    """Pre-reckoning direction-change threshold (rad), in (0, π]."""
    moving_speed: float = DEFAULT_MOVING_SPEED
    """Speed (m/s) above which the entity counts as moving, for start/stop; ≥ 0."""
    sensitive_radius: float | None = None
    """Sensitive-region radius (m) of Cai et al.; ``None`` means fixed thresholds."""
    far_position: float | None = None
    """Position threshold outside the sensitive region (m); laxer than ``position``."""
    far_heading: float | None = None
    """Orientation threshold outside the sensitive region (rad)."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not self.position > 0:
            raise ConfigError(f"position threshold must be > 0 m, got {self.position}")
        if not self.heading > 0:
            raise ConfigError(f"heading threshold must be > 0 rad, got {self.heading}")
        if self.heartbeat is not None and not self.heartbeat > 0:
            raise ConfigError(f"heartbeat must be > 0 s or None, got {self.heartbeat}")
        if not 0 < self.turn_angle <= math.pi:
            raise ConfigError(f"turn_angle must be in (0, π] rad, got {self.turn_angle}")
        if not self.moving_speed >= 0:
            raise ConfigError(f"moving_speed must be >= 0 m/s, got {self.moving_speed}")
        if self.sensitive_radius is not None and not self.sensitive_radius > 0:
            raise ConfigError(
                f"sensitive_radius must be > 0 m or None, got {self.sensitive_radius}"
            )
        if self.far_position is not None and not self.far_position >= self.position:
            raise ConfigError(
                f"far_position must be >= position ({self.position} m), got {self.far_position}"
            )
        if self.far_heading is not None and not self.far_heading >= self.heading:
            raise ConfigError(
                f"far_heading must be >= heading ({self.heading} rad), got {self.far_heading}"
            )

    def limits(self, observer_distance: float | None) -> tuple[float, float]:
        """Return the (position m, heading rad) thresholds for an observer distance.

        Args:
            observer_distance: Distance (m) to the nearest observer, or ``None`` if unknown.

        Returns:
            The far thresholds outside the sensitive region, the strict ones otherwise.
        """
        if (
            self.sensitive_radius is None
            or observer_distance is None
            or observer_distance <= self.sensitive_radius
        ):
            return self.position, self.heading
        far_pos = self.position if self.far_position is None else self.far_position
        far_head = self.heading if self.far_heading is None else self.far_heading
        return far_pos, far_head


class ThresholdTrigger:
    """Decides, once per frame, whether the true state has drifted too far from the ghost.

    Args:
        config: The send rules.
    """

    def __init__(self, config: ThresholdConfig) -> None:
        """Create a trigger that has never sent."""
        self._config = config
        self._last_send: float | None = None
        self._previous: KinematicState | None = None

    @property
    def config(self) -> ThresholdConfig:
        """Return the send rules."""
        return self._config

    def check(
        self,
        now: float,
        state: KinematicState,
        ghost: KinematicState | None,
        *,
        observer_distance: float | None = None,
    ) -> TriggerReason | None:
        """Return why an update must be sent now, or ``None``; ``state`` becomes the previous frame.

        Args:
            now: Local time (s).
            state: The true state this frame.
            ghost: The sender's dead-reckoned ghost at ``state.t``; ``None`` before the first send.
            observer_distance: Distance (m) to the nearest observer for the sensitive region.

        Returns:
            The first reason that applies (first, pre-reckoning, position, heading, heartbeat).
        """
        previous, self._previous = self._previous, state
        cfg = self._config
        if ghost is None or self._last_send is None:
            return TriggerReason.FIRST
        if cfg.prereckoning and previous is not None:
            reason = self._prereckoning(previous, state)
            if reason is not None:
                return reason
        limit_pos, limit_head = cfg.limits(observer_distance)
        if math.hypot(state.x - ghost.x, state.y - ghost.y) > limit_pos:
            return TriggerReason.POSITION
        if abs(angle_difference(state.heading, ghost.heading)) > limit_head:
            return TriggerReason.HEADING
        if cfg.heartbeat is not None and now - self._last_send >= cfg.heartbeat:
            return TriggerReason.HEARTBEAT
        return None

    def _prereckoning(
        self, previous: KinematicState, state: KinematicState
    ) -> TriggerReason | None:
        cfg = self._config
        was_moving = previous.speed > cfg.moving_speed
        is_moving = state.speed > cfg.moving_speed
        if is_moving and not was_moving:
            return TriggerReason.START
        if was_moving and not is_moving:
            return TriggerReason.STOP
        if was_moving and is_moving:
            turn = abs(
                angle_difference(
                    math.atan2(state.vy, state.vx), math.atan2(previous.vy, previous.vx)
                )
            )
            if turn > cfg.turn_angle:
                return TriggerReason.TURN
        return None

    def sent(self, now: float) -> None:
        """Record that an update was sent at ``now`` (s)."""
        self._last_send = now
