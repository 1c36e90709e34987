"""One direction of a simulated network path: what happens to each datagram sent into it.

Implements spec 000 §3.7 (per-event latency, jitter "in % of latency", Bernoulli loss; reordering
through per-packet delays), spec 004 §5.3.3 (uniform jitter around a mean latency), spec 003 §6.3
(ns-2 style bandwidth-limited link with a FIFO queue) and STYLE §5 "netsim", plus the impairments a
game transport must survive (DESIGN.md "Bad input": burst loss, duplication, reordering).

Stages, in this order, for every ``send(size, now)``:

1. **MTU**: a datagram whose on-wire size exceeds ``mtu`` is dropped (``Fate.MTU_DROPPED``).
2. **Bandwidth queue**: with ``bandwidth`` set, datagrams are serialised one after another at
   ``bandwidth`` bytes/s through a FIFO queue; one that would push the backlog over
   ``queue_limit`` is tail-dropped (``Fate.QUEUE_DROPPED``). The datagram leaves the queue when its
   last byte is serialised.
3. **Loss**: the Gilbert-Elliott chain (``burst``) decides first (``Fate.BURST_LOST``), then the
   independent Bernoulli ``loss`` (``Fate.LOST``).
4. **Latency + jitter**: arrival = departure + ``latency`` + one jitter draw; with
   ``jitter.preserve_order`` the arrival is raised to the previous arrival, so jitter never
   reorders.
5. **Reorder**: with probability ``reorder`` the datagram gets ``reorder_delay`` extra seconds, so
   later datagrams can overtake it (this stage reorders even with ``preserve_order``).
6. **Duplication**: with probability ``duplicate`` a second copy arrives after its own latency and
   jitter draw (it does not use bandwidth again: duplication is modelled after the bottleneck).

Decisions:
    * On-wire size is ``size + 28`` (IPv4 + UDP headers) when ``count_headers`` is true, else
      ``size``; both the MTU check and the serialisation time use it
      (``test_link.py::test_mtu_counts_headers``,
      ``test_link.py::test_throughput_matches_bandwidth``).
    * The backlog is the number of bytes not yet serialised at ``now``. An idle link always accepts
      a datagram; otherwise it is dropped when ``backlog + wire_size > queue_limit``
      (``test_link.py::test_queue_tail_drop``).
    * Jitter shapes (spec 000 §7 leaves the distribution open and asks for it to be pluggable), all
      non-negative so ``latency`` is the minimum delay, as in spec 000 §3.7:
      ``uniform`` U(0, amount) (``test_link.py::test_uniform_jitter_bounds_and_mean``);
      ``normal`` half-normal |N(0, amount)|, mean ``amount·√(2/π)``
      (``test_link.py::test_normal_jitter_is_half_normal``); ``pareto`` Lomax (Pareto II) with
      shape ``PARETO_SHAPE`` = 3 and scale ``2·amount`` so its mean is ``amount`` and its variance
      finite (``test_link.py::test_pareto_jitter_mean``).
    * The Gilbert-Elliott chain starts in the good state, decides each datagram's loss from the
      current state, then steps (``test_link.py::test_gilbert_elliott_burst_length_and_rate``).
      Datagrams dropped by the MTU or the queue do not step it: they never reached the channel.
    * ``now`` must not go backwards between calls (``LocalProtocolError``): the queue is a
      function of time (``test_link.py::test_time_going_backwards_raises``).
    * ``Link`` is stateful (queue backlog, burst state, last arrival), unlike the pure
      ``(packet, now, rng) -> deliveries`` of STYLE §5: a FIFO queue and a Markov chain are state by
      nature. It stays sans-I/O: time and randomness are injected, nothing reads a clock.
    * Draws come from the injected generator in blocks of ``_BLOCK`` for speed; the stream is a
      pure function of the generator's seed and the sequence of calls.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np

from lagless.errors import ConfigError, LocalProtocolError

__all__ = [
    "PARETO_SHAPE",
    "UDP_IPV4_HEADER",
    "Fate",
    "GilbertElliott",
    "JitterConfig",
    "Link",
    "LinkConfig",
    "LinkOutcome",
]

UDP_IPV4_HEADER: Final = 28  # bytes: 20 IPv4 + 8 UDP (DESIGN.md "Units and numbers")
PARETO_SHAPE: Final = 3.0  # dimensionless Lomax shape; > 2 so the variance is finite
MIN_MTU: Final = 68  # bytes: smallest MTU every IPv4 link must carry (RFC 791)
_BLOCK: Final = 4096  # draws fetched from the generator at once
_JITTER_KINDS: Final = ("none", "uniform", "normal", "pareto")


class Fate(enum.Enum):
    """Why a datagram did or did not arrive."""

    DELIVERED = "delivered"
    """It arrived (once, or twice when duplicated)."""
    LOST = "lost"
    """Dropped by the independent Bernoulli ``loss``."""
    BURST_LOST = "burst_lost"
    """Dropped by the Gilbert-Elliott burst-loss chain."""
    QUEUE_DROPPED = "queue_dropped"
    """Tail-dropped: the bandwidth queue was full."""
    MTU_DROPPED = "mtu_dropped"
    """Larger than the link's MTU."""


