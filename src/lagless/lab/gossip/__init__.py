"""Helpers of the ``gossip/*`` lab experiments: swarm runner on netsim, uplink model, metrics."""

from __future__ import annotations
