"""lagless.cluster: the demo's car world split into cells over several server processes (issue 16).

Sans-I/O (DESIGN.md): ``CellGrid`` (the cells over the arena), ``CellNode`` (one cell server:
physics of its cars, ghosts of its neighbours' cars near its borders, hand-offs, heartbeats and
take-over of a dead server's cells), ``BotSwarm`` (the players: bots that read snapshots, send
inputs and measure hand-off gaps, jumps, recovery and lost inputs), the wire messages
(``encode`` / ``decode``) and their NATS subjects, and ``VirtualCluster`` (all of it in one
process on virtual time). ``lagless.apps.cluster`` runs it over NATS; ``lagless cluster`` is the
command.
"""

from __future__ import annotations

from lagless.cluster.bots import WorldBot as WorldBot
from lagless.cluster.grid import CellGrid as CellGrid
from lagless.cluster.grid import spawn_states as spawn_states
from lagless.cluster.messages import ServerStats as ServerStats
from lagless.cluster.messages import decode as decode
from lagless.cluster.messages import encode as encode
from lagless.cluster.node import CellNode as CellNode
from lagless.cluster.node import NodeConfig as NodeConfig
from lagless.cluster.sim import VirtualCluster as VirtualCluster
from lagless.cluster.subjects import Subjects as Subjects
from lagless.cluster.swarm import BotSwarm as BotSwarm
from lagless.cluster.swarm import SwarmReport as SwarmReport

__all__ = [
    "BotSwarm",
    "CellGrid",
    "CellNode",
    "NodeConfig",
    "ServerStats",
    "Subjects",
    "SwarmReport",
    "VirtualCluster",
    "WorldBot",
    "decode",
    "encode",
    "spawn_states",
]
