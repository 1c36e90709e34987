"""DIS dead reckoning of order 0, 1 and 2: threshold-driven sender ghost, converging receiver.

Implements spec 000 §2.7 (DR models, sender ghost, time compensation with a cap, convergence),
§3.5 (DIS-DR 1st / 2nd display models and their Abb. 3.13 payloads) and spec 004 §3.1.2 (Gl.
3.1-3.3).

Payloads (``lagless.smoothing.codec`` has the field table)::

    order 0: id u8 | x i32 | y i32 | heading u32 [| t i64]                         13 / 21 B
    order 1: id u8 | x y i32 | heading u32 | vx vy i32 | ω i32 [| t i64]           25 / 33 B
    order 2: id u8 | x y i32 | heading u32 | vx vy i32 | ax ay i32 | ω i32 [| t]   33 / 41 B

(without / with time compensation, Abb. 3.13.)

Decisions:

* The ghost is dead-reckoned from the *quantised* sent state, so it is exactly what a receiver
  without latency shows (``test_dis.py::test_ghost_matches_receiver``).
* The order-0 payload has no velocity fields (an extension; Abb. 3.13 has no order-0 column).
* ``rotate=False`` holds the heading at the last update's (spec 000 §2.7 advice for direct
  steering); the angular velocity is still sent (``test_dis.py::test_rotate_off_holds_heading``).
* TC, staleness and the cap: see ``lagless.smoothing.base``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from lagless.errors import ConfigError
from lagless.smoothing.base import (
    DropReason,
    Receiver,
    ThresholdSender,
    check_time_compensation,
    compensated_age,
)
from lagless.smoothing.codec import DecodedUpdate, ModelCode, UpdateLayout
from lagless.smoothing.convergence import ConvergenceConfig, create_convergence
from lagless.smoothing.state import DR_ORDERS, DisplayState, KinematicState, extrapolate
from lagless.smoothing.thresholds import ThresholdConfig

__all__ = ["DeadReckoningTrack", "DisConfig", "DisReceiver", "DisSender", "dis_layout"]

_CODES = {0: ModelCode.DIS0, 1: ModelCode.DIS1, 2: ModelCode.DIS2}


def dis_layout(order: int, *, time_compensation: bool) -> UpdateLayout:
    """Return the Abb. 3.13 update layout of DIS-DR of ``order``.

    Args:
        order: 0, 1 or 2.
        time_compensation: Add the i64 timestamp.

    Returns:
        The layout (sizes 13/21, 25/33, 33/41 bytes).
    """
    return UpdateLayout(
        velocity=order >= 1,
        acceleration=order == 2,
        angular_velocity=order >= 1,
        timestamp=time_compensation,
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DisConfig:
    """A DIS dead-reckoning display model (spec 000 §2.7, §3.5)."""

    order: int = 1
    """DR order: 0, 1 or 2."""
    time_compensation: bool = False
    """Timestamp updates and extrapolate from the send time (adds 8 bytes)."""
    tc_cap: float | None = None
    """Largest compensated age (s); ``None`` = uncapped (thesis runs used 0.1-0.6 s)."""
    rotate: bool = True
    """Extrapolate the heading with the angular velocity; False holds the last heading."""
    thresholds: ThresholdConfig = field(default_factory=ThresholdConfig)
    """Sender rules: ghost thresholds, heartbeat, pre-reckoning."""
    convergence: ConvergenceConfig = field(default_factory=ConvergenceConfig)
    """Receiver convergence path."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: ``order`` or ``tc_cap`` is out of range.
        """
        if self.order not in DR_ORDERS:
            raise ConfigError(f"order must be one of {DR_ORDERS}, got {self.order}")
        check_time_compensation(self.tc_cap)

    @property
    def payload_size(self) -> int:
        """Return the update payload size (bytes)."""
        return dis_layout(self.order, time_compensation=self.time_compensation).size


@dataclass(frozen=True, slots=True)
class DeadReckoningTrack:
    """The DR path of one update, in local time (a ``Trajectory``).

    Args:
        reference: The decoded update.
        anchor: Local time (s) at which ``reference`` held (receipt minus compensated age).
        order: DR order.
        rotate: Extrapolate the heading.
    """

    reference: KinematicState
    anchor: float
    order: int
    rotate: bool

    def at(self, t: float) -> DisplayState:
        """Return the dead-reckoned state at local time ``t`` (s)."""
        s = extrapolate(self.reference, t - self.anchor, order=self.order, rotate=self.rotate)
        return DisplayState(
            t=t, x=s.x, y=s.y, vx=s.vx, vy=s.vy, ax=s.ax, ay=s.ay, heading=s.heading
        )


class DisSender(ThresholdSender):
    """DIS-DR sender: runs the ghost and sends when a threshold or trigger fires.

    Args:
        config: The model configuration.
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: DisConfig, *, entity_id: int = 0) -> None:
        """Create a sender that has sent nothing."""
        layout = dis_layout(config.order, time_compensation=config.time_compensation)
        super().__init__(
            entity_id=entity_id,
            model=_CODES[config.order],
            layout=layout,
            time_compensation=config.time_compensation,
            thresholds=config.thresholds,
        )
        self.config = config
        self._ghost: KinematicState | None = None

    def ghost(self, t: float) -> KinematicState | None:
        """Return the ghost (what receivers approximately show) at sample time ``t`` (s)."""
        if self._ghost is None:
            return None
        return extrapolate(
            self._ghost, t - self._ghost.t, order=self.config.order, rotate=self.config.rotate
        )

    def _ghost_state(self, t: float) -> KinematicState | None:
        return self.ghost(t)

    def _record(self, sent: KinematicState) -> None:
        self._ghost = sent


class DisReceiver(Receiver):
    """DIS-DR receiver: dead-reckons the newest update and converges onto it.

    Args:
        config: The model configuration (must equal the sender's).
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: DisConfig, *, entity_id: int = 0) -> None:
        """Create a receiver with nothing received."""
        layout = dis_layout(config.order, time_compensation=config.time_compensation)
        super().__init__(
            entity_id=entity_id,
            model=_CODES[config.order],
            layout=layout,
            time_compensation=config.time_compensation,
        )
        self.config = config
        self._convergence = create_convergence(config.convergence)
        self._newest = -math.inf
        self._track: DeadReckoningTrack | None = None

    @property
    def track(self) -> DeadReckoningTrack | None:
        """Return the DR track of the newest update, or ``None``."""
        return self._track

    def _apply(
        self, decoded: DecodedUpdate, now: float, server_time_now: float
    ) -> DropReason | None:
        cfg = self.config
        if decoded.timestamped and cfg.time_compensation:
            if decoded.state.t <= self._newest:
                return DropReason.STALE
            self._newest = decoded.state.t
        age = compensated_age(
            decoded.state.t,
            server_time_now,
            time_compensation=cfg.time_compensation,
            cap=cfg.tc_cap,
        )
        current = self.display(now)
        self._track = DeadReckoningTrack(
            reference=decoded.state, anchor=now - age, order=cfg.order, rotate=cfg.rotate
        )
        self._convergence.begin(now, current, self._track)
        return None

    def display(self, now: float) -> DisplayState | None:
        """Return where to draw the entity at local time ``now`` (s), or ``None`` before data."""
        return self._convergence.sample(now)
