"""Per-channel send and receive state for the four channel kinds (no wire format here).

Implements spec 004 §4.4.4 (guaranteed events: resent, sorted receive queue, in-order delivery
with head-of-line blocking; non-guaranteed: immediate, may drop or reorder), spec 000 §2.5
(ENet rules 2, 3 and 5: resend until acked, drop older unreliable-sequenced messages, independent
per-channel sequence numbers) and DESIGN.md "Transport defaults".

Decisions:

* Message ids are 16 bits and wrap, independent per channel and direction, starting at 0. A
  reliable sender never sends id ``oldest_unacked + reliable_window`` or later, and the receiver
  treats such an id as ``OUT_OF_WINDOW`` (a conforming sender cannot produce it because
  everything older than ``oldest_unacked`` was received). So receive memory per reliable channel
  is at most ``reliable_window`` unfragmented messages plus the fragment reservations
  (``test_channels.py::test_window_limits_in_flight`` and ``::test_out_of_window_is_violation``).
* Resend: an unacked reliable message or fragment is due again ``resend_delay`` after it was
  last sent, or at once when the packet that last carried it is reported lost. ``resend_delay``
  is ``max(resend_interval, d)`` where the connection sets ``d = 1.25 * SRTT + 4 * jitter``, so a
  path slower than ``resend_interval`` is not flooded with spurious resends
  (``test_transport_costs.py::test_no_spurious_resends_when_the_round_trip_exceeds_resend_interval``).
  There is no exponential backoff (ENet's choice in spec 000 §2.5): for games a late resend costs
  more than a spare one, and ``CongestionController`` lowers the packet rate on a bad link instead
  (``test_channels.py::test_resend_after_interval_and_on_loss``).
* Sending costs the records written, not the messages in flight: each channel keeps lost records,
  never-sent records and sent records ordered by send time (= due time, the delay being the same
  for all) in three queues, skipping stale entries lazily, so ``has_pending``,
  ``next_resend_time`` and each record packed are amortised O(1)
  (``test_transport_costs.py::test_packing_cost_does_not_grow_with_messages_in_flight``).
* Unreliable channels dedupe duplicated datagrams with a window of the last ``unreliable_window``
  ids; older ids are ``STALE`` (``test_channels.py::test_unreliable_drops_duplicates``).
  Unreliable-sequenced delivers a message only if it is newer than every one delivered before
  (``test_channels.py::test_sequenced_drops_older``).
* Unreliable queue overflow drops the oldest unsent message (fresh state matters more); reliable
  overflow raises ``SendQueueFull`` because reliable data is never lost silently.
* A reliable channel keeps at most one fragmented message admitted at a time; the next one waits
  until the previous is released (see ``lagless.transport.fragment``). Unfragmented messages
  after it still flow (``test_packer.py::test_small_messages_flow_during_big_transfer``).
* ``DeliveredMessage`` is emitted once per reliable message when every fragment is acked.
  Unreliable messages get no per-message notification: the packet acks of the connection cover
  them.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from lagless.transport.config import ChannelConfig, ChannelKind, MessageLayerConfig
from lagless.transport.fragment import Fragmenter, Reassembler
from lagless.transport.message_errors import MessageDropReason, MessageViolation, SendQueueFull
from lagless.transport.records import small_record
from lagless.wire.seq import seq_diff, seq_greater

__all__ = [
    "Delivered",
    "DeliveredMessage",
    "Ready",
    "ReceivedMessage",
    "ReliableReceiver",
    "ReliableSender",
    "UnreliableReceiver",
    "UnreliableSender",
]

_NEVER = -math.inf  # last_sent of a fragment never sent or whose packet was lost

Ready = tuple[int, int, bytes]
"""A message for the application inside the message layer: ``(channel, message_id, payload)``
(a tuple, built in a tenth of the time of a `ReceivedMessage`)."""
Delivered = tuple[int, int]
"""A fully acknowledged reliable message inside the message layer: ``(channel, message_id)``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceivedMessage:
    """A message handed to the application by ``MessageLayer.next_received``."""

    channel: int
    """Channel index it arrived on."""
    message_id: int
    """Sender's 16-bit message id on that channel."""
    payload: bytes
    """The message bytes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveredMessage:
    """A reliable message whose every fragment rode in an acked packet (spec 004 §4.4.2)."""

    channel: int
    """Channel index it was sent on."""
    message_id: int
    """The id ``MessageLayer.send`` returned."""


class Outgoing:
    """A reliable message waiting for acks; one slot per fragment (one slot if unfragmented).

    Args:
        channel: Channel index.
        message_id: 16-bit message id.
        payload: The message bytes.
        count: Number of fragments (1 when unfragmented).
        pieces: The fragments (empty when unfragmented).
        record: The encoded record of an unfragmented message (empty when fragmented).
    """

    __slots__ = (
        "acked",
        "acked_count",
        "admitted",
        "channel",
        "count",
        "done",
        "fragmented",
        "last_sent",
        "last_seq",
        "message_id",
        "payload",
        "pieces",
        "record",
        "reserved",
        "sends",
    )

    def __init__(
        self,
        channel: int,
        message_id: int,
        payload: bytes,
        count: int,
        pieces: list[bytes],
        record: bytes,
    ) -> None:
        self.channel = channel
        self.message_id = message_id
        self.payload = payload
        self.count = count
        self.fragmented = count > 1
        self.pieces = pieces
        self.record = record
        self.acked = bytearray(count)
        self.last_sent = [_NEVER] * count
        self.last_seq = [-1] * count
        self.acked_count = 0
        self.sends = 0
        self.reserved = 0
        self.admitted = False
        self.done = False


class UnreliableSender:
    """Queue of unreliable (or unreliable-sequenced) messages, each written once."""

    __slots__ = ("channel", "config", "dropped", "next_id", "queue")

    def __init__(self, channel: int, config: ChannelConfig) -> None:
        """Create an empty sender.

        Args:
            channel: Channel index.
            config: The channel's settings.
        """
        self.channel = channel
        """Channel index."""
        self.config = config
        """The channel's settings."""
        self.next_id = 0
        """Id the next ``send`` returns."""
        self.queue: deque[tuple[int, bytes]] = deque()
        """Unsent ``(message_id, payload)`` in send order."""
        self.dropped = 0
        """Messages dropped unsent because the queue was full."""

    def send(self, payload: bytes) -> int:
        """Queue ``payload``; drop the oldest unsent message if the queue is full.

        Args:
            payload: Message bytes (size already checked).

        Returns:
            The message id.
        """
        if len(self.queue) >= self.config.send_queue_limit:
            self.queue.popleft()
            self.dropped += 1
        message_id = self.next_id
        self.next_id = (message_id + 1) & 0xFFFF
        self.queue.append((message_id, payload))
        return message_id


