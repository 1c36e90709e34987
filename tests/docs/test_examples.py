"""Every example runs in --quick mode, and the README's Python example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from lagless.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
EXPECT = {
    "asyncio_echo": r"MESSAGE 2\nrtt [0-9.]+ ms, loss 0\.0%",
    "poll_loop": r"40 frames, connected: True, echoes received: [1-9][0-9]*",
    "simulated": r"server received 200 of 200 messages",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs_quick(name: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", f"lagless.examples.{name}", "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert re.search(EXPECT[name], result.stdout), result.stdout


def test_every_example_has_an_expectation() -> None:
    assert set(EXPECT) == set(EXAMPLES)


def test_readme_python_blocks_run(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "the README must show a Python example"
    for k, code in enumerate(blocks):
        script = tmp_path / f"block{k}.py"
        script.write_text(code, encoding="utf-8")
        result = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
        )
        assert result.returncode == 0, f"README block {k} failed:\n{result.stderr}"


def test_readme_first_block_has_exactly_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.search(r"```(?:bash|sh)?\n(.*?)```", readme, re.S)
    assert first is not None
    commands = [line for line in first.group(1).splitlines() if line.strip()]
    assert len(commands) == 2
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci  # CI runs exactly the README's test command
