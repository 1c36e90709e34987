"""Experiment ``replication/ids``: spec 003 §7.2 #11, the ID system's claims, checked and counted.

Implements checklist §7.2 #11 on `lagless.replication.IdPool`: sequential IDs from the start ID,
no reuse after destroy, the explicit-ID collision error, the NextID bump after an explicit ID,
overflow at the top of a 32-bit pool, and the "dock at the wrong station" hazard (§7.1.2.4). Each
claim is one row of table ``checks``. Beyond the fixed checks, a seeded churn (objects created,
destroyed and re-created with explicit IDs at random, ships holding references to stations)
counts how often a stale reference would reach the wrong object through the bare ID (the thesis's
hazard) and through a generation `IdRef` (ours: never).

Reference: the thesis gives no measurements; §7.1.2.4's arithmetic is the reference: a 32-bit
pool lasts ``2**32 / rate`` seconds (49.7 days at 1,000 creations per second), which the metric
``days_to_exhaust_32bit_at_1000_per_s`` recomputes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from lagless.errors import ConfigError
from lagless.lab.registry import ExperimentSpec, register
from lagless.lab.result import JSONScalar, JSONValue, Result
from lagless.lab.runner import ExperimentContext
from lagless.replication.ids import IdOverflowError, IdPool, IdRef, IdTakenError

SECONDS_PER_DAY: Final = 86_400.0


class _Thing:
    """A pooled object (a ship or a station)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind


def _checks() -> list[dict[str, JSONScalar]]:
    rows: list[dict[str, JSONScalar]] = []

    def check(claim: str, holds: bool) -> None:
        rows.append({"claim": claim, "holds": holds})

    pool: IdPool[_Thing] = IdPool("UniverseID", start=1000)
    ids = [pool.assign(_Thing("ship")) for _ in range(5)]
    check("IDs are sequential from the start ID", ids == [1000, 1001, 1002, 1003, 1004])
    pool.invalidate(1004)
    pool.invalidate(1001)
    check("a destroyed object's ID is never reissued", pool.assign(_Thing("ship")) == 1005)
    try:
        pool.assign(_Thing("ship"), 1002)
        taken = False
    except IdTakenError:
        taken = True
    check("an explicit ID that is live raises 'already taken'", taken)
    pool.assign(_Thing("station"), 5000)
    check("an explicit ID bumps NextID to id + 1", pool.next_id == 5001)
    check(
        "counts: issued and valid IDs",
        (pool.issued, pool.valid) == (7, 5),
    )
    check("ID <-> string", pool.string_to_id(pool.id_to_string(5000)) == 5000)
    top: IdPool[_Thing] = IdPool("Small", start=(1 << 32) - 2, width=32)
    top.assign(_Thing("a"))
    top.assign(_Thing("b"))
    try:
        top.assign(_Thing("c"))
        overflow = False
    except IdOverflowError:
        overflow = True
    check("a 32-bit pool raises on overflow instead of wrapping", overflow)
    stations: IdPool[_Thing] = IdPool("UniverseID")
    old = _Thing("station")
    stations.assign(old, 42)
    dock = stations.ref(42)
    stations.invalidate(42)
    new = _Thing("station")
    stations.assign(new, 42)
    check("hazard: the bare ID finds the new station (thesis §7.1.2.4)", stations.find(42) is new)
    check("hazard caught: the stale reference resolves to None", stations.resolve(dock) is None)
    return rows


