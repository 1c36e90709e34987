"""Configuration of the message layer: channel kinds, per-channel and per-connection limits.

Implements DESIGN.md "Transport defaults" (1200-byte payload budget, fragments of at most 1024
bytes and 256 per message, bounded reassembly memory, four channel kinds), spec 004 §4.4.4
(guaranteed = reliable-ordered, non-guaranteed = unreliable) and spec 000 §2.5 (ENet channels,
fragmentation, congestion control). Both ends of a connection must use equal
``MessageLayerConfig`` values: the windows and the memory limit are part of the protocol contract.

Decisions:

* ``DEFAULT_PACKET_BUDGET`` is 1176 bytes: netcode 1.02's 1200-byte maximum payload minus 24 bytes
  kept for the packet header that the connection writes before the messages (sequence 2, ack 2,
  ack bits 4, flags 1, spec 004 timestamp up to 9, spare 6)
  (``test_packer.py::test_default_budget_fits_netcode_payload``).
* ``max_message_size=None`` means 256 KiB on reliable channels and one fragment
  (``fragment_size``) on unreliable ones. Unreliable channels never fragment: a multi-datagram
  message sent unreliably is lost when any of its fragments is, and the issue asks for
  fragmentation of large *reliable* messages only (``test_channels.py::test_unreliable_limit``).
* Every size is validated so that no message can ever be stuck: the packet budget and each
  channel budget hold at least one full record (``test_channels.py::test_config_rejects``).
* ``reassembly_memory_limit`` (default 512 KiB: two full-size reliable transfers at once) must hold
  at least one full-size reliable message; the sender admits a fragmented message only while the
  receiver is sure to have room for it (see ``lagless.transport.fragment``).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError

__all__ = [
    "DEFAULT_PACKET_BUDGET",
    "MAX_CHANNELS",
    "MAX_RECORD_OVERHEAD",
    "ChannelConfig",
    "ChannelKind",
    "CongestionConfig",
    "CongestionMode",
    "MessageLayerConfig",
]

NETCODE_MAX_PAYLOAD: Final = 1200  # bytes, netcode 1.02 NETCODE_MAX_PAYLOAD_BYTES
PACKET_HEADER_RESERVE: Final = 24  # bytes kept for the connection's packet header
DEFAULT_PACKET_BUDGET: Final = NETCODE_MAX_PAYLOAD - PACKET_HEADER_RESERVE  # bytes: 1176
MAX_RECORD_OVERHEAD: Final = 7  # bytes: head 1 + id 2 + fragment 2 + length varint 2
MAX_CHANNELS: Final = 64  # channel index is 6 bits in the record head
MAX_FRAGMENT_SIZE: Final = 1024  # bytes, DESIGN.md "Transport defaults"
MIN_FRAGMENT_SIZE: Final = 64  # bytes, STYLE §6.5 example range
MAX_FRAGMENTS: Final = 256  # per message, DESIGN.md "Transport defaults"
DEFAULT_RELIABLE_MESSAGE_SIZE: Final = 256 * 1024  # bytes, issue text "default limit 256 KiB"


class ChannelKind(enum.Enum):
    """Delivery guarantee of a channel (spec 000 §2.5 ENet rules 2-3, spec 004 §4.4.4)."""

    UNRELIABLE = "unreliable"
    """Sent once; may be lost or reordered; never delivered twice (spec 004 non-guaranteed)."""
    UNRELIABLE_SEQUENCED = "unreliable_sequenced"
    """Sent once; a message older than the newest delivered one is dropped (ENet rule 3)."""
    RELIABLE_ORDERED = "reliable_ordered"
    """Resent until acked; delivered exactly once in send order (spec 004 guaranteed)."""
    RELIABLE_UNORDERED = "reliable_unordered"
    """Resent until acked; delivered exactly once as soon as it arrives."""

    @property
    def reliable(self) -> bool:
        """True for the two kinds that resend until acked."""
        return self in (ChannelKind.RELIABLE_ORDERED, ChannelKind.RELIABLE_UNORDERED)


def _check(cond: bool, message: str) -> None:
    if not cond:
        raise ConfigError(message)


@dataclass(frozen=True, slots=True, kw_only=True)
class ChannelConfig:
    """One channel of a connection; its index in ``MessageLayerConfig.channels`` is its id."""

    kind: ChannelKind
    """Delivery guarantee."""
    priority: int = 0
    """Higher is packed first into each packet; ties go to the lower channel index."""
    budget: int | None = None
    """Most bytes of this channel's records per packet (bytes); ``None`` for no cap."""
    max_message_size: int | None = None
    """Largest payload ``send`` accepts (bytes); ``None`` means 256 KiB on reliable channels
    (issue text) and ``MessageLayerConfig.fragment_size`` on unreliable ones."""
    resend_interval: float = 0.1
    """Minimum time before an unacked reliable message or fragment is sent again (seconds);
    yojimbo's default message resend time. The connection raises the delay to
    ``1.25 * SRTT + 4 * jitter`` when that is longer (``MessageLayer.set_resend_delay``); a loss
    notification makes the record due at once."""
    send_queue_limit: int = 1024
    """Most messages queued on the channel (yojimbo's send queue size). Reliable: ``send`` raises
    ``SendQueueFull`` beyond it. Unreliable: the oldest unsent message is dropped and counted."""

    def __post_init__(self) -> None:
        """Validate field ranges; raise ``ConfigError`` naming the field."""
        _check(
            isinstance(self.kind, ChannelKind),
            f"kind must be a ChannelKind ({', '.join(k.name for k in ChannelKind)}), "
            f"got {self.kind!r}",
        )
        _check(
            -1000 <= self.priority <= 1000,
            f"priority must be in [-1000, 1000], got {self.priority}",
        )
        _check(
            self.budget is None or self.budget > 0, f"budget must be None or > 0, got {self.budget}"
        )
        _check(
            self.max_message_size is None or self.max_message_size >= 1,
            f"max_message_size must be None or >= 1, got {self.max_message_size}",
        )
        _check(
            0.0 < self.resend_interval <= 60.0,
            f"resend_interval must be in (0, 60] seconds, got {self.resend_interval}",
        )
        _check(
            1 <= self.send_queue_limit <= 65536,
            f"send_queue_limit must be in [1, 65536], got {self.send_queue_limit}",
        )


