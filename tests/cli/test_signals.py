"""The first SIGINT or SIGTERM stops every long-running command within 2 s, with its summary.

Each command runs as ``python -m lagless`` in its own process, all of them at once; once each is
busy (its start-up line seen) each process in turn gets one signal and must exit within 2 s with
status 128 + the signal's number, print its summary and no traceback or asyncio complaint.
(Signalling all twelve at once measures the machine: twelve interpreters tearing down together on
two cores take longer than 2 s.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer

from lagless.cli.common import run_app

STOP_WITHIN = 2.0  # seconds from the signal to the exit
STARTUP_DELAYS = (0.4, 0.6, 0.9)  # seconds after start: the commands are still being imported
CPU_BOUND_NICE = 10  # the benchmark and the lab run must not starve the network programs


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_long_running_commands_stop_on_the_first_signal(
    signum: signal.Signals, lagless: Callable[..., Any], tmp_path: Path
) -> None:
    serve = lagless("serve", "--port", "0", "--echo", "--quiet")
    vfc = lagless("vfc", "serve", "--port", "0", "--quiet")
    lobby = lagless("gossip", "lobby", "--port", "0", "--quiet")
    bench = lagless("bench", "transport", nice=CPU_BOUND_NICE)
    lab = lagless(
        "lab", "run", "realtime/sports", "--out", str(tmp_path / "lab"), nice=CPU_BOUND_NICE
    )
    swarm = lagless("gossip", "swarm", "-n", "3", "--duration", "60")
    game = lagless("game", "serve", "--port", "0", "--discovery-port", "0", "--quiet")
    rooms = lagless("game", "rooms", "--port", "0")
    serve_port = serve.wait_line(r"on 127\.0\.0\.1:(\d+)").group(1)
    vfc_port = vfc.wait_line(r"vfc server on 127\.0\.0\.1:(\d+)").group(1)
    lobby_port = lobby.wait_line(r"lobby on 127\.0\.0\.1:(\d+)").group(1)
    connect = lagless("connect", f"127.0.0.1:{serve_port}")  # stdin stays open, like a terminal
    proxy = lagless("proxy", "--listen", "127.0.0.1:0", "--forward", f"127.0.0.1:{serve_port}")
    bots = lagless("vfc", "bots", f"127.0.0.1:{vfc_port}", "-n", "2", "--duration", "60")
    peer = lagless("gossip", "peer", "--lobby", f"127.0.0.1:{lobby_port}")
    connect.wait_line(r"^connected to 127\.0\.0\.1:")
    proxy.wait_line(r"^proxy 127\.0\.0\.1:\d+ -> ")
    vfc.wait_line(r"^client \d+ joined")
    peer.wait_line(r"^peer [0-9a-f]{8} on ")
    swarm.wait_line(r"^swarm of 3 peers")
    game.wait_line(r"^game server on 127\.0\.0\.1:")
    rooms.wait_line(r"^room service on 127\.0\.0\.1:")
    bench.wait_line(r"^bench transport: running", stderr=True)
    lab.wait_line(r"^running realtime/sports \(full, seed 0\)", stderr=True)
    summaries = {
        "serve": (serve, "clients, "),
        "connect": (connect, " replies"),
        "proxy": (proxy, "summary:"),
        "vfc serve": (vfc, " joined; "),
        "vfc bots": (bots, " bots joined"),
        "gossip lobby": (lobby, " games opened"),
        "gossip peer": (peer, " peers; "),
        "gossip swarm": (swarm, "peers joined: "),
        "game serve": (game, " players joined, "),
        "game rooms": (rooms, " rooms open, "),
        "bench": (bench, "bench transport: interrupted after"),
        "lab run": (lab, "lab run realtime/sports: interrupted after"),
    }
    for name, (proc, summary) in summaries.items():
        assert proc.process.poll() is None, proc.args
        proc.process.send_signal(signum)
        signalled = time.monotonic()
        status, out, err = proc.finish(timeout=STOP_WITHIN + 10)
        waited = time.monotonic() - signalled
        assert waited < STOP_WITHIN, f"{name} took {waited:.1f} s to stop"
        assert status == 128 + signum, f"{name}: exit {status}\n{err}"
        assert summary in out + err, f"{name}: no summary\n{out}\n{err}"
        for noise in ("Traceback", "Task exception was never retrieved", "Exception ignored"):
            assert noise not in err, f"{name}: {noise}\n{err}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_during_start_up_exits_quietly(
    signum: signal.Signals, lagless: Callable[..., Any]
) -> None:
    started = [lagless("game", "rooms", "--port", "0") for _ in STARTUP_DELAYS]
    begun = time.monotonic()
    for delay, proc in zip(STARTUP_DELAYS, started, strict=True):
        time.sleep(max(0.0, begun + delay - time.monotonic()))
        proc.process.send_signal(signum)
    for proc in started:
        status, _out, err = proc.finish(timeout=STOP_WITHIN + 10)
        assert status == 128 + signum, err
        assert "Traceback" not in err, err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_inside_a_server_step_lets_the_step_finish(signum: signal.Signals) -> None:
    """The game and room servers' loop (`_run`) stops between two steps: a signal that arrives
    while a step holds events it took from the protocol object must not cut the step before it
    has logged them (the old raising handler lost a room_created record that way)."""
    from lagless.cli.game import _run

    finished: list[int] = []

    def step() -> bool:
        os.kill(os.getpid(), signum)
        time.sleep(0.01)  # the handler runs here, in the middle of the step
        finished.append(len(finished))
        return True

    assert _run(step, duration=5.0) == signum
    assert finished == [0]
    assert signal.getsignal(signum) is not None  # the previous handler is back


_STUBBORN = """
import sys, time
announced = False
while True:  # swallows every interrupt, as a cancelled asyncio task could
    try:
        if not announced:  # said inside the try: an interrupt right after it is swallowed too
            print("swallowing interrupts now", file=sys.stderr, flush=True)
            announced = True
        time.sleep(0.05)
    except KeyboardInterrupt:
        pass
