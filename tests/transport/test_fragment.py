"""Fragmentation and memory-bounded reassembly (DESIGN.md "Transport defaults")."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.transport.config import ChannelConfig, ChannelKind, MessageLayerConfig
from lagless.transport.fragment import Fragmenter, Reassembler
from lagless.transport.message_errors import MessageDropReason, MessageViolation
from lagless.transport.packer import MessageLayer, encode_record

T0 = 1000.0  # seconds; a non-zero epoch


@pytest.mark.parametrize(
    ("size", "count", "last"),
    [(0, 1, 0), (1, 1, 1), (1024, 1, 1024), (1025, 2, 1), (2048, 2, 1024), (262144, 256, 1024)],
)
def test_split_sizes(size: int, count: int, last: int) -> None:
    f = Fragmenter(fragment_size=1024, max_fragments=256)
    payload = random.Random(size).randbytes(size)
    assert f.count(size) == count
    pieces = [f.fragment(payload, i) for i in range(count)]
    assert all(len(p) == 1024 for p in pieces[:-1])
    assert len(pieces[-1]) == last
    assert b"".join(pieces) == payload


def test_reassembles_in_any_order_and_counts_repeats() -> None:
    r = Reassembler(fragment_size=4, memory_limit=64)
    parts = [b"abcd", b"efgh", b"ij"]
    assert r.add((0, 7), 2, 3, parts[2], now=T0) is None
    assert r.memory == 12
    assert r.add((0, 7), 0, 3, parts[0], now=T0) is None
    assert r.add((0, 7), 0, 3, parts[0], now=T0) is None
    assert r.duplicates == 1
    assert len(r) == 1
    assert r.add((0, 7), 1, 3, parts[1], now=T0) == b"abcdefghij"
    assert len(r) == 0
    assert r.memory == 12  # held until the channel releases it
    r.release(r.reserved_for(3))
    assert r.memory == 0
    assert r.peak == 12


def test_fragment_count_mismatch_is_violation() -> None:
    r = Reassembler(fragment_size=4, memory_limit=64)
    r.add((1, 1), 0, 3, b"abcd", now=T0)
    with pytest.raises(MessageViolation) as info:
        r.add((1, 1), 1, 4, b"efgh", now=T0)
    assert info.value.reason is MessageDropReason.FRAGMENT_MISMATCH


def test_memory_limit_is_violation_and_allocates_nothing() -> None:
    r = Reassembler(fragment_size=4, memory_limit=20)
    r.add((0, 1), 0, 3, b"abcd", now=T0)  # reserves 12
    with pytest.raises(MessageViolation) as info:
        r.add((0, 2), 0, 3, b"abcd", now=T0)  # would reserve 24
    assert info.value.reason is MessageDropReason.REASSEMBLY_MEMORY
    assert r.memory == 12
    assert len(r) == 1


_CFG = MessageLayerConfig(
    channels=(
        ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED),
        ChannelConfig(kind=ChannelKind.RELIABLE_UNORDERED),
        ChannelConfig(kind=ChannelKind.UNRELIABLE),
    ),
    fragment_size=64,
    max_fragments=256,
    reassembly_memory_limit=16384,
    reliable_window=1024,
)

_fragment = st.tuples(
    st.integers(0, 3),  # channel (3 is unknown)
    st.integers(0, 2000),  # message id
    st.integers(2, 256),  # count
    st.integers(0, 255),  # index (clamped below)
    st.booleans(),  # short last fragment
)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.lists(_fragment, min_size=1, max_size=8), min_size=1, max_size=40))
def test_adversarial_fragments_never_exceed_limit(packets: list[list[tuple]]) -> None:
    layer = MessageLayer(config=_CFG)
    for records in packets:
        out = bytearray()
        for channel, message_id, count, index, short in records:
            index %= count
            size = 10 if short and index == count - 1 else 64
            encode_record(out, channel, message_id, bytes(size), index, count)
        reason = layer.read_packet(bytes(out), 0.0)
        stats = layer.statistics()
        assert stats.reassembly_memory <= _CFG.reassembly_memory_limit
        assert stats.reassembly_peak <= _CFG.reassembly_memory_limit
        assert reason is None or reason in stats.dropped
    while layer.next_received() is not None:
        pass


def test_idle_partial_expires() -> None:
    r = Reassembler(fragment_size=4, memory_limit=100, timeout=10.0)
    r.add((0, 1), 0, 3, b"abcd", now=T0)
    r.add((0, 2), 0, 3, b"abcd", now=T0 + 1.0)
    r.add((0, 1), 1, 3, b"efgh", now=T0 + 5.0)  # progress: message 1 is touched again
    assert r.next_expiry() == T0 + 11.0  # message 2 is now the least recently touched
    assert r.expire(T0 + 10.9) == []
    assert r.expire(T0 + 11.0) == [(0, 2)]
    assert (r.memory, r.expired, len(r)) == (12, 1, 1)
    assert r.expire(T0 + 15.0) == [(0, 1)]
    assert (r.memory, r.expired, len(r), r.next_expiry()) == (0, 2, 0, None)


def test_expired_reliable_message_closes_the_connection() -> None:
    layer = MessageLayer(config=_CFG)
    out = bytearray()
    encode_record(out, 0, 0, bytes(64), 0, 3)  # one fragment of three, the rest never comes
    assert layer.read_packet(bytes(out), T0) is None
    assert layer.statistics().reassembly_memory == 192
    out = bytearray()
    encode_record(out, 2, 0, b"unreliable traffic still flows")
    assert layer.read_packet(bytes(out), T0 + 9.0) is None
    assert layer.read_packet(bytes(out), T0 + 10.0) is MessageDropReason.REASSEMBLY_TIMEOUT
    stats = layer.statistics()
    assert (stats.reassembly_memory, stats.reassembly_expired) == (0, 1)
    assert layer.violation is MessageDropReason.REASSEMBLY_TIMEOUT


def test_memory_overflow_reported_as_violation() -> None:
    layer = MessageLayer(config=_CFG)
    out = bytearray()
    for message_id in range(1, 3):  # two 256-fragment messages need 2 * 16384 bytes
        encode_record(out, 0, message_id, bytes(64), 0, 256)
    assert layer.read_packet(bytes(out), 0.0) is MessageDropReason.REASSEMBLY_MEMORY
    assert layer.violation is MessageDropReason.REASSEMBLY_MEMORY
    assert layer.statistics().reassembly_memory == 16384


def test_completed_fragments_are_duplicates() -> None:
    a, b = MessageLayer(config=_CFG), MessageLayer(config=_CFG)
    payload = bytes(range(200))
    a.send(1, payload, 0.0)
    packets = []
    for seq in range(4):
        p = a.write_packet(seq, 0.0, 71)  # one 64-byte fragment per payload
        assert p is not None
        packets.append(p)
    for p in packets + packets:
        assert b.read_packet(p, 0.0) is None
    msg = b.next_received()
    assert msg is not None
    assert msg.payload == payload
    assert b.next_received() is None
    assert b.statistics().dropped[MessageDropReason.DUPLICATE] == 4


def test_overlong_reassembled_message_is_violation() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.RELIABLE_UNORDERED, max_message_size=100),),
        fragment_size=64,
    )
    layer = MessageLayer(config=cfg)
    out = bytearray()
    encode_record(out, 0, 0, bytes(64), 0, 2)
    encode_record(out, 0, 0, bytes(64), 1, 2)  # 128 bytes > 100
    assert layer.read_packet(bytes(out), 0.0) is MessageDropReason.TOO_LARGE
    assert layer.statistics().reassembly_memory == 0
    assert layer.next_received() is None


def test_announced_count_above_limit_is_too_large() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.RELIABLE_UNORDERED, max_message_size=100),),
        fragment_size=64,
    )
    layer = MessageLayer(config=cfg)
    out = bytearray()
    encode_record(out, 0, 0, bytes(64), 0, 3)
    assert layer.read_packet(bytes(out), 0.0) is MessageDropReason.TOO_LARGE
    assert layer.statistics().reassembly_memory == 0


def test_fragment_on_unreliable_channel_is_violation() -> None:
    layer = MessageLayer(config=_CFG)
    out = bytearray()
    encode_record(out, 2, 0, bytes(64), 0, 2)
    assert layer.read_packet(bytes(out), 0.0) is MessageDropReason.UNEXPECTED_FRAGMENT
    assert layer.violation is MessageDropReason.UNEXPECTED_FRAGMENT


def test_largest_message_round_trip() -> None:
    a, b = MessageLayer(), MessageLayer()
    payload = random.Random(1).randbytes(256 * 1024)
    a.send(0, payload, 0.0)
    seq = 0
    while (p := a.write_packet(seq, 0.0)) is not None:
        assert len(p) <= a.config.packet_budget
        assert b.read_packet(p, 0.0) is None
        a.on_packet_acked(seq)
        seq += 1
    assert seq == 256
    msg = b.next_received()
    assert msg is not None
    assert msg.payload == payload
    assert b.statistics().reassembly_peak == 256 * 1024
    assert b.statistics().reassembly_memory == 0
