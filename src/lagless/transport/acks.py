"""Per-packet acknowledgement: sequence ring buffers, the ack header, and delivery notifications.

Implements spec 004 §4.4.2 (virtual connection with sequence / ack / ack-bitfield header and
Tribes-model delivery-status notifications) with the widths of DESIGN.md "Transport defaults":
16-bit wrapping sequence, 16-bit ack, 32-bit ack bitfield. The layer above learns, for every packet
it sent, exactly once, whether it was acked or lost (`PacketAcked` / `PacketLost`).

Wire format (8 bytes, little-endian like netcode 1.02): ``sequence u16, ack u16, ack_bits u32``.
Bit ``n`` of ``ack_bits`` acknowledges sequence ``ack - 1 - n``, so one header acknowledges the
newest received packet and the 32 before it.

Decisions on ambiguities (spec 004 leaves the loss factor open):

* A sent packet is LOST when the first of these happens (``test_acks.py::test_loss_rules``):
  (a) it is unacked ``loss_timeout`` after sending, where ``loss_timeout`` is
  ``max(loss_rtt_factor * srtt, min_loss_timeout)`` (defaults 2 x SRTT and 0.2 s), or
  ``initial_loss_timeout`` (1 s, RFC 6298 §2.1's initial RTO) before the first RTT sample;
  (b) a header acks a sequence more than 32 newer, so no later header can cover it any more;
  (c) its slot in the sent buffer is needed by a new packet (more than ``sent_buffer_size`` packets
  in flight), so memory stays bounded.
  Once reported lost, a late ack of that packet produces no notification, so each packet is
  reported exactly once (``test_acks.py::test_late_ack_after_loss_ignored``); it still feeds the
  RTT estimator when it is the header's ``ack``, or a path slower than the initial timeout would
  never be measured (``test_acks.py::test_late_ack_feeds_rtt``).
* A received packet that is a duplicate, or older than ``received_window`` behind the newest one,
  is rejected with no state change at all, its ack fields included
  (``test_acks.py::test_duplicate_and_stale_rejected``).
* An ack for a sequence this side has not sent yet (a "future" ack) carries no information and is
  ignored, because a peer that has received nothing still sends ``ack = 65535, ack_bits = 0``
  (``test_acks.py::test_future_ack_ignored``).
* The RTT estimator is fed only the sample of the packet named by ``header.ack``; packets acked
  through ``ack_bits`` were acked late (their first ack was lost), so their ``rtt`` is reported on
  the notification but not fed to the estimator
  (``test_acks.py::test_rtt_fed_only_from_ack_field``).
  The sample includes the peer's hold time before it next sent; there is no ack-delay field.
* Only the ack bits the previous header (with an older or equal ``ack``) did not carry are
  looked at: a sequence it carried was resolved then, so a header costs the packets it newly
  acknowledges, not 33 look-ups (``test_acks.py`` covers the outcomes unchanged).
* `ReceiveResult.acked` lists what one received header newly acknowledged (for immediate use, e.g.
  RTT); the same `PacketAcked` objects are also queued for `AckTracker.poll_notifications`, which is
  the one stream with the exactly-once guarantee.
"""

from __future__ import annotations

import enum
import math
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from lagless.errors import ConfigError, LocalProtocolError
from lagless.transport.rtt import RttEstimator
from lagless.wire.seq import seq_diff

__all__ = [
    "ACK_BITS",
    "ACK_HEADER_SIZE",
    "AckConfig",
    "AckHeader",
    "AckTracker",
    "PacketAcked",
    "PacketLost",
    "ReceiveResult",
    "ReceiveStatus",
    "SequenceBuffer",
    "decode_header",
    "encode_header",
]

T = TypeVar("T")

SEQUENCE_MODULUS: Final = 1 << 16  # 16-bit sequence numbers (DESIGN.md "Transport defaults")
ACK_BITS: Final = 32  # width of the ack bitfield (DESIGN.md "Transport defaults")
_ACK_BITS_MASK: Final = (1 << ACK_BITS) - 1
_HEADER: Final = struct.Struct("<HHI")
ACK_HEADER_SIZE: Final = _HEADER.size  # bytes


