"""Render-delay Hermite buffer with dead reckoning and the 8-step correction of spec 004 §5.2.

Implements spec 004 §5.2: the client keeps a time-ordered node list ``(t, p, v, heading)`` in
server time and draws each car at ``render_time = server_now - render_delay`` on the cubic Hermite
spline through the nodes, with velocities as tangents (§5.2.1). On every state update it runs
the 8-step algorithm (§5.2.3): drop stale updates, evaluate the old curve at ``t(P3)`` (P5),
replace the old extrapolated node P2 by P5, blend P5 into P3 over ``correction_time``, and append
the extrapolated node P4 = DR(P3, ``extrapolation_time``) with constant velocity (Gl. 3.2) or
constant acceleration (Gl. 3.3) (§5.2.2). ``render_delay`` is a constant or ``k x RTT``.

Payload (29 B): ``id u8 | x i32 | y i32 | heading u32 | vx i32 | vy i32 | t i64`` (units in
``lagless.smoothing.codec``): spec 004 §5.1.1's position, velocity and orientation plus the
timestamp every spec-004 message carries.

Decisions (spec 004 §5.2.3 "not specified"):

* P5 carries the old curve's velocity at ``t(P3)`` as well as its position, so the visible curve is
  unchanged until the blend moves it (``test_hermite.py::test_p5_keeps_curve_velocity``).
* Stale means ``t(P3) ≤ t`` of the newest real update (duplicates too)
  (``test_hermite.py::test_eight_step_stale_dropped``).
* Steps 4-6 run only when the tail is an extrapolated node; with ``extrapolation_time = 0`` the
  update is appended (the plain interpolation list, §5.2.3 note) (``test_hermite.py::test_no_dr``).
* The blend is linear in position, velocity and heading; blends started by earlier updates keep
  running to their end independently (``test_hermite.py::test_eight_step_correction``).
* The acceleration for Gl. 3.3 is the finite difference of the last two real updates' velocities
  (§5.2.2 inference); with one update it is 0.
* Past the last node (or before the first) the car holds, as observed in §6.1.2; P4's heading is
  P3's (no angular velocity on the wire); headings are interpolated linearly along the shorter arc.
* ``render_delay + rtt_factor x rtt``: constant delay with ``rtt_factor = 0``, ``k·RTT`` with
  ``render_delay = 0``; the RTT comes from ``observe_link`` (0 until observed).
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError
from lagless.smoothing.base import DropReason, PeriodicSender, Receiver
from lagless.smoothing.codec import DecodedUpdate, ModelCode, UpdateLayout
from lagless.smoothing.convergence import hermite
from lagless.smoothing.state import DisplayState, KinematicState, blend_heading

__all__ = [
    "HERMITE_LAYOUT",
    "HermiteConfig",
    "HermiteNode",
    "HermiteReceiver",
    "HermiteSender",
]

HERMITE_LAYOUT: Final = UpdateLayout(
    velocity=True, acceleration=False, angular_velocity=False, timestamp=True
)
DEFAULT_SNAPSHOT_INTERVAL: Final = 0.05  # seconds: 20 Hz server snapshots (spec 004 §5.1.1)
DEFAULT_EXTRAPOLATION_TIME: Final = 1.0  # seconds: the thesis's example (spec 004 §5.2.2)
DEFAULT_CORRECTION_TIME: Final = 0.1  # seconds: not given by the thesis (spec 004 §8.2)


@dataclass(frozen=True, slots=True, kw_only=True)
class HermiteConfig:
    """The spec 004 §5.2 synchronisation mechanism."""

    update_interval: float = DEFAULT_SNAPSHOT_INTERVAL
    """Sender snapshot period (s), > 0."""
    render_delay: float = 0.0
    """Constant part of the render delay (s), ≥ 0."""
    rtt_factor: float = 0.15
    """``k`` of the ``k x RTT`` delay part, ≥ 0 (0.15 won in spec 004 §6.2)."""
    extrapolation_time: float = DEFAULT_EXTRAPOLATION_TIME
    """How far P4 lies beyond P3 (s), ≥ 0; 0 disables dead reckoning."""
    dr_order: int = 2
    """1 = constant velocity (Gl. 3.2), 2 = constant acceleration (Gl. 3.3)."""
    correction_time: float = DEFAULT_CORRECTION_TIME
    """Blend period P5 → P3 (s), ≥ 0 (``deadReckoningInterpolationTime``)."""
    max_nodes: int = 64
    """Most nodes kept, ≥ 3 (oldest dropped)."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not (math.isfinite(self.update_interval) and self.update_interval > 0):
            raise ConfigError(f"update_interval must be > 0 s, got {self.update_interval}")
        for name in ("render_delay", "rtt_factor", "extrapolation_time", "correction_time"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0, got {value}")
        if self.dr_order not in (1, 2):
            raise ConfigError(f"dr_order must be 1 or 2, got {self.dr_order}")
        if self.max_nodes < 3:
            raise ConfigError(f"max_nodes must be >= 3, got {self.max_nodes}")

    @property
    def payload_size(self) -> int:
        """Return the update payload size (bytes): 29."""
        return HERMITE_LAYOUT.size


class HermiteNode:
    """One spline node; its values may be blending towards a target (step 6).

    Args:
        t: Node time (s, server time).
        values: ``(x, y, vx, vy, heading)`` in m, m/s, rad.
        predicted: True for an extrapolated node (P4).
    """

    __slots__ = ("_blend", "predicted", "t", "values")

    def __init__(
        self, t: float, values: tuple[float, float, float, float, float], *, predicted: bool
    ) -> None:
        """Create a node with fixed values."""
        self.t = t
        self.values = values
        self.predicted = predicted
        self._blend: tuple[float, float, tuple[float, float, float, float, float]] | None = None

    def blend_to(
        self, target: tuple[float, float, float, float, float], start: float, duration: float
    ) -> None:
        """Start moving this node's values to ``target`` from local time ``start`` (s)."""
        self._blend = (start, duration, target)

    def at(self, now: float) -> tuple[float, float, float, float, float]:
        """Return the node's values at local time ``now`` (s), finishing a completed blend."""
        blend = self._blend
        if blend is None:
            return self.values
        start, duration, target = blend
        f = 1.0 if duration <= 0 else (now - start) / duration
        if f >= 1.0:
            self.values, self._blend = target, None
            return target
        f = max(0.0, f)
        x0, y0, vx0, vy0, h0 = self.values
        x1, y1, vx1, vy1, h1 = target
        return (
            x0 + (x1 - x0) * f,
            y0 + (y1 - y0) * f,
            vx0 + (vx1 - vx0) * f,
            vy0 + (vy1 - vy0) * f,
            blend_heading(h0, h1, f),
        )

    @property
    def blending(self) -> bool:
        """Return True while a correction blend is running."""
        return self._blend is not None


class HermiteSender(PeriodicSender):
    """Sends position, velocity, orientation and timestamp every ``update_interval`` (20 Hz).

    Args:
        config: The model configuration.
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: HermiteConfig, *, entity_id: int = 0) -> None:
        """Create a sender whose first update is due at once."""
        super().__init__(
            entity_id=entity_id,
            model=ModelCode.HERMITE,
            layout=HERMITE_LAYOUT,
            time_compensation=True,
            interval=config.update_interval,
        )
        self.config = config


class HermiteReceiver(Receiver):
    """Render-delay Hermite spline with DR nodes and the 8-step correction (spec 004 §5.2).

    Args:
        config: The model configuration.
        entity_id: Entity id (0..255).
    """

    def __init__(self, config: HermiteConfig, *, entity_id: int = 0) -> None:
        """Create a receiver with an empty node list."""
        super().__init__(
            entity_id=entity_id,
            model=ModelCode.HERMITE,
            layout=HERMITE_LAYOUT,
            time_compensation=True,
        )
        self.config = config
        self._nodes: list[HermiteNode] = []
        self._offset = 0.0
        self._last_real: KinematicState | None = None

    @property
    def nodes(self) -> tuple[HermiteNode, ...]:
        """Return the node list, oldest first."""
        return tuple(self._nodes)

    @property
    def render_delay(self) -> float:
        """Return the current render delay (s): ``render_delay + rtt_factor x rtt``."""
        return self.config.render_delay + self.config.rtt_factor * (self.rtt or 0.0)

    def curve(self, t: float, now: float) -> DisplayState:
        """Evaluate the spline at server time ``t`` (s) with node values at local ``now`` (s).

        Args:
            t: Server time on the curve (s).
            now: Local time (s) for blending nodes.

        Returns:
            The state on the curve (``t`` field = ``now``); holds before the first and after the
            last node with zero velocity.
        """
        nodes = self._nodes
        times = [n.t for n in nodes]
        i = bisect.bisect_right(times, t)
        if i == 0 or i == len(nodes):
            x, y, _, _, h = nodes[0 if i == 0 else -1].at(now)
            return DisplayState(t=now, x=x, y=y, heading=h, converged=False)
        a, b = nodes[i - 1], nodes[i]
        xa, ya, vxa, vya, ha = a.at(now)
        xb, yb, vxb, vyb, hb = b.at(now)
        delta = b.t - a.t
        s = (t - a.t) / delta
        x, vx = hermite(s, delta, xa, vxa, xb, vxb)
        y, vy = hermite(s, delta, ya, vya, yb, vyb)
        converged = not (a.blending or b.blending)
        return DisplayState(
            t=now, x=x, y=y, vx=vx, vy=vy, heading=blend_heading(ha, hb, s), converged=converged
        )

    def _apply(
        self, decoded: DecodedUpdate, now: float, server_time_now: float
    ) -> DropReason | None:
        cfg = self.config
        p3 = decoded.state  # step 1
        last = self._last_real
        if last is not None and p3.t <= last.t:  # step 3 (P1 = newest real update)
            return DropReason.STALE
        self._offset = server_time_now - now
        ax = ay = 0.0
        if cfg.dr_order == 2 and last is not None:
            span = p3.t - last.t
            ax, ay = (p3.vx - last.vx) / span, (p3.vy - last.vy) / span
        self._last_real = p3
        target = (p3.x, p3.y, p3.vx, p3.vy, p3.heading)
        nodes = self._nodes
        if nodes and nodes[-1].predicted and cfg.correction_time > 0:  # steps 2, 4, 5, 6
            p5 = self.curve(p3.t, now)
            nodes.pop()
            node = HermiteNode(p3.t, (p5.x, p5.y, p5.vx, p5.vy, p5.heading), predicted=False)
            node.blend_to(target, now, cfg.correction_time)
            nodes.append(node)
        else:
            if nodes and nodes[-1].predicted:
                nodes.pop()
            nodes.append(HermiteNode(p3.t, target, predicted=False))
        if cfg.extrapolation_time > 0:  # steps 7, 8
            e = cfg.extrapolation_time
            p4 = (
                p3.x + p3.vx * e + 0.5 * ax * e * e,
                p3.y + p3.vy * e + 0.5 * ay * e * e,
                p3.vx + ax * e,
                p3.vy + ay * e,
                p3.heading,
            )
            nodes.append(HermiteNode(p3.t + e, p4, predicted=True))
        del nodes[: max(0, len(nodes) - cfg.max_nodes)]
        return None

    def display(self, now: float) -> DisplayState | None:
        """Return the car at ``render_time = server_now - render_delay`` (s), or ``None``."""
        nodes = self._nodes
        if not nodes:
            return None
        render = now + self._offset - self.render_delay
        while len(nodes) >= 2 and nodes[1].t <= render:
            nodes[0].at(now)
            del nodes[0]
        return self.curve(render, now)
