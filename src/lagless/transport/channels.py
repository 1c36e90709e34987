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
* Sending costs the records written, not the messages in flight. Unfragmented messages are
  tracked per packet: each packet's records of a channel form one flight (the ids it carried),
  kept in send order (= due order, the delay being the same for all); a message remembers only
  its encoded record and its last carrier. An acked packet completes its flight's ids, a lost or
  timed-out one makes due the ids it last carried; due ids and never-sent ids wait in two queues
  whose stale entries are skipped lazily, so ``has_pending``, ``next_resend_time`` and each
  record packed are amortised O(1) and no object is built per message
  (``test_transport_costs.py::test_packing_cost_does_not_grow_with_messages_in_flight``).
  Fragments keep one slot each in the same three-queue scheme (lost, never sent, in flight).
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
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from lagless.transport.config import ChannelConfig, ChannelKind, MessageLayerConfig
from lagless.transport.fragment import Fragmenter, Reassembler
from lagless.transport.message_errors import MessageDropReason, MessageViolation, SendQueueFull
from lagless.transport.records import small_record_head
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
Delivered = tuple[int, object]
"""A fully acknowledged reliable message inside the message layer: ``(channel, message_id)``.

The sender keeps its message ids as the int objects `send` made (``object`` to a compiled
build): they only pass through its dicts, queues and flights, and a machine integer would be
boxed into a new int object at every step (docs/compiled.md, "Writing code that mypyc compiles
well")."""


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
    """A fragmented reliable message waiting for acks; one slot per fragment.

    Args:
        channel: Channel index.
        message_id: 16-bit message id.
        payload: The message bytes.
        pieces: The fragments.
    """

    __slots__ = (
        "acked",
        "acked_count",
        "channel",
        "count",
        "done",
        "last_sent",
        "last_seq",
        "message_id",
        "payload",
        "pieces",
        "reserved",
    )

    def __init__(self, channel: int, message_id: int, payload: bytes, pieces: list[bytes]) -> None:
        count = len(pieces)
        self.channel = channel
        self.message_id = message_id
        self.payload = payload
        self.count = count
        self.pieces = pieces
        self.acked = bytearray(count)
        self.last_sent = [_NEVER] * count
        self.last_seq = [-1] * count
        self.acked_count = 0
        self.reserved = 0
        self.done = False


class UnreliableSender:
    """Queue of unreliable (or unreliable-sequenced) messages, each written once."""

    __slots__ = ("channel", "config", "dropped", "next_id", "queue", "sent")

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
        self.sent = 0
        """Messages ``send`` accepted."""

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
        self.sent += 1
        self.queue.append((message_id, payload))
        return message_id


class _Schedule:
    """Fragments of one channel by due time.

    ``urgent`` holds fragments whose last carrier was lost (due at once, in loss order), ``unsent``
    fragments never sent (in order), ``inflight`` one ``(sent_at, packet_seq, msg, index)`` entry
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


Flight = tuple[float, int, list[object]]
"""The unfragmented records of one channel in one packet: ``(sent_at, packet_seq, message ids)``.

