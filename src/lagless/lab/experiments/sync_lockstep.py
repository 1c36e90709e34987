"""Experiment ``sync/lockstep``: AoE lockstep's turn length policy against loss and RTT.

Issue 15 "Lab and measures" for spec 000 §2.14: `lagless.sync.lockstep.LockstepPeer` runs on the
shared arena (``lagless.sync.arena``, scripted bots) over the simulator harness
(``lagless.sync.harness``, full mesh, peers' clocks offset) for every combination of network
profile (its round trip is the RTT knob), extra loss and turn length policy. Each run is one row
of table ``runs``: stalls (frames a peer waited, per peer, and their share of its ticks),
inconsistency (frames on which peers showed different states), the input delay the local player
felt (ms), the turn length at the end (ms and frames), bandwidth, desyncs and convergence.

Turn length policies: ``adaptive`` (the spec's rule: the smoothed RTT of the slowest connection,
clamped to 50 ms .. 1 s) or ``fixed-<ms>`` (every turn from turn 2 on that long, whatever the
network; turns 0 and 1 carry no commands and last ``start_frames``).

Reference (the spec's claim, not a thesis measurement): lockstep never shows peers different
states (``inconsistent_frames_max`` = 0). Column ``input_delay_turns_p50`` is the median input
delay in turns of the run's final length: commands run two turns after they are sent, so it is
2 to 3 when turns kept their length, plus what stalls added.
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
from lagless.sync.harness import HarnessConfig, run_keeping_peers
from lagless.sync.lockstep import LockstepConfig, LockstepPeer

_FIXED: Final = re.compile(r"^fixed-(\d+)$")
LAB: Final = "sync/lockstep"
CLOCK_OFFSETS: Final = (0.0, 4.5, -20.0, 0.25, 7.0, -1.0, 3.0, 11.0)  # seconds, per peer


def policy_config(policy: str) -> LockstepConfig:
    """The `LockstepConfig` of a turn length policy name (``adaptive`` or ``fixed-<ms>``).

    Raises:
        ConfigError: an unknown policy name.
    """
    if policy == "adaptive":
        return LockstepConfig()
    match = _FIXED.match(policy)
    if match is None or not 10 <= int(match.group(1)) <= 2000:
        raise ConfigError(
            f"sync/lockstep policy must be 'adaptive' or 'fixed-<ms>' with 10..2000 ms, "
            f"got {policy!r}"
        )
    turn = int(match.group(1)) / 1000.0
    return LockstepConfig(initial_turn=turn, min_turn=turn, max_turn=turn)


def _one_run(
    ctx: ExperimentContext,
    players: int,
    profile: str,
    loss: float,
    policy: str,
    timing: tuple[float, float, float],
) -> dict[str, JSONScalar]:
    duration, drain, frame_rate = timing
    game = Arena(players, frame_rate=frame_rate)
    seed = ctx.seed_for(f"sync.lockstep.{profile}.{loss}.{policy}")
    bots = [ScriptedInputs(p, seed % 2**31, frame_rate=frame_rate) for p in range(players)]
    config = policy_config(policy)

    def make(index: int, rng: random.Random) -> LockstepPeer[ArenaState]:
        return LockstepPeer(
            game, index, players, rng=rng, frame_period=1.0 / frame_rate, config=config
        )

    harness = HarnessConfig(
        algorithm="lockstep",
        peers=players,
        profile=profile,
        loss=loss,
        duration=duration,
        drain=drain,
        frame_rate=frame_rate,
        clock_offsets=CLOCK_OFFSETS[:players],
        seed=seed,
    )
    result, built = run_keeping_peers(harness, game, bot_script(bots), make)
    metrics = result.metrics()
    ticks = sum(len(r.times) for r in result.records) / players
    turn_frames = max(p.frames_per_turn for p in built)
    turn_s = turn_frames * max(p.frame_period for p in built)
    return {
        "profile": profile,
        "rtt_ms": sweep.rtt_ms(profile, 1),
        "loss": loss,
        "policy": policy,
        "stall_frames": metrics["stall_frames"],
        "stall_pct": 100.0 * float(metrics["stall_frames"]) / max(1.0, ticks),
        "inconsistent_frames": metrics["inconsistent_frames"],
        "input_delay_ms_p50": metrics["input_delay_ms_p50"],
        "input_delay_ms_p99": metrics["input_delay_ms_p99"],
        "input_delay_turns_p50": float(metrics["input_delay_ms_p50"]) / 1000.0 / turn_s,
        "turn_ms": turn_s * 1000.0,
        "frames_per_turn": turn_frames,
        "frames_shown": result.final_frame,
        "payload_bytes_per_s": metrics["payload_bytes_per_s"],
        "desyncs": metrics["desyncs"],
        "drops": sum(len(p.drops) for p in built),
        "converged": bool(metrics["converged"]),
    }


def lockstep_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """Sweep profile x loss x turn length policy.

    Args:
        ctx: The run's context.
        params: ``players`` (2..8), ``profiles`` (netsim names), ``losses`` (in [0, 1)),
            ``policies`` (``adaptive`` / ``fixed-<ms>``), ``duration`` and ``drain`` (s),
            ``frame_rate`` (Hz).

    Returns:
        Table ``runs`` (one row per combination) and the summary metrics named in the module
        docstring plus ``stall_pct_max`` and ``converged_pct``.
    """
    players = int(sweep.param_number(LAB, params, "players", 2, 8))
    profiles = sweep.param_profiles(LAB, params)
    losses = sweep.param_numbers(LAB, params, "losses", 0.0, 1.0)
    policies = [str(p) for p in sweep.param_list(LAB, params, "policies")]
    for policy in policies:
        policy_config(policy)
    timing = (
        sweep.param_number(LAB, params, "duration", 0.5, 600),
        sweep.param_number(LAB, params, "drain", 0.0, 60),
        sweep.param_number(LAB, params, "frame_rate", 1, 240),
    )
    combos = list(itertools.product(profiles, losses, policies))
    rows = [
        _one_run(ctx, players, profile, loss, policy, timing)
        for profile, loss, policy in ctx.track(combos, description="sync/lockstep runs")
    ]
    ctx.add_table("runs", rows)
    ctx.add_metric("inconsistent_frames_max", max(sweep.column(rows, "inconsistent_frames")))
    ctx.add_metric("stall_pct_max", max(sweep.column(rows, "stall_pct")))
    ctx.add_metric("converged_pct", sweep.percent_true(rows, "converged"))
    labels = [f"{r['profile']}/{r['loss']}/{r['policy']}" for r in rows]
    ctx.bar_plot(
        "stalls",
        labels,
        {"stall %": sweep.column(rows, "stall_pct")},
        xlabel="profile / loss / turn policy",
        ylabel="ticks stalled (%)",
        title="Lockstep stalls",
    )
    ctx.bar_plot(
        "input_delay",
        labels,
        {"p50 (ms)": sweep.column(rows, "input_delay_ms_p50")},
        xlabel="profile / loss / turn policy",
        ylabel="input delay (ms)",
        title="Lockstep input delay",
    )
    return ctx.result()


SPEC: Final = register(
    ExperimentSpec(
        id="sync/lockstep",
        title="AoE lockstep (spec 000 §2.14): turn length policy vs loss and RTT",
        entry_point=lockstep_experiment,
        quick={
            "players": 3,
            "profiles": ["lan", "umts"],
            "losses": [0.0, 0.1],
            "policies": ["adaptive", "fixed-100"],
            "duration": 1.5,
            "drain": 1.0,
            "frame_rate": 60.0,
        },
        full={
            "players": 4,
            "profiles": ["lan", "wifi", "dsl", "intercontinental", "umts"],
            "losses": [0.0, 0.05, 0.2],
            "policies": ["adaptive", "fixed-50", "fixed-100", "fixed-400"],
            "duration": 10.0,
            "drain": 2.0,
            "frame_rate": 60.0,
        },
        reference={"inconsistent_frames_max": 0.0},
        description=(
            "Lockstep peers (commands for turn N+2, every command acknowledged by every peer, "
            "a stall while one is missing) run the shared arena over the simulator for each "
            "network profile, extra loss and turn length policy (adaptive: the slowest "
            "connection's smoothed RTT; fixed-<ms>). Table `runs`: stalls, inconsistent "
            "frames, input delay, final turn length, bandwidth, desyncs. The spec's claims are "
            "the reference: peers never show different states."
        ),
    )
)
"""The registered spec of ``sync/lockstep``."""
