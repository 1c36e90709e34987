"""The headless demo: the same match with bots only, a live table, ``last-frame.png`` and a summary.

``lagless demo --headless --duration S --out DIR`` runs ``SimMatch`` (server with bots, one
player driven by the autopilot, on the simulator) for S seconds of match time and writes
``DIR/last-frame.png`` (the player's view of the last frame with every car's path, drawn
off-screen with pygame's dummy video driver) and ``DIR/summary.json``.

Decisions:
    * ``server_tick_ms_*`` is wall time per server tick, ``server_tick_cpu_ms_*`` the server
      thread's CPU time per tick (``BotServer``).
    * By default the run is paced to the wall clock (a 20 s match takes 20 s, as a user watching
      the table expects); ``realtime=False`` runs as fast as the machine can (the tests). The
      server's per-tick time is measured either way (``BotServer``).
    * ``client_kBps_avg`` is what the player received per second over the whole match, in kB/s
      (1000 bytes) **including** the 28 IPv4+UDP header bytes per datagram;
      ``client_kBps_avg_payload`` the same without headers (DESIGN.md "Units and numbers").
    * A SIGINT (``KeyboardInterrupt``) ends the match early; the files are still written, and
      ``duration_s`` says how long it ran.
    * A ``--connect`` client also ends when its connection does (the server shut down, timed
      out); its summary's ``end_reason`` says why (the server's goodbye, ``server shutting
      down``, or the transport's reason; ``null`` when the duration ended it) and the HUD of
      ``last-frame.png`` shows it.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from lagless.demo.arena import TickStats
from lagless.demo.match import SimMatch
from lagless.demo.net import UDP_HEADER, UdpPlayer
from lagless.demo.session import LiveStatus, Paths, end_reason, hud_lines
from lagless.errors import ConfigError
from lagless.smoothing.state import DisplayState

__all__ = [
    "FRAME_RATE",
    "GOAL_CLIENT_KBPS",
    "GOAL_TICK_MS",
    "HeadlessResult",
    "run_client_headless",
    "run_headless",
]

FRAME_RATE: Final = 30.0  # Hz: frames the player's view is sampled at
GOAL_TICK_MS: Final = 8.0  # ms per server tick on one core (issue 14)
GOAL_CLIENT_KBPS: Final = 8.0  # kB/s per client (issue 14)

Reporter = Callable[[float, LiveStatus, TickStats], None]
"""Called once per second of match time with (match time s, player status, server tick time)."""


@dataclass(frozen=True, slots=True)
class HeadlessResult:
    """What a headless run wrote and whether a signal cut it short."""

    summary: dict[str, Any]
    """The contents of ``summary.json``."""
    signum: int | None
    """The signal that ended the run early, or ``None``."""


def _summary(
    match: SimMatch, bots: int, elapsed: float, seed: int, realtime: bool
) -> dict[str, Any]:
    tick = match.tick_stats()
    cpu = match.server.tick_stats(cpu=True)
    rx_payload, rx_wire, tx_payload, tx_wire = match.player_bytes()
    per_s = 1.0 / max(elapsed, 1e-9) / 1000.0
    own = match.client.car_id
    return {
        "players": 1,
        "bots": bots,
        "duration_s": round(elapsed, 3),
        "profile": match.profile,
        "display_model": match.model,
        "seed": seed,
        "realtime": realtime,
        "server_ticks": tick.ticks,
        "server_tick_ms_avg": round(tick.avg_ms, 4),
        "server_tick_ms_p99": round(tick.p99_ms, 4),
        "server_tick_ms_max": round(tick.max_ms, 4),
        "server_tick_cpu_ms_avg": round(cpu.avg_ms, 4),
        "server_tick_cpu_ms_p99": round(cpu.p99_ms, 4),
        "client_kBps_avg": round(rx_wire * per_s, 4),
        "client_kBps_avg_payload": round(rx_payload * per_s, 4),
        "client_kBps_out_avg": round(tx_wire * per_s, 4),
        "client_kBps_out_avg_payload": round(tx_payload * per_s, 4),
        "client_snapshots": match.client.snapshots,
        "rams": sum(match.server.referee.scores.values()),
        "player_rams": 0 if own is None else match.server.referee.scores.get(own, 0),
        "kBps_includes_ip_udp_headers": True,
        "goal": {"server_tick_ms": GOAL_TICK_MS, "client_kBps": GOAL_CLIENT_KBPS},
    }


def run_headless(
    *,
    bots: int,
    seed: int,
    profile: str,
    model: str,
    duration: float,
    out: Path,
    realtime: bool,
    report: Reporter | None = None,
) -> HeadlessResult:
    """Run a headless match and write ``out/last-frame.png`` and ``out/summary.json``.

    Args:
        bots: Bots on the server.
        seed: Seeds the whole match.
        profile: Network profile between the player and the server.
        model: Display model of the player's view.
        duration: Match time, s (> 0).
        out: Directory to write into (created).
        realtime: Pace the match to the wall clock.
        report: Called once per second of match time (the live table), or ``None``.

    Raises:
        ConfigError: Bad duration, profile or model, or ``out`` cannot be written.
    """
    _check(duration, out)
    match = SimMatch(bots=bots, seed=seed, profile=profile, model=model, autopilot=True)
    frames = max(1, math.ceil(duration * FRAME_RATE))
    wall_start = time.monotonic()
    shown: dict[int, DisplayState] = {}
    next_report = 1.0
    signum: int | None = None
    elapsed = 0.0
    try:
        for n in range(1, frames + 1):
            elapsed = min(duration, n / FRAME_RATE)
            shown = match.advance(elapsed)
            if report is not None and elapsed >= next_report - 1e-9:
                next_report += 1.0
                report(elapsed, match.status(len(shown)), match.tick_stats())
            if realtime:
                time.sleep(max(0.0, wall_start + elapsed - time.monotonic()))
    except KeyboardInterrupt as exc:
        signum = int(getattr(exc, "signum", 2))
    summary = _summary(match, bots, elapsed, seed, realtime)
    hud = hud_lines(
        match.status(len(shown)), match.tick_stats(), keys_help=False, score=match.score_line()
    )
    _write_files(out, summary, shown, match.client.car_id, match.paths, hud)
    return HeadlessResult(summary, signum)


def run_client_headless(
    player: UdpPlayer,
    *,
    duration: float,
    out: Path,
    report: Callable[[float, LiveStatus], None] | None = None,
) -> HeadlessResult:
    """Play a ``--connect`` client with the autopilot for ``duration`` s, then write the files.

    The summary holds what a client can measure: cars shown, snapshots, the mean of the
    once-a-second payload kB/s received (``client_kBps_avg_payload``) and that plus 28 header
    bytes per packet received (``client_kBps_avg``); the server's tick time is the server's.

    Raises:
        ConfigError: Bad duration, or ``out`` cannot be created.
    """
    _check(duration, out)
    start = time.monotonic()
    shown: dict[int, DisplayState] = {}
    next_report = 1.0
    signum: int | None = None
    try:
        while (elapsed := time.monotonic() - start) < duration and player.client.ended is None:
            shown = player.advance()
            if report is not None and elapsed >= next_report:
                next_report += 1.0
                report(elapsed, player.status(len(shown)))
            player.wait(1.0 / FRAME_RATE)
    except KeyboardInterrupt as exc:
        signum = int(getattr(exc, "signum", 2))
    elapsed = time.monotonic() - start
    status = player.status(len(shown))
    payload = player.kbps_in_avg()
    packets = player.packets_received()
    summary: dict[str, Any] = {
        "mode": "connect",
        "players": 1,
        "cars_shown": len(shown),
        "duration_s": round(elapsed, 3),
        "profile": player.profile,
        "display_model": player.model,
        "client_snapshots": player.client.snapshots,
        "client_kBps_avg_payload": round(payload, 4),
        "client_kBps_avg": round(payload + UDP_HEADER * packets / max(elapsed, 1e-9) / 1000.0, 4),
        "rtt_ms": round(status.rtt_ms, 3),
        "loss": round(status.loss, 4),
        "kBps_includes_ip_udp_headers": True,
        "end_reason": end_reason(player.client),
    }
    hud = hud_lines(status, None, keys_help=False)
    _write_files(out, summary, shown, player.client.car_id, player.paths, hud)
    return HeadlessResult(summary, signum)


def _check(duration: float, out: Path) -> None:
    if not (math.isfinite(duration) and duration > 0.0):
        raise ConfigError(f"--duration must be a number of seconds > 0, got {duration:g}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {str(out)!r} cannot be created: {exc.strerror}") from None


def _write_files(
    out: Path,
    summary: dict[str, Any],
    shown: dict[int, DisplayState],
    own_id: int | None,
    paths: Paths,
    hud: list[str],
) -> None:
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    import pygame

    from lagless.demo.render import FRAME_SIZE, Renderer

    surface = pygame.Surface(FRAME_SIZE)
    Renderer().draw(surface, shown, own_id=own_id, paths=paths.points, hud=hud)
    pygame.image.save(surface, str(out / "last-frame.png"))
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
