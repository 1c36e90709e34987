"""Link estimators: smoothed RTT and jitter, packet loss, and byte rates over sliding windows.

Implements spec 004 §4.4.2 ("RTT exposed", "bitrate exposed") and DESIGN.md "Transport defaults"
("Stats per connection: RTT (smoothed, min, max), jitter, loss, sent/received/acked bytes per
second"). All inputs are pure values (``now`` in seconds, sizes in bytes); nothing reads a clock.

Decisions on ambiguities:

* Smoothed RTT and jitter follow RFC 6298 §2 rather than spec 004, which only says "average RTT"
  without a method: the first sample sets ``srtt = R`` and ``rttvar = R / 2``; later samples do
  ``rttvar = (1 - beta) * rttvar + beta * |srtt - R|`` then
  ``srtt = (1 - alpha) * srtt + alpha * R`` with ``alpha = 1/8`` and ``beta = 1/4``. Jitter is
  ``rttvar``, the smoothed mean deviation (``test_rtt.py::test_rfc6298_known_sequence``).
* ``rtt_min`` and ``rtt_max`` cover the last ``minmax_window`` samples, not the connection's
  lifetime, so one old spike does not stick forever (``test_rtt.py::test_min_max_window_slides``).
  They are kept in monotonic deques (each sample enters and leaves each deque once), so a sample
  and a read are amortised O(1), not a scan of the window: the connection reads ``rtt_min`` on
  every acknowledgement.
* Negative or non-finite RTT samples are ignored and counted in ``RttEstimator.rejected``
  (``test_rtt.py::test_bad_samples_ignored``).
* Loss is the fraction of lost packets among the last ``window`` resolved packets (acked or lost),
  counted by packets, not by time (``test_rtt.py::test_loss_window``).
* Byte rates use a ring of time buckets so memory stays bounded at any packet rate. A rate is the
  bytes in the last ``buckets`` buckets (the current one included) divided by the span they cover,
  which is ``window`` minus the unelapsed part of the current bucket. During the first window after
  creation the span still counts as a full window, so rates start low rather than spiking
  (``test_rtt.py::test_bandwidth_constant_rate``,
  ``test_rtt.py::test_bandwidth_startup_underestimates``).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from itertools import repeat
from typing import Final

from lagless.errors import ConfigError, LocalProtocolError

__all__ = [
    "BandwidthConfig",
    "BandwidthMeter",
    "LinkStatistics",
    "LossEstimator",
    "RttConfig",
    "RttEstimator",
    "link_statistics",
]

RFC6298_ALPHA: Final = 0.125  # gain of the smoothed RTT (RFC 6298 §2.3)
RFC6298_BETA: Final = 0.25  # gain of the RTT variation (RFC 6298 §2.3)


@dataclass(frozen=True, slots=True, kw_only=True)
class RttConfig:
    """Configuration of `RttEstimator` (RFC 6298 §2 gains)."""

    alpha: float = RFC6298_ALPHA
    """Gain of the smoothed RTT, in (0, 1]; RFC 6298 §2.3 uses 1/8."""
    beta: float = RFC6298_BETA
    """Gain of the mean deviation (jitter), in (0, 1]; RFC 6298 §2.3 uses 1/4."""
    minmax_window: int = 64
    """Number of most recent samples that ``rtt_min`` / ``rtt_max`` cover, in [1, 65536]."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not 0.0 < self.alpha <= 1.0:
            raise ConfigError(f"alpha must be in (0, 1], got {self.alpha}")
        if not 0.0 < self.beta <= 1.0:
            raise ConfigError(f"beta must be in (0, 1], got {self.beta}")
        if not 1 <= self.minmax_window <= 65536:
            raise ConfigError(f"minmax_window must be in [1, 65536], got {self.minmax_window}")