class SequenceBuffer(Generic[T]):
    """A fixed-size ring of entries indexed by 16-bit wrapping sequence number.

    Slot ``sequence % size`` holds the entry of ``sequence``; each slot remembers which sequence it
    holds, so stale entries never answer for a newer sequence. Inserting a sequence newer than any
    seen so far clears the slots of the skipped sequences, so an entry from 65536 sequences ago can
    never be mistaken for a current one.
    """

    __slots__ = ("_newest", "_sequences", "_size", "_values")

    def __init__(self, size: int) -> None:
        """Create an empty buffer.

        Args:
            size: Number of slots; a power of two in [1, 32768] so it divides 65536 and the slot
                of a sequence stays the same across wrap-around.

        Raises:
            ConfigError: ``size`` is not a power of two in range.
        """
        if not 1 <= size <= SEQUENCE_MODULUS // 2 or size & (size - 1):
            raise ConfigError(f"size must be a power of two in [1, 32768], got {size}")
        self._size = size
        self._sequences: list[int | None] = [None] * size
        self._values: list[T | None] = [None] * size
        self._newest: int | None = None

    @property
    def size(self) -> int:
        """Number of slots."""
        return self._size

    @property
    def newest(self) -> int | None:
        """The newest sequence ever inserted, or None if nothing was."""
        return self._newest

    def _check(self, sequence: int) -> None:
        if not 0 <= sequence < SEQUENCE_MODULUS:
            raise LocalProtocolError(f"sequence must be in [0, 65535], got {sequence}")

    def is_stale(self, sequence: int) -> bool:
        """Return True if ``sequence`` is too old to be stored (``size`` or more behind newest).

        Args:
            sequence: A 16-bit sequence number.
        """
        self._check(sequence)
        return self._newest is not None and seq_diff(sequence, self._newest) <= -self._size

    def insert(self, sequence: int, value: T) -> bool:
        """Store ``value`` for ``sequence``, replacing whatever its slot held.

        Args:
            sequence: A 16-bit sequence number.
            value: The entry.

        Returns:
            False (and nothing stored) if ``sequence`` is stale, True otherwise.

        Raises:
            LocalProtocolError: ``sequence`` is outside [0, 65535].
        """
        if self.is_stale(sequence):
            return False
        newest = self._newest
        if newest is None:
            self._newest = sequence
        else:
            ahead = seq_diff(sequence, newest)
            if ahead > 0:
                # Clear the skipped slots so they cannot answer for old sequences.
                for i in range(1, min(ahead, self._size + 1)):
                    slot = (newest + i) % self._size
                    self._sequences[slot] = None
                    self._values[slot] = None
                self._newest = sequence
        slot = sequence % self._size
        self._sequences[slot] = sequence
        self._values[slot] = value
        return True

    def find(self, sequence: int) -> T | None:
        """Return the entry of ``sequence``, or None if absent or overwritten.

        Raises:
            LocalProtocolError: ``sequence`` is outside [0, 65535].
        """
        self._check(sequence)
        slot = sequence % self._size
        if self._sequences[slot] != sequence:
            return None
        return self._values[slot]

    def __contains__(self, sequence: int) -> bool:
        """Return True if ``sequence`` has an entry."""
        self._check(sequence)
        return self._sequences[sequence % self._size] == sequence

    def remove(self, sequence: int) -> T | None:
        """Remove and return the entry of ``sequence`` (None if absent).

        Raises:
            LocalProtocolError: ``sequence`` is outside [0, 65535].
        """
        self._check(sequence)
        slot = sequence % self._size
        if self._sequences[slot] != sequence:
            return None
        value = self._values[slot]
        self._sequences[slot] = None
        self._values[slot] = None
        return value

    def __len__(self) -> int:
        """Number of entries held."""
        return sum(s is not None for s in self._sequences)


@dataclass(frozen=True, slots=True, kw_only=True)
class AckHeader:
    """The reliability header at the front of every payload packet (spec 004 §4.4.2)."""

    sequence: int
    """This packet's 16-bit sequence number."""
    ack: int
    """Newest sequence the sender has received from its peer (65535 before any)."""
    ack_bits: int
    """32-bit field; bit n set means sequence ``ack - 1 - n`` was received too."""


