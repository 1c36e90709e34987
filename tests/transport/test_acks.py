"""Sequence buffers, the ack header and delivery notifications (spec 004 §4.4.2, Tribes model)."""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import ConfigError, LocalProtocolError
from lagless.transport.acks import (
    ACK_HEADER_SIZE,
    AckConfig,
    AckHeader,
    AckTracker,
    PacketAcked,
    PacketLost,
    ReceiveStatus,
    SequenceBuffer,
    decode_header,
    encode_header,
)
from lagless.wire.seq import seq_add, seq_diff

T0 = 1234.5  # seconds; trackers must not assume time starts at 0

# ---------------------------------------------------------------- SequenceBuffer


def test_sequence_buffer_basic() -> None:
    buf: SequenceBuffer[str] = SequenceBuffer(8)
    assert buf.newest is None
    assert buf.insert(3, "a")
    assert buf.find(3) == "a"
    assert 3 in buf
    assert buf.find(11) is None  # same slot, different sequence
    assert buf.remove(3) == "a"
    assert buf.find(3) is None
    assert buf.remove(3) is None
    assert len(buf) == 0


def test_sequence_buffer_wraps_and_clears_skipped_slots() -> None:
    buf: SequenceBuffer[int] = SequenceBuffer(8)
    for s in (65533, 65534, 65535):
        buf.insert(s, s)
    assert buf.insert(1, 1)  # wrapped: 1 is newer than 65535
    assert buf.newest == 1
    assert buf.find(0) is None  # skipped, cleared
    assert buf.find(65535) == 65535
    # 65533 is 4 behind 1 in a buffer of 8: still stored and not stale.
    assert buf.find(65533) == 65533
    buf.insert(9, 9)  # jump 8 ahead: every older slot is now cleared or stale
    assert buf.find(65535) is None
    assert buf.is_stale(1)
    assert not buf.insert(1, 1)
    assert len(buf) == 1


def test_sequence_buffer_old_entry_cannot_alias_after_full_wrap() -> None:
    buf: SequenceBuffer[str] = SequenceBuffer(16)
    buf.insert(5, "old")
    seq = 5
    for _ in range(65536 // 8):
        seq = seq_add(seq, 8)
        buf.insert(seq, "new")
    assert seq == 5
    assert buf.find(5) == "new"


@given(st.lists(st.tuples(st.integers(0, 100), st.booleans()), max_size=300))
def test_sequence_buffer_matches_model(ops: list[tuple[int, bool]]) -> None:
    size = 16
    buf: SequenceBuffer[int] = SequenceBuffer(size)
    model: dict[int, int] = {}
    newest: int | None = None
    base = 65500  # exercise the wrap
    for step, (delta, remove) in enumerate(ops):
        seq = (base + delta) % 65536
        if remove:
            assert buf.remove(seq) == model.pop(seq, None)
            continue
        stale = newest is not None and seq_diff(seq, newest) <= -size
        assert buf.insert(seq, step) is not stale
        if not stale:
            model[seq] = step
            if newest is None or seq_diff(seq, newest) > 0:
                newest = seq
        model = {s: v for s, v in model.items() if seq_diff(s, newest) > -size}  # type: ignore[arg-type]
        for s in range(base, base + 101):
            assert buf.find(s % 65536) == model.get(s % 65536)


@pytest.mark.parametrize("size", [0, 3, 65536, 100])
def test_sequence_buffer_size_validated(size: int) -> None:
    with pytest.raises(ConfigError, match="size"):
        SequenceBuffer(size)


def test_sequence_buffer_rejects_bad_sequence() -> None:
    buf: SequenceBuffer[int] = SequenceBuffer(4)
    with pytest.raises(LocalProtocolError, match="sequence"):
        buf.insert(65536, 1)
    with pytest.raises(LocalProtocolError, match="sequence"):
        buf.find(-1)


# ---------------------------------------------------------------- header codec

headers = st.builds(
    AckHeader,
    sequence=st.integers(0, 65535),
    ack=st.integers(0, 65535),
    ack_bits=st.integers(0, 2**32 - 1),
)


@given(headers, st.binary(max_size=8), st.binary(max_size=8))
def test_header_round_trip(header: AckHeader, prefix: bytes, suffix: bytes) -> None:
    data = encode_header(header)
    assert len(data) == ACK_HEADER_SIZE == 8
    decoded = decode_header(prefix + data + suffix, len(prefix))
    assert decoded == (header, len(prefix) + 8)


def test_header_vector() -> None:
    header = AckHeader(sequence=0x0102, ack=0xFFFE, ack_bits=0x80000001)
    assert encode_header(header) == bytes.fromhex("0201feff01000080")


@given(st.binary(max_size=20), st.integers(-3, 25))
def test_header_decode_arbitrary_bytes(data: bytes, offset: int) -> None:
    result = decode_header(data, offset)
    if offset < 0 or len(data) - offset < 8:
        assert result is None
    else:
        assert result is not None
        assert encode_header(result[0]) == data[offset : offset + 8]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"sequence": 65536, "ack": 0, "ack_bits": 0}, "sequence"),
        ({"sequence": 0, "ack": -1, "ack_bits": 0}, "ack"),
        ({"sequence": 0, "ack": 0, "ack_bits": 2**32}, "ack_bits"),
    ],
)
def test_header_encode_validates(kwargs: dict[str, int], name: str) -> None:
    with pytest.raises(LocalProtocolError, match=name):
        encode_header(AckHeader(**kwargs))