class RttEstimator:
    """Smoothed round-trip time, jitter (mean deviation) and windowed min / max, in seconds.

    Implements the RFC 6298 §2 estimator (see the module docstring for why not spec 004's).
    """

    __slots__ = ("_config", "_maxima", "_minima", "_rttvar", "_srtt", "rejected", "samples")

    def __init__(self, *, config: RttConfig | None = None) -> None:
        """Create an estimator with no samples.

        Args:
            config: Gains and window; defaults to `RttConfig()`.
        """
        self._config = config if config is not None else RttConfig()
        self._srtt = 0.0
        self._rttvar = 0.0
        self._minima: deque[tuple[int, float]] = deque()  # (sample number, RTT), RTT increasing
        self._maxima: deque[tuple[int, float]] = deque()  # (sample number, RTT), RTT decreasing
        self.samples = 0
        """Number of samples taken."""
        self.rejected = 0
        """Number of negative or non-finite samples ignored."""

    def on_sample(self, rtt: float) -> bool:
        """Take one RTT sample.

        Args:
            rtt: Measured round-trip time in seconds (>= 0, finite).

        Returns:
            True if the sample was used, False if it was negative or non-finite (then counted in
            ``rejected``).
        """
        if not 0.0 <= rtt < math.inf:  # also NaN; compiled, math.isfinite is a generic call
            self.rejected += 1
            return False
        if self.samples == 0:
            # RFC 6298 §2.2: first measurement.
            self._srtt = rtt
            self._rttvar = rtt / 2.0
        else:
            # RFC 6298 §2.3: rttvar is updated with the old srtt, then srtt.
            beta = self._config.beta
            alpha = self._config.alpha
            self._rttvar = (1.0 - beta) * self._rttvar + beta * abs(self._srtt - rtt)
            self._srtt = (1.0 - alpha) * self._srtt + alpha * rtt
        number = self.samples
        oldest = number - self._config.minmax_window
        minima = self._minima
        while minima and minima[-1][1] >= rtt:
            minima.pop()
        minima.append((number, rtt))
        if minima[0][0] <= oldest:
            minima.popleft()
        maxima = self._maxima
        while maxima and maxima[-1][1] <= rtt:
            maxima.pop()
        maxima.append((number, rtt))
        if maxima[0][0] <= oldest:
            maxima.popleft()
        self.samples = number + 1
        return True

    @property
    def has_samples(self) -> bool:
        """True once at least one valid sample was taken."""
        return self.samples > 0

    @property
    def rtt(self) -> float:
        """Smoothed RTT in seconds (0.0 before the first sample)."""
        return self._srtt

    @property
    def jitter(self) -> float:
        """Smoothed mean deviation of the RTT (RFC 6298 RTTVAR) in seconds (0.0 before samples)."""
        return self._rttvar

    @property
    def rtt_min(self) -> float:
        """Smallest RTT of the last ``minmax_window`` samples in seconds (0.0 before samples)."""
        return self._minima[0][1] if self._minima else 0.0

    @property
    def rtt_max(self) -> float:
        """Largest RTT among the last ``minmax_window`` samples, in seconds (0.0 before samples)."""
        return self._maxima[0][1] if self._maxima else 0.0


