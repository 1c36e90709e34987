"""``lagless serve``, ``connect`` and ``token`` as real processes talking over loopback UDP."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import time

import pytest

from lagless.transport import read_connect_token


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _lagless(
    *args: str, stdin: str | None = None, timeout: float = 20
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lagless", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _start_server(*args: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lagless", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()  # "serving ... on HOST:PORT" once the socket is bound
    assert first.startswith("serving"), first + (proc.stderr.read() if proc.stderr else "")
    return proc


@pytest.mark.parametrize(
    "mode",
    [[], ["--raw"], ["--insecure"], ["--raw", "--insecure"]],
    ids=["secure", "raw", "insecure", "raw-insecure"],
)
def test_connect_sends_lines_and_prints_echoes(mode: list[str]) -> None:
    port = _free_port()
    server = _start_server("--port", str(port), "--echo", "--duration", "30", *mode)
    try:
        result = _lagless("connect", f"127.0.0.1:{port}", *mode, stdin="alpha\nbeta\ngamma\n")
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == f"connected to 127.0.0.1:{port}"
        assert lines[1:4] == ["alpha", "beta", "gamma"]
        assert re.fullmatch(r"3 replies(; RTT \d+\.\d\d ms, loss 0\.0 %)?", lines[-1])
        assert ("RTT" in lines[-1]) is ("--raw" not in mode)
    finally:
        server.send_signal(signal.SIGINT)  # a clean stop prints the summary
        out, err = server.communicate(timeout=15)
    assert "client 1 connected" in out
    assert "3 messages, 3 echoed" in out
    if "--insecure" in mode:
        assert "INSECURE" in err  # the insecure mode says so loudly


def test_secure_server_on_port_zero_accepts_tokens_for_its_bound_port() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "lagless", "serve", "--port", "0", "--echo", "--duration", "30"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # "serving lagless (secure) on 127.0.0.1:NNNNN, ..."
        port = int(first.split(" on 127.0.0.1:", 1)[1].split(",", 1)[0])
        assert port != 0
        result = _lagless("connect", f"127.0.0.1:{port}", stdin="zero\n")
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[1] == "zero"
    finally:
        proc.kill()
        proc.communicate(timeout=15)


def test_plain_netcode_client_talks_to_the_default_server() -> None:
    """`lagless connect --raw` stands in for the netcode reference client (netcode spec §14)."""
    port = _free_port()
    server = _start_server("--port", str(port), "--echo", "--duration", "30")
    try:
        result = _lagless("connect", f"127.0.0.1:{port}", "--raw", stdin="raw one\nraw two\n")
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[1:3] == ["raw one", "raw two"]
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=15)
    assert "plain netcode" in out
    assert "client 1 payload: raw one" in out


def test_wrong_key_cannot_connect() -> None:
    port = _free_port()
    server = _start_server("--port", str(port), "--duration", "4")
    try:
        result = _lagless("connect", f"127.0.0.1:{port}", "--private-key", "11" * 32, stdin="x\n")
    finally:
        out, _ = server.communicate(timeout=15)
    assert result.returncode == 2
    assert "no answer from" in result.stderr
    assert "connected" not in out.split("\n", 1)[1]


def test_token_command_writes_a_readable_token(tmp_path) -> None:
    path = tmp_path / "token.bin"
    result = _lagless(
        "token",
        "--server",
        "127.0.0.1:40000",
        "--server",
        "[::1]:40000",
        "--client-id",
        "99",
        "--expire",
        "60",
        "--out",
        str(path),
    )
    assert result.returncode == 0, result.stderr
    token = read_connect_token(path.read_bytes())
    assert token.server_addresses == (("127.0.0.1", 40000), ("::1", 40000))
    assert token.expire_timestamp - token.create_timestamp == 60
    assert token.protocol_id == 0x1122334455667788


def test_token_from_backend_is_accepted(tmp_path) -> None:
    port = _free_port()
    path = tmp_path / "t.bin"
    assert (
        _lagless(
            "token", "--server", f"127.0.0.1:{port}", "--client-id", "1234", "--out", str(path)
        ).returncode
        == 0
    )
    server = _start_server("--port", str(port), "--echo", "--duration", "30")
    try:
        result = _lagless("connect", f"127.0.0.1:{port}", "--token", str(path), stdin="hi\n")
    finally:
        server.send_signal(signal.SIGINT)
        out, _ = server.communicate(timeout=15)
    assert result.stdout.splitlines()[1] == "hi"
    assert "(id 1234)" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["serve", "--port", "70000"], "--port must be in"),
        (["serve", "--protocol-id", "nope"], "--protocol-id must be an integer"),
        (["connect", "nohost"], "HOST:PORT"),
        (
            ["token", "--server", "1.2.3.4:5", "--client-id", "1", "--user-data", "xyz"],
            "--user-data",
        ),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(args: list[str], message: str) -> None:
    started = time.monotonic()
    result = _lagless(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert time.monotonic() - started < 15