class _Schedule:
    """Records of one kind (unfragmented messages or fragments) of one channel, by due time.

    ``urgent`` holds records whose last carrier was lost (due at once, in loss order), ``unsent``
    records never sent (in id order), ``inflight`` one ``(sent_at, packet_seq, msg, index)`` entry
    per send, in send order. The resend delay is the same for every entry, so send order is due
    order and the head is the next one due. Entries made stale by an ack, a loss or a later send
    are skipped lazily when they reach the head, so every operation is amortised O(1).
    """

    __slots__ = ("inflight", "unsent", "urgent")

    def __init__(self) -> None:
        self.urgent: deque[tuple[Outgoing, int]] = deque()
        self.unsent: deque[tuple[Outgoing, int]] = deque()
        self.inflight: deque[tuple[float, int, Outgoing, int]] = deque()

    def urgent_head(self) -> tuple[Outgoing, int] | None:
        urgent = self.urgent
        while urgent:
            msg, index = urgent[0]
            if not msg.done and not msg.acked[index] and msg.last_sent[index] == _NEVER:
                return urgent[0]
            urgent.popleft()
        return None

    def inflight_head(self) -> tuple[float, int, Outgoing, int] | None:
        inflight = self.inflight
        while inflight:
            head = inflight[0]
            msg, index = head[2], head[3]
            if (
                not msg.done
                and not msg.acked[index]
                and msg.last_seq[index] == head[1]
                and msg.last_sent[index] == head[0]
            ):
                return head
            inflight.popleft()
        return None


