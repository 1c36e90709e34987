"""``lagless token``'s default output is what ``lagless connect --token`` takes, in every form."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lagless.cli.app import app
from lagless.cli.common import run_app
from lagless.transport import read_connect_token


def test_token_file_hex_file_and_hex_text_all_connect(
    lagless: Callable[..., Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server = lagless("serve", "--host", "localhost", "--port", "0", "--echo", "--quiet")
    port = server.wait_line(r"serving lagless \(secure\) on 127\.0\.0\.1:(\d+)").group(1)
    monkeypatch.chdir(tmp_path)
    where = ["token", "--server", f"localhost:{port}", "--expire", "60"]
    assert run_app(app, [*where, "--client-id", "5"]) == 0
    assert capsys.readouterr().out == (
        "wrote 2048 bytes to token.bin (lagless connect --token token.bin)\n"
    )
    binary = (tmp_path / "token.bin").read_bytes()
    assert read_connect_token(binary).server_addresses == (("127.0.0.1", int(port)),)
    # one token per connection: a server refuses a token seen from another address (spec §10.4)
    assert run_app(app, [*where, "--client-id", "6", "--hex"]) == 0
    (tmp_path / "token.hex").write_text(capsys.readouterr().out, encoding="ascii")
    assert run_app(app, [*where, "--client-id", "7", "--hex"]) == 0
    text = capsys.readouterr().out.strip()
    assert len(text) == 4096
    talks = [
        lagless("connect", "--token", token, cwd=tmp_path)
        for token in ("token.bin", "token.hex", text)
    ]
    for talk in talks:
        status, out, err = talk.finish(timeout=30, stdin="hello\n")
        assert status == 0, err
        assert out.splitlines()[:2] == [f"connected to 127.0.0.1:{port}", "hello"]
    elsewhere = lagless("connect", "127.0.0.1:9", "--token", "token.bin", cwd=tmp_path)
    status, _out, err = elsewhere.finish(timeout=30, stdin="")
    assert status == 2
    assert err == (
        f"error: 127.0.0.1:9 is not among the addresses the token names (127.0.0.1:{port}); "
        "leave HOST:PORT out to dial those\n"
    )
