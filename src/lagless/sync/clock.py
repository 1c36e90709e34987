"""Round trips and a shared session clock over the sync messages (spec 000 §2.4, §2.1, §2.3).

Bucket synchronisation (spec 000 §2.3: "needs absolute clock synchronisation because there is no
server") and local lag (§2.1: every peer executes an action at the same moment) need peers whose
local clocks differ to agree on one time; lockstep (§2.14) needs the average RTT of every
connection. `PeerClock` gives both, over two tiny messages that ride beside each algorithm's own:
``PING`` (the sender's local time) and ``PONG`` (the echo, plus the answering peer's clock).

Units: seconds (float) everywhere; RTTs in seconds.

Decisions:
    * Peer 0 is the time reference (there is no server in a peer-to-peer session). Its session
      time is its local time minus its *epoch*, the local time of its first ``tick``; the epoch
      travels in every pong, so session time starts near 0 on every peer whatever the local
      clocks read. Every other peer estimates ``peer 0's clock - its own`` with the transport's
      `lagless.transport.clocksync.CristianClock` (Cristian's pull, spec 000 §2.4, best 2 of the
      last 8 round trips averaged, slewed) from its pongs with peer 0.
    * ``T`` in a pong is the answering peer's local time when it answers, and the hold time ``I``
      is 0: a sans-I/O peer answers inside ``receive`` and cannot see when the driver sends.
      A driver that holds datagrams adds its hold to the RTT and half of it to the offset error.
    * A peer is *synchronised* once it has one valid pong from peer 0 that carried an epoch;
      peer 0 is synchronised from its first tick. Before that ``session_time`` is ``None``.
    * Every peer pings every other peer every ``ping_interval`` (default 0.2 s; the first ping at
      the first tick) and keeps a smoothed RTT per peer (RFC 6298 gains: 1/8 for the mean, 1/4
      for the deviation). "Average RTT" in lockstep is that smoothed mean.
    * Decoders never raise: a short, long or non-finite message decodes to ``None``.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Final

from lagless.transport.clocksync import CristianClock, CristianConfig

__all__ = [
    "KIND_PING",
    "KIND_PONG",
    "PeerClock",
    "Ping",
    "Pong",
    "decode_clock_message",
    "encode_clock_message",
]

KIND_PING: Final = 0xC0  # first byte of a ping
KIND_PONG: Final = 0xC1  # first byte of a pong
_PING: Final = struct.Struct("<Bd")  # kind, sender's local time (s)
_PONG: Final = struct.Struct(
    "<BddBd"
)  # kind, echoed time, responder's local time, has_epoch, epoch
RTT_GAIN: Final = 0.125  # weight of a new sample in the smoothed RTT (RFC 6298 alpha)
RTTVAR_GAIN: Final = 0.25  # weight of a new deviation sample (RFC 6298 beta)


@dataclass(frozen=True, slots=True)
class Ping:
    """A request: ``sent`` is the sender's local time, seconds."""

    sent: float


@dataclass(frozen=True, slots=True)
class Pong:
    """An answer: the echoed ``sent``, the responder's local time, and its epoch if it has one."""

    sent: float
    responder_time: float
    epoch: float | None


def encode_clock_message(message: Ping | Pong) -> bytes:
    """The bytes of a ping or pong (9 or 26 bytes)."""
    if isinstance(message, Ping):
        return _PING.pack(KIND_PING, message.sent)
    has_epoch = message.epoch is not None
    epoch = message.epoch if message.epoch is not None else 0.0
    return _PONG.pack(KIND_PONG, message.sent, message.responder_time, has_epoch, epoch)


def decode_clock_message(data: bytes) -> Ping | Pong | None:
    """Parse a ping or pong; ``None`` for anything else (wrong kind, size or a non-finite time)."""
    if len(data) == _PING.size and data[0] == KIND_PING:
        (_, sent) = _PING.unpack(data)
        return Ping(sent) if math.isfinite(sent) else None
    if len(data) == _PONG.size and data[0] == KIND_PONG:
        _, sent, responder, has_epoch, epoch = _PONG.unpack(data)
        if has_epoch > 1 or not all(math.isfinite(v) for v in (sent, responder, epoch)):
            return None
        return Pong(sent, responder, epoch if has_epoch else None)
    return None


