"""The demo window under SDL's dummy video driver: frames, HUD text, keys, live switches."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pygame
import pytest

from lagless.demo.match import SimMatch
from lagless.demo.net import UdpPlayer
from lagless.demo.render import CAR_COLOUR, FRAME_SIZE, HUD_TEXT, PLAYER_COLOUR
from lagless.demo.window import WindowGame, run_window
from lagless.netsim import get_profile
from lagless.physics import Keys

HUD = pygame.Rect(0, 0, 420, 90)  # the HUD panel's corner of the frame


@pytest.fixture(autouse=True)
def dummy_video(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(os.environ, "SDL_VIDEODRIVER", "dummy")
    yield
    pygame.display.quit()


def _count(surface: pygame.Surface, colour: tuple[int, int, int], rect: pygame.Rect) -> int:
    pixels = pygame.surfarray.pixels3d(surface)[rect.left : rect.right, rect.top : rect.bottom]
    return int((pixels == colour).all(axis=2).sum())


class Stepped:
    """Virtual time that moves one frame (1/30 s) per call: deterministic frames."""

    def __init__(self, match: SimMatch) -> None:
        self.match = match
        self.frame = 0

    def __call__(self) -> dict:
        self.frame += 1
        return self.match.advance(self.frame / 30.0)


def _key(game: WindowGame, kind: int, key: int) -> None:
    game.handle(pygame.event.Event(kind, key=key))


def test_keys_drive_the_own_car_and_the_hud_shows_the_link() -> None:
    match = SimMatch(bots=3, seed=5, profile="lte", model="snap", autopilot=False)
    game = WindowGame(match, Stepped(match), clock=lambda: 0.0)
    surface = pygame.Surface(FRAME_SIZE)
    for _ in range(30):
        game.draw(surface)
    car = match.client.car_id
    assert car == 0
    start = match.server.server.world.state(car)
    _key(game, pygame.KEYDOWN, pygame.K_UP)
    _key(game, pygame.KEYDOWN, pygame.K_a)
    assert game.keys == Keys.UP | Keys.LEFT
    for _ in range(45):
        game.draw(surface)
    moved = match.server.server.world.state(car)
    assert moved.speed > 5.0
    assert moved.heading > start.heading + 0.3  # turned left
    _key(game, pygame.KEYUP, pygame.K_UP)
    _key(game, pygame.KEYUP, pygame.K_a)
    for _ in range(10):
        game.draw(surface)
    assert match.server.server.world.state(car).keys == Keys.NONE
    assert match.server.server.inputs_applied == 4  # one per change: UP, UP+LEFT, LEFT, NONE
    assert _count(surface, PLAYER_COLOUR, surface.get_rect()) >= 20
    assert _count(surface, CAR_COLOUR, surface.get_rect()) >= 3 * 20
    assert _count(surface, HUD_TEXT, HUD) > 200  # text drawn on the panel
    assert game.frames == 85
    assert match.score_line() is None  # no rams yet
    match.server.referee.scores.update({0: 2, 61: 3})
    assert match.score_line() == "rams: you 2   leader car 61 with 3"
    match.server.referee.scores[0] = 4
    assert match.score_line() == "rams: you 4   leader you with 4"


def test_p_and_m_switch_profile_and_model_live_and_the_hud_follows() -> None:
    match = SimMatch(bots=2, seed=6, profile="lte", model="dr+0.15rtt", autopilot=False)
    game = WindowGame(match, Stepped(match), clock=lambda: 0.0)
    surface = pygame.Surface(FRAME_SIZE)
    for _ in range(20):
        game.draw(surface)
    before = pygame.surfarray.array3d(surface)[: HUD.right, : HUD.bottom].copy()
    _key(game, pygame.KEYDOWN, pygame.K_p)
    assert match.profile == "umts"
    assert match.network.link_config("server", "player") == get_profile("umts").down
    _key(game, pygame.KEYDOWN, pygame.K_m)
    assert match.model == "snap"
    game.draw(surface)
    after = pygame.surfarray.array3d(surface)[: HUD.right, : HUD.bottom]
    assert (before != after).any(axis=2).sum() > 100  # the HUD text changed
    for _ in range(5):
        _key(game, pygame.KEYDOWN, pygame.K_p)
    assert match.profile == "lte"  # around the cycle: umts, gprs, l80j40, none, wifi, lte
    for _ in range(3):
        _key(game, pygame.KEYDOWN, pygame.K_m)
    assert match.model == "dr+0.15rtt"
    _key(game, pygame.KEYDOWN, pygame.K_o)
    assert not match.predict
    _key(game, pygame.KEYDOWN, pygame.K_o)
    assert match.predict
    _key(game, pygame.KEYDOWN, pygame.K_ESCAPE)
    assert not game.running


def test_a_remote_client_cannot_switch_the_profile_and_says_why() -> None:
    player = UdpPlayer(("127.0.0.1", 9), seed=1, model="snap", autopilot=False)
    try:
        game = WindowGame(player, player.advance, clock=lambda: 0.0)
        _key(game, pygame.KEYDOWN, pygame.K_p)
        assert "put --profile on the --server side" in game.notice
        assert player.profile == "server side"
        surface = pygame.Surface(FRAME_SIZE)
        game.draw(surface)
        assert _count(surface, HUD_TEXT, HUD) > 100
    finally:
        player.close()


def test_run_window_opens_a_display_and_renders_frames() -> None:
    match = SimMatch(bots=2, seed=7, profile="wifi", model="dr", autopilot=False)
    frames = run_window(match, Stepped(match), duration=0.5, title="test")
    assert frames >= 5
    assert not pygame.display.get_init()  # closed again


def test_the_command_opens_the_window_when_sdl_has_a_driver(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lagless.cli.app import app
    from lagless.cli.common import run_app

    assert run_app(app, ["demo", "--bots", "2", "--duration", "0.5"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"demo: \d+ frames, server tick [\d.]+ ms avg", out), out
    assert "headless" not in out


def test_no_usable_video_driver_is_a_one_line_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from lagless.cli.app import app
    from lagless.cli.common import run_app

    monkeypatch.setitem(os.environ, "SDL_VIDEODRIVER", "no-such-driver")
    assert run_app(app, ["demo", "--bots", "1", "--duration", "0.2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot open a window (")
    assert err.endswith("; run with --headless\n")
    assert err.count("\n") == 1
