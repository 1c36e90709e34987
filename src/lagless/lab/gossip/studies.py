"""Selection-probability studies and the client-server bound (spec 002 §6.2 E0–E4, E1, E11).

Implements the parameter studies of spec 002 §5.1 (Fig. 3.1–3.4, whose layout figure is lost)
exactly, from Eq. 2.1–2.6, and the client-server numbers of §4.2 / §4.4. Decisions, pinned in
``tests/lab/gossip/test_studies.py``:

* Layout (§7.14: 72 nodes, so 12 groups of **6**): the sender sits at the origin facing +x with
  D_max = 1000 m; group k (1..12) is centred at bearing 30°·(k-1) from the facing, 150 m away
  for odd k and 300 m for even k, its 6 nodes evenly on a 40 m circle around the centre. Group 1
  is closest and straight ahead; the even groups sit at 30°, 90°, 150° off the facing (medium
  angles) (``test_layout``).
* The 13th group has 7 nodes on a 30 m circle around the centre of the group it overlaps; in E3
  it advertises half the bandwidth of the others (b = 0.5 against 1), in E4 it is named in the
  received tail (s_k = 1) (``test_half_bandwidth_group_loses_at_high_alpha3``).
* Probabilities are the exact single-draw p = v / Σv of Eq. 2.2, summed over a group's nodes, so
  no sampling noise; "std" is the standard deviation of p over the group's nodes, relative to
  the group mean.
* E1 server model (no CPU model, timings never enter results): every client gets, at 20 Hz, a
  packet of 8 header bytes plus 24 bytes per avatar within 1/5 of the map (AOI); "delta" halves
  the per-avatar bytes (§4.3); a packet over 1400 bytes counts as fragmented.
"""

from __future__ import annotations

import math

import numpy as np

from lagless.gossip.selection import selection_weights

__all__ = ["GROUPS", "group_layout", "group_probabilities", "server_load"]

GROUPS = 12
"""Groups of the parameter studies (§5.1)."""
D_MAX = 1000.0
"""D_max of the studies, metres."""


def group_layout(nodes: int = 6, radius: float = 40.0) -> tuple[np.ndarray, np.ndarray]:
    """Return ((12·nodes, 3) positions in metres, (12·nodes,) group numbers 1..12)."""
    pos, group = [], []
    for k in range(1, GROUPS + 1):
        bearing = math.radians(30.0 * (k - 1))
        r = 150.0 if k % 2 else 300.0
        cx, cy = r * math.cos(bearing), r * math.sin(bearing)
        for j in range(nodes):
            a = 2.0 * math.pi * j / nodes
            pos.append((cx + radius * math.cos(a), cy + radius * math.sin(a), 0.0))
            group.append(k)
    return np.array(pos), np.array(group)


def _extra_group(over: int, nodes: int = 7, radius: float = 30.0) -> np.ndarray:
    bearing = math.radians(30.0 * (over - 1))
    r = 150.0 if over % 2 else 300.0
    cx, cy = r * math.cos(bearing), r * math.sin(bearing)
    return np.array(
        [
            (
                cx + radius * math.cos(2 * math.pi * j / nodes),
                cy + radius * math.sin(2 * math.pi * j / nodes),
                0.0,
            )
            for j in range(nodes)
        ]
    )


def group_probabilities(
    alphas: tuple[float, float, float, float],
    *,
    extra_over: int | None = None,
    extra_bandwidth: float = 1.0,
    extra_penalised: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Return (P(draw picks a node of group g), relative std of p within g) for g = 1..12(+13).

    Args:
        alphas: (α1, α2, α3, α4) of Eq. 2.1 and 2.6.
        extra_over: Add the 13th group over this group (1..12); ``None`` for 12 groups.
        extra_bandwidth: b_k of the 13th group's nodes (others have 1).
        extra_penalised: s_k = 1 for the 13th group's nodes (Eq. 2.6).
    """
    pos, group = group_layout()
    bandwidth = np.ones(len(pos))
    penalised = np.zeros(len(pos), dtype=bool)
    groups = GROUPS
    if extra_over is not None:
        extra = _extra_group(extra_over)
        pos = np.vstack([pos, extra])
        group = np.concatenate([group, np.full(len(extra), GROUPS + 1)])
        bandwidth = np.concatenate([bandwidth, np.full(len(extra), extra_bandwidth)])
        penalised = np.concatenate([penalised, np.full(len(extra), extra_penalised)])
        groups += 1
    w = selection_weights(
        (0.0, 0.0, 0.0),
        (1.0, 0.0, 0.0),
        pos,
        np.ones(len(pos), dtype=bool),
        bandwidth,
        penalised,
        d_max=D_MAX,
        alphas=alphas,
    )
    p = w / w.sum()
    probs = np.array([p[group == g].sum() for g in range(1, groups + 1)])
    with np.errstate(invalid="ignore", divide="ignore"):
        stds = np.array([p[group == g].std() / p[group == g].mean() for g in range(1, groups + 1)])
    return probs, stds


def server_load(
    positions: np.ndarray, map_size: float, *, delta: bool
) -> tuple[float, float, float]:
    """Return (bytes per frame, mean packet bytes, fragmented share) of one AOI server frame.

    Args:
        positions: (n, 2) avatar positions, metres.
        map_size: Side of the map, metres (AOI radius is a fifth of it).
        delta: Halve the per-avatar bytes (single delta coding).
    """
    d = np.hypot(
        positions[:, None, 0] - positions[None, :, 0], positions[:, None, 1] - positions[None, :, 1]
    )
    visible = (d <= map_size / 5.0).sum(axis=1) - 1
    per_avatar = 12.0 if delta else 24.0
    sizes = 8.0 + per_avatar * visible
    return float(sizes.sum()), float(sizes.mean()), float((sizes > 1400.0).mean())
