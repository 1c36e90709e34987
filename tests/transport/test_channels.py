"""Channel kinds, limits and reliable bookkeeping of the message layer (spec 004 §4.4.4)."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.transport import compiled
from lagless.transport.channels import ReceivedMessage
from lagless.transport.config import (
    ChannelConfig,
    ChannelKind,
    CongestionConfig,
    MessageLayerConfig,
)
from lagless.transport.message_errors import MessageDropReason, MessageTooLarge, SendQueueFull
from lagless.transport.packer import MessageLayer, encode_record

RO, RU, US, UN = 0, 1, 2, 3  # default channel indices


def drain(layer: MessageLayer) -> list[ReceivedMessage]:
    out = []
    while (m := layer.next_received()) is not None:
        out.append(m)
    return out


def pump(a: MessageLayer, b: MessageLayer, *, seq: int, now: float, rounds: int) -> int:
    """Perfect link: every payload arrives and is acked at once. Returns the next seq."""
    for _ in range(rounds):
        payload = a.write_packet(seq & 0xFFFF, now)
        if payload is None:
            break
        assert b.read_packet(payload, now) is None
        a.on_packet_acked(seq & 0xFFFF)
        seq += 1
    return seq


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"kind": "reliable"}, "kind"),
        ({"kind": ChannelKind.UNRELIABLE, "priority": 5000}, "priority"),
        ({"kind": ChannelKind.UNRELIABLE, "budget": 0}, "budget"),
        ({"kind": ChannelKind.UNRELIABLE, "max_message_size": 0}, "max_message_size"),
        ({"kind": ChannelKind.UNRELIABLE, "resend_interval": 0.0}, "resend_interval"),
        ({"kind": ChannelKind.UNRELIABLE, "send_queue_limit": 0}, "send_queue_limit"),
    ],
)
def test_channel_config_rejects(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        ChannelConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"channels": ()}, "channels"),
        ({"fragment_size": 2048}, "fragment_size"),
        ({"max_fragments": 300}, "max_fragments"),
        ({"packet_budget": 1000}, "packet_budget"),
        ({"reliable_window": 40000}, "reliable_window"),
        ({"unreliable_window": 0}, "unreliable_window"),
        ({"fragment_share": 0.0}, "fragment_share"),
        ({"sent_packet_history": 1}, "sent_packet_history"),
        ({"reassembly_memory_limit": 1000}, "reassembly_memory_limit"),
        (
            {"channels": (ChannelConfig(kind=ChannelKind.UNRELIABLE, max_message_size=2000),)},
            "max_message_size",
        ),
        (
            {"channels": (ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED, budget=500),)},
            "budget",
        ),
    ],
)
def test_config_rejects(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        MessageLayerConfig(**kwargs)  # type: ignore[arg-type]


def test_congestion_config_rejects() -> None:
    with pytest.raises(ConfigError, match="bad_send_rate"):
        CongestionConfig(good_send_rate=5.0, bad_send_rate=10.0)
    with pytest.raises(ConfigError, match="loss_threshold"):
        CongestionConfig(loss_threshold=1.5)


def test_unreliable_limit() -> None:
    cfg = MessageLayerConfig()
    assert cfg.message_limit(UN) == cfg.fragment_size == 1024
    assert cfg.message_limit(RO) == 256 * 1024
    layer = MessageLayer()
    layer.send(UN, bytes(1024), 0.0)
    with pytest.raises(MessageTooLarge, match="max_message_size"):
        layer.send(UN, bytes(1025), 0.0)


def test_message_too_large_at_send() -> None:
    layer = MessageLayer()
    layer.send(RO, bytes(256 * 1024), 0.0)
    with pytest.raises(MessageTooLarge) as info:
        layer.send(RO, bytes(256 * 1024 + 1), 0.0)
    assert isinstance(info.value, LocalProtocolError)
    assert layer.statistics().messages_sent == 1


@pytest.mark.parametrize("channel", [-1, 4, 99])
def test_unknown_channel_raises(channel: int) -> None:
    with pytest.raises(LocalProtocolError, match="channel must be in"):
        MessageLayer().send(channel, b"x", 0.0)


def test_payload_must_be_bytes() -> None:
    # a compiled core checks the annotation itself, before the method's own check runs
    error, match = (
        (TypeError, "bytes object expected")
        if compiled()
        else (LocalProtocolError, "payload must be bytes")
    )
    with pytest.raises(error, match=match):
        MessageLayer().send(0, "text", 0.0)  # type: ignore[arg-type]


def test_reliable_send_queue_full_raises() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED, send_queue_limit=3),)
    )
    a, b = MessageLayer(config=cfg), MessageLayer(config=cfg)
    for i in range(3):
        a.send(0, bytes([i]), 0.0)
    with pytest.raises(SendQueueFull, match="send_queue_limit=3"):
        a.send(0, b"x", 0.0)
    pump(a, b, seq=0, now=0.0, rounds=5)
    assert a.send(0, b"x", 0.0) == 3  # room again once acked


def test_unreliable_queue_overflow_drops_oldest() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.UNRELIABLE, send_queue_limit=2),)
    )
    a, b = MessageLayer(config=cfg), MessageLayer(config=cfg)
    for i in range(5):
        a.send(0, bytes([i]), 0.0)
    assert a.statistics().unreliable_send_dropped == 3
    pump(a, b, seq=0, now=0.0, rounds=3)
    assert [m.payload for m in drain(b)] == [b"\x03", b"\x04"]


def test_reliable_ordered_in_order_despite_reordering() -> None:
    a, b = MessageLayer(), MessageLayer()
    budget = 1031  # one 1000-byte message per packet
    payloads = [bytes([i]) * 1000 for i in range(6)]
    for p in payloads:
        a.send(RO, p, 0.0)
    packets = [a.write_packet(s, 0.0, budget) for s in range(6)]
    for p in reversed(packets):
        assert p is not None
        assert b.read_packet(p, 0.0) is None
    got = drain(b)
    assert [m.payload for m in got] == payloads
    assert [m.message_id for m in got] == list(range(6))
    # nothing is delivered before the head of line arrives
    c = MessageLayer()
    for p in packets[1:]:
        assert p is not None
        c.read_packet(p, 0.0)
    assert drain(c) == []
    assert packets[0] is not None
    c.read_packet(packets[0], 0.0)
    assert len(drain(c)) == 6


def test_reliable_unordered_delivers_immediately_exactly_once() -> None:
    a, b = MessageLayer(), MessageLayer()
    for i in range(4):
        a.send(RU, bytes([i]) * 1000, 0.0)
    packets = [a.write_packet(s, 0.0, 1031) for s in range(4)]
    order = [3, 1, 3, 0, 2, 1]
    got = []
    for k in order:
        p = packets[k]
        assert p is not None
        b.read_packet(p, 0.0)
        got.extend(m.message_id for m in drain(b))
    assert got == [3, 1, 0, 2]
    assert b.statistics().dropped[MessageDropReason.DUPLICATE] == 2


def test_unreliable_drops_duplicates() -> None:
    cfg = MessageLayerConfig(unreliable_window=8)
    b = MessageLayer(config=cfg)
    ids = [5, 3, 5, 4, 3, 20, 13, 12, 13, 5]
    for i in ids:
        out = bytearray()
        encode_record(out, UN, i, bytes([i]))
        b.read_packet(bytes(out), 0.0)
    assert [m.message_id for m in drain(b)] == [5, 3, 4, 20, 13]
    dropped = b.statistics().dropped
    assert dropped[MessageDropReason.DUPLICATE] == 3  # 5, 3, 13
    assert dropped[MessageDropReason.STALE] == 2  # 12 and 5 are 8 or more behind 20


def test_sequenced_drops_older() -> None:
    b = MessageLayer()
    for i in [1, 0, 4, 2, 4, 65535, 5, 7]:
        out = bytearray()
        encode_record(out, US, i, b"s")
        b.read_packet(bytes(out), 0.0)
    assert [m.message_id for m in drain(b)] == [1, 4, 5, 7]
    dropped = b.statistics().dropped
    assert dropped[MessageDropReason.STALE] == 3
    assert dropped[MessageDropReason.DUPLICATE] == 1


def test_sequenced_across_wrap() -> None:
    b = MessageLayer()
    for i in [65534, 65535, 0, 65533, 1]:
        out = bytearray()
        encode_record(out, US, i, b"s")
        b.read_packet(bytes(out), 0.0)
    assert [m.message_id for m in drain(b)] == [65534, 65535, 0, 1]


def test_resend_after_interval_and_on_loss() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED, resend_interval=0.25),)
    )
    a = MessageLayer(config=cfg)
    a.send(0, b"hello", 10.0)
    assert a.has_pending(10.0)
    assert a.write_packet(0, 10.0) is not None
    assert not a.has_pending(10.1)
    assert a.write_packet(1, 10.1) is None
    assert a.next_resend_time() == pytest.approx(10.25)
    assert a.write_packet(2, 10.25) is not None  # resent after the interval
    assert a.statistics().records_resent == 1
    a.on_packet_lost(0)  # not the latest carrier: no effect
    assert not a.has_pending(10.3)
    a.on_packet_lost(2)  # latest carrier lost: due at once
    assert a.has_pending(10.3)
    assert a.write_packet(3, 10.3) is not None
    a.on_packet_acked(3)
    assert not a.has_pending(99.0)
    assert a.next_resend_time() is None
    assert a.next_delivered() is not None
    assert a.next_delivered() is None


def test_ack_of_any_carrier_counts_once() -> None:
    a = MessageLayer()
    mid = a.send(RU, b"m", 0.0)
    a.write_packet(0, 0.0)
    a.write_packet(1, 1.0)
    a.on_packet_acked(1)
    a.on_packet_acked(0)
    a.on_packet_acked(1)
    delivered = a.next_delivered()
    assert delivered is not None
    assert (delivered.channel, delivered.message_id) == (RU, mid)
    assert a.next_delivered() is None
    assert a.statistics().messages_delivered == 1


def test_window_limits_in_flight() -> None:
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.RELIABLE_UNORDERED),), reliable_window=4
    )
    a, b = MessageLayer(config=cfg), MessageLayer(config=cfg)
    for i in range(10):
        a.send(0, bytes([i]), 0.0)
    p = a.write_packet(0, 0.0)
    assert p is not None
    b.read_packet(p, 0.0)
    assert [m.message_id for m in drain(b)] == [0, 1, 2, 3]
    assert a.write_packet(1, 0.0) is None  # window full until acks come
    a.on_packet_acked(0)
    p = a.write_packet(2, 0.0)
    assert p is not None
    b.read_packet(p, 0.0)
    assert [m.message_id for m in drain(b)] == [4, 5, 6, 7]


def test_out_of_window_is_violation() -> None:
    cfg = MessageLayerConfig(reliable_window=16)
    b = MessageLayer(config=cfg)
    out = bytearray()
    encode_record(out, RO, 15, b"ok")
    assert b.read_packet(bytes(out), 0.0) is None
    assert b.violation is None
    out = bytearray()
    encode_record(out, RO, 16, b"too far")
    assert b.read_packet(bytes(out), 0.0) is MessageDropReason.OUT_OF_WINDOW
    assert b.violation is MessageDropReason.OUT_OF_WINDOW


def test_sender_admission() -> None:
    """One fragmented message per channel at a time, and all within the receiver's memory."""
    cfg = MessageLayerConfig(
        channels=(
            ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED, max_message_size=8192),
            ChannelConfig(kind=ChannelKind.RELIABLE_UNORDERED, max_message_size=8192, priority=1),
        ),
        reassembly_memory_limit=10240,
    )
    a, b = MessageLayer(config=cfg), MessageLayer(config=cfg)
    a.send(0, b"A" * 8000, 0.0)  # reserves 8192
    a.send(0, b"B" * 8000, 0.0)  # same channel: waits for A
    a.send(1, b"C" * 3000, 0.0)  # reserves 3072: A and C together would need 11264
    seen: list[tuple[int, int]] = []
    for seq in range(40):
        p = a.write_packet(seq, 0.0)
        if p is None:
            break
        b.read_packet(p, 0.0)
        seen.extend((m.channel, m.message_id) for m in drain(b))
        a.on_packet_acked(seq)
    assert seen == [(1, 0), (0, 0), (0, 1)]
    assert b.statistics().reassembly_peak == 8192  # never two fragmented messages at once
    assert b.statistics().reassembly_memory == 0
    assert b.violation is None


