"""The message layer of one connection side: packs messages of all channels into payloads.

Implements DESIGN.md "Transport defaults" (messages of all channels packed into one payload under
the 1200-byte budget, reliable messages resent until a packet carrying them is acked, fragments of
at most 1024 bytes), spec 004 §4.4.2 (delivery notifications per packet drive resends; several
messages per packet, each with its own delivery policy) and §4.4.4 (guaranteed / non-guaranteed
events), and spec 000 §2.5 (ENet aggregation and channels). Sans-I/O: time comes in as ``now``.

The record format is `lagless.transport.records`'s. Read checks, in order (each failure drops the
whole payload): record grammar and lengths (``MALFORMED``: truncated, reserved bit, non-minimal or
3-byte varint, length above ``fragment_size``, fragment count below 2 or index beyond it, a non-last
fragment shorter than ``fragment_size``, an empty last fragment); then, against the configuration,
``UNKNOWN_CHANNEL``, ``UNEXPECTED_FRAGMENT`` (fragment on an unreliable channel) and ``TOO_LARGE``;
only then are the records applied in order, where ``OUT_OF_WINDOW``, ``FRAGMENT_MISMATCH`` and
``REASSEMBLY_MEMORY`` stop processing (records before it stay applied; the connection closes
anyway).

Decisions:

* ``read_packet`` never raises on bytes; it returns ``None`` when the payload was accepted (even
  if some records were duplicates) or the ``MessageDropReason`` that dropped it. The connection
  should ack a packet only when ``read_packet`` returned ``None``, so a reliable message in a
  dropped payload is resent (``test_packer.py::test_garbage_never_raises_and_is_counted``).
* Violations (``reason.is_violation``) are also stored, first one wins, in
  ``MessageLayer.violation``; the connection closes on it (STYLE §4) and the layer keeps working
  meanwhile (``test_packer.py::test_violation_is_sticky_and_reported``).
* Packing: channels in priority order (higher first, ties by index), each within its per-packet
  ``budget``. Small (unfragmented) messages and fragments are packed in two passes; when both wait,
  fragments go first in a ``fragment_share`` of the packets (deterministic credit counter) and
  small messages first in the others, so a 256 KiB transfer neither starves nor is starved
  (``test_packer.py::test_small_messages_flow_during_big_transfer``).
* Every channel writes its records in order and stops at the first one that does not fit:
  unreliable in FIFO order (writing a later one first would make the earlier one stale), reliable
  lost records first, then due resends, then new messages; looking further would cost time per
  message in flight on every packet
  (``test_transport_costs.py::test_reliable_packing_stops_at_the_first_message_that_does_not_fit``).
  The fragment pass is skipped for channels with no fragmented message queued.
* The contents of the last ``sent_packet_history`` packets are remembered; an older record, or
  one whose sequence number is reused, counts as lost (``test_packer.py::test_history_bound``).
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import cast

from lagless.errors import LocalProtocolError
from lagless.transport.channels import (
    Delivered,
    DeliveredMessage,
    Outgoing,
    Ready,
    ReceivedMessage,
    ReliableReceiver,
    ReliableSender,
    UnreliableReceiver,
    UnreliableSender,
)
from lagless.transport.config import MAX_RECORD_OVERHEAD, MessageLayerConfig
from lagless.transport.fragment import Reassembler
from lagless.transport.message_errors import (
    MessageDropReason,
    MessageTooLarge,
    MessageViolation,
)
from lagless.transport.records import (
    SHORT_UNPACK_FROM,
    Record,
    encode_record,
    fragment_head,
    parse_payload,
    parse_records,
    record_size,
    small_record_head,
)
from lagless.wire.errors import DecodeError

__all__ = [
    "MessageLayer",
    "MessageLayerStatistics",
    "Record",
    "encode_record",
    "parse_payload",
    "record_size",
]


_Carried = tuple[
    list[tuple[ReliableSender, list[object]]], list[tuple[ReliableSender, Outgoing, int]]
]
"""The reliable records of one sent packet: each channel's flight of unfragmented message ids
(`ReliableSender.fill_small`), and its fragments as ``(sender, message, index)``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MessageLayerStatistics:
    """Snapshot of a ``MessageLayer``'s counters (trio-style ``statistics()``)."""

    messages_sent: int
    """Messages accepted by ``send``."""
    messages_received: int
    """Messages handed to the receive queue."""
    messages_delivered: int
    """Reliable messages whose every fragment was acked."""
    packets_written: int
    """Payloads returned by ``write_packet``."""
    records_written: int
    """Records (messages or fragments) written."""
    records_resent: int
    """Reliable records written again after an earlier send."""
    bytes_written: int
    """Payload bytes returned by ``write_packet`` (bytes)."""
    unreliable_send_dropped: int
    """Unreliable messages dropped unsent because their queue was full."""
    reassembly_memory: int
    """Bytes reserved now for fragmented messages not yet delivered (bytes)."""
    reassembly_peak: int
    """Highest ``reassembly_memory`` so far (bytes)."""
    reassembly_expired: int
    """Half-reassembled messages dropped after ``fragment_timeout`` seconds without progress."""
    dropped: Mapping[MessageDropReason, int]
    """Drops by reason: payloads for packet-level reasons, records for DUPLICATE and STALE."""
    violation: MessageDropReason | None
    """First protocol violation by the peer, if any."""


