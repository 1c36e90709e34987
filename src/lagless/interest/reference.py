"""A naive per-pair VFC reference: the thesis's dictionaries and loops, for tests and benchmarks.

Implements spec 001 §2.5 and §3.9 literally, as the thesis's C# did: the MEC is three nested
dictionaries keyed by client then object, and ``round`` loops over every (client, object) pair in
Python, classifying each with scalar ``math``. It takes every decision of ``VfcPolicy`` (see that
module's docstring) with the same floating-point formulas, so the two must produce identical
send plans (``tests/interest/test_reference.py``); ``benchmarks/vfc.py`` times both. It is
deliberately slow: never use it in a server.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError
from lagless.interest.policy import SendPlan, Trigger
from lagless.interest.vfc import NuMode, VfcConfig
from lagless.interest.view import COS_TOLERANCE, View

Vector = list[float]


class NaiveVfcPolicy:
    """Per-pair Python reference of ``VfcPolicy`` (same ids, same decisions, O(C·O) loop)."""

    def __init__(self, config: VfcConfig | None = None) -> None:
        """Create an empty reference policy.

        Args:
            config: the same configuration ``VfcPolicy`` would get.
        """
        self.config = VfcConfig() if config is None else config
        self._free_clients: list[int] = []
        self._free_objects: list[int] = []
        self._client_slots = 0
        self._object_slots = 0
        self._views: dict[int, View] = {}
        self._pivots: dict[int, list[int]] = {}
        self._owner: dict[int, int | None] = {}
        self._pos: dict[int, Vector] = {}
        self._heading: dict[int, Vector] = {}
        self._value: dict[int, Vector] = {}
        self._known: set[int] = set()
        self._last_sent: dict[int, dict[int, float]] = {}
        self._pending: dict[int, dict[int, int]] = {}
        self._last_value: dict[int, dict[int, Vector]] = {}

    def add_client(self) -> int:
        """Register a client; it gets one pending update of every known object."""
        if self._free_clients:
            client = heapq.heappop(self._free_clients)
        else:
            client = self._client_slots
            self._client_slots += 1
        self._views[client] = self.config.default_view
        self._pivots[client] = []
        self._last_sent[client] = {}
        self._last_value[client] = {}
        self._pending[client] = {o: 1 for o in self._known}
        return client

    def remove_client(self, client: int) -> None:
        """Forget a client; its objects become unowned."""
        for table in (self._views, self._pivots, self._last_sent, self._pending, self._last_value):
            del table[client]
        for obj, owner in self._owner.items():
            if owner == client:
                self._owner[obj] = None
        heapq.heappush(self._free_clients, client)

    def add_object(self, owner: int | None = None) -> int:
        """Register an object owned by ``owner``."""
        if self._free_objects:
            obj = heapq.heappop(self._free_objects)
        else:
            obj = self._object_slots
            self._object_slots += 1
        self._owner[obj] = owner
        dim = self.config.dim
        self._pos[obj] = [0.0] * dim
        self._heading[obj] = [0.0] * dim
        for client in self._pending:
            self._pending[client].pop(obj, None)
            self._last_sent[client].pop(obj, None)
            self._last_value[client].pop(obj, None)
        return obj

    def remove_object(self, obj: int) -> None:
        """Forget an object and drop it from every pivot list."""
        del self._owner[obj]
        self._known.discard(obj)
        for client in self._pending:
            self._pending[client].pop(obj, None)
            self._pivots[client] = [p for p in self._pivots[client] if p != obj]
        heapq.heappush(self._free_objects, obj)

    def set_view(self, client: int, view: View) -> None:
        """Replace a client's view."""
        self._views[client] = view

    def set_pivots(self, client: int, pivots: Sequence[int]) -> None:
        """Replace a client's pivots."""
        self._pivots[client] = [int(p) for p in pivots]

    def update_received(
        self,
        object_ids: npt.ArrayLike,
        positions: npt.ArrayLike,
        values: npt.ArrayLike | None,
        now: float,
        *,
        headings: npt.ArrayLike | None = None,
    ) -> None:
        """Store the new states and count one pending update per non-owner client."""
        del now
        ids = np.asarray(object_ids).reshape(-1).tolist()
        pos = np.asarray(positions, dtype=np.float64).tolist()
        vals = pos if values is None else np.asarray(values, dtype=np.float64).tolist()
        head = None if headings is None else np.asarray(headings, dtype=np.float64).tolist()
        for k, obj in enumerate(ids):
            if obj not in self._owner:
                raise LocalProtocolError(f"object_ids must be registered objects, got {obj}")
            self._pos[obj] = pos[k]
            self._value[obj] = vals[k]
            if head is not None:
                norm = math.sqrt(_dot(head[k], head[k]))
                safe = norm if norm > 0.0 else 1.0
                self._heading[obj] = [h / safe for h in head[k]]
            self._known.add(obj)
            for client, pending in self._pending.items():
                if self._owner[obj] != client:
                    pending[obj] = pending.get(obj, 0) + 1

    def round(self, now: float) -> SendPlan:
        """Run ``round-triggered`` pair by pair (spec 001 §2.5)."""
        out_c: list[int] = []
        out_o: list[int] = []
        out_r: list[int] = []
        for client in sorted(self._pending):
            pending = self._pending[client]
            for obj in sorted(pending):
                if pending[obj] == 0:
                    continue
                reason = self._check(client, obj, now)
                if reason is None:
                    continue
                out_c.append(client)
                out_o.append(obj)
                out_r.append(reason)
                self._last_sent[client][obj] = now
                pending[obj] = 0
                self._last_value[client][obj] = list(self._value[obj])
        return SendPlan(
            clients=np.array(out_c, dtype=np.intp),
            objects=np.array(out_o, dtype=np.intp),
            reasons=np.array(out_r, dtype=np.int8),
        )

    def _check(self, client: int, obj: int, now: float) -> int | None:
        """Return the trigger for one pair, or ``None`` when no bound is exceeded."""
        last = self._last_sent[client].get(obj, -math.inf)
        if last == -math.inf:
            return int(Trigger.FIRST)
        view = self._views[client]
        cfg = self.config
        theta = sigma = nu_abs = math.inf
        found = False
        for pivot in self._pivots[client]:
            if pivot not in self._known:
                continue
            found = True
            delta = [a - b for a, b in zip(self._pos[obj], self._pos[pivot], strict=True)]
            d2 = _dot(delta, delta)
            zone = sum(1 for z in range(view.zones - 1) if d2 > float(view.radii_squared[z]))
            heading = self._heading[pivot]
            norm = math.sqrt(d2 * _dot(heading, heading))
            cosine = _dot(delta, heading) / norm if norm > 0.0 else 1.0
            band = sum(
                1 for j in range(view.bands - 1) if cosine < float(view.cos_half[j]) - COS_TOLERANCE
            )
            if cfg.nu_mode is NuMode.DISTANCE:
                base = max(math.sqrt(d2), cfg.nu_min_distance)
            else:
                base = cfg.nu_reference
            theta = min(theta, float(view.theta[zone, band]))
            sigma = min(sigma, float(view.sigma[zone, band]))
            nu_abs = min(nu_abs, float(view.nu[zone, band]) * base)
        if not found:
            theta = float(view.theta[-1, -1])
            sigma = float(view.sigma[-1, -1])
            nu_abs = float(view.nu[-1, -1]) * cfg.nu_reference
        if now - last > theta:
            return int(Trigger.THETA)
        if self._pending[client][obj] > sigma:
            return int(Trigger.SIGMA)
        diff = [a - b for a, b in zip(self._value[obj], self._last_value[client][obj], strict=True)]
        if math.sqrt(_dot(diff, diff)) > nu_abs:
            return int(Trigger.NU)
        return None


def _dot(a: Vector, b: Vector) -> float:
    """Dot product summed left to right."""
    total = a[0] * b[0]
    for x, y in zip(a[1:], b[1:], strict=True):
        total = total + x * y
    return total