class LossEstimator:
    """Fraction of packets lost among the last ``window`` packets whose fate is known."""

    __slots__ = ("_lost", "_outcomes")

    def __init__(self, *, window: int = 256) -> None:
        """Create an estimator with no outcomes.

        Args:
            window: Number of most recent outcomes kept, in [1, 65536].

        Raises:
            ConfigError: ``window`` out of range.
        """
        if not 1 <= window <= 65536:
            raise ConfigError(f"window must be in [1, 65536], got {window}")
        self._outcomes: deque[bool] = deque(maxlen=window)
        self._lost = 0

    def on_outcome(self, *, lost: bool) -> None:
        """Record the fate of one packet.

        Args:
            lost: True if the packet was reported lost, False if acked.
        """
        outcomes = self._outcomes
        if len(outcomes) == outcomes.maxlen and outcomes[0]:
            self._lost -= 1
        outcomes.append(lost)
        if lost:
            self._lost += 1

    def on_acked(self, count: int) -> None:
        """Record ``count`` packets acked (`on_outcome` with ``lost=False``, ``count`` times).

        Args:
            count: Number of packets newly acked, >= 0.
        """
        outcomes = self._outcomes
        if not self._lost:
            outcomes.extend(repeat(False, count))  # no loss in the window to age out
            return
        maxlen = outcomes.maxlen
        for _ in range(count):
            if len(outcomes) == maxlen and outcomes[0]:
                self._lost -= 1
            outcomes.append(False)

    def on_late_ack(self) -> None:
        """Take back the newest loss in the window: that packet was acked late, not lost."""
        outcomes = self._outcomes
        for back in range(len(outcomes) - 1, -1, -1):
            if outcomes[back]:
                outcomes[back] = False
                self._lost -= 1
                return

    @property
    def loss(self) -> float:
        """Lost fraction in [0, 1] over the window (0.0 with no outcomes)."""
        return self._lost / len(self._outcomes) if self._outcomes else 0.0

    @property
    def count(self) -> int:
        """Number of outcomes currently in the window."""
        return len(self._outcomes)

    def loss_over(self, min_count: int) -> float:
        """Lost fraction over at least ``min_count`` outcomes: lost / max(count, min_count).

        A few early outcomes do not make a large fraction: one loss in 5 packets is 1/32 with
        ``min_count`` 32 (``CongestionConfig.loss_min_outcomes``).
        """
        count = len(self._outcomes)
        if count < min_count:  # two comparisons: compiled, a three-argument max is a generic call
            count = min_count
        return self._lost / count if count > 0 else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class BandwidthConfig:
    """Configuration of `BandwidthMeter`."""

    window: float = 1.0
    """Length of the sliding window in seconds, in (0, 3600]."""
    buckets: int = 20
    """Number of time buckets the window is divided into (its resolution), in [1, 1000]."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not (math.isfinite(self.window) and 0.0 < self.window <= 3600.0):
            raise ConfigError(f"window must be in (0, 3600] seconds, got {self.window}")
        if not 1 <= self.buckets <= 1000:
            raise ConfigError(f"buckets must be in [1, 1000], got {self.buckets}")


class _BucketRing:
    """Bytes per time bucket over the last ``buckets`` buckets (memory bounded at any rate)."""

    __slots__ = ("_bytes", "_index")

    def __init__(self, buckets: int) -> None:
        self._index = [-1] * buckets
        self._bytes = [0] * buckets

    def total(self, bucket: int) -> int:
        oldest = bucket - len(self._index) + 1
        return sum(
            b for i, b in zip(self._index, self._bytes, strict=True) if oldest <= i <= bucket
        )


class BandwidthMeter:
    """Sent, received and acked bytes per second over a sliding time window."""

    __slots__ = ("_acked", "_bucket_width", "_config", "_received", "_sent")

    def __init__(self, *, config: BandwidthConfig | None = None) -> None:
        """Create a meter with nothing counted.

        Args:
            config: Window and resolution; defaults to `BandwidthConfig()`.
        """
        self._config = config if config is not None else BandwidthConfig()
        self._bucket_width = self._config.window / self._config.buckets
        self._sent = _BucketRing(self._config.buckets)
        self._received = _BucketRing(self._config.buckets)
        self._acked = _BucketRing(self._config.buckets)

    def _bucket(self, now: float) -> int:
        return math.floor(now / self._bucket_width)

    def _add(self, ring: _BucketRing, now: float, size: int) -> None:
        if size < 0:
            raise LocalProtocolError(f"size must be >= 0 bytes, got {size}")
        bucket = math.floor(now / self._bucket_width)
        index = ring._index
        slot = bucket % len(index)
        if index[slot] != bucket:
            index[slot] = bucket
            ring._bytes[slot] = size
        else:
            ring._bytes[slot] += size

    def on_sent(self, now: float, size: int) -> None:
        """Count ``size`` bytes sent at ``now`` (seconds).

        Raises:
            LocalProtocolError: ``size`` is negative.
        """
        self._add(self._sent, now, size)

    def on_received(self, now: float, size: int) -> None:
        """Count ``size`` bytes received at ``now`` (seconds).

        Raises:
            LocalProtocolError: ``size`` is negative.
        """
        # `_add` inlined: a connection calls this once per payload received
        if size < 0:
            raise LocalProtocolError(f"size must be >= 0 bytes, got {size}")
        bucket = math.floor(now / self._bucket_width)
        ring = self._received
        index = ring._index
        slot = bucket % len(index)
        if index[slot] != bucket:
            index[slot] = bucket
            ring._bytes[slot] = size
        else:
            ring._bytes[slot] += size

    def on_acked(self, now: float, size: int) -> None:
        """Count ``size`` bytes of packets acknowledged at ``now`` (seconds).

        Raises:
            LocalProtocolError: ``size`` is negative.
        """
        self._add(self._acked, now, size)

    def _rate(self, ring: _BucketRing, now: float) -> float:
        bucket = self._bucket(now)
        unelapsed = (bucket + 1) * self._bucket_width - now
        span = self._config.window - unelapsed
        return ring.total(bucket) / span

    def sent_bps(self, now: float) -> float:
        """Bytes per second sent over the window ending at ``now`` (seconds)."""
        return self._rate(self._sent, now)

    def received_bps(self, now: float) -> float:
        """Bytes per second received over the window ending at ``now`` (seconds)."""
        return self._rate(self._received, now)

    def acked_bps(self, now: float) -> float:
        """Bytes per second acknowledged over the window ending at ``now`` (seconds)."""
        return self._rate(self._acked, now)


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkStatistics:
    """A snapshot of one link's estimators (DESIGN.md "Stats per connection")."""

    rtt: float
    """Smoothed RTT in seconds (RFC 6298 SRTT)."""
    rtt_min: float
    """Smallest recent RTT in seconds."""
    rtt_max: float
    """Largest recent RTT in seconds."""
    jitter: float
    """Smoothed mean deviation of the RTT in seconds (RFC 6298 RTTVAR)."""
    loss: float
    """Fraction of recent packets lost, in [0, 1]."""
    sent_bps: float
    """Bytes per second sent."""
    received_bps: float
    """Bytes per second received."""
    acked_bps: float
    """Bytes per second acknowledged by the peer."""


def link_statistics(
    now: float, *, rtt: RttEstimator, loss: LossEstimator, bandwidth: BandwidthMeter
) -> LinkStatistics:
    """Take a `LinkStatistics` snapshot of three estimators.

    Args:
        now: Current time in seconds (ends the bandwidth window).
        rtt: The RTT estimator.
        loss: The loss estimator.
        bandwidth: The byte-rate meter.

    Returns:
        The frozen snapshot.
    """
    return LinkStatistics(
        rtt=rtt.rtt,
        rtt_min=rtt.rtt_min,
        rtt_max=rtt.rtt_max,
        jitter=rtt.jitter,
        loss=loss.loss,
        sent_bps=bandwidth.sent_bps(now),
        received_bps=bandwidth.received_bps(now),
        acked_bps=bandwidth.acked_bps(now),
    )
