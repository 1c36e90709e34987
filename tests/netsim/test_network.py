from __future__ import annotations

import pytest

from lagless._types import Address
from lagless.errors import ConfigError, LocalProtocolError
from lagless.netsim import (
    UDP_IPV4_HEADER,
    Datagram,
    Fate,
    JitterConfig,
    LinkConfig,
    Network,
    Scheduler,
    Trace,
    get_profile,
)
from lagless.netsim.network import Receiver


def inbox(log: list[tuple[bytes, Address, float]]) -> Receiver:
    return lambda data, src, now: log.append((data, src, now))


def test_datagram_arrives_after_link_latency() -> None:
    sched = Scheduler(start=1000.0)
    net = Network(sched, seed=1, default_link=LinkConfig(latency=0.25))
    a, b = net.add_host("a"), net.add_host("b")
    got: list[tuple[bytes, Address, float]] = []
    src = a.bind(1, inbox([]))
    dst = b.bind(2, inbox(got))
    a.send(b"hello", src, dst)
    sched.run(until=1000.2)
    assert got == []
    sched.run()
    assert got == [(b"hello", ("a", 1), 1000.25)]


def test_set_profile_directions() -> None:
    sched = Scheduler()
    net = Network(sched, seed=1)
    client, server = net.add_host("client"), net.add_host("server")
    profile = get_profile("edge")
    net.set_profile(client, server, profile)
    assert net.link_config(client, server) is profile.up
    assert net.link_config("server", "client") is profile.down
    assert profile.up.bandwidth != profile.down.bandwidth


def test_stats_count_headers() -> None:
    sched = Scheduler()
    net = Network(sched, seed=3, default_link=LinkConfig(latency=0.01, duplicate=0.5))
    a, b = net.add_host("a"), net.add_host("b")
    src, dst = a.bind(0, inbox([])), b.bind(0, inbox([]))
    sizes = [10 * k for k in range(1, 201)]
    for size in sizes:
        net.send(bytes(size), src, dst)
    sched.run()
    sent = net.stats(a)
    link = net.link_stats(a, b)
    got = net.stats("b")
    assert (sent.datagrams_sent, sent.payload_bytes_sent) == (200, sum(sizes))
    assert sent.wire_bytes_sent == sum(sizes) + 200 * UDP_IPV4_HEADER
    assert link.datagrams_sent == 200
    assert 60 < link.duplicated < 140
    assert got.datagrams_received == 200 + link.duplicated == link.datagrams_received
    assert got.wire_bytes_received - got.payload_bytes_received == got.datagrams_received * 28
    assert net.stats(b).datagrams_sent == 0
    assert net.link_stats(b, a).datagrams_sent == 0


def test_trace_records_every_fate() -> None:
    sched = Scheduler()
    trace = Trace()
    config = LinkConfig(latency=0.01, loss=0.2, duplicate=0.2, mtu=200, bandwidth=20_000.0)
    net = Network(sched, seed=5, default_link=config.with_overrides(queue_limit=1000), trace=trace)
    a, b = net.add_host("a"), net.add_host("b")
    src, dst = a.bind(0, inbox([])), b.bind(0, inbox([]))
    for k in range(400):
        sched.call_at(k * 0.002, net.send, bytes(300 if k % 10 == 0 else 100), src, dst)
    sched.run()
    stats = net.link_stats(a, b)
    fates = [r.fate for r in trace if not r.duplicate]
    assert len(fates) == 400
    assert fates.count(Fate.MTU_DROPPED) == stats.mtu_dropped == 40
    assert fates.count(Fate.QUEUE_DROPPED) == stats.queue_dropped > 0
    assert fates.count(Fate.LOST) == stats.lost > 0
    assert sum(r.duplicate for r in trace) == stats.duplicated > 0
    for record in trace:
        assert (record.arrived_at is None) == (record.fate is not Fate.DELIVERED)
        assert record.src == src
        assert record.dst == dst
    arrived = sorted(r.arrived_at for r in trace if r.arrived_at is not None)
    assert len(arrived) == net.stats(b).datagrams_received


def scenario(seed: int, *, extra_link_first: bool = False) -> Trace:
    sched = Scheduler(start=50.0)
    trace = Trace()
    net = Network(sched, seed=seed, trace=trace)
    if extra_link_first:
        other = net.add_host("other")
    client, server = net.add_host("client"), net.add_host("server")
    if extra_link_first:
        net.set_link(
            other, server, LinkConfig(loss=0.5, jitter=JitterConfig(kind="uniform", amount=1.0))
        )
    net.set_profile(client, server, get_profile("gprs"))
    c, s = client.bind(0, inbox([])), server.bind(7777, inbox([]))
    if extra_link_first:
        o = other.bind(0, inbox([]))
    for k in range(300):
        sched.call_at(50.0 + k * 0.05, net.send, bytes(k % 50 + 4), c, s)
        sched.call_at(50.0 + k * 0.05, net.send, bytes(20), s, c)
        if extra_link_first:
            sched.call_at(50.0 + k * 0.05, net.send, bytes(20), o, s)
    sched.run()
    if extra_link_first:
        kept = Trace()
        for record in trace:
            if record.src[0] != "other":
                kept.record(record)
        return kept
    return trace


