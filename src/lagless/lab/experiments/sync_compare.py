"""Experiment ``sync/compare``: every synchronisation algorithm on one game and the same networks.

Issue 15 "Lab and measures": lockstep (spec 000 §2.14), bucket synchronisation and Time Warp with
its local-rollback variant (§2.3), local lag (§2.1) and GGPO-style rollback each run the shared
arena (``lagless.sync.arena``, scripted bots) with the same peers over the simulator harness
(``lagless.sync.harness``, full mesh) for every network profile and extra loss rate. Each run is
one row of table ``runs`` with column ``algorithm``: the input-to-display delay the local player
felt (ms, p50 and p99), frames re-simulated per second, the rollback depth distribution (p50,
p99, max), inconsistency (frames on which peers showed different states, their share, the largest
divergence in metres and the longest disagreement in frames before the peers converged), stall
frames per peer, bandwidth per peer (payload bytes the algorithm sent, and bytes on the wire with
transport and IPv4+UDP headers), anti-messages and force-majeure refusals (Time Warp's and local
rollback's own costs), and whether the peers ended on one checksum.

Decisions:
    * Time Warp and local rollback exist to undo and hold back messages that an optimistic
      computation generated; with raw button presses nothing a peer sends ever depends on its
      state. So those two run with ``aim_assist``: the local player's shoot button only fires
      while another player stands in the line of fire in the state the peer shows (the
      who-shoots-whom case of spec 000 §2.2/§2.3). Column ``inputs`` says which rows use it
      (parameter ``aim_assist``: the algorithms that do).
    * Every algorithm runs with its default knobs; the per-algorithm experiments
      (``sync/rollback``, ``sync/lockstep``, ``sync/bucket``) sweep those.
    * The reference holds properties, not thesis numbers (the thesis compares the algorithms in
      prose only): lockstep never shows peers different states, local rollback never sends an
      anti-message.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from lagless.errors import ConfigError
from lagless.lab.experiments import sync_sweep as sweep
from lagless.lab.registry import ExperimentSpec, register
from lagless.lab.result import JSONScalar, JSONValue, Result
from lagless.lab.runner import ExperimentContext
from lagless.sync.arena import SHOOT, Arena, ArenaState, ScriptedInputs, bot_script
from lagless.sync.contract import SyncPeer
from lagless.sync.harness import HarnessConfig, run_keeping_peers
from lagless.sync.registry import algorithms, make_peer

LAB: Final = "sync/compare"
ALGORITHMS: Final = ("lockstep", "bucket", "local-lag", "time-warp", "local-rollback", "rollback")
"""The algorithms of issue 15, in the order of the table."""

AIM_WIDTH_MM: Final = 1500
"""Half-width of the line of fire ``aim_assist`` checks (mm)."""

COLUMNS: Final = (
    "input_delay_ms_p50",
    "input_delay_ms_p99",
    "resimulated_per_s",
    "rollback_depth_p50",
    "rollback_depth_p99",
    "rollback_depth_max",
    "inconsistent_frames",
    "inconsistent_pct",
    "max_divergence_m",
    "longest_inconsistent_run",
    "stall_frames",
    "payload_bytes_per_s",
    "wire_bytes_per_s",
)


def aim_assist(state: ArenaState, frame: int, player: int, raw: bytes) -> bytes:
    """Keep the shoot bit only while another player is ahead within ``AIM_WIDTH_MM`` of the aim.

    A ``timewarp.React``: the arena shoots along ``facing``, so a target counts when it is in
    front (positive along ``facing``) and its distance across the line is at most the width.
    """
    bits = raw[0] if raw else 0
    if not bits & SHOOT:
        return raw
    facing = state.facing[player]
    delta = state.pos - state.pos[player]
    along = delta @ facing
    across = np.abs(delta[:, 0] * facing[1] - delta[:, 1] * facing[0])
    length = max(1.0, float(np.hypot(facing[0], facing[1])))
    in_line = (along > 0) & (across <= AIM_WIDTH_MM * length)
    in_line[player] = False
    return raw if in_line.any() else bytes((bits & ~SHOOT,))


def _settings(params: Mapping[str, JSONValue]) -> dict[str, Any]:
    known = algorithms()
    chosen = [str(a) for a in sweep.param_list(LAB, params, "algorithms")]
    for name in chosen:
        if name not in known:
            raise ConfigError(
                f"{LAB} parameter algorithms: unknown {name!r}; valid: {', '.join(known)}"
            )
    profiles = sweep.param_profiles(LAB, params)
    losses = sweep.param_numbers(LAB, params, "losses", 0.0, 1.0)
    aim = params.get("aim_assist", [])
    if not isinstance(aim, list):
        raise ConfigError(f"{LAB} parameter aim_assist must be a list of algorithm names")
    return {
        "algorithms": chosen,
        "profiles": profiles,
        "losses": losses,
        "aim": {str(a) for a in aim},
        "players": int(sweep.param_number(LAB, params, "players", 2, 8)),
        "duration": sweep.param_number(LAB, params, "duration", 0.1, 3600),
        "drain": sweep.param_number(LAB, params, "drain", 0.0, 600),
        "frame_rate": sweep.param_number(LAB, params, "frame_rate", 1, 1000),
    }


def _run(
    ctx: ExperimentContext,
    game: Arena,
    bots: Sequence[ScriptedInputs],
    settings: Mapping[str, Any],
    algorithm: str,
    profile: str,
    loss: float,
) -> dict[str, JSONScalar]:
    aimed = algorithm in settings["aim"]
    knobs = {"react": aim_assist} if aimed else {}

    def make(peer: int, rng: random.Random) -> SyncPeer[Any]:
        period = 1.0 / settings["frame_rate"]
        return make_peer(
            algorithm, game, peer, settings["players"], rng, frame_period=period, **knobs
        )

    config = HarnessConfig(
        algorithm=algorithm,
        peers=settings["players"],
        profile=profile,
        loss=loss,
        duration=settings["duration"],
        drain=settings["drain"],
        frame_rate=settings["frame_rate"],
        seed=ctx.seed_for(f"sync.compare.{profile}.{loss}") % 2**32,
    )
    result, built = run_keeping_peers(config, game, bot_script(bots), make)
    metrics = result.metrics()
    row: dict[str, JSONScalar] = {
        "algorithm": algorithm,
        "profile": profile,
        "rtt_ms": sweep.rtt_ms(profile, 2),
        "loss": loss,
        "inputs": "aim-assist" if aimed else "raw",
    }
    row.update(sweep.rounded(metrics, COLUMNS))
    seconds = result.elapsed
    anti = sum(int(getattr(p, "anti_messages_sent", 0)) for p in built)
    row["anti_messages_per_s"] = round(anti / len(built) / seconds, 3)
    row["force_majeure"] = sum(int(getattr(p, "force_majeure", 0)) for p in built)
    row["converged"] = bool(metrics["converged"])
    return row


def compare_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """Run every algorithm x profile x loss over the harness.

    Args:
        ctx: The run's context.
        params: ``algorithms``, ``profiles``, ``losses`` (extra loss per link direction),
            ``aim_assist`` (algorithms whose local input goes through ``aim_assist``),
            ``players`` (2–8), ``duration`` and ``drain`` (s), ``frame_rate`` (Hz).

    Returns:
        Table ``runs``; per-algorithm means as metrics ``<algorithm>_<column>_mean`` (dashes in
        names become underscores) and ``converged_pct``.
    """
    settings = _settings(params)
    game = Arena(settings["players"], frame_rate=settings["frame_rate"])
    bots = [
        ScriptedInputs(p, ctx.seed, frame_rate=settings["frame_rate"])
        for p in range(settings["players"])
    ]

    combos = list(
        itertools.product(settings["profiles"], settings["losses"], settings["algorithms"])
    )
    rows = [
        _run(ctx, game, bots, settings, algorithm, profile, loss)
        for profile, loss, algorithm in ctx.track(combos, description="sync/compare runs")
    ]
    ctx.add_table("runs", rows)
    _summarise(ctx, rows, settings["algorithms"])
    _plot(ctx, rows, settings["algorithms"], settings["profiles"])
    return ctx.result()


def _mean(rows: Sequence[Mapping[str, JSONScalar]], column: str) -> float:
    values = [r[column] for r in rows]
    return round(sum(float(v) for v in values if v is not None) / len(rows), 3)


def _summarise(
    ctx: ExperimentContext, rows: Sequence[Mapping[str, JSONScalar]], names: Sequence[str]
) -> None:
    ctx.add_metric("runs", float(len(rows)))
    ctx.add_metric("converged_pct", sweep.percent_true(rows, "converged"))
    for name in names:
        mine = [r for r in rows if r["algorithm"] == name]
        key = name.replace("-", "_")
        for column in ("input_delay_ms_p50", "inconsistent_pct", "stall_frames"):
            ctx.add_metric(f"{key}_{column}_mean", _mean(mine, column))
        ctx.add_metric(f"{key}_resimulated_per_s_mean", _mean(mine, "resimulated_per_s"))
        ctx.add_metric(f"{key}_payload_bytes_per_s_mean", _mean(mine, "payload_bytes_per_s"))
        ctx.add_metric(f"{key}_anti_messages_per_s_mean", _mean(mine, "anti_messages_per_s"))


def _plot(
    ctx: ExperimentContext,
    rows: Sequence[Mapping[str, JSONScalar]],
    names: Sequence[str],
    profiles: Sequence[str],
) -> None:
    """Input delay and inconsistency per algorithm, one bar group per profile (first loss)."""
    loss = rows[0]["loss"]
    for column, label in (
        ("input_delay_ms_p50", "input-to-display delay p50 (ms)"),
        ("inconsistent_pct", "frames shown differently (%)"),
    ):
        series: dict[str, list[float | None]] = {}
        for name in names:
            values: list[float | None] = []
            for profile in profiles:
                match = [
                    r
                    for r in rows
                    if (r["algorithm"], r["profile"], r["loss"]) == (name, profile, loss)
                ]
                values.append(float(match[0][column]) if match else None)  # type: ignore[arg-type]
            series[name] = values
        ctx.bar_plot(
            column,
            profiles,
            series,
            xlabel="network profile",
            ylabel=label,
            title=f"sync/compare: {label} (extra loss {loss})",
        )


SPEC: Final = register(
    ExperimentSpec(
        id="sync/compare",
        title="Lockstep, bucket sync, local lag, Time Warp, local rollback and rollback compared",
        entry_point=compare_experiment,
        quick={
            "algorithms": list(ALGORITHMS),
            "profiles": ["lan", "umts"],
            "losses": [0.02],
            "aim_assist": ["time-warp", "local-rollback"],
            "players": 2,
            "duration": 2.0,
            "drain": 1.0,
            "frame_rate": 60.0,
        },
        full={
            "algorithms": list(ALGORITHMS),
            "profiles": ["lan", "wifi", "umts", "intercontinental"],
            "losses": [0.0, 0.05],
            "aim_assist": ["time-warp", "local-rollback"],
            "players": 4,
            "duration": 20.0,
            "drain": 3.0,
            "frame_rate": 60.0,
        },
        reference={
            "lockstep_inconsistent_pct_mean": 0.0,
            "local_rollback_anti_messages_per_s_mean": 0.0,
            "converged_pct": 100.0,
        },
        description=(
            "Every synchronisation algorithm of issue 15 on the shared arena (scripted bots) "
            "with the same peers over the simulator harness (full mesh), one row of table "
            "`runs` per algorithm, network profile (nominal RTT in `rtt_ms`) and extra loss: "
            "the input-to-display delay the local player felt, frames re-simulated per second, "
            "rollback depths, inconsistency (share of frames peers showed differently, largest "
            "divergence in metres, longest disagreement in frames), stall frames per peer, "
            "bandwidth per peer (payload and on the wire with headers), anti-messages and "
            "force-majeure refusals, and whether the peers ended on one checksum. Time Warp "
            "and local rollback run with aim assist (the shoot button fires only with a target "
            "in line in the shown state), the case their anti-messages and held messages exist "
            "for. The reference holds properties: lockstep never shows peers different states, "
            "local rollback sends no anti-message, every run ends converged."
        ),
    )
)
"""The registered spec of ``sync/compare``."""
