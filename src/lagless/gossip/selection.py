"""Weighted random recipient selection of Silac (spec 002 §3.7–§3.8, Eq. 2.1–2.6).

v = α1·d + α2·a + α3·b (Eq. 2.1), p = v / Σv (Eq. 2.2), d = 1 - |x_j - x_k| / D_max (Eq. 2.3),
a = exp(-β²/2) (Eq. 2.4), b = fb_k / fb_max (Eq. 2.5), v' = v - α4·s_k (Eq. 2.6). Vectorised
over all candidates with numpy. Decisions (spec 002 §7.6, §7.7), pinned in
``tests/gossip/test_selection.py``:

* Draws are sequential **without replacement**, recomputing p over the remaining candidates
  before each draw ("before each draw every node's probability is computed")
  (``test_single_draw_matches_eq_2_2``, ``test_draws_are_distinct_and_capped``).
* Negative v' is clamped to 0; when every remaining weight is 0 the draw is uniform over the
  remaining candidates, so the fan-out is honoured whenever enough peers are known
  (``test_zero_weights_fall_back_to_uniform``).
* d is clamped to [0, 1] for distances beyond D_max; β with a zero facing vector is π/2, and a
  candidate at the sender's own position has β = 0 (``test_weights_match_eq_2_1_and_2_6``).
* A candidate with unknown position gets d = 0 and a = 0 (only its bandwidth counts)
  (``test_unknown_position_counts_only_bandwidth``).
* b_k of a peer that never sent a tail is ``GossipConfig.unknown_bandwidth``; when every known
  advertisement is 0, b_k = 0 for the advertisers (Eq. 2.5 is undefined there). fb_max is the
  largest value advertised by any known node, a candidate of this draw or not (§3.7: "the
  largest value reported by any known node").
* `RecipientSelector` is what a peer uses: the same law, computed incrementally (its docstring
  says how; ``test_selector_matches_exact_probabilities``).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError
from lagless.gossip.config import GossipConfig
from lagless.gossip.messages import AvatarState, Vec3
from lagless.gossip.table import PeerRecord, PeerTable

__all__ = [
    "RecipientSelector",
    "draw_recipients",
    "goal_function",
    "select_peers",
    "selection_weights",
]

FloatArray = npt.NDArray[np.float64]

_PROPOSALS = 32  # rejected proposals in a row before a draw is computed directly


def goal_function(beta: float) -> float:
    """Return a = exp(-β²/2), the goal function of Eq. 2.4.

    Args:
        beta: Angle between the sender's facing and the direction to the candidate, radians.

    Returns:
        A value in (0, 1]; 1 straight ahead, 0.291 at π/2, 0.0072 at π.

    Examples:
        >>> round(goal_function(math.pi / 2), 3), round(goal_function(math.pi), 4)
        (0.291, 0.0072)
    """
    return math.exp(-beta * beta / 2.0)


def selection_weights(
    position: Vec3,
    facing: Vec3,
    candidates: npt.ArrayLike,
    known: npt.ArrayLike,
    bandwidth: npt.ArrayLike,
    penalised: npt.ArrayLike,
    *,
    d_max: float,
    alphas: tuple[float, float, float, float] = (1.0, 1.0, 0.5, 1.0),
) -> FloatArray:
    """Return the clamped weights v' of Eq. 2.1 and 2.6 for every candidate.

    Args:
        position: The sender's avatar position, metres.
        facing: The sender's facing direction (any length; zero means "no facing").
        candidates: (n, 3) candidate avatar positions, metres.
        known: (n,) bool, False where the candidate's position is unknown.
        bandwidth: (n,) b_k in [0, 1] (Eq. 2.5, already divided by fb_max).
        penalised: (n,) bool, s_k of Eq. 2.6 (listed in a received tail).
        d_max: D_max of Eq. 2.3, metres.
        alphas: (α1, α2, α3, α4).

    Returns:
        (n,) float64 weights, each >= 0.

    Examples:
        >>> w = selection_weights((0, 0, 0), (1, 0, 0), [[10, 0, 0], [-10, 0, 0]], [True, True],
        ...                       [1.0, 1.0], [False, True], d_max=100.0)
        >>> [round(float(x), 4) for x in w]
        [2.4, 0.4072]
    """
    a1, a2, a3, a4 = alphas
    pos = np.asarray(candidates, dtype=np.float64).reshape(-1, 3)
    known_mask = np.asarray(known, dtype=bool)
    delta = pos - np.asarray(position, dtype=np.float64)
    dist = np.sqrt(np.einsum("ij,ij->i", delta, delta))
    d = np.clip(1.0 - dist / d_max, 0.0, 1.0)
    f = np.asarray(facing, dtype=np.float64)
    f_norm = float(np.sqrt(f @ f))
    if f_norm == 0.0:
        beta = np.full(len(pos), math.pi / 2)
    else:
        cos = (delta @ f) / np.where(dist > 0.0, dist * f_norm, 1.0)
        beta = np.where(dist > 0.0, np.arccos(np.clip(cos, -1.0, 1.0)), 0.0)
    a = np.exp(-(beta**2) / 2.0)
    v = np.where(known_mask, a1 * d + a2 * a, 0.0) + a3 * np.asarray(bandwidth, dtype=np.float64)
    v = v - a4 * np.asarray(penalised, dtype=np.float64)
    return np.maximum(v, 0.0)


def draw_recipients(
    weights: Sequence[float] | FloatArray, fanout: int, *, rng: random.Random
) -> list[int]:
    """Draw up to ``fanout`` distinct indices, each with p = v / Σv over those left (Eq. 2.2).

    Args:
        weights: Non-negative weights v'.
        fanout: How many to draw, >= 0.
        rng: The injected random generator.

    Returns:
        Indices into ``weights`` in draw order; ``min(fanout, len(weights))`` of them.

    Raises:
        LocalProtocolError: ``fanout`` is negative or a weight is negative or not finite.
    """
    w = np.array(weights, dtype=np.float64)
    if fanout < 0:
        raise LocalProtocolError(f"fanout must be >= 0, got {fanout}")
    if len(w) and not (np.all(np.isfinite(w)) and np.all(w >= 0.0)):
        raise LocalProtocolError("weights must be finite and >= 0")
    live = w.copy()  # v' of the candidates not drawn yet; drawn ones are zeroed
    remaining = np.ones(len(w), dtype=bool)
    chosen: list[int] = []
    for _ in range(min(fanout, len(w))):
        total = float(live.sum())
        if total <= 0.0:
            idx = np.flatnonzero(remaining)
            pick = int(idx[rng.randrange(len(idx))])
        else:
            cumulative = np.cumsum(live)
            pick = int(np.searchsorted(cumulative, rng.random() * total, side="right"))
            pick = min(pick, len(w) - 1)
            while live[pick] == 0.0:
                pick -= 1
        chosen.append(pick)
        remaining[pick] = False
        live[pick] = 0.0
    return chosen


def _alphas(config: GossipConfig) -> tuple[float, float, float, float]:
    return (
        config.alpha_distance,
        config.alpha_angle,
        config.alpha_bandwidth,
        config.alpha_penalty,
    )


class RecipientSelector:
    """Draws S over one `PeerTable` (Eq. 2.1-2.6), keeping the weights between draws.

    The same distribution as `select_peers` over the table's addressed peers, at a fraction of
    the cost: a node draws S for its own frame and for every forward (about ten draws per frame
    with f = 3), while only the few peers heard from since the last draw change weight.

    * The base weight v = α1·d + α2·a + α3·b of every addressed peer is cached per table slot
      with its cumulative sum; a draw recomputes only the slots the table reports as changed,
      all of them when the own avatar moved or turned, and the b term of all of them when an
      advertised bandwidth changed.
    * Exclusions and penalties are applied by rejection: a slot is proposed with probability
      v / Σv and accepted with probability v' / v (0 when excluded or already drawn,
      max(v - α4, 0) / v when penalised). An accepted slot is therefore drawn with probability
      v' / Σv' over the slots left, exactly Eq. 2.2 recomputed before each draw. When the slots
      left hold under a quarter of Σv, or 32 proposals in a row are rejected, the draw falls back
      to the direct computation (uniform when every v' left is 0), which has the same law
      (``test_selector_matches_exact_probabilities``).
    * fb_max of Eq. 2.5 is the largest value advertised by any known node (spec 002 §3.7),
      excluded or not.

    Args:
        table: The peer table the draws are made from.
        config: Supplies the alphas, D_max, the fan-out and the default b for silent peers.
    """

    def __init__(self, table: PeerTable, config: GossipConfig) -> None:
        self._table = table
        self._config = config
        self._alphas = _alphas(config)
        self._own: tuple[Vec3, Vec3] | None = None
        self._geo: FloatArray = np.zeros(0)
        self._bterm: FloatArray = np.zeros(0)
        self._bw_version = -1
        self._v: FloatArray = np.zeros(0)
        self._cum: FloatArray = np.zeros(0)
        self._candidate: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._count = 0

    def _refresh(self, avatar: AvatarState) -> None:
        table = self._table
        pos, has_pos, bw = table.columns()
        changed = table.take_changed()
        own = (avatar.position, avatar.facing)
        a3 = self._alphas[2]
        full = own != self._own or len(self._geo) != len(bw)
        if full:
            self._own = own
            self._geo = self._geometry(avatar, pos, has_pos)
        elif changed:
            idx = np.fromiter(changed, dtype=np.int64, count=len(changed))
            self._geo[idx] = self._geometry(avatar, pos[idx], has_pos[idx])
        bw_changed = table.bandwidth_version != self._bw_version
        if full or bw_changed:
            self._bw_version = table.bandwidth_version
            silent = np.isnan(bw)
            advertised = bw[~silent]
            fb_max = float(advertised.max()) if len(advertised) else 0.0
            with np.errstate(invalid="ignore", divide="ignore"):
                b = np.where(silent, self._config.unknown_bandwidth, bw / fb_max if fb_max else 0.0)
            self._bterm = a3 * b
        if full or changed or bw_changed:
            self._candidate = table.addressable()
            self._count = int(self._candidate.sum())
            self._v = np.where(self._candidate, self._geo + self._bterm, 0.0)
            self._cum = np.cumsum(self._v)

    def _geometry(
        self, avatar: AvatarState, pos: FloatArray, has_pos: npt.NDArray[np.bool_]
    ) -> FloatArray:
        a1, a2, _, _ = self._alphas
        return selection_weights(
            avatar.position,
            avatar.facing,
            pos,
            has_pos,
            np.zeros(len(pos)),
            np.zeros(len(pos)),
            d_max=self._config.d_max,
            alphas=(a1, a2, 0.0, 0.0),
        )

    def select(
        self,
        avatar: AvatarState,
        exclude: set[int],
        penalised: set[int],
        *,
        rng: random.Random,
        fanout: int | None = None,
    ) -> list[PeerRecord]:
        """Draw S from the addressed peers minus ``exclude``, measured from ``avatar``.

        Args:
            avatar: The sender's own avatar.
            exclude: Avatar ids never drawn (originator, senders of copies).
            penalised: Avatar ids named in a received tail (s_k = 1 in Eq. 2.6).
            rng: The injected random generator.
            fanout: Recipients to draw; ``None``: ``config.fanout``.

        Returns:
            Up to ``fanout`` distinct records in draw order.
        """
        self._refresh(avatar)
        table = self._table
        blocked: set[int] = set()
        for aid in exclude:
            record = table.get(aid)
            if record is not None and self._candidate[record.slot]:
                blocked.add(record.slot)
        want = min(self._config.fanout if fanout is None else fanout, self._count - len(blocked))
        if want <= 0:
            return []
        marked = {r.slot for r in map(table.get, penalised) if r is not None}
        a4 = self._alphas[3]
        v, cum = self._v, self._cum
        total = float(cum[-1])
        left = total - sum(float(v[k]) for k in blocked)
        chosen: list[int] = []
        while len(chosen) < want:
            slot = -1
            if left > 0.25 * total:
                for _ in range(_PROPOSALS):
                    k = int(cum.searchsorted(rng.random() * total, side="right"))
                    if k >= len(v) or k in blocked:
                        continue
                    vk = float(v[k])
                    if vk <= 0.0 or (k in marked and rng.random() * vk >= vk - a4):
                        continue
                    slot = k
                    break
            if slot < 0:
                slot = self._direct(blocked, marked, rng)
            chosen.append(slot)
            blocked.add(slot)
            left -= float(v[slot])
        return [table.record_at(k) for k in chosen]

    def _direct(self, blocked: set[int], marked: set[int], rng: random.Random) -> int:
        """Draw one slot by computing every v' left (the fallback of the rejection draw)."""
        w = self._v.copy()
        if marked:
            idx = np.fromiter(marked, dtype=np.int64, count=len(marked))
            w[idx] = np.maximum(w[idx] - self._alphas[3], 0.0)
        mask = self._candidate.copy()
        if blocked:
            mask[np.fromiter(blocked, dtype=np.int64, count=len(blocked))] = False
        idx = np.flatnonzero(mask)
        return int(idx[draw_recipients(w[idx], 1, rng=rng)[0]])


def select_peers(
    candidates: Sequence[PeerRecord],
    avatar: AvatarState,
    penalised: set[int],
    *,
    config: GossipConfig,
    rng: random.Random,
) -> list[PeerRecord]:
    """Draw this message's recipient set S from ``candidates`` (spec 002 §2.9, Eq. 2.1-2.6).

    Args:
        candidates: Addressed peers that may receive the message.
        avatar: The sender's own avatar (distances and angles are measured from it).
        penalised: Avatar ids named in a received tail (s_k = 1 in Eq. 2.6).
        config: Supplies the alphas, D_max, fan-out and the default b for silent peers.
        rng: The injected random generator.

    Returns:
        Up to ``config.fanout`` distinct records in draw order.
    """
    if not candidates:
        return []
    advertised = [r.free_bandwidth for r in candidates if r.free_bandwidth is not None]
    fb_max = max(advertised, default=0)
    bandwidth = [
        config.unknown_bandwidth
        if r.free_bandwidth is None
        else (r.free_bandwidth / fb_max if fb_max > 0 else 0.0)
        for r in candidates
    ]
    weights = selection_weights(
        avatar.position,
        avatar.facing,
        [r.avatar.position if r.avatar is not None else (0.0, 0.0, 0.0) for r in candidates],
        [r.avatar is not None for r in candidates],
        bandwidth,
        [r.avatar_id in penalised for r in candidates],
        d_max=config.d_max,
        alphas=(
            config.alpha_distance,
            config.alpha_angle,
            config.alpha_bandwidth,
            config.alpha_penalty,
        ),
    )
    return [candidates[i] for i in draw_recipients(weights, config.fanout, rng=rng)]
