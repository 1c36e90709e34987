"""Server-side lag compensation: verify a hit claim against the shooter's view (spec 000 §2.11).

Implements spec 000 §2.11 (Half-Life / Counter-Strike lag compensation, Bernier 2001) as the
cheat-proof hit evaluation of §5.2.4 and issue 13 #8, for instant-hit weapons. The server records
the hit shapes of every live entity each tick (``HitHistory``, at least 1 s); a ``HitClaim`` ("I
shot along this ray and hit B") is evaluated where the shooter saw the world: at its view time,
``server time - interpolation delay - RTT/2``, with the other entities moved back to where they
were then (interpolated between the recorded ticks, as the client's interpolating display drew
them). Impossible claims are rejected and counted by ``HitRejectReason``. Shapes are 2D circles and
axis-aligned boxes (``HitCircle``, ``HitBox``); units are metres and seconds (server time).

Decisions:
    * A claim may carry the view time the client stamped (its render time in synchronised server
      time); the server then tests exactly that instant, after checking it lies within
      ``time_tolerance`` of its own estimate ``now - interpolation_delay - rtt/2`` (else
      ``TIME_MISMATCH``: a cheater choosing a convenient past instant), is not in the future
      (``FROM_FUTURE``, beyond ``future_tolerance``) and is at most ``max_rewind`` old
      (``TOO_OLD``). Without a stamp the server tests its estimate clamped to ``max_rewind``, and
      every recorded tick within ``time_tolerance`` of it, accepting if any of them hits
      (``test_lagcomp.py::test_unstamped_claim_searches_the_window``).
    * Between two recorded ticks a shape is interpolated linearly (a client interpolating
      snapshots draws the same); an entity exists at an instant only if it is in both bracketing
      records (spawned or died in between: not there). Shapes are inflated by ``shape_margin``
      (m) against quantisation and lost snapshots.
    * The shooter must be alive at its fire time ``now - rtt/2`` (clamped to the newest record)
      (``SHOOTER_NOT_ALIVE``), and the ray must start within ``origin_tolerance`` of the shooter
      at the fire time or at the newest record (its inputs are applied on arrival)
      (``ORIGIN_MISMATCH``). A hit farther than ``weapon_range`` is ``OUT_OF_RANGE``; a target not
      in the history at any tested instant is ``TARGET_NOT_ALIVE``.
    * An instant after the newest record (a claim judged between ticks, or with no rewind at all)
      is tested at the newest record: the server's present
      (``test_lagcomp.py::test_no_rewind_tests_the_newest_record``).
    * Records are kept ``history`` seconds (default 1 s, Valve's ``sv_maxunlag``); records must
      come in increasing time.
"""

from __future__ import annotations

import bisect
import enum
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from lagless.errors import ConfigError, LocalProtocolError

__all__ = [
    "HitBox",
    "HitCircle",
    "HitClaim",
    "HitHistory",
    "HitRejectReason",
    "HitShape",
    "HitVerdict",
    "LagCompConfig",
    "LagCompensator",
    "interpolate_shape",
    "ray_distance",
]

_TIME_EPSILON: Final = 1e-9  # s: records closer than this count as the same instant


@dataclass(frozen=True, slots=True)
class HitCircle:
    """A hit circle: centre (m) and radius (m)."""

    x: float
    y: float
    radius: float


@dataclass(frozen=True, slots=True)
class HitBox:
    """An axis-aligned hit box: centre (m) and half extents (m)."""

    x: float
    y: float
    half_width: float
    half_height: float


HitShape = HitCircle | HitBox
"""A 2D hit shape."""