# ---------------------------------------------------------------- AckTracker unit behaviour


def _ack_of(sender: AckTracker, receiver: AckTracker, now: float) -> AckHeader:
    """A header from ``receiver`` back to ``sender`` carrying the receiver's ack fields."""
    ack, bits = receiver.ack_fields()
    return AckHeader(sequence=receiver.next_send(now, 0).sequence, ack=ack, ack_bits=bits)


def test_ack_bits_layout() -> None:
    rx = AckTracker()
    assert rx.ack_fields() == (65535, 0)
    for s in (10, 12, 13, 8):
        assert rx.on_receive(AckHeader(sequence=s, ack=65535, ack_bits=0), T0).accepted
    ack, bits = rx.ack_fields()
    assert ack == 13
    # bit n <-> 13 - 1 - n: 12 -> bit 0, 10 -> bit 2, 8 -> bit 4
    assert bits == 0b10101


@given(st.sets(st.integers(0, 200), min_size=1, max_size=120), st.randoms(use_true_random=False))
def test_ack_bits_match_brute_force(received: set[int], rnd: random.Random) -> None:
    rx = AckTracker()
    order = [(65500 + s) % 65536 for s in received]
    rnd.shuffle(order)
    accepted: set[int] = set()
    for s in order:
        result = rx.on_receive(AckHeader(sequence=s, ack=65535, ack_bits=0), T0)
        if result.accepted:
            accepted.add(s)
    ack, bits = rx.ack_fields()
    assert ack == max(accepted, key=lambda s: seq_diff(s, 65500))
    expected = sum(1 << n for n in range(32) if seq_add(ack, -1 - n) in accepted)
    assert bits == expected


def test_duplicate_and_stale_rejected() -> None:
    rx = AckTracker(config=AckConfig(received_window=64))
    tx = AckTracker()
    h0 = tx.next_send(T0, 10)
    assert rx.on_receive(h0, T0).status is ReceiveStatus.ACCEPTED
    assert rx.on_receive(h0, T0).status is ReceiveStatus.DUPLICATE
    fields = rx.ack_fields()
    # A duplicate carrying a different ack changes nothing: no acks processed.
    rx.next_send(T0, 10)
    dup = AckHeader(sequence=h0.sequence, ack=0, ack_bits=0)
    result = rx.on_receive(dup, T0 + 0.1)
    assert result.status is ReceiveStatus.DUPLICATE
    assert result.acked == ()
    assert rx.poll_notifications(T0 + 0.1) == []
    assert rx.ack_fields() == fields
    rx.on_receive(AckHeader(sequence=63, ack=65535, ack_bits=0), T0)
    again = rx.on_receive(AckHeader(sequence=0, ack=65535, ack_bits=0), T0)
    assert again.status is ReceiveStatus.DUPLICATE  # 63 behind: still inside the 64 window
    rx.on_receive(AckHeader(sequence=100, ack=65535, ack_bits=0), T0)
    stale = rx.on_receive(AckHeader(sequence=1, ack=65535, ack_bits=0), T0)
    assert stale.status is ReceiveStatus.STALE
    assert not stale.accepted


