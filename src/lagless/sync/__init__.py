"""Synchronisation over the transport: lockstep, bucket sync, local lag, Time Warp, rollback.

Spec 000 §2.1, §2.3 and §2.14 and GGPO-style rollback (issue 15). Every algorithm is a sans-I/O
``SyncPeer`` stepping a ``DeterministicGame``; see ``lagless.sync.contract``.
"""

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs, arena_input
from lagless.sync.contract import DeterministicGame, Outgoing, SyncPeer, SyncStats
from lagless.sync.synctest import SyncTest, SyncTestMismatch, SyncTestReport, run_synctest

__all__ = [
    "Arena",
    "ArenaState",
    "DeterministicGame",
    "Outgoing",
    "ScriptedInputs",
    "SyncPeer",
    "SyncStats",
    "SyncTest",
    "SyncTestMismatch",
    "SyncTestReport",
    "arena_input",
    "run_synctest",
]
