"""Congestion avoidance: a good/bad mode switch on base RTT and loss, a paced rate in good mode.

Implements spec 004 §2.3.4 (set the send frequency dynamically; take the loss rate or the RTT
crossing a threshold as congestion and lower the rate), spec 000 §2.5 (ENet feature 7) and
STANDARD.md §2.4. Two layers:

* The mode switch of Gaffer on Games, "Reliability and Flow Control" (spec 004 ref. [12]): the
  link is bad while the base round-trip time (the windowed minimum) is above ``rtt_threshold``
  (250 ms) or the loss above ``loss_threshold``; BAD mode sends at ``bad_send_rate``. Leaving BAD
  needs ``penalty`` seconds of unbroken good link (4 s at first), doubled (up to 60 s) when the
  link turns bad again within 10 s of recovering, halved (down to 1 s) after every 10 s spent in
  good mode.
* In GOOD mode the rate is a packet rate grown like TCP's window (RFC 5681 §3.1, packets per
  second in place of a window): it starts at ``good_send_rate``; while pacing holds the sender
  back (it had a payload ready and no token) every acknowledged packet adds ``1 / SRTT`` packets
  per second (slow start: TCP's one segment per ack, which doubles a full window per round trip)
  until the first loss event or a queue shows in the RTT; after that, once per
  held-back round trip, it grows by ``max(rate_increase, rate / 16)`` while no
  queue shows in the RTT and by ``rate_increase`` while one is forming; on a loss
  event it is multiplied by ``decrease_factor`` (one half); it stays within
  ``[bad_send_rate, max_send_rate]``. A sender that is not held back never raises its rate, so a
  60 Hz game tick does not inflate it. After a BAD period it restarts at ``good_send_rate``.

Decisions:

* The controller starts in ``config.initial_mode``, GOOD by default. Gaffer starts BAD so a new
  connection proves its link first; that costs every connection ``initial_penalty`` seconds at
  ``bad_send_rate`` (15 packets/s in a connection), and a connection that never measures an RTT
  (no clock sync, idle) stayed BAD forever. A bad link is still caught at its first RTT or loss
  report (``test_congestion.py::test_starts_good_and_drops_on_bad_measure``); Gaffer's BAD start
  stays one field away (``test_congestion.py::test_starts_bad_then_recovers``).
* The peer's processing backlog is not congestion. An RTT sample includes the time the peer held
  the packet (there is no ack-delay field), so a busy peer looks like a slow path. Three rules
  keep a slow peer from teaching its clients that the network is bad
  (``test_congestion.py::test_peer_backlog_is_not_congestion``):
  the mode switch reads the windowed *minimum* RTT, which a backlog raises only if it lasts a
  whole window of samples, not the smoothed RTT; smoothed-RTT growth above the minimum (a queue,
  at a bottleneck or in the peer) only stops the rate from growing
  (``SRTT > 1.5 x rtt_min + 10 ms``); and a loss whose packet is acked after all (spurious: it
  was late, not lost) undoes the decrease it caused (RFC 4015's Eifel response,
  `CongestionController.on_spurious_loss`). A caller with one estimate only
  (``rtt_min=None``) gets Gaffer's original rule on that estimate.
* Slow start, then a rate-proportional increase: a fresh connection reaches the ceiling of a fast
  path within a few round trips (from 240 to 200 000 packets/s in 10 round trips), instead of the
  minutes an increase of 8 packets/s per round trip took. Slow start grows per acknowledged packet,
  not once per round trip: acks come in batches (every ``ack_frequency`` packets or ``ack_delay``
  after the last), and a doubling per batch-carrying round trip took 75 ms of a loopback bulk
  transfer to climb from 90 to 23 000 packets/s while the path's RTT was 1.5 ms
  (``benchmarks/transport.py``); growth by acked packets over SRTT is the same doubling per round
  trip on a full pipe and does not wait for the ack cadence
  (``test_congestion.py::test_slow_start_grows_per_acked_packet``). After a loss, while the smoothed
  RTT stays within the HyStart margin above the minimum, the increase is a sixteenth of the rate per
  round trip (as Scalable TCP), so a halving at 20 000 packets/s heals in about 11 round trips, not
  1 250; once a queue forms it falls back to ``rate_increase`` (8 packets/s) per round trip, Reno's
  gentle probe, so a small bottleneck queue is not overrun. Slow start would overshoot a small
  bottleneck queue by up to a round trip of packets, and the burst of loss would trip the loss
  threshold into BAD mode; so it also ends, as HyStart does (RFC 9406 §4.2), as soon as the smoothed
  RTT exceeds the minimum by an eighth of it, clamped to [4 ms, 16 ms]: a queue is forming
  (``test_congestion.py::test_slow_start_doubles_until_the_first_loss``,
  ``test_transport_costs.py::test_aimd_converges_near_the_bottleneck_and_recovers_after_a_bad_period``).
* A loss event lowers the rate at most once per round trip: a loss counts only for a packet sent
  after the previous decrease, since packets sent before it went out at the old rate and report
  the same congestion (RFC 6582's recovery period)
  (``test_congestion.py::test_one_decrease_per_loss_event``).
* Loss also counts for the mode: above ``loss_threshold`` (10 %, lagless's number; the spec gives
  none) the link is bad (``test_congestion.py::test_loss_alone_makes_link_bad``).
* Time is measured between ``on_statistics`` calls with the ``now`` they carry, not accumulated
  from a fixed ``dt``, so the result does not depend on how often the connection reports; a link
  counts as good from the first good report of an unbroken run
  (``test_congestion.py::test_recovery_independent_of_report_rate``).
* The penalty doubles on flapping and halves after each ``good_streak`` seconds of good mode
  (``test_congestion.py::test_flapping_doubles_penalty`` and ``::test_penalty_halves``).
"""

