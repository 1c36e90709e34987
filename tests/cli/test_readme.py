"""The README's command table matches the real commands, both ways, and one option style holds.

Walks every command of the root app (``--help`` included), collects its options and compares them
with the options the README's "Command line" table lists for that command: every real option is
documented and every documented option exists. The style rules: a ``--port`` has ``-p``, a
``--count`` has ``-n``, a ``--quiet`` has ``-q``; help shows no ``<bool>`` label.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from lagless.cli.app import app
from lagless.cli.common import run_app
from lagless.transport import (
    RELIABLE,
    RELIABLE_UNORDERED,
    UNRELIABLE,
    UNRELIABLE_SEQUENCED,
    ChannelKind,
)
from lagless.transport.config import DEFAULT_CHANNELS

README = Path(__file__).resolve().parents[2] / "README.md"
SHORT_FOR = {"--port": "-p", "--count": "-n", "--quiet": "-q"}


def _leaves(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, object]]:
    subcommands = getattr(command, "commands", None)
    if subcommands:
        for name, sub in subcommands.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield " ".join(path), command


COMMANDS: dict[str, object] = dict(_leaves(typer.main.get_command(app)))


def _options(command: object) -> set[str]:
    names: set[str] = set()
    for param in getattr(command, "params", []):
        if param.param_type_name == "option":
            names.update(param.opts, param.secondary_opts)
    return names - {"--help"}


def readme_table() -> dict[str, set[str]]:
    """Return {command path: options} from the README's command table."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Command line") :]
    section = section[: section.index("\n## ", 3)]
    table: dict[str, set[str]] = {}
    for row in section.splitlines():
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]]
        if len(cells) != 3 or not cells[0].startswith("`lagless "):
            continue
        words = cells[0].strip("`").split()[1:]
        path = " ".join(w for w in words if re.fullmatch(r"[a-z]+", w))
        table[path] = set(re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", cells[1]))
    return table


def test_readme_lists_every_command() -> None:
    assert set(readme_table()) == set(COMMANDS)


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_readme_row_matches_the_command_options(path: str) -> None:
    real = _options(COMMANDS[path])
    documented = readme_table().get(path, set())
    assert real - documented == set(), f"lagless {path}: undocumented options"
    assert documented - real == set(), f"lagless {path}: README options that do not exist"


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_help_shows_every_option_without_type_labels_on_flags(
    path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(app, [*path.split(), "--help"]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith(f"Usage: lagless {path}")
    for option in _options(COMMANDS[path]):
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", shown), option
    assert "<bool>" not in shown
    assert "╭" not in shown


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_one_option_style(path: str) -> None:
    options = _options(COMMANDS[path])
    for long, short in SHORT_FOR.items():
        if long in options:
            assert short in options, f"lagless {path}: {long} without {short}"
    for short in SHORT_FOR.values():
        if short in options:
            assert any(SHORT_FOR[long] == short for long in options if long in SHORT_FOR), (
                f"lagless {path}: {short} means something else here"
            )


def test_root_options_are_documented() -> None:
    root = _options(typer.main.get_command(app))
    section = README.read_text(encoding="utf-8").split("## Command line", 1)[1]
    assert root == {"--version"}
    assert "`lagless --version`" in section


def test_named_channels_are_the_default_channels() -> None:
    kinds = [channel.kind for channel in DEFAULT_CHANNELS]
    assert kinds[RELIABLE] is ChannelKind.RELIABLE_ORDERED
    assert kinds[RELIABLE_UNORDERED] is ChannelKind.RELIABLE_UNORDERED
    assert kinds[UNRELIABLE_SEQUENCED] is ChannelKind.UNRELIABLE_SEQUENCED
    assert kinds[UNRELIABLE] is ChannelKind.UNRELIABLE


def test_readme_example_prints_rtt_in_ms_with_named_channels() -> None:
    text = README.read_text(encoding="utf-8")
    example = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    assert "send(RELIABLE," in example
    assert not re.search(r"\.send\([^)]*\b0\b", example), "bare channel number"
    assert re.search(r"rtt \* 1000", example)
    assert " ms" in example