def test_ordered_release_waits_for_earlier_messages() -> None:
    """A fragmented message acked while an earlier one is missing keeps its reservation."""
    cfg = MessageLayerConfig(
        channels=(ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED, max_message_size=4096),),
        reassembly_memory_limit=4096,
    )
    a, b = MessageLayer(config=cfg), MessageLayer(config=cfg)
    a.send(0, b"s", 0.0)  # id 0, its packet will be lost
    a.send(0, b"L" * 4000, 0.0)  # id 1, four fragments
    a.send(0, b"M" * 4000, 0.0)  # id 2 must wait for id 1 to be released
    first = a.write_packet(0, 0.0)
    assert first is not None
    seq = 1
    for _ in range(10):
        p = a.write_packet(seq, 0.0)
        if p is None:
            break
        b.read_packet(p, 0.0)
        a.on_packet_acked(seq)
        seq += 1
    assert drain(b) == []
    assert b.statistics().reassembly_memory == 4096
    assert b.violation is None
    a.on_packet_lost(0)
    seq = pump(a, b, seq=seq, now=0.0, rounds=20)
    assert [m.message_id for m in drain(b)] == [0, 1, 2]
    assert b.violation is None
    assert b.statistics().reassembly_memory == 0


def test_message_ids_wrap() -> None:
    """More than 65536 messages per channel: ids wrap and delivery stays exact and in order."""
    a, b = MessageLayer(), MessageLayer()
    total = 66_200
    seq = 0
    sent = 0
    received: list[bytes] = []
    last_ids: list[int] = []
    while len(received) < total:
        while sent < total and sent - len(received) < 250:
            a.send(RO, sent.to_bytes(3, "big"), 0.0)
            sent += 1
        seq = pump(a, b, seq=seq, now=0.0, rounds=1)
        for m in drain(b):
            received.append(m.payload)
            last_ids.append(m.message_id)
    assert [int.from_bytes(p, "big") for p in received] == list(range(total))
    assert last_ids[65535] == 65535
    assert last_ids[65536] == 0
    assert last_ids[-1] == (total - 1) & 0xFFFF
    assert a.statistics().messages_delivered == total
