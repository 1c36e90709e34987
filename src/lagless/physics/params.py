"""The parameter file of spec 004 §5.3.4 (``racer.properties``), loaded and validated with msgspec.

Implements spec 004 §5.3.4 and checklist 8.1 "Parameter file": the nine properties of the thesis
(``networkSimulatedLatency``, ``networkSimulatedVariance``, ``deadReckoningExtrapolationTime``,
``deadReckoningInterpolationTime``, ``deadReckoningUseAcceleration``, ``userControlsFile``,
``readUserControls``, ``writeUserControls`` and the ``car*`` / ``wheel*`` vehicle properties)
plus the render delay, which the thesis changed in code (``renderDelay`` + ``renderDelayRttFactor``
x RTT, §5.2.1).

A file is TOML (``.toml``) or JSON (``.json``), flat like the thesis's properties file, with the
thesis's own camelCase names; every key is optional (defaults below) and an unknown key is an
error. Example::

    networkSimulatedLatency = 0.08        # s
    networkSimulatedVariance = 0.04       # s
    deadReckoningExtrapolationTime = 1.0  # s
    deadReckoningInterpolationTime = 0.1  # s
    deadReckoningUseAcceleration = true
    renderDelay = 0.0                     # s
    renderDelayRttFactor = 0.15
    carMass = 1200.0                      # kg
    wheelFriction = 1.2

Decisions:
    * Times are seconds in the file (the thesis's unit); lengths metres, masses kg, forces N.
    * ``car*`` and ``wheel*`` keys are collected into ``CarParams`` (the thesis names them only by
      prefix, §5.1; the names and values here are ours, chosen for a 3-m car at about 20 m/s).
    * Errors are one ``ConfigError`` line naming the file, the key and the allowed values, from
      msgspec's validation message (``tests/physics/test_params.py``).
    * ``readUserControls`` and ``writeUserControls`` need a ``userControlsFile``; both true is
      allowed and means read (the thesis: write only "if readUserControls == false").
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Annotated, Any

import msgspec

from lagless.errors import ConfigError

__all__ = ["CarParams", "PhysicsParams", "load_params", "parse_params"]

_NonNegative = Annotated[float, msgspec.Meta(ge=0.0, le=1e6)]
_Positive = Annotated[float, msgspec.Meta(gt=0.0, le=1e6)]


class CarParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """The ``car*`` and ``wheel*`` properties: a top-down car on pymunk (spec 004 §5.1)."""

    car_length: _Positive = 3.0
    """Body length, m (spec 004 §6.1.1: "a whole vehicle length (= three meters)")."""
    car_width: _Positive = 1.6
    """Body width, m."""
    car_mass: _Positive = 1200.0
    """Mass, kg."""
    car_wheelbase: _Positive = 2.6
    """Distance between front and rear axle, m (< car_length)."""
    car_track: _Positive = 1.4
    """Distance between left and right wheels, m (< car_width)."""
    car_engine_force: _Positive = 9000.0
    """Total drive force of the rear wheels at full throttle, N."""
    car_brake_force: _Positive = 14000.0
    """Total brake force of the four wheels, N."""
    car_reverse_force: _Positive = 4000.0
    """Total drive force in reverse, N."""
    car_max_forward_speed: _Positive = 35.0
    """No drive force above this forward speed, m/s."""
    car_max_backward_speed: _Positive = 8.0
    """No reverse force above this backward speed, m/s."""
    car_drag_coefficient: _NonNegative = 0.9
    """Air drag ``F = c·|v|·v``, N·s²/m²."""
    car_rolling_resistance: _NonNegative = 200.0
    """Rolling resistance against the forward motion, N."""
    car_elasticity: Annotated[float, msgspec.Meta(ge=0.0, le=1.0)] = 0.3
    """Restitution of the body in collisions, 0..1."""
    car_friction: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 0.8
    """Coulomb friction of the body against walls and cars."""
    wheel_friction: Annotated[float, msgspec.Meta(gt=0.0, le=10.0)] = 1.2
    """Tyre grip μ: a wheel's lateral impulse per step is capped at ``μ·m·g/4·dt``."""
    wheel_max_steer_angle: Annotated[float, msgspec.Meta(gt=0.0, le=1.2)] = 0.6
    """Front-wheel lock at low speed, rad."""
    wheel_steer_speed: _Positive = 8.0
    """How fast the steering fraction moves to its key's target, 1/s (full lock in 0.125 s)."""
    wheel_steer_lateral_acceleration: _Positive = 9.0
    """Speed-sensitive lock: full lock never asks for more than this lateral acceleration, m/s²."""

    def __post_init__(self) -> None:
        """Check the cross-field rules (msgspec turns the ValueError into a validation error)."""
        if self.car_wheelbase >= self.car_length:
            raise ValueError("carWheelbase must be < carLength")
        if self.car_track >= self.car_width:
            raise ValueError("carTrack must be < carWidth")