def test_acked_and_rtt() -> None:
    a, b = AckTracker(), AckTracker()
    h = a.next_send(T0, 100)
    assert b.on_receive(h, T0 + 0.03).accepted
    result = a.on_receive(_ack_of(a, b, T0 + 0.04), T0 + 0.07)
    (acked,) = result.acked
    assert (acked.sequence, acked.send_time, acked.size) == (0, T0, 100)
    assert acked.rtt == pytest.approx(0.07)
    assert a.rtt.rtt == pytest.approx(0.07)
    assert a.poll_notifications(T0 + 0.07) == list(result.acked)
    assert a.poll_notifications(T0 + 10) == []  # exactly once
    assert a.in_flight == 0


def test_rtt_fed_only_from_ack_field() -> None:
    a = AckTracker()
    a.next_send(T0, 1)  # seq 0
    a.next_send(T0 + 0.1, 1)  # seq 1
    # One header acks 1 (ack field) and 0 (bit 0) at T0 + 0.15.
    result = a.on_receive(AckHeader(sequence=0, ack=1, ack_bits=1), T0 + 0.15)
    assert [p.sequence for p in result.acked] == [0, 1]
    assert [p.rtt for p in result.acked] == pytest.approx([0.15, 0.05])
    assert a.rtt.samples == 1
    assert a.rtt.rtt == pytest.approx(0.05)


def test_loss_rules() -> None:
    # (a) timeout: initial_loss_timeout before any RTT sample.
    a = AckTracker()
    a.next_send(T0, 7)
    assert a.next_loss_deadline() == pytest.approx(T0 + 1.0)
    assert a.poll_notifications(T0 + 0.99) == []
    assert a.poll_notifications(T0 + 1.0) == [PacketLost(sequence=0, send_time=T0, size=7, rtt=0.0)]
    assert a.next_loss_deadline() is None
    # after RTT samples: max(2 * srtt, 0.2 s)
    a.rtt.on_sample(0.3)
    assert a.loss_timeout() == pytest.approx(0.6)
    a.rtt.on_sample(0.3)
    b = AckTracker()
    b.rtt.on_sample(0.01)
    assert b.loss_timeout() == pytest.approx(0.2)

    # (b) fell off the bitfield: an ack more than 32 ahead.
    c = AckTracker()
    for i in range(40):
        c.next_send(T0 + i * 0.001, 1)
    result = c.on_receive(AckHeader(sequence=0, ack=39, ack_bits=0), T0 + 0.05)
    assert [p.sequence for p in result.acked] == [39]
    notes = c.poll_notifications(T0 + 0.05)
    # 39 - 6 = 33 > 32: sequences 0..6 can no longer be covered by any later header.
    assert [type(n) for n in notes] == [PacketAcked] + [PacketLost] * 7
    assert [n.sequence for n in notes[1:]] == [0, 1, 2, 3, 4, 5, 6]
    assert c.in_flight == 40 - 8

    # (c) evicted from a full sent buffer.
    d = AckTracker(config=AckConfig(sent_buffer_size=64))
    for i in range(64):
        d.next_send(T0, i)
    assert d.poll_notifications(T0) == []
    d.next_send(T0, 64)
    assert d.poll_notifications(T0) == [PacketLost(sequence=0, send_time=T0, size=0, rtt=0.0)]


def test_bitfield_edge_is_32() -> None:
    c = AckTracker()
    for _ in range(34):
        c.next_send(T0, 1)
    c.on_receive(AckHeader(sequence=0, ack=33, ack_bits=0), T0)
    notes = c.poll_notifications(T0)
    # 33 - 32 = 1 is still coverable by a later header's bit 31; only 0 fell off.
    assert [(type(n), n.sequence) for n in notes] == [(PacketAcked, 33), (PacketLost, 0)]
    c.on_receive(AckHeader(sequence=1, ack=33, ack_bits=1 << 31), T0)
    assert [(type(n), n.sequence) for n in c.poll_notifications(T0)] == [(PacketAcked, 1)]


