"""The sender/receiver shape every display model has, drop counting and time compensation.

Implements spec 000 §3.5 (each display model has ``createInitValues``, ``processInitValues``,
``createUpdateValues`` and ``processUpdate``; the receiver must use the sender's model) and
spec 000 §2.7 "Time compensation" (timestamps in synchronised server time, capped).

Decisions:

* Capped TC (spec 000 §2.7 "exact formula"): an update stamped ``t_u`` and received at local
  ``now`` with server time ``s`` is dead-reckoned from the local instant
  ``now - clamp(s - t_u, 0, cap)``, i.e. ``Δt = min(s - t_u, cap) + (t_d - now)``. A negative age
  (clock error) counts as 0. Without TC the age is 0: ``Δt`` runs from receipt
  (``test_dis.py::test_time_compensation_capped``).
* Reordering (spec 000 §7): an update whose timestamp is not newer than the newest applied one is
  dropped as ``STALE``; payloads without timestamps (DIS-DR without TC) cannot be ordered and are
  applied in arrival order, so use an unreliable-sequenced channel for them
  (``test_dis.py::test_stale_update_dropped``).
* Every receiver accepts updates before any init payload (DIS updates are self-contained). An init
  payload for another model or TC setting is dropped as ``WRONG_MODEL``
  (``test_receivers.py::test_init_model_mismatch``).
* Bad bytes never raise: ``DecodeError`` is caught and counted as ``MALFORMED``
  (``test_receivers.py::test_garbage_never_raises``).
"""

from __future__ import annotations

import enum
import math
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from lagless.errors import ConfigError, LocalProtocolError
from lagless.smoothing.codec import (
    INIT_SIZE,
    DecodedUpdate,
    ModelCode,
    UpdateLayout,
    decode_init,
    encode_init,
)
from lagless.smoothing.state import DisplayState, KinematicState
from lagless.smoothing.thresholds import ThresholdConfig, ThresholdTrigger, TriggerReason
from lagless.wire import DecodeError

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "DropReason",
    "PeriodicSchedule",
    "PeriodicSender",
    "Receiver",
    "ReceiverStatistics",
    "Sender",
    "ThresholdSender",
    "Update",
    "compensated_age",
]


class DropReason(enum.Enum):
    """Why a receiver ignored a payload."""

    MALFORMED = "malformed"
    """The bytes do not decode (wrong length, unknown code)."""
    WRONG_ENTITY = "wrong_entity"
    """The payload's entity id is not the receiver's."""
    WRONG_MODEL = "wrong_model"
    """The init payload names another display model or TC setting."""
    STALE = "stale"
    """The timestamp is not newer than the newest applied update."""
    UNCHANGED = "unchanged"
    """X4 only: the values equal the last update's, so it is not seen as new (spec 003 §4.3)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Update:
    """An update a sender decided to send."""

    payload: bytes
    """The update payload (``Sender.payload_size`` bytes)."""
    reason: TriggerReason
    """Why it is sent."""
    state: KinematicState
    """The state as the receiver will decode it (quantised); the sender's new ghost."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceiverStatistics:
    """Counters of a receiver."""

    applied: int
    """Update and init payloads applied."""
    dropped: Mapping[DropReason, int]
    """Payloads ignored, by reason."""


def compensated_age(
    timestamp: float, server_time_now: float, *, time_compensation: bool, cap: float | None
) -> float:
    """Return how old an update is taken to be at receipt (spec 000 §2.7, capped TC).

    Args:
        timestamp: The update's send time (s, server time).
        server_time_now: Server time at receipt (s).
        time_compensation: TC on; off returns 0.
        cap: Largest age compensated (s); ``None`` means uncapped.

    Returns:
        ``clamp(server_time_now - timestamp, 0, cap)`` (s), or 0 without TC.
    """
    if not time_compensation:
        return 0.0
    age = max(0.0, server_time_now - timestamp)
    return age if cap is None else min(age, cap)


def check_time_compensation(cap: float | None) -> None:
    """Validate a TC cap.

    Args:
        cap: Cap (s) or ``None``.

    Raises:
        ConfigError: ``cap`` is negative or not finite.
    """
    if cap is not None and not (math.isfinite(cap) and cap >= 0):
        raise ConfigError(f"tc_cap must be a finite number >= 0 s or None, got {cap}")


class _Endpoint:
    """What both halves of a display model hold: entity id, model code, layout and TC flag."""

    def __init__(
        self, *, entity_id: int, model: ModelCode, layout: UpdateLayout, time_compensation: bool
    ) -> None:
        """Check ``entity_id`` (0..255) and keep the model's wire description."""
        if not 0 <= entity_id <= 255:
            raise LocalProtocolError(f"entity_id must be in [0, 255], got {entity_id}")
        self.entity_id = entity_id
        self._model = model
        self._layout = layout
        self._time_compensation = time_compensation

    @property
    def payload_size(self) -> int:
        """Return the update payload size (bytes)."""
        return self._layout.size