class MessageLayer:
    """Channels, fragmentation and packing for one side of a connection (sans-I/O).

    The connection calls ``write_packet`` for every payload packet it sends, reports the fate of
    each packet with ``on_packet_acked`` / ``on_packet_lost`` (spec 004 §4.4.2), passes received
    payloads to ``read_packet`` and drains ``next_received`` and ``next_delivered``.
    """

    def __init__(self, *, config: MessageLayerConfig | None = None) -> None:
        """Create the layer with empty channels.

        Args:
            config: Message-layer settings; both ends must use equal ones. Default settings when
                ``None``.
        """
        self.config = MessageLayerConfig() if config is None else config
        """The message-layer settings."""
        cfg = self.config
        self._reserve = [0, 0]  # shared by the reliable senders, see ReliableSender
        self.ready: deque[Ready] = deque()
        """``(channel, message_id, payload)`` for the application, in delivery order: what
        `next_received` drains (an owner may also read and clear it)."""
        self._queue_ready: Callable[[Ready], None] = self.ready.append  # bound once (channels)
        self.delivered: deque[Delivered] = deque()
        """``(channel, message_id)`` of reliable messages fully acked, oldest first: what
        `next_delivered` drains (an owner may also read and clear it)."""
        self._reassembler = Reassembler(
            fragment_size=cfg.fragment_size,
            memory_limit=cfg.reassembly_memory_limit,
            timeout=cfg.fragment_timeout,
        )
        self._reliable: dict[int, ReliableSender] = {}
        self._unreliable: dict[int, UnreliableSender] = {}
        self._rreceivers: dict[int, ReliableReceiver] = {}
        self._ureceivers: dict[int, UnreliableReceiver] = {}
        for i, ch in enumerate(cfg.channels):
            if ch.kind.reliable:
                self._reliable[i] = ReliableSender(i, cfg, self._reserve, self.delivered)
                self._rreceivers[i] = ReliableReceiver(i, cfg, self._reassembler, self.ready)
            else:
                self._unreliable[i] = UnreliableSender(i, ch)
                self._ureceivers[i] = UnreliableReceiver(i, cfg, self.ready)
        self._order = sorted(range(len(cfg.channels)), key=lambda i: (-cfg.channels[i].priority, i))
        self._lanes = [
            (i, self._reliable.get(i), self._unreliable.get(i), cfg.channels[i].budget)
            for i in self._order
        ]
        self._limits = [cfg.message_limit(i) for i in range(len(cfg.channels))]
        self._fast_limits = [min(limit, cfg.fragment_size) for limit in self._limits]
        self._senders: list[ReliableSender | UnreliableSender] = [
            self._reliable.get(i) or self._unreliable[i] for i in range(len(cfg.channels))
        ]
        self._receivers: list[ReliableReceiver | UnreliableReceiver] = [
            self._rreceivers.get(i) or self._ureceivers[i] for i in range(len(cfg.channels))
        ]
        self.send_lanes: dict[int, tuple[int, Callable[[bytes], int]]] = {
            i: (self._limits[i], sender.send) for i, sender in enumerate(self._senders)
        }
        """``channel: (message limit, sender's send)``: `send` without its checks, for a caller
        that has checked ``channel`` is an ``int`` key here and ``payload`` is ``bytes`` within
        the limit (`lagless.transport.connection.Connection.send`)."""
        self._ordered: list[ReliableReceiver | None] = [
            r if isinstance(r, ReliableReceiver) and r.ordered else None for r in self._receivers
        ]
        self._max_count = [-(-limit // cfg.fragment_size) for limit in self._limits]
        # the settings write_packet reads per packet, copied: ``config`` is frozen, and a compiled
        # build reads its own fields directly but a dataclass's through a lookup
        self._budget = cfg.packet_budget
        self._least_budget = cfg.fragment_size + MAX_RECORD_OVERHEAD
        self._fragment_share = cfg.fragment_share
        self._history = cfg.sent_packet_history
        self._channel_count = len(cfg.channels)
        self._sent: dict[int, _Carried] = {}
        self.filled = 0
        """Bytes of records in the payload `write_parts` wrote last (its pieces' total)."""
        self.left_behind = False
        """The last `write_packet` left a due unfragmented record out for want of room, so
        `has_pending` would say True (the sender's pump need not ask)."""
        self._credit = 1.0
        self._dropped: Counter[MessageDropReason] = Counter()
        self.violation: MessageDropReason | None = None
        """First protocol violation seen in ``read_packet``; the connection should close."""
        self._messages_received = 0
        self._messages_delivered = 0
        self._packets = 0
        self._records = 0
        self._resent = 0
        self._bytes = 0

    # ----------------------------------------------------------------------------- sending

    def send(self, channel: int, payload: bytes, now: float) -> int:
        """Queue ``payload`` on ``channel``.

        Args:
            channel: Channel index.
            payload: Message bytes.
            now: Current time (seconds); taken for the uniform sans-I/O shape, queue order alone
                decides what is sent first.

        Returns:
            The 16-bit message id (per channel, wrapping).

        Raises:
            LocalProtocolError: Unknown channel or a payload that is not bytes.
            MessageTooLarge: ``len(payload)`` above the channel's ``max_message_size``.
            SendQueueFull: A reliable channel already holds ``send_queue_limit`` messages.

        Pump the object afterwards (see ``lagless.io.drive.pump``).
        """
        limits = self._limits
        is_int = type(channel) is int or isinstance(channel, int)  # the exact type first: fast
        if not is_int or not 0 <= channel < len(limits):
            raise LocalProtocolError(f"channel must be in [0, {len(limits) - 1}], got {channel!r}")
        if type(payload) is not bytes:
            if not isinstance(payload, bytes | bytearray | memoryview):
                raise LocalProtocolError(f"payload must be bytes, got {type(payload).__name__}")
            payload = bytes(payload)
        if len(payload) > limits[channel]:
            raise MessageTooLarge(
                f"payload must be <= {limits[channel]} bytes on channel {channel} "
                f"(max_message_size), got {len(payload)}"
            )
        return self._senders[channel].send(payload)

    def write_packet(self, packet_seq: int, now: float, budget: int | None = None) -> bytes | None:
        """Fill one payload with due messages of all channels.

        Args:
            packet_seq: Sequence number of the packet that will carry the payload (16 bits).
            now: Current time (seconds).
            budget: Payload bytes available; ``config.packet_budget`` when ``None``.

        Returns:
            The payload, or ``None`` when nothing is due.

        Raises:
            LocalProtocolError: ``budget`` smaller than one full fragment record.
        """
        parts = self.write_parts(packet_seq, now, budget)
        return None if parts is None else b"".join(parts)

    def write_parts(
        self, packet_seq: int, now: float, budget: int | None = None
    ) -> list[bytes] | None:
        """`write_packet` as the list of its pieces, the first one ``b""`` for a header.

        The caller puts its own header in the first slot and joins the list: the payload is
        copied once, whatever the number of records (`Connection` does, per packet).

        Returns:
            The pieces (``b""``, then every record's bytes in order), or ``None`` when nothing
            is due.

        Raises:
            LocalProtocolError: ``budget`` smaller than one full fragment record.
        """
        limit: int = self._budget if budget is None else budget
        if limit < self._least_budget:
            raise LocalProtocolError(f"budget must be >= {self._least_budget} bytes, got {limit}")
        if packet_seq in self._sent:
            self._forget(packet_seq)
        out: list[bytes] = [b""]
        self.filled = 0
        entries: _Carried = ([], [])
        used = [0] * self._channel_count
        self.left_behind = False
        if not self._reserve[1]:
            self._write_small(out, entries, used, limit, packet_seq, now)
        elif self._credit >= 1.0:
            wrote = self._write_fragments(out, entries, used, limit, packet_seq, now)
            self._write_small(out, entries, used, limit, packet_seq, now)
            self._credit -= 1.0 if wrote else 0.0
        else:
            self._write_small(out, entries, used, limit, packet_seq, now)
            self._write_fragments(out, entries, used, limit, packet_seq, now)
        size = self.filled
        if not size:
            return None
        self._credit = min(1.0, self._credit + self._fragment_share)
        if entries[0] or entries[1]:
            self._sent[packet_seq] = entries
            if len(self._sent) > self._history:
                self._forget(next(iter(self._sent)))
        self._packets += 1
        self._bytes += size
        return out

    def _room(self, channel: int, used: list[int], budget: int) -> int:
        cap = self.config.channels[channel].budget
        room = budget - self.filled
        return room if cap is None else min(room, cap - used[channel])

    def _write_small(
        self,
        out: list[bytes],
        entries: _Carried,
        used: list[int],
        budget: int,
        packet_seq: int,
        now: float,
    ) -> None:
        for ch, reliable, unreliable, cap in self._lanes:
            if reliable is not None:
                if not reliable.queued:
                    continue  # nothing unacked on this channel: nothing to write
            elif unreliable is None or not unreliable.queue:
                continue
            room = budget - self.filled
            if cap is not None:
                room = min(room, cap - used[ch])
            if unreliable is not None:
                queue = unreliable.queue
                while queue and (size := record_size(len(queue[0][1]), fragment=False)) <= room:
                    message_id, data = queue.popleft()
                    out.append(small_record_head(ch, message_id, len(data)))
                    out.append(data)  # joined with the rest: not copied twice
                    used[ch] += size
                    room -= size
                    self.filled += size
                    self._records += 1
                continue
            assert reliable is not None  # invariant: every lane has one sender
            written, resent, ids, full = reliable.fill_small(out, room, packet_seq, now)
            if full:
                self.left_behind = True
            if ids is not None:
                entries[0].append((reliable, ids))
                used[ch] += written
                self.filled += written
                self._records += len(ids)
                self._resent += resent

    def _write_fragments(
        self,
        out: list[bytes],
        entries: _Carried,
        used: list[int],
        budget: int,
        packet_seq: int,
        now: float,
    ) -> bool:
        wrote = False
        for ch, reliable, _, _ in self._lanes:
            if reliable is None or not reliable.has_fragments:
                continue
            while (head := reliable.peek_fragment(now)) is not None:
                msg, index = head
                piece = msg.pieces[index]
                size = record_size(len(piece), fragment=True)
                if size > self._room(ch, used, budget):
                    break
                out.append(fragment_head(ch, msg.message_id, index, msg.count, len(piece)))
                out.append(piece)
                used[ch] += size
                self.filled += size
                entries[1].append((reliable, msg, index))
                self._records += 1
                self._resent += reliable.take(msg, index, packet_seq, now)
                wrote = True
        return wrote

    def _forget(self, packet_seq: int) -> None:
        carried = self._sent.pop(packet_seq, None)
        if carried is None:
            return
        for sender, ids in carried[0]:
            sender.lost_small(packet_seq, ids)
        for sender, msg, index in carried[1]:
            sender.lost(msg, index, packet_seq)

    def on_packet_acked(self, packet_seq: int) -> None:
        """The packet ``packet_seq`` was acked: its reliable records count as received.

        Unknown or already reported sequence numbers are ignored.

        Args:
            packet_seq: Sequence number given to ``write_packet``.

        Pump the object afterwards (see ``lagless.io.drive.pump``).
        """
        sent = self._sent
        carried = sent.get(packet_seq)  # get and del: a compiled build calls pop by name
        if carried is None:
            return
        del sent[packet_seq]
        delivered = self.delivered
        before = len(delivered)
        for sender, ids in carried[0]:
            sender.acked_small(ids)
        for sender, msg, index in carried[1]:
            sender.acked(msg, index)
        self._messages_delivered += len(delivered) - before

    def on_packet_lost(self, packet_seq: int) -> None:
        """The packet ``packet_seq`` was declared lost: its unacked records are due at once.

        Unknown or already reported sequence numbers are ignored.

        Args:
            packet_seq: Sequence number given to ``write_packet``.

        Pump the object afterwards (see ``lagless.io.drive.pump``).
        """
        self._forget(packet_seq)

    def set_resend_delay(self, seconds: float) -> None:
        """Set how long after its last send an unacked reliable record is due again.

        Each reliable channel uses ``max(channel.resend_interval, seconds)``; the connection
        passes ``1.25 * SRTT + 4 * jitter`` whenever its estimates change.

        Args:
            seconds: Delay derived from the measured round trip (seconds).

        Pump the object afterwards (see ``lagless.io.drive.pump``).
        """
        for sender in self._reliable.values():
            sender.set_resend_delay(seconds)

    def has_pending(self, now: float) -> bool:
        """Return True when ``write_packet(now)`` would write something.

        Args:
            now: Current time (seconds).
        """
        for _, reliable, unreliable, _ in self._lanes:
            if reliable is None:
                if unreliable is not None and unreliable.queue:
                    return True
            elif reliable.queued and reliable.has_pending(now):  # nothing unacked: nothing due
                return True
        return False

    def has_unsent(self) -> bool:
        """Return True while some queued message was never (wholly) sent, on any channel."""
        for _, reliable, unreliable, _ in self._lanes:
            if reliable is None:
                if unreliable is not None and unreliable.queue:
                    return True
            elif reliable.has_unsent():
                return True
        return False

    def next_resend_time(self) -> float | None:
        """Return the earliest time (seconds) an unacked reliable record becomes due, or None.

        Records never sent (or whose packet was lost) are due now; ``has_pending`` reports them.
        """
        best: float | None = None
        for sender in self._reliable.values():
            if not sender.queued:
                continue  # nothing unacked: nothing to resend
            due = sender.next_resend_time()
            if due is not None and (best is None or due < best):
                best = due
        return best

    def next_delivered(self) -> DeliveredMessage | None:
        """Return the next reliable message fully acked by the peer, or None."""
        if not self.delivered:
            return None
        channel, message_id = self.delivered.popleft()
        return DeliveredMessage(channel=channel, message_id=cast(int, message_id))

    # ----------------------------------------------------------------------------- receiving

    def read_packet(self, data: bytes, now: float, start: int = 0) -> MessageDropReason | None:
        """Parse one received payload and queue its messages; never raises on any bytes.

        The records are taken in order. While they are unfragmented records of reliable-ordered
        channels, each the next message of its channel with nothing held back, each is parsed
        and queued in one step (the common case: `_read_rest` would queue the same tuple).
        From the first other record on, `_read_rest` checks the rest of the payload whole and
        then queues it. When that check rejects the payload, the records queued in the first
        step are taken back, so a rejected payload delivers nothing, as before any record was
        queued.

        Args:
            data: The payload (what the peer's ``write_packet`` returned), or bytes holding it
                from ``start`` to their end.
            now: Current time (seconds); reception needs no clock, taken for the uniform shape.
            start: Offset of the payload in ``data`` (bytes).

        Returns:
            ``None`` when accepted, else the reason the payload was dropped (counted; a
            violation is also stored in ``violation``).

        Pump the object afterwards (see ``lagless.io.drive.pump``).
        """
        reassembler = self._reassembler
        if reassembler.memory and reassembler.expire(now):
            return self._drop(MessageDropReason.REASSEMBLY_TIMEOUT)
        ready = self.ready
        queue_ready = self._queue_ready
        before = len(ready)
        ordered = self._ordered
        fast_limits = self._fast_limits
        channels = len(fast_limits)
        unpack = SHORT_UNPACK_FROM
        end = len(data)
        pos = start
        # typed, so that a compiled build compares and indexes with machine integers instead of
        # the objects unpack_from returns (and reads the receiver's fields directly)
        head: int
        message_id: int
        length: int
        # the unfragmented-record grammar of records.parse_records, inlined for the common case;
        # anything it would reject, and anything not in order, is left to _read_rest (which
        # parses with it), so the two cannot disagree on what is accepted. A head at or above
        # the channel count is a fragment (0x80), has the reserved bit (0x40) or names no channel.
        while pos + 4 <= end:
            head, message_id, length = unpack(data, pos)
            if head >= channels:
                break
            receiver = ordered[head]
            if receiver is None or receiver.base != message_id or receiver.held:
                break
            begin = pos + 4
            if length & 0x80:
                if begin >= end:
                    break
                high = data[begin]
                if high == 0 or high & 0x80:
                    break
                length = (length & 0x7F) | (high << 7)
                begin += 1
            stop = begin + length
            if stop > end or length > fast_limits[head]:
                break
            queue_ready((head, message_id, data[begin:stop]))
            receiver.base = (message_id + 1) & 0xFFFF
            pos = stop
        if pos >= end:
            self._messages_received += len(ready) - before
            return None
        return self._read_rest(data, now, pos, before)

    def _read_rest(
        self, data: bytes, now: float, start: int, before: int
    ) -> MessageDropReason | None:
        """Check the records of ``data`` from ``start`` on whole, then queue them.

        ``ready[before:]`` holds what `read_packet` queued from this payload already; a check
        that fails takes those back (their channels' next ids are the first ones queued).
        """
        ready = self.ready
        try:
            records = parse_records(data, self.config.fragment_size, start)
        except DecodeError:
            return self._take_back(before, MessageDropReason.MALFORMED)
        limits = self._limits
        channels = len(limits)
        for record in records:
            channel = record[0]
            if channel >= channels:
                return self._take_back(before, MessageDropReason.UNKNOWN_CHANNEL)
            if len(record) == 3:
                if len(record[2]) > limits[channel]:
                    return self._take_back(before, MessageDropReason.TOO_LARGE)
            else:
                if channel not in self._rreceivers:
                    return self._take_back(before, MessageDropReason.UNEXPECTED_FRAGMENT)
                if record[3] > self._max_count[channel]:
                    return self._take_back(before, MessageDropReason.TOO_LARGE)
        receivers = self._receivers
        ordered = self._ordered
        try:
            for record in records:
                if len(record) == 3:
                    channel, message_id, body = record
                    receiver = ordered[channel]
                    if receiver is not None and receiver.base == message_id and not receiver.held:
                        # the common case: the next message in order, nothing held back; the
                        # parsed tuple is the ``Ready`` entry
                        ready.append(record)
                        receiver.base = (message_id + 1) & 0xFFFF
                        continue
                    result = receivers[channel].receive(message_id, body)
                else:
                    channel, message_id, index, count, body = record
                    result = self._rreceivers[channel].receive(message_id, body, index, count, now)
                if result is not None:
                    self._dropped[result] += 1
        except MessageViolation as exc:
            return self._drop(exc.reason)
        finally:
            self._messages_received += len(ready) - before
        return None

    def _take_back(self, before: int, reason: MessageDropReason) -> MessageDropReason:
        """Unqueue ``ready[before:]`` (queued by `read_packet`'s first step) and drop."""
        ready = self.ready
        ordered = self._ordered
        while len(ready) > before:
            channel, message_id, _ = ready.pop()
            receiver = ordered[channel]
            assert receiver is not None  # invariant: only ordered channels' records come here
            receiver.base = message_id
        return self._drop(reason)

    def _drop(self, reason: MessageDropReason) -> MessageDropReason:
        self._dropped[reason] += 1
        if reason.is_violation and self.violation is None:
            self.violation = reason
        return reason

    def next_received(self) -> ReceivedMessage | None:
        """Return the next message for the application, or None.

        Reliable-ordered messages come in send order exactly once, reliable-unordered exactly
        once, unreliable at most once, unreliable-sequenced never older than one already given.
        """
        if not self.ready:
            return None
        channel, message_id, payload = self.ready.popleft()
        return ReceivedMessage(channel=channel, message_id=message_id, payload=payload)

    def statistics(self) -> MessageLayerStatistics:
        """Return a snapshot of the counters."""
        dropped = dict(self._dropped)
        duplicates = self._reassembler.duplicates
        if duplicates:
            dropped[MessageDropReason.DUPLICATE] = dropped.get(MessageDropReason.DUPLICATE, 0) + (
                duplicates
            )
        return MessageLayerStatistics(
            messages_sent=sum(sender.sent for sender in self._senders),
            messages_received=self._messages_received,
            messages_delivered=self._messages_delivered,
            packets_written=self._packets,
            records_written=self._records,
            records_resent=self._resent,
            bytes_written=self._bytes,
            unreliable_send_dropped=sum(s.dropped for s in self._unreliable.values()),
            reassembly_memory=self._reassembler.memory,
            reassembly_peak=self._reassembler.peak,
            reassembly_expired=self._reassembler.expired,
            dropped=dropped,
            violation=self.violation,
        )
