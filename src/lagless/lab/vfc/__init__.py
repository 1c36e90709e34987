"""Machinery of the ``vfc/*`` lab experiments (spec 001 §6.3): one measured run of bots + policy.

``simulate(RunConfig(...), rng=...)`` runs bots, an interest policy and the update codecs round by
round and returns the ``runs`` row (traffic, broadcast baseline, replica error per zone).
"""

from __future__ import annotations

from lagless.lab.vfc.sim import HEADER_BYTES as HEADER_BYTES
from lagless.lab.vfc.sim import RunConfig as RunConfig
from lagless.lab.vfc.sim import RunResult as RunResult
from lagless.lab.vfc.sim import simulate as simulate

__all__ = ["HEADER_BYTES", "RunConfig", "RunResult", "simulate"]
