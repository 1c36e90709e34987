"""VFC round benchmark: lagless.interest.VfcPolicy (numpy) vs the naive per-pair Python loop.

World: ``objects`` avatars uniformly spread over a 1000 x 1000 map (thesis world units, 1 unit =
1 m) with random headings; the first ``clients`` objects are the clients' own avatars and their
pivots; every client uses the thesis's normal view (spec 001 Table 5.1). Every round all avatars
move (one update each, as Cube 2 clients send every 33 ms) and then the server round runs. The
timed part is ``round(now)`` alone, after warm-up rounds so no pair is in its FIRST send.

The naive reference (``NaiveVfcPolicy``: the thesis's nested dictionaries, one Python iteration
per pair) is timed on a subset of ``naive_clients`` clients over the same objects, and scaled
linearly to the full client count (its cost is one loop iteration per (client, object) pair).
Both implementations run the subset world and must send the same pairs.

Run: ``python benchmarks/vfc.py`` or ``lagless bench vfc``. Import: ``run(...) -> dict``.
"""

from __future__ import annotations

import time
from typing import Final

import numpy as np
from rich.console import Console
from rich.table import Table

from lagless.interest import NaiveVfcPolicy, VfcConfig, VfcPolicy, normal_view

MAP_SIZE: Final = 1000.0  # metres (1 Cube 2 world unit = 1 m here)
SPEED: Final = 10.0  # metres per round at most, per axis
ROUND: Final = 0.033  # seconds (spec 001 §2.9)
BUDGET: Final = 0.033  # seconds: one round must fit in one round period


def _world(policy: VfcPolicy | NaiveVfcPolicy, clients: int, objects: int) -> None:
    owners = [policy.add_client() for _ in range(clients)]
    for k in range(objects):
        policy.add_object(owner=owners[k] if k < clients else None)
    for c in owners:
        policy.set_view(c, normal_view())
        policy.set_pivots(c, [c])


def _moves(objects: int, rounds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    pos = rng.uniform(0.0, MAP_SIZE, (objects, 2))
    out = []
    for _ in range(rounds):
        pos = np.clip(pos + rng.uniform(-SPEED, SPEED, (objects, 2)), 0.0, MAP_SIZE)
        angle = rng.uniform(0.0, 2.0 * np.pi, objects)
        out.append((pos.copy(), np.stack([np.cos(angle), np.sin(angle)], axis=1)))
    return out


def _time_rounds(
    policy: VfcPolicy | NaiveVfcPolicy,
    moves: list[tuple[np.ndarray, np.ndarray]],
    warmup: int,
) -> tuple[float, list[set[tuple[int, int]]]]:
    ids = np.arange(moves[0][0].shape[0])
    best = float("inf")
    plans = []
    for k, (pos, head) in enumerate(moves):
        now = k * ROUND
        policy.update_received(ids, pos, None, now, headings=head)
        start = time.perf_counter()
        plan = policy.round(now)
        elapsed = time.perf_counter() - start
        plans.append(plan.pairs())
        if k >= warmup:
            best = min(best, elapsed)
    return best, plans


def run(
    clients: int = 512, objects: int = 512, naive_clients: int = 32, rounds: int = 12, seed: int = 1
) -> dict[str, float]:
    """Time one VFC round for ``clients`` x ``objects`` (best of the measured rounds).

    Returns:
        ``vectorised_ms``, ``naive_ms`` (scaled to ``clients``), ``ratio``, ``sends_per_round``
        and ``naive_subset_ms`` (the measured, unscaled naive time).
    """
    warmup = 4
    moves = _moves(objects, rounds, seed)
    cfg = VfcConfig(initial_clients=clients, initial_objects=objects)
    fast = VfcPolicy(cfg)
    _world(fast, clients, objects)
    fast_s, fast_plans = _time_rounds(fast, moves, warmup)
    naive = NaiveVfcPolicy(cfg)
    _world(naive, naive_clients, objects)
    sub = VfcPolicy(cfg)
    _world(sub, naive_clients, objects)
    naive_rounds = moves[: warmup + 2]
    naive_s, naive_plans = _time_rounds(naive, naive_rounds, warmup)
    _, sub_plans = _time_rounds(sub, naive_rounds, warmup)
    if naive_plans != sub_plans:
        raise RuntimeError("vectorised and naive VFC rounds disagree on the subset world")
    naive_full = naive_s * clients / naive_clients
    sends = float(np.mean([len(p) for p in fast_plans[warmup:]]))
    return {
        "vectorised_ms": fast_s * 1e3,
        "naive_ms": naive_full * 1e3,
        "naive_subset_ms": naive_s * 1e3,
        "ratio": naive_full / fast_s,
        "sends_per_round": sends,
    }


def main() -> None:
    """Print the rich table."""
    clients, objects, naive_clients = 512, 512, 32
    result = run(clients, objects, naive_clients)
    table = Table(title=f"VFC server round, {clients} clients x {objects} objects, normal view")
    table.add_column("implementation")
    table.add_column("ms / round", justify="right")
    table.add_column("vs naive", justify="right")
    table.add_column("fits 33 ms", justify="center")
    fast = result["vectorised_ms"]
    naive = result["naive_ms"]
    table.add_row(
        "lagless VfcPolicy (numpy)",
        f"{fast:.2f}",
        f"{result['ratio']:.0f}x faster",
        "yes" if fast < BUDGET * 1e3 else "NO",
    )
    table.add_row(
        f"naive per-pair loop ({naive_clients} clients measured, x{clients // naive_clients})",
        f"{naive:.1f}",
        "1x",
        "yes" if naive < BUDGET * 1e3 else "no",
    )
    console = Console()
    console.print(table)
    console.print(
        f"sends per round: {result['sends_per_round']:.0f} of {clients * (objects - 1)} pairs; "
        f"naive measured {result['naive_subset_ms']:.1f} ms for {naive_clients} x {objects}; "
        "both implementations sent identical pairs on the subset world; best of the timed rounds."
    )


if __name__ == "__main__":
    main()