def _probability(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
        raise ConfigError(f"{name} must be a probability in [0, 1], got {value!r}")


def _seconds(name: str, value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0.0):
        raise ConfigError(f"{name} must be a finite number of seconds >= 0, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class JitterConfig:
    """The random extra delay added to ``latency`` for each datagram (spec 000 §3.7)."""

    kind: Literal["none", "uniform", "normal", "pareto"] = "none"
    """Distribution: ``none``; ``uniform`` U(0, amount); ``normal`` |N(0, amount)|; ``pareto``
    Lomax with shape ``PARETO_SHAPE`` and mean ``amount``."""
    amount: float = 0.0
    """Scale of the jitter (s): uniform width, half-normal sigma, or Pareto mean."""
    preserve_order: bool = False
    """Hold a datagram back until the previous one arrived, so jitter never reorders."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        if self.kind not in _JITTER_KINDS:
            kinds = ", ".join(_JITTER_KINDS)
            raise ConfigError(f"jitter.kind must be one of {kinds}, got {self.kind!r}")
        _seconds("jitter.amount", self.amount)
        if self.kind == "none" and self.amount != 0.0:
            raise ConfigError(
                f"jitter.amount must be 0 when jitter.kind is 'none', got {self.amount!r}"
            )
        if not isinstance(self.preserve_order, bool):
            raise ConfigError(f"jitter.preserve_order must be a bool, got {self.preserve_order!r}")

    @property
    def mean(self) -> float:
        """Mean jitter (s) before any ``preserve_order`` hold-back."""
        if self.kind == "uniform":
            return self.amount / 2.0
        if self.kind == "normal":
            return self.amount * math.sqrt(2.0 / math.pi)
        return self.amount


@dataclass(frozen=True, slots=True, kw_only=True)
class GilbertElliott:
    """Two-state Markov burst-loss model (Gilbert 1960, Elliott 1963), stepped once per datagram."""

    p_good_to_bad: float
    """Probability of moving from the good to the bad state after a datagram."""
    p_bad_to_good: float
    """Probability of moving from the bad to the good state after a datagram; > 0."""
    loss_good: float = 0.0
    """Loss probability in the good state."""
    loss_bad: float = 1.0
    """Loss probability in the bad state."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        _probability("burst.p_good_to_bad", self.p_good_to_bad)
        _probability("burst.p_bad_to_good", self.p_bad_to_good)
        _probability("burst.loss_good", self.loss_good)
        _probability("burst.loss_bad", self.loss_bad)
        if self.p_bad_to_good == 0.0:
            raise ConfigError("burst.p_bad_to_good must be in (0, 1], got 0 (a permanent outage)")

    @classmethod
    def from_loss_and_burst(cls, loss: float, mean_burst: float) -> GilbertElliott:
        """Build the simple Gilbert model (good never loses, bad always loses).

        Args:
            loss: Long-run loss rate in [0, 1).
            mean_burst: Mean number of consecutive losses (datagrams), >= 1.

        Returns:
            A model with ``p_bad_to_good = 1 / mean_burst`` and
            ``p_good_to_bad = loss · p_bad_to_good / (1 - loss)``.

        Raises:
            ConfigError: an argument is out of range or the pair is not reachable.
        """
        if not (isinstance(loss, int | float) and 0.0 <= loss < 1.0):
            raise ConfigError(f"loss must be in [0, 1), got {loss!r}")
        if not (isinstance(mean_burst, int | float) and mean_burst >= 1.0):
            raise ConfigError(f"mean_burst must be >= 1 datagram, got {mean_burst!r}")
        p_bg = 1.0 / mean_burst
        p_gb = loss * p_bg / (1.0 - loss)
        if p_gb > 1.0:
            raise ConfigError(
                f"loss={loss!r} with mean_burst={mean_burst!r} needs p_good_to_bad > 1; "
                "raise mean_burst or lower loss"
            )
        return cls(p_good_to_bad=p_gb, p_bad_to_good=p_bg)

    @property
    def bad_fraction(self) -> float:
        """Long-run fraction of datagrams sent in the bad state."""
        return self.p_good_to_bad / (self.p_good_to_bad + self.p_bad_to_good)

    @property
    def stationary_loss(self) -> float:
        """Long-run loss rate of the chain alone."""
        bad = self.bad_fraction
        return (1.0 - bad) * self.loss_good + bad * self.loss_bad

    @property
    def mean_burst(self) -> float:
        """Mean stay in the bad state (datagrams): the mean loss burst when loss_bad = 1."""
        return 1.0 / self.p_bad_to_good


@dataclass(frozen=True, slots=True, kw_only=True)
class LinkConfig:
    """Impairments of one direction of a path; every stage is off by default."""

    latency: float = 0.0
    """Minimum one-way delay (s), added to every datagram."""
    jitter: JitterConfig = JitterConfig()
    """Random extra delay per datagram."""
    loss: float = 0.0
    """Independent (Bernoulli) loss probability per datagram."""
    burst: GilbertElliott | None = None
    """Optional Gilbert-Elliott burst loss, applied before ``loss``."""
    duplicate: float = 0.0
    """Probability that a delivered datagram arrives twice."""
    reorder: float = 0.0
    """Probability that a datagram is held ``reorder_delay`` extra so later ones overtake it."""
    reorder_delay: float = 0.0
    """Extra delay (s) of a reordered datagram; > 0 when ``reorder`` > 0."""
    bandwidth: float | None = None
    """Serialisation rate (bytes/s) of a FIFO bottleneck, or ``None`` for unlimited."""
    queue_limit: int = 64 * 1024
    """Bytes the bandwidth queue holds before tail drop (only with ``bandwidth``)."""
    mtu: int | None = None
    """Largest on-wire datagram (bytes) the link carries, or ``None`` for no limit."""
    count_headers: bool = True
    """Add ``UDP_IPV4_HEADER`` (28 bytes) to each payload for the MTU and bandwidth stages."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        _seconds("latency", self.latency)
        if not isinstance(self.jitter, JitterConfig):
            raise ConfigError(f"jitter must be a JitterConfig, got {self.jitter!r}")
        _probability("loss", self.loss)
        if self.burst is not None and not isinstance(self.burst, GilbertElliott):
            raise ConfigError(f"burst must be a GilbertElliott or None, got {self.burst!r}")
        _probability("duplicate", self.duplicate)
        _probability("reorder", self.reorder)
        _seconds("reorder_delay", self.reorder_delay)
        if self.reorder > 0.0 and self.reorder_delay == 0.0:
            raise ConfigError("reorder_delay must be > 0 seconds when reorder > 0, got 0")
        if self.bandwidth is not None and not (
            isinstance(self.bandwidth, int | float)
            and math.isfinite(self.bandwidth)
            and self.bandwidth > 0
        ):
            raise ConfigError(f"bandwidth must be > 0 bytes/s or None, got {self.bandwidth!r}")
        if (
            isinstance(self.queue_limit, bool)
            or not isinstance(self.queue_limit, int)
            or (self.queue_limit < 1)
        ):
            raise ConfigError(f"queue_limit must be an int >= 1 byte, got {self.queue_limit!r}")
        if self.mtu is not None and (
            isinstance(self.mtu, bool) or not isinstance(self.mtu, int) or self.mtu < MIN_MTU
        ):
            raise ConfigError(f"mtu must be an int >= {MIN_MTU} bytes or None, got {self.mtu!r}")
        if not isinstance(self.count_headers, bool):
            raise ConfigError(f"count_headers must be a bool, got {self.count_headers!r}")

    def with_overrides(self, **changes: object) -> LinkConfig:
        """Return a copy with some fields replaced (validated again).

        Args:
            **changes: Field names and their new values.

        Returns:
            The new ``LinkConfig``.

        Raises:
            ConfigError: an unknown field name, or a new value out of range.
        """
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise ConfigError(
                f"unknown LinkConfig field {unknown[0]!r}; valid fields: {', '.join(sorted(known))}"
            )
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def mean_delay(self) -> float:
        """Mean one-way delay (s) without queueing: latency + mean jitter + mean reorder delay."""
        return self.latency + self.jitter.mean + self.reorder * self.reorder_delay

    @property
    def expected_loss(self) -> float:
        """Long-run loss rate from ``burst`` and ``loss`` (MTU and queue drops excluded)."""
        burst = self.burst.stationary_loss if self.burst is not None else 0.0
        return burst + self.loss - burst * self.loss

    def wire_size(self, size: int) -> int:
        """On-wire bytes of a ``size``-byte payload: plus 28 header bytes if ``count_headers``."""
        return size + UDP_IPV4_HEADER if self.count_headers else size


@dataclass(frozen=True, slots=True)
class LinkOutcome:
    """What happened to one datagram sent into a ``Link``."""

    fate: Fate
    """Why it did or did not arrive."""
    arrivals: tuple[float, ...]
    """Absolute arrival times (s): empty when dropped, two (original, copy) when duplicated."""


class Link:
    """A stateful one-way link: queue backlog, burst state and the random stream.

    Args:
        config: The impairments.
        rng: The generator every draw comes from (use a named stream, see ``netsim.seeds``).
    """

    def __init__(self, config: LinkConfig, *, rng: np.random.Generator) -> None:
        """Create an idle link in the good burst state."""
        if not isinstance(config, LinkConfig):
            raise ConfigError(f"config must be a LinkConfig, got {config!r}")
        self._config = config
        self._rng = rng
        self._uniforms: list[float] = []
        self._normals: list[float] = []
        self._busy_until = -math.inf
        self._last_arrival = -math.inf
        self._last_now = -math.inf
        self._bad = False
        jitter = config.jitter
        self._pareto_scale = jitter.amount * (PARETO_SHAPE - 1.0)

    @property
    def config(self) -> LinkConfig:
        """The link's impairments."""
        return self._config

    def queued_bytes(self, now: float) -> float:
        """Bytes still waiting to be serialised at ``now`` (0 without ``bandwidth``)."""
        bandwidth = self._config.bandwidth
        if bandwidth is None:
            return 0.0
        return max(0.0, self._busy_until - now) * bandwidth

    def _uniform(self) -> float:
        if not self._uniforms:
            self._uniforms = self._rng.random(_BLOCK).tolist()
            self._uniforms.reverse()
        return self._uniforms.pop()

    def _normal(self) -> float:
        if not self._normals:
            self._normals = self._rng.standard_normal(_BLOCK).tolist()
            self._normals.reverse()
        return self._normals.pop()

    def _jitter(self) -> float:
        jitter = self._config.jitter
        if jitter.kind == "uniform":
            return self._uniform() * jitter.amount
        if jitter.kind == "normal":
            return abs(self._normal()) * jitter.amount
        if jitter.kind == "pareto":
            # Lomax inverse CDF: F(x) = 1 - (1 + x/scale)^-shape.
            return self._pareto_scale * (math.pow(1.0 - self._uniform(), -1.0 / PARETO_SHAPE) - 1.0)
        return 0.0

    def _arrival(self, departure: float) -> float:
        config = self._config
        arrival = departure + config.latency + self._jitter()
        if config.jitter.preserve_order and arrival < self._last_arrival:
            arrival = self._last_arrival
        self._last_arrival = max(self._last_arrival, arrival)
        return arrival

    def send(self, size: int, now: float) -> LinkOutcome:
        """Push one datagram of ``size`` payload bytes into the link at time ``now``.

        Args:
            size: Payload bytes (UDP payload, without headers), >= 0.
            now: Send time (s); never earlier than the previous call's.

        Returns:
            The datagram's fate and its absolute arrival times (s).

        Raises:
            LocalProtocolError: ``size`` is negative, or ``now`` is not finite or went backwards.
        """
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise LocalProtocolError(f"size must be an int >= 0 bytes, got {size!r}")
        if not math.isfinite(now) or now < self._last_now:
            raise LocalProtocolError(
                f"now must be finite and >= the previous send time {self._last_now!r}, got {now!r}"
            )
        self._last_now = now
        config = self._config
        wire = config.wire_size(size)
        if config.mtu is not None and wire > config.mtu:
            return LinkOutcome(Fate.MTU_DROPPED, ())
        departure = now
        bandwidth = config.bandwidth
        if bandwidth is not None:
            backlog = max(0.0, self._busy_until - now) * bandwidth
            if backlog > 0.0 and backlog + wire > config.queue_limit:
                return LinkOutcome(Fate.QUEUE_DROPPED, ())
            self._busy_until = max(now, self._busy_until) + wire / bandwidth
            departure = self._busy_until
        burst = config.burst
        if burst is not None:
            lost = self._uniform() < (burst.loss_bad if self._bad else burst.loss_good)
            flip = burst.p_bad_to_good if self._bad else burst.p_good_to_bad
            if self._uniform() < flip:
                self._bad = not self._bad
            if lost:
                return LinkOutcome(Fate.BURST_LOST, ())
        if config.loss > 0.0 and self._uniform() < config.loss:
            return LinkOutcome(Fate.LOST, ())
        arrival = self._arrival(departure)
        if config.reorder > 0.0 and self._uniform() < config.reorder:
            arrival += config.reorder_delay
        if config.duplicate > 0.0 and self._uniform() < config.duplicate:
            return LinkOutcome(Fate.DELIVERED, (arrival, self._arrival(departure)))
        return LinkOutcome(Fate.DELIVERED, (arrival,))
