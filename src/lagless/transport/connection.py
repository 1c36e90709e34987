"""The reliability layer of one connection: acks, channels, pacing and clock sync inside payloads.

Implements spec 004 §4.4.2 (virtual connection: sequence, ack and ack bitfield on every packet,
per-packet delivery notifications to the layer above, 32-sample clock sync), spec 004 §4.4.4 and
spec 000 §2.5 (several messages of different delivery policies in one packet), spec 000 §2.4
(Cristian clock sync) and DESIGN.md "Transport defaults". It composes `acks.AckTracker`,
`packer.MessageLayer`, `congestion.CongestionController`, the estimators of `rtt` and a clock of
`clocksync`; each has its own tests. A `Connection` knows nothing of addresses or encryption: the
netcode layer (`netcode_server`, `netcode_client`) carries its payloads, and `server.Server` /
`client.Client` glue the two.

Payload layout (the plaintext of one netcode payload packet, at most 1200 bytes)::

    ack header   sequence:u16  ack:u16  ack_bits:u32         (8 bytes, little-endian; acks.py)
    flags:u8     bit 0: a time request follows (9 bytes)
                 bit 1: a time response follows (25 bytes)
                 bit 2: an ack delay follows (2 bytes)
                 bit 3: ack at once (the end of a burst: nothing more may leave for now)
                 bits 4-7: zero
    [ack delay:u16, units of 0.1 ms] [time request] [time response]   (clocksync.py layouts)
    message records to the end of the payload               (packer.py layout)

Read checks, in order; each failure drops the whole payload and counts its `PayloadDropReason`:
header too short (MALFORMED); sequence already received or too old (DUPLICATE, STALE: checked before
anything else is parsed, nothing changes); unknown flag bits, a truncated ack delay or truncated
time messages (MALFORMED); the message layer rejects the records (MESSAGES). Only a payload that
passes all of them is recorded as received, so only such a payload is ever acknowledged and a
rejected one's reliable messages are resent. A message-layer violation (reassembly overflow, unknown
channel, window breach) from the authenticated peer sets `Connection.violation`; the owner closes
the connection on it (STYLE §4).

Decisions:

* Pacing is a token bucket: tokens accrue at the congestion controller's send rate (packets per
  second; good mode starts at 90 packets/s, above a 60 Hz tick with its 10 Hz clock sync, and
  grows by slow start and then AIMD while pacing holds a backlog back, up to 200 000 packets/s;
  bad mode 15 Hz, against Gaffer on Games' 30/10 Hz, because a 256 KiB reliable message at 30 Hz
  would take 7 s) up to ``max_burst`` (at most 32) packets
  (``test_connection.py::test_bad_link_lowers_send_rate``). A payload with records or time
  messages takes a token; an ack-only payload takes none (QUIC does not pace pure acks either),
  else a 60 Hz ping-pong waits a tick for its acks; it stays bounded, one per received batch of
  ack-eliciting payloads
  (``test_transport_costs.py::test_ack_only_payloads_take_no_pacing_token_and_stay_bounded``).
* A sender held back by pacing wakes when ``rate x 1 ms`` tokens (at least one, at most the
  burst) have accrued, not at every token: at 20 000 packets/s that is one wake-up per 20
  packets instead of one per packet, the 1 ms granularity of QUIC pacers and OS timers
  (``test_connection.py::test_pacing_wakes_once_per_quantum``).
* ``next_timer`` is cached: the deadline is recomputed once after the calls that change it
  (receiving, timers, building payloads, sending), so a driver may ask after every pump for
  free; `send` only marks it stale, as every driver pumps after a send anyway.
  `payloads_to_send` leaves it to be recomputed by ``next_timer``, after the driver has sent
  the payloads (on a 60 Hz echo, profiled, it was about 30 % of `payloads_to_send`), and
  tells it when no message was left due, so it is not asked twice
  (``test_connection.py::test_a_pump_never_leaves_a_due_deadline_with_nothing_to_send``).
* The header acks only the newest 33 packets, so a receiver queues an ack-only payload at once
  when ``ack_frequency`` (16) ack-eliciting payloads arrived since it last sent (QUIC's ack
  frequency); it is built while receiving, so a driver that reads many datagrams before pumping
  still acks every one (``test_transport_costs.py::test_a_burst_never_outruns_the_ack_field``).
* The last payload of a burst asks for its ack at once (flag bit 3): when a payload with
  records leaves nothing that may be sent now (the queue ran dry, or the reliable window is
  full) and at least ``ACK_NOW_BURST`` (16) payloads with records left since the send queue
  last ran dry, the receiver acks it at once instead of ``ack_delay`` later, as QUIC's
  IMMEDIATE_ACK frame asks (the ACK frequency extension). A bulk sender then learns of the end
  of its burst, or gets its window back, one round trip after the last packet instead of a
  round trip plus 10 ms: in a loopback transfer of 5 000 1000-byte messages the loop sat idle
  for that 10 ms at the end of every transfer, a tenth of its time (``benchmarks/transport.py``).
  A stream that drains its queue every tick (a 60 Hz game: a few payloads per tick) never sets
  it, so its acks still ride on its peer's own payloads
  (``test_connection.py::test_the_end_of_a_burst_is_acked_at_once``).
* The message layer's resend delay is ``max(resend_interval, 1.25 * SRTT + 4 * jitter +
  sparse_ack_delay)``, re-evaluated at every RTT sample, so a slow path gets no spurious resends. In
  BAD mode it falls back to ``resend_interval``: there a record usually needs several sends, pacing
  is at the bad rate anyway, and waiting a round trip per send starves a 90 %-loss link
  (``tests/soak/test_transport_soak.py::test_connection_soak_long``).
* Only the loss of an ack-eliciting payload is a congestion loss event: an ack-only payload to a
  silent peer is never acked.
* A payload goes out when messages are pending, when a time request or response is due, or
  ``ack_delay`` after an ack-eliciting packet (one carrying message records) arrived with
  nothing else sent since, so the peer learns of deliveries even when this side has nothing to
  say; ack-only payloads elicit nothing, so idle peers fall silent
  (``test_connection.py::test_ack_only_payloads_confirm_delivery_when_the_peer_is_silent``).
* The ack of a sparse stream may wait longer: a payload that arrives more than ``ack_delay``
  (10 ms) after the previous ack-eliciting one gets ``sparse_ack_delay``. Set to the interval of
  the application's stream (0.05 s for 20 Hz inputs), a request/response stream (inputs up,
  snapshots or echoes down) carries its acks on its own messages: one datagram per message
  instead of a message and an ack-only payload (``benchmarks/server.py``'s echo clients then
  sent half the datagrams, about 55 bytes with the IP/UDP headers per message saved). The
  default is 10 ms, the same as ``ack_delay``: an ack that rides on the next request is applied
  on the way to the answer, and on the 60 Hz ping-pong of ``benchmarks/transport.py`` that cost
  0.1-0.2 ms of a 0.35-0.5 ms round trip. A dense stream always keeps the short delay: acks every
  50 ms held a bulk sender's slow start blind to a filling bottleneck queue until the loss pushed
  it into BAD mode
  (``test_transport_costs.py::test_aimd_converges_near_the_bottleneck_and_recovers_after_a_bad_period``).
  The delay costs the RTT estimate
  nothing: the first header that acknowledges a newly received packet says how long this side
  held it (the ack-delay field, QUIC's ACK Delay, RFC 9000 §19.3), and the peer's sample of that
  packet leaves it out (``acks.AckTracker.on_receive_fields``;
  ``test_connection.py::test_reported_ack_delay_is_left_out_of_the_rtt``). The resend delay adds
  this side's own ``sparse_ack_delay`` as the peer's (both ends use the defaults unless
  configured alike), and stays above the 100 ms ``resend_interval`` floor.
* The client side asks for the time every ``clock_interval`` (10 Hz) until its clock holds
  ``CLOCK_WARMUP`` (32, spec 004's window) samples, then every ``clock_interval_synced`` (1 s):
  at 10 Hz forever the requests and their responses were half of an idle client's datagrams
  and half of a 256-client server's CPU (``benchmarks/server.py``). A request due within half
  an interval rides on a payload that leaves with messages anyway instead of taking one of its
  own. The server side answers in its next payload, stamping its clock and how long it held the
  request (Cristian's ``I``), so riding early costs no accuracy
  (``test_connection.py::test_clock_requests_slow_down_once_synchronised``).
* Messages are stamped with the time of the last input the connection saw, so `send` needs no
  ``now`` argument; the driver's next pump flushes them.
* Every queue is bounded. Sending: each reliable channel holds at most ``send_queue_limit``
  messages (`SendQueueFull` beyond), each unreliable one drops its oldest unsent message beyond
  it, at most ``reliable_window`` reliable messages are in flight per channel, the sent-packet
  records at most ``sent_buffer_size`` / ``sent_packet_history`` packets (older ones count as
  lost), the ack-only outbox at most one payload per ``ack_frequency`` received packets between
  two pumps. Receiving: reordering buffers at most ``reliable_window`` messages per channel,
  half-reassembled messages at most ``reassembly_memory_limit`` bytes and live at most
  ``fragment_timeout`` seconds (``lagless.transport.fragment``), and the event queue is drained
  by the owner after every call (`take_events` or `next_event`); a driver that stops draining
  it must stop feeding datagrams too (the io endpoints pause reading).
* Cost: a message costs its record's bytes and a few dict and deque operations, not objects
  (`lagless.transport.channels`: per-packet flights of message ids); the estimators are fed once
  per batch of ack outcomes (`rtt.LossEstimator.on_acked`), the bytes sent once per pump, and
  events are built as tuples in batches (`take_events`; ``lagless.transport.events``).
  ``benchmarks/transport.py`` measures the pair of connections in memory (``sans-I/O Connection
  pair``).
* `receive_payload` turns the payload's messages into `MessageReceived` events at once and
  leaves its acks to the next pump (`payloads_to_send`, `handle_timer`; `statistics` applies
  them too): the RTT sample, loss and congestion updates and `MessageDelivered` events are off
  the path between a datagram's arrival and the application seeing its message. A driver pumps
  after every input anyway, so nothing waits longer than that pump; the asyncio endpoint hands
  the events over before it pumps (``lagless.io.endpoint``).
* A packet declared lost and acked later was late, not lost: the loss estimate takes it back and
  the congestion controller undoes the decrease it caused (``lagless.transport.congestion``).
"""