def interpolate_shape(a: HitShape, b: HitShape, fraction: float) -> HitShape:
    """Return the shape ``fraction`` of the way from ``a`` to ``b`` (linear in every field).

    Args:
        a: HitShape at fraction 0.
        b: HitShape at fraction 1; if its kind differs from ``a``'s, the nearer one is returned.
        fraction: In [0, 1].
    """
    if isinstance(a, HitCircle) and isinstance(b, HitCircle):
        return HitCircle(
            a.x + (b.x - a.x) * fraction,
            a.y + (b.y - a.y) * fraction,
            a.radius + (b.radius - a.radius) * fraction,
        )
    if isinstance(a, HitBox) and isinstance(b, HitBox):
        return HitBox(
            a.x + (b.x - a.x) * fraction,
            a.y + (b.y - a.y) * fraction,
            a.half_width + (b.half_width - a.half_width) * fraction,
            a.half_height + (b.half_height - a.half_height) * fraction,
        )
    return a if fraction < 0.5 else b


def ray_distance(
    shape: HitShape,
    origin: tuple[float, float],
    direction: tuple[float, float],
    margin: float = 0.0,
) -> float | None:
    """Return the distance along a ray to where it enters ``shape`` (0 if it starts inside).

    Args:
        shape: The hit shape.
        origin: Ray start (m).
        direction: Ray direction, any non-zero length.
        margin: Inflate the shape by this much (m).

    Returns:
        Distance (m) from ``origin``, or ``None`` if the ray misses.
    """
    ox, oy = origin
    length = math.hypot(*direction)
    dx, dy = direction[0] / length, direction[1] / length
    if isinstance(shape, HitCircle):
        cx, cy, r = shape.x - ox, shape.y - oy, shape.radius + margin
        along = cx * dx + cy * dy
        closest2 = cx * cx + cy * cy - along * along
        if closest2 > r * r:
            return None
        half = math.sqrt(r * r - closest2)
        if along + half < 0:
            return None
        return max(0.0, along - half)
    near, far = -math.inf, math.inf
    for o, d, c, h in ((ox, dx, shape.x, shape.half_width), (oy, dy, shape.y, shape.half_height)):
        lo, hi = c - h - margin, c + h + margin
        if d == 0.0:
            if not lo <= o <= hi:
                return None
            continue
        t1, t2 = (lo - o) / d, (hi - o) / d
        near, far = max(near, min(t1, t2)), min(far, max(t1, t2))
    if near > far or far < 0:
        return None
    return max(0.0, near)


def _centre(shape: HitShape) -> tuple[float, float]:
    return shape.x, shape.y


class HitHistory:
    """The hit shapes of every live entity per recorded tick, kept ``history`` seconds.

    Args:
        history: Seconds of records kept (> 0).
    """

    def __init__(self, history: float = 1.0) -> None:
        """Create an empty history."""
        if not (math.isfinite(history) and history > 0):
            raise ConfigError(f"history must be a finite number > 0 s, got {history!r}")
        self.history = history
        self._times: list[float] = []
        self._shapes: list[Mapping[int, HitShape]] = []

    @property
    def oldest(self) -> float | None:
        """Time of the oldest record (s), or ``None``."""
        return self._times[0] if self._times else None

    @property
    def newest(self) -> float | None:
        """Time of the newest record (s), or ``None``."""
        return self._times[-1] if self._times else None

    def record(self, time: float, shapes: Mapping[int, HitShape]) -> None:
        """Record the shapes of the live entities at ``time`` and forget records too old.

        Args:
            time: Server time of the tick (s), greater than the previous record's.
            shapes: Entity id to hit shape, live entities only.

        Raises:
            LocalProtocolError: ``time`` is not after the newest record.
        """
        if self._times and not time > self._times[-1]:
            raise LocalProtocolError(f"record time {time} is not after {self._times[-1]}")
        self._times.append(time)
        self._shapes.append(MappingProxyType(dict(shapes)))
        # keep one record older than the horizon so the horizon itself can be interpolated
        cut = bisect.bisect_left(self._times, time - self.history) - 1
        if cut > 0:
            del self._times[:cut]
            del self._shapes[:cut]

    def times_between(self, lo: float, hi: float) -> list[float]:
        """Return the record times in the open interval ``(lo, hi)`` (s)."""
        return self._times[
            bisect.bisect_right(self._times, lo) : bisect.bisect_left(self._times, hi)
        ]

    def shape_at(self, entity: int, time: float) -> HitShape | None:
        """Return ``entity``'s shape at ``time``, interpolated between the bracketing records.

        Args:
            entity: Entity id.
            time: Server time (s).

        Returns:
            The shape, or ``None`` if the entity is not in both bracketing records or ``time``
            lies outside the history.
        """
        times = self._times
        i = bisect.bisect_left(times, time - _TIME_EPSILON)
        if i == len(times):
            return None
        if abs(times[i] - time) <= _TIME_EPSILON:
            return self._shapes[i].get(entity)
        if i == 0:
            return None
        a, b = self._shapes[i - 1].get(entity), self._shapes[i].get(entity)
        if a is None or b is None:
            return None
        return interpolate_shape(a, b, (time - times[i - 1]) / (times[i] - times[i - 1]))


