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
* Resend: an unacked reliable message or fragment is due again ``resend_interval`` after it was
  last sent, or at once when the packet that last carried it is reported lost. There is no
  exponential backoff (ENet's choice in spec 000 §2.5): for games a late resend costs more than a
  spare one, and ``CongestionController`` lowers the packet rate on a bad link instead
  (``test_channels.py::test_resend_after_interval_and_on_loss``).
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
from collections.abc import Iterator
from dataclasses import dataclass, field

from lagless.transport.config import ChannelConfig, ChannelKind, MessageLayerConfig
from lagless.transport.fragment import Fragmenter, Reassembler
from lagless.transport.message_errors import MessageDropReason, MessageViolation, SendQueueFull
from lagless.wire.seq import seq_add, seq_diff, seq_greater

__all__ = [
    "DeliveredMessage",
    "ReceivedMessage",
    "ReliableReceiver",
    "ReliableSender",
    "UnreliableReceiver",
    "UnreliableSender",
]

_NEVER = -math.inf  # last_sent of a fragment never sent or whose packet was lost


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


@dataclass(slots=True, eq=False)
class Outgoing:
    """A reliable message waiting for acks; one slot per fragment (one slot if unfragmented)."""

    channel: int
    message_id: int
    payload: bytes
    count: int
    fragmented: bool
    acked: bytearray
    last_sent: list[float]
    last_seq: list[int]
    acked_count: int = 0
    sends: int = 0
    reserved: int = 0
    admitted: bool = False
    done: bool = False
    pieces: list[bytes] = field(default_factory=list)


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
        self.next_id = seq_add(message_id, 1)
        self.queue.append((message_id, payload))
        return message_id


class ReliableSender:
    """Reliable messages of one channel from ``send`` until the receiver must have them."""

    __slots__ = (
        "_delivered",
        "_fragmenter",
        "channel",
        "config",
        "layer",
        "next_id",
        "queue",
        "reserve",
    )

    def __init__(
        self,
        channel: int,
        layer: MessageLayerConfig,
        reserve: list[int],
        delivered: deque[DeliveredMessage],
    ) -> None:
        """Create an empty sender.

        Args:
            channel: Channel index.
            layer: The connection's message-layer settings.
            reserve: One-element list shared by all channels: bytes of admitted fragmented
                messages not yet released (kept within ``reassembly_memory_limit``).
            delivered: Shared queue that receives ``DeliveredMessage`` notifications.
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
        self.queue: dict[int, Outgoing] = {}
        """Messages from the oldest unacked one on, by id, in send order."""
        self._delivered = delivered
        self._fragmenter = Fragmenter(
            fragment_size=layer.fragment_size, max_fragments=layer.max_fragments
        )

    @property
    def oldest(self) -> int:
        """Id of the oldest message not yet acked (``next_id`` when none)."""
        return next(iter(self.queue), self.next_id)

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
        self.next_id = seq_add(message_id, 1)
        count = self._fragmenter.count(len(payload))
        fragmented = count > 1
        pieces = [self._fragmenter.fragment(payload, i) for i in range(count)] if fragmented else []
        self.queue[message_id] = Outgoing(
            channel=self.channel,
            message_id=message_id,
            payload=payload,
            count=count,
            fragmented=fragmented,
            acked=bytearray(count),
            last_sent=[_NEVER] * count,
            last_seq=[-1] * count,
            pieces=pieces,
        )
        return message_id

    def _window(self) -> Iterator[Outgoing]:
        oldest = self.oldest
        window = self.layer.reliable_window
        for msg in self.queue.values():
            if seq_diff(msg.message_id, oldest) >= window:
                return
            if not msg.done:
                yield msg

    def small(self, now: float) -> Iterator[Outgoing]:
        """Yield unfragmented messages due for (re)sending at ``now``, oldest first.

        Args:
            now: Current time (seconds).

        Yields:
            Messages the packer may write (then it calls ``sent``).
        """
        interval = self.config.resend_interval
        for msg in self._window():
            if not msg.fragmented and msg.last_sent[0] + interval <= now:
                yield msg

    def _admissible(self, msg: Outgoing) -> bool:
        for other in self.queue.values():
            if other is msg:
                break
            if other.reserved:
                return False
        need = self.layer.reservation(len(msg.payload))
        return self.reserve[0] + need <= self.layer.reassembly_memory_limit

    def fragments(self, now: float, *, admit: bool = True) -> Iterator[tuple[Outgoing, int]]:
        """Yield ``(message, fragment_index)`` due at ``now`` of the admitted fragmented message.

        At most one fragmented message per channel is admitted at a time; admitting one adds
        its reservation to the shared counter.

        Args:
            now: Current time (seconds).
            admit: Admit the next fragmented message if allowed (``False`` only looks).

        Yields:
            Fragments the packer may write (then it calls ``sent``).
        """
        interval = self.config.resend_interval
        for msg in self._window():
            if not msg.fragmented:
                continue
            if not msg.admitted:
                if not self._admissible(msg):
                    return
                if not admit:
                    yield msg, 0
                    return
                msg.admitted = True
                msg.reserved = self.layer.reservation(len(msg.payload))
                self.reserve[0] += msg.reserved
            for index in range(msg.count):
                if not msg.acked[index] and msg.last_sent[index] + interval <= now:
                    yield msg, index
            return

    def sent(self, msg: Outgoing, index: int, packet_seq: int, now: float) -> bool:
        """Record that fragment ``index`` of ``msg`` rode in ``packet_seq`` at ``now``.

        Args:
            msg: The message.
            index: Fragment index (0 when unfragmented).
            packet_seq: Packet sequence number.
            now: Current time (seconds).

        Returns:
            True when this was a resend.
        """
        resend = msg.last_seq[index] != -1
        msg.last_sent[index] = now
        msg.last_seq[index] = packet_seq
        msg.sends += 1
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
        self._delivered.append(DeliveredMessage(channel=self.channel, message_id=msg.message_id))
        if self.config.kind is ChannelKind.RELIABLE_UNORDERED:
            self._release(msg)
        while self.queue:
            first = next(iter(self.queue.values()))
            if not first.done:
                break
            del self.queue[first.message_id]
            self._release(first)

    def _release(self, msg: Outgoing) -> None:
        self.reserve[0] -= msg.reserved
        msg.reserved = 0

    def lost(self, msg: Outgoing, index: int, packet_seq: int) -> None:
        """Make fragment ``index`` due at once if ``packet_seq`` was the last packet carrying it.

        Args:
            msg: The message.
            index: Fragment index.
            packet_seq: The lost packet's sequence number.
        """
        if not msg.done and not msg.acked[index] and msg.last_seq[index] == packet_seq:
            msg.last_sent[index] = _NEVER

    def has_pending(self, now: float) -> bool:
        """Return True when something could be written at ``now``.

        Args:
            now: Current time (seconds).
        """
        return next(self.small(now), None) is not None or (
            next(self.fragments(now, admit=False), None) is not None
        )

    def next_resend_time(self) -> float | None:
        """Return the earliest time (seconds) a sent, unacked fragment becomes due, or None."""
        best: float | None = None
        interval = self.config.resend_interval
        for msg in self._window():
            if msg.fragmented and not msg.admitted:
                continue
            for index in range(msg.count):
                sent = msg.last_sent[index]
                if not msg.acked[index] and sent != _NEVER:
                    due = sent + interval
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
        ready: deque[ReceivedMessage],
    ) -> None:
        """Create a receiver expecting message id 0.

        Args:
            channel: Channel index.
            layer: The connection's message-layer settings.
            reassembler: Shared, memory-bounded reassembler of the connection.
            ready: Shared queue of messages for the application.
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

    def _check(self, message_id: int) -> bool:
        d = seq_diff(message_id, self.base)
        if d >= self.window:
            raise MessageViolation(MessageDropReason.OUT_OF_WINDOW)
        return d < 0 or message_id in self._buffer or message_id in self._received

    def receive(
        self, message_id: int, payload: bytes, index: int = -1, count: int = 1
    ) -> MessageDropReason | None:
        """Take one record (a whole message, or fragment ``index`` of ``count``).

        Args:
            message_id: The sender's message id.
            payload: Record data.
            index: Fragment index, or -1 for an unfragmented message.
            count: Number of fragments (1 when unfragmented).

        Returns:
            ``DUPLICATE`` for a message already received, else None.

        Raises:
            MessageViolation: ``OUT_OF_WINDOW``, ``TOO_LARGE`` or a reassembly violation.
        """
        if self._check(message_id):
            return MessageDropReason.DUPLICATE
        reserved = 0
        if index >= 0:
            whole = self._reassembler.add((self.channel, message_id), index, count, payload)
            if whole is None:
                return None
            reserved = self._reassembler.reserved_for(count)
            if len(whole) > self._limit:
                self._reassembler.release(reserved)
                raise MessageViolation(MessageDropReason.TOO_LARGE)
            payload = whole
        if not self.ordered:
            self._reassembler.release(reserved)
            self._deliver(message_id, payload)
            self._received.add(message_id)
            while self.base in self._received:
                self._received.discard(self.base)
                self.base = seq_add(self.base, 1)
            return None
        self._buffer[message_id] = (payload, reserved)
        while self.base in self._buffer:
            ready, held = self._buffer.pop(self.base)
            self._reassembler.release(held)
            self._deliver(self.base, ready)
            self.base = seq_add(self.base, 1)
        return None

    def _deliver(self, message_id: int, payload: bytes) -> None:
        self._ready.append(
            ReceivedMessage(channel=self.channel, message_id=message_id, payload=payload)
        )


class UnreliableReceiver:
    """Receive side of an unreliable or unreliable-sequenced channel."""

    __slots__ = ("_mask", "_ready", "channel", "newest", "sequenced", "window")

    def __init__(
        self, channel: int, layer: MessageLayerConfig, ready: deque[ReceivedMessage]
    ) -> None:
        """Create a receiver that has seen nothing.

        Args:
            channel: Channel index.
            layer: The connection's message-layer settings.
            ready: Shared queue of messages for the application.
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
        self._ready.append(
            ReceivedMessage(channel=self.channel, message_id=message_id, payload=payload)
        )
        return None
