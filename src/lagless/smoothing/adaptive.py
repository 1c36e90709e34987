"""An adaptive policy that picks the display model, thresholds and delay from the measured link.

Beyond the theses (issue 4): rules over the round-trip time, jitter, loss, a per-entity payload
budget and the entity's motion time constant (``lagless.world.Preset.time_constant``: how long a
velocity persists), fitted to the ``realtime/*`` genre sweeps (spec 000 §4) and checked on
recordings not used for the fitting (``realtime/adaptive``, column ``heldout_*``). It returns a
registry name plus parameters (``lagless.smoothing.registry``). With ``d = rtt / 2`` the one-way
delay and ``tau`` the time constant, rules in order:

1. ``prefer_smoothness`` and the budget affords it: **interpolation** (spec 000 §4.6: near-perfect
   motion, largest error). ``update_interval = max(min_interval, 21 B / budget)``; ``delta_time =
   update_interval x (2 if loss > 0 else 1) + 2 x jitter`` (one lost update tolerated, §2.9).
2. An agile or medium entity (``tau < inert_time_constant``) on a short path (``d <=
   hermite_max_delay``, loss ≤ ``loss_limit``) with a budget for 20 Hz x 29 B: the **spec 004
   Hermite buffer** (``rtt_factor = 0.15``, the §6.2 winner; constant-acceleration DR;
   ``render_delay = jitter``). DIS-DR cannot follow such entities within a frame or two of delay
   without jumps; the buffer's fixed rate costs more bytes but halves the error.
3. Otherwise **DIS-DR with capped time compensation** and 1 px / 1° thresholds:

   * inert (``tau >= inert_time_constant``, simulation): 2nd order, projective velocity blending,
     TC cap ``max(0.4 s, 0.7·d)`` (the whole delay is worth extrapolating), convergence 0.175 s
     up to ``short_delay``, 0.25 s below ``long_delay``, 0.5 s beyond;
   * medium (``agile_time_constant <= tau``, sports): 2nd order, linear convergence, TC cap
     0.1 s (an acceleration is trusted for a short horizon only), convergence 0.25 s up to
     ``short_delay``, else 0.5 s;
   * agile (``tau < agile_time_constant``, shooter, arcade): 1st order, linear convergence; up to
     ``short_delay`` full compensation (cap ``max(0.2 s, d + 2·jitter)``) and 0.175 s
     convergence, beyond it the thesis's agile setting (cap 0.1 s, 0.125 s convergence, spec
     000 §4.4-§4.5), which no fixed configuration beat at UMTS and GPRS.

   When the expected rate ``expected_update_rate x payload`` exceeds the budget the thresholds
   are loosened in proportion (the thesis measured ≈ 2x data for 1/1 vs 3/15, so rate ∝
   1/threshold), capped at ``max_threshold_scale``.

Decision: ``LinkConditions.rtt`` is the round-trip time, as the transport measures it; the rules
use the one-way delay ``rtt / 2`` (``test_adaptive.py::test_rtt_is_round_trip``).

``AdaptivePolicy`` adds hysteresis: a different model is adopted only after ``hold`` consecutive
decisions agree on it (new parameters of the same model are adopted at once)
(``test_adaptive.py::test_hysteresis``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

from lagless.errors import ConfigError
from lagless.smoothing.dis import dis_layout
from lagless.smoothing.hermite import HERMITE_LAYOUT
from lagless.smoothing.interpolation import INTERPOLATION_LAYOUT
from lagless.smoothing.registry import DisplayModel, create_display_model

__all__ = [
    "AdaptiveConfig",
    "AdaptivePolicy",
    "LinkConditions",
    "ModelChoice",
    "choose_display_model",
]

_HERMITE_RATE: Final = 20.0  # Hz: spec 004 §5.1.1 snapshot rate
_HERMITE_RTT_FACTOR: Final = 0.15  # render delay part k x RTT: the spec 004 §6.2 winner
_STRICT_POSITION: Final = 0.1  # fraction of entity_size: the thesis's 1 px of a 10 px entity
_STRICT_HEADING: Final = math.radians(1.0)  # radians: the thesis's 1°
_HEADING_TIME: Final = 0.1  # seconds: orientation convergence (spec 000 §4.6)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkConditions:
    """Measured link state (from the transport's estimators)."""

    rtt: float
    """Smoothed round-trip time (s), ≥ 0; the policy's one-way delay is ``rtt / 2``."""
    jitter: float = 0.0
    """Jitter of the one-way delay (s), ≥ 0."""
    loss: float = 0.0
    """Loss fraction in [0, 1]."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not (math.isfinite(self.rtt) and self.rtt >= 0):
            raise ConfigError(f"rtt must be a finite number >= 0 s, got {self.rtt}")
        if not (math.isfinite(self.jitter) and self.jitter >= 0):
            raise ConfigError(f"jitter must be a finite number >= 0 s, got {self.jitter}")
        if not 0 <= self.loss <= 1:
            raise ConfigError(f"loss must be in [0, 1], got {self.loss}")

    @property
    def delay(self) -> float:
        """One-way delay (s): half the round-trip time."""
        return self.rtt / 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class AdaptiveConfig:
    """Policy parameters (module docstring: what each rule does with them)."""

    budget: float
    """Payload budget per entity (bytes/s), > 0."""
    time_constant: float = 0.33
    """The entity's motion time constant (s), > 0: ``Preset.time_constant`` (1 / drag); arcade
    0.025, shooter 0.125, sports 0.33, simulation 2."""
    entity_size: float = 1.0
    """Entity length (m); thresholds are fractions of it (the thesis's 10-px entity)."""
    expected_update_rate: float = 5.0
    """DR updates per second at strict thresholds (Hz); spec 000 §3.7: seldom above 5/s."""
    prefer_smoothness: bool = False
    """Prefer interpolation (best motion, largest error) when the budget allows."""
    min_interval: float = 0.05
    """Shortest interpolation update interval (s)."""
    agile_time_constant: float = 0.2
    """Time constant (s) below which an entity is agile (1st-order DR)."""
    inert_time_constant: float = 1.0
    """Time constant (s) from which an entity is inert (2nd-order DR, long TC)."""
    hermite_max_delay: float = 0.15
    """Largest one-way delay (s) for the spec 004 Hermite buffer (tested at 40 and 80 ms)."""
    loss_limit: float = 0.02
    """Largest loss fraction for the delay-buffer models."""
    short_delay: float = 0.2
    """One-way delay (s) up to which convergence is short and agile TC compensates fully."""
    long_delay: float = 0.6
    """One-way delay (s) from which inert entities converge in 0.5 s."""
    max_threshold_scale: float = 10.0
    """Largest loosening factor of the strict thresholds."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        positive = (
            "budget",
            "time_constant",
            "entity_size",
            "expected_update_rate",
            "min_interval",
            "agile_time_constant",
            "inert_time_constant",
        )
        for name in positive:
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a finite number > 0, got {value}")
        for name in ("hermite_max_delay", "short_delay", "long_delay"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be a finite number >= 0 s, got {value}")
        if not self.agile_time_constant <= self.inert_time_constant:
            raise ConfigError(
                "agile_time_constant must be <= inert_time_constant, got "
                f"{self.agile_time_constant} > {self.inert_time_constant}"
            )
        if not 0 <= self.loss_limit <= 1:
            raise ConfigError(f"loss_limit must be in [0, 1], got {self.loss_limit}")
        if not self.max_threshold_scale >= 1:
            raise ConfigError(f"max_threshold_scale must be >= 1, got {self.max_threshold_scale}")


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelChoice:
    """A display model picked by the policy."""

    name: str
    """Registry name."""
    params: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))
    """Parameters for ``create_display_model``."""
    expected_rate: float
    """Expected payload rate (bytes/s)."""
    reason: str
    """Which rule chose it (one line)."""

    def create(self) -> DisplayModel:
        """Return the configured display model."""
        return create_display_model(self.name, **dict(self.params))


def _interpolation(link: LinkConditions, config: AdaptiveConfig) -> ModelChoice:
    interval = max(config.min_interval, INTERPOLATION_LAYOUT.size / config.budget)
    delta = interval * (2 if link.loss > 0 else 1) + 2 * link.jitter
    rate = INTERPOLATION_LAYOUT.size / interval
    return ModelChoice(
        name="interpolation",
        params=MappingProxyType({"update_interval": interval, "delta_time": delta}),
        expected_rate=rate,
        reason=f"smoothness preferred; {rate:.0f} B/s",
    )


def _dis(link: LinkConditions, config: AdaptiveConfig) -> ModelChoice:
    d, tau = link.delay, config.time_constant
    long = d >= config.long_delay
    short = d <= config.short_delay
    if tau >= config.inert_time_constant:
        order, kind, cap, reason = 2, "pvb", max(0.4, 0.7 * d), "inert"
        position_time = 0.175 if short else (0.5 if long else 0.25)
    elif tau >= config.agile_time_constant:
        order, kind, cap, reason = 2, "linear", 0.1, "medium"
        position_time = 0.25 if short else 0.5
    else:
        order, kind, reason = 1, "linear", "agile"
        cap = max(0.2, d + 2.0 * link.jitter) if short else 0.1
        position_time = 0.175 if short else 0.125
    size = dis_layout(order, time_compensation=True).size
    strict_rate = config.expected_update_rate * size
    scale = min(config.max_threshold_scale, max(1.0, strict_rate / config.budget))
    params = {
        "convergence": kind,
        "position_time": position_time,
        "heading_time": _HEADING_TIME,
        "time_compensation": True,
        "tc_cap": cap,
        "position_threshold": _STRICT_POSITION * config.entity_size * scale,
        "heading_threshold": _STRICT_HEADING * scale,
    }
    return ModelChoice(
        name=f"dis{order}",
        params=MappingProxyType(params),
        expected_rate=strict_rate / scale,
        reason=(
            f"{reason} entity at {d * 1000:.0f} ms: DIS-DR {order}, {kind} "
            f"{position_time * 1000:.0f} ms, TC cap {cap * 1000:.0f} ms"
        ),
    )


def choose_display_model(link: LinkConditions, config: AdaptiveConfig) -> ModelChoice:
    """Pick a display model for ``link`` within ``config.budget`` (module docstring rules).

    Args:
        link: Measured round-trip time, jitter and loss.
        config: Policy parameters.

    Returns:
        The choice.
    """
    if config.prefer_smoothness:
        return _interpolation(link, config)
    hermite_rate = _HERMITE_RATE * HERMITE_LAYOUT.size
    if (
        1.0 / _HERMITE_RATE <= config.time_constant < config.inert_time_constant
        and link.delay <= config.hermite_max_delay
        and link.loss <= config.loss_limit
        and config.budget >= hermite_rate
    ):
        return ModelChoice(
            name="hermite",
            params=MappingProxyType(
                {
                    "update_interval": 1.0 / _HERMITE_RATE,
                    "rtt_factor": _HERMITE_RTT_FACTOR,
                    "render_delay": link.jitter,
                    "dr_order": 2,
                }
            ),
            expected_rate=hermite_rate,
            reason="short path, agile entity: spec 004 DR + 0.15·RTT Hermite buffer",
        )
    return _dis(link, config)


class AdaptivePolicy:
    """``choose_display_model`` with hysteresis, fed with link estimates over time.

    Args:
        config: Policy parameters.
        hold: Consecutive agreeing decisions needed before switching, ≥ 1.
    """

    def __init__(self, config: AdaptiveConfig, *, hold: int = 3) -> None:
        """Create a policy with no choice yet."""
        if hold < 1:
            raise ConfigError(f"hold must be >= 1, got {hold}")
        self.config = config
        self._hold = hold
        self._current: ModelChoice | None = None
        self._candidate: ModelChoice | None = None
        self._votes = 0

    @property
    def current(self) -> ModelChoice | None:
        """Return the adopted choice, or ``None`` before the first observation."""
        return self._current

    def observe(self, link: LinkConditions) -> ModelChoice:
        """Take a link estimate; return the (possibly unchanged) adopted choice.

        Args:
            link: Measured RTT, jitter and loss.

        Returns:
            The adopted choice; it changes only after ``hold`` agreeing decisions.
        """
        choice = choose_display_model(link, self.config)
        if self._current is None:
            self._current = choice
            return choice
        if choice.name == self._current.name:
            # Same model: adopt its new parameters at once (they vary continuously).
            self._current, self._candidate, self._votes = choice, None, 0
            return choice
        if self._candidate is not None and self._candidate.name == choice.name:
            self._votes += 1
        else:
            self._candidate, self._votes = choice, 1
        if self._votes >= self._hold:
            self._current, self._candidate, self._votes = choice, None, 0
        return self._current
