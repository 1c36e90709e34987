"""The four genre presets of the Realtime Simulator, calibrated in SI units (spec 000 §3.6, §7).

Implements spec 000 §3.6 "Presets" (Sportsgame, Simulation, 3D-Action, Arcade-Action) with the
anchors of §4.1-§4.5, and resolves the §7 ambiguity "Preset numbers: acceleration, drag, break
force, top speed and screen size are not given (Fig. 3.9 only)".

Scale: ``PX_PER_M`` = 10, so the thesis's 10 px reference triangle (§4.1) is ``ENTITY_LENGTH`` =
1 m and a pixel error in the thesis's tables is a decimetre here. A 240x320 px phone screen is
24 m x 32 m. Convert with ``to_px``/``from_px`` at the edges only.

Model (``lagless.world.kinematics``): ``a = A·u - k·v - b·v̂``, so top speed ``A/k``, time constant
``1/k``, and a 180° reversal from full speed in direct steering reaches 90 % of full speed the other
way after ``ln(20)/k`` (``Preset.reversal_time``).

Calibration (each number is pinned by ``tests/world/test_presets.py``; tau = 1/k, "rev." = the
direct 180° reversal time ln(20)/k, last column = turn speed):

| preset     | model     | top m/s (px/s) | A m/s² | k 1/s | tau s | rev. s | brake m/s² | °/s  |
|------------|-----------|----------------|--------|-------|-------|--------|------------|------|
| sports     | direct    | 5 (50)         | 14.98  | 2.996 | 0.33  | 1.00   | 0          | snap |
| simulation | thrust    | 8 (80)         | 4      | 0.5   | 2.0   | 5.99   | 0          | 90   |
| shooter    | 3d-action | 4 (40)         | 32     | 8     | 0.125 | 0.37   | 0          | 180  |
| arcade     | direct    | 6 (60)         | 240    | 40    | 0.025 | 0.075  | 240, 17 ms | snap |

Anchors, per preset:
    * sports: §4.2 "a 180° reversal from full run takes ~1 s", so k = ln 20 (1.00 s); §4.2
      interpolation error 22 px at a 700 ms render delay implies >= 31 px/s average speed.
    * simulation: §3.6 "high inertia, long acceleration phases, no auto-brake", 90°/s (half of
      3D-Action, §4.4); tau = 2 s, so acceleration phases last seconds and the entity "leaves the
      screen" (§4.7). UMTS DR errors of 5-10 px with full time compensation fit turning at 90°/s.
    * shooter: §4.4 180°/s and "very low inertia, even lower than Sports" (reversal 0.37 s); the
      UMTS error without TC, 10.65 px at 340 ms, implies ~31 px/s average speed.
    * arcade: §4.5 "extremely fast, no inertia, instant reversal, auto-brake": tau = 25 ms (less
      than one 40 ms frame), reversal in 2 frames, auto-brake = acceleration stops from top speed
      in ln(2)/k = 17 ms; the UMTS maximum error 26 px ~ 2·v·latency at 340 ms gives 40-60 px/s.

Decisions:
    * Top speeds come from the thesis's error/latency ratios (a straight-line DR error without time
      compensation is ``v·latency``): they give 30-45 px/s average speeds for the agile genres;
      Arcade is set fastest of the agile presets because §4.5 calls it "extremely fast".
    * Direct presets have ``turn_speed`` 0: direct steering snaps the heading (§3.6 "turn speed ...
      used only by Thrust/3D-Action").
    * Arcade's auto-brake equals its acceleration, so it stops from full speed within one frame.
    * ``FRAME_TIME`` is the thesis's ≈ 40 ms game loop (25 fps, spec 000 §7).
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError
from lagless.world.kinematics import terminal_speed
from lagless.world.steering import SteeringModel

__all__ = [
    "ENTITY_LENGTH",
    "FRAME_TIME",
    "PRESETS",
    "PX_PER_M",
    "Preset",
    "from_px",
    "get_preset",
    "to_px",
]

PX_PER_M: Final = 10.0  # pixels per metre: the thesis's 10 px entity is 1 m long
ENTITY_LENGTH: Final = 1.0  # metres: the 10 px reference triangle of spec 000 §4.1
FRAME_TIME: Final = 0.04  # seconds: the thesis's game loop (≈ 25 fps, spec 000 §7)
_REVERSAL_FRACTION: Final = 0.9  # reversal "done" at 90 % of full speed the other way


def to_px(metres: float) -> float:
    """Convert metres (or m/s, m/s²) to thesis pixels with ``PX_PER_M``.

    Args:
        metres: A length in metres.

    Returns:
        The same length in pixels.

    Example:
        >>> to_px(0.45)
        4.5
    """
    return metres * PX_PER_M


def from_px(pixels: float) -> float:
    """Convert thesis pixels (or px/s, px/s²) to metres with ``PX_PER_M``.

    Args:
        pixels: A length in pixels.

    Returns:
        The same length in metres.

    Example:
        >>> from_px(10.0)
        1.0
    """
    return pixels / PX_PER_M


def _finite(name: str, value: float, *, positive: bool) -> None:
    if not math.isfinite(value) or value < 0.0 or (positive and value == 0.0):
        bound = "> 0" if positive else ">= 0"
        raise ConfigError(f"{name} must be a finite number {bound}, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """A steering model plus the entity's motion parameters (spec 000 §3.4 "Entity", §3.6)."""

    name: str
    """Lowercase identifier, e.g. ``"sports"``."""
    model: SteeringModel
    """Steering model used by the local entity."""
    acceleration: float
    """Maximum linear acceleration while a direction is held, m/s² (``acceleration``)."""
    drag: float
    """Linear drag coefficient ``k`` > 0, 1/s (``drag``); it sets the top speed ``A/k``."""
    brake_force: float = 0.0
    """Automatic braking deceleration while not thrusting, m/s² (``break force`` [sic])."""
    turn_speed: float = 0.0
    """Turn rate while a turn key is held, rad/s (``turn speed``; unused by direct steering)."""
    description: str = ""
    """One line on the genre the preset models."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        if not self.name or self.name != self.name.lower():
            raise ConfigError(f"name must be a non-empty lowercase string, got {self.name!r}")
        model: object = self.model  # typed callers cannot get this wrong; untyped ones can
        if not isinstance(model, SteeringModel):
            allowed = ", ".join(m.value for m in SteeringModel)
            raise ConfigError(f"model must be one of {allowed}, got {self.model!r}")
        _finite("acceleration", self.acceleration, positive=True)
        _finite("drag", self.drag, positive=True)
        _finite("brake_force", self.brake_force, positive=False)
        _finite("turn_speed", self.turn_speed, positive=False)

    @property
    def max_speed(self) -> float:
        """Top speed where thrust and drag balance, m/s."""
        return terminal_speed(self.acceleration, self.drag)

    @property
    def time_constant(self) -> float:
        """Inertia: ``1/k``, the time to reach 63 % of top speed from rest, s."""
        return 1.0 / self.drag

    @property
    def reversal_time(self) -> float:
        """Time for a direct 180° reversal from full speed to 90 % of full speed back, s."""
        return math.log(2.0 / (1.0 - _REVERSAL_FRACTION)) / self.drag


def _preset(
    name: str,
    model: SteeringModel,
    *,
    max_speed: float,
    drag: float,
    brake_ratio: float,
    turn_deg: float,
    description: str,
) -> Preset:
    return Preset(
        name=name,
        model=model,
        acceleration=max_speed * drag,
        drag=drag,
        brake_force=brake_ratio * max_speed * drag,
        turn_speed=math.radians(turn_deg),
        description=description,
    )


PRESETS: Final[Mapping[str, Preset]] = types.MappingProxyType(
    {
        "sports": _preset(
            "sports",
            SteeringModel.DIRECT,
            max_speed=5.0,
            drag=math.log(20.0),  # 180° reversal to 90 % in exactly 1 s (§4.2)
            brake_ratio=0.0,
            turn_deg=0.0,
            description="Sportsgame: direct steering, low inertia, no auto-brake (PES/FIFA)",
        ),
        "simulation": _preset(
            "simulation",
            SteeringModel.THRUST,
            max_speed=8.0,
            drag=0.5,
            brake_ratio=0.0,
            turn_deg=90.0,
            description="Simulation: thrust steering, high inertia, 90°/s turns (racing, space)",
        ),
        "shooter": _preset(
            "shooter",
            SteeringModel.ACTION_3D,
            max_speed=4.0,
            drag=8.0,
            brake_ratio=0.0,
            turn_deg=180.0,
            description="3D-Action: forward/back, strafe, 180°/s turns, very low inertia (CS)",
        ),
        "arcade": _preset(
            "arcade",
            SteeringModel.DIRECT,
            max_speed=6.0,
            drag=40.0,
            brake_ratio=1.0,
            turn_deg=0.0,
            description="Arcade-Action: direct steering, no inertia, auto-brake (Bomberman)",
        ),
    }
)
"""The genre presets by name: ``sports``, ``simulation``, ``shooter`` (3D-Action), ``arcade``."""


def get_preset(name: str) -> Preset:
    """Look up a genre preset by name.

    Args:
        name: One of ``PRESETS``'s keys.

    Returns:
        The preset.

    Raises:
        ConfigError: The name is unknown.
    """
    try:
        return PRESETS[name]
    except KeyError:
        allowed = ", ".join(PRESETS)
        raise ConfigError(f"preset must be one of {allowed}, got {name!r}") from None
