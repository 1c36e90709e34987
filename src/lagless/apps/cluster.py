"""``lagless cluster`` at run time: nats-server, N cell-server processes and the bot players.

The asyncio side of issue 16 part 1 over ``lagless.io.nats``. ``run_cell`` pumps one
``lagless.cluster.CellNode`` over NATS (``python -m lagless.apps.cluster '<json>'`` starts it in
its own process); ``run_cluster`` is the one entry point: it starts ``nats-server``, the cell
servers and a ``BotSwarm``, optionally SIGKILLs one server mid-run, stops everything after the
duration and returns a ``ClusterReport``.

Decisions:
    * Every process reads ``time.monotonic()`` as ``now``: on one host they share the clock, so
      their ticks fall on one grid (``lagless.cluster.node``).
    * A server's tick time is the wall time (``time.perf_counter``) and the thread's CPU time
      (``time.thread_time``) of every call into its node (messages in, ticks, messages out),
      charged to the ticks those calls ran: one sample per tick (as the demo's ``BotServer``).
      Wall time includes time the process waited for a core on a loaded machine.
    * The players start only once every server has published a snapshot (start-up takes a
      second or two per process on a busy machine); ``duration`` counts from then.
    * ``kill``: the server killed with SIGKILL ``kill_at`` seconds into the run (no goodbye);
      its last once-a-second statistics stand in for its final ones.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import msgspec

from lagless.cluster import BotSwarm, CellGrid, CellNode, NodeConfig, Subjects, spawn_states
from lagless.cluster.messages import SNAPSHOT, ServerStats, Stats, Stop, decode, encode
from lagless.cluster.node import MAX_PLAYERS
from lagless.errors import ConfigError, LaglessError
from lagless.io.nats import NatsServer, PubSub
from lagless.io.udp import run, sleep_until

__all__ = [
    "CellArgs",
    "ClusterConfig",
    "ClusterError",
    "ClusterReport",
    "play_cluster",
    "report_json",
    "run_cell",
    "run_cluster",
]

HANDOFF_GAP_GOAL_MS = 50.0  # one snapshot interval at 20 Hz
RECOVERY_GOAL_MS = 2000.0
_STATS_EVERY = 1.0  # s
_READY_TIMEOUT = 60.0  # s for every server's first snapshot
_TICK_SAMPLES = 60 * 600


class ClusterError(LaglessError):
    """A cluster run could not start or a server failed (one line saying which)."""


class CellArgs(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """What a cell-server process needs (passed as JSON on its command line)."""

    url: str
    server: int
    servers: int
    players: int
    seed: int
    cell_size: float
    prefix: str
    dead_after: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ClusterConfig:
    """A cluster run: servers, players and what to measure."""

    servers: int = 3
    """Cell-server processes (one cell each), 1..16."""
    bots: int = 60
    """Bot players in the whole world, 0..256."""
    duration: float = 10.0
    """Seconds the players play, counted once every server is up."""
    seed: int = 1
    cell_size: float = 120.0
    """Width and height of a cell, m."""
    kill: int | None = None
    """Server to SIGKILL mid-run, or ``None``."""
    kill_at: float | None = None
    """Seconds into the run for the kill; ``None``: 40 % of the duration."""
    dead_after: float = 1.0
    """Heartbeat silence that makes a server dead, s."""

    def __post_init__(self) -> None:
        """Validate; raise ``ConfigError`` naming the flag."""
        if not 1 <= self.servers <= 16:
            raise ConfigError(f"--servers must be in [1, 16], got {self.servers}")
        if not 0 <= self.bots <= MAX_PLAYERS:
            raise ConfigError(f"--bots must be in [0, {MAX_PLAYERS}], got {self.bots}")
        if not (math.isfinite(self.duration) and 1.0 <= self.duration <= 3600.0):
            raise ConfigError(f"--duration must be in [1, 3600] s, got {self.duration!r}")
        if not (math.isfinite(self.cell_size) and 40.0 <= self.cell_size <= 2000.0):
            raise ConfigError(f"--cell-size must be in [40, 2000] m, got {self.cell_size!r}")
        if self.kill is not None:
            if self.servers < 2:
                raise ConfigError("--kill-one needs --servers 2 or more (someone must take over)")
            if not 0 <= self.kill < self.servers:
                raise ConfigError(
                    f"the killed server must be in [0, {self.servers}), got {self.kill}"
                )
            if not 0.0 < self.kill_time < self.duration:
                raise ConfigError(f"--kill-at must be in (0, {self.duration:g}) s")
        if not (math.isfinite(self.dead_after) and 0.1 <= self.dead_after <= 10.0):
            raise ConfigError(f"--dead-after must be in [0.1, 10] s, got {self.dead_after!r}")

    @property
    def kill_time(self) -> float:
        """Return the seconds into the run of the kill."""
        return 0.4 * self.duration if self.kill_at is None else self.kill_at


@dataclass(frozen=True, slots=True)
class ServerTicks:
    """One server's time per tick, ms."""

    server: int
    ticks: int
    cars: int
    tick_ms_avg: float
    tick_ms_p99: float
    tick_ms_max: float
    cpu_ms_avg: float
    handoffs_accepted: int
    late_handoffs: int
    takeovers: int
    killed: bool