from __future__ import annotations

from typing import Final

from lagless.transport.config import CongestionConfig, CongestionMode

__all__ = ["CongestionController", "CongestionMode"]

QUEUE_RTT_FACTOR: Final = 1.5  # no increase while SRTT > 1.5 x min RTT + QUEUE_RTT_MARGIN:
QUEUE_RTT_MARGIN: Final = 0.01  # seconds; a queue is building at the bottleneck or the peer
HYSTART_FRACTION: Final = 1.0 / 8.0  # slow start ends once SRTT exceeds the minimum by an
HYSTART_MIN: Final = 0.004  # eighth of it, clamped to [4 ms, 16 ms] (HyStart's delay increase,
HYSTART_MAX: Final = 0.016  # seconds; RFC 9406 §4.2)
SLOW_START_MIN_RTT: Final = 0.001  # seconds; slow start divides by at least this RTT, so a
# sub-millisecond loopback sample does not add 10 000 packets/s per acked packet
PROPORTIONAL_INCREASE: Final = 1.0 / 16.0  # least growth per held-back RTT after slow start,
# as a fraction of the rate (Scalable TCP's proportional increase)
_GOOD: Final = CongestionMode.GOOD  # the members bound once: compiled, a member read through its
_BAD: Final = CongestionMode.BAD  # class is a generic attribute lookup (docs/compiled.md)


