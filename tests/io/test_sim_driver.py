"""The simulator driver pumps any SansIO object: datagrams, timers and events on virtual time."""

from __future__ import annotations

from lagless._types import Address
from lagless.io.sim import SimEndpoint
from lagless.netsim import LinkConfig, Network, Scheduler


class Pinger:
    """Sends b'ping' every `interval` seconds to `peer` and records when pongs arrive."""

    def __init__(self, peer: Address | None, interval: float, start: float) -> None:
        self.peer = peer
        self.interval = interval
        self.deadline = start
        self.out: list[tuple[bytes, Address]] = []
        self.events: list[tuple[bytes, float]] = []
        self.timer_calls: list[float] = []

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        if data == b"ping":
            self.out.append((b"pong", addr))
        self.events.append((data, now))

    def handle_timer(self, now: float) -> None:
        self.timer_calls.append(now)
        if self.peer is not None and now >= self.deadline:
            self.out.append((b"ping", self.peer))
            self.deadline = now + self.interval

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        out, self.out = self.out, []
        return out

    def next_timer(self) -> float | None:
        return self.deadline if self.peer is not None else None

    def next_event(self) -> object | None:
        return self.events.pop(0) if self.events else None


def _network(latency: float) -> tuple[Scheduler, Network]:
    scheduler = Scheduler(start=500.0)
    network = Network(scheduler, seed=3, default_link=LinkConfig(latency=latency))
    network.add_host("a")
    network.add_host("b")
    return scheduler, network


def test_timers_and_round_trips_follow_link_latency() -> None:
    scheduler, network = _network(latency=0.05)
    server = SimEndpoint(Pinger(None, 0.0, 500.0), network.host("b"), 7000)
    client_obj = Pinger(server.address, interval=0.25, start=500.0)
    pongs: list[float] = []
    SimEndpoint(
        client_obj,
        network.host("a"),
        on_event=lambda event: pongs.append(event[1]),  # type: ignore[index]
    )
    scheduler.run(until=502.0)
    assert client_obj.timer_calls[:3] == [500.0, 500.25, 500.5]
    assert len(client_obj.timer_calls) == 9  # 500.0 .. 502.0 every 0.25 s
    assert len(pongs) == 8  # the ping sent at 502.0 is still in flight
    for k, t in enumerate(pongs):
        assert abs(t - (500.0 + 0.25 * k + 0.1)) < 1e-9


def test_poke_flushes_application_sends_and_close_stops_driving() -> None:
    scheduler, network = _network(latency=0.01)
    server_obj = Pinger(None, 0.0, 0.0)
    server = SimEndpoint(server_obj, network.host("b"), 7000)
    client = SimEndpoint(Pinger(None, 0.0, 0.0), network.host("a"))
    client.poke(lambda obj: obj.out.append((b"ping", server.address)))
    scheduler.run(until=scheduler.now + 0.1)
    got = [data for data, _ in client.obj.events]
    assert got == [b"pong"]
    server.close()
    client.poke(lambda obj: obj.out.append((b"ping", server.address)))
    scheduler.run(until=scheduler.now + 0.1)
    assert len(server_obj.events) == 1
    assert network.stats("b").undeliverable == 1
