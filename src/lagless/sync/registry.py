"""Synchronisation algorithms by name, so drivers and labs build any of them the same way.

Implements the construction side of issue 15: the simulator harness (``lagless.sync.harness``),
the real-UDP runner (``lagless.apps.sync``) and the ``sync/compare`` lab build every algorithm of
spec 000 §2.1, §2.3 and §2.14 and GGPO-style rollback through ``make_peer``.

Decisions:
    * An entry maps a name to ``"module:Class"``; the module is imported on first use, so the
      registry costs nothing to import and an algorithm module may import the registry.
    * Every registered class is built as ``Class(game, peer=..., peers=..., rng=...,
      frame_period=..., **knobs)``: ``frame_period`` is the driver's nominal frame period in
      seconds (``1 / 60`` when not given); the other knobs are the algorithm's own.
    * An unknown name is a ``ConfigError`` listing the valid names.
"""

from __future__ import annotations

import importlib
import random
from typing import Any, Final

from lagless.errors import ConfigError
from lagless.sync.contract import DeterministicGame, SyncPeer

__all__ = ["ALGORITHMS", "DEFAULT_FRAME_PERIOD", "algorithms", "make_peer"]

DEFAULT_FRAME_PERIOD: Final = 1.0 / 60.0
"""Seconds between ticks when the caller gives no ``frame_period`` (60 Hz)."""

ALGORITHMS: Final[dict[str, str]] = {
    "time-warp": "lagless.sync.timewarp:TimeWarpPeer",
    "local-rollback": "lagless.sync.timewarp:LocalRollbackPeer",
    "lockstep": "lagless.sync.lockstep:LockstepPeer",
    "bucket": "lagless.sync.bucket:BucketPeer",
    "local-lag": "lagless.sync.local_lag:LocalLagPeer",
    "rollback": "lagless.sync.rollback:make_rollback_peer",
}
"""Algorithm name -> ``"module:Class"`` of its ``SyncPeer``."""


def algorithms() -> list[str]:
    """The registered algorithm names, in registration order."""
    return list(ALGORITHMS)


def make_peer(
    algorithm: str,
    game: DeterministicGame[Any],
    peer: int,
    peers: int,
    rng: random.Random,
    **knobs: Any,
) -> SyncPeer[Any]:
    """Build peer ``peer`` of ``peers`` running ``algorithm`` on ``game``.

    Args:
        algorithm: A name of ``ALGORITHMS``, e.g. ``"time-warp"``.
        game: The deterministic game every peer steps.
        peer: This peer's number, ``0 <= peer < peers``.
        peers: How many peers take part (2 to 8 for the arena).
        rng: The peer's seeded generator (all its random choices come from it).
        **knobs: ``frame_period`` (s) and the algorithm's own settings.

    Returns:
        The peer.

    Raises:
        ConfigError: unknown algorithm or a peer number out of range.
    """
    target = ALGORITHMS.get(algorithm)
    if target is None:
        raise ConfigError(f"unknown algorithm {algorithm!r}; valid names: {', '.join(ALGORITHMS)}")
    if not 0 <= peer < peers:
        raise ConfigError(f"peer must be in [0, {peers - 1}], got {peer}")
    module_name, _, class_name = target.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    knobs.setdefault("frame_period", DEFAULT_FRAME_PERIOD)
    built: SyncPeer[Any] = cls(game, peer=peer, peers=peers, rng=rng, **knobs)
    return built
