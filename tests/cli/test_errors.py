"""Every user mistake on every command is one ``error:`` line on stderr, a non-zero exit, no trace.

Most cases run the real entry point (``run_app`` on the root app, as ``lagless`` does) in this
process; a few run ``python -m lagless`` to cover the process boundary (exit status, stderr).
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lagless import __version__
from lagless.cli.app import app
from lagless.cli.common import run_app

BAD_INPUTS: list[tuple[list[str], str]] = [
    (["serve", "--port", "abc"], "invalid value for '--port' / '-p': expected an integer"),
    (["serve", "--duration", "abc"], "invalid value for '--duration': expected a number"),
    (["serve", "--port", "70000"], "--port must be in [0, 65535]"),
    (["serve", "--host", "no-such-host.invalid"], "--host host 'no-such-host.invalid'"),
    (["serve", "--bogus"], "no such option: --bogus"),
    (["serve", "--public-address", "nonsense"], "--public-address must be HOST:PORT"),
    (["serve", "--protocol-id", "nope"], "--protocol-id must be an integer"),
    (["serve", "--private-key", "abc"], "--private-key must be 64 hex digits"),
    (["serve", "--max-clients", "0"], "--max-clients must be in [1, 256], got 0"),
    (["serve", "--duration", "-1"], "--duration must be a number of seconds > 0, got -1"),
    (["connect", "127.0.0.1:1", "--timeout", "0"], "--timeout must be a number of seconds > 0"),
    (["connect", "127.0.0.1:1", "--client-id", "-1"], "--client-id must be in [0, 1844"),
    (["connect", "--token", "t.bin", "--insecure"], "--token and --insecure do not go together"),
    (["connect"], "give the server's HOST:PORT"),
    (["connect", "nohost"], "the server address must be HOST:PORT"),
    (["connect", "::1:40000"], "IPv6 hosts need brackets"),
    (["connect", "--token", "/nonexistent/t.bin"], "--token must be a token file"),
    (["connect", "--token", "abcd"], "--token must hold 2048 bytes"),
    (
        ["token", "--server", "127.0.0.1:1", "--client-id", "1", "--out", "/nonexistent/dir/t.bin"],
        "--out /nonexistent/dir/t.bin cannot be written",
    ),
    (["token", "--server", "x", "--client-id", "1"], "--server must be HOST:PORT"),
    (["token", "--server", "127.0.0.1:1"], "missing option '--client-id'"),
    (["token", "--server", "127.0.0.1:1", "--client-id", "-1"], "--client-id must be in [0, "),
    (
        ["token", "--server", "127.0.0.1:1", "--client-id", "1", "--user-data", "xyz"],
        "--user-data must be hex digits",
    ),
    (["vfc", "serve", "--port", "abc"], "--port"),
    (["vfc", "serve", "--host", "no-such-host.invalid"], "does not resolve"),
    (["vfc", "bots", "--count", "0"], "--count must be in [1, 256], got 0"),
    (["vfc", "bots", "nohost"], "the server address must be HOST:PORT"),
    (["vfc", "bots", "--duration", "-1"], "--duration must be a number of seconds > 0, got -1"),
    (["vfc", "serve", "--duration", "0"], "--duration must be a number of seconds > 0, got 0"),
    (["gossip", "lobby", "--port", "70000"], "--port must be in [0, 65535], got 70000"),
    (["gossip", "swarm", "-n", "0"], "--count must be in [1, 1000], got 0"),
    (["gossip", "peer", "--lobby", "nonsense"], "--lobby must be HOST:PORT"),
    (["gossip", "peer"], "missing option '--lobby'"),
    (["gossip", "lobby", "--duration", "-1"], "--duration must be a number of seconds > 0"),
    (["gossip", "swarm", "--duration", "0"], "--duration must be a number of seconds > 0"),
    (["proxy", "--listen", "::1:9000", "--forward", "127.0.0.1:9"], "--listen"),
    (["proxy", "--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9", "--loss", "2"], "--loss"),
    (["netsim", "demo", "--profile", "nope"], "nope"),
    (["netsim", "demo", "--profile", "umts", "--direction", "x"], "--direction must be 'up' or"),
    (
        ["proxy", "--listen", "127.0.0.1:0", "--forward", "127.0.0.1:9", "--duration", "-1"],
        "--duration must be a number of seconds >= 0",
    ),
    (["lab", "run", "nope"], "unknown experiment 'nope'"),
    (["lab", "run", "netsim/profile"], "did you mean netsim/profiles?"),
    (
        ["lab", "run", "netsim/profiles", "--quick", "--out", "/dev/null/x"],
        "--out /dev/null/x cannot be created",
    ),
    (
        ["lab", "run", "netsim/profiles", "--set", "packets=abc"],
        'JSON syntax like 20000, got "abc"',
    ),
    (
        ["lab", "run", "gossip/improved", "--set", "variants=faithful"],
        'JSON syntax like ["faithful", "improved"]',
    ),
    (["lab", "run", "netsim/profiles", "--seed", "-1"], "--seed"),
    (["bench", "nope"], "benchmark must be one of"),
    (["nope"], "no such command 'nope'"),
]


@pytest.mark.parametrize(
    ("args", "message"), BAD_INPUTS, ids=[" ".join(args) for args, _ in BAD_INPUTS]
)
def test_bad_input_is_one_error_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run_app(app, args)
    out, err = capsys.readouterr()
    assert status != 0
    assert err.count("\n") == 1, err
    assert err.startswith("error: "), err
    assert message in err
    assert "Traceback" not in out + err


def _run(*args: str, cwd: Path | None = None, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lagless", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        cwd=cwd,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["serve", "--port", "abc"],
        ["token", "--server", "127.0.0.1:1", "--client-id", "1", "--out", "/nonexistent/d/t.bin"],
        ["lab", "run", "netsim/profiles", "--quick", "--out", "/dev/null/x"],
    ],
    ids=["port-abc", "token-out", "lab-out"],
)
def test_bad_input_in_a_process_exits_2_with_one_line(args: list[str]) -> None:
    result = _run(*args)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "╭" not in result.stderr  # no boxed panel


def test_no_answer_gives_the_hint(free_port: Callable[[], int]) -> None:
    port = free_port()
    result = _run("connect", f"localhost:{port}", "--timeout", "1")
    assert result.returncode == 2
    assert result.stderr == (
        f"error: no answer from 127.0.0.1:{port} within 1 s "
        "(is the server running? secure/insecure mismatch?)\n"
    )


def test_secure_client_against_insecure_server_gives_the_hint(
    lagless: Callable[..., Any],
) -> None:
    server = lagless("serve", "--port", "0", "--insecure", "--quiet")
    port = server.wait_line(r"on 127\.0\.0\.1:(\d+)").group(1)
    result = _run("connect", f"127.0.0.1:{port}", "--timeout", "1.5", stdin="x\n")
    assert result.returncode == 2
    assert re.fullmatch(
        rf"error: no answer from 127\.0\.0\.1:{port} within 1\.5 s \(is the server running\? "
        r"secure/insecure mismatch\?\)\n",
        result.stderr,
    )


def test_vfc_bots_without_server_warn_once_and_fail(free_port: Callable[[], int]) -> None:
    result = _run("vfc", "bots", f"127.0.0.1:{free_port()}", "-n", "3", "--duration", "30")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert sum("INSECURE" in line for line in lines) == 1, result.stderr
    assert lines[-1].startswith("error: no answer from the VFC server at 127.0.0.1:")
    assert "Traceback" not in result.stderr


def test_serve_without_echo_says_it_will_not_answer(lagless: Callable[..., Any]) -> None:
    server = lagless("serve", "--port", "0", "--duration", "0.5", "--quiet")
    status, out, err = server.finish(timeout=20)
    assert status == 0, err
    assert "without --echo the server prints what it receives and answers nothing" in out
    echoing = lagless("serve", "--port", "0", "--duration", "0.5", "--echo", "--quiet")
    status, out, err = echoing.finish(timeout=20)
    assert status == 0, err
    assert "answers nothing" not in out


def test_ipv6_addresses_are_printed_in_brackets(lagless: Callable[..., Any]) -> None:
    server = lagless("serve", "--host", "::1", "--port", "0", "--duration", "0.5", "--quiet")
    status, out, err = server.finish(timeout=20)
    assert status == 0, err
    assert re.search(r"serving lagless \(secure\) on \[::1\]:\d+,", out), out


def test_version_option_and_command_agree(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_app(app, ["--version"]) == 0
    assert run_app(app, ["version"]) == 0
    assert capsys.readouterr().out == f"{__version__}\n{__version__}\n"