from __future__ import annotations

import enum
import logging
import math
import struct
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from lagless.errors import ConfigError
from lagless.transport.acks import ACK_HEADER_SIZE, AckConfig, AckTracker, Outcome
from lagless.transport.clocksync import (
    TIME_REQUEST_SIZE,
    TIME_RESPONSE_SIZE,
    CristianClock,
    Spec004Clock,
    TimeRequest,
    TimeResponse,
    decode_time_message,
    encode_time_message,
)
from lagless.transport.config import CongestionConfig, MessageLayerConfig
from lagless.transport.congestion import CongestionController, CongestionMode
from lagless.transport.events import (
    MessageDelivered,
    MessageReceived,
    PacketDelivered,
    PacketLost,
    TransportEvent,
)
from lagless.transport.message_errors import MessageDropReason
from lagless.transport.packer import MessageLayer, MessageLayerStatistics
from lagless.transport.rtt import BandwidthMeter, LossEstimator, RttEstimator

logger = logging.getLogger("lagless.transport")
_new = tuple.__new__  # builds an event from its fields without a Python frame (events.py)

EventBuilder = Callable[[type, tuple[object, ...], Iterable[tuple[object, ...]]], list[Any]]
"""``build(kind, head, entries)``: ``[kind(*head, *entry) for entry in entries]``, built as
``tuple.__new__`` builds them (`lagless.transport._events`)."""


