"""``lagless demo --headless``: a short match writes a PNG with the cars and a sane summary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pygame
import pytest

from lagless.cli.app import app
from lagless.cli.common import run_app
from lagless.demo.headless import run_headless
from lagless.demo.render import CAR_COLOUR, FRAME_SIZE, PLAYER_COLOUR

_DISPLAY_VARS = {"DISPLAY", "WAYLAND_DISPLAY", "SDL_VIDEODRIVER"}


def _count(surface: pygame.Surface, colour: tuple[int, int, int]) -> int:
    return int((pygame.surfarray.pixels3d(surface) == colour).all(axis=2).sum())


def test_headless_run_writes_frame_and_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["demo", "--headless", "--fast", "--duration", "4", "--out", str(tmp_path)]
    assert run_app(app, [*args, "--profile", "umts", "--model", "snap"]) == 0
    out = capsys.readouterr().out
    assert out.count("t_s=") == 4  # one plain table line per second (stdout is not a terminal)
    assert "demo: 1 player + 16 bots" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["players"] == 1
    assert summary["bots"] == 16
    assert summary["profile"] == "umts"
    assert summary["display_model"] == "snap"
    assert summary["duration_s"] == pytest.approx(4.0)
    assert summary["server_ticks"] == 240  # 60 Hz
    assert 0.0 < summary["server_tick_ms_avg"] <= summary["server_tick_ms_p99"] < 100.0
    # 17 cars x 20 snapshots/s: a few kB/s; headers make the wire figure larger
    assert 3.0 < summary["client_kBps_avg_payload"] < summary["client_kBps_avg"] < 12.0
    assert summary["client_snapshots"] > 60
    frame = pygame.image.load(str(tmp_path / "last-frame.png"))
    assert frame.get_size() == FRAME_SIZE
    assert _count(frame, PLAYER_COLOUR) >= 20  # the own car, about 12 x 6 px
    assert _count(frame, CAR_COLOUR) >= 10 * 20  # most of the 16 bots


def test_same_seed_same_match(tmp_path: Path) -> None:
    def run(out: Path, seed: int) -> dict[str, object]:
        result = run_headless(
            bots=4, seed=seed, profile="gprs", model="dr", duration=2.0, out=out, realtime=False
        )
        return {k: v for k, v in result.summary.items() if not k.startswith("server_tick_")}

    first, again, other = run(tmp_path / "a", 7), run(tmp_path / "b", 7), run(tmp_path / "c", 8)
    assert first == again
    assert first["client_kBps_avg"] != other["client_kBps_avg"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bots", "99"], "error: --bots must be in [0, 48], got 99\n"),
        (["--profile", "carrier-pigeon"], "error: unknown profile 'carrier-pigeon'; valid: none"),
        (["--model", "blur"], "error: unknown display model 'blur'"),
        (["--duration", "-1"], "error: --duration must be a number of seconds > 0, got -1\n"),
        (["--server", "--connect", "h:1"], "error: --server and --connect exclude each other\n"),
    ],
)
def test_bad_options_are_one_line_errors(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_app(app, ["demo", "--headless", "--out", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message)
    assert err.count("\n") == 1


def test_sigint_ends_the_match_with_its_files_and_status_130(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "lagless",
            "demo",
            "--bots",
            "4",
            "--duration",
            "60",
            "--out",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={k: v for k, v in os.environ.items() if k not in _DISPLAY_VARS},
    )
    assert proc.stdout is not None
    try:
        assert "no display: running headless" in proc.stdout.readline()
        assert proc.stdout.readline().startswith("t_s=1 ")  # paced: one line a second
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert proc.returncode == 130
    assert "demo: 1 player + 4 bots" in out
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert 1.0 <= summary["duration_s"] < 10.0
    assert (tmp_path / "last-frame.png").stat().st_size > 1000


def test_missing_extras_are_named_before_the_match(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import lagless.cli.demo as command

    real = command.find_spec
    monkeypatch.setattr(command, "find_spec", lambda name: None if name == "pygame" else real(name))
    assert run_app(app, ["demo", "--headless", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        "error: lagless demo needs pygame-ce: pip install 'lagless[demo,physics]'\n"
    )
    assert not (tmp_path / "summary.json").exists()
