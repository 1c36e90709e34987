from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.lab import ExperimentSpec, Registry, make, registered
from lagless.lab.registry import default_registry


def _spec(experiment_id: str = "a/b", **overrides: object) -> ExperimentSpec:
    fields: dict[str, object] = {
        "id": experiment_id,
        "title": "t",
        "entry_point": lambda ctx, params: ctx.result(),
        "quick": {"n": 1},
        "full": {"n": 2},
        "reference": {"x": 1},
    }
    fields.update(overrides)
    return ExperimentSpec(**fields)  # type: ignore[arg-type]


def test_register_then_make_returns_the_spec() -> None:
    registry = Registry()
    spec = _spec()
    assert registry.register(spec) is spec
    assert registry.make("a/b") is spec
    assert registry.registered() == ["a/b"]


def test_duplicate_id() -> None:
    registry = Registry()
    registry.register(_spec())
    with pytest.raises(ConfigError, match="'a/b' is already registered"):
        registry.register(_spec())
    assert registry.registered() == ["a/b"]


def test_unknown_id_lists_valid_ids_on_one_line() -> None:
    registry = Registry()
    registry.register(_spec("z/one"))
    registry.register(_spec("a/two"))
    with pytest.raises(ConfigError) as info:
        registry.make("nope")
    message = str(info.value)
    assert "\n" not in message
    assert message == "unknown experiment 'nope'; valid ids: a/two, z/one"


@pytest.mark.parametrize("bad", ["", "Upper/case", "/lead", "trail/", "a//b", "sp ace", 3])
def test_bad_ids(bad: object) -> None:
    with pytest.raises(ConfigError, match="id must be lowercase"):
        _spec(bad)  # type: ignore[arg-type]


def test_spec_parameters_must_be_json_data() -> None:
    with pytest.raises(ConfigError, match=r"a/b\.quick\.n"):
        _spec(quick={"n": object()})
    with pytest.raises(ConfigError, match=r"a/b\.reference\.x must be a finite number"):
        _spec(reference={"x": "high"})
    with pytest.raises(ConfigError, match=r"a/b\.reference\.x must be a finite number"):
        _spec(reference={"x": float("inf")})
    with pytest.raises(ConfigError, match="entry_point must be callable"):
        _spec(entry_point=None)


def test_spec_freezes_its_mappings() -> None:
    quick = {"n": 1}
    spec = _spec(quick=quick, reference={"x": 2})
    quick["n"] = 99
    assert spec.quick == {"n": 1}
    assert spec.reference == {"x": 2.0}
    assert isinstance(spec.reference["x"], float)
    assert spec.params(quick=True) == {"n": 1}
    assert spec.params(quick=False) == {"n": 2}
    with pytest.raises(TypeError):
        spec.quick["n"] = 3  # type: ignore[index]


def test_builtin_experiments_register_on_first_lookup() -> None:
    assert "netsim/profiles" in registered()
    assert make("netsim/profiles").id == "netsim/profiles"
    assert default_registry().registered() == registered()
