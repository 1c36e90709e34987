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