class HitRejectReason(enum.Enum):
    """Why a hit claim was rejected."""

    MALFORMED = "malformed"
    """Non-finite numbers, a zero direction or a self-hit."""
    FROM_FUTURE = "from_future"
    """The stamped view time is after the server's now."""
    TOO_OLD = "too_old"
    """The stamped view time is older than ``max_rewind``."""
    TIME_MISMATCH = "time_mismatch"
    """The stamped view time is not within ``time_tolerance`` of the server's estimate."""
    SHOOTER_NOT_ALIVE = "shooter_not_alive"
    """The shooter is not in the history at its fire time."""
    ORIGIN_MISMATCH = "origin_mismatch"
    """The ray does not start at the shooter."""
    TARGET_NOT_ALIVE = "target_not_alive"
    """The target is not in the history at any tested instant."""
    OUT_OF_RANGE = "out_of_range"
    """The ray hits the target beyond ``weapon_range``."""
    MISS = "miss"
    """The ray misses the target at every tested instant."""


@dataclass(frozen=True, slots=True)
class HitClaim:
    """A client's claim that its instant-hit shot hit ``target``."""

    shooter: int
    """Shooter entity id."""
    target: int
    """Target entity id."""
    origin: tuple[float, float]
    """Ray start (m)."""
    direction: tuple[float, float]
    """Ray direction (any non-zero length)."""
    view_time: float | None = None
    """The client's render time of the shot in synchronised server time (s), if stamped."""


