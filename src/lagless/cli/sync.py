"""``lagless sync``: run one synchronisation peer over real UDP, or synctest the arena.

Issue 15 on the command line. ``peer`` runs one peer of a session (spec 000 §2.1, §2.3, §2.14 or
GGPO-style rollback, by ``--algorithm``) on the arena with scripted bots; start one process per
address of ``--peers``, each with its own ``--peer``. It prints the frame and checksum it ended
on and its counters (``--json``: one JSON object with the checksums of its last 60 frames, so a
script can compare the peers). ``synctest`` rolls back and re-simulates every frame of the arena
and reports the first frame whose checksum differs (GGPO's synctest). The transport runs without
encryption (development and tests only). A bad argument prints one ``error:`` line and exits with
status 2; a peer that did not reach its end frame exits with 1; SIGINT or SIGTERM end ``peer``
with 130 or 143. Register with ``app.add_typer(sync.app, name="sync")``.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer

from lagless.apps.sync import PeerRunConfig, arena_synctest, run_sync_peer
from lagless.cli.common import echo, exit_for, fail, in_range, make_app, run_until_signal
from lagless.errors import ConfigError
from lagless.io.udp import parse_hostport
from lagless.sync.registry import algorithms

app = make_app("Synchronisation algorithms over real UDP: run a peer, synctest the arena.")


@app.command("peer")
def peer(
    algorithm: Annotated[str, typer.Option(help="lockstep, bucket, local-lag, time-warp, ...")],
    index: Annotated[int, typer.Option("--peer", help="this peer's index in --peers")],
    peers: Annotated[str, typer.Option(help="every peer's HOST:PORT, comma-separated")],
    frames: Annotated[int, typer.Option(help="frames of scripted bot input")] = 300,
    drain: Annotated[int, typer.Option(help="frames of neutral input after them")] = 60,
    rate: Annotated[float, typer.Option("--frame-rate", help="frames per second")] = 60.0,
    seed: Annotated[int, typer.Option(help="seed of the arena and the bots (same on all)")] = 0,
    timeout: Annotated[
        float, typer.Option(help="seconds to wait for the peers, then for the session")
    ] = 30.0,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Run one peer of a session on the arena over UDP and print where it ended."""
    try:
        if algorithm not in algorithms():
            raise ConfigError(
                f"--algorithm must be one of {', '.join(algorithms())}, got {algorithm!r}"
            )
        addresses = tuple(parse_hostport(a.strip(), field="--peers") for a in peers.split(","))
        in_range(frames, "--frames", 1, 10_000_000)
        in_range(drain, "--drain", 0, 10_000_000)
        if not timeout > 0:
            raise ConfigError(f"--timeout must be a number of seconds > 0, got {timeout:g}")
        config = PeerRunConfig(
            algorithm=algorithm,
            peer=index,
            addresses=addresses,
            frames=frames,
            drain_frames=drain,
            frame_rate=rate,
            seed=seed,
            start_timeout=timeout,
            timeout=timeout,
        )
        report, signum = run_until_signal(lambda stop: run_sync_peer(config, stop))
    except ConfigError as exc:
        fail(str(exc))
    if as_json:
        echo(json.dumps(report.as_json(), sort_keys=True))
    else:
        stats = report.stats
        echo(
            f"sync peer {report.peer}/{report.peers} {report.algorithm}: frame "
            f"{report.final_frame} checksum {report.final_checksum:08x} in "
            f"{report.elapsed:.2f} s; stalls {stats['stall_frames']}, rollbacks "
            f"{stats['rollbacks']} (max depth {stats['rollback_depth_max']}), re-simulated "
            f"{stats['frames_resimulated']}, sent {stats['bytes_sent']} B"
        )
    exit_for(signum)
    if not report.completed:
        typer.echo(
            f"sync peer {report.peer}: stopped at frame {report.final_frame} before the end "
            f"frame {frames + drain}",
            err=True,
        )
        raise typer.Exit(1)


@app.command("synctest")
def synctest(
    players: Annotated[int, typer.Option(help="players in the arena (2-8)")] = 2,
    entities: Annotated[int, typer.Option(help="extra drifting entities")] = 0,
    frames: Annotated[int, typer.Option(help="frames to run")] = 600,
    distance: Annotated[int, typer.Option("--check-distance", help="frames re-simulated")] = 8,
    seed: Annotated[int, typer.Option(help="seed of the arena and the bots")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON object")] = False,
) -> None:
    """Synctest the arena: re-simulate every frame and report the first checksum mismatch."""
    try:
        in_range(players, "--players", 2, 8)
        in_range(entities, "--entities", 0, 100_000)
        in_range(frames, "--frames", 1, 10_000_000)
        in_range(distance, "--check-distance", 1, 1000)
        report = arena_synctest(
            players=players, entities=entities, frames=frames, check_distance=distance, seed=seed
        )
    except ConfigError as exc:
        fail(str(exc))
    mismatch = report.mismatch
    if as_json:
        data = {
            "ok": report.ok,
            "frames": report.frames,
            "check_distance": report.check_distance,
            "rollbacks": report.rollbacks,
            "resimulated_frames": report.resimulated_frames,
            "mismatch_frame": None if mismatch is None else mismatch.frame,
        }
        echo(json.dumps(data, sort_keys=True))
    elif mismatch is None:
        echo(
            f"synctest ok: {report.frames} frames, {report.rollbacks} rollbacks of "
            f"{report.check_distance} frames, {report.resimulated_frames} re-simulated"
        )
    else:
        echo(
            f"synctest FAILED at frame {mismatch.frame} ({mismatch.cause}): checksum "
            f"{mismatch.first_checksum:08x} then {mismatch.resimulated_checksum:08x}"
        )
    if mismatch is not None:
        raise typer.Exit(1)
