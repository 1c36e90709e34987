"""An adaptive policy that picks the display model, thresholds and delay from the measured link.

Beyond the theses (issue 4): it turns their findings into rules over RTT, jitter, loss and a
per-entity payload budget, and returns a registry name plus parameters
(``lagless.smoothing.registry``). Rules, in order:

1. ``prefer_smoothness`` and the budget affords it: **interpolation** (spec 000 §4.6: near-perfect
   motion, largest error). ``update_interval = max(min_interval, 21 B / budget)``; ``delta_time =
   update_interval x (2 if loss > 0 else 1) + 2 x jitter`` (one lost update tolerated, §2.9).
2. RTT ≤ ``hermite_max_rtt``, loss ≤ ``loss_limit`` and the budget affords 20 Hz x 29 B: the
   **spec 004 Hermite buffer** with DR (constant acceleration for inert entities, ``inertia ≥
   0.5``), ``rtt_factor = 0.15`` (the spec 004 §6.2 winner) and ``render_delay = jitter``.
3. Otherwise **DIS-DR 1st order + linear convergence + capped TC**, the spec 000 §4.6 recommendation
   for every genre, scaled by ``inertia`` (0 agile … 1 inert): TC cap ``0.1 + 0.5·inertia`` s
   (arcade/shooter 100 ms … simulation 600 ms), position convergence ``0.1 + 0.2·inertia`` s,
   orientation 0.1 s. Above ``tc_off_rtt`` (850 ms, where the TC group degrades in §4.5) TC is off
   and convergence is snap (§4.4 "> 450 ms: DIS1 snap, no TC" for agile entities uses
   ``agile_snap_rtt``).
   Thresholds start strict (10 % of ``entity_size``, 1°) and, when the expected rate
   ``expected_update_rate x payload`` exceeds the budget, are loosened in proportion (the thesis
   measured ≈ 2x data for 1/1 vs 3/15, so rate ∝ 1/threshold), capped at ``max_threshold_scale``.

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
_DIS1_TC_SIZE: Final = 33  # bytes: DIS-DR 1st with TC (Abb. 3.13)
_DIS1_SIZE: Final = 25  # bytes: DIS-DR 1st without TC (Abb. 3.13)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkConditions:
    """Measured link state (from the transport's estimators)."""

    rtt: float
    """Smoothed round-trip time (s), ≥ 0."""
    jitter: float = 0.0
    """Jitter (s), ≥ 0."""
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


@dataclass(frozen=True, slots=True, kw_only=True)
class AdaptiveConfig:
    """Policy parameters."""

    budget: float
    """Payload budget per entity (bytes/s), > 0."""
    inertia: float = 0.5
    """0 = agile (arcade, shooter) … 1 = inert (simulation, vehicles)."""
    entity_size: float = 1.0
    """Entity length (m); thresholds are fractions of it (the thesis's 10-px entity)."""
    expected_update_rate: float = 5.0
    """DR updates per second at strict thresholds (Hz); spec 000 §3.7: seldom above 5/s."""
    prefer_smoothness: bool = False
    """Prefer interpolation (best motion, largest error) when the budget allows."""
    min_interval: float = 0.05
    """Shortest interpolation update interval (s)."""
    hermite_max_rtt: float = 0.2
    """Largest RTT (s) for the spec 004 Hermite buffer (tested at 80 and 160 ms)."""
    loss_limit: float = 0.02
    """Largest loss fraction for the delay-buffer models."""
    agile_snap_rtt: float = 0.45
    """RTT (s) above which agile entities (inertia < 0.5) use DIS1 snap without TC."""
    tc_off_rtt: float = 0.85
    """RTT (s) above which every entity uses DIS1 snap without TC."""
    max_threshold_scale: float = 10.0
    """Largest loosening factor of the strict thresholds."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        positive = ("budget", "entity_size", "expected_update_rate", "min_interval")
        for name in positive:
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ConfigError(f"{name} must be a finite number > 0, got {value}")
        if not 0 <= self.inertia <= 1:
            raise ConfigError(f"inertia must be in [0, 1], got {self.inertia}")
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


def choose_display_model(link: LinkConditions, config: AdaptiveConfig) -> ModelChoice:
    """Pick a display model for ``link`` within ``config.budget`` (module docstring rules).

    Args:
        link: Measured RTT, jitter and loss.
        config: Policy parameters.

    Returns:
        The choice.
    """
    interp_rate = INTERPOLATION_LAYOUT.size / config.min_interval
    if config.prefer_smoothness:
        interval = max(config.min_interval, INTERPOLATION_LAYOUT.size / config.budget)
        delta = interval * (2 if link.loss > 0 else 1) + 2 * link.jitter
        return ModelChoice(
            name="interpolation",
            params=MappingProxyType({"update_interval": interval, "delta_time": delta}),
            expected_rate=INTERPOLATION_LAYOUT.size / interval,
            reason=f"smoothness preferred; {min(interp_rate, config.budget):.0f} B/s",
        )
    hermite_rate = _HERMITE_RATE * HERMITE_LAYOUT.size
    if (
        link.rtt <= config.hermite_max_rtt
        and link.loss <= config.loss_limit
        and config.budget >= hermite_rate
    ):
        return ModelChoice(
            name="hermite",
            params=MappingProxyType(
                {
                    "update_interval": 1.0 / _HERMITE_RATE,
                    "rtt_factor": 0.15,
                    "render_delay": link.jitter,
                    "dr_order": 2 if config.inertia >= 0.5 else 1,
                }
            ),
            expected_rate=hermite_rate,
            reason="low RTT and loss: spec 004 DR + 0.15·RTT Hermite buffer",
        )
    agile = config.inertia < 0.5
    tc = not (link.rtt > config.tc_off_rtt or (agile and link.rtt > config.agile_snap_rtt))
    size = _DIS1_TC_SIZE if tc else _DIS1_SIZE
    strict_rate = config.expected_update_rate * size
    scale = min(config.max_threshold_scale, max(1.0, strict_rate / config.budget))
    params: dict[str, object] = {
        "time_compensation": tc,
        "position_threshold": 0.1 * config.entity_size * scale,
        "heading_threshold": math.radians(1.0) * scale,
        "heading_time": 0.1,
    }
    if tc:
        params["tc_cap"] = 0.1 + 0.5 * config.inertia
        params["convergence"] = "linear"
        params["position_time"] = 0.1 + 0.2 * config.inertia
        reason = "DIS-DR 1st + linear + capped TC (spec 000 §4.6)"
    else:
        params["convergence"] = "snap"
        reason = "high RTT: DIS-DR 1st, snap, no TC (spec 000 §4.4/§4.5)"
    return ModelChoice(
        name="dis1",
        params=MappingProxyType(params),
        expected_rate=strict_rate / scale,
        reason=reason,
    )


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