def _churn(
    ctx: ExperimentContext, steps: int, stations: int, ships: int
) -> dict[str, float | None]:
    rng = ctx.random("replication.ids.churn")
    pool: IdPool[_Thing] = IdPool("UniverseID")
    live_stations = [pool.assign(_Thing("station")) for _ in range(stations)]
    refs: list[IdRef] = []
    for _ in range(ships):
        refs.append(pool.ref(rng.choice(live_stations)))
        pool.assign(_Thing("ship"))
    issued: set[int] = set()
    wrong_bare = wrong_ref = stale = recreated = temporaries = 0
    for _ in range(steps):
        roll = rng.random()
        if roll < 0.4:  # destroy a station and re-create one under the same explicit ID
            ident = rng.choice(live_stations)
            pool.invalidate(ident)
            pool.assign(_Thing("station"), ident)
            recreated += 1
        elif roll < 0.8:  # a temporary object: consumes an ID for ever
            ident = pool.assign(_Thing("temp"))
            issued.add(ident)
            temporaries += 1
            pool.invalidate(ident)
        else:  # a ship re-targets
            refs[rng.randrange(len(refs))] = pool.ref(rng.choice(live_stations))
    for ref in refs:
        target = pool.resolve(ref)
        current = pool.find(ref.id)
        if pool.generation(ref.id) != ref.generation:
            stale += 1
            wrong_bare += current is not None
        wrong_ref += target is not None and target is not current
    return {
        "churn_steps": float(steps),
        "churn_recreated": float(recreated),
        "churn_stale_references": float(stale),
        "churn_wrong_target_bare_id": float(wrong_bare),
        "churn_wrong_target_idref": float(wrong_ref),
        "churn_ids_reused": float(temporaries - len(issued)),
        "churn_ids_issued": float(pool.issued),
    }


def _positive_int(params: Mapping[str, JSONValue], key: str) -> int:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"replication/ids parameter {key} must be an int >= 1, got {value!r}")
    return value


def ids_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """Run the fixed checks and the seeded churn.

    Args:
        ctx: The run's context.
        params: ``steps`` (churn operations), ``stations``, ``ships``, ``rate`` (creations per
            second for the exhaustion arithmetic).

    Returns:
        Table ``checks``; metrics ``checks_holding``, ``checks_total``, the churn counts and
        ``days_to_exhaust_32bit_at_<rate>_per_s``.
    """
    steps = _positive_int(params, "steps")
    stations = _positive_int(params, "stations")
    ships = _positive_int(params, "ships")
    rate = _positive_int(params, "rate")
    rows = _checks()
    ctx.add_table("checks", rows)
    ctx.add_metric("checks_holding", float(sum(bool(r["holds"]) for r in rows)))
    ctx.add_metric("checks_total", float(len(rows)))
    ctx.add_metrics(_churn(ctx, steps, stations, ships))
    ctx.add_metric(
        f"days_to_exhaust_32bit_at_{rate}_per_s", round(2**32 / rate / SECONDS_PER_DAY, 2)
    )
    return ctx.result()


SPEC: Final = register(
    ExperimentSpec(
        id="replication/ids",
        title="Spec 003 §7.2 #11: sequential never-reused IDs, collisions, overflow, stale refs",
        entry_point=ids_experiment,
        quick={"steps": 2000, "stations": 20, "ships": 200, "rate": 1000},
        full={"steps": 200_000, "stations": 50, "ships": 2000, "rate": 1000},
        reference={
            "days_to_exhaust_32bit_at_1000_per_s": 49.71,
            "churn_wrong_target_idref": 0.0,
            "churn_ids_reused": 0.0,
        },
        description=(
            "The ID system of spec 003 §5.3 (thesis §7.1.2) as `lagless.replication.IdPool`: "
            "table `checks` tests each claim of §7.2 #11 (sequential from the start ID, never "
            "reused, 'already taken' error, NextID bump, overflow at 32 bits, the wrong-station "
            "hazard). A seeded churn then destroys and re-creates stations under the same "
            "explicit ID while ships hold references: `churn_wrong_target_bare_id` counts the "
            "references the bare ID would send to the wrong station (the thesis's hazard), "
            "`churn_wrong_target_idref` those a generation reference sends there (goal 0). The "
            "reference is §7.1.2.4's arithmetic: 2^32 IDs last 49.7 days at 1,000 per second."
        ),
    )
)
"""The registered spec of ``replication/ids``."""