def encode_header(header: AckHeader) -> bytes:
    """Write an `AckHeader` as ``ACK_HEADER_SIZE`` (8) bytes.

    Args:
        header: The header to write.

    Returns:
        The encoded bytes.

    Raises:
        LocalProtocolError: A field is out of range.
    """
    if not 0 <= header.sequence < SEQUENCE_MODULUS:
        raise LocalProtocolError(f"sequence must be in [0, 65535], got {header.sequence}")
    if not 0 <= header.ack < SEQUENCE_MODULUS:
        raise LocalProtocolError(f"ack must be in [0, 65535], got {header.ack}")
    if not 0 <= header.ack_bits <= _ACK_BITS_MASK:
        raise LocalProtocolError(f"ack_bits must be in [0, 2**32 - 1], got {header.ack_bits}")
    return _HEADER.pack(header.sequence, header.ack, header.ack_bits)


def decode_header(
    data: bytes | bytearray | memoryview, offset: int = 0
) -> tuple[AckHeader, int] | None:
    """Read an `AckHeader` from ``data`` at ``offset``; never raises on any bytes.

    Args:
        data: Received bytes.
        offset: Where the header starts.

    Returns:
        ``(header, end)`` where ``end`` is the offset just past the header, or None if fewer than
        ``ACK_HEADER_SIZE`` bytes remain (or ``offset`` is negative).
    """
    if offset < 0 or len(data) - offset < _HEADER.size:
        return None
    sequence, ack, ack_bits = _HEADER.unpack_from(data, offset)
    return AckHeader(sequence=sequence, ack=ack, ack_bits=ack_bits), offset + _HEADER.size


@dataclass(frozen=True, slots=True, kw_only=True)
class AckConfig:
    """Configuration of `AckTracker`."""

    sent_buffer_size: int = 1024
    """Packets that may be in flight (unresolved); power of two in [64, 32768].

    1024 follows reliable.io's sent-packet buffer."""
    received_window: int = 1024
    """Duplicate-detection window in packets; power of two in [64, 32768]. Older packets are
    rejected as stale."""
    loss_rtt_factor: float = 2.0
    """A packet is lost after ``loss_rtt_factor`` x smoothed RTT without ack; in [1, 100]."""
    min_loss_timeout: float = 0.2
    """Lower bound of the loss timeout in seconds, in (0, 60]."""
    initial_loss_timeout: float = 1.0
    """Loss timeout in seconds before the first RTT sample, in (0, 60] (RFC 6298 §2.1: 1 s)."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        for name in ("sent_buffer_size", "received_window"):
            value = getattr(self, name)
            if not 64 <= value <= 32768 or value & (value - 1):
                raise ConfigError(f"{name} must be a power of two in [64, 32768], got {value}")
        if not (math.isfinite(self.loss_rtt_factor) and 1.0 <= self.loss_rtt_factor <= 100.0):
            raise ConfigError(f"loss_rtt_factor must be in [1, 100], got {self.loss_rtt_factor}")
        for name in ("min_loss_timeout", "initial_loss_timeout"):
            value = getattr(self, name)
            if not (math.isfinite(value) and 0.0 < value <= 60.0):
                raise ConfigError(f"{name} must be in (0, 60] seconds, got {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class PacketAcked:
    """A packet this side sent was acknowledged by the peer (Tribes "delivered")."""

    sequence: int
    """The packet's 16-bit sequence number."""
    send_time: float
    """When it was sent, seconds (the ``now`` given to `AckTracker.next_send`)."""
    size: int
    """Its size in bytes, as given to `AckTracker.next_send`."""
    rtt: float
    """Time from sending to the ack's arrival, seconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PacketLost:
    """A packet this side sent is presumed lost (Tribes "dropped"); it will never be acked."""

    sequence: int
    """The packet's 16-bit sequence number."""
    send_time: float
    """When it was sent, seconds."""
    size: int
    """Its size in bytes."""
    rtt: float
    """Smoothed RTT when the loss was declared, seconds (0.0 before any RTT sample)."""