class PhysicsParams(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="camel"):
    """The nine spec 004 §5.3.4 properties plus the render delay (the car's in ``car``)."""

    network_simulated_latency: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 0.0
    """Mean delay of every received datagram, s, applied at both ends (Gl. 5.1)."""
    network_simulated_variance: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 0.0
    """Width of the uniform receive delay around the mean, s (Gl. 5.1)."""
    dead_reckoning_extrapolation_time: Annotated[float, msgspec.Meta(ge=0.0, le=60.0)] = 1.0
    """How far P4 lies beyond P3, s; 0 switches dead reckoning off (§5.2.2)."""
    dead_reckoning_interpolation_time: Annotated[float, msgspec.Meta(ge=0.0, le=60.0)] = 0.1
    """Correction blend P5 → P3, s (§5.2.3 step 6)."""
    dead_reckoning_use_acceleration: bool = True
    """True: constant acceleration (Gl. 3.3); false: constant velocity (Gl. 3.2)."""
    user_controls_file: str = ""
    """CSV file of recorded inputs (``lagless.physics.InputRecording``); empty = none."""
    read_user_controls: bool = False
    """Replay ``user_controls_file``; manual control is then disabled."""
    write_user_controls: bool = False
    """Record every input change and write it to ``user_controls_file``."""
    render_delay: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 0.0
    """Constant part of the render delay, s (§5.2.1; in code in the thesis)."""
    render_delay_rtt_factor: Annotated[float, msgspec.Meta(ge=0.0, le=10.0)] = 0.15
    """``k`` of the ``k x RTT`` part of the render delay (0.15 won in spec 004 §6.2)."""
    car: CarParams = CarParams()
    """The ``car*`` and ``wheel*`` properties."""

    def __post_init__(self) -> None:
        """Check the cross-field rules (msgspec turns the ValueError into a validation error)."""
        if (self.read_user_controls or self.write_user_controls) and not self.user_controls_file:
            raise ValueError("readUserControls/writeUserControls need a userControlsFile")


def _split(raw: dict[str, Any]) -> dict[str, Any]:
    """Move the flat ``car*`` / ``wheel*`` keys of a parameter file into ``car``."""
    if "car" in raw:
        raise ConfigError("parameter key 'car' is not allowed: write carMass = ..., not [car]")
    top = {k: v for k, v in raw.items() if not k.startswith(("car", "wheel"))}
    top["car"] = {k: v for k, v in raw.items() if k.startswith(("car", "wheel"))}
    return top


def parse_params(text: str, *, fmt: str = "toml", source: str = "<text>") -> PhysicsParams:
    """Parse and validate a parameter file's text.

    Args:
        text: The file content.
        fmt: ``"toml"`` or ``"json"``.
        source: Name for error messages (the path).

    Returns:
        The validated parameters.

    Raises:
        ConfigError: Bad syntax, an unknown key, a wrong type or an out-of-range value; one line
            naming ``source`` and the key.
    """
    try:
        if fmt == "toml":
            raw = tomllib.loads(text)
        elif fmt == "json":
            raw = json.loads(text)
        else:
            raise ConfigError(f"parameter file format must be 'toml' or 'json', got {fmt!r}")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{source}: not valid {fmt.upper()}: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the parameter file must be a table of keys")
    try:
        return msgspec.convert(_split(raw), PhysicsParams)
    except msgspec.ValidationError as exc:
        where = str(exc).replace("$.car.", "").replace("$.", "")
        raise ConfigError(f"{source}: {where}") from None


def load_params(path: str | Path) -> PhysicsParams:
    """Load a ``.toml`` or ``.json`` parameter file.

    Args:
        path: The file; its suffix picks the format.

    Returns:
        The validated parameters.

    Raises:
        ConfigError: Unreadable file, unknown suffix, or invalid content (one line).
    """
    p = Path(path)
    fmt = p.suffix.lower().lstrip(".")
    if fmt not in ("toml", "json"):
        raise ConfigError(f"{p}: parameter file must end in .toml or .json")
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read the parameter file: {exc.strerror}") from None
    return parse_params(text, fmt=fmt, source=str(p))
