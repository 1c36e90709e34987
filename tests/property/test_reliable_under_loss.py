"""Reliability of the message layer under drop, duplication, reordering and lost acks.

Two ``MessageLayer`` objects exchange payloads over a simulated one-way route. A packet is acked
to the sender iff a copy of it was delivered and its ack was not lost; every other packet is
reported lost after a timeout, so messages the receiver already has are resent and must be
deduplicated (DESIGN.md "Bad input", spec 004 §4.4.2 and §4.4.4).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.transport.channels import ReceivedMessage
from lagless.transport.packer import MessageLayer

RO, RU, US, UN = 0, 1, 2, 3  # default channels
T0 = 5000.0  # seconds; a non-zero epoch
TICK = 1 / 60  # seconds per simulated frame
LOSS_TIMEOUT = 20  # ticks before an unacked packet is reported lost


@dataclass
class Link:
    drop: float
    dup: float
    ack_loss: float
    max_delay: int  # ticks; uniform delay gives reordering
    rng: random.Random
    packets: list[tuple[int, int, bytes]] = field(default_factory=list)  # (tick, seq, data)
    fates: list[tuple[int, int, bool]] = field(default_factory=list)  # (tick, seq, acked)


def run(
    link: Link,
    plan: dict[int, list[bytes]],
    *,
    max_ticks: int,
    feed_until: int = 0,
) -> tuple[MessageLayer, MessageLayer, list[ReceivedMessage], dict[int, list[bytes]]]:
    """Send ``plan`` (channel -> payloads, spread over the first ticks); return what arrived."""
    a, b = MessageLayer(), MessageLayer()
    rng = link.rng
    queues = {ch: list(payloads) for ch, payloads in plan.items()}
    sent: dict[int, list[bytes]] = {ch: [] for ch in plan}
    received: list[ReceivedMessage] = []
    seq = 0
    for tick in range(max_ticks):
        now = T0 + tick * TICK
        for ch, queue in queues.items():
            for _ in range(rng.randint(0, 3)):
                if queue:
                    payload = queue.pop(0)
                    a.send(ch, payload, now)
                    sent[ch].append(payload)
        data = a.write_packet(seq & 0xFFFF, now)
        if data is not None:
            copies = 0 if rng.random() < link.drop else 1 + (rng.random() < link.dup)
            arrivals = sorted(tick + rng.randint(0, link.max_delay) for _ in range(copies))
            for when in arrivals:
                link.packets.append((when, seq, data))
            acked = bool(arrivals) and rng.random() >= link.ack_loss
            when = arrivals[0] + rng.randint(0, link.max_delay) if acked else tick + LOSS_TIMEOUT
            link.fates.append((when, seq & 0xFFFF, acked))
            seq += 1
        for item in [p for p in link.packets if p[0] <= tick]:
            link.packets.remove(item)
            assert b.read_packet(item[2], now) is None
        for item in [f for f in link.fates if f[0] <= tick]:
            link.fates.remove(item)
            if item[2]:
                a.on_packet_acked(item[1])
            else:
                a.on_packet_lost(item[1])
        while (m := b.next_received()) is not None:
            received.append(m)
        idle = not link.packets and not link.fates and not a.has_pending(now)
        if tick >= feed_until and idle and not any(queues.values()):
            reliable_left = a.next_resend_time() is not None
            if not reliable_left:
                break
    return a, b, received, sent


def check(
    a: MessageLayer, b: MessageLayer, received: list[ReceivedMessage], sent: dict[int, list[bytes]]
) -> None:
    by_channel: dict[int, list[ReceivedMessage]] = {ch: [] for ch in sent}
    for m in received:
        by_channel[m.channel].append(m)
    # reliable-ordered: every message exactly once, in order
    assert [m.payload for m in by_channel[RO]] == sent[RO]
    # reliable-unordered: every message exactly once
    assert sorted(m.payload for m in by_channel[RU]) == sorted(sent[RU])
    assert len({m.message_id for m in by_channel[RU]}) == len(sent[RU])
    # unreliable: never duplicated, never invented
    ids = [m.message_id for m in by_channel[UN]]
    assert len(ids) == len(set(ids))
    assert all(m.payload == sent[UN][m.message_id] for m in by_channel[UN])
    # sequenced: never goes backwards
    seq_ids = [m.message_id for m in by_channel[US]]
    assert seq_ids == sorted(set(seq_ids))
    # every reliable message notified delivered exactly once
    delivered = []
    while (d := a.next_delivered()) is not None:
        delivered.append((d.channel, d.message_id))
    expected = [(RO, i) for i in range(len(sent[RO]))] + [(RU, i) for i in range(len(sent[RU]))]
    assert sorted(delivered) == expected
    assert b.violation is None
    assert b.statistics().reassembly_memory == 0


def _payloads(tag: int, sizes: list[int]) -> list[bytes]:
    return [bytes([tag, i % 256]) + bytes(max(0, s - 2)) for i, s in enumerate(sizes)]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    drop=st.sampled_from([0.0, 0.2, 0.5, 0.9]),
    dup=st.floats(0.0, 0.5),
    ack_loss=st.floats(0.0, 0.5),
    max_delay=st.integers(0, 12),
    sizes=st.lists(st.integers(1, 6000), min_size=1, max_size=25),
)
def test_reliable_under_loss(
    seed: int, drop: float, dup: float, ack_loss: float, max_delay: int, sizes: list[int]
) -> None:
    link = Link(drop=drop, dup=dup, ack_loss=ack_loss, max_delay=max_delay, rng=random.Random(seed))
    plan = {
        RO: _payloads(RO, sizes),
        RU: _payloads(RU, list(reversed(sizes))),
        US: _payloads(US, [20] * 30),
        UN: _payloads(UN, [min(s, 1024) for s in sizes]),
    }
    a, b, received, sent = run(link, plan, max_ticks=20_000)
    check(a, b, received, sent)


def test_big_message_intact_while_small_ones_flow() -> None:
    """A 200 KiB reliable message arrives intact under loss; small messages keep arriving."""
    rng = random.Random(7)
    link = Link(drop=0.2, dup=0.1, ack_loss=0.1, max_delay=6, rng=rng)
    big = rng.randbytes(200 * 1024)
    smalls = _payloads(RO, [50] * 400)
    plan = {RO: smalls, RU: [big], US: _payloads(US, [20] * 50), UN: _payloads(UN, [30] * 50)}
    a, b, received, sent = run(link, plan, max_ticks=20_000)
    check(a, b, received, sent)
    big_at = next(i for i, m in enumerate(received) if m.channel == RU)
    assert received[big_at].payload == big
    small_before = sum(1 for m in received[:big_at] if m.channel == RO)
    assert small_before == len(smalls)  # all 400 small messages arrived while the big one moved
    assert a.statistics().records_resent > 0  # loss really happened


def test_extreme_loss_small_messages() -> None:
    """90 % drop, 50 % ack loss, duplication and reordering: still exactly once, in order."""
    link = Link(drop=0.9, dup=0.3, ack_loss=0.5, max_delay=10, rng=random.Random(11))
    plan = {
        RO: _payloads(RO, [40] * 200),
        RU: _payloads(RU, [40] * 200),
        US: _payloads(US, [10] * 100),
        UN: _payloads(UN, [10] * 100),
    }
    a, b, received, sent = run(link, plan, max_ticks=50_000)
    check(a, b, received, sent)
    assert b.statistics().dropped
