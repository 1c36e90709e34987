"""Simulated clock-sync round trips shared by the Cristian and spec 004 clock tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

TRUE_OFFSET = 12.345  # seconds, server clock - client clock


class SyncClock(Protocol):
    """What the simulation needs from a clock (``CristianClock``, ``Spec004Clock``)."""

    def on_sample(
        self, t_send: float, server_time: float, t_receive: float, *, processing_time: float = 0.0
    ) -> bool: ...

    def applied_offset(self, now: float) -> float: ...


def round_trips(
    clock: SyncClock,
    rng: np.random.Generator,
    *,
    epoch: float,
    true_offset: Callable[[np.ndarray], np.ndarray],
    n: int,
    interval: float,
    up: tuple[float, float],
    down: tuple[float, float],
    hold: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``n`` round trips, one every ``interval`` seconds from local time ``epoch``.

    One-way delays are uniform in ``mean +/- half_width`` (``up``, ``down``). The server holds each
    request ``hold`` seconds (reported as the processing time), then stamps its clock, local time
    plus ``true_offset(local time)``. Samples reach the clock in arrival order.

    Returns:
        ``(t_receive, error)`` in arrival order: local arrival times and the clock's applied offset
        minus the true offset then, in seconds.
    """
    t_send = epoch + interval * np.arange(n)
    u = rng.uniform(up[0] - up[1], up[0] + up[1], n)
    d = rng.uniform(down[0] - down[1], down[0] + down[1], n)
    t_reply = t_send + u + hold
    server = t_reply + true_offset(t_reply)
    t_receive = t_reply + d
    order = np.argsort(t_receive, kind="stable")
    errors = np.empty(n)
    for k, i in enumerate(order):
        clock.on_sample(
            float(t_send[i]), float(server[i]), float(t_receive[i]), processing_time=hold
        )
        errors[k] = clock.applied_offset(float(t_receive[i])) - true_offset(t_receive[i])
    return t_receive[order], errors
