"""Congestion avoidance: a good/bad send-rate switch driven by RTT and loss.

Implements spec 004 §2.3.4 (set the send frequency dynamically; take the loss rate or the RTT
crossing a threshold as congestion and lower the rate) and spec 000 §2.5 (ENet feature 7), with
the binary flow control of Gaffer on Games, "Reliability and Flow Control" (spec 004 ref. [12]):
30 packets per second when good, 10 when bad, RTT threshold 250 ms, a 4 s penalty the link must
stay good before the rate goes back up, doubled (up to 60 s) when the link turns bad again within
10 s of recovering, and halved (down to 1 s) after every 10 s spent in good mode.

Decisions:

* The controller starts in BAD mode, as Gaffer's does: a new connection proves its link before
  sending at the full rate (``test_congestion.py::test_starts_bad_then_recovers``).
* Loss also counts: above ``loss_threshold`` (10 %, lagless's number; the spec gives none) the
  link is bad (``test_congestion.py::test_loss_alone_makes_link_bad``).
* Time is measured between ``on_statistics`` calls with the ``now`` they carry, not accumulated
  from a fixed ``dt``, so the result does not depend on how often the connection reports; a link
  counts as good from the first good report of an unbroken run
  (``test_congestion.py::test_recovery_independent_of_report_rate``).
* The penalty doubles on flapping and halves after each ``good_streak`` seconds of good mode
  (``test_congestion.py::test_flapping_doubles_penalty`` and ``::test_penalty_halves``).
"""

from __future__ import annotations

import enum

from lagless.transport.config import CongestionConfig

__all__ = ["CongestionController", "CongestionMode"]


class CongestionMode(enum.IntEnum):
    """Send-rate mode (negative = degraded, as in STYLE §6.6)."""

    BAD = -1
    """Congested link: send at ``bad_send_rate``."""
    GOOD = 1
    """Healthy link: send at ``good_send_rate``."""


class CongestionController:
    """Chooses the packet send rate of one connection from its RTT and loss (sans-I/O)."""

    __slots__ = ("_entered_good", "_good_since", "_streak_start", "config", "mode", "penalty")

    def __init__(self, *, now: float, config: CongestionConfig | None = None) -> None:
        """Create a controller in BAD mode.

        Args:
            now: Current time (seconds).
            config: Rates, thresholds and penalty times; defaults when ``None``.
        """
        self.config = CongestionConfig() if config is None else config
        """Rates, thresholds and penalty times."""
        self.mode = CongestionMode.BAD
        """Current mode."""
        self.penalty = self.config.initial_penalty
        """Seconds the link must stay good before leaving BAD mode."""
        self._good_since: float | None = None
        self._entered_good = now
        self._streak_start = now

    @property
    def send_rate(self) -> float:
        """Packets per second to send now (Hz)."""
        cfg = self.config
        return cfg.good_send_rate if self.mode is CongestionMode.GOOD else cfg.bad_send_rate

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

    def on_statistics(self, rtt: float, loss: float, now: float) -> None:
        """Feed the connection's smoothed RTT and loss; may switch the mode.

        Args:
            rtt: Smoothed round-trip time (seconds).
            loss: Packet loss fraction over the recent window, in [0, 1].
            now: Current time (seconds).

        Pump the object afterwards (see ``lagless.io.drive.pump``).
        """
        cfg = self.config
        bad = rtt > cfg.rtt_threshold or loss > cfg.loss_threshold
        if self.mode is CongestionMode.GOOD:
            if bad:
                # Gaffer: dropping back soon after recovering means the link flaps.
                if now - self._entered_good < cfg.flap_window:
                    self.penalty = min(self.penalty * 2.0, cfg.max_penalty)
                self.mode = CongestionMode.BAD
                self._good_since = None
            elif now - self._streak_start >= cfg.good_streak:
                self.penalty = max(self.penalty / 2.0, cfg.min_penalty)
                self._streak_start = now
            return
        if bad:
            self._good_since = None
            return
        if self._good_since is None:
            self._good_since = now
        if now - self._good_since >= self.penalty:
            self.mode = CongestionMode.GOOD
            self._entered_good = now
            self._streak_start = now
            self._good_since = None
