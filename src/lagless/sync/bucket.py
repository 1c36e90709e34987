"""MiMaze bucket synchronisation: fixed periods, a general delay, late ADUs dropped, last reused.

Implements spec 000 §2.3 "Bucket synchronisation" (Gautier & Diot 1998), issue 15 item 3, as a
sans-I/O `lagless.sync.contract.SyncPeer`:

* Session time (peer 0's clock, `lagless.sync.clock.PeerClock`) is cut into periods of
  ``frame_period`` seconds (MiMaze: 40 ms, 25 per second); period ``b`` has one *bucket*.
* Each tick the peer sends its player's input as the *ADU* (application data unit) of the
  current period's bucket to every other peer, and files it in its own bucket.
* Bucket ``b`` is *processed* (stepped into the shared state, one game frame per bucket) once
  session time reaches ``b * frame_period + general_delay`` (default 100 ms). A player with no
  ADU in the bucket plays its last received ADU again (``substituted`` counts these); an ADU that
  arrives for a bucket already processed is discarded (``stats.late_discarded``). The peer never
  waits: ``stats.stall_frames`` stays 0 (spec: "sacrifices consistency", unlike lockstep).
* The local player is shown without delay: ``displayed_state`` is the processed state stepped on
  through the buckets not yet processed, with this player's own ADUs and every other player's
  newest ADU (their last one reused: dead reckoning of the input).

Units: seconds (float); buckets and frames are integers from 0.

Decisions:
    * An ADU is the player's input (bytes), not its entity's state: the game is the shared
      deterministic game, so a lost or late ADU makes the peers step different inputs and their
      processed states stay apart from then on (what the spec calls "no error correction").
      ``processed_state`` and ``processed_checksums`` expose the shared, delayed view.
    * Two ADUs of one player for one bucket (two ticks in one period): the later arrival wins;
      a period without a tick has no own ADU, so every peer, this one included, reuses the last.
    * The bucket period is the driver's frame period: one tick, one bucket, one game frame
      (pass ``frame_period=0.04`` for MiMaze's 25 Hz).
    * ``adaptive_delay``: the general delay follows the worst link, ``frame_period + max over
      peers of (srtt / 2 + 2 rttvar)`` clamped to ``[min_delay, max_delay]``, re-evaluated
      every tick (spec: "must follow the worst link and may need adapting"); before the first
      RTT sample, and without ``adaptive_delay``, it is ``general_delay``.
    * Clocks: a peer sends no ADU and processes nothing until its session clock is synchronised
      (peer 0 from its first tick, the others after their first pong from peer 0); buckets it
      missed meanwhile are processed on the first synchronised tick with what arrived, at most
      ``MAX_CATCHUP`` per tick.
    * ``stats.input_delays`` holds 0.0 for every local input change: it is displayed on the tick
      that received it. The delay other players see is ``general_delay``.
    * ADUs for buckets more than ``MAX_AHEAD`` past the last processed one are garbage (counted),
      which bounds memory; decoders never raise.
"""

from __future__ import annotations

import math
import random
import struct
from collections import deque
from dataclasses import dataclass
from typing import Final, TypeVar

from lagless.errors import ConfigError
from lagless.sync.contract import DeterministicGame
from lagless.sync.peer_base import ClockedPeer

__all__ = [
    "KIND_ADU",
    "MAX_AHEAD",
    "MAX_CATCHUP",
    "Adu",
    "BucketConfig",
    "BucketPeer",
    "decode_adu",
    "encode_adu",
]

S = TypeVar("S")

KIND_ADU: Final = 0x20  # first byte of an ADU
MAX_INPUT: Final = 64  # bytes of one ADU's input at most
MAX_AHEAD: Final = 512  # buckets past the processed one an ADU may be for
MAX_CATCHUP: Final = 256  # buckets processed in one tick at most
HISTORY: Final = 4096  # processed checksums kept
_ADU: Final = struct.Struct("<BIB")  # kind, bucket, input length