class Sender(_Endpoint, ABC):
    """The sending half of a display model: decides when to send and produces the payloads.

    Args:
        entity_id: The entity id written into byte 0 (0..255).
        model: The model code written into the init payload.
        layout: The update payload layout.
        time_compensation: Written into the init payload's flags.

    Attributes:
        entity_id: The entity id (0..255).
        sent: Number of updates sent so far.
    """

    def __init__(
        self, *, entity_id: int, model: ModelCode, layout: UpdateLayout, time_compensation: bool
    ) -> None:
        """Create a sender that has seen no state yet."""
        super().__init__(
            entity_id=entity_id, model=model, layout=layout, time_compensation=time_compensation
        )
        self._state = KinematicState()
        self.sent = 0

    def create_init(self) -> bytes:
        """Return the init payload for the last state seen (spec 000 §3.5 ``createInitValues``)."""
        return encode_init(
            self.entity_id, self._model, self._state, time_compensation=self._time_compensation
        )

    def create_update(self) -> bytes:
        """Return an update payload for the last state seen (``createUpdateValues``)."""
        return self._layout.encode(self.entity_id, self._state)

    def _emit(self, now: float, state: KinematicState, reason: TriggerReason) -> Update:
        self._state = state
        self.sent += 1
        return Update(
            payload=self._layout.encode(self.entity_id, state),
            reason=reason,
            state=self._layout.quantized(state),
        )

    @abstractmethod
    def update(
        self, now: float, state: KinematicState, *, observer_distance: float | None = None
    ) -> Update | None:
        """Take the true state of this frame; return an update to send, or ``None``.

        Args:
            now: Local time (s).
            state: The true state; ``state.t`` is its time in synchronised server time (s).
            observer_distance: Distance (m) to the nearest observer (sensitive-region thresholds).

        Returns:
            The update to send now, or ``None``.
        """


class PeriodicSchedule:
    """A fixed-rate send clock that does not drift and does not burst after a stall.

    Args:
        interval: Time between sends (s).
    """

    def __init__(self, interval: float) -> None:
        """Create a schedule whose first send is due at once."""
        self._interval = interval
        self._due: float | None = None

    def due(self, now: float) -> bool:
        """Return True (and advance) when a send is due at ``now`` (s)."""
        if self._due is not None and now < self._due:
            return False
        self._due = now + self._interval if self._due is None else self._due + self._interval
        if self._due <= now:
            self._due = now + self._interval
        return True


class ThresholdSender(Sender):
    """A sender that runs a ghost and sends when a threshold or trigger fires (DIS-DR, PHB-DR).

    Subclasses provide the ghost (``_ghost_state``) and record what they sent (``_record``).

    Args:
        entity_id: The entity id written into byte 0 (0..255).
        model: The model code written into the init payload.
        layout: The update payload layout.
        time_compensation: Written into the init payload's flags.
        thresholds: The ghost thresholds, heartbeat and pre-reckoning rules.
    """

    def __init__(
        self,
        *,
        entity_id: int,
        model: ModelCode,
        layout: UpdateLayout,
        time_compensation: bool,
        thresholds: ThresholdConfig,
    ) -> None:
        """Create a sender that has sent nothing."""
        super().__init__(
            entity_id=entity_id, model=model, layout=layout, time_compensation=time_compensation
        )
        self._trigger = ThresholdTrigger(thresholds)

    @abstractmethod
    def _ghost_state(self, t: float) -> KinematicState | None:
        """Return the ghost at sample time ``t`` (s, server time), or ``None`` before a send."""

    @abstractmethod
    def _record(self, sent: KinematicState) -> None:
        """Take the quantised state just sent (it moves the ghost)."""

    def update(
        self, now: float, state: KinematicState, *, observer_distance: float | None = None
    ) -> Update | None:
        """Take this frame's true state; return an update if a threshold or trigger fires.

        Args:
            now: Local time (s).
            state: The true state; ``state.t`` in server time (s), strictly increasing.
            observer_distance: Distance (m) to the nearest observer (sensitive region).

        Returns:
            The update to send, or ``None``.
        """
        ghost = self._ghost_state(state.t)
        reason = self._trigger.check(now, state, ghost, observer_distance=observer_distance)
        self._state = state
        if reason is None:
            return None
        update = self._emit(now, state, reason)
        self._record(update.state)
        self._trigger.sent(now)
        return update


