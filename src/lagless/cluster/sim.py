"""A whole cluster in one process on virtual time: cell nodes and bots over an in-memory bus.

For tests and for reasoning without processes: the same ``CellNode`` and ``BotSwarm`` objects
that ``lagless.apps.cluster`` runs over NATS, pumped here by a small event loop with a fixed bus
latency, NATS subject matching (``*`` one token, ``>`` the rest) and ``kill`` to drop a node.
Deterministic for a seed.
"""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

from lagless.cluster.grid import CellGrid, spawn_states
from lagless.cluster.node import CellNode, NodeConfig
from lagless.cluster.swarm import BotSwarm

__all__ = ["VirtualCluster", "subject_matches"]


def subject_matches(pattern: str, subject: str) -> bool:
    """Return whether NATS subscription ``pattern`` matches ``subject``."""
    want, have = pattern.split("."), subject.split(".")
    for i, token in enumerate(want):
        if token == ">":
            return len(have) > i
        if i >= len(have) or (token != "*" and token != have[i]):
            return False
    return len(want) == len(have)


class VirtualCluster:
    """``servers`` nodes and ``players`` bots from virtual time ``start`` (s).

    Args:
        servers: Number of cell servers (one cell each).
        players: Number of bot players.
        seed: Seeds the spawns and the bots.
        cell_size: Width and height of a cell, m.
        latency: Bus delay of every message, s.
        config: The nodes' configuration.
        start: Virtual time at the start, s.
    """

    def __init__(
        self,
        *,
        servers: int,
        players: int,
        seed: int,
        cell_size: float = 120.0,
        latency: float = 0.001,
        config: NodeConfig | None = None,
        start: float = 100.0,
    ) -> None:
        """Build the nodes and the swarm."""
        self.grid = CellGrid.for_servers(servers, cell_size, cell_size)
        self.config = config or NodeConfig()
        spawns = spawn_states(self.grid, players, seed)
        self.now = start
        self.latency = latency
        self.nodes: dict[int, CellNode] = {
            k: CellNode(k, servers, self.grid, spawns, start, config=self.config)
            for k in range(servers)
        }
        self.swarm = BotSwarm(
            self.grid, players, random.Random(seed), tick_rate=self.config.tick_rate
        )
        self._queue: list[tuple[float, int, int, bytes]] = []  # (due, seq, receiver, payload)
        self._seq = 0
        self.delivered = 0
        self._paused: dict[int, float] = {}  # server -> virtual time it resumes, s
        self.drop_filter: Callable[[str, int], bool] | None = None
        """``(subject, receiver) -> True`` drops that delivery (``-1`` is the swarm)."""

    def _receivers(self) -> list[tuple[int, list[str]]]:
        found = [(k, node.subscriptions()) for k, node in self.nodes.items()]
        return [*found, (-1, self.swarm.subscriptions())]

    def _publish(self, messages: list[tuple[str, bytes]]) -> None:
        receivers = self._receivers()
        for subject, payload in messages:
            for receiver, patterns in receivers:
                if not any(subject_matches(p, subject) for p in patterns):
                    continue
                if self.drop_filter is not None and self.drop_filter(subject, receiver):
                    continue
                self._seq += 1
                heapq.heappush(self._queue, (self.now + self.latency, self._seq, receiver, payload))

    def kill(self, server: int) -> None:
        """Remove ``server`` at once, as a SIGKILL would; the swarm notes the kill."""
        del self.nodes[server]
        self.swarm.server_killed(server, self.now)

    def pause(self, server: int, seconds: float) -> None:
        """Freeze ``server`` for ``seconds`` (a stalled process): no timers, its messages wait."""
        self._paused[server] = self.now + seconds

    def _frozen(self, server: int) -> bool:
        return self._paused.get(server, -1.0) > self.now

    def run(self, until: float) -> None:
        """Advance virtual time to ``until`` (s), delivering and ticking in time order."""
        while True:
            due = [
                self._paused[k] if self._frozen(k) else node.next_timer()
                for k, node in self.nodes.items()
            ]
            due.append(self.swarm.next_timer())
            if self._queue:
                due.append(self._queue[0][0])
            t = min(due)
            if t > until:
                self.now = until
                return
            self.now = max(self.now, t)
            while self._queue and self._queue[0][0] <= self.now:
                _, seq, receiver, payload = heapq.heappop(self._queue)
                if self._frozen(receiver):
                    heapq.heappush(self._queue, (self._paused[receiver], seq, receiver, payload))
                    continue
                self.delivered += 1
                if receiver == -1:
                    self.swarm.receive(payload, self.now)
                elif receiver in self.nodes:
                    self.nodes[receiver].receive(payload, self.now)
            for k, node in self.nodes.items():
                if self._frozen(k):
                    continue
                if node.next_timer() <= self.now:
                    node.handle_timer(self.now)
                    while node.next_event() is not None:
                        pass
                self._publish(node.messages_to_send())
            self.swarm.handle_timer(self.now)
            self._publish(self.swarm.messages_to_send())