@dataclass(frozen=True, slots=True)
class Adu:
    """One player's ADU: its input for ``bucket``."""

    bucket: int
    input: bytes


def encode_adu(adu: Adu) -> bytes:
    """The bytes of an ADU (6 bytes plus the input).

    Raises:
        ValueError: The input is longer than ``MAX_INPUT`` bytes or the bucket is out of range.
    """
    if len(adu.input) > MAX_INPUT:
        raise ValueError(f"an ADU input has at most {MAX_INPUT} bytes, got {len(adu.input)}")
    return _ADU.pack(KIND_ADU, adu.bucket, len(adu.input)) + adu.input


def decode_adu(data: bytes) -> Adu | None:
    """Parse an ADU; ``None`` for anything malformed (never raises)."""
    if len(data) < _ADU.size or data[0] != KIND_ADU:
        return None
    _, bucket, length = _ADU.unpack_from(data)
    if length > MAX_INPUT or len(data) != _ADU.size + length:
        return None
    return Adu(bucket, bytes(data[_ADU.size :]))


@dataclass(frozen=True, slots=True)
class BucketConfig:
    """Settings of a `BucketPeer` (seconds).

    Attributes:
        general_delay: Seconds from a bucket's period start to its processing (fixed mode).
        adaptive_delay: Follow the worst link instead (see the module docstring).
        min_delay: Lower bound of the adaptive delay, seconds.
        max_delay: Upper bound of the adaptive delay, seconds.
        ping_interval: Seconds between clock/RTT pings to each peer.
    """

    general_delay: float = 0.1
    adaptive_delay: bool = False
    min_delay: float = 0.04
    max_delay: float = 1.0
    ping_interval: float = 0.2

    def __post_init__(self) -> None:
        """Check the ranges; raise ``ConfigError`` naming the field."""
        if not 0 <= self.general_delay <= 10:
            raise ConfigError(f"general_delay must be in [0, 10] s, got {self.general_delay}")
        if not 0 <= self.min_delay <= self.max_delay <= 10:
            raise ConfigError(
                f"min_delay and max_delay must satisfy 0 <= min <= max <= 10 s, got "
                f"{self.min_delay}, {self.max_delay}"
            )
        if not self.ping_interval > 0:
            raise ConfigError(f"ping_interval must be > 0 s, got {self.ping_interval}")


