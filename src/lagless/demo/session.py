"""What a player's side of the demo keeps, whatever carries it: HUD figures, paths, the autopilot.

Shared by the in-process match (``lagless.demo.match``) and the real-UDP client
(``lagless.demo.net``): both own a ``PhysicsClient`` and read the same things from it.

Decisions:
    * HUD rates are the transport's own per-second counters (payload bytes, no IP/UDP headers),
      so the HUD shows the same figures on the simulator and on a real network; the headless
      summary's averages come from the simulator's byte counts and state whether headers are in.
    * Paths are sampled from what the player sees (the chosen display model) every
      ``PATH_INTERVAL`` seconds, at most ``PATH_POINTS`` points per car.
    * The own car is shown predicted (spec 004 §7.2: keys act at once, the server's snapshots
      correct it) unless prediction is switched off; then it goes through the display model
      like every other car, a round trip late (``shown_cars``).
    * The autopilot (the headless "player") steers the own car as the client shows it: it
      drives through the network like a human would, with its lag.
    * Why a game ended (``end_reason``) is the server's goodbye when it sent one (``server
      shutting down``), else how the transport connection ended (``timed_out``, ...); the HUD
      shows it in place of ``connected``.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass
from typing import Final

from lagless.demo.arena import ArenaBot, TickStats, spawn, view_name
from lagless.errors import LocalProtocolError
from lagless.physics import CarState, Keys, PhysicsClient
from lagless.smoothing.state import DisplayState

__all__ = [
    "PATH_INTERVAL",
    "PATH_POINTS",
    "Autopilot",
    "LiveStatus",
    "Paths",
    "end_reason",
    "hud_lines",
    "live_status",
    "shown_cars",
]

PATH_INTERVAL: Final = 0.1  # s between path points
PATH_POINTS: Final = 3000  # points kept per car (5 minutes)


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveStatus:
    """What the HUD and the live table show about the player's connection."""

    connected: bool
    """The transport is connected and the player has a car."""
    rtt_ms: float
    """Smoothed round-trip time, ms."""
    loss: float
    """Fraction of recent packets lost, 0..1."""
    kbps_in: float
    """Payload kB/s (1000 bytes) received over the last second."""
    kbps_out: float
    """Payload kB/s sent over the last second."""
    cars: int
    """Cars shown."""
    model: str
    """Display model of the remote cars."""
    profile: str
    """Network profile between the player and the server."""
    predict: bool
    """The own car is shown predicted."""
    ended: str | None = None
    """Why the game ended (``end_reason``), or ``None`` while it goes on."""


def end_reason(client: PhysicsClient) -> str | None:
    """Return why the client's game ended: the server's goodbye, else the transport's reason
    (``server_disconnected``, ``timed_out``, ``local``), or ``None`` while it goes on."""
    return client.goodbye if client.goodbye is not None else client.ended


def shown_cars(
    client: PhysicsClient, model: str, now: float, *, predict: bool
) -> dict[int, DisplayState]:
    """Return every car as shown at local time ``now`` (s): display model ``model``, and the own
    car predicted when ``predict`` (and a prediction exists)."""
    shown = client.display(now, view_name(model))
    own = client.car_id
    mine = client.predicted(now) if predict and own is not None else None
    if own is not None and mine is not None:
        shown[own] = DisplayState(
            t=now, x=mine.x, y=mine.y, vx=mine.vx, vy=mine.vy, heading=mine.heading
        )
    return shown


def live_status(
    client: PhysicsClient, cars: int, *, model: str, profile: str, predict: bool
) -> LiveStatus:
    """Read a ``LiveStatus`` off a client showing ``cars`` cars."""
    try:
        stats = client.transport.connection_statistics()
    except LocalProtocolError:
        return LiveStatus(
            connected=False,
            rtt_ms=0.0,
            loss=0.0,
            kbps_in=0.0,
            kbps_out=0.0,
            cars=cars,
            model=model,
            profile=profile,
            predict=predict,
            ended=end_reason(client),
        )
    return LiveStatus(
        connected=client.car_id is not None,
        rtt_ms=1000.0 * stats.rtt,
        loss=stats.loss,
        kbps_in=stats.received_bps / 1000.0,
        kbps_out=stats.sent_bps / 1000.0,
        cars=cars,
        model=model,
        profile=profile,
        predict=predict,
        ended=end_reason(client),
    )


class Paths:
    """The recent paths of every car as shown, sampled every ``PATH_INTERVAL`` seconds."""

    def __init__(self) -> None:
        """Start with no paths."""
        self.points: dict[int, deque[tuple[float, float]]] = {}
        """Car id -> its recent positions, m, oldest first."""
        self._next = -math.inf

    def sample(self, cars: dict[int, DisplayState], now: float) -> None:
        """Record the cars shown at ``now`` (s) if a sample is due."""
        if now < self._next:
            return
        self._next = now + PATH_INTERVAL
        for car_id, shown in cars.items():
            trail = self.points.get(car_id)
            if trail is None:
                trail = self.points[car_id] = deque(maxlen=PATH_POINTS)
            trail.append((shown.x, shown.y))
        for gone in self.points.keys() - cars.keys():
            del self.points[gone]


class Autopilot:
    """Drives the player's own car like a bot, from what the player sees.

    Args:
        rng: The bot's generator.
    """

    def __init__(self, rng: random.Random) -> None:
        """Create an autopilot that starts once the car is shown."""
        self._rng = rng
        self._bot: ArenaBot | None = None

    def keys(self, client: PhysicsClient, model: str, now: float, *, predict: bool) -> Keys | None:
        """Return the keys for the own car at local time ``now`` (s), or ``None`` if not shown."""
        if client.car_id is None:
            return None
        shown = shown_cars(client, model, now, predict=predict).get(client.car_id)
        if shown is None:
            return None
        state = CarState(x=shown.x, y=shown.y, heading=shown.heading, vx=shown.vx, vy=shown.vy)
        if self._bot is None:
            self._bot = ArenaBot(self._rng, spawn(client.car_id))
        return self._bot.keys(state, now)


def hud_lines(
    status: LiveStatus, tick: TickStats | None, *, keys_help: bool, score: str | None = None
) -> list[str]:
    """Return the HUD's text lines for ``status`` (the server's tick time and the ram scores
    when the server runs in this process)."""
    link = "connected" if status.connected else "connecting..."
    if status.ended is not None:
        link = f"ended: {status.ended}"
    lines = [
        f"RTT {status.rtt_ms:.0f} ms   loss {100.0 * status.loss:.1f} %   "
        f"in {status.kbps_in:.2f} kB/s   out {status.kbps_out:.2f} kB/s",
        f"model {status.model}   own car {'predicted' if status.predict else 'as the model'}   "
        f"profile {status.profile}   cars {status.cars}   {link}",
    ]
    if tick is not None and tick.ticks:
        lines.append(f"server tick {tick.avg_ms:.2f} ms avg, {tick.p99_ms:.2f} ms p99")
    if score is not None:
        lines.append(score)
    if keys_help:
        lines.append(
            "arrows/WASD drive (ram the others)   M model   O prediction   P profile   Esc quit"
        )
    return lines