@dataclass(frozen=True, slots=True)
class ClusterReport:
    """The result of ``run_cluster`` (times in ms, distances in m); ``as_dict`` for JSON."""

    servers: int
    players: int
    cells: int
    world_m: tuple[float, float]
    duration_s: float
    handoffs: int
    """Hand-offs accepted by the servers."""
    handoffs_seen: int
    """Owner changes the players saw (not counting take-overs)."""
    late_handoffs: int
    """Hand-offs that reached their receiver after the snapshot they belonged in had gone out
    (made up for by a snapshot of the car at the missed instant)."""
    handoff_gap_ms_max: float
    handoff_gap_ms_mean: float
    handoff_gap_wall_ms_max: float
    handoff_gap_wall_ms_p99: float
    update_gap_wall_ms_p99: float
    update_gap_ms_max: float
    """Largest server-time gap between two updates of a car from one server (ticks skipped by a
    server that fell more than half a second behind)."""
    ticks_skipped: int
    handoff_jump_m_max: float
    update_jump_m_p99: float
    failovers_seen: int
    """Owner changes away from a server that had gone silent without being killed (it
    stalled past the heartbeat timeout: a false alarm)."""
    failover_gap_ms_max: float
    inputs_sent: int
    inputs_acked: int
    inputs_lost: int
    inputs_unapplied: int
    players_live: int
    updates: int
    stale_updates: int
    killed_server: int | None
    recovery_ms: float | None
    cars_unrecovered: int
    takeovers: int
    cars_adopted: int
    tick_ms_avg: float
    """Mean over the servers of their mean tick time, ms."""
    tick_ms_p99: float
    """Largest 99th percentile of a server's tick time, ms."""
    per_server: tuple[ServerTicks, ...]
    goals: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        """Return the report as JSON-ready data."""
        data = asdict(self)
        data["world_m"] = list(self.world_m)
        data["per_server"] = [asdict(s) for s in self.per_server]
        return data


# -- one cell server ------------------------------------------------------------------------------


