"""The built-in lab experiments; importing this package registers every one of them.

Each module here calls ``lagless.lab.register(ExperimentSpec(...))`` at import time. Adding an
experiment is one module plus one import line below; ``tests/lab/test_determinism.py`` then runs
it with ``--quick`` twice automatically. The modules are imported for that side effect only, so
``__all__`` is empty: specs are reached through ``lagless.lab.make(id)``.
"""

from __future__ import annotations

from lagless.lab.experiments import gossip as gossip
from lagless.lab.experiments import netsim as netsim
from lagless.lab.experiments import physics_car as physics_car
from lagless.lab.experiments import realtime as realtime
from lagless.lab.experiments import replication_bandwidth as replication_bandwidth
from lagless.lab.experiments import replication_ids as replication_ids
from lagless.lab.experiments import replication_lagcomp as replication_lagcomp
from lagless.lab.experiments import replication_prediction as replication_prediction
from lagless.lab.experiments import replication_x4 as replication_x4
from lagless.lab.experiments import sync_bucket as sync_bucket
from lagless.lab.experiments import sync_compare as sync_compare
from lagless.lab.experiments import sync_lockstep as sync_lockstep
from lagless.lab.experiments import sync_rollback as sync_rollback
from lagless.lab.experiments import vfc as vfc

__all__: list[str] = []