def test_late_ack_after_loss_ignored() -> None:
    a = AckTracker()
    a.next_send(T0, 1)
    assert len(a.poll_notifications(T0 + 5)) == 1
    result = a.on_receive(AckHeader(sequence=0, ack=0, ack_bits=0), T0 + 6)
    assert result.accepted
    assert result.acked == ()
    assert a.poll_notifications(T0 + 6) == []


def test_late_ack_feeds_rtt() -> None:
    """A path slower than the initial 1 s timeout still gets measured (then stops losing)."""
    a = AckTracker()
    a.next_send(T0, 1)
    assert [type(n) for n in a.poll_notifications(T0 + 1.5)] == [PacketLost]
    assert not a.rtt.has_samples
    a.on_receive(AckHeader(sequence=0, ack=0, ack_bits=0), T0 + 3.0)
    assert a.rtt.has_samples
    assert a.rtt.rtt == pytest.approx(3.0)
    assert a.loss_timeout() == pytest.approx(6.0)
    a.next_send(T0 + 3.0, 1)
    assert a.poll_notifications(T0 + 5.5) == []  # within 2 x SRTT: no longer declared lost


def test_future_ack_ignored() -> None:
    a = AckTracker()
    for _ in range(3):
        a.next_send(T0, 1)
    result = a.on_receive(AckHeader(sequence=0, ack=500, ack_bits=2**32 - 1), T0)
    assert result.accepted
    assert result.acked == ()
    assert a.in_flight == 3
    # The peer's "nothing received yet" ack (65535) is harmless even once we are past 32768.
    b = AckTracker()
    for _ in range(40000):
        b.next_send(T0, 1)
        b.poll_notifications(T0)
    b.next_send(T0 + 0.5, 1)
    assert [type(n) for n in b.poll_notifications(T0 + 0.5)] == [PacketLost]  # evicted, rule (c)
    assert b.on_receive(AckHeader(sequence=0, ack=65535, ack_bits=0), T0 + 0.5).acked == ()
    assert b.poll_notifications(T0 + 0.5) == []


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"sent_buffer_size": 100}, "sent_buffer_size"),
        ({"received_window": 32}, "received_window"),
        ({"loss_rtt_factor": 0.5}, "loss_rtt_factor"),
        ({"min_loss_timeout": 0.0}, "min_loss_timeout"),
        ({"initial_loss_timeout": float("inf")}, "initial_loss_timeout"),
    ],
)
def test_ack_config_validated(kwargs: dict[str, float], name: str) -> None:
    with pytest.raises(ConfigError, match=name):
        AckConfig(**kwargs)  # type: ignore[arg-type]


def test_next_send_rejects_negative_size() -> None:
    with pytest.raises(LocalProtocolError, match="size"):
        AckTracker().next_send(T0, -1)


# ---------------------------------------------------------------- two peers over a hostile network


@dataclass
class _Side:
    tracker: AckTracker
    sent: dict[tuple[int, float], int] = field(default_factory=dict)  # (seq, send_time) -> id
    received_ids: set[int] = field(default_factory=set)
    outcome: dict[int, str] = field(default_factory=dict)  # id -> "acked" / "lost"


def _run_link(
    *,
    seed: int,
    packets: int,
    drop: float,
    dup: float,
    delay: tuple[float, float],
    interval: float = 0.01,
    config: AckConfig | None = None,
) -> tuple[_Side, _Side]:
    """Both sides send one packet per ``interval``; return the sides after a long quiet period."""
    rng = random.Random(seed)
    sides = (_Side(AckTracker(config=config)), _Side(AckTracker(config=config)))
    queue: list[tuple[float, int, int, AckHeader, int]] = []  # (arrival, tie, dest, header, id)
    tie = 0
    next_id = 0

    def collect(side: _Side, peer: _Side, now: float) -> None:
        for note in side.tracker.poll_notifications(now):
            pid = side.sent.pop((note.sequence, note.send_time))
            assert pid not in side.outcome, "reported twice"
            if isinstance(note, PacketAcked):
                assert pid in peer.received_ids, "acked but never received"
                assert note.rtt >= 0
                side.outcome[pid] = "acked"
            else:
                side.outcome[pid] = "lost"

    def deliver_until(t: float) -> None:
        while queue and queue[0][0] <= t:
            arrival, _, dest, header, pid = heapq.heappop(queue)
            side, peer = sides[dest], sides[1 - dest]
            if side.tracker.on_receive(header, arrival).accepted:
                assert pid not in side.received_ids
                side.received_ids.add(pid)
            collect(side, peer, arrival)

    now = T0
    for _ in range(packets):
        for src in (0, 1):
            side = sides[src]
            header = side.tracker.next_send(now, 100 + src)
            side.sent[(header.sequence, now)] = next_id
            copies = 0 if rng.random() < drop else 1 + (rng.random() < dup)
            for _ in range(copies):
                tie += 1
                arrival = now + rng.uniform(*delay)
                heapq.heappush(queue, (arrival, tie, 1 - src, header, next_id))
            next_id += 1
            collect(side, sides[1 - src], now)
        now += interval
        deliver_until(now)
    deliver_until(now + 100.0)
    for src in (0, 1):
        collect(sides[src], sides[1 - src], now + 200.0)
    return sides