DEFAULT_CHANNELS: Final = (
    ChannelConfig(kind=ChannelKind.RELIABLE_ORDERED, priority=3),
    ChannelConfig(kind=ChannelKind.RELIABLE_UNORDERED, priority=2),
    ChannelConfig(kind=ChannelKind.UNRELIABLE_SEQUENCED, priority=1),
    ChannelConfig(kind=ChannelKind.UNRELIABLE, priority=0),
)


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageLayerConfig:
    """Message-layer settings of one connection; both ends must use equal values."""

    channels: tuple[ChannelConfig, ...] = DEFAULT_CHANNELS
    """Channel 0 reliable-ordered, 1 reliable-unordered, 2 unreliable-sequenced, 3 unreliable
    (priorities 3, 2, 1, 0): control traffic first, state updates after."""
    packet_budget: int = DEFAULT_PACKET_BUDGET
    """Bytes of messages per packet (1200 netcode payload minus a 24-byte header reserve)."""
    fragment_size: int = MAX_FRAGMENT_SIZE
    """Payload bytes per fragment, in [64, 1024] (DESIGN.md); larger messages are fragmented."""
    max_fragments: int = MAX_FRAGMENTS
    """Most fragments per message, in [2, 256] (DESIGN.md)."""
    reassembly_memory_limit: int = 2 * DEFAULT_RELIABLE_MESSAGE_SIZE
    """Bytes the receiver reserves at most for fragmented messages not yet handed to the
    application (bytes, per connection); a fragmented message reserves
    ``fragment_count * fragment_size`` from its first fragment until its delivery."""
    reliable_window: int = 256
    """Reliable message ids in flight per channel: the sender never sends id
    ``oldest_unacked + reliable_window`` or later, the receiver refuses ids beyond it."""
    unreliable_window: int = 256
    """Message ids remembered per unreliable channel to drop duplicated datagrams."""
    fragment_share: float = 0.5
    """Share of packets in which fragments are packed before small messages when both wait;
    in the other packets small messages go first, so neither kind starves."""
    sent_packet_history: int = 1024
    """Sent packets whose contents are remembered for acks; older ones are treated as lost."""
    fragment_timeout: float = 10.0
    """Seconds without a new fragment after which a half-reassembled message is dropped and the
    connection closes (``REASSEMBLY_TIMEOUT``); 10 s is netcode's connection timeout."""

    def __post_init__(self) -> None:
        """Validate field ranges and cross-field limits; raise ``ConfigError`` naming the field."""
        _check(
            1 <= len(self.channels) <= MAX_CHANNELS,
            f"channels must hold 1..{MAX_CHANNELS} ChannelConfig, got {len(self.channels)}",
        )
        for i, ch in enumerate(self.channels):
            _check(
                isinstance(ch, ChannelConfig), f"channels[{i}] must be a ChannelConfig, got {ch!r}"
            )
        _check(
            MIN_FRAGMENT_SIZE <= self.fragment_size <= MAX_FRAGMENT_SIZE,
            f"fragment_size must be in [{MIN_FRAGMENT_SIZE}, {MAX_FRAGMENT_SIZE}], "
            f"got {self.fragment_size}",
        )
        _check(
            2 <= self.max_fragments <= MAX_FRAGMENTS,
            f"max_fragments must be in [2, {MAX_FRAGMENTS}], got {self.max_fragments}",
        )
        low = self.fragment_size + MAX_RECORD_OVERHEAD
        _check(
            low <= self.packet_budget <= 65507,
            f"packet_budget must be in [{low}, 65507] (fragment_size + {MAX_RECORD_OVERHEAD}), "
            f"got {self.packet_budget}",
        )
        _check(
            1 <= self.reliable_window <= 32768,
            f"reliable_window must be in [1, 32768], got {self.reliable_window}",
        )
        _check(
            1 <= self.unreliable_window <= 32768,
            f"unreliable_window must be in [1, 32768], got {self.unreliable_window}",
        )
        _check(
            0.0 < self.fragment_share <= 1.0,
            f"fragment_share must be in (0, 1], got {self.fragment_share}",
        )
        _check(
            16 <= self.sent_packet_history <= 32768,
            f"sent_packet_history must be in [16, 32768], got {self.sent_packet_history}",
        )
        _check(
            0.0 < self.fragment_timeout <= 3600.0,
            f"fragment_timeout must be in (0, 3600] seconds, got {self.fragment_timeout}",
        )
        largest = self.fragment_size * self.max_fragments
        for i in range(len(self.channels)):
            size = self.message_limit(i)
            cap = largest if self.channels[i].kind.reliable else self.fragment_size
            _check(
                size <= cap,
                f"channels[{i}].max_message_size must be <= {cap} bytes for "
                f"{self.channels[i].kind.name}, got {size}",
            )
            budget = self.channels[i].budget
            need = min(size, self.fragment_size) + MAX_RECORD_OVERHEAD
            _check(
                budget is None or budget >= need,
                f"channels[{i}].budget must be None or >= {need} bytes, got {budget}",
            )
            if self.channels[i].kind.reliable and size > self.fragment_size:
                reserve = self.reservation(size)
                _check(
                    self.reassembly_memory_limit >= reserve,
                    f"reassembly_memory_limit must be >= {reserve} bytes (channels[{i}] "
                    f"max_message_size), got {self.reassembly_memory_limit}",
                )

    def message_limit(self, channel: int) -> int:
        """Return the largest payload (bytes) ``send`` accepts on ``channel``.

        Args:
            channel: Channel index (must exist).

        Returns:
            ``max_message_size`` or its kind-dependent default.
        """
        ch = self.channels[channel]
        if ch.max_message_size is not None:
            return ch.max_message_size
        if ch.kind.reliable:
            return min(DEFAULT_RELIABLE_MESSAGE_SIZE, self.fragment_size * self.max_fragments)
        return self.fragment_size

    def reservation(self, size: int) -> int:
        """Return the reassembly memory (bytes) a fragmented message of ``size`` bytes reserves.

        Args:
            size: Message payload size in bytes.

        Returns:
            ``ceil(size / fragment_size) * fragment_size``.
        """
        return math.ceil(size / self.fragment_size) * self.fragment_size