class ReceiveStatus(enum.IntEnum):
    """What `AckTracker.on_receive` did with a packet."""

    ACCEPTED = 0
    """New packet: recorded for future acks and its ack fields processed."""
    DUPLICATE = 1
    """Already received: no state change; drop the payload."""
    STALE = 2
    """Too old for the duplicate-detection window: no state change; drop the payload."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceiveResult:
    """The outcome of `AckTracker.on_receive`."""

    status: ReceiveStatus
    """Whether the packet was accepted; the layer above drops the payload unless ACCEPTED."""
    acked: tuple[PacketAcked, ...]
    """Packets of this side newly acknowledged by the header, oldest first (also queued for
    `AckTracker.poll_notifications`)."""

    @property
    def accepted(self) -> bool:
        """True if ``status`` is ACCEPTED."""
        return self.status is ReceiveStatus.ACCEPTED


_Sent = tuple[float, int, bool]
"""A sent packet's record: ``(send_time, size, lost)`` (seconds, bytes; ``lost`` once reported
lost, kept so a late ack still yields an RTT sample). A tuple, replaced when it is reported lost,
costs a fraction of an object per packet."""


Outcome = tuple[int, float, int, float, bool]
"""A packet's fate inside the tracker: ``(sequence, send_time, size, rtt, lost)`` (a tuple costs
a tenth of a `PacketAcked`; `AckTracker.poll_notifications` builds those from it)."""


class AckTracker:
    """Sequence / ack state of one virtual connection, and its delivery notifications.

    Pure state machine: every method takes ``now`` (seconds, the driver's monotonic clock). Use:
    `next_send` for each outgoing packet, `on_receive` for each decoded incoming header, and
    `poll_notifications` to pull `PacketAcked` / `PacketLost` events. The connection uses the
    tuple forms `next_send_fields`, `status`, `on_receive_fields` and `take_outcomes`, which
    build no objects per packet.
    """

    __slots__ = (
        "_ack",
        "_ack_bits",
        "_config",
        "_in_flight",
        "_in_flight_append",
        "_in_flight_popleft",
        "_next_sequence",
        "_notes",
        "_peer_ack",
        "_peer_ack_bits",
        "_received",
        "_sent",
        "ack_time",
        "late",
        "rtt",
    )

    def __init__(self, *, config: AckConfig | None = None, rtt: RttEstimator | None = None) -> None:
        """Create a tracker for a fresh connection (first sequence 0, nothing received).

        Args:
            config: Buffer sizes and loss rule; defaults to `AckConfig()`.
            rtt: The RTT estimator to feed (and read for the loss timeout); a new one by default.
        """
        self._config = config if config is not None else AckConfig()
        self.rtt = rtt if rtt is not None else RttEstimator()
        """The RTT estimator fed by acks (see the module docstring for which samples)."""
        self._next_sequence = 0
        self._sent: SequenceBuffer[_Sent] = SequenceBuffer(self._config.sent_buffer_size)
        self._in_flight: deque[int] = deque()  # sequences in send order, possibly resolved
        # bound once: a compiled build calls a deque's methods through a lookup by name
        self._in_flight_append: Callable[[int], None] = self._in_flight.append
        self._in_flight_popleft: Callable[[], int] = self._in_flight.popleft
        self._received: SequenceBuffer[bool] = SequenceBuffer(self._config.received_window)
        self._ack = SEQUENCE_MODULUS - 1
        self._ack_bits = 0
        self._notes: list[Outcome] = []
        self._peer_ack = SEQUENCE_MODULUS - 1  # newest ack field processed, and its bits
        self._peer_ack_bits = 0
        self.ack_time: float | None = None
        """Arrival time (s) of the packet the ack field names (the newest received), or None
        before any; the owner reports ``now - ack_time`` as the ack delay of what it sends."""
        self.late: list[int] = []
        """Sequences acked after they were reported lost, oldest first; the owner reads and
        clears it (a late ack is a spurious loss: the packet was delayed, not dropped)."""

    @property
    def next_sequence(self) -> int:
        """The sequence number the next `next_send` will use."""
        return self._next_sequence

    @property
    def in_flight(self) -> int:
        """Number of sent packets not yet reported acked or lost."""
        return sum(1 for seq in self._in_flight if (sent := self._sent.find(seq)) and not sent[2])

    def loss_timeout(self) -> float:
        """Seconds after sending at which an unacked packet is declared lost (see module doc)."""
        config = self._config
        if not self.rtt.samples:
            return config.initial_loss_timeout
        return max(config.loss_rtt_factor * self.rtt.rtt, config.min_loss_timeout)

    def ack_fields(self) -> tuple[int, int]:
        """Return ``(ack, ack_bits)`` to put in the next outgoing header."""
        return self._ack, self._ack_bits

    def next_send(self, now: float, size: int) -> AckHeader:
        """Allocate the next outgoing sequence and record the packet as in flight.

        Args:
            now: Send time in seconds.
            size: Packet size in bytes (reported back on its notification).

        Returns:
            The header to write at the front of the packet.

        Raises:
            LocalProtocolError: ``size`` is negative.
        """
        if size < 0:
            raise LocalProtocolError(f"size must be >= 0 bytes, got {size}")
        sequence, ack, ack_bits = self.next_send_fields(now, size)
        return AckHeader(sequence=sequence, ack=ack, ack_bits=ack_bits)

    def next_send_fields(self, now: float, size: int) -> tuple[int, int, int]:
        """`next_send` returning ``(sequence, ack, ack_bits)``; ``size`` (bytes) must be >= 0."""
        sequence = self._next_sequence
        sent = self._sent
        capacity = sent._size
        # Rule (c): a packet whose slot is about to be reused is lost. ``_in_flight`` is appended
        # here only and taken from the front only, so it holds every sequence from its head to
        # the last one sent: its head is len(_in_flight) behind ``sequence`` (no index needed).
        in_flight = self._in_flight
        while len(in_flight) >= capacity:
            self._declare_lost(self._in_flight_popleft())
        # sequences are allocated in order, so the slot is the only one to (over)write
        slot = sequence & (capacity - 1)
        sent._sequences[slot] = sequence
        sent._values[slot] = (now, size, False)
        sent._newest = sequence
        self._in_flight_append(sequence)
        self._next_sequence = (sequence + 1) & 0xFFFF
        return sequence, self._ack, self._ack_bits

    def classify(self, sequence: int) -> ReceiveStatus:
        """Say what `on_receive` would do with ``sequence``, changing nothing.

        The connection checks this before it parses the rest of a packet, so a packet whose body
        is rejected is never acknowledged and its sender resends what it carried.
        """
        if self._received.is_stale(sequence):
            return ReceiveStatus.STALE
        if sequence in self._received:
            return ReceiveStatus.DUPLICATE
        return ReceiveStatus.ACCEPTED

    def status(self, sequence: int) -> int:
        """`classify` as a plain int (0 accepted, 1 duplicate, 2 stale) for a 16-bit sequence."""
        received = self._received
        newest = received._newest
        if newest is None:
            return 0
        behind = (newest - sequence) & 0xFFFF
        if received._size <= behind < 0x8000:
            return 2
        return 1 if received._sequences[sequence & (received._size - 1)] == sequence else 0

    def on_receive(self, header: AckHeader, now: float) -> ReceiveResult:
        """Process the header of a received packet.

        Records ``header.sequence`` for future acks and turns ``header.ack`` / ``ack_bits`` into
        acknowledgements of this side's packets.

        Args:
            header: The decoded header.
            now: Arrival time in seconds.

        Returns:
            Whether the packet is new, and which packets it newly acknowledged.
        """
        status = self.classify(header.sequence)
        if status is not ReceiveStatus.ACCEPTED:
            return ReceiveResult(status=status, acked=())
        before = len(self._notes)
        self.on_receive_fields(header.sequence, header.ack, header.ack_bits, now)
        acked = tuple(
            PacketAcked(sequence=seq, send_time=sent, size=size, rtt=rtt)
            for seq, sent, size, rtt, lost in self._notes[before:]
            if not lost
        )
        return ReceiveResult(status=ReceiveStatus.ACCEPTED, acked=acked)

    def on_receive_fields(
        self, sequence: int, ack: int, ack_bits: int, now: float, ack_delay: float = 0.0
    ) -> None:
        """`on_receive` for a header already checked with `status` (it returned 0).

        Args:
            sequence: The packet's sequence number.
            ack: Its ack field.
            ack_bits: Its ack bitfield.
            now: Arrival time in seconds.
            ack_delay: How long the peer held packet ``ack`` before sending this header
                (seconds); the RTT sample of ``ack`` is taken without it (QUIC's rule, RFC 9002
                §5.3: only while the sample stays at or above the smallest RTT seen).
        """
        # record the sequence for our acks (SequenceBuffer.insert without its checks: `status`
        # already showed it is neither a duplicate nor stale)
        received = self._received
        size = received._size
        mask = size - 1
        sequences = received._sequences
        newest = received._newest
        if newest is None:
            received._newest = sequence
            self._ack = sequence
            self._ack_bits = 0
            self.ack_time = now
        else:
            ahead = (sequence - newest) & 0xFFFF
            if 0 < ahead <= 0x8000:
                if ahead > 1:  # sequences skipped over: their slots no longer hold them
                    for skipped in range(newest + 1, newest + min(ahead, size + 1)):
                        sequences[skipped & mask] = None
                received._newest = sequence
            ahead = (sequence - self._ack) & 0xFFFF
            if 0 < ahead <= 0x8000:
                # the old ack becomes bit ahead - 1; older bits shift along with it
                bits = (self._ack_bits << ahead) | (1 << (ahead - 1)) if ahead <= ACK_BITS else 0
                self._ack_bits = bits & _ACK_BITS_MASK
                self._ack = sequence
                self.ack_time = now
            elif ahead and 0x10000 - ahead <= ACK_BITS:
                self._ack_bits |= 1 << (0xFFFF - ahead)
        sequences[sequence & mask] = sequence
        received._values[sequence & mask] = True
        # then the ack fields
        if (ack - self._next_sequence) & 0xFFFF <= 0x8000:
            return  # a "future" ack: this side never sent that sequence (module doc)
        # Only bits the previous header did not already carry can acknowledge anything new: a
        # sequence it carried was removed from the sent buffer then (or was not in it). With the
        # same ack that holds for the ack itself too, so it is walked only when the ack moved,
        # and a header repeating the last one's fields (a bulk sender's peer does, until it
        # sends again) acknowledges nothing.
        bits = ack_bits
        shift = (ack - self._peer_ack) & 0xFFFF
        if shift == 0:
            bits &= ~self._peer_ack_bits
            if not bits:
                return  # nothing new; rule (b) below ran for this ack when it was first taken
        elif shift <= ACK_BITS:
            bits &= ~(self._peer_ack_bits << shift | 1 << (shift - 1))
        if shift <= 0x8000:
            self._peer_ack, self._peer_ack_bits = ack, ack_bits
        # Oldest first: the highest set bit down to bit 0, then the ack itself when it moved
        # (shifted in as bit 0, so bit n + 1 stands for sequence ack - 1 - n).
        sent_buffer = self._sent
        mask = sent_buffer._size - 1
        sequences = sent_buffer._sequences
        values = sent_buffer._values
        notes = self._notes
        sample: float | None = None
        pending = bits << 1 | (shift != 0)
        while pending:
            n = pending.bit_length() - 1
            pending ^= 1 << n
            sequence = (ack - n) & 0xFFFF
            slot = sequence & mask
            if sequences[slot] != sequence:
                continue
            sent = values[slot]
            assert sent is not None  # invariant: a slot holding a sequence holds its record
            sequences[slot] = None
            values[slot] = None
            rtt = now - sent[0]
            if not n:
                sample = rtt
            if sent[2]:
                # Already reported lost: no second notification, but the round trip is real.
                # Without it a path whose RTT exceeds the initial loss timeout would never get a
                # sample and every packet would stay "lost" (test_acks.py::test_late_ack_feeds_rtt).
                self.late.append(sequence)
                continue
            notes.append((sequence, sent[0], sent[1], rtt, False))
        if sample is not None:
            if ack_delay and sample - ack_delay >= self.rtt.rtt_min:
                sample -= ack_delay
            self.rtt.on_sample(sample)
        # Rule (b): unresolved packets more than 32 behind the ack can never be acked now.
        in_flight = self._in_flight
        while in_flight:
            behind = (ack - in_flight[0]) & 0xFFFF
            if behind <= ACK_BITS or behind > 0x8000:
                break  # within the field, or in_flight[0] is newer than the ack
            sequence = self._in_flight_popleft()
            slot = sequence & mask
            if sequences[slot] == sequence:
                sent = values[slot]
                assert sent is not None  # invariant: as above
                if not sent[2]:
                    values[slot] = (sent[0], sent[1], True)
                    notes.append((sequence, sent[0], sent[1], self.rtt.rtt, True))

    def _declare_lost(self, sequence: int) -> None:
        buffer = self._sent
        sent = buffer.find(sequence)
        if sent is not None and not sent[2]:
            buffer._values[sequence & (buffer._size - 1)] = (sent[0], sent[1], True)
            self._notes.append((sequence, sent[0], sent[1], self.rtt.rtt, True))

    def take_outcomes(self, now: float) -> list[Outcome]:
        """`poll_notifications` as ``(sequence, send_time, size, rtt, lost)`` tuples.

        Args:
            now: Current time in seconds.

        Returns:
            Pending outcomes, oldest first; the caller owns the list.
        """
        in_flight = self._in_flight
        if in_flight:
            config = self._config
            rtt = self.rtt
            if rtt.samples:
                timeout = config.loss_rtt_factor * rtt.rtt
                if timeout < config.min_loss_timeout:
                    timeout = config.min_loss_timeout
            else:
                timeout = config.initial_loss_timeout
            sent_buffer = self._sent
            mask = sent_buffer._size - 1
            sequences = sent_buffer._sequences
            values = sent_buffer._values
            while in_flight:
                head = in_flight[0]
                slot = head & mask
                sent = values[slot] if sequences[slot] == head else None
                if sent is None or sent[2]:
                    self._in_flight_popleft()  # resolved already
                    continue
                # the same sum as next_loss_deadline, so a timer fired at that deadline always
                # resolves the packet (now - timeout could round the other way and spin the driver)
                if sent[0] + timeout > now:
                    break
                self._in_flight_popleft()
                values[slot] = (sent[0], sent[1], True)
                self._notes.append((head, sent[0], sent[1], rtt.rtt, True))
        out = self._notes
        if out:
            self._notes = []
        return out

    def poll_notifications(self, now: float) -> list[PacketAcked | PacketLost]:
        """Declare timed-out packets lost, then return and clear all pending notifications.

        Every packet given to `next_send` appears exactly once over all calls, as `PacketAcked`
        or `PacketLost`, in the order its fate was decided.

        Args:
            now: Current time in seconds.

        Returns:
            Pending notifications, oldest first.
        """
        return [
            PacketLost(sequence=seq, send_time=sent, size=size, rtt=rtt)
            if lost
            else PacketAcked(sequence=seq, send_time=sent, size=size, rtt=rtt)
            for seq, sent, size, rtt, lost in self.take_outcomes(now)
        ]

    def next_loss_deadline(self) -> float | None:
        """Absolute time (seconds) at which the oldest in-flight packet times out, or None."""
        in_flight = self._in_flight
        sent_buffer = self._sent
        mask = sent_buffer._size - 1
        sequences = sent_buffer._sequences
        values = sent_buffer._values
        while in_flight:
            head = in_flight[0]
            slot = head & mask
            if sequences[slot] == head:  # SequenceBuffer.find without its range check
                sent = values[slot]
                if sent is not None and not sent[2]:
                    return sent[0] + self.loss_timeout()
            self._in_flight_popleft()  # already resolved
        return None
