"""Drawing the arena with pygame-ce: cars, paths and the HUD, on any ``pygame.Surface``.

The window draws on its display surface, the headless run on an off-screen ``Surface`` it saves
as PNG; both go through ``Renderer.draw``.

Decisions:
    * 4 pixels per metre: the 240 m x 160 m arena fills a 960 x 640 frame; world y points up,
      screen y down.
    * Colours are fixed so a test can find the cars in a frame: the own car ``PLAYER_COLOUR``,
      every other car ``CAR_COLOUR``, paths in dimmer shades (``PATH_COLOUR``,
      ``PLAYER_PATH_COLOUR``) that never equal a car's colour.
    * The HUD is a block of text lines, top left, on a dark panel (``HUD_PANEL``) in
      ``HUD_TEXT`` colour, in pygame's default font.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import pygame

from lagless.demo.arena import ARENA_HEIGHT, ARENA_WIDTH
from lagless.smoothing.state import DisplayState

__all__ = [
    "BACKGROUND",
    "CAR_COLOUR",
    "FRAME_SIZE",
    "HUD_PANEL",
    "HUD_TEXT",
    "PIXELS_PER_METRE",
    "PLAYER_COLOUR",
    "Renderer",
]

PIXELS_PER_METRE: Final = 4.0
FRAME_SIZE: Final = (round(ARENA_WIDTH * PIXELS_PER_METRE), round(ARENA_HEIGHT * PIXELS_PER_METRE))
BACKGROUND: Final = (28, 30, 36)
WALL_COLOUR: Final = (150, 150, 160)
CAR_COLOUR: Final = (70, 170, 255)
PLAYER_COLOUR: Final = (255, 215, 0)
PATH_COLOUR: Final = (45, 80, 120)
PLAYER_PATH_COLOUR: Final = (130, 110, 30)
HUD_PANEL: Final = (0, 0, 0)
HUD_TEXT: Final = (235, 235, 235)
CAR_LENGTH_PX: Final = 3.0 * PIXELS_PER_METRE
CAR_WIDTH_PX: Final = 1.6 * PIXELS_PER_METRE
_HUD_MARGIN: Final = 6  # px


def to_screen(x: float, y: float) -> tuple[float, float]:
    """Return the pixel of world point ``(x, y)`` (m)."""
    return x * PIXELS_PER_METRE, (ARENA_HEIGHT - y) * PIXELS_PER_METRE


def car_outline(shown: DisplayState) -> list[tuple[float, float]]:
    """Return the four screen corners of a car drawn at ``shown``."""
    cx, cy = to_screen(shown.x, shown.y)
    c, s = math.cos(shown.heading), math.sin(shown.heading)
    half_l, half_w = 0.5 * CAR_LENGTH_PX, 0.5 * CAR_WIDTH_PX
    corners = ((half_l, half_w), (half_l, -half_w), (-half_l, -half_w), (-half_l, half_w))
    # screen y is flipped: a world rotation by +heading is -heading on screen
    return [(cx + u * c - v * s, cy - (u * s + v * c)) for u, v in corners]


class Renderer:
    """Draws frames of the arena (needs ``pygame.font``; no display)."""

    def __init__(self) -> None:
        """Load the HUD font."""
        pygame.font.init()
        self._font = pygame.font.Font(None, 20)

    def draw(
        self,
        surface: pygame.Surface,
        cars: Mapping[int, DisplayState],
        *,
        own_id: int | None,
        paths: Mapping[int, Iterable[tuple[float, float]]],
        hud: Sequence[str],
    ) -> None:
        """Draw one frame: background, walls, paths, cars, HUD."""
        surface.fill(BACKGROUND)
        w, h = FRAME_SIZE
        pygame.draw.rect(surface, WALL_COLOUR, pygame.Rect(0, 0, w, h), width=3)
        for car_id, points in paths.items():
            pixels = [to_screen(x, y) for x, y in points]
            if len(pixels) >= 2:
                colour = PLAYER_PATH_COLOUR if car_id == own_id else PATH_COLOUR
                pygame.draw.lines(surface, colour, False, pixels, width=1)
        for car_id, shown in cars.items():
            colour = PLAYER_COLOUR if car_id == own_id else CAR_COLOUR
            pygame.draw.polygon(surface, colour, car_outline(shown))
        self._hud(surface, hud)

    def _hud(self, surface: pygame.Surface, lines: Sequence[str]) -> None:
        if not lines:
            return
        rendered = [self._font.render(line, True, HUD_TEXT) for line in lines]
        width = max(r.get_width() for r in rendered) + 2 * _HUD_MARGIN
        height = sum(r.get_height() for r in rendered) + 2 * _HUD_MARGIN
        panel = pygame.Surface((width, height))
        panel.fill(HUD_PANEL)
        panel.set_alpha(190)
        surface.blit(panel, (_HUD_MARGIN, _HUD_MARGIN))
        y = 2 * _HUD_MARGIN
        for r in rendered:
            surface.blit(r, (2 * _HUD_MARGIN, y))
            y += r.get_height()