def _event_builder() -> EventBuilder | None:
    try:
        from lagless.transport import _events
    except ImportError:  # a pure-Python install: tuple.__new__ builds them (the same events)
        return None
    return _events.build


BUILD_EVENTS: Final = _event_builder()
"""The C event builder of a compiled build, or ``None`` (docs/compiled.md, "Events built in
C"): two events per message, 0.32 µs each from Python, 0.09 µs in C."""

MAX_PAYLOAD: Final = 1200  # bytes; netcode 1.02 payload limit (DESIGN.md "Transport defaults")
FLAG_TIME_REQUEST: Final = 0x01
FLAG_TIME_RESPONSE: Final = 0x02
_FLAGS: Final = struct.Struct("<B")
_U16: Final = struct.Struct("<H")
_GOOD: Final = CongestionMode.GOOD  # bound once (congestion._GOOD)
_HEAD: Final = struct.Struct("<HHIB")  # the ack header (acks.py) and the flags byte
_HEAD_PACK: Final = _HEAD.pack  # bound once (records.SHORT_PACK says why)
_HEAD_UNPACK: Final = _HEAD.unpack_from
OVERHEAD: Final = ACK_HEADER_SIZE + _FLAGS.size  # bytes before any time message or record
FLAG_ACK_DELAY: Final = 0x04
FLAG_ACK_NOW: Final = 0x08  # the end of a burst: acknowledge this payload at once
ACK_NOW_BURST: Final = 16  # payloads with records since the send queue ran dry that make a burst
ACK_DELAY_SIZE: Final = 2  # bytes of the ack-delay field
ACK_DELAY_UNIT: Final = 1e-4  # seconds per unit of the ack-delay field (max 6.5535 s)
ACK_DELAY_MIN: Final = 0.001  # seconds; a shorter hold is not reported (the field is omitted)
_KNOWN_FLAGS: Final = FLAG_TIME_REQUEST | FLAG_TIME_RESPONSE | FLAG_ACK_DELAY | FLAG_ACK_NOW
MESSAGE_BUDGET: Final = (
    MAX_PAYLOAD - OVERHEAD - ACK_DELAY_SIZE - TIME_REQUEST_SIZE - TIME_RESPONSE_SIZE
)  # bytes
RESEND_RTT_FACTOR: Final = 1.25  # resend delay = 1.25 x SRTT + 4 x jitter (floored per channel)
RESEND_JITTER_FACTOR: Final = 4.0
MAX_ACK_FREQUENCY: Final = 16  # ack-eliciting packets a receiver may leave unacknowledged: half
# of the 32-bit ack field, so a header always still covers every packet of the previous ack
CLOCK_WARMUP: Final = 32  # clock samples before time requests slow down (spec 004's window)
MAX_BURST: Final = 32  # packets; the 32-bit ack field plus the ack itself cover 33
PACING_GRANULARITY: Final = 0.001  # seconds of tokens a held-back sender waits for per wake-up
_WHOLE_TOKEN: Final = 1.0 - 1e-9  # a token refilled up to rounding counts as whole, or the
# deadline ``tokens_at + (1 - tokens) / rate`` rounds to ``now`` and the driver spins


class PayloadDropReason(enum.Enum):
    """Why a received payload was dropped whole (see the module docstring for the order)."""

    MALFORMED = "malformed"
    DUPLICATE = "duplicate"
    STALE = "stale"
    MESSAGES = "messages"


def _default_messages() -> MessageLayerConfig:
    return MessageLayerConfig(packet_budget=MESSAGE_BUDGET)


