"""Pins the transport fixes: O(records) packing, free ack-only payloads, GOOD start, ack
frequency, RTT-based resends and AIMD congestion avoidance on a bandwidth-limited simulated link."""

from __future__ import annotations

import heapq
import sys
from collections.abc import Callable

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.netsim.link import Fate, Link, LinkConfig
from lagless.transport.config import (
    ChannelConfig,
    ChannelKind,
    CongestionConfig,
    MessageLayerConfig,
)
from lagless.transport.congestion import CongestionMode
from lagless.transport.connection import ACK_DELAY_SIZE, OVERHEAD, Connection, ConnectionConfig
from lagless.transport.events import MessageReceived
from lagless.transport.message_errors import SendQueueFull
from lagless.transport.packer import MessageLayer, parse_payload

RO = 0  # default channel 0: reliable-ordered


def _calls(fn: Callable[[], object]) -> int:
    """Number of Python and C function calls ``fn`` makes (deterministic work measure)."""
    count = 0

    def profile(frame: object, event: str, arg: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return count


def _packing_work(in_flight: int) -> int:
    """Calls spent on one pump (has_pending, next_resend_time, one 1-record packet) while
    ``in_flight`` reliable messages wait for acks."""
    cfg = MessageLayerConfig(reliable_window=1024)
    layer = MessageLayer(config=cfg)
    for i in range(in_flight):
        layer.send(RO, bytes(100), 0.0)
        assert layer.write_packet(i, 0.0) is not None
    assert not layer.has_pending(0.05)
    layer.send(RO, bytes(100), 0.05)

    def pump() -> None:
        layer.has_pending(0.05)
        layer.next_resend_time()
        layer.write_packet(in_flight, 0.05)

    return _calls(pump)


def test_packing_cost_does_not_grow_with_messages_in_flight() -> None:
    few, many = _packing_work(2), _packing_work(500)
    assert many <= few + 5  # before: every pump walked all 500 messages (thousands of calls)


def test_reliable_packing_stops_at_the_first_message_that_does_not_fit() -> None:
    layer = MessageLayer()
    layer.send(RO, b"A" * 600, 0.0)
    layer.send(RO, b"B" * 600, 0.0)
    layer.send(RO, b"C" * 10, 0.0)
    first, second = layer.write_packet(0, 0.0), layer.write_packet(1, 0.0)
    assert first is not None
    assert second is not None
    fragment_size = layer.config.fragment_size
    assert [r.data[:1] for r in parse_payload(first, fragment_size)] == [b"A"]
    assert [r.data[:1] for r in parse_payload(second, fragment_size)] == [b"B", b"C"]


def test_resend_delay_follows_the_measured_round_trip() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED, resend_interval=0.1),)
    )
    layer = MessageLayer(config=cfg)
    layer.send(0, b"x", 10.0)
    assert layer.write_packet(0, 10.0) is not None
    layer.set_resend_delay(0.3)
    assert layer.next_resend_time() == pytest.approx(10.3)
    assert not layer.has_pending(10.2)
    layer.set_resend_delay(0.01)  # never below the channel's resend_interval
    assert layer.next_resend_time() == pytest.approx(10.1)


def _exchange(a: Connection, b: Connection, now: float) -> None:
    for payload in a.payloads_to_send(now):
        b.receive_payload(payload, now)


def test_ack_only_payloads_take_no_pacing_token_and_stay_bounded() -> None:
    config = ConnectionConfig(
        max_burst=1,
        clock="none",
        sparse_ack_delay=0.01,  # one ack delay for every stream: 0.6 of a token, below
        congestion=CongestionConfig(good_send_rate=60.0, bad_send_rate=15.0),
    )
    a = Connection(config=config, now=0.0, is_client=True)
    b = Connection(config=config, now=0.0, is_client=False)
    b.send(RO, b"first")
    assert len(b.payloads_to_send(0.0)) == 1  # spends b's only token
    a.send(RO, b"ping")
    _exchange(a, b, 0.0)
    out = b.payloads_to_send(0.01)  # ack_delay later: 0.6 of a token at 60 packets/s
    assert [len(p) for p in out] == [OVERHEAD + ACK_DELAY_SIZE]  # the header says it waited
    assert b.payloads_to_send(0.011) == []  # one ack-only per ack-eliciting batch
    b.send(RO, b"data")
    assert b.payloads_to_send(0.012) == []  # messages still wait for a token


def test_connection_starts_good_and_an_idle_one_stays_good() -> None:
    conn = Connection(config=ConnectionConfig(clock="none"), now=0.0, is_client=True)
    conn.handle_timer(30.0)
    stats = conn.statistics()
    assert stats.congestion_mode is CongestionMode.GOOD
    assert stats.send_rate == pytest.approx(90.0)  # headroom over a 60 Hz tick


def test_max_burst_is_capped_by_the_ack_field() -> None:
    with pytest.raises(ConfigError, match="max_burst"):
        ConnectionConfig(max_burst=33)
    with pytest.raises(ConfigError, match="ack_frequency"):
        ConnectionConfig(ack_frequency=17)