class CongestionController:
    """Chooses the packet send rate of one connection from its RTT, loss and backlog (sans-I/O)."""

    __slots__ = (
        "_bad_rate",
        "_entered_good",
        "_epoch_start",
        "_good_since",
        "_good_streak",
        "_held_back",
        "_increase",
        "_loss_threshold",
        "_max_rate",
        "_rate",
        "_recovery_start",
        "_rtt",
        "_rtt_threshold",
        "_slow_start",
        "_streak_start",
        "_undo",
        "config",
        "mode",
        "penalty",
    )

    def __init__(self, *, now: float, config: CongestionConfig | None = None) -> None:
        """Create a controller in ``config.initial_mode``.

        Args:
            now: Current time (seconds).
            config: Rates, thresholds and penalty times; defaults when ``None``.
        """
        self.config = CongestionConfig() if config is None else config
        """Rates, thresholds and penalty times (read-only: some are copied at construction)."""
        self.mode = self.config.initial_mode
        """Current mode."""
        self.penalty = self.config.initial_penalty
        """Seconds the link must stay good before leaving BAD mode."""
        self._rate = self.config.good_send_rate
        self._rtt = 0.0
        self._held_back = False
        self._slow_start = self.config.slow_start
        self._undo: tuple[int, float, bool] | None = None  # (sequence, rate, slow start) to undo
        self._epoch_start = now
        self._recovery_start = now
        self._good_since: float | None = None
        self._entered_good = now
        self._streak_start = now
        # the settings read per pump or ack batch, copied: compiled, a field of the frozen
        # (interpreted) config is a generic attribute lookup (docs/compiled.md)
        cfg = self.config
        self._bad_rate = cfg.bad_send_rate
        self._max_rate = cfg.max_send_rate
        self._increase = cfg.rate_increase
        self._rtt_threshold = cfg.rtt_threshold
        self._loss_threshold = cfg.loss_threshold
        self._good_streak = cfg.good_streak

    @property
    def send_rate(self) -> float:
        """Packets per second to send now (Hz): the paced rate in GOOD mode, else the bad rate."""
        return self._rate if self.mode is _GOOD else self._bad_rate

    @property
    def slow_start(self) -> bool:
        """True until the first loss event (the rate doubles per held-back round trip)."""
        return self._slow_start

    @property
    def send_interval(self) -> float:
        """Seconds between packets now (``1 / send_rate``)."""
        return 1.0 / self.send_rate

    def next_send_time(self, last_send: float) -> float:
        """Return when the next packet may go (seconds).

        Args:
            last_send: Time the previous packet was sent (seconds).

        Returns:
            ``last_send + send_interval``.
        """
        return last_send + self.send_interval

    def on_held_back(self) -> None:
        """Note that pacing held the sender back: a payload was ready and no token was left.

        The rate grows at the end of the current round trip only if this was noted during it.
        """
        self._held_back = True

    def on_loss(self, send_time: float, now: float, sequence: int | None = None) -> None:
        """Take the loss of an ack-eliciting packet sent at ``send_time`` (seconds).

        Multiplies the rate by ``decrease_factor`` unless the packet was sent before the previous
        decrease (one decrease per loss event), and ends slow start.

        Args:
            send_time: When the lost packet was sent (seconds).
            now: Current time (seconds).
            sequence: The packet's sequence number; if it is acked after all, pass it to
                `on_spurious_loss` to undo the decrease.
        """
        if self.mode is not _GOOD or send_time < self._recovery_start:
            return
        cfg = self.config
        self._undo = None if sequence is None else (sequence, self._rate, self._slow_start)
        self._rate = max(cfg.bad_send_rate, self._rate * cfg.decrease_factor)
        self._slow_start = False
        self._recovery_start = now
        self._epoch_start = now
        self._held_back = False

    def on_spurious_loss(self, sequence: int) -> None:
        """Undo the decrease caused by packet ``sequence``, acked after it was declared lost.

        A late ack means the packet was delayed (often by the peer's backlog), not dropped, so the
        rate and the slow-start state before that decrease come back (RFC 4015). Other sequence
        numbers are ignored.

        Args:
            sequence: The packet's 16-bit sequence number.
        """
        undo = self._undo
        if undo is None or undo[0] != sequence or self.mode is not _GOOD:
            return
        self._undo = None
        self._rate = max(self._rate, undo[1])
        self._slow_start = undo[2]

    def on_acked(self, count: int, rtt: float) -> None:
        """Take ``count`` newly acknowledged packets: slow start grows the rate by ``count / rtt``.

        Grows only in GOOD mode, during slow start and while pacing held the sender back in the
        current round trip; never passes ``max_send_rate``. Call it before `on_statistics` for
        the same batch of acks (which may end the round trip).

        Args:
            count: Packets acknowledged in this batch.
            rtt: Smoothed round-trip time after this batch's samples (seconds), floored at
                ``SLOW_START_MIN_RTT``.
        """
        if not (self._slow_start and self._held_back and count > 0):
            return
        if self.mode is not _GOOD:
            return
        if rtt < SLOW_START_MIN_RTT:
            rtt = SLOW_START_MIN_RTT
        self._rate = min(self._rate + count / rtt, self._max_rate)

    def _grow(self, now: float, *, fast: bool) -> None:
        if now - self._epoch_start < self._rtt:
            return
        self._epoch_start = now
        if not self._held_back:
            return
        self._held_back = False
        if self._slow_start:
            return  # slow start grows per acked packet (`on_acked`)
        rate = self._rate
        if fast:
            rate += max(self._increase, rate * PROPORTIONAL_INCREASE)
        else:
            rate += self._increase
        self._rate = min(rate, self._max_rate)

    def on_statistics(
        self, rtt: float, loss: float, now: float, rtt_min: float | None = None
    ) -> None:
        """Feed the connection's smoothed RTT and loss; may switch the mode or grow the rate.

        Args:
            rtt: Smoothed round-trip time (seconds).
            loss: Packet loss fraction over the recent window, in [0, 1].
            now: Current time (seconds).
            rtt_min: Smallest recent round-trip time (seconds): the mode switch compares it, not
                ``rtt``, with ``rtt_threshold``, and the rate does not grow while ``rtt`` shows a
                queue building above it. ``None`` uses ``rtt`` for both.

        Pump the object afterwards (see ``lagless.io.drive.pump``).
        """
        self._rtt = rtt
        base = rtt if rtt_min is None else rtt_min
        bad = base > self._rtt_threshold or loss > self._loss_threshold
        if self.mode is _GOOD:
            if bad:
                cfg = self.config
                # Gaffer: dropping back soon after recovering means the link flaps.
                if now - self._entered_good < cfg.flap_window:
                    self.penalty = min(self.penalty * 2.0, cfg.max_penalty)
                self.mode = _BAD
                self._good_since = None
                return
            queue_free = rtt <= base + min(max(base * HYSTART_FRACTION, HYSTART_MIN), HYSTART_MAX)
            if not queue_free:
                self._slow_start = False  # a queue is starting: leave before it overflows
            if rtt <= QUEUE_RTT_FACTOR * base + QUEUE_RTT_MARGIN:
                self._grow(now, fast=queue_free)
            if now - self._streak_start >= self._good_streak:
                self.penalty = max(self.penalty / 2.0, self.config.min_penalty)
                self._streak_start = now
            return
        if bad:
            self._good_since = None
            return
        if self._good_since is None:
            self._good_since = now
        if now - self._good_since >= self.penalty:
            cfg = self.config
            self.mode = _GOOD
            self._entered_good = now
            self._streak_start = now
            self._good_since = None
            self._rate = cfg.good_send_rate
            self._slow_start = cfg.slow_start
            self._undo = None
            self._epoch_start = now
            self._recovery_start = now
            self._held_back = False