class _Stopwatch:
    """Wall and CPU time of calls into a node, charged to the ticks they ran (ms per tick)."""

    def __init__(self) -> None:
        self.wall: deque[float] = deque(maxlen=_TICK_SAMPLES)
        self.cpu: deque[float] = deque(maxlen=_TICK_SAMPLES)
        self._busy = [0.0, 0.0]
        self._ticks = 0

    def start(self) -> tuple[float, float]:
        return time.perf_counter(), time.thread_time()

    def charge(self, started: tuple[float, float], ticks: int) -> None:
        self._busy[0] += time.perf_counter() - started[0]
        self._busy[1] += time.thread_time() - started[1]
        if ticks > self._ticks:
            n = ticks - self._ticks
            self.wall.extend([1000.0 * self._busy[0] / n] * n)
            self.cpu.extend([1000.0 * self._busy[1] / n] * n)
            self._busy = [0.0, 0.0]
            self._ticks = ticks

    def stats(self, node: CellNode, *, final: bool) -> ServerStats:
        wall = sorted(self.wall)
        p99 = wall[min(len(wall) - 1, math.ceil(0.99 * len(wall)) - 1)] if wall else 0.0
        return ServerStats(
            server=node.server,
            ticks=node.ticks_run,
            tick_ms_avg=sum(wall) / len(wall) if wall else 0.0,
            tick_ms_p99=p99,
            tick_ms_max=wall[-1] if wall else 0.0,
            cpu_ms_avg=sum(self.cpu) / len(self.cpu) if self.cpu else 0.0,
            cars=len(node.owned),
            ghosts=len(node.ghosts),
            cells=len(node.cells),
            handoffs_sent=node.handoffs_sent,
            handoffs_accepted=node.handoffs_accepted,
            takeovers=node.takeovers,
            cars_adopted=node.cars_adopted,
            cars_reclaimed=node.cars_reclaimed,
            duplicates_dropped=node.duplicates_dropped,
            late_handoffs=node.late_handoffs,
            ticks_skipped=node.ticks_skipped,
            final=final,
        )


async def run_cell(args: CellArgs) -> ServerStats:
    """Run one cell server over NATS until a ``Stop`` (or SIGTERM); return its final stats."""
    subjects = Subjects(args.prefix)
    grid = CellGrid.for_servers(args.servers, args.cell_size, args.cell_size)
    bus = await PubSub.connect(args.url, name=f"cell-{args.server}")
    node = CellNode(
        args.server,
        args.servers,
        grid,
        spawn_states(grid, args.players, args.seed),
        time.monotonic(),
        config=NodeConfig(dead_after=args.dead_after),
        subjects=subjects,
    )
    watch = _Stopwatch()
    wake = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, wake.set)

    def on_message(_subject: str, payload: bytes) -> None:
        started = watch.start()
        node.receive(payload, time.monotonic())
        watch.charge(started, node.ticks_run)

    for subject in node.subscriptions():
        await bus.subscribe(subject, on_message)
    next_stats = time.monotonic() + _STATS_EVERY
    while not node.stopped and not wake.is_set():
        started = watch.start()
        now = time.monotonic()
        node.handle_timer(now)
        while node.next_event() is not None:
            pass
        out = node.messages_to_send()
        watch.charge(started, node.ticks_run)
        await bus.publish_all(out)
        if now >= next_stats:
            next_stats = now + _STATS_EVERY
            stats = watch.stats(node, final=False)
            await bus.publish(subjects.stats(node.server), encode(Stats(stats)))
        await sleep_until(node.next_timer(), time.monotonic)
    final = watch.stats(node, final=True)
    await bus.publish(subjects.stats(node.server), encode(Stats(final)))
    await bus.close()
    return final


def cell_main(argv: list[str]) -> int:
    """Run a cell server from ``argv[0]`` (a ``CellArgs`` JSON); return the exit status."""
    try:
        args = msgspec.json.decode(argv[0].encode(), type=CellArgs)
        run(run_cell(args))
    except (LaglessError, msgspec.DecodeError, msgspec.ValidationError, IndexError) as exc:
        print(f"error: cell server: {exc}", file=sys.stderr)
        return 2
    return 0


# -- the entry point ------------------------------------------------------------------------------