The id list is shared with the message layer's record of the packet, which empties it when the
packet is acked or lost, so an empty list marks a resolved flight."""


class ReliableSender:
    """Reliable messages of one channel from ``send`` until the receiver must have them.

    Unfragmented messages are kept per packet, not per message: ``_small`` maps the id of every
    unacked one to ``(head, data, carrier)`` (its record in two pieces, the encoded header and the
    message's own bytes, so a large message is never copied before the payload is joined; and
    the sequence of the last packet that carried it, -1 while it waits to be sent), and each
    packet writes one `Flight` listing the ids it carried. An ack of the packet completes the
    ids of its flight that are still unacked; a loss, or ``resend_delay`` passing, moves those it
    was the last carrier of to ``_due``. Fragments go through ``peek_fragment`` and ``take`` one
    `Outgoing` slot at a time. The cost of a packet is the records it carries, not the messages
    in flight.
    """

    __slots__ = (
        "_big",
        "_current",
        "_deliver",
        "_delivered",
        "_due",
        "_flights",
        "_flights_append",
        "_flights_popleft",
        "_fragmenter",
        "_fragments",
        "_fresh",
        "_fresh_append",
        "_fresh_appendleft",
        "_fresh_popleft",
        "_held",
        "_least_resend",
        "_peeked",
        "_small",
        "_unordered",
        "_waiting",
        "channel",
        "config",
        "fragment_size",
        "has_fragments",
        "layer",
        "limit",
        "next_id",
        "oldest",
        "queued",
        "resend_delay",
        "reserve",
        "sent",
        "window",
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
            reserve: Two-element list shared by all channels: ``[0]`` bytes of admitted
                fragmented messages not yet released (kept within ``reassembly_memory_limit``),
                ``[1]`` fragmented messages queued and not yet fully acked (the packer skips its
                fragment pass while it is 0).
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
        """Shared ``[admitted reservation (bytes), fragmented messages queued]``."""
        self.next_id = 0
        """Id the next ``send`` returns."""
        self.sent = 0
        """Messages ``send`` accepted."""
        self.oldest = 0
        """Id of the oldest message not yet acked (``next_id`` when none)."""
        self.queued = 0
        """Messages from ``oldest`` to the newest one (acked ones after ``oldest`` included)."""
        self.limit = self.config.send_queue_limit
        """``send_queue_limit``: most messages ``queued`` may hold."""
        self.window = layer.reliable_window
        """Ids ahead of ``oldest`` that may be sent."""
        self.resend_delay = self.config.resend_interval
        """Seconds after its last send an unacked record is due again (``set_resend_delay``)."""
        self._least_resend = self.config.resend_interval  # read per ack batch (docs/compiled.md)
        self._delivered = delivered
        self.fragment_size = layer.fragment_size
        """Largest message sent whole (bytes); larger ones are fragmented."""
        self._fragmenter = Fragmenter(
            fragment_size=layer.fragment_size, max_fragments=layer.max_fragments
        )
        self._small: dict[object, tuple[bytes, bytes, int]] = {}  # keyed by message id
        self._fresh: deque[object] = deque()  # unfragmented ids never sent, in id order
        # the per-message queue operations, bound once: a compiled build calls a method of a
        # deque (not compiled) through a lookup by name, three times the cost of the call
        self._fresh_append: Callable[[object], None] = self._fresh.append
        self._fresh_popleft: Callable[[], object] = self._fresh.popleft
        self._fresh_appendleft: Callable[[object], None] = self._fresh.appendleft
        self._deliver: Callable[[Delivered], None] = delivered.append
        self._due: deque[object] = deque()  # ids due at once; stale unless their carrier is -1
        self._flights: deque[Flight] = deque()
        self._flights_append: Callable[[Flight], None] = self._flights.append
        self._flights_popleft: Callable[[], Flight] = self._flights.popleft
        self._big: dict[int, Outgoing] = {}  # fragmented messages not yet released
        self._fragments = _Schedule()
        self._waiting: deque[Outgoing] = deque()  # fragmented messages not admitted yet
        self._current: Outgoing | None = None  # the admitted fragmented message not yet done
        self._held = 0  # messages of this channel holding a reservation
        self.has_fragments = False
        """True while a fragmented message is queued (admitted or waiting)."""
        self._unordered = self.config.kind is ChannelKind.RELIABLE_UNORDERED
        self._peeked: deque[tuple[Outgoing, int]] | deque[tuple[float, int, Outgoing, int]] = (
            self._fragments.unsent
        )

    def set_resend_delay(self, seconds: float) -> None:
        """Set the resend delay to ``max(resend_interval, seconds)``.

        Args:
            seconds: Delay the connection derives from its RTT estimate (seconds).
        """
        self.resend_delay = max(self._least_resend, seconds)

    def send(self, payload: bytes) -> int:
        """Queue ``payload`` for reliable delivery.

        Args:
            payload: Message bytes (size already checked).

        Returns:
            The message id.

        Raises:
            SendQueueFull: ``send_queue_limit`` messages are already queued.
        """
        queued = self.queued
        if queued >= self.limit:
            raise SendQueueFull(
                f"channel {self.channel} holds send_queue_limit={self.limit} "
                "unacked messages; wait for deliveries"
            )
        message_id = self.next_id
        self.next_id = (message_id + 1) & 0xFFFF
        self.queued = queued + 1
        self.sent += 1
        size = len(payload)
        if size <= self.fragment_size:
            key: object = message_id  # boxed once (see `Delivered`)
            self._small[key] = (small_record_head(self.channel, message_id, size), payload, -1)
            self._fresh_append(key)
            return message_id
        fragmenter = self._fragmenter
        count = fragmenter.count(len(payload))
        pieces = [fragmenter.fragment(payload, i) for i in range(count)]
        msg = Outgoing(self.channel, message_id, payload, pieces)
        self._big[message_id] = msg
        self._waiting.append(msg)
        self.has_fragments = True
        self.reserve[1] += 1
        return message_id

    def _in_window(self, message_id: int) -> bool:
        # a queued message is never older than ``oldest``, so the masked difference is seq_diff
        return (message_id - self.oldest) & 0xFFFF < self.window

    def _expire(self, now: float) -> None:
        """Move the records of flights older than ``resend_delay`` at ``now`` (s) to ``_due``."""
        flights = self._flights
        small = self._small
        due = self._due
        delay = self.resend_delay
        popleft = self._flights_popleft
        while flights and flights[0][0] + delay <= now:
            _, seq, ids = popleft()
            for message_id in ids:
                entry = small.get(message_id)
                if entry is not None and entry[2] == seq:
                    small[message_id] = (entry[0], entry[1], -1)
                    due.append(message_id)

    def fill_small(
        self, out: list[bytes], room: int, packet_seq: int, now: float
    ) -> tuple[int, int, list[object] | None, bool]:
        """Append the due unfragmented records to ``out`` while they fit in ``room`` bytes.

        Records whose carrier was lost or whose resend delay passed come first, in the order they
        became due, then new messages within the window; packing stops at the first record that
        does not fit.

        Args:
            out: The records of the payload being built (each record appended whole).
            room: Bytes this channel may still add to it.
            packet_seq: Sequence number of the packet that will carry it.
            now: Current time (seconds).

        Returns:
            ``(bytes written, records resent, ids, left behind)``: ``ids`` lists the messages
            written (the packet's `Flight`; hand it to `acked_small` or `lost_small`), None when
            none was; ``left behind`` says packing stopped at a due record that did not fit, so
            `has_pending` would say True.
        """
        flights = self._flights
        if flights and flights[0][0] + self.resend_delay <= now:
            self._expire(now)
        small = self._small
        due = self._due
        ids: list[object] = []
        written = 0
        full = False
        while due:
            message_id = due[0]
            entry = small.get(message_id)
            if entry is None or entry[2] != -1:
                due.popleft()
                continue
            head, data, _ = entry
            size = len(head) + len(data)
            if size > room:
                full = True
                break
            due.popleft()
            out.append(head)
            out.append(data)
            room -= size
            written += size
            small[message_id] = (head, data, packet_seq)
            ids.append(message_id)
        resent = len(ids)
        if not full:
            fresh = self._fresh
            popleft = self._fresh_popleft
            oldest = self.oldest
            window = self.window
            putback = self._fresh_appendleft
            # taken, then put back when it may not go (a compiled build indexes a deque through
            # a generic lookup, dearer than the bound call that puts it back)
            while fresh:
                message_id = popleft()
                if (cast(int, message_id) - oldest) & 0xFFFF >= window:
                    putback(message_id)
                    break
                head, data, _ = small[message_id]
                size = len(head) + len(data)
                if size > room:
                    putback(message_id)
                    full = True
                    break
                out.append(head)
                out.append(data)
                room -= size
                written += size
                small[message_id] = (head, data, packet_seq)
                ids.append(message_id)
        if not ids:
            return 0, 0, None, full
        self._flights_append((now, packet_seq, ids))
        return written, resent, ids, full

    def acked_small(self, ids: list[object]) -> None:
        """The packet of flight ``ids`` was acked: complete its messages not acked before.

        Args:
            ids: What `fill_small` returned for that packet; emptied.
        """
        small = self._small
        deliver = self._deliver
        channel = self.channel
        for message_id in ids:
            if message_id in small:  # not acked by an earlier carrier
                del small[message_id]
                deliver((channel, message_id))
        ids.clear()
        if self.oldest not in small:
            self._advance()

    def lost_small(self, packet_seq: int, ids: list[object]) -> None:
        """Packet ``packet_seq`` with flight ``ids`` was lost: its last-carried records are due.

        Args:
            packet_seq: The lost packet's sequence number.
            ids: What `fill_small` returned for that packet; emptied.
        """
        small = self._small
        due = self._due
        for message_id in ids:
            entry = small.get(message_id)
            if entry is not None and entry[2] == packet_seq:
                small[message_id] = (entry[0], entry[1], -1)
                due.append(message_id)
        ids.clear()

    def _advance(self) -> None:
        """Move ``oldest`` past acked messages, releasing the reservations of fragmented ones."""
        small = self._small
        big = self._big
        oldest = self.oldest
        queued = self.queued
        while queued and oldest not in small:
            if big:
                msg = big.get(oldest)
                if msg is not None:
                    if not msg.done:
                        break
                    del big[oldest]
                    self._release(msg)
            oldest = (oldest + 1) & 0xFFFF
            queued -= 1
        self.oldest = oldest
        self.queued = queued

    def _admissible(self, msg: Outgoing) -> bool:
        if self._held or not self._in_window(msg.message_id):
            return False
        need = self.layer.reservation(len(msg.payload))
        return self.reserve[0] + need <= self.layer.reassembly_memory_limit

    def peek_fragment(self, now: float, *, admit: bool = True) -> tuple[Outgoing, int] | None:
        """Return ``(message, fragment_index)`` to write next at ``now``, or None.

        At most one fragmented message per channel is admitted at a time (the oldest one), and
        only while no earlier message of the channel holds a reservation; admitting one adds its
        reservation to the shared counter. Lost fragments come first, then due resends, then
        fragments never sent.

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
            msg.reserved = self.layer.reservation(len(msg.payload))
            self.reserve[0] += msg.reserved
            self._held += 1
            self._current = msg
            self._fragments.unsent.extend((msg, i) for i in range(msg.count))
        schedule = self._fragments
        head = schedule.urgent_head()
        if head is not None:
            self._peeked = schedule.urgent
            return head
        sent = schedule.inflight_head()
        if sent is not None and sent[0] + self.resend_delay <= now:
            self._peeked = schedule.inflight
            return sent[2], sent[3]
        if schedule.unsent:
            self._peeked = schedule.unsent
            return schedule.unsent[0]
        return None

    def take(self, msg: Outgoing, index: int, packet_seq: int, now: float) -> bool:
        """Record that the fragment just peeked rode in ``packet_seq`` at ``now``.

        Args:
            msg: The message ``peek_fragment`` returned.
            index: Fragment index.
            packet_seq: Packet sequence number.
            now: Current time (seconds).

        Returns:
            True when this was a resend.
        """
        self._peeked.popleft()
        resend = msg.last_seq[index] != -1
        msg.last_sent[index] = now
        msg.last_seq[index] = packet_seq
        self._fragments.inflight.append((now, packet_seq, msg, index))
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
        self.reserve[1] -= 1
        if msg is self._current:
            self._current = None
            self.has_fragments = bool(self._waiting)
        self._delivered.append((self.channel, msg.message_id))
        if self._unordered:
            self._release(msg)
        self._advance()

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
            self._fragments.urgent.append((msg, index))

    def has_unsent(self) -> bool:
        """Return True while a queued message has a part never sent (waiting for the window,
        for its fragmented turn or for the pacer); unacked records already sent do not count."""
        return bool(self._fresh or self._waiting or self._fragments.unsent)

    def has_pending(self, now: float) -> bool:
        """Return True when something could be written at ``now`` (amortised O(1)).

        Args:
            now: Current time (seconds).
        """
        flights = self._flights
        if flights and flights[0][0] + self.resend_delay <= now:
            self._expire(now)
        due = self._due
        small = self._small
        while due:
            entry = small.get(due[0])
            if entry is not None and entry[2] == -1:
                return True
            due.popleft()
        fresh = self._fresh
        if fresh and self._in_window(cast(int, fresh[0])):
            return True
        return self.has_fragments and self.peek_fragment(now, admit=False) is not None

    def next_resend_time(self) -> float | None:
        """Return the earliest time (seconds) a sent, unacked record becomes due, or None."""
        best: float | None = None
        flights = self._flights
        popleft = self._flights_popleft
        while flights and not flights[0][2]:
            popleft()
        if flights:
            best = flights[0][0] + self.resend_delay
        head = self._fragments.inflight_head()
        if head is not None:
            due = head[0] + self.resend_delay
            best = due if best is None or due < best else best
        return best


class ReliableReceiver:
    """Receive side of a reliable channel: dedupe, window check, ordering, reassembly."""

    __slots__ = (
        "_limit",
        "_ready",
        "_reassembler",
        "_received",
        "base",
        "channel",
        "held",
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
        self.held: dict[int, tuple[bytes, int]] = {}
        """Ordered channel: ``message_id -> (payload, reservation)`` held back until the gap before
        it fills (a receiver with nothing held and ``base`` equal to the next id may deliver it
        directly, as `MessageLayer.read_packet` does)."""
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
        buffer = self.held
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