class ReliableSender:
    """Reliable messages of one channel from ``send`` until the receiver must have them.

    Packing reads unfragmented messages through ``fill_small`` (one call per channel and packet)
    and fragments through ``peek_fragment`` and ``take``: the cost of a packet is the records it
    carries, not the messages in flight.
    """

    __slots__ = (
        "_current",
        "_delivered",
        "_fragmenter",
        "_fragments",
        "_held",
        "_peeked",
        "_small",
        "_unordered",
        "_waiting",
        "channel",
        "config",
        "layer",
        "next_id",
        "queue",
        "resend_delay",
        "reserve",
    )

    def __init__(
        self,
        channel: int,
        layer: MessageLayerConfig,
        reserve: list[int],
        delivered: deque[Delivered],
    ) -> None:
        """Create an empty sender.

        Args:
            channel: Channel index.
            layer: The connection's message-layer settings.
            reserve: One-element list shared by all channels: bytes of admitted fragmented
                messages not yet released (kept within ``reassembly_memory_limit``).
            delivered: Shared queue that receives ``(channel, message_id)`` of every message
                fully acknowledged.
        """
        self.channel = channel
        """Channel index."""
        self.layer = layer
        """The connection's message-layer settings."""
        self.config = layer.channels[channel]
        """The channel's settings."""
        self.reserve = reserve
        """Shared admitted-reservation counter (bytes)."""
        self.next_id = 0
        """Id the next ``send`` returns."""
        self.queue: deque[Outgoing] = deque()
        """Messages from the oldest unacked one on, in send (id) order."""
        self.resend_delay = self.config.resend_interval
        """Seconds after its last send an unacked record is due again (``set_resend_delay``)."""
        self._delivered = delivered
        self._fragmenter = Fragmenter(
            fragment_size=layer.fragment_size, max_fragments=layer.max_fragments
        )
        self._small = _Schedule()
        self._fragments = _Schedule()
        self._waiting: deque[Outgoing] = deque()  # fragmented messages not admitted yet
        self._current: Outgoing | None = None  # the admitted fragmented message not yet done
        self._held = 0  # messages of this channel holding a reservation
        self._unordered = self.config.kind is ChannelKind.RELIABLE_UNORDERED
        self._peeked: deque[tuple[Outgoing, int]] | deque[tuple[float, int, Outgoing, int]] = (
            self._small.unsent
        )

    @property
    def oldest(self) -> int:
        """Id of the oldest message not yet acked (``next_id`` when none)."""
        return self.queue[0].message_id if self.queue else self.next_id

    def set_resend_delay(self, seconds: float) -> None:
        """Set the resend delay to ``max(resend_interval, seconds)``.

        Args:
            seconds: Delay the connection derives from its RTT estimate (seconds).
        """
        self.resend_delay = max(self.config.resend_interval, seconds)

    def send(self, payload: bytes) -> int:
        """Queue ``payload`` for reliable delivery.

        Args:
            payload: Message bytes (size already checked).

        Returns:
            The message id.

        Raises:
            SendQueueFull: ``send_queue_limit`` messages are already queued.
        """
        if len(self.queue) >= self.config.send_queue_limit:
            raise SendQueueFull(
                f"channel {self.channel} holds send_queue_limit={self.config.send_queue_limit} "
                "unacked messages; wait for deliveries"
            )
        message_id = self.next_id
        self.next_id = (message_id + 1) & 0xFFFF
        if len(payload) <= self._fragmenter.fragment_size:
            msg = Outgoing(
                self.channel,
                message_id,
                payload,
                1,
                [],
                small_record(self.channel, message_id, payload),
            )
            self.queue.append(msg)
            self._small.unsent.append((msg, 0))
            return message_id
        count = self._fragmenter.count(len(payload))
        pieces = [self._fragmenter.fragment(payload, i) for i in range(count)]
        msg = Outgoing(self.channel, message_id, payload, count, pieces, b"")
        self.queue.append(msg)
        self._waiting.append(msg)
        return message_id

    def _in_window(self, msg: Outgoing) -> bool:
        # a queued message is never older than ``oldest``, so the masked difference is seq_diff
        oldest = self.queue[0].message_id
        return (msg.message_id - oldest) & 0xFFFF < self.layer.reliable_window

    def _peek(self, schedule: _Schedule, now: float, *, fresh: bool) -> tuple[Outgoing, int] | None:
        head = schedule.urgent_head()
        if head is not None:
            self._peeked = schedule.urgent
            return head
        sent = schedule.inflight_head()
        if sent is not None and sent[0] + self.resend_delay <= now:
            self._peeked = schedule.inflight
            return sent[2], sent[3]
        if schedule.unsent and (not fresh or self._in_window(schedule.unsent[0][0])):
            self._peeked = schedule.unsent
            return schedule.unsent[0]
        return None

    def peek_small(self, now: float) -> Outgoing | None:
        """Return the unfragmented message to write next at ``now``, or None.

        Lost ones come first, then resends in due order, then new messages within the window.

        Args:
            now: Current time (seconds).

        Returns:
            The message; the packer writes it and calls ``take``, or stops.
        """
        head = self._peek(self._small, now, fresh=True)
        return None if head is None else head[0]

    def fill_small(
        self,
        out: bytearray,
        room: int,
        packet_seq: int,
        now: float,
        carried: list[tuple[ReliableSender, Outgoing, int]],
    ) -> tuple[int, int, int]:
        """Append the due unfragmented records to ``out`` while they fit in ``room`` bytes.

        The order of ``peek_small`` (lost, then due resends, then new messages within the window),
        stopping at the first record that does not fit; each record written is recorded as
        ``take`` does and appended to ``carried`` as ``(self, message, 0)``.

        Args:
            out: The payload being built.
            room: Bytes this channel may still add to it.
            packet_seq: Sequence number of the packet that will carry it.
            now: Current time (seconds).
            carried: The packet's list of reliable records, for its ack or loss.

        Returns:
            ``(bytes written, records written, records resent)``.
        """
        small = self._small
        urgent = small.urgent
        inflight = small.inflight
        unsent = small.unsent
        due_before = now - self.resend_delay
        oldest = self.queue[0].message_id if self.queue else self.next_id
        window = self.layer.reliable_window
        written = records = resent = 0
        while True:
            source: deque[tuple[Outgoing, int]] | deque[tuple[float, int, Outgoing, int]]
            if urgent and small.urgent_head() is not None:
                msg = urgent[0][0]
                source = urgent
            elif inflight and (head := small.inflight_head()) is not None and head[0] <= due_before:
                msg = head[2]
                source = inflight
            elif unsent and (unsent[0][0].message_id - oldest) & 0xFFFF < window:
                msg = unsent[0][0]
                source = unsent
            else:
                break
            record = msg.record
            size = len(record)
            if size > room:
                break
            source.popleft()
            out += record
            room -= size
            written += size
            records += 1
            if msg.last_seq[0] != -1:
                resent += 1
            msg.last_sent[0] = now
            msg.last_seq[0] = packet_seq
            msg.sends += 1
            inflight.append((now, packet_seq, msg, 0))
            carried.append((self, msg, 0))
        return written, records, resent

    @property
    def has_fragments(self) -> bool:
        """True while a fragmented message is queued (admitted or waiting)."""
        return self._current is not None or bool(self._waiting)

    def _admissible(self, msg: Outgoing) -> bool:
        if self._held or not self._in_window(msg):
            return False
        need = self.layer.reservation(len(msg.payload))
        return self.reserve[0] + need <= self.layer.reassembly_memory_limit

    def peek_fragment(self, now: float, *, admit: bool = True) -> tuple[Outgoing, int] | None:
        """Return ``(message, fragment_index)`` to write next at ``now``, or None.

        At most one fragmented message per channel is admitted at a time (the oldest one), and
        only while no earlier message of the channel holds a reservation; admitting one adds its
        reservation to the shared counter.

        Args:
            now: Current time (seconds).
            admit: Admit the next fragmented message if allowed (``False`` only looks).

        Returns:
            The fragment; the packer writes it and calls ``take``, or stops.
        """
        if self._current is None:
            if not self._waiting or not self._admissible(self._waiting[0]):
                return None
            msg = self._waiting[0]
            if not admit:
                return msg, 0
            self._waiting.popleft()
            msg.admitted = True
            msg.reserved = self.layer.reservation(len(msg.payload))
            self.reserve[0] += msg.reserved
            self._held += 1
            self._current = msg
            self._fragments.unsent.extend((msg, i) for i in range(msg.count))
        return self._peek(self._fragments, now, fresh=False)

    def take(self, msg: Outgoing, index: int, packet_seq: int, now: float) -> bool:
        """Record that the record just peeked rode in ``packet_seq`` at ``now``.

        Args:
            msg: The message ``peek_small`` / ``peek_fragment`` returned.
            index: Fragment index (0 when unfragmented).
            packet_seq: Packet sequence number.
            now: Current time (seconds).

        Returns:
            True when this was a resend.
        """
        self._peeked.popleft()
        resend = msg.last_seq[index] != -1
        msg.last_sent[index] = now
        msg.last_seq[index] = packet_seq
        msg.sends += 1
        schedule = self._fragments if msg.fragmented else self._small
        schedule.inflight.append((now, packet_seq, msg, index))
        return resend

    def acked(self, msg: Outgoing, index: int) -> None:
        """Mark fragment ``index`` of ``msg`` acked; notify and release when the message is done.

        Args:
            msg: The message.
            index: Fragment index.
        """
        if msg.done or msg.acked[index]:
            return
        msg.acked[index] = 1
        msg.acked_count += 1
        if msg.acked_count < msg.count:
            return
        msg.done = True
        if msg is self._current:
            self._current = None
        self._delivered.append((self.channel, msg.message_id))
        if self._unordered and msg.reserved:
            self._release(msg)
        self.release_done()

    def release_done(self) -> None:
        """Drop the acked messages at the front of the queue, releasing their reservations.

        The packer calls it after marking unfragmented messages done itself (they hold no
        reservation); `acked` calls it for every message it completes.
        """
        queue = self.queue
        while queue and queue[0].done:
            first = queue.popleft()
            if first.reserved:
                self._release(first)

    def _release(self, msg: Outgoing) -> None:
        if msg.reserved:
            self.reserve[0] -= msg.reserved
            self._held -= 1
            msg.reserved = 0

    def lost(self, msg: Outgoing, index: int, packet_seq: int) -> None:
        """Make fragment ``index`` due at once if ``packet_seq`` was the last packet carrying it.

        Args:
            msg: The message.
            index: Fragment index.
            packet_seq: The lost packet's sequence number.
        """
        if (
            not msg.done
            and not msg.acked[index]
            and msg.last_seq[index] == packet_seq
            and msg.last_sent[index] != _NEVER
        ):
            msg.last_sent[index] = _NEVER
            schedule = self._fragments if msg.fragmented else self._small
            schedule.urgent.append((msg, index))

    def has_pending(self, now: float) -> bool:
        """Return True when something could be written at ``now`` (amortised O(1)).

        Args:
            now: Current time (seconds).
        """
        if self._peek(self._small, now, fresh=True) is not None:
            return True
        return self.has_fragments and self.peek_fragment(now, admit=False) is not None

    def next_resend_time(self) -> float | None:
        """Return the earliest time (seconds) a sent, unacked record becomes due, or None."""
        best: float | None = None
        for schedule in (self._small, self._fragments):
            head = schedule.inflight_head()
            if head is not None:
                due = head[0] + self.resend_delay
                best = due if best is None or due < best else best
        return best


