"""Synchronisation over the transport: lockstep, bucket sync, local lag, Time Warp, rollback.

Spec 000 §2.1, §2.3 and §2.14 and GGPO-style rollback (issue 15). Every algorithm is a sans-I/O
``SyncPeer`` stepping a ``DeterministicGame``; see ``lagless.sync.contract``.
"""

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs, arena_input
from lagless.sync.bucket import BucketConfig, BucketPeer
from lagless.sync.contract import DeterministicGame, Outgoing, SyncPeer, SyncStats
from lagless.sync.harness import HarnessConfig, HarnessResult, run_session
from lagless.sync.local_lag import LocalLagConfig, LocalLagPeer
from lagless.sync.lockstep import LockstepConfig, LockstepPeer
from lagless.sync.registry import algorithms, make_peer
from lagless.sync.rollback import RollbackPeer, RollbackSpectator, make_rollback_peer
from lagless.sync.synctest import SyncTest, SyncTestMismatch, SyncTestReport, run_synctest
from lagless.sync.timewarp import LocalRollbackPeer, TimeWarpPeer

__all__ = [
    "Arena",
    "ArenaState",
    "BucketConfig",
    "BucketPeer",
    "DeterministicGame",
    "HarnessConfig",
    "HarnessResult",
    "LocalLagConfig",
    "LocalLagPeer",
    "LocalRollbackPeer",
    "LockstepConfig",
    "LockstepPeer",
    "Outgoing",
    "RollbackPeer",
    "RollbackSpectator",
    "ScriptedInputs",
    "SyncPeer",
    "SyncStats",
    "SyncTest",
    "SyncTestMismatch",
    "SyncTestReport",
    "TimeWarpPeer",
    "algorithms",
    "arena_input",
    "make_peer",
    "make_rollback_peer",
    "run_session",
    "run_synctest",
]