class SimPair:
    """Client and server joined by two netsim links, driven event by event."""

    def __init__(self, up: LinkConfig, down: LinkConfig, config: ConnectionConfig) -> None:
        self.t = 0.0
        rng = np.random.default_rng(7)
        self.links = {True: Link(up, rng=rng), False: Link(down, rng=rng)}
        self.client = Connection(config=config, now=0.0, is_client=True)
        self.server = Connection(config=config, now=0.0, is_client=False)
        self.heap: list[tuple[float, int, bool, bytes]] = []
        self.count = 0
        self.received = 0  # messages the server handed to its application

    def _flush(self, conn: Connection, to_server: bool) -> None:
        for payload in conn.payloads_to_send(self.t):
            outcome = self.links[to_server].send(len(payload), self.t)
            if outcome.fate is Fate.DELIVERED:
                for when in outcome.arrivals:
                    self.count += 1
                    heapq.heappush(self.heap, (when, self.count, to_server, payload))
        while (event := conn.next_event()) is not None:
            self.received += isinstance(event, MessageReceived) and to_server is False

    def run_until(self, end: float, feed: Callable[[Connection], None]) -> None:
        while self.t < end:
            feed(self.client)
            self._flush(self.client, True)
            self._flush(self.server, False)
            times = [end]
            times += [x for x in (self.client.next_timer(), self.server.next_timer()) if x]
            if self.heap:
                times.append(self.heap[0][0])
            self.t = max(self.t, min(times))
            while self.heap and self.heap[0][0] <= self.t:
                _, _, to_server, payload = heapq.heappop(self.heap)
                (self.server if to_server else self.client).receive_payload(payload, self.t)
            for conn in (self.client, self.server):
                timer = conn.next_timer()
                if timer is not None and timer <= self.t:
                    conn.handle_timer(self.t)


def _bulk(size: int, total: list[int], limit: int) -> Callable[[Connection], None]:
    def feed(conn: Connection) -> None:
        try:
            while total[0] < limit:
                conn.send(RO, bytes(size))
                total[0] += 1
        except SendQueueFull:
            pass

    return feed


def test_a_burst_never_outruns_the_ack_field() -> None:
    # 1000 packets/s, bursts of 32, and a receiver that would otherwise ack only every 50 ms
    config = ConnectionConfig(
        congestion=CongestionConfig(good_send_rate=1000.0, bad_send_rate=1000.0),
        ack_delay=0.05,
    )
    link = LinkConfig(latency=0.01)
    pair = SimPair(link, link, config)
    pair.run_until(3.0, _bulk(1000, [0], 300))
    assert pair.received == 300
    assert pair.client.statistics().packets_lost == 0
    assert pair.client.statistics().messages.records_resent == 0


def test_no_spurious_resends_when_the_round_trip_exceeds_resend_interval() -> None:
    link = LinkConfig(latency=0.1)  # RTT 200 ms: above the 100 ms resend_interval, link GOOD
    pair = SimPair(link, link, ConnectionConfig())
    sent = [0]

    def trickle(conn: Connection) -> None:
        if sent[0] < 20 and pair.t >= 1.0 + sent[0] * 0.05:
            conn.send(RO, bytes(50))
            sent[0] += 1

    pair.run_until(1.0, trickle)  # clock sync measures the round trip first
    assert pair.client.statistics().rtt == pytest.approx(0.2, abs=0.02)
    pair.run_until(5.0, trickle)
    assert pair.received == 20
    assert pair.client.statistics().messages.records_resent == 0


BOTTLENECK = 200_000.0  # bytes per second


def test_aimd_converges_near_the_bottleneck_and_recovers_after_a_bad_period() -> None:
    up = LinkConfig(latency=0.02, bandwidth=BOTTLENECK, queue_limit=30_000)
    down = LinkConfig(latency=0.02)
    pair = SimPair(up, down, ConnectionConfig())
    feed = _bulk(1000, [0], 10**9)
    pair.run_until(5.0, feed)
    start = pair.received
    pair.run_until(15.0, feed)
    goodput = (pair.received - start) * 1000 / 10.0
    stats = pair.client.statistics()
    assert goodput > 0.75 * BOTTLENECK  # 60 packets/s alone would give ~0.3 of it
    # queue overflow stays modest (about 8 % at 15 s, the AIMD sawtooth at a 30 kB queue): below
    # the 10 % loss threshold, so the link never looks BAD; no collapse
    assert stats.loss < CongestionConfig().loss_threshold
    assert stats.congestion_mode is CongestionMode.GOOD
    # a bad period: 40 % loss for 3 s drops the rate, then the link heals
    pair.links[True] = Link(
        LinkConfig(latency=0.02, bandwidth=BOTTLENECK, queue_limit=30_000, loss=0.4),
        rng=np.random.default_rng(8),
    )
    pair.run_until(18.0, feed)
    assert pair.client.statistics().send_rate <= 60.0
    pair.links[True] = Link(up, rng=np.random.default_rng(9))
    # BAD mode lasts until the 256-packet loss window forgets the bad period (~17 s at 15/s)
    pair.run_until(40.0, feed)
    assert pair.client.statistics().congestion_mode is CongestionMode.GOOD
    start = pair.received
    pair.run_until(50.0, feed)
    assert (pair.received - start) * 1000 / 10.0 > 0.75 * BOTTLENECK
