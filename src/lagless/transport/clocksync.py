"""Estimate a peer's (server's) clock from round trips: spec 004's 32-sample filter and Cristian's.

Implements spec 004 §4.4.2 "Clock synchronization" (`Spec004Clock`: keep the last 32 RTT samples,
correct only on a sample whose RTT is within the 20th percentile and whose offset differs from the
running clock by more than 5 ms) and spec 000 §2.4 (`CristianClock`: ``offset = T + (t1 - t0 - I)/2
- t1``, best of the last N round trips), plus DESIGN.md "slew rather than jump where possible". Both
take samples ``on_sample(t_send, server_time, t_receive)`` in client-local seconds and answer
``server_time(now)``. `encode_time_message` / `decode_time_message` carry the request / response.

Sign convention: ``offset = server clock - local clock``, so ``server_time(now) = now + offset``.
Spec 000 calls ``D = local - server``; ``offset == -D``.

Decisions on ambiguities:

* Spec 004 step 7: the one-way latency is half of the *current* sample's RTT, not the window mean
  (the spec's suggestion) (``test_spec004_clock_sync.py::test_offset_uses_current_sample``).
* "Within the 20th percentile" is rank-based and inclusive: with ``n`` samples in the window (the
  new one included), the new RTT passes if it is <= the ``ceil(0.2 * n)``-th smallest; ties pass
  (``test_spec004_clock_sync.py::test_percentile_gate_rank``).
* Before 32 samples exist the same rule runs on the partial window, and the very first valid sample
  sets the clock at once, so ``server_time`` is usable after one round trip
  (``test_spec004_clock_sync.py::test_first_sample_sets_clock``).
* The dead band compares against the clock as it runs now (mid-slew value), as spec 004 step 9 says
  ("A's value"); a difference of exactly 5 ms does not correct
  (``test_spec004_clock_sync.py::test_dead_band``).
* Slewing: a correction whose size is at most ``max_slew`` (0.1 s) moves the offset linearly at
  ``slew_rate`` seconds per second (0.05: the served clock runs 5 % fast or slow, so it never goes
  backwards); bigger corrections, the first sample and ``slew_rate = 0`` jump
  (``test_spec004_clock_sync.py::test_slew_then_jump``).
* Cristian: ``T`` is the server time when the reply is *sent* and ``I`` the server's hold time, so
  the one-way delay is ``(t1 - t0 - I) / 2`` (spec 000 §2.4 note). The estimate is the mean offset
  of the ``average_lowest`` lowest-RTT samples among the last ``window``: 1 (default) is the
  min-RTT rule; more follows spec 000's "discard outliers and average"
  (``test_cristian.py::test_average_lowest``).
* Samples with a negative RTT or a non-finite value are ignored and counted in ``rejected``; they
  come from the network and never raise (``test_cristian.py::test_bad_samples_rejected``).

Measured (seeded simulations in the tests; true offset 12.345 s; one-way delays uniform):

* Asymmetric latency biases every round-trip method by ``(up - down) / 2``, which the client cannot
  observe. 20 ms up / 80 ms down (+/- 5 ms each way), mean error over 5 seeds: -30.1 ms for
  `CristianClock` (per seed -30.00 .. -30.19) and -30.6 ms for `Spec004Clock` (per seed
  -29.3 .. -31.7), against the predicted -30.0 ms (``test_cristian.py::test_asymmetric_bias``,
  ``test_spec004_clock_sync.py::test_asymmetric_bias``).
* Symmetric 40 ms +/- 20 ms each way, 20 seeds x 600 round trips: both are unbiased (mean error
  -0.01 ms spec 004, -0.04 ms Cristian), but the error at any instant is not within 2 ms. Final
  |error|: `Spec004Clock` mean 4.1 ms, max 11.7 ms (its 5 ms dead band plus the asymmetry of the
  accepted samples bound it); `CristianClock` window 8 mean 3.2 ms, max 10.5 ms; window 32 with
  ``average_lowest=4`` mean 1.7 ms, max 6.7 ms. With +/- 2 ms jitter both stay within 2 ms,
  including after a 40 ms server clock step (``test_spec004_clock_sync.py::
  test_converges_within_2ms_after_server_step``, ``test_cristian.py::test_converges``).
"""

from __future__ import annotations

import enum
import heapq
import math
import struct
from collections import deque
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError, LocalProtocolError