class PeerClock:
    """RTT per peer and the session clock of one peer, sans-I/O.

    Args:
        peer: This peer's number (0 is the time reference).
        peers: How many peers take part.
        ping_interval: Seconds between two pings to the same peer, > 0.
    """

    def __init__(self, peer: int, peers: int, *, ping_interval: float = 0.2) -> None:
        if not 0 <= peer < peers:
            raise ValueError(f"peer must be in [0, {peers}), got {peer}")
        if not ping_interval > 0:
            raise ValueError(f"ping_interval must be > 0 s, got {ping_interval}")
        self.peer = peer
        self.peers = peers
        self.ping_interval = ping_interval
        self._cristian = CristianClock(config=CristianConfig(window=8, average_lowest=2))
        self._epoch: float | None = None
        self._next_ping: float | None = None
        self._srtt: list[float | None] = [None] * peers
        self._rttvar: list[float] = [0.0] * peers
        self.rtt_samples = 0
        """Valid round trips measured so far."""

    @property
    def synchronised(self) -> bool:
        """True once ``session_time`` has a value (peer 0: after its first tick)."""
        return self._epoch is not None and (self.peer == 0 or self._cristian.synchronized)

    def session_time(self, now: float) -> float | None:
        """Peer 0's clock minus its epoch at local time ``now``, seconds; ``None`` until synced."""
        if not self.synchronised or self._epoch is None:
            return None
        reference = now if self.peer == 0 else self._cristian.server_time(now)
        return reference - self._epoch

    def offset(self, now: float) -> float:
        """The estimated ``peer 0 clock - local clock`` in seconds (0 on peer 0)."""
        return 0.0 if self.peer == 0 else self._cristian.applied_offset(now)

    def rtt(self, other: int) -> float | None:
        """The smoothed RTT to peer ``other`` in seconds, ``None`` before the first sample."""
        return self._srtt[other]

    def rtt_deviation(self, other: int) -> float:
        """The smoothed mean deviation of the RTT to ``other``, seconds (0 before samples)."""
        return self._rttvar[other]

    def max_rtt(self, among: set[int] | None = None) -> float | None:
        """The largest smoothed RTT to any measured peer (of ``among``), or ``None``."""
        values = [
            r
            for i, r in enumerate(self._srtt)
            if r is not None and i != self.peer and (among is None or i in among)
        ]
        return max(values) if values else None

    def tick(self, now: float) -> list[tuple[int, bytes]]:
        """Start the clock on the first call; return the pings due at ``now`` as (peer, bytes)."""
        if self.peer == 0 and self._epoch is None:
            self._epoch = now
        if self._next_ping is not None and now < self._next_ping:
            return []
        self._next_ping = now + self.ping_interval
        ping = encode_clock_message(Ping(now))
        return [(other, ping) for other in range(self.peers) if other != self.peer]

    def receive(self, source: int, message: Ping | Pong, now: float) -> bytes | None:
        """Take a decoded ping or pong from ``source``; return the pong to send back, if any."""
        if isinstance(message, Ping):
            epoch = self._epoch if self.peer == 0 else None
            return encode_clock_message(Pong(message.sent, now, epoch))
        rtt = now - message.sent
        if not 0.0 <= rtt < 60.0:
            return None
        self.rtt_samples += 1
        srtt = self._srtt[source]
        if srtt is None:
            self._srtt[source] = rtt
            self._rttvar[source] = rtt / 2.0
        else:
            self._rttvar[source] += RTTVAR_GAIN * (abs(srtt - rtt) - self._rttvar[source])
            self._srtt[source] = srtt + RTT_GAIN * (rtt - srtt)
        if source == 0 and self.peer != 0 and message.epoch is not None:
            self._cristian.on_sample(message.sent, message.responder_time, now)
            self._epoch = message.epoch
        return None