class CongestionMode(enum.IntEnum):
    """Send-rate mode of ``CongestionController`` (negative = degraded, as in STYLE §6.6)."""

    BAD = -1
    """Congested link: send at ``bad_send_rate``."""
    GOOD = 1
    """Healthy link: send at the AIMD rate, between ``bad_send_rate`` and ``max_send_rate``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CongestionConfig:
    """Good/bad send-rate switch with AIMD inside good mode (spec 004 §2.3.4; the switch numbers
    from Gaffer on Games, "Reliability and Flow Control", which spec 004 cites as [12]; the AIMD
    numbers from TCP congestion avoidance, RFC 5681 §3.1, applied to a packet rate)."""

    good_send_rate: float = 30.0
    """Packets per second while the link is good (Hz); Gaffer's 30 packets per second."""
    bad_send_rate: float = 10.0
    """Packets per second while the link is bad (Hz); Gaffer's 10 packets per second."""
    rtt_threshold: float = 0.25
    """Base round-trip time (the windowed minimum) above which the link is bad (seconds);
    Gaffer's 250 ms, applied to the minimum rather than the smoothed RTT so that queueing (at a
    bottleneck or in the peer's own backlog) does not count (``lagless.transport.congestion``)."""
    loss_threshold: float = 0.1
    """Packet loss fraction above which the link is bad; spec 004 §2.3.4 names loss as a signal
    but gives no number, 10 % is lagless's choice."""
    loss_min_outcomes: int = 32
    """The loss fraction the mode switch compares with ``loss_threshold`` is taken over at least
    this many packet fates (lost / max(known fates, this)): a single loss among the first few
    packets of a connection (a payload reordered ahead of the keep-alive that confirms the
    connection, which netcode drops) is not a 20 % loss, and must not hold a 20 Hz stream at
    ``bad_send_rate`` for seconds. A link that loses half its packets is still caught after
    about 7 fates. In [1, 65536]; 1 compares the raw fraction."""
    initial_penalty: float = 4.0
    """Time the link must stay good before leaving bad mode (seconds); Gaffer's 4 s."""
    min_penalty: float = 1.0
    """Lower bound of the penalty time (seconds); Gaffer's 1 s."""
    max_penalty: float = 60.0
    """Upper bound of the penalty time (seconds); Gaffer's 60 s."""
    flap_window: float = 10.0
    """Falling back to bad mode within this time after recovering doubles the penalty (seconds);
    Gaffer's 10 s."""
    good_streak: float = 10.0
    """Each such stretch of uninterrupted good mode halves the penalty (seconds); Gaffer's 10 s."""
    initial_mode: CongestionMode = CongestionMode.GOOD
    """Mode of a new connection. GOOD, unlike Gaffer's BAD start: a connection must not spend its
    first ``initial_penalty`` seconds at ``bad_send_rate`` before any measurement, and a bad RTT or
    loss still drops it to BAD as soon as it is measured (see ``lagless.transport.congestion``)."""
    max_send_rate: float = 200_000.0
    """Ceiling of the send rate in good mode (packets per second): far above any game tick, so on
    a fast path the CPU, not pacing, is the limit (1200-byte packets at this rate are 1.9 Gbit/s).
    At 50 000 a 1000-byte bulk transfer over loopback sat at the ceiling (48 000-49 000 messages/s
    with the compiled core against 60 000-63 000 at 200 000, ``benchmarks/transport.py``)."""
    rate_increase: float = 8.0
    """Least increase of the send rate per round trip while the sender is held back by pacing
    after slow start (packets per second per RTT); the increase is ``max(rate_increase,
    rate / 16)`` (see ``lagless.transport.congestion``)."""
    decrease_factor: float = 0.5
    """Multiplicative decrease of the send rate on a loss event (TCP's one half), in (0, 1)."""
    slow_start: bool = True
    """Double the rate once per held-back round trip until the first loss event (RFC 5681 §3.1
    slow start, applied to a packet rate); ``False`` starts in additive increase."""

    def __post_init__(self) -> None:
        """Validate field ranges; raise ``ConfigError`` naming the field."""
        _check(
            0.0 < self.bad_send_rate <= self.good_send_rate <= 100_000.0,
            "good_send_rate and bad_send_rate must satisfy 0 < bad_send_rate <= good_send_rate "
            f"<= 100000 Hz, got {self.good_send_rate} and {self.bad_send_rate}",
        )
        _check(
            0.0 < self.rtt_threshold <= 60.0,
            f"rtt_threshold must be in (0, 60] seconds, got {self.rtt_threshold}",
        )
        _check(
            0.0 < self.loss_threshold < 1.0,
            f"loss_threshold must be in (0, 1), got {self.loss_threshold}",
        )
        _check(
            1 <= self.loss_min_outcomes <= 65536,
            f"loss_min_outcomes must be in [1, 65536], got {self.loss_min_outcomes}",
        )
        _check(
            0.0 < self.min_penalty <= self.initial_penalty <= self.max_penalty <= 3600.0,
            "penalties must satisfy 0 < min_penalty <= initial_penalty <= max_penalty <= 3600 s, "
            f"got {self.min_penalty}, {self.initial_penalty}, {self.max_penalty}",
        )
        _check(self.flap_window > 0.0, f"flap_window must be > 0 seconds, got {self.flap_window}")
        _check(self.good_streak > 0.0, f"good_streak must be > 0 seconds, got {self.good_streak}")
        _check(
            isinstance(self.initial_mode, CongestionMode),
            f"initial_mode must be CongestionMode.GOOD or .BAD, got {self.initial_mode!r}",
        )
        _check(
            self.good_send_rate <= self.max_send_rate <= 1_000_000.0,
            f"max_send_rate must be in [good_send_rate, 1000000] Hz, got {self.max_send_rate}",
        )
        _check(
            0.0 <= self.rate_increase <= 10_000.0,
            f"rate_increase must be in [0, 10000] Hz per RTT, got {self.rate_increase}",
        )
        _check(
            0.0 < self.decrease_factor < 1.0,
            f"decrease_factor must be in (0, 1), got {self.decrease_factor}",
        )
