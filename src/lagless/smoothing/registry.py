"""Display models by name: ``create_display_model(name, **params)`` and ``register_display_model``.

Implements STYLE §6.11 ("pluggable algorithms are looked up by name through ``register_*`` /
``create_*``") for the display models of spec 000 §3.5 (combinable DR model x convergence x TC x
thresholds), spec 004 §5.2 and spec 003 §4.3.

Built-in names: ``dis0``, ``dis1``, ``dis2``, ``phb``, ``interpolation``, ``hermite``, ``x4``.
Parameters are the fields of the model's config class, plus these shortcuts for the nested
configs: ``convergence`` (a kind name or a ``ConvergenceConfig``), ``position_time``,
``heading_time`` (convergence times, s), ``position_threshold`` (m), ``heading_threshold`` (rad),
``heartbeat`` (s), ``prereckoning`` (bool), ``turn_angle`` (rad).

Decision: an unknown name or parameter raises ``ConfigError`` naming the allowed values
(``test_registry.py::test_unknown_name_and_param``); re-registering a name replaces it only with
``replace=True``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Final

from lagless.errors import ConfigError
from lagless.smoothing.base import Receiver, Sender
from lagless.smoothing.convergence import ConvergenceConfig
from lagless.smoothing.dis import DisConfig, DisReceiver, DisSender
from lagless.smoothing.hermite import HermiteConfig, HermiteReceiver, HermiteSender
from lagless.smoothing.interpolation import (
    InterpolationConfig,
    InterpolationReceiver,
    InterpolationSender,
)
from lagless.smoothing.phb import PhbConfig, PhbReceiver, PhbSender
from lagless.smoothing.thresholds import ThresholdConfig
from lagless.smoothing.x4 import X4Config, X4Receiver, X4Sender

__all__ = [
    "DisplayModel",
    "create_display_model",
    "display_model_names",
    "register_display_model",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class DisplayModel:
    """A configured display model: makes matching senders and receivers."""

    name: str
    """Registry name."""
    config: object
    """The model's frozen config (``DisConfig``, ``PhbConfig``, ...)."""
    payload_size: int
    """Update payload size (bytes)."""
    sender_factory: Callable[[int], Sender]
    """Builds a sender for an entity id."""
    receiver_factory: Callable[[int], Receiver]
    """Builds a receiver for an entity id."""

    def create_sender(self, *, entity_id: int = 0) -> Sender:
        """Return a new sender for ``entity_id`` (0..255)."""
        return self.sender_factory(entity_id)

    def create_receiver(self, *, entity_id: int = 0) -> Receiver:
        """Return a new receiver for ``entity_id`` (0..255)."""
        return self.receiver_factory(entity_id)


_THRESHOLD_SHORTCUTS: Final = {
    "position_threshold": "position",
    "heading_threshold": "heading",
    "heartbeat": "heartbeat",
    "prereckoning": "prereckoning",
    "turn_angle": "turn_angle",
}
_CONVERGENCE_SHORTCUTS: Final = ("position_time", "heading_time")


def _split(params: dict[str, Any], cls: type, shortcuts: Collection[str]) -> dict[str, Any]:
    allowed = {f.name for f in dataclasses.fields(cls)} | set(shortcuts)
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise ConfigError(f"unknown parameter {unknown[0]!r}; allowed: {sorted(allowed)}")
    return {k: v for k, v in params.items() if k not in shortcuts}


def _thresholds(params: dict[str, Any]) -> dict[str, Any]:
    return {
        field: params[short] for short, field in _THRESHOLD_SHORTCUTS.items() if short in params
    }


def _model(
    name: str, config: Any, sender: Callable[..., Sender], receiver: Callable[..., Receiver]
) -> DisplayModel:
    return DisplayModel(
        name=name,
        config=config,
        payload_size=config.payload_size,
        sender_factory=lambda eid: sender(config, entity_id=eid),
        receiver_factory=lambda eid: receiver(config, entity_id=eid),
    )


def _dis(order: int) -> Callable[..., DisplayModel]:
    def factory(**params: Any) -> DisplayModel:
        if "order" in params:
            raise ConfigError(f"order is fixed by the model name dis{order}")
        direct = _split(params, DisConfig, {*_THRESHOLD_SHORTCUTS, *_CONVERGENCE_SHORTCUTS})
        conv = direct.pop("convergence", "linear")
        if not isinstance(conv, ConvergenceConfig):
            times = {k: params[k] for k in _CONVERGENCE_SHORTCUTS if k in params}
            conv = ConvergenceConfig(kind=conv, **times)
        thresholds = direct.pop("thresholds", None) or ThresholdConfig(**_thresholds(params))
        config = DisConfig(order=order, thresholds=thresholds, convergence=conv, **direct)
        return _model(f"dis{order}", config, DisSender, DisReceiver)

    return factory


def _phb(**params: Any) -> DisplayModel:
    direct = _split(params, PhbConfig, _THRESHOLD_SHORTCUTS)
    thresholds = direct.pop("thresholds", None) or ThresholdConfig(**_thresholds(params))
    return _model("phb", PhbConfig(thresholds=thresholds, **direct), PhbSender, PhbReceiver)


def _periodic(
    name: str, cls: type, sender: Callable[..., Sender], receiver: Callable[..., Receiver]
) -> Callable[..., DisplayModel]:
    def factory(**params: Any) -> DisplayModel:
        return _model(name, cls(**_split(params, cls, ())), sender, receiver)

    return factory


_REGISTRY: dict[str, Callable[..., DisplayModel]] = {
    "dis0": _dis(0),
    "dis1": _dis(1),
    "dis2": _dis(2),
    "phb": _phb,
    "interpolation": _periodic(
        "interpolation", InterpolationConfig, InterpolationSender, InterpolationReceiver
    ),
    "hermite": _periodic("hermite", HermiteConfig, HermiteSender, HermiteReceiver),
    "x4": _periodic("x4", X4Config, X4Sender, X4Receiver),
}


def register_display_model(
    name: str, factory: Callable[..., DisplayModel], *, replace: bool = False
) -> None:
    """Register a display-model factory under ``name``.

    Args:
        name: Registry name.
        factory: Called with the keyword parameters of ``create_display_model``.
        replace: Allow replacing an existing name.

    Raises:
        ConfigError: ``name`` is taken and ``replace`` is false, or empty.
    """
    if not name:
        raise ConfigError("display model name must be a non-empty string")
    if name in _REGISTRY and not replace:
        raise ConfigError(f"display model {name!r} is already registered (pass replace=True)")
    _REGISTRY[name] = factory


def display_model_names() -> list[str]:
    """Return the registered display-model names, sorted."""
    return sorted(_REGISTRY)


def create_display_model(name: str, **params: object) -> DisplayModel:
    """Create the display model ``name`` with ``params``.

    Args:
        name: A registered name (``display_model_names()``).
        **params: Config fields and shortcuts (module docstring).

    Returns:
        The configured model.

    Raises:
        ConfigError: Unknown name or parameter, or an invalid value.
    """
    factory = _REGISTRY.get(name)
    if factory is None:
        raise ConfigError(f"display model must be one of {display_model_names()}, got {name!r}")
    try:
        return factory(**params)
    except TypeError as exc:
        raise ConfigError(f"bad parameters for display model {name!r}: {exc}") from None
