"""Local rollback for who-shoots-whom: hold each kill, drop it if an earlier kill undoes it.

Implements spec 000 §5.2.3 (entity lifecycle on the server, "Local Rollback", a Time Warp variant)
for issue 13 #8. A kill ("A kills B at server time t") is not propagated at once: the
``KillArbiter`` holds it for a configurable window (default 170 ms, the typical Neutron UMTS
latency the spec recommends). A kill arriving within that window with an earlier absolute
timestamp takes causal precedence: if it killed the shooter of a held kill before that shot, the
held kill is dropped ("A kills B" is propagated, "B kills C" is not). Sans-I/O: ``submit`` and
``release`` take ``now`` (s, server time); times on kills are absolute server time.

Decisions:
    * A kill is valid if, at its timestamp, both its shooter and its victim are alive, given every
      committed kill and every held kill that is itself valid, taken in timestamp order (ties in
      arrival order). Validity is decided again whenever a kill arrives, so a held kill may be
      dropped (``SHOOTER_DEAD``: its shooter was killed earlier; ``VICTIM_DEAD``: its victim was
      killed earlier by someone else) (``test_rollback_hits.py::test_spec_example``).
    * Equal timestamps trade: two players who kill each other at the same instant both die
      (neither was dead *before* the other's shot) (``test_rollback_hits.py::test_trade``).
    * Committed kills are final. A kill arriving after the window that would have undone a
      committed one is still judged on its own (its shooter and victim alive at its time given the
      committed deaths) but undoes nothing; the conflict is counted as ``late_conflicts`` (the
      spec's "accepted inconsistency").
    * An entity is dead from its death time until ``respawn`` gives it a new life; a kill of a
      respawned entity at a time before the respawn is judged against the old life.
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from lagless.errors import ConfigError, LocalProtocolError

__all__ = [
    "DEFAULT_KILL_WINDOW",
    "Kill",
    "KillArbiter",
    "KillDecision",
    "KillDropReason",
]

DEFAULT_KILL_WINDOW: Final = 0.170  # s: spec 000 §5.2.3, the typical Neutron UMTS one-way latency


@dataclass(frozen=True, slots=True)
class Kill:
    """A lethal hit: ``shooter`` killed ``victim`` at ``time`` (absolute server time, s)."""

    shooter: int
    victim: int
    time: float


class KillDropReason(enum.Enum):
    """Why a kill was dropped."""

    SHOOTER_DEAD = "shooter_dead"
    """The shooter had been killed before this shot."""
    VICTIM_DEAD = "victim_dead"
    """The victim had already been killed by an earlier shot."""


@dataclass(frozen=True, slots=True)
class KillDecision:
    """What happened to a submitted kill."""

    kill: Kill
    """The kill."""
    committed: bool
    """True: propagate it. False: it was dropped."""
    reason: KillDropReason | None
    """Why it was dropped, ``None`` if committed."""
    decided_at: float
    """Server time of the decision (s)."""


@dataclass(slots=True)
class _Held:
    kill: Kill
    arrival: int
    deadline: float


class KillArbiter:
    """Holds kills for ``window`` seconds and lets earlier causal kills drop later ones.

    Args:
        window: Hold time (s), ≥ 0 (0 decides every kill on its first ``release``).
    """

    def __init__(self, window: float = DEFAULT_KILL_WINDOW) -> None:
        """Create an arbiter with every entity alive."""
        if not (math.isfinite(window) and window >= 0):
            raise ConfigError(f"window must be a finite number >= 0 s, got {window!r}")
        self.window = window
        self._held: list[_Held] = []
        self._deaths: dict[int, float] = {}
        self._respawns: dict[int, float] = {}
        self._last_shot: dict[int, float] = {}
        self._arrivals = 0
        self._committed = 0
        self._dropped: Counter[KillDropReason] = Counter()
        self.late_conflicts = 0
        """Kills that arrived after the window and contradict a committed kill."""

    def _dead_committed(self, entity: int, time: float) -> bool:
        death = self._deaths.get(entity)
        if death is None or death > time:
            return False
        respawn = self._respawns.get(entity)
        return respawn is None or respawn <= death or time < respawn

    def _dead(self, entity: int, time: float, pending: Mapping[int, float]) -> bool:
        return self._dead_committed(entity, time) or pending.get(entity, math.inf) < time

    def _judge(self) -> dict[int, KillDropReason]:
        """Return the invalid held kills (by arrival number), judged in timestamp order."""
        invalid: dict[int, KillDropReason] = {}
        deaths: dict[int, float] = {}
        for held in sorted(self._held, key=lambda h: (h.kill.time, h.arrival)):
            kill = held.kill
            if self._dead(kill.shooter, kill.time, deaths):
                invalid[held.arrival] = KillDropReason.SHOOTER_DEAD
            elif (
                self._dead(kill.victim, kill.time, deaths)
                or deaths.get(kill.victim, math.inf) <= kill.time
            ):
                invalid[held.arrival] = KillDropReason.VICTIM_DEAD
            else:
                deaths[kill.victim] = kill.time
        return invalid

    def submit(self, kill: Kill, now: float) -> None:
        """Hold ``kill`` until ``now + window``.

        Args:
            kill: The kill; its time in server time (s).
            now: Server time of arrival (s).

        Raises:
            LocalProtocolError: A self-kill or a non-finite time.
        """
        if kill.shooter == kill.victim or not math.isfinite(kill.time):
            raise LocalProtocolError(f"not a kill: {kill!r}")
        if self._last_shot.get(kill.victim, -math.inf) > kill.time or (
            self._deaths.get(kill.victim, -math.inf) > kill.time
        ):
            self.late_conflicts += 1
        self._held.append(_Held(kill, self._arrivals, now + self.window))
        self._arrivals += 1

    def respawn(self, entity: int, time: float) -> None:
        """Give ``entity`` a new life from ``time`` (server time, s)."""
        self._respawns[entity] = time

    def next_deadline(self) -> float | None:
        """Return when the next held kill is due (s), or ``None``."""
        return min((h.deadline for h in self._held), default=None)

    def release(self, now: float) -> list[KillDecision]:
        """Decide every held kill whose window has passed at ``now``.

        Args:
            now: Server time (s).

        Returns:
            The decisions, in timestamp order: committed kills to propagate, dropped ones to
            discard.
        """
        invalid = self._judge()
        due = sorted(
            (h for h in self._held if h.deadline <= now), key=lambda h: (h.kill.time, h.arrival)
        )
        decisions = []
        for held in due:
            self._held.remove(held)
            reason = invalid.get(held.arrival)
            if reason is None:
                self._deaths[held.kill.victim] = held.kill.time
                shot = self._last_shot.get(held.kill.shooter, -math.inf)
                self._last_shot[held.kill.shooter] = max(shot, held.kill.time)
                self._committed += 1
            else:
                self._dropped[reason] += 1
            decisions.append(KillDecision(held.kill, reason is None, reason, now))
        return decisions

    @property
    def held(self) -> int:
        """Kills waiting for their window to pass."""
        return len(self._held)

    @property
    def committed(self) -> int:
        """Kills committed so far."""
        return self._committed

    def dropped(self) -> Mapping[KillDropReason, int]:
        """Return the dropped kills by reason."""
        return MappingProxyType(dict(self._dropped))
