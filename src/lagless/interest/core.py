"""Vectorised per-(client, object) state shared by every interest policy (the MEC of spec 001 §2.5).

Implements the server data structures of spec 001 §2.5 and §3.9 as numpy arrays instead of the
thesis's nested dictionaries: the consistency-state matrix (last send time, pending updates, last
value sent) sized (client capacity × object capacity), the primary repository's positions,
headings and owners, and each client's pivots. Capacities grow by doubling; freed ids are reused
lowest first, so the working prefix stays compact. A round looks only at pairs with pending
updates, and the policy's ``_decide`` works on dense (client slots × object slots) arrays.

Ambiguity decisions (spec 001 §6.2):

* An object is never sent to its owner: ``update_received`` leaves the owner's pending count at 0
  (``tests/interest/test_vfc.py::test_owner_never_receives_own_object``).
* Initial state: a new pair has ``last_sent = -inf`` and is sent at its first round with pending
  updates, whatever κ says (``Trigger.FIRST``). A newly added client starts with one pending
  update for every object whose state is known, so its first round is a full snapshot
  (``test_new_client_gets_snapshot``).
* ``remove_client`` keeps the objects it owned (unowned); ``remove_object`` drops the object from
  every pivot list (``test_remove_object_clears_pivots_and_ids_are_reused``).
* Several updates of one object in one ``update_received`` call count as several updates (σ).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError
from lagless.interest.events import within_radius
from lagless.interest.policy import InterestConfig, InterestStatistics, SendPlan, Trigger
from lagless.interest.view import View, dot, normal_view

_BOUNDS = (Trigger.THETA, Trigger.SIGMA, Trigger.NU)

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.intp]
FloatArray = npt.NDArray[np.float64]


class _IdPool:
    """Small-integer ids, freed ones reused lowest first."""

    def __init__(self) -> None:
        self._free: list[int] = []
        self.slots = 0

    def take(self) -> int:
        if self._free:
            return heapq.heappop(self._free)
        self.slots += 1
        return self.slots - 1

    def give(self, ident: int) -> None:
        heapq.heappush(self._free, ident)


def _grown(array: np.ndarray, axis: int, size: int, fill: float) -> np.ndarray:
    """Return ``array`` enlarged along ``axis`` to ``size``, new entries set to ``fill``."""
    shape = list(array.shape)
    shape[axis] = size
    out = np.full(shape, fill, dtype=array.dtype)
    index = tuple(slice(0, n) for n in array.shape)
    out[index] = array
    return out


class PolicyCore:
    """Shared state and round mechanics of the interest policies (spec 001 §2.5).

    Subclasses implement ``_decide(now, candidate, first)``; everything else (ids,
    growth, ownership, pivots, pending counts, resets, statistics, sound filtering) lives here.
    """

    def __init__(self, config: InterestConfig, *, value_dims: int) -> None:
        """Allocate the arrays at the configured initial capacities.

        Args:
            config: sizes and timing.
            value_dims: length of the value vector compared for ν (0 when unused).
        """
        self.config = config
        self._dim = config.dim
        self._value_dims = value_dims
        self._clients = _IdPool()
        self._objects = _IdPool()
        nc, no, p = config.initial_clients, config.initial_objects, config.max_pivots
        self._client_active = np.zeros(nc, dtype=np.bool_)
        self._pivots = np.full((nc, p), -1, dtype=np.intp)
        self._views: dict[int, View] = {}
        self._object_active = np.zeros(no, dtype=np.bool_)
        self._known = np.zeros(no, dtype=np.bool_)
        self._owner = np.full(no, -1, dtype=np.intp)
        self._pos = np.zeros((no, self._dim), dtype=np.float64)
        self._heading = np.zeros((no, self._dim), dtype=np.float64)
        self._value = np.zeros((no, value_dims), dtype=np.float64)
        self._pending = np.zeros((nc, no), dtype=np.int64)
        self._last_sent = np.full((nc, no), -math.inf, dtype=np.float64)
        self._last_value = np.zeros((nc, no, value_dims), dtype=np.float64)
        self._rounds = 0
        self._updates = 0
        self._last_round: float | None = None
        self._triggers = np.zeros(len(Trigger), dtype=np.int64)
        self._exceeded = np.zeros(len(Trigger), dtype=np.int64)

    # -- registration -------------------------------------------------------------------------

    def add_client(self) -> int:
        """Register a client (spec 001 §3.4); it gets a snapshot of known objects next round.

        Returns:
            The new client id (the lowest free one).
        """
        client = self._clients.take()
        if client >= self._client_active.shape[0]:
            self._grow_clients(2 * self._client_active.shape[0])
        self._client_active[client] = True
        self._pivots[client] = -1
        self._last_sent[client] = -math.inf
        self._pending[client] = 0
        self._pending[client, : self._objects.slots] = self._known[: self._objects.slots]
        self._on_client_added(client)
        return client

    def remove_client(self, client: int) -> None:
        """Forget a client; objects it owned stay registered, without an owner.

        Args:
            client: an active client id.

        Raises:
            LocalProtocolError: the client is not registered.
        """
        self._check_client(client)
        self._client_active[client] = False
        self._pending[client] = 0
        self._pivots[client] = -1
        self._views.pop(client, None)
        self._owner[self._owner == client] = -1
        self._clients.give(client)

    def add_object(self, owner: int | None = None) -> int:
        """Register an object; it is sent to nobody until its first ``update_received``.

        Args:
            owner: the client that writes this object (it is never sent to it), or ``None``.

        Returns:
            The new object id (the lowest free one).

        Raises:
            LocalProtocolError: the owner is not a registered client.
        """
        if owner is not None:
            self._check_client(owner)
        obj = self._objects.take()
        if obj >= self._object_active.shape[0]:
            self._grow_objects(2 * self._object_active.shape[0])
        self._object_active[obj] = True
        self._known[obj] = False
        self._owner[obj] = -1 if owner is None else owner
        self._pos[obj] = 0.0
        self._heading[obj] = 0.0
        self._value[obj] = 0.0
        self._pending[:, obj] = 0
        self._last_sent[:, obj] = -math.inf
        return obj

    def remove_object(self, obj: int) -> None:
        """Forget an object and drop it from every client's pivot list.

        Args:
            obj: an active object id.

        Raises:
            LocalProtocolError: the object is not registered.
        """
        self._check_object(obj)
        self._object_active[obj] = False
        self._known[obj] = False
        self._pending[:, obj] = 0
        self._pivots[self._pivots == obj] = -1
        self._objects.give(obj)

    def set_view(self, client: int, view: View) -> None:
        """Replace a client's view (spec 001 §2.8, ``SetPhi``); it applies from the next round.

        Args:
            client: an active client id.
            view: the new view.

        Raises:
            LocalProtocolError: the client is not registered or view is not a ``View``.
        """
        self._check_client(client)
        if not isinstance(view, View):
            raise LocalProtocolError(f"view must be a lagless.interest.View, got {view!r}")
        self._views[client] = view
        self._on_view_changed(client, view)

    def view_of(self, client: int) -> View:
        """Return a client's current view (``GetPhi``); the default one if never set.

        Args:
            client: an active client id.

        Returns:
            The view.
        """
        self._check_client(client)
        return self._views.get(client, self._default_view())

    def set_pivots(self, client: int, pivots: Sequence[int]) -> None:
        """Replace a client's pivot objects (spec 001 §2.4, §2.8 spectator switch).

        Args:
            client: an active client id.
            pivots: distinct active object ids, at most ``config.max_pivots``; may be empty.

        Raises:
            LocalProtocolError: unknown client or object, duplicates, or too many pivots.
        """
        self._check_client(client)
        ids = [int(p) for p in pivots]
        if len(ids) > self.config.max_pivots or len(set(ids)) != len(ids):
            raise LocalProtocolError(
                f"pivots must be at most {self.config.max_pivots} distinct object ids, got {ids}"
            )
        for obj in ids:
            self._check_object(obj)
        self._pivots[client] = -1
        self._pivots[client, : len(ids)] = ids

    def pivots_of(self, client: int) -> list[int]:
        """Return a client's pivot object ids.

        Args:
            client: an active client id.

        Returns:
            The pivot ids, in the order given to ``set_pivots``.
        """
        self._check_client(client)
        return [int(p) for p in self._pivots[client] if p >= 0]

    # -- updates and rounds -------------------------------------------------------------------

    def update_received(
        self,
        object_ids: npt.ArrayLike,
        positions: npt.ArrayLike,
        values: npt.ArrayLike | None,
        now: float,
        *,
        headings: npt.ArrayLike | None = None,
    ) -> None:
        """Take new object states from their owners (spec 001 §2.5 ``update-received``).

        Every non-owner client's pending count of each object goes up by one per update.
        ``now`` does not enter the bounds (θ counts from the last send); it is accepted so
        every input of a protocol object carries the time.

        Args:
            object_ids: active object ids, shape (n,); repeats count as several updates and the
                last state wins.
            positions: positions in metres, shape (n, dim).
            values: value vectors compared for ν, shape (n, value_dims); ``None`` uses the
                positions (the thesis's displacement, §2.7).
            now: current time, seconds.
            headings: orientation vectors, shape (n, dim), normalised here (zero = none);
                ``None`` keeps the previous headings.

        Raises:
            LocalProtocolError: unknown object id or wrongly shaped arrays.
        """
        ids = np.asarray(object_ids, dtype=np.intp).reshape(-1)
        n = ids.shape[0]
        pos = self._rows(positions, n, self._dim, "positions")
        if ids.size and (
            ids.min() < 0 or ids.max() >= self._objects.slots or not self._object_active[ids].all()
        ):
            raise LocalProtocolError(f"object_ids must be registered objects, got {ids.tolist()}")
        self._pos[ids] = pos
        if self._value_dims:
            if values is None and self._value_dims != self._dim:
                raise LocalProtocolError(
                    f"values are required: value_dims is {self._value_dims}, not dim {self._dim}"
                )
            vals = pos if values is None else self._rows(values, n, self._value_dims, "values")
            self._value[ids] = vals
        if headings is not None:
            head = self._rows(headings, n, self._dim, "headings")
            norm = np.sqrt(dot(head, head))
            safe = np.where(norm > 0.0, norm, 1.0)
            self._heading[ids] = head / safe[:, None]
        self._known[ids] = True
        uniq, counts = np.unique(ids, return_counts=True)
        nc = self._clients.slots
        active = self._client_active[:nc, None]
        self._pending[:nc, uniq] += counts[None, :] * active
        owners = self._owner[uniq]
        owned = owners >= 0
        self._pending[owners[owned], uniq[owned]] = 0
        self._updates += n

    def round(self, now: float) -> SendPlan:
        """Run one server round (spec 001 §2.5 ``round-triggered``) over all pairs at once.

        Pairs with no pending update are skipped; the policy decides the rest as dense
        (clients × objects) arrays; every pair sent is reset (``last_sent = now``, pending 0,
        last value = current value).

        Args:
            now: current time, seconds.

        Returns:
            The pairs to send this round, sorted by client then object.
        """
        nc, no = self._clients.slots, self._objects.slots
        pending = self._pending[:nc, :no]
        last_sent = self._last_sent[:nc, :no]
        candidate = pending > 0
        first = candidate & np.isneginf(last_sent)
        send, bounds = self._decide(now, candidate, first)
        flat = np.flatnonzero(send)
        clients, objects = np.divmod(flat, max(no, 1))
        reasons = np.full(flat.shape[0], Trigger.INTEREST, dtype=np.int8)
        if bounds is not None:
            reasons[:] = Trigger.NU
            for trigger, mask in reversed(tuple(zip(_BOUNDS, bounds, strict=True))):
                hit = mask.reshape(-1)[flat]
                reasons[hit] = trigger
                self._exceeded[trigger] += int(np.count_nonzero(hit & ~first.reshape(-1)[flat]))
        reasons[first.reshape(-1)[flat]] = Trigger.FIRST
        last_sent[send] = now
        pending[send] = 0
        if self._value_dims:
            self._last_value[:nc, :no][send] = self._value[objects]
        self._triggers += np.bincount(reasons, minlength=len(Trigger))
        self._rounds += 1
        self._last_round = now
        return SendPlan(
            clients=clients.astype(np.intp), objects=objects.astype(np.intp), reasons=reasons
        )

    def next_timer(self) -> float | None:
        """Return the absolute time (s) of the next round, or ``None`` before the first round."""
        if self._last_round is None:
            return None
        return self._last_round + self.config.round_period

    # -- events ---------------------------------------------------------------------------------

    def filter_sound(self, origin: npt.ArrayLike, radius: float) -> BoolArray:
        """Clients concerned by a positional sound (spec 001 §3.6): a pivot within ``radius``.

        Args:
            origin: sound position in metres, shape (dim,).
            radius: audible radius in metres (inclusive).

        Returns:
            Boolean mask indexed by client id (length = client id slots); clients without a
            pivot are never concerned.
        """
        pos, valid = self._pivot_geometry()
        return within_radius(pos, valid, self._point(origin, "origin"), radius)

    def statistics(self) -> InterestStatistics:
        """Return the counters, including the bound-trigger histogram (spec 001 §3.12)."""
        return InterestStatistics(
            rounds=self._rounds,
            sends=int(self._triggers.sum()),
            triggers={t: int(self._triggers[t]) for t in Trigger},
            exceeded={
                t: int(self._exceeded[t]) for t in (Trigger.THETA, Trigger.SIGMA, Trigger.NU)
            },
            updates=self._updates,
            clients=int(self._client_active.sum()),
            objects=int(self._object_active.sum()),
        )

    # -- for subclasses ---------------------------------------------------------------------------

    def _decide(
        self, now: float, candidate: BoolArray, first: BoolArray
    ) -> tuple[BoolArray, tuple[BoolArray, BoolArray, BoolArray] | None]:
        """Decide the sends of one round; implemented by each policy.

        Args:
            now: current time, seconds.
            candidate: pairs with pending updates, shape (client slots, object slots).
            first: candidate pairs never sent before, same shape.

        Returns:
            The send mask (a subset of ``candidate``) and, for VFC, the θ, σ, ν exceeded masks
            (used for the trigger histogram), or ``None`` for a baseline.
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def _default_view(self) -> View:
        """The view of a client that never called ``set_view``."""
        return normal_view()

    def _on_client_added(self, client: int) -> None:
        """Hook: a client id was (re)used."""

    def _on_view_changed(self, client: int, view: View) -> None:
        """Hook: a client's view changed."""

    def _grow_clients(self, size: int) -> None:
        self._client_active = _grown(self._client_active, 0, size, False)
        self._pivots = _grown(self._pivots, 0, size, -1)
        self._pending = _grown(self._pending, 0, size, 0)
        self._last_sent = _grown(self._last_sent, 0, size, -math.inf)
        self._last_value = _grown(self._last_value, 0, size, 0.0)

    def _grow_objects(self, size: int) -> None:
        self._object_active = _grown(self._object_active, 0, size, False)
        self._known = _grown(self._known, 0, size, False)
        self._owner = _grown(self._owner, 0, size, -1)
        self._pos = _grown(self._pos, 0, size, 0.0)
        self._heading = _grown(self._heading, 0, size, 0.0)
        self._value = _grown(self._value, 0, size, 0.0)
        self._pending = _grown(self._pending, 1, size, 0)
        self._last_sent = _grown(self._last_sent, 1, size, -math.inf)
        self._last_value = _grown(self._last_value, 1, size, 0.0)

    def _pivot_geometry(self) -> tuple[FloatArray, BoolArray]:
        """Pivot positions (clients, pivots, dim) and validity (known object) for all clients."""
        ids = self._pivots[: self._clients.slots]
        safe = np.maximum(ids, 0)
        valid = (ids >= 0) & self._known[safe]
        return self._pos[safe], valid

    def _pivot_slot(self, slot: int) -> tuple[IntArray, FloatArray, FloatArray]:
        """Clients whose pivot ``slot`` holds a known object, with its position and heading.

        Returns:
            ``(rows, positions (len(rows), dim), headings (len(rows), dim))``.
        """
        ids = self._pivots[: self._clients.slots, slot]
        rows = np.flatnonzero((ids >= 0) & self._known[np.maximum(ids, 0)])
        pivots = ids[rows]
        return rows, self._pos[pivots], self._heading[pivots]

    def _object_columns(self) -> list[FloatArray]:
        """Object positions as one contiguous (1, object slots) row per axis (for broadcasting)."""
        pos = self._pos[: self._objects.slots]
        return [np.ascontiguousarray(pos[:, i])[None, :] for i in range(self._dim)]

    def _point(self, point: npt.ArrayLike, name: str) -> FloatArray:
        arr = np.asarray(point, dtype=np.float64)
        if arr.shape != (self._dim,):
            raise LocalProtocolError(f"{name} must have shape ({self._dim},), got {arr.shape}")
        return arr

    def _rows(self, data: npt.ArrayLike, n: int, width: int, name: str) -> FloatArray:
        arr = np.asarray(data, dtype=np.float64)
        if arr.shape != (n, width):
            raise LocalProtocolError(f"{name} must have shape ({n}, {width}), got {arr.shape}")
        return arr

    def _check_client(self, client: int) -> None:
        if not 0 <= client < self._clients.slots or not self._client_active[client]:
            raise LocalProtocolError(f"client must be a registered client id, got {client!r}")

    def _check_object(self, obj: int) -> None:
        if not 0 <= obj < self._objects.slots or not self._object_active[obj]:
            raise LocalProtocolError(f"object must be a registered object id, got {obj!r}")