class ReliableReceiver:
    """Receive side of a reliable channel: dedupe, window check, ordering, reassembly."""

    __slots__ = (
        "_buffer",
        "_limit",
        "_ready",
        "_reassembler",
        "_received",
        "base",
        "channel",
        "ordered",
        "window",
    )

    def __init__(
        self,
        channel: int,
        layer: MessageLayerConfig,
        reassembler: Reassembler,
        ready: deque[Ready],
    ) -> None:
        """Create a receiver expecting message id 0.

        Args:
            channel: Channel index.
            layer: The connection's message-layer settings.
            reassembler: Shared, memory-bounded reassembler of the connection.
            ready: Shared queue of ``(channel, message_id, payload)`` for the application.
        """
        self.channel = channel
        """Channel index."""
        self.ordered = layer.channels[channel].kind is ChannelKind.RELIABLE_ORDERED
        """True for reliable-ordered (hold back until the gap fills)."""
        self.window = layer.reliable_window
        """Ids accepted ahead of ``base``."""
        self.base = 0
        """Lowest id not yet received (ordered: not yet delivered)."""
        self._limit = layer.message_limit(channel)
        self._reassembler = reassembler
        self._ready = ready
        self._buffer: dict[int, tuple[bytes, int]] = {}
        self._received: set[int] = set()

    def receive(
        self, message_id: int, payload: bytes, index: int = -1, count: int = 1, now: float = 0.0
    ) -> MessageDropReason | None:
        """Take one record (a whole message, or fragment ``index`` of ``count``).

        Args:
            message_id: The sender's message id.
            payload: Record data.
            index: Fragment index, or -1 for an unfragmented message.
            count: Number of fragments (1 when unfragmented).
            now: Arrival time (seconds); a fragment keeps its partial message from expiring.

        Returns:
            ``DUPLICATE`` for a message already received, else None.

        Raises:
            MessageViolation: ``OUT_OF_WINDOW``, ``TOO_LARGE`` or a reassembly violation.
        """
        base = self.base
        ahead = (message_id - base) & 0xFFFF
        buffer = self._buffer
        if ahead == 0 and index < 0 and not buffer and self.ordered:
            # the common case: the next message in order, whole, nothing held back
            self._ready.append((self.channel, message_id, payload))
            self.base = (base + 1) & 0xFFFF
            return None
        if ahead > 0x8000:
            return MessageDropReason.DUPLICATE  # behind the frontier: received before
        if ahead >= self.window:
            raise MessageViolation(MessageDropReason.OUT_OF_WINDOW)
        if message_id in buffer or message_id in self._received:
            return MessageDropReason.DUPLICATE
        reserved = 0
        if index >= 0:
            whole = self._reassembler.add(
                (self.channel, message_id), index, count, payload, now=now
            )
            if whole is None:
                return None
            reserved = self._reassembler.reserved_for(count)
            if len(whole) > self._limit:
                self._reassembler.release(reserved)
                raise MessageViolation(MessageDropReason.TOO_LARGE)
            payload = whole
        ready = self._ready
        channel = self.channel
        if not self.ordered:
            if reserved:
                self._reassembler.release(reserved)
            ready.append((channel, message_id, payload))
            received = self._received
            received.add(message_id)
            while base in received:
                received.discard(base)
                base = (base + 1) & 0xFFFF
            self.base = base
            return None
        buffer[message_id] = (payload, reserved)
        while base in buffer:
            held, size = buffer.pop(base)
            if size:
                self._reassembler.release(size)
            ready.append((channel, base, held))
            base = (base + 1) & 0xFFFF
        self.base = base
        return None


