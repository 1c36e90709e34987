"""The X4 PlayerController convergence: reach the extrapolated server track in half the horizon.

Implements spec 003 §4.3 (§7.3 of the thesis). On a new update (detected by value change), with
``T`` the estimated time until the next update: the server's current position is ``p + v·T``, the
target ``p + v·T + v·T/2``; the client moves at the corrective velocity
``(target - c(t0)) / (T/2)`` for ``T/2`` and then dead-reckons from the target with the server
velocity. Rotation is handled the same way with the angular velocity.

Payload (33 B): the DIS-DR 2nd layout without timestamp,
``id u8 | x y i32 | heading u32 | vx vy i32 | ax ay i32 | ω i32`` (``RemoteStartValue``,
``RemoteVel`` linear and angular, ``RemoteAcc``; units in ``lagless.smoothing.codec``).

Decisions:

* ``T`` (ZoidCom's ``getEstimatedTimeUntilPossibleUpdate``) is ``horizon`` when configured, else
  the running mean (EWMA, gain 1/8) of the intervals between applied updates, and
  ``default_horizon`` until two updates arrived. ``T = 0`` snaps to ``p`` and dead-reckons
  (``test_x4.py::test_zero_horizon_snaps``); so does the first update, which has no displayed
  state to correct.
* An update whose values equal the previous one is not new (the thesis detects updates by value
  change) and is counted as ``UNCHANGED`` (``test_x4.py::test_unchanged_not_new``).
* Backwards corrective motion (client ahead of the target) is not clamped, as in the thesis.
* ``dr_order = 2`` adds ``½·a·τ²`` after the corrective phase (``LastRemoteAcc``, stored but unused
  in the thesis code); the default 1 is the thesis's formula. Spec 003 §7.2 #15 is pinned by
  ``test_x4.py::test_worked_example``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError
from lagless.smoothing.base import DropReason, PeriodicSender, Receiver
from lagless.smoothing.codec import DecodedUpdate, ModelCode, UpdateLayout
from lagless.smoothing.state import DisplayState, KinematicState, angle_difference, wrap_angle

__all__ = ["X4_LAYOUT", "X4Config", "X4Path", "X4Receiver", "X4Sender"]

X4_LAYOUT: Final = UpdateLayout(
    velocity=True, acceleration=True, angular_velocity=True, timestamp=False
)
DEFAULT_X4_INTERVAL: Final = 0.1  # seconds: replication period (not given by the thesis)
_EWMA_GAIN: Final = 0.125  # weight of a new inter-arrival sample (RFC 6298's alpha)


@dataclass(frozen=True, slots=True, kw_only=True)
class X4Config:
    """The X4 PlayerController client prediction (spec 003 §4.3)."""

    update_interval: float = DEFAULT_X4_INTERVAL
    """Sender replication period (s), > 0."""
    horizon: float | None = None
    """Fixed ``T`` (s), ≥ 0; ``None`` estimates it from the arrivals."""
    default_horizon: float = DEFAULT_X4_INTERVAL
    """``T`` (s) before it can be estimated, ≥ 0."""
    dr_order: int = 1
    """Dead reckoning after the corrective phase: 1 (thesis) or 2 (with acceleration)."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not (math.isfinite(self.update_interval) and self.update_interval > 0):
            raise ConfigError(f"update_interval must be > 0 s, got {self.update_interval}")
        for name in ("horizon", "default_horizon"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0 s, got {value}")
        if self.dr_order not in (1, 2):
            raise ConfigError(f"dr_order must be 1 or 2, got {self.dr_order}")

    @property
    def payload_size(self) -> int:
        """Return the update payload size (bytes): 33."""
        return X4_LAYOUT.size


@dataclass(frozen=True, slots=True)
class X4Path:
    """The corrective-then-dead-reckoned path started by one update (local time).

    Args:
        t0: Local time the update was applied (s).
        start: Displayed state at ``t0``.
        server: The decoded update.
        horizon: ``T`` (s).
        dr_order: 1 or 2.
    """

    t0: float
    start: DisplayState
    server: KinematicState
    horizon: float
    dr_order: int

    @property
    def target(self) -> tuple[float, float, float]:
        """Return the target ``(x m, y m, heading rad)``: the server track at ``1.5·T``."""
        s, k = self.server, 1.5 * self.horizon
        return s.x + s.vx * k, s.y + s.vy * k, wrap_angle(s.heading + s.angular_velocity * k)

    def at(self, t: float) -> DisplayState:
        """Return the displayed state at local time ``t`` (s)."""
        s, half = self.server, self.horizon / 2
        tx, ty, th = self.target
        dt = t - self.t0
        if half > 0 and dt < half:
            c = self.start
            vx, vy = (tx - c.x) / half, (ty - c.y) / half
            omega = angle_difference(th, c.heading) / half
            return DisplayState(
                t=t,
                x=c.x + vx * dt,
                y=c.y + vy * dt,
                vx=vx,
                vy=vy,
                heading=wrap_angle(c.heading + omega * dt),
                converged=False,
            )
        tau = dt - half
        ax, ay = (s.ax, s.ay) if self.dr_order == 2 else (0.0, 0.0)
        return DisplayState(
            t=t,
            x=tx + s.vx * tau + 0.5 * ax * tau * tau,
            y=ty + s.vy * tau + 0.5 * ay * tau * tau,
            vx=s.vx + ax * tau,
            vy=s.vy + ay * tau,
            ax=ax,
            ay=ay,
            heading=wrap_angle(th + s.angular_velocity * tau),
        )


class X4Sender(PeriodicSender):
    """Replicates the full state every ``update_interval`` (ZoidCom-style fixed rate).

    Args:
        config: The model configuration.
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: X4Config, *, entity_id: int = 0) -> None:
        """Create a sender whose first update is due at once."""
        super().__init__(
            entity_id=entity_id,
            model=ModelCode.X4,
            layout=X4_LAYOUT,
            time_compensation=False,
            interval=config.update_interval,
        )
        self.config = config


class X4Receiver(Receiver):
    """Spec 003 §4.3 client prediction: corrective velocity for ``T/2``, then dead reckoning.

    Args:
        config: The model configuration.
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: X4Config, *, entity_id: int = 0) -> None:
        """Create a receiver with nothing received."""
        super().__init__(
            entity_id=entity_id, model=ModelCode.X4, layout=X4_LAYOUT, time_compensation=False
        )
        self.config = config
        self._last: KinematicState | None = None
        self._last_arrival: float | None = None
        self._interval: float | None = None
        self._path: X4Path | None = None

    @property
    def horizon(self) -> float:
        """Return the current ``T`` (s)."""
        if self.config.horizon is not None:
            return self.config.horizon
        return self.config.default_horizon if self._interval is None else self._interval

    def _apply(
        self, decoded: DecodedUpdate, now: float, server_time_now: float
    ) -> DropReason | None:
        state = KinematicState(
            x=decoded.state.x,
            y=decoded.state.y,
            vx=decoded.state.vx,
            vy=decoded.state.vy,
            ax=decoded.state.ax,
            ay=decoded.state.ay,
            heading=decoded.state.heading,
            angular_velocity=decoded.state.angular_velocity,
        )
        if state == self._last:
            return DropReason.UNCHANGED
        if self._last_arrival is not None:
            gap = max(0.0, now - self._last_arrival)
            self._interval = (
                gap
                if self._interval is None
                else self._interval + _EWMA_GAIN * (gap - self._interval)
            )
        self._last, self._last_arrival = state, now
        current = self.display(now)
        horizon = self.horizon if current is not None else 0.0
        start = current
        if start is None or horizon <= 0:
            start = DisplayState(t=now, x=state.x, y=state.y, heading=state.heading)
        self._path = X4Path(now, start, state, horizon, self.config.dr_order)
        return None

    def display(self, now: float) -> DisplayState | None:
        """Return where to draw the entity at local time ``now`` (s), or ``None`` before data."""
        return None if self._path is None else self._path.at(now)