__all__ = [
    "TIME_REQUEST_SIZE",
    "TIME_RESPONSE_SIZE",
    "CristianClock",
    "CristianConfig",
    "Spec004Clock",
    "Spec004ClockConfig",
    "TimeMessageKind",
    "TimeRequest",
    "TimeResponse",
    "decode_time_message",
    "encode_time_message",
]

SPEC004_WINDOW: Final = 32  # samples (spec 004 §4.4.2 step 6)
SPEC004_PERCENTILE: Final = 0.2  # fraction (spec 004 §4.4.2 step 9)
SPEC004_DEAD_BAND: Final = 0.005  # seconds (spec 004 §4.4.2 step 9)
DEFAULT_SLEW_RATE: Final = 0.05  # seconds of offset per second (DESIGN.md: slew where possible)
DEFAULT_MAX_SLEW: Final = 0.1  # seconds; larger corrections jump


def _check_slew(slew_rate: float, max_slew: float) -> None:
    if not (math.isfinite(slew_rate) and 0.0 <= slew_rate <= 0.5):
        raise ConfigError(f"slew_rate must be in [0, 0.5] seconds per second, got {slew_rate}")
    if not (math.isfinite(max_slew) and 0.0 <= max_slew <= 10.0):
        raise ConfigError(f"max_slew must be in [0, 10] seconds, got {max_slew}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Spec004ClockConfig:
    """Configuration of `Spec004Clock` (defaults are spec 004 §4.4.2's numbers)."""

    window: int = SPEC004_WINDOW
    """Number of most recent RTT samples kept, in [1, 1024] (spec 004: 32)."""
    percentile: float = SPEC004_PERCENTILE
    """Fraction of the window a sample's RTT must rank within, in (0, 1] (spec 004: 0.2)."""
    dead_band: float = SPEC004_DEAD_BAND
    """Seconds; corrections of at most this size are skipped, in [0, 1] (spec 004: 5 ms)."""
    slew_rate: float = DEFAULT_SLEW_RATE
    """Seconds of offset change per second of local time while slewing, in [0, 0.5]; 0 jumps."""
    max_slew: float = DEFAULT_MAX_SLEW
    """Seconds; corrections larger than this jump instead of slewing, in [0, 10]."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not 1 <= self.window <= 1024:
            raise ConfigError(f"window must be in [1, 1024], got {self.window}")
        if not 0.0 < self.percentile <= 1.0:
            raise ConfigError(f"percentile must be in (0, 1], got {self.percentile}")
        if not (math.isfinite(self.dead_band) and 0.0 <= self.dead_band <= 1.0):
            raise ConfigError(f"dead_band must be in [0, 1] seconds, got {self.dead_band}")
        _check_slew(self.slew_rate, self.max_slew)


@dataclass(frozen=True, slots=True, kw_only=True)
class CristianConfig:
    """Configuration of `CristianClock` (spec 000 §2.4)."""

    window: int = 8
    """Number of most recent round trips kept, in [1, 1024]."""
    average_lowest: int = 1
    """Offsets of this many lowest-RTT samples in the window are averaged, in [1, window];
    1 is the min-RTT rule."""
    slew_rate: float = DEFAULT_SLEW_RATE
    """Seconds of offset change per second of local time while slewing, in [0, 0.5]; 0 jumps."""
    max_slew: float = DEFAULT_MAX_SLEW
    """Seconds; corrections larger than this jump instead of slewing, in [0, 10]."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not 1 <= self.window <= 1024:
            raise ConfigError(f"window must be in [1, 1024], got {self.window}")
        if not 1 <= self.average_lowest <= self.window:
            raise ConfigError(
                f"average_lowest must be in [1, window={self.window}], got {self.average_lowest}"
            )
        _check_slew(self.slew_rate, self.max_slew)


class _SlewedOffset:
    """An offset that moves linearly toward its target at a bounded rate (or jumps)."""

    __slots__ = ("_rate", "_start", "_start_time", "target")

    def __init__(self) -> None:
        self.target = 0.0
        self._start = 0.0
        self._start_time = 0.0
        self._rate = 0.0

    def value(self, now: float) -> float:
        gap = self.target - self._start
        if gap == 0.0 or self._rate == 0.0:
            return self.target
        step = self._rate * max(0.0, now - self._start_time)
        return self.target if step >= abs(gap) else self._start + math.copysign(step, gap)

    def jump(self, target: float) -> None:
        self.target = self._start = target

    def slew(self, target: float, now: float, rate: float) -> None:
        self._start = self.value(now)
        self._start_time = now
        self._rate = rate
        self.target = target


def _sample(t_send: float, server_time: float, t_receive: float, processing_time: float) -> float:
    """Return the RTT of a round trip, or NaN if the sample is unusable."""
    if not (
        math.isfinite(t_send)
        and math.isfinite(server_time)
        and math.isfinite(t_receive)
        and math.isfinite(processing_time)
        and processing_time >= 0.0
    ):
        return math.nan
    rtt = t_receive - t_send - processing_time
    return rtt if rtt >= 0.0 else math.nan


class _ClockBase:
    __slots__ = ("_offset", "corrections", "rejected", "samples")

    def __init__(self) -> None:
        self._offset = _SlewedOffset()
        self.samples = 0
        """Number of valid samples taken."""
        self.rejected = 0
        """Number of samples ignored (negative RTT or non-finite values)."""
        self.corrections = 0
        """Number of times the clock was set or started slewing to a new value."""

    @property
    def synchronized(self) -> bool:
        """True once a valid sample has set the clock."""
        return self.corrections > 0

    @property
    def offset(self) -> float:
        """Estimated ``server - local`` clock offset in seconds that the clock runs toward."""
        return self._offset.target

    def applied_offset(self, now: float) -> float:
        """The offset in seconds actually applied at local time ``now`` (differs while slewing)."""
        return self._offset.value(now)

    def server_time(self, now: float) -> float:
        """Estimate the server's clock in seconds at local time ``now``.

        Returns ``now`` itself before the first sample.
        """
        return now + self._offset.value(now)

    def _correct(self, target: float, now: float, slew_rate: float, max_slew: float) -> None:
        current = self._offset.value(now)
        if self.corrections == 0 or slew_rate == 0.0 or abs(target - current) > max_slew:
            self._offset.jump(target)
        else:
            self._offset.slew(target, now, slew_rate)
        self.corrections += 1


class Spec004Clock(_ClockBase):
    """Spec 004 §4.4.2 clock synchronisation: 32 samples, 20th-percentile gate, 5 ms dead band."""

    __slots__ = ("_config", "_rtts")

    def __init__(self, *, config: Spec004ClockConfig | None = None) -> None:
        """Create an unsynchronised clock.

        Args:
            config: Window, gate and slew settings; defaults to spec 004's numbers.
        """
        super().__init__()
        self._config = config if config is not None else Spec004ClockConfig()
        self._rtts: deque[float] = deque(maxlen=self._config.window)

    def on_sample(
        self,
        t_send: float,
        server_time: float,
        t_receive: float,
        *,
        processing_time: float = 0.0,
    ) -> bool:
        """Take one round trip and correct the clock if spec 004 step 9 allows.

        Args:
            t_send: Local time in seconds when the request (packet) was sent.
            server_time: The peer's clock in seconds carried by the reply.
            t_receive: Local time in seconds when the reply arrived.
            processing_time: Seconds the peer held the request before replying (0 in spec 004).

        Returns:
            True if the clock was corrected (set or started slewing).
        """
        rtt = _sample(t_send, server_time, t_receive, processing_time)
        if math.isnan(rtt):
            self.rejected += 1
            return False
        self.samples += 1
        rtts = self._rtts
        rtts.append(rtt)
        config = self._config
        rank = max(1, math.ceil(config.percentile * len(rtts)))
        if rtt > heapq.nsmallest(rank, rtts)[-1]:
            return False
        # Steps 7-8: remote time ~ remote stamp + half this sample's RTT.
        estimate = server_time + rtt / 2.0 - t_receive
        if self.corrections and abs(estimate - self._offset.value(t_receive)) <= config.dead_band:
            return False
        self._correct(estimate, t_receive, config.slew_rate, config.max_slew)
        return True


class CristianClock(_ClockBase):
    """Cristian's pull algorithm (spec 000 §2.4): the offset of the best recent round trip(s)."""

    __slots__ = ("_config", "_window")

    def __init__(self, *, config: CristianConfig | None = None) -> None:
        """Create an unsynchronised clock.

        Args:
            config: Window, averaging and slew settings; defaults to `CristianConfig()`.
        """
        super().__init__()
        self._config = config if config is not None else CristianConfig()
        self._window: deque[tuple[float, float]] = deque(maxlen=self._config.window)

    def on_sample(
        self,
        t_send: float,
        server_time: float,
        t_receive: float,
        *,
        processing_time: float = 0.0,
    ) -> bool:
        """Take one round trip and re-estimate the offset.

        Args:
            t_send: Local time in seconds when the request was sent (``T_S``).
            server_time: Server time in seconds when the reply was sent (``T``).
            t_receive: Local time in seconds when the reply arrived (``T_R``).
            processing_time: Seconds the server held the request (``I``), >= 0.

        Returns:
            True if the estimate changed (the clock was set or started slewing).
        """
        rtt = _sample(t_send, server_time, t_receive, processing_time)
        if math.isnan(rtt):
            self.rejected += 1
            return False
        self.samples += 1
        self._window.append((rtt, server_time + rtt / 2.0 - t_receive))
        best = heapq.nsmallest(self._config.average_lowest, self._window)
        estimate = math.fsum(o for _, o in best) / len(best)
        if self.corrections and estimate == self._offset.target:
            return False
        self._correct(estimate, t_receive, self._config.slew_rate, self._config.max_slew)
        return True


class TimeMessageKind(enum.IntEnum):
    """First byte of a time-sync message."""

    REQUEST = 1
    """Client to server: `TimeRequest`."""
    RESPONSE = 2
    """Server to client: `TimeResponse`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeRequest:
    """A clock-sync request (spec 000 §2.4 pull); the server echoes ``client_time`` back."""

    client_time: float
    """Client-local send time ``T_S`` in seconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TimeResponse:
    """A clock-sync reply.

    The client feeds it as ``on_sample(client_time, server_time, now, processing_time=...)``.
    """

    client_time: float
    """The request's ``client_time``, echoed, in seconds."""
    server_time: float
    """Server clock in seconds when this reply was sent (``T``)."""
    processing_time: float
    """Seconds between the request's arrival and this reply's sending (``I``), >= 0."""


_REQUEST: Final = struct.Struct("<Bd")
_RESPONSE: Final = struct.Struct("<Bddd")
TIME_REQUEST_SIZE: Final = _REQUEST.size  # bytes
TIME_RESPONSE_SIZE: Final = _RESPONSE.size  # bytes


def encode_time_message(message: TimeRequest | TimeResponse) -> bytes:
    """Write a time-sync message (``TIME_REQUEST_SIZE`` or ``TIME_RESPONSE_SIZE`` bytes).

    Args:
        message: The message.

    Returns:
        Kind byte then little-endian float64 fields.

    Raises:
        LocalProtocolError: A time is not finite, or ``processing_time`` is negative.
    """
    if isinstance(message, TimeRequest):
        if not math.isfinite(message.client_time):
            raise LocalProtocolError(f"client_time must be finite, got {message.client_time}")
        return _REQUEST.pack(TimeMessageKind.REQUEST, message.client_time)
    for name in ("client_time", "server_time", "processing_time"):
        value = getattr(message, name)
        if not math.isfinite(value):
            raise LocalProtocolError(f"{name} must be finite, got {value}")
    if message.processing_time < 0.0:
        raise LocalProtocolError(f"processing_time must be >= 0, got {message.processing_time}")
    return _RESPONSE.pack(
        TimeMessageKind.RESPONSE, message.client_time, message.server_time, message.processing_time
    )


def decode_time_message(
    data: bytes | bytearray | memoryview, offset: int = 0
) -> tuple[TimeRequest | TimeResponse, int] | None:
    """Read a time-sync message at ``offset``; never raises on any bytes.

    Args:
        data: Received bytes.
        offset: Where the message starts.

    Returns:
        ``(message, end)`` with ``end`` just past it, or None if the bytes are short, the kind is
        unknown, a time is not finite or ``processing_time`` is negative.
    """
    if offset < 0 or len(data) - offset < _REQUEST.size:
        return None
    kind = data[offset]
    if kind == TimeMessageKind.REQUEST:
        _, client_time = _REQUEST.unpack_from(data, offset)
        if not math.isfinite(client_time):
            return None
        return TimeRequest(client_time=client_time), offset + _REQUEST.size
    if kind != TimeMessageKind.RESPONSE or len(data) - offset < _RESPONSE.size:
        return None
    _, client_time, server_time, processing_time = _RESPONSE.unpack_from(data, offset)
    if not (
        math.isfinite(client_time)
        and math.isfinite(server_time)
        and math.isfinite(processing_time)
        and processing_time >= 0.0
    ):
        return None
    response = TimeResponse(
        client_time=client_time, server_time=server_time, processing_time=processing_time
    )
    return response, offset + _RESPONSE.size
