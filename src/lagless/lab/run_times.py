"""Measured wall-clock run times of the built-in experiments, shown by ``lagless lab list``.

Seconds of ``lagless lab run ID --quick`` and ``lagless lab run ID`` (default seed, plots
included, process start-up included), measured one after the other at low priority on the
2-core development VM while other jobs shared it, so an idle machine is somewhat faster.
A full run is ``None`` when it was stopped at ``FULL_CAP`` seconds without finishing. Re-measure
after a change that moves an experiment's cost by more than about a third.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

FULL_CAP: Final = 240.0  # seconds a full run was allowed when these were measured

RUN_SECONDS: Final[Mapping[str, tuple[float, float | None]]] = {
    "gossip/client-server": (1.6, 32.7),
    "gossip/consistency": (2.7, 189.1),
    "gossip/correction": (3.1, 115.4),
    "gossip/hops": (3.0, None),
    "gossip/improved": (5.7, None),
    "gossip/join": (4.5, None),
    "gossip/loss": (2.8, 103.4),
    "gossip/selection": (1.6, 2.8),
    "gossip/upload": (5.0, 129.5),
    "netsim/profiles": (1.6, 7.6),
    "physics/car": (5.3, 22.9),
    "realtime/adaptive": (2.7, None),
    "realtime/arcade": (3.1, 32.9),
    "realtime/kinematic-car": (1.7, 4.6),
    "realtime/payload-sizes": (1.2, 1.1),
    "realtime/shooter": (3.2, 33.8),
    "realtime/simulation": (8.1, 28.1),
    "realtime/sports": (7.6, 46.0),
    "replication/bandwidth": (3.0, 120.6),
    "replication/ids": (1.5, 2.4),
    "replication/lag-compensation": (2.2, 5.1),
    "replication/prediction": (4.2, 25.5),
    "replication/x4-matrix": (2.6, 3.5),
    "sync/bucket": (2.7, 187.0),
    "sync/compare": (3.4, 231.3),
    "sync/lockstep": (3.4, 72.5),
    "sync/rollback": (2.6, None),
    "vfc/clustering": (1.4, 103.1),
    "vfc/delta": (4.9, None),
    "vfc/encoding": (2.7, 20.9),
    "vfc/maps": (2.0, None),
    "vfc/players": (2.9, 220.6),
    "vfc/views": (3.4, 98.9),
}
"""Experiment id -> (seconds of a ``--quick`` run, seconds of a full run or None past the cap)."""
