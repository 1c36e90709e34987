"""Experiment ``sync/bucket``: MiMaze bucket synchronisation's general delay and period vs network.

Issue 15 "Lab and measures" for spec 000 §2.3: `lagless.sync.bucket.BucketPeer` runs on the
shared arena (``lagless.sync.arena``, scripted bots, one game frame per bucket) over the
simulator harness (``lagless.sync.harness``, full mesh, peers' clocks offset by seconds so the
session clock has work to do) for every combination of network profile (its round trip is the
RTT knob), extra loss, bucket period and general delay policy. Each run is one row of table
``runs``:

* ``stall_frames``: ticks a peer could not advance (bucket sync never waits: 0);
* ``late_pct``: remote ADUs that arrived after their bucket was processed, of those expected;
* ``substituted_pct``: ADU slots (every player's, the own included: a period without a tick has
  none) filled with the player's previous ADU;
* ``diverged_buckets_pct``: buckets every peer processed whose shared states differ (a lost or
  late ADU is never corrected, so once the peers part they stay apart);
* ``display_inconsistent_pct``: frames on which the peers' displayed (local, undelayed) views
  differed, as the harness counts it for every algorithm;
* ``input_delay_ms_p50``: the local player's own delay (0: shown without delay) and
  ``remote_delay_ms``: the general delay in force at the end, what other players see.

Delay policies: ``fixed-<ms>`` (MiMaze: 100 ms) or ``adaptive`` (one period plus the worst
link's one-way delay and jitter margin, from 40 ms to 1 s).

Reference: the thesis's MiMaze parameters (spec 000 §2.3: 40 ms periods, 100 ms general delay),
as ``bucket_period_ms`` and ``general_delay_ms`` of the default run, and the spec's claim that
bucket sync never stalls (``stall_frames_max`` = 0).
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import Mapping
from typing import Final

from lagless.errors import ConfigError
from lagless.lab.experiments import sync_sweep as sweep
from lagless.lab.registry import ExperimentSpec, register
from lagless.lab.result import JSONScalar, JSONValue, Result
from lagless.lab.runner import ExperimentContext
from lagless.sync.arena import Arena, ArenaState, ScriptedInputs, bot_script
from lagless.sync.bucket import BucketConfig, BucketPeer
from lagless.sync.harness import HarnessConfig, run_keeping_peers

_FIXED: Final = re.compile(r"^fixed-(\d+)$")
LAB: Final = "sync/bucket"
CLOCK_OFFSETS: Final = (0.0, -30.0, 12.5, 0.04, 600.0, -2.0, 5.5, 0.9)  # seconds, per peer


def delay_config(policy: str) -> BucketConfig:
    """The `BucketConfig` of a delay policy name (``adaptive`` or ``fixed-<ms>``).

    Raises:
        ConfigError: an unknown policy name.
    """
    if policy == "adaptive":
        return BucketConfig(adaptive_delay=True)
    match = _FIXED.match(policy)
    if match is None or not 0 <= int(match.group(1)) <= 5000:
        raise ConfigError(
            f"sync/bucket delay must be 'adaptive' or 'fixed-<ms>' with 0..5000 ms, got {policy!r}"
        )
    return BucketConfig(general_delay=int(match.group(1)) / 1000.0)


def _one_run(
    ctx: ExperimentContext,
    players: int,
    combo: tuple[str, float, float, str],
    timing: tuple[float, float],
) -> dict[str, JSONScalar]:
    profile, loss, period, policy = combo
    duration, drain = timing
    game = Arena(players, frame_rate=1.0 / period)
    seed = ctx.seed_for(f"sync.bucket.{profile}.{loss}.{period}.{policy}")
    bots = [ScriptedInputs(p, seed % 2**31, frame_rate=1.0 / period) for p in range(players)]
    config = delay_config(policy)

    def make(index: int, rng: random.Random) -> BucketPeer[ArenaState]:
        return BucketPeer(game, index, players, rng=rng, frame_period=period, config=config)

    harness = HarnessConfig(
        algorithm="bucket",
        peers=players,
        profile=profile,
        loss=loss,
        duration=duration,
        drain=drain,
        frame_rate=1.0 / period,
        clock_offsets=CLOCK_OFFSETS[:players],
        seed=seed,
    )
    result, built = run_keeping_peers(harness, game, bot_script(bots), make)
    metrics = result.metrics()
    histories = [dict(p.processed_checksums) for p in built]
    common = set.intersection(*(set(h) for h in histories))
    diverged = sum(len({h[b] for h in histories}) > 1 for b in common)
    slots_own = sum(p.processed_frame for p in built)
    remote_slots = slots_own * (players - 1)
    late = sum(p.stats.late_discarded for p in built)
    substituted = sum(p.substituted for p in built)
    return {
        "profile": profile,
        "rtt_ms": sweep.rtt_ms(profile, 1),
        "loss": loss,
        "period_ms": round(period * 1000.0, 3),
        "delay": policy,
        "remote_delay_ms": round(max(p.delay for p in built) * 1000.0, 3),
        "stall_frames": metrics["stall_frames"],
        "late_pct": 100.0 * late / max(1, remote_slots),
        "substituted_pct": 100.0 * substituted / max(1, remote_slots + slots_own),
        "diverged_buckets_pct": 100.0 * diverged / max(1, len(common)),
        "display_inconsistent_pct": metrics["inconsistent_pct"],
        "max_divergence_m": metrics["max_divergence_m"],
        "input_delay_ms_p50": metrics["input_delay_ms_p50"],
        "payload_bytes_per_s": metrics["payload_bytes_per_s"],
        "buckets_processed": min(p.processed_frame for p in built),
    }


def bucket_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """Sweep profile x loss x period x delay policy.

    Args:
        ctx: The run's context.
        params: ``players`` (2..8), ``profiles`` (netsim names), ``losses`` (in [0, 1)),
            ``periods_ms`` (bucket periods), ``delays`` (``adaptive`` / ``fixed-<ms>``),
            ``duration`` and ``drain`` (s).

    Returns:
        Table ``runs`` (one row per combination); metrics ``stall_frames_max``,
        ``bucket_period_ms`` and ``general_delay_ms`` (the first run's), ``late_pct_max`` and
        ``diverged_buckets_pct_max``.
    """
    players = int(sweep.param_number(LAB, params, "players", 2, 8))
    profiles = sweep.param_profiles(LAB, params)
    losses = sweep.param_numbers(LAB, params, "losses", 0.0, 1.0)
    periods = [ms / 1000.0 for ms in sweep.param_numbers(LAB, params, "periods_ms", 5.0, 1000.0)]
    delays = [str(d) for d in sweep.param_list(LAB, params, "delays")]
    for policy in delays:
        delay_config(policy)
    timing = (
        sweep.param_number(LAB, params, "duration", 0.5, 600),
        sweep.param_number(LAB, params, "drain", 0.0, 60),
    )
    combos = list(itertools.product(profiles, losses, periods, delays))
    rows = [
        _one_run(ctx, players, combo, timing)
        for combo in ctx.track(combos, description="sync/bucket runs")
    ]
    ctx.add_table("runs", rows)
    ctx.add_metric("stall_frames_max", max(sweep.column(rows, "stall_frames")))
    ctx.add_metric("bucket_period_ms", sweep.cell(rows[0], "period_ms"))
    ctx.add_metric("general_delay_ms", sweep.cell(rows[0], "remote_delay_ms"))
    ctx.add_metric("late_pct_max", max(sweep.column(rows, "late_pct")))
    ctx.add_metric("diverged_buckets_pct_max", max(sweep.column(rows, "diverged_buckets_pct")))
    labels = [f"{r['profile']}/{r['loss']}/{r['period_ms']}/{r['delay']}" for r in rows]
    ctx.bar_plot(
        "late_and_diverged",
        labels,
        {
            "late ADUs (%)": sweep.column(rows, "late_pct"),
            "diverged buckets (%)": sweep.column(rows, "diverged_buckets_pct"),
        },
        xlabel="profile / loss / period ms / delay",
        ylabel="%",
        title="Bucket sync: late ADUs and diverged buckets",
    )
    return ctx.result()


SPEC: Final = register(
    ExperimentSpec(
        id="sync/bucket",
        title="MiMaze bucket sync (spec 000 §2.3): general delay and period vs loss and RTT",
        entry_point=bucket_experiment,
        quick={
            "players": 3,
            "profiles": ["lan", "umts"],
            "losses": [0.0, 0.05],
            "periods_ms": [40.0],
            "delays": ["fixed-100", "adaptive"],
            "duration": 2.0,
            "drain": 1.0,
        },
        full={
            "players": 4,
            "profiles": ["lan", "wifi", "dsl", "intercontinental", "umts"],
            "losses": [0.0, 0.01, 0.05],
            "periods_ms": [40.0, 20.0, 80.0],
            "delays": ["fixed-100", "fixed-200", "adaptive"],
            "duration": 10.0,
            "drain": 2.0,
        },
        reference={"bucket_period_ms": 40.0, "general_delay_ms": 100.0, "stall_frames_max": 0.0},
        description=(
            "Bucket-synchronised peers (one bucket per period, processed a general delay "
            "later, late ADUs dropped, a missing player's last ADU reused, the local player "
            "undelayed) run the shared arena over the simulator with clocks seconds apart. "
            "Table `runs` per profile, loss, period and delay policy: stalls, late and "
            "substituted ADUs, buckets whose shared state differs between peers, the "
            "displayed inconsistency, the delay others see. Reference: MiMaze's 40 ms periods "
            "and 100 ms delay (spec 000 §2.3), and the spec's 'never stalls'."
        ),
    )
)
"""The registered spec of ``sync/bucket``."""