class BucketPeer(ClockedPeer[S]):
    """One bucket-synchronisation participant (a ``SyncPeer``); see the module docstring.

    Args:
        game: The deterministic game every peer steps (one frame per bucket).
        peer: This peer's number, ``0 .. peers - 1`` (0 is the time reference).
        peers: How many peers take part (the game's player count).
        rng: Accepted for the registry's uniform signature; bucket sync makes no random choice.
        frame_period: The bucket period, seconds (MiMaze: 0.04).
        config: Delay and clock settings.
    """

    def __init__(
        self,
        game: DeterministicGame[S],
        peer: int,
        peers: int,
        *,
        rng: random.Random | None = None,
        frame_period: float = 0.04,
        config: BucketConfig | None = None,
    ) -> None:
        del rng
        self.config = config if config is not None else BucketConfig()
        self._start(game, peer, peers, frame_period, self.config.ping_interval)
        if not 0.001 <= frame_period <= 10:
            raise ConfigError(f"frame_period must be in [0.001, 10] s, got {frame_period}")
        self._processed = 0
        self._buckets: dict[int, list[bytes | None]] = {}
        self._last: list[bytes] = [game.neutral_input] * peers
        self._view = self._state
        self._view_frame = 0
        self._simulated_upto = 0
        self._last_input: bytes | None = None
        self.delay = self.config.general_delay
        """The general delay in force, seconds."""
        self.substituted = 0
        """ADUs missing at processing time and replaced by the player's last one."""
        self.processed_checksums: deque[tuple[int, int]] = deque(maxlen=HISTORY)
        """(bucket, checksum of the state after processing it), the newest ``HISTORY``."""

    @property
    def displayed_frame(self) -> int:
        """The bucket of ``displayed_state`` (the current period)."""
        return self._view_frame

    @property
    def displayed_state(self) -> S:
        """The local view: processed buckets plus the pending ones, own inputs undelayed."""
        return self._view

    @property
    def processed_frame(self) -> int:
        """Buckets processed so far (the frame of ``processed_state``)."""
        return self._processed

    @property
    def processed_state(self) -> S:
        """The delayed shared state, equal on every peer unless ADUs were late or lost."""
        return self._state

    def tick(self, now: float, local_input: bytes) -> None:
        """Send this period's ADU, process every bucket that is due, rebuild the local view."""
        self._check_input(local_input, MAX_INPUT)
        self._send_pings(now, frozenset())
        session = self._clock.session_time(now)
        changed = local_input != self._last_input
        self._last_input = local_input
        if session is None:
            return
        current = max(0, math.floor(session / self._period))
        if current >= self._processed:
            self._file(self._peer, current, local_input)
            payload = encode_adu(Adu(current, local_input))
            for other in range(self._peers):
                if other != self._peer:
                    self._emit(other, payload)
        if self.config.adaptive_delay:
            self.delay = self._adapted_delay()
        due = math.floor((session - self.delay) / self._period) + 1
        for _ in range(min(due - self._processed, MAX_CATCHUP)):
            self._process()
        self._rebuild_view(min(current + 1, self._processed + MAX_CATCHUP))
        if changed:
            self._stats.input_delays.append(0.0)

    def receive(self, source: int, payload: bytes, now: float) -> None:
        """A datagram from ``source``: a ping/pong or an ADU; garbage is counted."""
        if not self._screen(source, payload, now):
            return
        adu = decode_adu(payload)
        if adu is None or adu.bucket >= self._processed + MAX_AHEAD:
            self.garbage += 1
            return
        if adu.bucket < self._processed:
            self._stats.late_discarded += 1
            return
        self._file(source, adu.bucket, adu.input)

    def _file(self, player: int, bucket: int, data: bytes) -> None:
        slots = self._buckets.get(bucket)
        if slots is None:
            slots = self._buckets[bucket] = [None] * self._peers
        slots[player] = data

    def _adapted_delay(self) -> float:
        worst: float | None = None
        for other in range(self._peers):
            srtt = self._clock.rtt(other)
            if other != self._peer and srtt is not None:
                sample = srtt / 2.0 + 2.0 * self._clock.rtt_deviation(other)
                worst = sample if worst is None else max(worst, sample)
        if worst is None:
            return self.config.general_delay
        wanted = self._period + worst
        return min(self.config.max_delay, max(self.config.min_delay, wanted))

    def _inputs(self, slots: list[bytes | None] | None, last: list[bytes]) -> list[bytes]:
        if slots is None:
            return list(last)
        return [last[p] if data is None else data for p, data in enumerate(slots)]

    def _process(self) -> None:
        bucket = self._processed
        slots = self._buckets.pop(bucket, None)
        inputs = self._inputs(slots, self._last)
        if slots is None:
            self.substituted += self._peers
        else:
            self.substituted += sum(data is None for data in slots)
        self._last = inputs
        self._state = self._game.step(self._state, inputs, bucket)
        self._count_step(bucket)
        self._processed = bucket + 1
        self.processed_checksums.append((bucket, self._game.checksum(self._state)))

    def _rebuild_view(self, upto: int) -> None:
        """Step a copy of the processed state through buckets ``processed .. upto - 1``."""
        if upto <= self._processed:
            self._view, self._view_frame = self._state, self._processed
            return
        view = self._game.load(self._game.save(self._state))
        last = list(self._last)
        for bucket in range(self._processed, upto):
            last = self._inputs(self._buckets.get(bucket), last)
            view = self._game.step(view, last, bucket)
            self._count_step(bucket)
        self._view, self._view_frame = view, upto

    def _count_step(self, bucket: int) -> None:
        self._stats.frames_simulated += 1
        if bucket < self._simulated_upto:
            self._stats.frames_resimulated += 1
        else:
            self._simulated_upto = bucket + 1