class _Cluster:
    """The processes of one run (nats-server and the cell servers) and their cleanup."""

    def __init__(self, config: ClusterConfig, prefix: str, logs: Path) -> None:
        self.config = config
        self.logs = logs
        self.nats = NatsServer(log=logs / "nats-server.log")
        self.cells: dict[int, subprocess.Popen[bytes]] = {}
        try:
            for k in range(config.servers):
                args = CellArgs(
                    url=self.nats.url,
                    server=k,
                    servers=config.servers,
                    players=config.bots,
                    seed=config.seed,
                    cell_size=config.cell_size,
                    prefix=prefix,
                    dead_after=config.dead_after,
                )
                log = (logs / f"cell-{k}.log").open("wb")
                self.cells[k] = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "lagless.apps.cluster",
                        msgspec.json.encode(args).decode(),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
                log.close()
        except BaseException:
            self.close()
            raise

    def failed(self, killed: set[int]) -> str | None:
        """Return a line naming a cell server that exited on its own, or ``None``."""
        for k, proc in self.cells.items():
            if k not in killed and proc.poll() is not None:
                tail = (self.logs / f"cell-{k}.log").read_text(errors="replace").strip()
                last = tail.splitlines()[-1] if tail else "no output"
                return f"cell server {k} exited with status {proc.returncode}: {last}"
        return None

    def kill(self, server: int) -> None:
        """SIGKILL ``server``."""
        os.kill(self.cells[server].pid, signal.SIGKILL)
        self.cells[server].wait()

    def close(self) -> None:
        """Stop every process still running (SIGTERM, SIGKILL after 5 s), then nats-server."""
        for proc in self.cells.values():
            if proc.poll() is None:
                proc.terminate()
        for proc in self.cells.values():
            try:
                proc.wait(5.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.nats.stop()


async def _play(
    config: ClusterConfig,
    cluster: _Cluster,
    subjects: Subjects,
    stop: asyncio.Event,
    on_ready: Callable[[], None] | None,
) -> ClusterReport:
    bus = await PubSub.connect(cluster.nats.url, name="players")
    grid = CellGrid.for_servers(config.servers, config.cell_size, config.cell_size)
    swarm = BotSwarm(grid, config.bots, random.Random(config.seed), subjects=subjects)
    seen: set[int] = set()
    stats: dict[int, ServerStats] = {}

    def on_snapshot(_subject: str, payload: bytes) -> None:
        if len(payload) > 1 and payload[0] == SNAPSHOT:
            seen.add(payload[1])
        swarm.receive(payload, time.monotonic())

    def on_stats(_subject: str, payload: bytes) -> None:
        message = decode(payload)
        if isinstance(message, Stats):
            stats[message.stats.server] = message.stats

    await bus.subscribe(subjects.snapshots, on_snapshot)
    await bus.subscribe(subjects.all_stats, on_stats)
    killed: set[int] = set()
    deadline = time.monotonic() + _READY_TIMEOUT
    while len(seen) < config.servers and not stop.is_set():
        if (failure := cluster.failed(killed)) is not None:
            raise ClusterError(failure)
        if time.monotonic() > deadline:
            raise ClusterError(f"only servers {sorted(seen)} started within {_READY_TIMEOUT:g} s")
        await asyncio.sleep(0.05)
    if on_ready is not None and not stop.is_set():
        on_ready()
    start = time.monotonic()
    end = start + config.duration
    kill_at = start + config.kill_time if config.kill is not None else math.inf
    while (now := time.monotonic()) < end and not stop.is_set():
        if now >= kill_at and config.kill is not None:
            swarm.server_killed(config.kill, now)
            cluster.kill(config.kill)
            killed.add(config.kill)
            kill_at = math.inf
        if (failure := cluster.failed(killed)) is not None and not stop.is_set():
            raise ClusterError(failure)
        swarm.handle_timer(now)
        await bus.publish_all(swarm.messages_to_send())
        await sleep_until(min(swarm.next_timer(), kill_at, end), time.monotonic)
    played = min(config.duration, time.monotonic() - start)
    result = swarm.report(time.monotonic())
    for k in range(config.servers):
        if k not in killed:
            stats.pop(k, None)
    await bus.publish(subjects.stop, encode(Stop()))
    await bus.flush()
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and any(
        k not in stats or not stats[k].final for k in range(config.servers) if k not in killed
    ):
        await asyncio.sleep(0.05)
    await bus.close()
    per_server = tuple(
        ServerTicks(
            server=k,
            ticks=s.ticks,
            cars=s.cars,
            tick_ms_avg=round(s.tick_ms_avg, 3),
            tick_ms_p99=round(s.tick_ms_p99, 3),
            tick_ms_max=round(s.tick_ms_max, 3),
            cpu_ms_avg=round(s.cpu_ms_avg, 3),
            handoffs_accepted=s.handoffs_accepted,
            late_handoffs=s.late_handoffs,
            takeovers=s.takeovers,
            killed=k in killed,
        )
        for k, s in sorted(stats.items())
    )
    return ClusterReport(
        servers=config.servers,
        players=config.bots,
        cells=grid.cells,
        world_m=(grid.width, grid.height),
        duration_s=round(played, 3),
        handoffs=sum(s.handoffs_accepted for s in stats.values()),
        handoffs_seen=result.handoffs_seen,
        late_handoffs=sum(s.late_handoffs for s in stats.values()),
        handoff_gap_ms_max=round(result.handoff_gap_ms_max, 1),
        handoff_gap_ms_mean=round(result.handoff_gap_ms_mean, 1),
        handoff_gap_wall_ms_max=round(result.handoff_gap_wall_ms_max, 1),
        handoff_gap_wall_ms_p99=round(result.handoff_gap_wall_ms_p99, 1),
        update_gap_wall_ms_p99=round(result.update_gap_wall_ms_p99, 1),
        update_gap_ms_max=round(result.update_gap_ms_max, 1),
        ticks_skipped=sum(s.ticks_skipped for s in stats.values()),
        handoff_jump_m_max=round(result.handoff_jump_m_max, 3),
        update_jump_m_p99=round(result.update_jump_m_p99, 3),
        failovers_seen=result.failovers_seen,
        failover_gap_ms_max=round(result.failover_gap_ms_max, 1),
        inputs_sent=result.inputs_sent,
        inputs_acked=result.inputs_acked,
        inputs_lost=result.inputs_lost,
        inputs_unapplied=result.inputs_unapplied,
        players_live=result.players_live,
        updates=result.updates,
        stale_updates=result.stale_updates,
        killed_server=config.kill,
        recovery_ms=None if result.recovery_ms is None else round(result.recovery_ms, 1),
        cars_unrecovered=result.cars_unrecovered,
        takeovers=sum(s.takeovers for s in stats.values()),
        cars_adopted=sum(s.cars_adopted for s in stats.values()),
        tick_ms_avg=round(sum(s.tick_ms_avg for s in per_server) / max(1, len(per_server)), 3),
        tick_ms_p99=max((s.tick_ms_p99 for s in per_server), default=0.0),
        per_server=per_server,
        goals={"handoff_gap_ms": HANDOFF_GAP_GOAL_MS, "recovery_ms": RECOVERY_GOAL_MS},
    )


async def play_cluster(
    config: ClusterConfig,
    *,
    stop: asyncio.Event | None = None,
    prefix: str = "lagless.cluster",
    on_ready: Callable[[], None] | None = None,
) -> ClusterReport:
    """Start nats-server and the cell servers, play for ``config.duration`` s, stop everything.

    Args:
        config: The run.
        stop: Set it to end the run early (a signal); the report covers the time played.
        prefix: The cluster's subject prefix.
        on_ready: Called once every cell server has published, when the timed run starts.

    Raises:
        NatsError: nats-server or nats-py is missing or would not start.
        ClusterError: A cell server failed to start or died on its own.
    """
    with tempfile.TemporaryDirectory(prefix="lagless-cluster-") as tmp:
        cluster = _Cluster(config, prefix, Path(tmp))
        try:
            return await _play(config, cluster, Subjects(prefix), stop or asyncio.Event(), on_ready)
        finally:
            cluster.close()


def run_cluster(config: ClusterConfig, *, prefix: str = "lagless.cluster") -> ClusterReport:
    """Run ``play_cluster`` on a fresh event loop and return its report (same errors)."""
    return run(play_cluster(config, prefix=prefix), freeze_gc=False)


def report_json(report: ClusterReport) -> str:
    """Return the report as one JSON object on one line."""
    return json.dumps(report.as_dict(), sort_keys=False)


if __name__ == "__main__":
    sys.exit(cell_main(sys.argv[1:]))