def test_same_seed_same_trace_bytes_different_seed_differs() -> None:
    first = scenario(9).to_bytes()
    assert first == scenario(9).to_bytes()
    assert first != scenario(10).to_bytes()
    assert len(first) > 10_000


def test_links_do_not_shift_each_other() -> None:
    plain = scenario(21)
    crowded = scenario(21, extra_link_first=True)
    key = [(r.src, r.dst, r.size, r.sent_at, r.fate, r.arrived_at, r.duplicate) for r in plain]
    other = [(r.src, r.dst, r.size, r.sent_at, r.fate, r.arrived_at, r.duplicate) for r in crowded]
    assert key == other


def test_unbound_port_counts_undeliverable() -> None:
    sched = Scheduler()
    net = Network(sched, seed=0)
    a, b = net.add_host("a"), net.add_host("b")
    src = a.bind(0, inbox([]))
    net.send(b"x", src, ("b", 9))
    net.send(b"y", src, ("nowhere", 9))
    sched.run()
    assert net.stats(b).undeliverable == 1
    assert net.stats(b).datagrams_received == 1
    assert net.unroutable == 1
    got: list[tuple[bytes, Address, float]] = []
    port = b.bind(9, inbox(got))
    net.send(b"z", src, port)
    sched.run()
    assert got == [(b"z", src, 0.0)]
    b.unbind(9)
    net.send(b"w", src, port)
    sched.run()
    assert net.stats(b).undeliverable == 2


def test_route_packet_hook_can_drop_and_deliver_directly() -> None:
    sched = Scheduler()
    net = Network(sched, seed=0, default_link=LinkConfig(latency=1.0))
    a, b = net.add_host("a"), net.add_host("b")
    got: list[tuple[bytes, Address, float]] = []
    src, dst = a.bind(0, inbox([])), b.bind(0, inbox(got))
    seen: list[Datagram] = []

    def route(datagram: Datagram) -> None:
        seen.append(datagram)
        if datagram.data == b"drop":
            return
        if datagram.data == b"fast":
            net.deliver_at(datagram, sched.now + 0.001)
            return
        net.transmit(datagram)

    net.route_packet = route
    for payload in (b"drop", b"slow", b"fast"):
        net.send(payload, src, dst)
    sched.run()
    assert [d.seq for d in seen] == [0, 1, 2]
    assert got == [(b"fast", src, 0.001), (b"slow", src, 1.0)]
    assert net.link_stats(a, b).datagrams_sent == 1
    assert net.stats(a).datagrams_sent == 3


def test_set_default_link_applies_to_pairs_without_set_link() -> None:
    sched = Scheduler()
    net = Network(sched, seed=0)
    a, b, c = net.add_host("a"), net.add_host("b"), net.add_host("c")
    got: list[tuple[bytes, Address, float]] = []
    src = a.bind(0, inbox([]))
    b_addr, c_addr = b.bind(0, inbox(got)), c.bind(0, inbox(got))
    net.set_link(a, c, LinkConfig(latency=0.5))
    net.send(b"1", src, b_addr)
    sched.run()
    net.set_default_link(LinkConfig(latency=0.2))
    net.send(b"2", src, b_addr)
    net.send(b"3", src, c_addr)
    sched.run()
    assert [(d, t) for d, _, t in got] == [(b"1", 0.0), (b"2", 0.2), (b"3", 0.5)]


def test_host_and_port_errors() -> None:
    net = Network(Scheduler(), seed=0)
    a = net.add_host("a")
    with pytest.raises(LocalProtocolError, match="taken"):
        net.add_host("a")
    with pytest.raises(LocalProtocolError, match="host name"):
        net.add_host("x->y")
    assert a.bind(0, inbox([])) == ("a", 49152)
    assert a.bind(0, inbox([])) == ("a", 49153)
    with pytest.raises(LocalProtocolError, match="already bound"):
        a.bind(49152, inbox([]))
    with pytest.raises(LocalProtocolError, match="port"):
        a.bind(70000, inbox([]))
    with pytest.raises(LocalProtocolError, match="src"):
        a.send(b"", ("b", 1), ("a", 1))
    with pytest.raises(LocalProtocolError, match="unknown host"):
        net.send(b"", ("ghost", 1), ("a", 1))
    with pytest.raises(LocalProtocolError, match="unknown host"):
        net.set_link("a", "ghost", LinkConfig())
    with pytest.raises(LocalProtocolError, match="not bound"):
        a.unbind(1)
    with pytest.raises(ConfigError, match="config"):
        net.set_link("a", "a", "fast")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="seed"):
        Network(Scheduler(), seed=-1)
