"""A tiny deterministic datagram router for in-memory Silac swarms (test helper)."""

from __future__ import annotations

import heapq
import random
from collections.abc import Callable

from lagless._types import Address
from lagless.gossip import GossipConfig, GossipEvent, GossipPeer

Filter = Callable[[bytes, Address, Address, float], bool]


class Swarm:
    """Peers by address; datagrams arrive after ``latency`` s; time advances in ``dt`` steps."""

    def __init__(self, *, latency: float = 0.04, start: float = 1000.0, dt: float = 0.005) -> None:
        self.peers: dict[Address, GossipPeer] = {}
        self.events: dict[Address, list[GossipEvent]] = {}
        self.sent: list[tuple[float, bytes, Address, Address]] = []
        self.block: Filter | None = None
        self.latency = latency
        self.now = start
        self.dt = dt
        self._flight: list[tuple[float, int, bytes, Address, Address]] = []
        self._seq = 0

    def add(
        self,
        index: int,
        *,
        config: GossipConfig | None = None,
        seed: int | None = None,
        **kw: object,
    ) -> GossipPeer:
        addr = (f"10.0.{index // 250}.{index % 250 + 1}", 4000)
        peer = GossipPeer(
            config=config or GossipConfig(),
            rng=random.Random(index if seed is None else seed),
            address=addr,
            **kw,  # type: ignore[arg-type]
        )
        self.peers[addr] = peer
        self.events[addr] = []
        return peer

    def pump(self, peer: GossipPeer) -> None:
        for data, dst in peer.datagrams_to_send(self.now):
            self.sent.append((self.now, data, peer.address, dst))
            if self.block is not None and self.block(data, peer.address, dst, self.now):
                continue
            self._seq += 1
            heapq.heappush(
                self._flight, (self.now + self.latency, self._seq, data, peer.address, dst)
            )
        while (event := peer.next_event()) is not None:
            self.events[peer.address].append(event)

    def run(self, duration: float) -> None:
        end = self.now + duration
        while self.now < end - 1e-12:
            self.now += self.dt
            while self._flight and self._flight[0][0] <= self.now:
                _, _, data, src, dst = heapq.heappop(self._flight)
                target = self.peers.get(dst)
                if target is not None:
                    target.receive_datagram(data, src, self.now)
                    self.pump(target)
            for peer in self.peers.values():
                timer = peer.next_timer()
                if timer is not None and timer <= self.now:
                    peer.handle_timer(self.now)
                self.pump(peer)

    def of(self, peer: GossipPeer, kind: type) -> list:
        return [e for e in self.events[peer.address] if isinstance(e, kind)]
