"""lagless.replication: network objects, ID pools, schemas, snapshots, delta, priority, RPC.

The layer above ``transport``, ``interest``, ``smoothing`` and ``wire`` (DESIGN.md "Layers") that
turns game objects into packets and back (spec 003 §5.3-§5.4, issue 13). Exports are kept in one
sorted list below; every engineer adds names to it in sorted order.
"""

from __future__ import annotations

from lagless.replication.ids import NO_ID as NO_ID
from lagless.replication.ids import IdOverflowError as IdOverflowError
from lagless.replication.ids import IdPool as IdPool
from lagless.replication.ids import IdRef as IdRef
from lagless.replication.ids import IdState as IdState
from lagless.replication.ids import IdTakenError as IdTakenError

__all__ = [
    "NO_ID",
    "IdOverflowError",
    "IdPool",
    "IdRef",
    "IdState",
    "IdTakenError",
]
