"""The parameter file (spec 004 §5.3.4): the nine properties, render delay, car*, clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lagless.errors import ConfigError
from lagless.physics import CarParams, PhysicsParams, ViewConfig, load_params, parse_params

TOML = """
networkSimulatedLatency = 0.08
networkSimulatedVariance = 0.04
deadReckoningExtrapolationTime = 0.5
deadReckoningInterpolationTime = 0.2
deadReckoningUseAcceleration = false
userControlsFile = "drive.csv"
readUserControls = true
writeUserControls = false
renderDelay = 0.05
renderDelayRttFactor = 0.3
carMass = 900.0
wheelFriction = 0.9
"""


def test_every_parameter_is_read(tmp_path: Path) -> None:
    path = tmp_path / "racer.toml"
    path.write_text(TOML, encoding="utf-8")
    params = load_params(path)
    assert params.network_simulated_latency == 0.08
    assert params.network_simulated_variance == 0.04
    assert params.user_controls_file == "drive.csv"
    assert params.read_user_controls
    assert not params.write_user_controls
    assert params.car.car_mass == 900.0
    assert params.car.wheel_friction == 0.9
    assert params.car.car_length == CarParams().car_length
    view = ViewConfig.from_params(params)
    assert view == ViewConfig(
        render_delay=0.05,
        rtt_factor=0.3,
        extrapolation_time=0.5,
        correction_time=0.2,
        use_acceleration=False,
    )
    assert view.hermite().dr_order == 1


def test_json_equals_toml(tmp_path: Path) -> None:
    path = tmp_path / "racer.json"
    path.write_text(json.dumps({"carMass": 900, "renderDelay": 0.1}), encoding="utf-8")
    assert load_params(path) == parse_params("carMass = 900.0\nrenderDelay = 0.1")


def test_defaults() -> None:
    params = parse_params("")
    assert params == PhysicsParams()
    assert params.car.car_length == 3.0  # spec 004 §6.1.1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("carMass = -1.0", r"racer\.toml: Expected `float` > 0\.0 - at `carMass`"),
        ("networkSimulatedLatency = 11.0", r"<= 10\.0 - at `networkSimulatedLatency`"),
        ("renderDelay = 'x'", r"Expected `float`, got `str` - at `renderDelay`"),
        ("frameRate = 60", r"unknown field `frameRate`"),
        ("carWheelbase = 3.5", r"carWheelbase must be < carLength"),
        ("readUserControls = true", r"need a userControlsFile"),
        ("[car]\ncarMass = 1.0", r"write carMass = \.\.\., not \[car\]"),
        ("carMass = ", r"not valid TOML"),
    ],
)
def test_errors_name_the_key(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_params(text, source="racer.toml")
    assert "\n" not in str(info.value)


def test_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"must end in \.toml or \.json"):
        load_params(tmp_path / "racer.properties")
    with pytest.raises(ConfigError, match="cannot read"):
        load_params(tmp_path / "missing.toml")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ConfigError, match="table of keys"):
        load_params(bad)
