"""The demo's pygame-ce window: drive with the arrow keys or WASD, switch model and profile live.

``WindowGame`` turns pygame events into the player's keys (one input event per change, sent by
the ``PhysicsClient``), cycles the display model (M) and the network profile (P), switches the
own car's prediction (O), and draws each
frame with the HUD; ``run_window`` opens the window and runs it at up to 60 frames per second. It
drives either an in-process ``SimMatch`` or a ``UdpPlayer`` (``--connect``).

Decisions:
    * Held keys are tracked from KEYDOWN/KEYUP events (not ``pygame.key.get_pressed``), so the
      same code runs under SDL's dummy video driver, where tests post the events.
    * Arrow keys and WASD are the same four keys; UP and DOWN together brake (``Keys``).
    * A switch that cannot happen (a profile on a ``--connect`` client) shows its reason on the
      HUD for ``NOTICE_TIME`` seconds instead of stopping the game.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final, Protocol

import pygame

from lagless.demo.arena import DISPLAY_MODELS, TickStats
from lagless.demo.match import PROFILE_CYCLE
from lagless.demo.render import FRAME_SIZE, Renderer
from lagless.demo.session import LiveStatus, Paths, hud_lines
from lagless.errors import ConfigError
from lagless.physics import Keys, PhysicsClient
from lagless.smoothing.state import DisplayState

__all__ = ["KEY_MAP", "NOTICE_TIME", "PlayerSession", "WindowGame", "run_window"]

KEY_MAP: Final[dict[int, Keys]] = {
    pygame.K_UP: Keys.UP,
    pygame.K_w: Keys.UP,
    pygame.K_DOWN: Keys.DOWN,
    pygame.K_s: Keys.DOWN,
    pygame.K_LEFT: Keys.LEFT,
    pygame.K_a: Keys.LEFT,
    pygame.K_RIGHT: Keys.RIGHT,
    pygame.K_d: Keys.RIGHT,
}
"""pygame key -> the car key it holds."""
NOTICE_TIME: Final = 3.0  # s a HUD notice stays
FPS: Final = 60


class PlayerSession(Protocol):
    """What the window needs of a player's side (``SimMatch`` or ``UdpPlayer``)."""

    client: PhysicsClient
    model: str
    profile: str
    paths: Paths
    predict: bool

    def set_predict(self, predict: bool) -> None:
        """Show the own car predicted or through the display model."""

    def set_model(self, model: str) -> None:
        """Show the cars through ``model`` from now on."""

    def set_profile(self, name: str) -> None:
        """Put profile ``name`` on the link, or raise ``ConfigError``."""

    def set_keys(self, keys: Keys) -> None:
        """Hold ``keys`` on the own car."""

    def status(self, cars: int) -> LiveStatus:
        """Return the HUD figures."""

    def tick_stats(self) -> TickStats | None:
        """Return the server's tick time when it runs in this process."""

    def score_line(self) -> str | None:
        """Return the ram scores when the server runs in this process."""


def _next(options: tuple[str, ...], current: str) -> str:
    return (
        options[(options.index(current) + 1) % len(options)] if current in options else options[0]
    )


class WindowGame:
    """One player's game in a window: input, switches and drawing (no event loop of its own).

    Args:
        session: The player's side.
        advance: Runs the session to now and returns the cars shown.
        clock: Seconds, for HUD notices (``time.monotonic``).
    """

    def __init__(
        self,
        session: PlayerSession,
        advance: Callable[[], dict[int, DisplayState]],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """Start with no keys held."""
        self.session = session
        self._advance = advance
        self._clock = clock
        self._held: set[int] = set()
        self._renderer = Renderer()
        self.notice = ""
        """A message shown on the HUD for a while (why a switch did not happen)."""
        self._notice_until = 0.0
        self.running = True
        """False once the player asked to quit."""
        self.frames = 0
        """Frames drawn."""

    @property
    def keys(self) -> Keys:
        """Return the car keys held now."""
        keys = Keys.NONE
        for key in self._held:
            keys |= KEY_MAP[key]
        return keys

    def handle(self, event: pygame.event.Event) -> None:
        """Take one pygame event: drive keys, M (model), P (profile), O (own-car prediction),
        Esc or close (quit)."""
        if event.type == pygame.QUIT:
            self.running = False
        elif event.type == pygame.KEYDOWN:
            if event.key == pygame.K_ESCAPE:
                self.running = False
            elif event.key == pygame.K_m:
                self.session.set_model(_next(tuple(DISPLAY_MODELS), self.session.model))
            elif event.key == pygame.K_p:
                self._switch_profile()
            elif event.key == pygame.K_o:
                self.session.set_predict(not self.session.predict)
            elif event.key in KEY_MAP:
                self._held.add(event.key)
                self.session.set_keys(self.keys)
        elif event.type == pygame.KEYUP and event.key in self._held:
            self._held.discard(event.key)
            self.session.set_keys(self.keys)

    def _switch_profile(self) -> None:
        try:
            self.session.set_profile(_next(PROFILE_CYCLE, self.session.profile))
        except ConfigError as exc:
            self.notice = str(exc)
            self._notice_until = self._clock() + NOTICE_TIME

    def draw(self, surface: pygame.Surface) -> None:
        """Advance the session and draw one frame with the HUD on ``surface``."""
        shown = self._advance()
        lines = hud_lines(
            self.session.status(len(shown)),
            self.session.tick_stats(),
            keys_help=True,
            score=self.session.score_line(),
        )
        if self.notice and self._clock() < self._notice_until:
            lines.append(self.notice)
        self._renderer.draw(
            surface,
            shown,
            own_id=self.session.client.car_id,
            paths=self.session.paths.points,
            hud=lines,
        )
        self.frames += 1


def run_window(
    session: PlayerSession,
    advance: Callable[[], dict[int, DisplayState]],
    *,
    duration: float | None,
    title: str,
) -> int:
    """Open the window and play until it is closed, Esc, or ``duration`` s pass.

    Returns:
        The frames drawn.

    Raises:
        ConfigError: No window can be opened (no usable video driver).
    """
    try:
        pygame.display.init()
        screen = pygame.display.set_mode(FRAME_SIZE)
    except pygame.error as exc:
        pygame.display.quit()
        raise ConfigError(f"cannot open a window ({exc}); run with --headless") from None
    try:
        pygame.display.set_caption(title)
        game = WindowGame(session, advance)
        ticker = pygame.time.Clock()
        end = None if duration is None else time.monotonic() + duration
        while game.running and (end is None or time.monotonic() < end):
            for event in pygame.event.get():
                game.handle(event)
            game.draw(screen)
            pygame.display.flip()
            ticker.tick(FPS)
        return game.frames
    finally:
        pygame.display.quit()
