"""The thesis's display-model configurations, network conditions and results per genre.

Implements the configuration space of spec 000 §3.5/§3.6 (DIS-DR 1st/2nd and PHB-DR x snap/linear
x time compensation with a cap x thresholds "a px / b°"; interpolation with ``Deltazeit`` and
``Updateintervall``), the network settings of §3.7 and the recommended configurations with their
result tables of §4.2-§4.5, plus spec 004 §6.0's ten test configurations on the car.

Decisions:
    * Thresholds "3/15" and "1/1" are 3 px / 15° and 1 px / 1° with ``PX_PER_M`` = 10 px per m.
      The sports recommendation's orientation threshold "irrelevant, < 45°" is 45°
      (``test_configs.py::test_recommended_configs``).
    * Sweep runs with TC are uncapped ("TC" in Fig. 3.14-3.42); the recommended configurations use
      their stated caps. Convergence times in the sweeps are the genre's recommended ones (sports
      100 ms, simulation 300/100 ms, shooter 125 ms, arcade 100/1 ms).
    * Interpolation: update interval 250 ms and ``delta_time = latency + 300 ms`` (spec 000 §2.9:
      "delta = latency + 300 ms", i.e. 300 ms beyond the transport delay on the synchronised
      clock) (``test_configs.py::test_interpolation_delta_follows_latency``).
    * Network conditions as the thesis simulated them (§3.7, one client-to-client link): UMTS
      340 ms, 7 % jitter, 1 % loss; GPRS 800 ms (the text's value; Table 2.2 says RTT 916 ms), 15 %,
      5 %. ``l100`` (100 ms, 10 %, 0.5 %) is ours, a good 3G/4G path for the adaptive experiment.
    * PHB-DR always sends its timestamp; "TC" for PHB only switches the receiver's compensation.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError
from lagless.lab.realtime.simulator import simulator_link
from lagless.netsim import LinkConfig
from lagless.smoothing import DisplayModel, create_display_model
from lagless.world import PX_PER_M

__all__ = [
    "CAR_CONFIGS",
    "CONDITIONS",
    "GENRE_SETUPS",
    "INTERPOLATION_INTERVAL",
    "INTERPOLATION_MARGIN",
    "CarConfigSpec",
    "Condition",
    "GenreSetup",
    "ModelConfig",
    "sweep_models",
    "tuning_grid",
]

INTERPOLATION_INTERVAL: Final = 0.25  # seconds: the thesis's Updateintervall (spec 000 §2.9)
INTERPOLATION_MARGIN: Final = 0.3  # seconds: Deltazeit = latency + 300 ms (spec 000 §2.9)
THRESHOLDS: Final = ((3.0, 15.0), (1.0, 1.0))  # (px, degrees): the thesis's "3/15" and "1/1"


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelConfig:
    """One Realtime Simulator display-model configuration (spec 000 §3.5, §3.6 second page)."""

    model: str
    """Registry name: ``dis1``, ``dis2``, ``phb``, ``interpolation`` or ``hermite``."""
    convergence: str = "linear"
    """Convergence kind for DIS models (``snap``, ``linear``, ``quadratic``, ``cubic``, ``pvb``)."""
    threshold_px: float = 1.0
    """Position threshold, px (10 px = 1 m)."""
    threshold_deg: float = 1.0
    """Orientation threshold, degrees."""
    time_compensation: bool = False
    """Time compensation on."""
    tc_cap: float | None = None
    """TC cap, s; ``None`` = uncapped."""
    position_time: float = 0.1
    """Position convergence time, s."""
    heading_time: float = 0.1
    """Orientation convergence time, s."""
    rtt_factor: float = 0.0
    """Hermite only: render delay part ``k x RTT``."""
    render_delay: float = 0.0
    """Hermite only: constant render delay, s."""

    def __post_init__(self) -> None:
        """Check the model name; the display model validates the rest when created."""
        if self.model not in ("dis1", "dis2", "phb", "interpolation", "hermite"):
            raise ConfigError(
                f"model must be one of dis1, dis2, phb, interpolation, hermite, got {self.model!r}"
            )

    @property
    def uses_thresholds(self) -> bool:
        """True for the threshold-driven (dead-reckoning) models."""
        return self.model in ("dis1", "dis2", "phb")

    @property
    def threshold(self) -> str | None:
        """The thesis's "a/b" threshold notation (px / degrees), or ``None``."""
        if not self.uses_thresholds:
            return None
        return f"{self.threshold_px:g}/{self.threshold_deg:g}"

    @property
    def convergence_name(self) -> str:
        """The convergence column: the kind for DIS, ``adaptive`` (PHB), ``linear`` (interp.)."""
        if self.model == "phb":
            return "adaptive"
        if self.model == "interpolation":
            return "linear"
        if self.model == "hermite":
            return "hermite"
        return self.convergence

    @property
    def tc_cap_ms(self) -> float | None:
        """The TC cap in ms; ``None`` without TC or uncapped."""
        if not self.time_compensation or self.tc_cap is None:
            return None
        return round(self.tc_cap * 1000.0, 3)

    @property
    def label(self) -> str:
        """A short unique name, e.g. ``dis1-linear-tc200-1/1`` or ``interpolation``."""
        if self.model == "interpolation":
            return "interpolation"
        if self.model == "hermite":
            return f"hermite-{self.render_delay * 1000:g}ms+{self.rtt_factor:g}rtt"
        parts = [self.model]
        if self.model != "phb":
            parts.append(self.convergence)
            if self.convergence != "snap":
                parts[-1] += f"{self.position_time * 1000:g}"
        if self.time_compensation:
            parts.append("tc" if self.tc_cap is None else f"tc{self.tc_cap * 1000:g}")
        parts.append(f"{self.threshold_px:g}/{self.threshold_deg:g}")
        return "-".join(parts)

    def create(self, *, latency: float) -> DisplayModel:
        """Return the configured display model for a run at ``latency`` (s).

        Args:
            latency: The run's minimum client-to-client delay, s (sets interpolation's
                ``delta_time = latency + INTERPOLATION_MARGIN``).

        Returns:
            The display model.
        """
        if self.model == "interpolation":
            return create_display_model(
                "interpolation",
                update_interval=INTERPOLATION_INTERVAL,
                delta_time=latency + INTERPOLATION_MARGIN,
            )
        if self.model == "hermite":
            return create_display_model(
                "hermite", render_delay=self.render_delay, rtt_factor=self.rtt_factor
            )
        thresholds = {
            "position_threshold": self.threshold_px / PX_PER_M,
            "heading_threshold": math.radians(self.threshold_deg),
        }
        tc = {"time_compensation": self.time_compensation, "tc_cap": self.tc_cap}
        times = {"position_time": self.position_time, "heading_time": self.heading_time}
        if self.model == "phb":
            return create_display_model("phb", **thresholds, **tc, **times)
        return create_display_model(
            self.model, convergence=self.convergence, **thresholds, **tc, **times
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """A network condition of the Realtime Simulator (spec 000 §3.7)."""

    name: str
    """Profile name (``umts``, ``gprs``, ``l100``)."""
    latency: float
    """Minimum client-to-client delay, s."""
    jitter: float
    """Jitter as a fraction of the latency."""
    loss: float
    """Loss probability per update."""

    def link(self) -> LinkConfig:
        """Return the simulator link of this condition."""
        return simulator_link(latency=self.latency, jitter=self.jitter, loss=self.loss)

    @property
    def mean_latency(self) -> float:
        """Mean delay, s: latency x (1 + jitter / 2)."""
        return self.latency * (1.0 + self.jitter / 2.0)


CONDITIONS: Final[Mapping[str, Condition]] = types.MappingProxyType(
    {
        "l100": Condition(name="l100", latency=0.1, jitter=0.10, loss=0.005),
        "umts": Condition(name="umts", latency=0.34, jitter=0.07, loss=0.01),
        "gprs": Condition(name="gprs", latency=0.8, jitter=0.15, loss=0.05),
    }
)
"""The network conditions by name (spec 000 §3.7; ``l100`` is ours)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GenreSetup:
    """One genre's preset, recording, convergence times and the thesis's recommendations."""

    genre: str
    """Preset and recording name."""
    position_time: float
    """Position convergence time of the genre's sweeps, s."""
    heading_time: float
    """Orientation convergence time, s."""
    recommended: Mapping[str, ModelConfig]
    """The thesis's recommended configuration per profile name."""
    thesis_models: Mapping[str, ModelConfig]
    """Further configurations the thesis tabulates under real conditions, by short name."""


def _dis1_tc(cap: float, pos: float, head: float, *, head_thr: float = 1.0) -> ModelConfig:
    return ModelConfig(
        model="dis1",
        convergence="linear",
        threshold_px=1.0,
        threshold_deg=head_thr,
        time_compensation=True,
        tc_cap=cap,
        position_time=pos,
        heading_time=head,
    )


def _dis(order: int, conv: str, tc_cap: float | None, pos: float, head: float) -> ModelConfig:
    return ModelConfig(
        model=f"dis{order}",
        convergence=conv,
        time_compensation=tc_cap is not None,
        tc_cap=tc_cap,
        position_time=pos,
        heading_time=head,
    )


GENRE_SETUPS: Final[Mapping[str, GenreSetup]] = types.MappingProxyType(
    {
        "sports": GenreSetup(
            genre="sports",
            position_time=0.1,
            heading_time=0.1,
            recommended={"umts": _dis1_tc(0.2, 0.1, 0.1, head_thr=45.0)},
            thesis_models={},
        ),
        "simulation": GenreSetup(
            genre="simulation",
            position_time=0.3,
            heading_time=0.1,
            recommended={
                "umts": _dis1_tc(0.4, 0.3, 0.1),
                "gprs": _dis1_tc(0.6, 0.25, 0.25),
            },
            thesis_models={},
        ),
        "shooter": GenreSetup(
            genre="shooter",
            position_time=0.125,
            heading_time=0.125,
            recommended={"umts": _dis1_tc(0.1, 0.125, 0.125)},
            thesis_models={
                "model1": _dis(2, "linear", None, 0.125, 0.125),
                "model2": _dis(2, "linear", 0.1, 0.125, 0.125),
                "model3": _dis1_tc(0.1, 0.125, 0.125),
            },
        ),
        "arcade": GenreSetup(
            genre="arcade",
            position_time=0.1,
            heading_time=0.001,
            recommended={"umts": _dis1_tc(0.1, 0.1, 0.001)},
            thesis_models={
                "dis2_notc": _dis(2, "linear", None, 0.1, 0.001),
                "dis1_tc100": _dis1_tc(0.1, 0.1, 0.001),
            },
        ),
    }
)
"""Per genre: convergence times and the thesis's configurations (spec 000 §4.2-§4.5)."""


def sweep_models(setup: GenreSetup) -> list[ModelConfig]:
    """Return the latency-sweep configurations of a genre (spec 000 §4.2-§4.5).

    DIS-DR 1st and 2nd x snap/linear x TC off/uncapped x thresholds 3/15 and 1/1; PHB-DR x TC
    off/on x both thresholds; interpolation. 21 configurations.

    Args:
        setup: The genre.

    Returns:
        The configurations, in a fixed order.
    """
    models: list[ModelConfig] = []
    for order in (1, 2):
        for conv in ("snap", "linear"):
            for tc in (False, True):
                for px, deg in THRESHOLDS:
                    models.append(
                        ModelConfig(
                            model=f"dis{order}",
                            convergence=conv,
                            threshold_px=px,
                            threshold_deg=deg,
                            time_compensation=tc,
                            position_time=setup.position_time,
                            heading_time=setup.heading_time,
                        )
                    )
    for tc in (False, True):
        for px, deg in THRESHOLDS:
            models.append(
                ModelConfig(
                    model="phb",
                    threshold_px=px,
                    threshold_deg=deg,
                    time_compensation=tc,
                    position_time=setup.position_time,
                    heading_time=setup.heading_time,
                )
            )
    models.append(ModelConfig(model="interpolation"))
    return models


def tuning_grid(setup: GenreSetup) -> list[ModelConfig]:
    """Return the wider grid searched for the best configuration under real conditions.

    DIS-DR 1st/2nd at 1/1 x {snap, linear, cubic, pvb} x TC {off, 100, 200, 400, 600 ms,
    uncapped} x position convergence {genre time, 250 ms} (snap once), and the spec 004 Hermite
    buffer with DR at ``0.15 x RTT``.

    Args:
        setup: The genre.

    Returns:
        The configurations, in a fixed order, without duplicates.
    """
    grid: dict[str, ModelConfig] = {}
    caps: tuple[float | None, ...] = (0.1, 0.2, 0.4, 0.6, None)
    for order in (1, 2):
        for conv in ("snap", "linear", "cubic", "pvb"):
            times = (setup.position_time,) if conv == "snap" else (setup.position_time, 0.25)
            for pos in times:
                for tc in (False, True):
                    for cap in caps if tc else (None,):
                        cfg = ModelConfig(
                            model=f"dis{order}",
                            convergence=conv,
                            time_compensation=tc,
                            tc_cap=cap,
                            position_time=pos,
                            heading_time=setup.heading_time,
                        )
                        grid.setdefault(cfg.label, cfg)
    hermite = ModelConfig(model="hermite", rtt_factor=0.15)
    grid[hermite.label] = hermite
    return list(grid.values())


@dataclass(frozen=True, slots=True, kw_only=True)
class CarConfigSpec:
    """One of spec 004 §6.0's ten test configurations, as Hermite-buffer parameters."""

    name: str
    """The ``config`` column: ``snap``, ``delay100``, ..., ``dr-a+rtt0.3``."""
    test: int
    """The thesis's test number (appendix A.5 folder ``test-N``)."""
    render_delay: float
    """Constant render delay, s."""
    rtt_factor: float
    """Render delay part ``k x RTT``."""
    dr_order: int
    """0 = no extrapolation, 1 = V = const (Gl. 3.2), 2 = A = const (Gl. 3.3)."""

    def create(self, *, extrapolation_time: float, correction_time: float) -> DisplayModel:
        """Return the Hermite display model of this configuration.

        Args:
            extrapolation_time: How far P4 lies beyond P3 when DR is on, s.
            correction_time: Blend period P5 -> P3, s.

        Returns:
            The display model.
        """
        return create_display_model(
            "hermite",
            render_delay=self.render_delay,
            rtt_factor=self.rtt_factor,
            extrapolation_time=extrapolation_time if self.dr_order else 0.0,
            dr_order=max(1, self.dr_order),
            correction_time=correction_time,
        )


CAR_CONFIGS: Final = (
    CarConfigSpec(name="snap", test=1, render_delay=0.0, rtt_factor=0.0, dr_order=0),
    CarConfigSpec(name="delay100", test=2, render_delay=0.1, rtt_factor=0.0, dr_order=0),
    CarConfigSpec(name="delay150", test=3, render_delay=0.15, rtt_factor=0.0, dr_order=0),
    CarConfigSpec(name="delay200", test=4, render_delay=0.2, rtt_factor=0.0, dr_order=0),
    CarConfigSpec(name="rtt0.5", test=5, render_delay=0.0, rtt_factor=0.5, dr_order=0),
    CarConfigSpec(name="rtt0.75", test=6, render_delay=0.0, rtt_factor=0.75, dr_order=0),
    CarConfigSpec(name="dr-v", test=7, render_delay=0.0, rtt_factor=0.0, dr_order=1),
    CarConfigSpec(name="dr-a", test=8, render_delay=0.0, rtt_factor=0.0, dr_order=2),
    CarConfigSpec(name="dr-a+rtt0.15", test=9, render_delay=0.0, rtt_factor=0.15, dr_order=2),
    CarConfigSpec(name="dr-a+rtt0.3", test=10, render_delay=0.0, rtt_factor=0.3, dr_order=2),
)
"""Spec 004 §6.0's test-1 ... test-10, in order."""