@dataclass(frozen=True, slots=True)
class HitVerdict:
    """The server's decision on one claim."""

    accepted: bool
    """True if the hit stands."""
    reason: HitRejectReason | None
    """Why it was rejected, ``None`` if accepted."""
    time: float | None
    """The instant (server time, s) the hit was found at, ``None`` if rejected."""
    rewind: float | None
    """How far back that instant lies (s): ``now - time``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LagCompConfig:
    """Settings of the lag compensator (issue 13 #8)."""

    history: float = 1.0
    """Seconds of hit shapes kept (≥ ``max_rewind``)."""
    max_rewind: float = 1.0
    """Largest rewind (s) a claim may ask for (Valve's ``sv_maxunlag``)."""
    time_tolerance: float = 0.05
    """Allowed distance (s) between a stamped view time and the server's estimate; also the
    half-width of the window searched for an unstamped claim."""
    future_tolerance: float = 0.005
    """A stamped view time may be this much (s) after now (clock-sync error)."""
    origin_tolerance: float = 1.0
    """Largest distance (m) between the ray's start and the shooter's recorded centre."""
    weapon_range: float = 200.0
    """Longest hit (m)."""
    shape_margin: float = 0.05
    """Inflation (m) of every shape in the test."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        for name in (
            "history",
            "max_rewind",
            "time_tolerance",
            "future_tolerance",
            "origin_tolerance",
            "weapon_range",
            "shape_margin",
        ):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0, got {value!r}")
        if self.history <= 0 or self.max_rewind > self.history:
            raise ConfigError(
                f"history must be > 0 s and >= max_rewind ({self.max_rewind}), got {self.history}"
            )


class LagCompensator:
    """Records hit shapes each tick and judges hit claims at the shooter's view time.

    Args:
        config: Settings.
    """

    def __init__(self, config: LagCompConfig | None = None) -> None:
        """Create a compensator with an empty history."""
        self.config = config if config is not None else LagCompConfig()
        self.history = HitHistory(self.config.history)
        self._accepted = 0
        self._rejected: Counter[HitRejectReason] = Counter()

    def record(self, now: float, shapes: Mapping[int, HitShape]) -> None:
        """Record this tick's shapes of the live entities (``HitHistory.record``)."""
        self.history.record(now, shapes)

    def _reject(self, reason: HitRejectReason) -> HitVerdict:
        self._rejected[reason] += 1
        return HitVerdict(False, reason, None, None)

    def _times(self, claim: HitClaim, now: float, estimate: float) -> list[float] | HitRejectReason:
        cfg = self.config
        if claim.view_time is not None:
            if claim.view_time > now + cfg.future_tolerance:
                return HitRejectReason.FROM_FUTURE
            if now - claim.view_time > cfg.max_rewind:
                return HitRejectReason.TOO_OLD
            if abs(claim.view_time - estimate) > cfg.time_tolerance:
                return HitRejectReason.TIME_MISMATCH
            return [claim.view_time]
        centre = min(now, max(estimate, now - cfg.max_rewind))
        lo = max(centre - cfg.time_tolerance, now - cfg.max_rewind)
        hi = min(centre + cfg.time_tolerance, now)
        return [centre, lo, *self.history.times_between(lo, hi), hi]

    def evaluate(
        self, claim: HitClaim, now: float, *, rtt: float, interpolation_delay: float
    ) -> HitVerdict:
        """Judge ``claim`` at the shooter's view time; count the verdict.

        Args:
            claim: The claim.
            now: Server time of evaluation (s).
            rtt: The shooter's smoothed round-trip time (s).
            interpolation_delay: How far behind the server clock the shooter renders (s).

        Returns:
            The verdict.
        """
        cfg = self.config
        numbers = (*claim.origin, *claim.direction, rtt, interpolation_delay)
        if (
            not all(math.isfinite(v) for v in numbers)
            or (claim.view_time is not None and not math.isfinite(claim.view_time))
            or claim.direction == (0.0, 0.0)
            or claim.shooter == claim.target
        ):
            return self._reject(HitRejectReason.MALFORMED)
        newest = self.history.newest
        if newest is None:
            return self._reject(HitRejectReason.SHOOTER_NOT_ALIVE)
        fire = min(now - rtt / 2.0, newest)
        shooter = self.history.shape_at(claim.shooter, fire)
        if shooter is None:
            return self._reject(HitRejectReason.SHOOTER_NOT_ALIVE)
        latest = self.history.shape_at(claim.shooter, newest)
        distances = [math.dist(claim.origin, _centre(s)) for s in (shooter, latest) if s]
        if min(distances) > cfg.origin_tolerance:
            return self._reject(HitRejectReason.ORIGIN_MISMATCH)
        times = self._times(claim, now, now - interpolation_delay - rtt / 2.0)
        if isinstance(times, HitRejectReason):
            return self._reject(times)
        seen = far = False
        for t in (min(t, newest) for t in times):
            shape = self.history.shape_at(claim.target, t)
            if shape is None:
                continue
            seen = True
            distance = ray_distance(shape, claim.origin, claim.direction, cfg.shape_margin)
            if distance is None:
                continue
            if distance > cfg.weapon_range:
                far = True
                continue
            self._accepted += 1
            return HitVerdict(True, None, t, now - t)
        if not seen:
            return self._reject(HitRejectReason.TARGET_NOT_ALIVE)
        return self._reject(HitRejectReason.OUT_OF_RANGE if far else HitRejectReason.MISS)

    @property
    def accepted(self) -> int:
        """Claims accepted so far."""
        return self._accepted

    def rejected(self) -> Mapping[HitRejectReason, int]:
        """Return the rejected claims by reason."""
        return MappingProxyType(dict(self._rejected))
