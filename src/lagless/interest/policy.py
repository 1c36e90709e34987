"""The interest-policy interface every policy (VFC and the baselines) implements, and its data.

Implements the server side of spec 001 §2.5 as an interchangeable interface: the server feeds
object updates (``update_received``) and asks every round period (``round``, 33 ms by default,
§2.9) which objects go to which clients (a ``SendPlan``). ``statistics()`` carries the histogram of
which bound triggered each send (§3.12, experiment E8).

Ambiguity decisions (spec 001 §6.2), pinned in ``tests/interest/test_vfc.py``:

* Each send is attributed to exactly one ``Trigger`` in the priority FIRST > θ > σ > ν, so
  ``triggers`` sums to ``sends``; ``exceeded`` counts every bound that was exceeded, so a send
  where θ and ν both fired counts once in each (``test_histogram_counts_each_bound``).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError
from lagless.interest.view import View

ROUND_PERIOD: Final = 0.033  # seconds: the thesis's server round (spec 001 §2.9, §4.4)


class Trigger(enum.IntEnum):
    """Why a (client, object) pair was sent in a round."""

    FIRST = 0
    """The client never received this object (its replica does not exist yet)."""
    THETA = 1
    """κ_θ exceeded: too long since the last send (spec 001 §2.2)."""
    SIGMA = 2
    """κ_σ exceeded: too many updates missed."""
    NU = 3
    """κ_ν exceeded: the value diverged too far from the last one sent."""
    INTEREST = 4
    """A baseline policy: the object changed and is inside the client's interest set."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InterestConfig:
    """Sizes and timing shared by every interest policy."""

    dim: int = 2
    """World dimensions of positions and headings (2 or 3)."""
    round_period: float = ROUND_PERIOD
    """Seconds between rounds, reported by ``next_timer`` (spec 001 §2.9: 33 ms)."""
    initial_clients: int = 16
    """Initial client capacity; grows by doubling."""
    initial_objects: int = 16
    """Initial object capacity; grows by doubling."""
    max_pivots: int = 4
    """Most pivots one client's view may have (spec 001 §2.4 multi-pivot)."""

    def __post_init__(self) -> None:
        """Validate the sizes.

        Raises:
            ConfigError: naming the offending field.
        """
        if self.dim not in (2, 3):
            raise ConfigError(f"dim must be 2 or 3, got {self.dim!r}")
        if not 0.0 < self.round_period < math.inf:
            raise ConfigError(
                f"round_period must be a finite number of seconds > 0, got {self.round_period!r}"
            )
        for name in ("initial_clients", "initial_objects", "max_pivots"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer >= 1, got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SendPlan:
    """What one round sends: parallel arrays of (client, object) pairs, sorted by client."""

    clients: npt.NDArray[np.intp]
    """Client id of each pair."""
    objects: npt.NDArray[np.intp]
    """Object id of each pair."""
    reasons: npt.NDArray[np.int8]
    """``Trigger`` value of each pair."""

    def __len__(self) -> int:
        """Number of (client, object) pairs to send."""
        return int(self.clients.shape[0])

    def objects_for(self, client: int) -> npt.NDArray[np.intp]:
        """Return the object ids to send to one client this round (ascending).

        Args:
            client: the client id.

        Returns:
            The object ids (possibly empty).
        """
        lo, hi = np.searchsorted(self.clients, [client, client + 1])
        return self.objects[lo:hi]

    def pairs(self) -> set[tuple[int, int]]:
        """Return the plan as a set of ``(client, object)`` tuples (for tests and tools)."""
        return set(zip(self.clients.tolist(), self.objects.tolist(), strict=True))


@dataclass(frozen=True, slots=True, kw_only=True)
class InterestStatistics:
    """Counters of an interest policy since it was created (spec 001 §3.12)."""

    rounds: int
    """Rounds run."""
    sends: int
    """(client, object) pairs sent, over all rounds."""
    triggers: Mapping[Trigger, int]
    """Sends by the one trigger each is attributed to (priority FIRST > θ > σ > ν)."""
    exceeded: Mapping[Trigger, int]
    """Every bound exceeded at a send (θ, σ, ν; may sum to more than ``sends``)."""
    updates: int
    """Object updates received."""
    clients: int
    """Clients currently registered."""
    objects: int
    """Objects currently registered."""


class InterestPolicy(Protocol):
    """What a server needs from an interest policy (VFC or a baseline); all are interchangeable.

    Ids are small integers handed out by the policy (freed ids are reused). Positions are metres,
    headings are direction vectors (normalised by the policy), times are seconds.
    """

    def add_client(self) -> int:
        """Register a client; return its id."""

    def remove_client(self, client: int) -> None:
        """Forget a client; objects it owned stay, unowned."""

    def add_object(self, owner: int | None = None) -> int:
        """Register an object owned by ``owner`` (never sent to it); return its id."""

    def remove_object(self, obj: int) -> None:
        """Forget an object (and drop it from every pivot list)."""

    def set_view(self, client: int, view: View) -> None:
        """Replace a client's view; used from the next round on (spec 001 §2.8)."""

    def set_pivots(self, client: int, pivots: Sequence[int]) -> None:
        """Replace a client's pivot objects (spectator switch, spec 001 §2.8)."""

    def update_received(
        self,
        object_ids: npt.ArrayLike,
        positions: npt.ArrayLike,
        values: npt.ArrayLike | None,
        now: float,
        *,
        headings: npt.ArrayLike | None = None,
    ) -> None:
        """Take new states of objects from their owners (spec 001 §2.5 ``update-received``)."""

    def round(self, now: float) -> SendPlan:
        """Decide this round's sends and reset the state of the sent pairs."""

    def next_timer(self) -> float | None:
        """Absolute time (s) of the next round, or ``None`` before the first round."""

    def filter_sound(self, origin: npt.ArrayLike, radius: float) -> npt.NDArray[np.bool_]:
        """Clients with a pivot within ``radius`` metres of ``origin`` (by client id)."""

    def filter_shot(
        self, origin: npt.ArrayLike, destination: npt.ArrayLike, max_zone: int
    ) -> npt.NDArray[np.bool_]:
        """Clients for whom the shot's origin or destination is of interest (by client id)."""

    def statistics(self) -> InterestStatistics:
        """Return the counters."""
