"""lagless.demo: a playable top-down car arena on the whole lagless stack (``lagless demo``).

The demo layer of DESIGN.md: an authoritative ``lagless.physics`` server with bots
(``lagless.demo.arena``), a player's client whose remote cars are shown through a chosen
display model, a pygame-ce window with a HUD (``lagless.demo.window``), a headless run that
writes ``last-frame.png`` and ``summary.json`` (``lagless.demo.headless``), and a split across
machines over real UDP (``lagless.demo.net``). pygame-ce (the ``demo`` extra) is imported only by
the modules that draw.
"""

from __future__ import annotations

import os

# pygame prints a banner on import unless told not to; the demo's output is its table
os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")

from lagless.demo.arena import DISPLAY_MODELS as DISPLAY_MODELS
from lagless.demo.arena import ArenaBot as ArenaBot
from lagless.demo.arena import BotServer as BotServer
from lagless.demo.arena import TickStats as TickStats
from lagless.demo.arena import make_client as make_client
from lagless.demo.arena import make_server as make_server
from lagless.demo.headless import HeadlessResult as HeadlessResult
from lagless.demo.headless import run_client_headless as run_client_headless
from lagless.demo.headless import run_headless as run_headless
from lagless.demo.match import PROFILE_CYCLE as PROFILE_CYCLE
from lagless.demo.match import SimMatch as SimMatch
from lagless.demo.net import ServerStatus as ServerStatus
from lagless.demo.net import UdpPlayer as UdpPlayer
from lagless.demo.net import serve_match as serve_match

__all__ = [
    "DISPLAY_MODELS",
    "PROFILE_CYCLE",
    "ArenaBot",
    "BotServer",
    "HeadlessResult",
    "ServerStatus",
    "SimMatch",
    "TickStats",
    "UdpPlayer",
    "make_client",
    "make_server",
    "run_client_headless",
    "run_headless",
    "serve_match",
]