def _default_congestion() -> CongestionConfig:
    return CongestionConfig(good_send_rate=90.0, bad_send_rate=15.0)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionConfig:
    """Settings of one connection's reliability layer; both ends must agree on ``messages``."""

    messages: MessageLayerConfig = field(default_factory=_default_messages)
    """Channels, budgets, fragment and window sizes (packer.py)."""
    acks: AckConfig = field(default_factory=AckConfig)
    """Sequence buffer sizes and the loss rule (acks.py)."""
    congestion: CongestionConfig = field(default_factory=_default_congestion)
    """Good/bad mode send rates in packets per second and thresholds (congestion.py)."""
    max_burst: int = MAX_BURST
    """Packets the token bucket may send back to back, in [1, 32]: a receiver's ack header
    covers only the newest 33 packets."""
    ack_delay: float = 0.01
    """Seconds after a packet arrives before an ack-only payload is sent if nothing else went,
    while packets arrive at most this far apart (a dense stream: bulk data, a burst)."""
    sparse_ack_delay: float = 0.01
    """The same for a packet that arrived more than ``ack_delay`` after the previous one (a
    sparse stream such as 20 Hz inputs), when longer than ``ack_delay``: raised to the stream's
    interval (0.05 for 20 Hz) its ack rides on the next outgoing message instead of a datagram of
    its own. The peer's RTT samples leave the reported delay out (see the module docstring)."""
    ack_frequency: int = MAX_ACK_FREQUENCY
    """Ack-eliciting packets received unacknowledged after which an ack-only payload is queued at
    once, in [1, 16] (QUIC's ack frequency): a burst never outruns the 32-bit ack field."""
    clock: Literal["spec004", "cristian", "none"] = "spec004"
    """Clock-sync algorithm of the client side: spec 004's 32-sample filter, Cristian's, or none."""
    clock_interval: float = 0.1
    """Seconds between time requests from the client side while its clock warms up (10 Hz, the
    keep-alive rate)."""
    clock_interval_synced: float = 1.0
    """Seconds between time requests once the clock holds ``CLOCK_WARMUP`` samples."""
    packet_events: bool = False
    """Emit `PacketDelivered` / `PacketLost` events (the Tribes model of spec 004)."""
    delivery_events: bool = True
    """Emit a `MessageDelivered` event for every reliable message the peer acknowledged. An
    application that never waits for deliveries (an echo, a stream of inputs) may turn them off
    and save an event per message; the statistics count deliveries all the same."""

    def __post_init__(self) -> None:
        """Validate the fields; raise `ConfigError` naming the first bad one."""
        if self.messages.packet_budget > MESSAGE_BUDGET:
            raise ConfigError(
                f"messages.packet_budget must be <= {MESSAGE_BUDGET} bytes, "
                f"got {self.messages.packet_budget}"
            )
        if not 1 <= self.max_burst <= MAX_BURST:
            raise ConfigError(
                f"max_burst must be in [1, {MAX_BURST}] packets, got {self.max_burst}"
            )
        if not 1 <= self.ack_frequency <= MAX_ACK_FREQUENCY:
            raise ConfigError(
                f"ack_frequency must be in [1, {MAX_ACK_FREQUENCY}] packets, "
                f"got {self.ack_frequency}"
            )
        if not 0.0 <= self.ack_delay <= 1.0:
            raise ConfigError(f"ack_delay must be in [0, 1] seconds, got {self.ack_delay}")
        if not 0.0 <= self.sparse_ack_delay <= 1.0:
            raise ConfigError(
                f"sparse_ack_delay must be in [0, 1] seconds, got {self.sparse_ack_delay}"
            )
        if self.clock not in ("spec004", "cristian", "none"):
            raise ConfigError(f"clock must be 'spec004', 'cristian' or 'none', got {self.clock!r}")
        if not 0.01 <= self.clock_interval <= 60.0:
            raise ConfigError(
                f"clock_interval must be in [0.01, 60] seconds, got {self.clock_interval}"
            )
        if not self.clock_interval <= self.clock_interval_synced <= 60.0:
            raise ConfigError(
                f"clock_interval_synced must be in [clock_interval, 60] seconds, "
                f"got {self.clock_interval_synced}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionStatistics:
    """Snapshot of one connection (trio-style ``statistics()``); SI units."""

    rtt: float
    """Smoothed round-trip time, seconds (0 before the first sample)."""
    rtt_min: float
    """Smallest recent round-trip time, seconds."""
    rtt_max: float
    """Largest recent round-trip time, seconds."""
    jitter: float
    """Mean deviation of the round-trip time, seconds."""
    loss: float
    """Fraction of recent packets reported lost, 0..1."""
    sent_bps: float
    """Payload bytes sent per second over the last second."""
    received_bps: float
    """Payload bytes received per second over the last second."""
    acked_bps: float
    """Payload bytes acknowledged per second over the last second."""
    packets_sent: int
    """Payloads sent."""
    packets_received: int
    """Payloads accepted."""
    packets_acked: int
    """Sent payloads reported delivered."""
    packets_lost: int
    """Sent payloads reported lost."""
    congestion_mode: CongestionMode
    """The congestion controller's current mode."""
    send_rate: float
    """Packets per second the pacing currently allows."""
    clock_offset: float
    """Estimated peer clock minus local clock, seconds (client side; 0 before sync)."""
    dropped: Mapping[PayloadDropReason, int]
    """Received payloads dropped, by reason."""
    messages: MessageLayerStatistics
    """The message layer's own counters."""


class Connection:
    """One side of a reliable, paced, clock-synchronised connection, carried in payloads.

    Args:
        config: the connection settings (both ends agree on ``config.messages``).
        now: the time the connection starts, seconds.
        client_index: the server slot this connection belongs to; copied into every event.
        connection_id: the never-reused identity of this connection; copied into every event.
        is_client: True on the client side (it runs clock sync), False on the server side.
    """

    def __init__(
        self,
        *,
        config: ConnectionConfig | None = None,
        now: float,
        client_index: int = 0,
        connection_id: int = 0,
        is_client: bool,
    ) -> None:
        self.config = config if config is not None else ConnectionConfig()
        self.client_index = client_index
        self.connection_id = connection_id
        self._is_client = is_client
        self._now = now
        self._rtt = RttEstimator()
        self._acks = AckTracker(config=self.config.acks, rtt=self._rtt)
        self._messages = MessageLayer(config=self.config.messages)
        self._send_lanes = self._messages.send_lanes
        # emptied after every batch of events: bound once (a deque's method is looked up by name)
        self._clear_ready: Callable[[], None] = self._messages.ready.clear
        self._clear_delivered: Callable[[], None] = self._messages.delivered.clear
        self._congestion = CongestionController(now=now, config=self.config.congestion)
        self._loss_min_outcomes = self.config.congestion.loss_min_outcomes  # read per ack batch
        self._loss = LossEstimator()
        self._bandwidth = BandwidthMeter()
        self._clock: Spec004Clock | CristianClock | None = None
        if is_client and self.config.clock == "spec004":
            self._clock = Spec004Clock()
        elif is_client and self.config.clock == "cristian":
            self._clock = CristianClock()
        self._next_time_request = now if self._clock is not None else None
        self._clock_ride = 0.5 * self.config.clock_interval  # s a request may leave early
        self._time_response: tuple[float, float] | None = None  # (client stamp, arrival time)
        self._ack_due: float | None = None
        self._unacked = 0  # ack-eliciting payloads received since this side last sent one
        self._burst = 0  # payloads with records built since the send queue last ran dry
        self._pending = False  # whether the last _build left messages due (left out or new)
        self._outbox: list[bytes] = []  # ack-only payloads queued while receiving
        self._ack_only: set[int] = set()  # sequences of ack-only payloads not yet resolved
        self._delay_reported: float | None = None  # arrival time whose ack delay was sent
        self._eliciting_at = -math.inf  # arrival time (s) of the last ack-eliciting payload
        self._rtt_samples = 0  # RTT samples seen when the resend delay was last set
        self._resend_good = False  # congestion mode was GOOD when the resend delay was last set
        self._tokens = float(self.config.max_burst)
        self._tokens_at = now
        self._timer: float | None = None  # cached next_timer(), valid unless _stale
        self._stale = True
        self._idle = False  # payloads_to_send found no message due at _now; until a change
        self._events: list[TransportEvent] = []
        self._event_head = 0  # next_event() reads _events from here
        self._dropped: Counter[PayloadDropReason] = Counter()
        self._sent = self._received = self._acked = self._lost = 0

    # -- application side ---------------------------------------------------------------------

    def send(self, channel: int, payload: bytes) -> int:
        """Queue ``payload`` on ``channel`` and return its message id (16-bit, wrapping).

        Raises:
            LocalProtocolError: unknown channel; `MessageTooLarge` above the channel's limit;
                `SendQueueFull` when a reliable channel's queue is full.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        lane = self._send_lanes.get(channel) if type(channel) is int else None
        if lane is not None and type(payload) is bytes and len(payload) <= lane[0]:
            message_id = lane[1](payload)  # what MessageLayer.send would do after its checks
        else:
            message_id = self._messages.send(channel, payload, self._now)  # the right error
        self._idle = False
        self._stale = True  # the next next_timer() finds the send due
        return message_id

    @property
    def violation(self) -> MessageDropReason | None:
        """The first protocol violation by the authenticated peer, if any (close on it)."""
        return self._messages.violation

    def server_time(self, now: float) -> float:
        """The peer's (server's) clock at local time ``now`` (s); ``now`` until synchronised."""
        if self._clock is None:
            return now
        return self._clock.server_time(now)

    @property
    def synchronized(self) -> bool:
        """True once the client side has a clock estimate."""
        return self._clock is not None and self._clock.synchronized

    def statistics(self) -> ConnectionStatistics:
        """Return a snapshot of the connection's estimates and counters.

        Applies the acks received since the last pump first (see `receive_payload`).
        """
        now = self._now
        self._collect(now)
        self._stale = True  # a loss applied now may have made records due
        self._idle = False
        has_rtt = self._rtt.has_samples
        return ConnectionStatistics(
            rtt=self._rtt.rtt if has_rtt else 0.0,
            rtt_min=self._rtt.rtt_min if has_rtt else 0.0,
            rtt_max=self._rtt.rtt_max if has_rtt else 0.0,
            jitter=self._rtt.jitter if has_rtt else 0.0,
            loss=self._loss.loss,
            sent_bps=self._bandwidth.sent_bps(now),
            received_bps=self._bandwidth.received_bps(now),
            acked_bps=self._bandwidth.acked_bps(now),
            packets_sent=self._sent,
            packets_received=self._received,
            packets_acked=self._acked,
            packets_lost=self._lost,
            congestion_mode=self._congestion.mode,
            send_rate=self._congestion.send_rate,
            clock_offset=self._clock.offset if self._clock is not None else 0.0,
            dropped=dict(self._dropped),
            messages=self._messages.statistics(),
        )

    # -- network side -------------------------------------------------------------------------

    def receive_payload(self, data: bytes, now: float) -> None:
        """Take one decrypted payload from the peer; bad input is counted and dropped.

        Its messages become events at once; its acks are applied at the next pump (see the
        module docstring). Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        if now > self._now:
            self._now = now
        self._stale = True
        self._idle = False
        if len(data) <= OVERHEAD - 1:
            self._dropped[PayloadDropReason.MALFORMED] += 1
            return
        sequence: int
        ack: int
        ack_bits: int
        flags: int  # typed: a compiled build then works on machine integers
        sequence, ack, ack_bits, flags = _HEAD_UNPACK(data)
        status = self._acks.status(sequence)
        if status:
            reason = PayloadDropReason.DUPLICATE if status == 1 else PayloadDropReason.STALE
            self._dropped[reason] += 1
            return
        offset = OVERHEAD
        request: TimeRequest | None = None
        response: TimeResponse | None = None
        ack_delay = 0.0
        if flags:
            if flags & ~_KNOWN_FLAGS:
                self._dropped[PayloadDropReason.MALFORMED] += 1
                return
            if flags & FLAG_ACK_DELAY:
                if len(data) < OVERHEAD + ACK_DELAY_SIZE:
                    self._dropped[PayloadDropReason.MALFORMED] += 1
                    return
                ack_delay = _U16.unpack_from(data, OVERHEAD)[0] * ACK_DELAY_UNIT
                offset += ACK_DELAY_SIZE
            for bit in (FLAG_TIME_REQUEST, FLAG_TIME_RESPONSE):
                if not flags & bit:
                    continue
                message = decode_time_message(data, offset)
                if message is None:
                    self._dropped[PayloadDropReason.MALFORMED] += 1
                    return
                parsed, offset = message
                if bit == FLAG_TIME_REQUEST and isinstance(parsed, TimeRequest):
                    request = parsed
                elif bit == FLAG_TIME_RESPONSE and isinstance(parsed, TimeResponse):
                    response = parsed
                else:
                    self._dropped[PayloadDropReason.MALFORMED] += 1
                    return
        size = len(data)
        if offset < size and self._messages.read_packet(data, now, offset) is not None:
            self._dropped[PayloadDropReason.MESSAGES] += 1
            return
        self._acks.on_receive_fields(sequence, ack, ack_bits, now, ack_delay)
        self._received += 1
        self._bandwidth.on_received(now, size)
        if request is not None and not self._is_client:
            self._time_response = (request.client_time, now)
        if response is not None and self._clock is not None:
            self._clock.on_sample(
                response.client_time,
                response.server_time,
                now,
                processing_time=response.processing_time,
            )
        # QUIC's rule: only a payload carrying messages elicits an ack, else two idle peers would
        # ack each other's acks forever; a time request is answered by its response anyway.
        if offset < size:
            self._unacked += 1
            if self._unacked >= self.config.ack_frequency or flags & FLAG_ACK_NOW:
                payload = self._build_ack_only(now)
                self._outbox.append(payload)
                self._bandwidth.on_sent(now, len(payload))
            else:
                config = self.config
                dense = now - self._eliciting_at <= config.ack_delay
                delay = config.ack_delay
                if not dense and config.sparse_ack_delay > delay:
                    delay = config.sparse_ack_delay
                due = now + delay
                if self._ack_due is None or due < self._ack_due:
                    self._ack_due = due
            self._eliciting_at = now
        ready = self._messages.ready
        if ready:
            self._take_entries(MessageReceived, ready, self._clear_ready)

    def payloads_to_send(self, now: float) -> list[bytes]:
        """Return the payloads to hand to the netcode layer now (each ≤ 1200 bytes).

        Payloads with messages or time messages each take a pacing token; an ack-only payload
        takes none (see the module docstring).
        """
        self._advance(now)
        self._collect(now)
        out = self._outbox
        self._outbox = []
        sent_bytes = 0  # built now: counted once (the outbox was counted when it was built)
        messages = self._messages
        pending: bool | None = None  # messages.has_pending(now), once a payload was built
        if (
            self._tokens >= _WHOLE_TOKEN
            and not self._time_due(now)
            and not messages.has_pending(now)
        ):
            pending = False  # nothing due (most pumps: an ack, a timer): asking beats a build
        else:
            while self._tokens >= _WHOLE_TOKEN:
                payload = self._build(now)
                if payload is None:
                    break  # nothing due; has_pending(now) is asked later, as it expires records
                out.append(payload)
                sent_bytes += len(payload)
                self._tokens -= 1.0
                pending = self._pending  # what _build found left due
                if not pending and not self._time_due(now):
                    break  # all that was due fitted: a second build would find nothing
            else:
                if pending is None:
                    pending = messages.has_pending(now)
                if pending:
                    self._congestion.on_held_back()
        if self._ack_due is not None and self._ack_due <= now:
            payload = self._build_ack_only(now)
            out.append(payload)
            sent_bytes += len(payload)
        if sent_bytes:
            self._bandwidth.on_sent(now, sent_bytes)
        # the deadline is read in next_timer, after the driver has sent these payloads; a
        # has_pending(now) that said False has expired every lane, so it need not be asked again
        self._idle = pending is False
        self._stale = True
        return out

    def next_timer(self) -> float | None:
        """Absolute time (s) of the next deadline: a send, an ack, a time request or a loss.

        Cached (see the module docstring): O(1) unless a call since the last one changed it.
        """
        if self._stale:
            self._timer = self._deadline(self._next_send_wish())
            self._stale = False
        return self._timer

    def handle_timer(self, now: float) -> None:
        """Run what is due at ``now`` (s): loss detection; sending happens in the next pump.

        Pump the object afterwards (see `lagless.io.drive.pump`).
        """
        self._advance(now)
        self._stale = True
        self._idle = False
        self._collect(now)

    def next_event(self) -> TransportEvent | None:
        """Return the next message, delivery or packet event, or None."""
        events = self._events
        head = self._event_head
        if head >= len(events):
            return None
        event = events[head]
        head += 1
        if head == len(events):
            events.clear()
            head = 0
        self._event_head = head
        return event

    def take_events(self) -> list[TransportEvent]:
        """Return every event waiting, oldest first (the batch form of `next_event`).

        One call instead of one `next_event` per message; the caller owns the list.
        """
        events = self._events
        if self._event_head:
            del events[: self._event_head]
            self._event_head = 0
        self._events = []
        return events

    # -- internals ----------------------------------------------------------------------------

    def _advance(self, now: float) -> None:
        if now > self._now:
            self._now = now
        elapsed = now - self._tokens_at
        if elapsed > 0.0:
            tokens = self._tokens + elapsed * self._congestion.send_rate
            burst = float(self.config.max_burst)
            self._tokens = tokens if tokens < burst else burst
            self._tokens_at = now

    def _token_time(self) -> float:
        """When the next send may go (s): now with a whole token, else once a quantum accrued."""
        tokens = self._tokens
        if tokens >= _WHOLE_TOKEN:
            return self._tokens_at
        rate = self._congestion.send_rate
        quantum = min(float(self.config.max_burst), max(1.0, rate * PACING_GRANULARITY))
        return self._tokens_at + (quantum - tokens) / rate

    def _deadline(self, wish: float | None) -> float | None:
        best = self._now if self._outbox else None
        if wish is not None:
            token = self._token_time()
            wake = wish if wish > token else token
            if best is None or wake < best:
                best = wake
        ack_due = self._ack_due
        if ack_due is not None and (best is None or ack_due < best):
            best = ack_due
        loss = self._acks.next_loss_deadline()
        if loss is not None and (best is None or loss < best):
            best = loss
        return best

    def _next_send_wish(self) -> float | None:
        """Earliest time (s) this side wants to send messages or time messages, ignoring pacing."""
        now = self._now
        if self._time_response is not None or (not self._idle and self._messages.has_pending(now)):
            return now
        wish = self._messages.next_resend_time()
        request = self._next_time_request
        if request is not None and (wish is None or request < wish):
            return request
        return wish

    def _time_due(self, now: float) -> bool:
        """Whether `_build` at ``now`` (s) would add a time request or a time response."""
        request = self._next_time_request
        return self._time_response is not None or (request is not None and request <= now)

    def _build_ack_only(self, now: float) -> bytes:
        """Build a payload of the ack header alone (it takes no pacing token)."""
        self._ack_only.add(self._acks.next_sequence)
        return self._seal(now, 0, b"")

    def _build(self, now: float) -> bytes | None:
        """Build the next payload with due records and time messages; None when none is due."""
        flags = 0
        extras: list[bytes] = []
        messages = self._messages
        body = messages.write_parts(self._acks.next_sequence, now)  # a slot for the header first
        pending = messages.left_behind
        if body is not None:
            self._burst += 1
            pending = pending or messages.has_pending(now)
            if not pending:  # nothing more may leave: the burst ended, or the window is full
                if self._burst >= ACK_NOW_BURST:
                    flags = FLAG_ACK_NOW
                if not messages.has_unsent():
                    self._burst = 0  # the send queue ran dry
        self._pending = pending
        request = self._next_time_request
        if request is not None and (
            request <= now or (body is not None and request - now <= self._clock_ride)
        ):
            flags |= FLAG_TIME_REQUEST
            extras.append(encode_time_message(TimeRequest(client_time=now)))
            # a request that rode early keeps the cadence: the next is due an interval after
            # this one was
            self._next_time_request = max(request, now) + self._clock_interval()
        if self._time_response is not None:
            stamp, arrived = self._time_response
            flags |= FLAG_TIME_RESPONSE
            extras.append(
                encode_time_message(
                    TimeResponse(client_time=stamp, server_time=now, processing_time=now - arrived)
                )
            )
            self._time_response = None
        if body is None and not flags:
            return None
        return self._seal(now, flags, b"".join(extras) if extras else b"", body)

    def _clock_interval(self) -> float:
        """Seconds until the next time request: fast while warming up, then slow."""
        config = self.config
        clock = self._clock
        if clock is not None and clock.samples >= CLOCK_WARMUP:
            self._clock_ride = 0.5 * config.clock_interval_synced
            return config.clock_interval_synced
        return config.clock_interval

    def _seal(
        self, now: float, flags: int, extras: bytes, records: list[bytes] | None = None
    ) -> bytes:
        """Put the ack header and flags (and an ack delay) before ``extras`` (time messages) and
        ``records`` (`MessageLayer.write_parts`' pieces, the first one a slot for all that);
        record the packet as sent.

        The payload is one join of the pieces: every byte is copied once. The caller counts the
        payload's bytes in the bandwidth meter (once per pump).
        """
        acks = self._acks
        delay = b""
        arrived = acks.ack_time
        if arrived is not None and arrived != self._delay_reported:
            # the first header to acknowledge a newly received packet says how long it was held
            self._delay_reported = arrived
            held = now - arrived
            if held >= ACK_DELAY_MIN:
                flags |= FLAG_ACK_DELAY
                delay = _U16.pack(min(int(held / ACK_DELAY_UNIT + 0.5), 0xFFFF))
        size = OVERHEAD + len(delay) + len(extras)
        if records is not None:
            size += self._messages.filled
        sequence, ack, ack_bits = acks.next_send_fields(now, size)
        self._ack_due = None
        self._unacked = 0
        self._sent += 1
        head = _HEAD_PACK(sequence, ack, ack_bits, flags)
        if delay or extras:
            head = head + delay + extras
        if records is None:
            return head
        records[0] = head
        return b"".join(records)

    def _collect(self, now: float) -> None:
        """Turn ack outcomes into message-layer updates, estimates and events."""
        acks = self._acks
        outcomes = acks.take_outcomes(now)
        if outcomes:
            self._on_outcomes(outcomes, now)
        if acks.late:
            for sequence in acks.late:
                self._loss.on_late_ack()
                self._congestion.on_spurious_loss(sequence)
            acks.late.clear()
        messages = self._messages
        delivered = messages.delivered
        if delivered:
            if self.config.delivery_events:
                self._take_entries(MessageDelivered, delivered, self._clear_delivered)
            else:
                self._clear_delivered()
        ready = messages.ready
        if ready:
            self._take_entries(MessageReceived, ready, self._clear_ready)

    def _take_entries(
        self,
        kind: type[MessageReceived] | type[MessageDelivered],
        queue: deque[tuple[int, int, bytes]] | deque[tuple[int, object]],
        clear: Callable[[], None],
    ) -> None:
        """Turn the entries of one of the message layer's queues into ``kind`` events; empty it
        with ``clear`` (its bound ``clear``).

        The entries (``ready``'s or ``delivered``'s) are taken as plain objects: typed as they are
        (``tuple[int, int, bytes]``), a compiled build would unbox every entry's integers into a
        C struct and box them again to build the event (mypyc's native tuples), and look the two
        globals up per entry. A compiled build builds the events in C (`BUILD_EVENTS`).
        """
        entries: Iterable[tuple[object, ...]] = queue
        head: tuple[object, ...] = (self.client_index, self.connection_id)
        build = BUILD_EVENTS
        if build is not None:
            self._events += build(kind, head, entries)
        else:
            new = _new
            self._events += [new(kind, head + entry) for entry in entries]
        clear()

    def _on_outcomes(self, outcomes: list[Outcome], now: float) -> None:
        """Apply the outcomes of `AckTracker.take_outcomes`."""
        packet_events = self.config.packet_events
        messages = self._messages
        loss = self._loss
        ack_only = self._ack_only
        acked_bytes = 0
        acked = 0  # acked outcomes not yet given to the loss estimator (in one batch)
        paced = 0  # acked payloads that took a pacing token (slow start grows by them)
        for sequence, send_time, size, _, lost in outcomes:
            if ack_only:
                ack_only_packet = sequence in ack_only
                if ack_only_packet:
                    ack_only.discard(sequence)
            else:
                ack_only_packet = False
            if not lost:
                acked += 1
                paced += not ack_only_packet
                messages.on_packet_acked(sequence)
                acked_bytes += size
                if packet_events:
                    self._events.append(
                        _new(PacketDelivered, (self.client_index, self.connection_id, sequence))
                    )
            else:
                if acked:
                    self._acked += acked
                    loss.on_acked(acked)
                    acked = 0
                self._lost += 1
                messages.on_packet_lost(sequence)
                loss.on_outcome(lost=True)
                if not ack_only_packet:  # an ack-only payload to a silent peer is never acked
                    self._congestion.on_loss(send_time, now, sequence)
                if packet_events:
                    self._events.append(
                        _new(PacketLost, (self.client_index, self.connection_id, sequence))
                    )
        if acked:
            self._acked += acked
            loss.on_acked(acked)
        if acked_bytes:
            self._bandwidth.on_acked(now, acked_bytes)
        rtt = self._rtt
        if rtt.samples:
            congestion = self._congestion
            if paced:
                congestion.on_acked(paced, rtt.rtt)
            congestion.on_statistics(
                rtt.rtt, loss.loss_over(self._loss_min_outcomes), now, rtt.rtt_min
            )
            good = congestion.mode is _GOOD
            if rtt.samples != self._rtt_samples or good is not self._resend_good:
                self._rtt_samples = rtt.samples
                self._resend_good = good
                delay = (
                    RESEND_RTT_FACTOR * rtt.rtt
                    + RESEND_JITTER_FACTOR * rtt.jitter
                    + max(self.config.ack_delay, self.config.sparse_ack_delay)
                )
                messages.set_resend_delay(delay if good else 0.0)
