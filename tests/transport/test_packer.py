"""Payload codec and packing of the message layer (DESIGN.md "Transport defaults", "Bad input")."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.transport.config import (
    DEFAULT_PACKET_BUDGET,
    ChannelConfig,
    ChannelKind,
    MessageLayerConfig,
)
from lagless.transport.message_errors import MessageDropReason
from lagless.transport.packer import (
    MessageLayer,
    Record,
    encode_record,
    parse_payload,
    record_size,
)
from lagless.wire.errors import DecodeError

_record = st.one_of(
    st.builds(
        lambda ch, mid, data: Record(ch, mid, -1, 1, data),
        st.integers(0, 63),
        st.integers(0, 0xFFFF),
        st.binary(max_size=1024),
    ),
    st.builds(
        lambda ch, mid, count, idx, short: Record(
            ch, mid, idx % count, count, bytes(short if idx % count == count - 1 else 1024)
        ),
        st.integers(0, 63),
        st.integers(0, 0xFFFF),
        st.integers(2, 256),
        st.integers(0, 255),
        st.integers(1, 1024),
    ),
)


def test_default_budget_fits_netcode_payload() -> None:
    assert DEFAULT_PACKET_BUDGET == 1176
    assert DEFAULT_PACKET_BUDGET + 24 == 1200
    assert MessageLayerConfig().packet_budget >= 1024 + record_size(1024, fragment=True) - 1024


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.lists(_record, max_size=6))
def test_records_round_trip(records: list[Record]) -> None:
    out = bytearray()
    for r in records:
        before = len(out)
        encode_record(out, r.channel, r.message_id, r.data, r.fragment_index, r.fragment_count)
        assert len(out) - before == record_size(len(r.data), fragment=r.fragment_index >= 0)
    assert parse_payload(bytes(out), 1024) == records


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=300))
def test_parse_arbitrary_bytes_raises_only_decode_error(data: bytes) -> None:
    try:
        records = parse_payload(data, 64)
    except DecodeError:
        return
    sizes = [record_size(len(r.data), fragment=r.fragment_index >= 0) for r in records]
    assert sum(sizes) == len(data)


@pytest.mark.parametrize(
    "data",
    [
        b"\x00\x00",  # truncated header
        b"\x40\x00\x01\x00",  # reserved bit
        b"\x80\x00\x01\x00",  # truncated fragment header
        b"\x80\x00\x01\x00\x00\x00",  # fragment count 1
        b"\x80\x00\x01\x03\x02\x00",  # index 3 of 3
        b"\x00\x00\x01\x80",  # truncated varint
        b"\x00\x00\x01\x85\x00",  # non-minimal varint
        b"\x00\x00\x01\x85\x80\x01",  # three-byte varint
        b"\x00\x00\x01\x80\x01" + bytes(128),  # 128 > fragment_size 64
        b"\x00\x00\x01\x05abc",  # data truncated
        b"\x80\x00\x01\x00\x01\x10" + bytes(16),  # non-last fragment shorter than 64
        b"\x80\x00\x01\x01\x01\x00",  # empty last fragment
    ],
)
def test_malformed_payloads(data: bytes) -> None:
    with pytest.raises(DecodeError):
        parse_payload(data, 64)
    cfg = MessageLayerConfig(fragment_size=64, packet_budget=200)
    layer = MessageLayer(config=cfg)
    assert layer.read_packet(data, 0.0) is MessageDropReason.MALFORMED
    assert layer.statistics().dropped == {MessageDropReason.MALFORMED: 1}
    assert layer.violation is None


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.binary(max_size=200), min_size=1, max_size=5))
def test_garbage_never_raises_and_is_counted(payloads: list[bytes]) -> None:
    layer = MessageLayer()
    results = [layer.read_packet(p, 1.0) for p in payloads]
    dropped = layer.statistics().dropped
    packet_drops = [r for r in results if r is not None]
    for reason in set(packet_drops):
        assert dropped[reason] >= packet_drops.count(reason)
    assert layer.statistics().reassembly_memory <= layer.config.reassembly_memory_limit
    while layer.next_received() is not None:
        pass


def test_malformed_payload_is_atomic() -> None:
    """A bad record anywhere drops the whole payload: nothing before it is delivered."""
    layer = MessageLayer()
    out = bytearray()
    encode_record(out, 3, 0, b"fine")
    out += b"\x40\x00\x00\x00"
    assert layer.read_packet(bytes(out), 0.0) is MessageDropReason.MALFORMED
    assert layer.next_received() is None


def test_violation_is_sticky_and_reported() -> None:
    layer = MessageLayer()
    out = bytearray()
    encode_record(out, 9, 0, b"x")
    assert layer.read_packet(bytes(out), 0.0) is MessageDropReason.UNKNOWN_CHANNEL
    assert layer.violation is MessageDropReason.UNKNOWN_CHANNEL
    assert MessageDropReason.UNKNOWN_CHANNEL.is_violation
    assert not MessageDropReason.MALFORMED.is_violation
    good = bytearray()
    encode_record(good, 3, 0, b"ok")
    assert layer.read_packet(bytes(good), 0.0) is None  # the layer stays usable
    assert layer.violation is MessageDropReason.UNKNOWN_CHANNEL
    assert layer.statistics().violation is MessageDropReason.UNKNOWN_CHANNEL


def test_too_large_unfragmented_is_violation() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.UNRELIABLE, max_message_size=10),)
    )
    layer = MessageLayer(config=cfg)
    out = bytearray()
    encode_record(out, 0, 0, bytes(11))
    assert layer.read_packet(bytes(out), 0.0) is MessageDropReason.TOO_LARGE


def test_nothing_to_send_and_budget_check() -> None:
    layer = MessageLayer()
    assert layer.write_packet(0, 0.0) is None
    assert not layer.has_pending(0.0)
    assert layer.next_resend_time() is None
    assert layer.statistics().packets_written == 0
    with pytest.raises(LocalProtocolError, match="budget"):
        layer.write_packet(1, 0.0, 1000)


def test_priority_order_and_budget_limit() -> None:
    cfg = MessageLayerConfig(
        channels=(
            ChannelConfig(kind=ChannelKind.UNRELIABLE, priority=0),
            ChannelConfig(kind=ChannelKind.UNRELIABLE, priority=5),
        )
    )
    a, b = MessageLayer(config=cfg), MessageLayer(config=cfg)
    a.send(0, b"L" * 700, 0.0)
    a.send(1, b"H" * 700, 0.0)
    p = a.write_packet(0, 0.0)
    assert p is not None
    assert len(p) <= cfg.packet_budget
    b.read_packet(p, 0.0)
    first = b.next_received()
    assert first is not None
    assert first.channel == 1
    assert b.next_received() is None  # channel 0 did not fit
    assert a.has_pending(0.0)
    p = a.write_packet(1, 0.0)
    assert p is not None
    b.read_packet(p, 0.0)
    second = b.next_received()
    assert second is not None
    assert second.channel == 0


def test_channel_budget_caps_each_packet() -> None:
    cfg = MessageLayerConfig(
        channels=(
            ChannelConfig(
                kind=ChannelKind.RELIABLE_ORDERED, priority=1, budget=300, max_message_size=200
            ),
            ChannelConfig(kind=ChannelKind.UNRELIABLE),
        )
    )
    a, b = MessageLayer(config=cfg), MessageLayer(config=cfg)
    for _ in range(10):
        a.send(0, bytes(95), 0.0)  # 99-byte records: three per 300-byte budget
        a.send(1, bytes(95), 0.0)
    p = a.write_packet(0, 0.0)
    assert p is not None
    b.read_packet(p, 0.0)
    channels = []
    while (m := b.next_received()) is not None:
        channels.append(m.channel)
    assert channels.count(0) == 3
    assert channels.count(1) == 8  # the rest of the 1176 bytes
    assert len(p) == 11 * 99


def test_small_messages_flow_during_big_transfer() -> None:
    """A 200 KiB reliable message neither starves nor is starved by a stream of small ones."""
    a, b = MessageLayer(), MessageLayer()
    a.send(1, bytes(200 * 1024), 0.0)
    small_latency: list[int] = []
    big_done_at = None
    sent_at: dict[int, int] = {}
    for seq in range(600):
        mid = a.send(0, seq.to_bytes(4, "big") + bytes(400), 0.0)  # one 404-byte message a tick
        sent_at[mid] = seq
        p = a.write_packet(seq, 0.0)
        assert p is not None
        assert len(p) <= a.config.packet_budget
        b.read_packet(p, 0.0)
        a.on_packet_acked(seq)
        while (m := b.next_received()) is not None:
            if m.channel == 0:
                small_latency.append(seq - sent_at[m.message_id])
            else:
                assert m.payload == bytes(200 * 1024)
                big_done_at = seq
    assert big_done_at is not None
    assert big_done_at <= 402  # 200 fragments: one every other packet at least
    assert len(small_latency) == 600
    assert max(small_latency) <= 1  # a small message waits at most one packet


def test_history_bound() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.RELIABLE_UNORDERED, resend_interval=60.0),),
        sent_packet_history=16,
    )
    a = MessageLayer(config=cfg)
    a.send(0, b"x", 0.0)
    assert a.write_packet(0, 0.0) is not None
    for seq in range(1, 17):
        a.send(0, b"y", 0.0)
        assert a.write_packet(seq, 0.0) is not None
    # packet 0 fell out of the history: treated as lost, so "x" is due again at once
    assert a.has_pending(0.0)
    a.on_packet_acked(0)  # too late: unknown now
    assert a.next_delivered() is None


def test_reused_sequence_counts_old_packet_lost() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.RELIABLE_UNORDERED, resend_interval=60.0),)
    )
    a = MessageLayer(config=cfg)
    a.send(0, b"x", 0.0)
    a.write_packet(5, 0.0)
    assert not a.has_pending(0.0)
    assert a.write_packet(5, 0.0) is not None  # seq 5 again: old contents lost, resent in it
    a.on_packet_acked(5)
    delivered = a.next_delivered()
    assert delivered is not None
    assert delivered.message_id == 0


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 1000), min_size=1, max_size=40),
    losses=st.lists(st.booleans(), max_size=12),
)
def test_a_record_left_out_for_want_of_room_is_reported_pending(
    sizes: list[int], losses: list[bool]
) -> None:
    """``left_behind`` (what lets the connection skip ``has_pending`` after a packet) says
    exactly what ``has_pending`` would, for unfragmented reliable records under loss."""
    cfg = MessageLayerConfig(
        channels=(
            ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED),
            ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED, budget=1100),
        )
    )
    layer = MessageLayer(config=cfg)
    for i, size in enumerate(sizes):
        layer.send(i % 2, bytes(size), 0.0)
    now = 0.0
    written = 0
    for seq, lost in enumerate([*losses, *[False] * 80]):
        payload = layer.write_packet(seq, now)
        if payload is None:
            assert not layer.left_behind
            break
        written += 1
        assert layer.left_behind == layer.has_pending(now)
        if lost:
            layer.on_packet_lost(seq)
    assert written >= 1
    assert not layer.has_pending(now)


_READ_CFG = MessageLayerConfig(
    channels=(
        ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED),
        ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED, max_message_size=200),
        ChannelConfig(kind=ChannelKind.UNRELIABLE),
        ChannelConfig(kind=ChannelKind.RELIABLE_UNORDERED),
    )
)


@st.composite
def _payloads(draw: st.DrawFn) -> list[bytes]:
    """Payloads whose records are mostly the next message of their channel, with some gaps,
    repeats, fragments, unknown channels, oversized bodies and garbage in between."""
    payloads = []
    next_id = [0, 0, 0, 0, 0]
    for _ in range(draw(st.integers(1, 8))):
        out = bytearray()
        for _ in range(draw(st.integers(0, 8))):
            kind = draw(st.sampled_from(["next"] * 6 + ["gap", "repeat", "fragment", "junk"]))
            channel = draw(st.sampled_from([0, 0, 0, 1, 2, 3, 4]))
            if kind == "junk":
                out += draw(st.binary(max_size=6))
                continue
            step = {"next": 0, "gap": 2, "repeat": -1}.get(kind, 0)
            message_id = (next_id[channel] + step) & 0xFFFF
            if kind == "next":
                next_id[channel] += 1
            if kind == "fragment":
                encode_record(out, channel, message_id, bytes(1024), index=0, count=2)
            else:
                encode_record(
                    out, channel, message_id, bytes(draw(st.sampled_from([0, 5, 130, 300])))
                )
        payloads.append(bytes(out))
    return payloads


@settings(max_examples=400, deadline=None)
@given(_payloads())
def test_the_in_order_fast_path_reads_exactly_as_the_whole_payload_check(
    payloads: list[bytes],
) -> None:
    """``read_packet`` takes in-order records in one step; the result (queued messages, next
    ids, drops) equals checking each whole payload first and then queueing it, as before."""
    fast, whole = MessageLayer(config=_READ_CFG), MessageLayer(config=_READ_CFG)
    for payload in payloads:
        expected = whole._read_rest(payload, 0.0, 0, len(whole.ready))
        assert fast.read_packet(payload, 0.0) == expected
        assert list(fast.ready) == list(whole.ready)
        assert [r.base for r in fast._ordered if r is not None] == [
            r.base for r in whole._ordered if r is not None
        ]
        assert fast.statistics() == whole.statistics()


def test_a_rejected_payload_takes_back_the_records_read_before_its_bad_one() -> None:
    layer = MessageLayer(config=_READ_CFG)
    out = bytearray()
    encode_record(out, 0, 0, b"first")
    encode_record(out, 0, 1, b"second")
    good = bytes(out)
    encode_record(out, 4, 0, b"no such channel")
    assert layer.read_packet(bytes(out), 0.0) is MessageDropReason.UNKNOWN_CHANNEL
    assert not layer.ready
    truncated = good + bytes([0, 0, 2])
    assert layer.read_packet(truncated, 0.0) is MessageDropReason.MALFORMED
    assert not layer.ready
    assert layer.read_packet(good, 0.0) is None  # the next ids were put back: both come
    assert [m[2] for m in layer.ready] == [b"first", b"second"]