class UnreliableReceiver:
    """Receive side of an unreliable or unreliable-sequenced channel."""

    __slots__ = ("_mask", "_ready", "channel", "newest", "sequenced", "window")

    def __init__(self, channel: int, layer: MessageLayerConfig, ready: deque[Ready]) -> None:
        """Create a receiver that has seen nothing.

        Args:
            channel: Channel index.
            layer: The connection's message-layer settings.
            ready: Shared queue of ``(channel, message_id, payload)`` for the application.
        """
        self.channel = channel
        """Channel index."""
        self.sequenced = layer.channels[channel].kind is ChannelKind.UNRELIABLE_SEQUENCED
        """True for unreliable-sequenced (drop anything not newer than ``newest``)."""
        self.window = layer.unreliable_window
        """Ids remembered behind ``newest`` for duplicate detection."""
        self.newest: int | None = None
        """Newest id accepted so far."""
        self._mask = 0
        self._ready = ready

    def receive(self, message_id: int, payload: bytes) -> MessageDropReason | None:
        """Take one unfragmented message.

        Args:
            message_id: The sender's message id.
            payload: Message bytes.

        Returns:
            ``DUPLICATE`` or ``STALE`` when dropped, else None (delivered).
        """
        if self.newest is None or seq_greater(message_id, self.newest):
            shift = 0 if self.newest is None else seq_diff(message_id, self.newest)
            self._mask = ((self._mask << shift) | 1) & ((1 << self.window) - 1)
            self.newest = message_id
        else:
            behind = -seq_diff(message_id, self.newest)
            if behind < self.window and (self._mask >> behind) & 1:
                return MessageDropReason.DUPLICATE
            if self.sequenced or behind >= self.window:
                return MessageDropReason.STALE
            self._mask |= 1 << behind
        self._ready.append((self.channel, message_id, payload))
        return None
