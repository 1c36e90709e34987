"""``lagless token``'s default output is what ``lagless connect --token`` takes, in every form."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lagless.transport import read_connect_token


def _run(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lagless", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        cwd=cwd,
    )


def test_token_file_hex_file_and_hex_text_all_connect(
    lagless: Callable[..., Any], tmp_path: Path
) -> None:
    server = lagless("serve", "--host", "localhost", "--port", "0", "--echo", "--quiet")
    port = server.wait_line(r"serving lagless \(secure\) on 127\.0\.0\.1:(\d+)").group(1)
    where = ("--server", f"localhost:{port}")
    made = _run("token", *where, "--client-id", "5", "--expire", "60", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert made.stdout == "wrote 2048 bytes to token.bin (lagless connect --token token.bin)\n"
    binary = (tmp_path / "token.bin").read_bytes()
    assert read_connect_token(binary).server_addresses == (("127.0.0.1", int(port)),)
    printed = _run("token", *where, "--client-id", "6", "--expire", "60", "--hex", cwd=tmp_path)
    assert printed.returncode == 0, printed.stderr
    assert len(printed.stdout.strip()) == 4096
    (tmp_path / "token.hex").write_text(printed.stdout, encoding="ascii")
    again = _run("token", *where, "--client-id", "7", "--expire", "60", "--hex", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    # one token per connection: a server refuses a token seen from another address (spec §10.4)
    elsewhere = _run("connect", "127.0.0.1:9", "--token", "token.bin", cwd=tmp_path)
    assert elsewhere.returncode == 2
    assert elsewhere.stderr == (
        f"error: 127.0.0.1:9 is not among the addresses the token names (127.0.0.1:{port}); "
        "leave HOST:PORT out to dial those\n"
    )
    for token in ("token.bin", "token.hex", again.stdout.strip()):
        talk = _run("connect", "--token", token, cwd=tmp_path, stdin="hello\n")
        assert talk.returncode == 0, talk.stderr
        assert talk.stdout.splitlines()[:2] == [f"connected to 127.0.0.1:{port}", "hello"]