def _check_exactly_once(sides: tuple[_Side, _Side], packets: int) -> None:
    for side in sides:
        assert side.sent == {}, "some packets never reported"
        assert len(side.outcome) == packets
        assert side.tracker.in_flight == 0


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    drop=st.sampled_from([0.0, 0.1, 0.5, 0.9]),
    dup=st.sampled_from([0.0, 0.2]),
    delay=st.sampled_from([(0.02, 0.02), (0.01, 0.08), (0.0, 0.5), (0.3, 2.0)]),
)
def test_exactly_once_under_hostile_network(
    seed: int, drop: float, dup: float, delay: tuple[float, float]
) -> None:
    packets = 600
    sides = _run_link(seed=seed, packets=packets, drop=drop, dup=dup, delay=delay)
    _check_exactly_once(sides, packets)


def test_no_false_losses_on_clean_link() -> None:
    sides = _run_link(seed=1, packets=2000, drop=0.0, dup=0.0, delay=(0.04, 0.06))
    _check_exactly_once(sides, 2000)
    for side in sides:
        lost = sorted(pid for pid, o in side.outcome.items() if o == "lost")
        # Only the last few packets, whose acks would have ridden on packets never sent, are lost.
        assert lost
        assert min(lost) >= 2 * (2000 - 10)
        assert side.tracker.rtt.rtt == pytest.approx(0.105, abs=0.02)


def test_loss_rate_is_reported_faithfully() -> None:
    # Drop 30 % both ways: the loss reports cover every packet that really vanished.
    sides = _run_link(seed=7, packets=3000, drop=0.3, dup=0.1, delay=(0.02, 0.06))
    _check_exactly_once(sides, 3000)
    a, b = sides
    lost = {pid for pid, o in a.outcome.items() if o == "lost"}
    never_received = {pid for pid in a.outcome if pid not in b.received_ids}
    # Every packet that never arrived is reported lost; a packet that arrived but whose acks were
    # all lost may also be reported lost (the Tribes model cannot tell), never the reverse.
    assert never_received <= lost
    assert 0.25 < len(never_received) / 3000 < 0.35


def test_exactly_once_across_16_bit_wrap() -> None:
    packets = 70_500  # > 65536 per direction
    sides = _run_link(
        seed=3, packets=packets, drop=0.15, dup=0.05, delay=(0.005, 0.04), interval=0.002
    )
    _check_exactly_once(sides, packets)
    for side in sides:
        assert seq_diff(side.tracker.next_sequence, 0) == packets - 65536
        acked = sum(o == "acked" for o in side.outcome.values())
        assert acked > 0.8 * packets


def test_next_loss_deadline_skips_resolved() -> None:
    a = AckTracker()
    a.next_send(T0, 1)
    a.next_send(T0 + 0.5, 1)
    a.on_receive(AckHeader(sequence=0, ack=0, ack_bits=0), T0 + 0.1)  # acks seq 0, RTT 0.1 s
    assert a.loss_timeout() == pytest.approx(0.2)
    assert a.next_loss_deadline() == pytest.approx(T0 + 0.7)
    (acked,) = a.poll_notifications(T0 + 0.69)
    assert isinstance(acked, PacketAcked)
    assert (acked.sequence, acked.send_time, acked.size) == (0, T0, 1)
    assert acked.rtt == pytest.approx(0.1)
    assert [n.sequence for n in a.poll_notifications(T0 + 0.7)] == [1]
