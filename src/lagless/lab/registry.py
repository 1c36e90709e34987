"""The experiment registry: specs registered by id, looked up by id (STYLE §5 "Lab", Gymnasium).

Implements STYLE §5 "Lab follows the Gymnasium registry": ``register(spec)``, ``make(id)`` and
``registered()``. The built-in experiments register themselves when ``lagless.lab.experiments`` is
imported; ``make`` and ``registered`` import it on first use, so ``lagless.lab`` stays cheap to
import and a new experiment module needs only one import line in that package.

Decisions:
    * Ids are lowercase ``namespace/name`` paths (``"netsim/profiles"``, ``"vfc/bandwidth-v1"``):
      ``[a-z0-9][a-z0-9_.-]*`` segments joined by ``/`` (``test_registry.py::test_bad_ids``).
    * Registering an id twice is a ``ConfigError``, never a silent replacement: two experiments
      with one id would make results.json ambiguous (``test_registry.py::test_duplicate_id``).
    * ``make`` returns the frozen ``ExperimentSpec``; running is ``run(id, ...)`` in
      ``lagless.lab.runner``. ``quick``/``full``/``reference`` are checked to be JSON data at
      registration, so a bad spec fails at import, not after a long run.
"""

from __future__ import annotations

import importlib
import re
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, cast

from lagless.errors import ConfigError
from lagless.lab.result import JSONValue, Result, normalise

if TYPE_CHECKING:
    from lagless.lab.runner import ExperimentContext

__all__ = [
    "BUILTIN_PACKAGE",
    "ExperimentSpec",
    "Registry",
    "default_registry",
    "make",
    "register",
    "registered",
]

BUILTIN_PACKAGE: Final = "lagless.lab.experiments"  # importing it registers the built-ins
_ID: Final = re.compile(r"^[a-z0-9][a-z0-9_.-]*(/[a-z0-9][a-z0-9_.-]*)*$")


def _frozen(params: Mapping[str, object], where: str) -> Mapping[str, JSONValue]:
    if not isinstance(params, Mapping):
        raise ConfigError(f"{where} must be a mapping of parameter names, got {params!r}")
    data = cast("dict[str, JSONValue]", normalise(dict(params), where, ConfigError))
    return types.MappingProxyType(data)


@dataclass(frozen=True, slots=True, kw_only=True)
class ExperimentSpec:
    """One registered experiment: how to run it quickly and fully, and what the thesis measured."""

    id: str
    """Lowercase ``namespace/name`` id, e.g. ``"netsim/profiles"``."""
    title: str
    """One line for ``lagless lab list`` and the report heading."""
    entry_point: Callable[[ExperimentContext, Mapping[str, JSONValue]], Result]
    """``entry_point(ctx, params) -> Result``; ``params`` is ``quick`` or ``full``."""
    quick: Mapping[str, JSONValue]
    """Parameters for ``--quick``: must finish in well under a minute (tests run it)."""
    full: Mapping[str, JSONValue]
    """Parameters of the thesis setup."""
    reference: Mapping[str, float]
    """Thesis numbers by metric name (units in the name); the report sets metrics beside them."""
    description: str = ""
    """A paragraph for the report: what is measured, how, and where the reference comes from."""

    def __post_init__(self) -> None:
        """Validate and freeze the fields; raise ``ConfigError`` naming the bad one."""
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise ConfigError(
                f"id must be lowercase 'namespace/name' segments of [a-z0-9_.-], got {self.id!r}"
            )
        if not isinstance(self.title, str) or not self.title.strip():
            raise ConfigError(f"title must be a non-empty str, got {self.title!r}")
        if not callable(self.entry_point):
            raise ConfigError(f"entry_point must be callable, got {self.entry_point!r}")
        if not isinstance(self.description, str):
            raise ConfigError(f"description must be a str, got {self.description!r}")
        object.__setattr__(self, "quick", _frozen(self.quick, f"{self.id}.quick"))
        object.__setattr__(self, "full", _frozen(self.full, f"{self.id}.full"))
        reference = _frozen(self.reference, f"{self.id}.reference")
        for name, value in reference.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(
                    f"{self.id}.reference.{name} must be a finite number, got {value!r}"
                )
        floats = {name: float(cast("float", value)) for name, value in reference.items()}
        object.__setattr__(self, "reference", types.MappingProxyType(floats))

    def params(self, *, quick: bool) -> Mapping[str, JSONValue]:
        """Return ``quick`` if ``quick`` else ``full``."""
        return self.quick if quick else self.full


class Registry:
    """Experiment specs by id. The module functions use ``default_registry()``.

    Args:
        builtin_package: A package to import before the first lookup (its modules call
            ``register``); ``None`` for a registry that holds only what is registered by hand.
    """

    def __init__(self, builtin_package: str | None = None) -> None:
        self._specs: dict[str, ExperimentSpec] = {}
        self._builtin_package = builtin_package
        self._loaded = builtin_package is None

    def _load(self) -> None:
        if not self._loaded and self._builtin_package is not None:
            importlib.import_module(self._builtin_package)
            self._loaded = True

    def register(self, spec: ExperimentSpec) -> ExperimentSpec:
        """Add ``spec`` and return it.

        Raises:
            ConfigError: ``spec`` is not an ``ExperimentSpec`` or its id is taken.
        """
        if not isinstance(spec, ExperimentSpec):
            raise ConfigError(f"spec must be an ExperimentSpec, got {spec!r}")
        if spec.id in self._specs:
            raise ConfigError(
                f"experiment id {spec.id!r} is already registered; ids must be unique"
            )
        self._specs[spec.id] = spec
        return spec

    def make(self, experiment_id: str) -> ExperimentSpec:
        """Return the spec registered as ``experiment_id``.

        Raises:
            ConfigError: the id is unknown; the one-line message lists the valid ids.
        """
        self._load()
        spec = self._specs.get(experiment_id) if isinstance(experiment_id, str) else None
        if spec is None:
            valid = ", ".join(sorted(self._specs)) or "(none registered)"
            raise ConfigError(f"unknown experiment {experiment_id!r}; valid ids: {valid}")
        return spec

    def registered(self) -> list[str]:
        """Return every registered id, sorted."""
        self._load()
        return sorted(self._specs)


_DEFAULT: Final = Registry(BUILTIN_PACKAGE)


def default_registry() -> Registry:
    """Return the process-wide registry that the built-in experiments register into."""
    return _DEFAULT


def register(spec: ExperimentSpec) -> ExperimentSpec:
    """Register ``spec`` in the default registry and return it (call at module import).

    Raises:
        ConfigError: ``spec`` is not an ``ExperimentSpec`` or its id is taken.
    """
    return _DEFAULT.register(spec)


def make(experiment_id: str) -> ExperimentSpec:
    """Return the spec registered as ``experiment_id`` in the default registry.

    Raises:
        ConfigError: the id is unknown; the one-line message lists the valid ids.
    """
    return _DEFAULT.make(experiment_id)


def registered() -> list[str]:
    """Return every id in the default registry (built-ins included), sorted."""
    return _DEFAULT.registered()