"""

_RUN_BENCH = """
import sys
from pathlib import Path
from lagless.cli import bench
from lagless.cli.app import app
from lagless.cli.common import run_app
bench.benchmarks_dir = lambda: Path(sys.argv[1])
sys.exit(run_app(app, ["bench", "stubborn"]))
"""


def test_a_benchmark_that_swallows_the_interrupt_is_ended_all_the_same(tmp_path: Path) -> None:
    (tmp_path / "stubborn.py").write_text(_STUBBORN)
    process = subprocess.Popen(
        [sys.executable, "-c", _RUN_BENCH, str(tmp_path)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        while "swallowing interrupts now" not in process.stderr.readline():
            pass
        process.send_signal(signal.SIGINT)
        signalled = time.monotonic()
        _out, err = process.communicate(timeout=STOP_WITHIN + 10)
        waited = time.monotonic() - signalled
    finally:
        process.kill()
    assert waited < STOP_WITHIN
    assert process.returncode == 128 + signal.SIGINT
    assert "bench stubborn: interrupted after" in err
    assert "did not stop within" in err
    assert "stubborn.py" in err  # the stack dump says where it was held


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_while_a_command_sets_up_gives_its_own_status(signum: signal.Signals) -> None:
    """A signal that reaches a command before its own signal handling (the window where
    `run_app` raises `Interrupted`) exits 128 + that signal, whatever typer makes of it
    (typer 0.16 and later turn every KeyboardInterrupt into status 130)."""
    app = typer.Typer()

    @app.command()
    def setting_up() -> None:
        os.kill(os.getpid(), signum)
        time.sleep(5)  # the handler raises Interrupted in here
        raise AssertionError("the signal did not interrupt the command")

    assert run_app(app, []) == 128 + signum