class PeriodicSender(Sender):
    """A sender that sends the full state at a fixed rate (interpolation, Hermite, x4).

    Args:
        entity_id: The entity id written into byte 0 (0..255).
        model: The model code written into the init payload.
        layout: The update payload layout.
        time_compensation: Written into the init payload's flags.
        interval: Time between sends (s); the first update is due at once.
    """

    def __init__(
        self,
        *,
        entity_id: int,
        model: ModelCode,
        layout: UpdateLayout,
        time_compensation: bool,
        interval: float,
    ) -> None:
        """Create a sender whose first update is due at once."""
        super().__init__(
            entity_id=entity_id, model=model, layout=layout, time_compensation=time_compensation
        )
        self._schedule = PeriodicSchedule(interval)

    def update(
        self, now: float, state: KinematicState, *, observer_distance: float | None = None
    ) -> Update | None:
        """Return an update when the send interval has elapsed at ``now`` (s), else ``None``.

        Args:
            now: Local time (s).
            state: The true state; ``state.t`` in server time (s).
            observer_distance: Unused (fixed-rate model).

        Returns:
            The update to send, or ``None``.
        """
        self._state = state
        if not self._schedule.due(now):
            return None
        return self._emit(now, state, TriggerReason.PERIODIC)


class Receiver(_Endpoint, ABC):
    """The receiving half of a display model: decodes payloads and places the entity each frame.

    Args:
        entity_id: Only payloads with this entity id are applied.
        model: The model code expected in init payloads.
        layout: The update payload layout.
        time_compensation: The TC flag expected in init payloads.

    Attributes:
        entity_id: The entity id (0..255).
        rtt: Last RTT (s) given to ``observe_link``, or ``None``.
        jitter: Last jitter (s) given to ``observe_link``, or ``None``.
        loss: Last loss fraction given to ``observe_link``, or ``None``.
    """

    def __init__(
        self, *, entity_id: int, model: ModelCode, layout: UpdateLayout, time_compensation: bool
    ) -> None:
        """Create a receiver with nothing received yet."""
        super().__init__(
            entity_id=entity_id, model=model, layout=layout, time_compensation=time_compensation
        )
        self._applied = 0
        self._dropped: Counter[DropReason] = Counter()
        self.rtt: float | None = None
        self.jitter: float | None = None
        self.loss: float | None = None

    def statistics(self) -> ReceiverStatistics:
        """Return the applied and dropped counters."""
        return ReceiverStatistics(
            applied=self._applied, dropped=MappingProxyType(dict(self._dropped))
        )

    def observe_link(self, *, rtt: float, jitter: float = 0.0, loss: float = 0.0) -> None:
        """Take the transport's current link estimates (used by delay- and RTT-based models).

        Args:
            rtt: Smoothed round-trip time (s).
            jitter: Jitter (s).
            loss: Loss fraction in [0, 1].
        """
        self.rtt, self.jitter, self.loss = rtt, jitter, loss

    def _drop(self, reason: DropReason) -> bool:
        self._dropped[reason] += 1
        return False

    def process_init(self, data: bytes, now: float, server_time_now: float | None = None) -> bool:
        """Apply an init payload (spec 000 §3.5 ``processInitValues``); never raises on bad bytes.

        Args:
            data: The init payload.
            now: Local time of receipt (s).
            server_time_now: Server time at receipt (s); ``None`` means equal to ``now``.

        Returns:
            True if applied, False if dropped (and counted).
        """
        server = now if server_time_now is None else server_time_now
        if len(data) != INIT_SIZE:
            return self._drop(DropReason.MALFORMED)
        try:
            init = decode_init(data)
        except DecodeError:
            return self._drop(DropReason.MALFORMED)
        if init.entity_id != self.entity_id:
            return self._drop(DropReason.WRONG_ENTITY)
        if init.model != self._model or init.time_compensation != self._time_compensation:
            return self._drop(DropReason.WRONG_MODEL)
        decoded = DecodedUpdate(entity_id=init.entity_id, state=init.state, timestamped=True)
        return self._accept(decoded, now, server)

    def process_update(self, data: bytes, now: float, server_time_now: float) -> bool:
        """Apply an update payload (spec 000 §3.5 ``processUpdate``); never raises on bad bytes.

        Args:
            data: The update payload.
            now: Local time of receipt (s).
            server_time_now: Synchronised server time at receipt (s).

        Returns:
            True if applied, False if dropped (and counted).
        """
        try:
            decoded = self._layout.decode(data)
        except DecodeError:
            return self._drop(DropReason.MALFORMED)
        if decoded.entity_id != self.entity_id:
            return self._drop(DropReason.WRONG_ENTITY)
        return self._accept(decoded, now, server_time_now)

    def _accept(self, decoded: DecodedUpdate, now: float, server_time_now: float) -> bool:
        reason = self._apply(decoded, now, server_time_now)
        if reason is not None:
            return self._drop(reason)
        self._applied += 1
        return True

    @abstractmethod
    def _apply(
        self, decoded: DecodedUpdate, now: float, server_time_now: float
    ) -> DropReason | None:
        """Apply a decoded update; return a drop reason instead to ignore it."""

    @abstractmethod
    def display(self, now: float) -> DisplayState | None:
        """Return where to draw the entity in the frame at local time ``now`` (s).

        Args:
            now: Local time of the render frame (s); non-decreasing between calls.

        Returns:
            The displayed state, or ``None`` before anything was received.
        """
