"""Reliable channels at extreme conditions (DESIGN.md "Bad input"): 90 % loss, 2 s latency,
duplication and reordering; every reliable message arrives exactly once, ordered ones in order."""

from __future__ import annotations

import random

import pytest

from lagless.io.sim import SimEndpoint
from lagless.netsim import JitterConfig, LinkConfig, Network, Scheduler
from lagless.transport import (
    Client,
    ClientConnected,
    Connected,
    MessageReceived,
    NetcodeClientConfig,
    NetcodeServerConfig,
    Server,
    generate_connect_token,
)
from tests.transport.test_connection import RELIABLE_ORDERED, RELIABLE_UNORDERED, Route, _received

HOSTILE = LinkConfig(
    latency=2.0,
    jitter=JitterConfig(kind="uniform", amount=0.5),
    loss=0.9,
    duplicate=0.2,
    reorder=0.2,
    reorder_delay=0.3,
)


@pytest.mark.parametrize("seed", [11, 12])
def test_connection_survives_90_percent_loss_and_2s_latency(seed: int) -> None:
    route = Route(seed=seed, loss=0.9, dup=0.2, delay=(2.0, 2.6))
    ordered = [f"o{i}".encode() * (1 + i % 700) for i in range(40)]  # some fragmented
    unordered = [f"u{i}".encode() for i in range(40)]
    for a, b in zip(ordered, unordered, strict=True):
        route.client.send(RELIABLE_ORDERED, a)
        route.client.send(RELIABLE_UNORDERED, b)
    for _ in range(600):
        route.run(1.0, dt=0.01)
        if len(_received(route.events[False], RELIABLE_ORDERED)) == len(ordered) and len(
            _received(route.events[False], RELIABLE_UNORDERED)
        ) == len(unordered):
            break
    assert _received(route.events[False], RELIABLE_ORDERED) == ordered
    got = _received(route.events[False], RELIABLE_UNORDERED)
    assert sorted(got) == sorted(unordered)
    assert len(got) == len(set(got))


def test_connection_soak_long() -> None:
    route = Route(seed=99, loss=0.9, dup=0.3, delay=(1.5, 2.5))
    ordered = [i.to_bytes(4, "little") * (1 + i % 900) for i in range(300)]
    for payload in ordered:
        route.client.send(RELIABLE_ORDERED, payload)
    for _ in range(3000):
        route.run(1.0, dt=0.01)
        if len(_received(route.events[False], RELIABLE_ORDERED)) == len(ordered):
            break
    assert _received(route.events[False], RELIABLE_ORDERED) == ordered


def test_server_and_client_over_a_hostile_simulated_link() -> None:
    key = bytes(range(32))
    scheduler = Scheduler(start=10.0)
    network = Network(scheduler, seed=5, default_link=HOSTILE.with_overrides(loss=0.5))
    network.add_host("10.1.0.1")
    network.add_host("10.1.0.2")
    server_events: list[object] = []
    SimEndpoint(
        Server(
            config=NetcodeServerConfig(
                protocol_id=9, private_key=key, public_address=("10.1.0.1", 4000)
            ),
            random_bytes=random.Random(1).randbytes,
            unix_time_offset=1_700_000_000.0,
        ),
        network.host("10.1.0.1"),
        4000,
        on_event=server_events.append,
    )
    client_events: list[object] = []
    client = SimEndpoint(
        Client(config=NetcodeClientConfig()),
        network.host("10.1.0.2"),
        on_event=client_events.append,
    )
    token = generate_connect_token(
        public_addresses=[("10.1.0.1", 4000)],
        protocol_id=9,
        expire_seconds=600,
        timeout_seconds=120,  # a 2 s link with 50 % loss needs patience
        client_id=3,
        user_data=b"",
        private_key=key,
        now_unix=1_700_000_010,
        random_bytes=random.Random(2).randbytes,
    )
    client.poke(lambda c: c.connect(token, scheduler.now))
    scheduler.run(until=scheduler.now + 60.0)
    assert any(isinstance(e, Connected) for e in client_events)
    assert any(isinstance(e, ClientConnected) for e in server_events)
    sent = [f"msg {i}".encode() * (1 + i % 300) for i in range(60)]
    for payload in sent:
        client.poke(lambda c, p=payload: c.send(RELIABLE_ORDERED, p))
    for _ in range(300):
        scheduler.run(until=scheduler.now + 1.0)
        if len([e for e in server_events if isinstance(e, MessageReceived)]) == len(sent):
            break
    assert [e.payload for e in server_events if isinstance(e, MessageReceived)] == sent
