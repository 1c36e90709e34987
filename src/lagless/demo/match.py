"""A whole demo match in one process: the server with bots and one player on the simulator.

``lagless demo`` (window and headless) runs here: the ``BotServer`` and the player's
``PhysicsClient`` are sans-I/O objects on ``lagless.netsim``, joined by a simulated link with
the chosen network profile (``Network.set_profile``: ``up`` carries player → server). Switching
the profile replaces the link at once; datagrams in flight keep their arrival times.

Decision: the in-process match runs on the simulator, not on loopback UDP. Virtual time makes the
headless run deterministic for a seed (the same cars, paths and byte counts every time; only the
measured server milliseconds vary), independent of the machine's load, free of sockets and
ports, and able to run faster than real time (``advance`` takes any step). The window and the
paced headless run advance virtual time to follow the wall clock. Real UDP is what
``--server`` / ``--connect`` use (``lagless.demo.net``).
"""

from __future__ import annotations

import random
from typing import Final

from lagless.demo.arena import (
    DISPLAY_MODELS,
    PROTOCOL_ID,
    BotServer,
    TickStats,
    make_client,
    make_server,
    view_name,
)
from lagless.demo.session import Autopilot, LiveStatus, Paths, live_status, shown_cars
from lagless.errors import ConfigError
from lagless.io import SimEndpoint
from lagless.netsim import PROFILES, LinkConfig, Network, Scheduler, get_profile
from lagless.physics import Keys, PhysicsClient
from lagless.smoothing.state import DisplayState

__all__ = ["CLEAN", "PROFILE_CYCLE", "SimMatch"]

CLEAN: Final = "none"
"""The profile name of a clean link (no delay, no loss)."""
PROFILE_CYCLE: Final = (CLEAN, "wifi", "lte", "umts", "gprs", "l80j40")
"""The profiles the window's P key steps through, best to worst (then the spec 004 L80)."""
SERVER_PORT: Final = 9000
_AUTOPILOT_INTERVAL: Final = 0.05  # s between the autopilot's decisions


def check_profile(name: str) -> str:
    """Return a valid profile name (``CLEAN`` or a ``lagless.netsim`` profile), lowercased.

    Raises:
        ConfigError: Unknown name; the message lists the valid ones.
    """
    lowered = name.strip().lower()
    if lowered != CLEAN and lowered not in PROFILES:
        raise ConfigError(f"unknown profile {name!r}; valid: {CLEAN}, {', '.join(PROFILES)}")
    return lowered


class SimMatch:
    """A server with bots and one player, on the simulator (virtual time from 0 s).

    Args:
        bots: Number of bots on the server.
        seed: Seeds the network, the server, the bots and the autopilot.
        profile: Network profile between the player and the server (``CLEAN`` for none).
        model: Display model of the cars (a key of ``DISPLAY_MODELS``).
        autopilot: Drive the player's car with a bot (headless); otherwise ``set_keys`` does.
    """

    def __init__(self, *, bots: int, seed: int, profile: str, model: str, autopilot: bool) -> None:
        """Build the network, start the server and connect the player."""
        rng = random.Random(seed)
        self.scheduler = Scheduler(start=0.0)
        self.network = Network(self.scheduler, seed=seed)
        server_host = self.network.add_host("server")
        player_host = self.network.add_host("player")
        self.server: BotServer = make_server(("server", SERVER_PORT), bots=bots, rng=rng, start=0.0)
        SimEndpoint(self.server, server_host, SERVER_PORT, on_event=lambda _event: None)
        self.client: PhysicsClient = make_client(rng)
        self._player = SimEndpoint(self.client, player_host)
        self.profile = CLEAN
        self.model = next(iter(DISPLAY_MODELS))
        self.set_profile(profile)
        self.set_model(model)
        self.paths = Paths()
        self.predict = True
        """Show the own car predicted (``set_predict``)."""
        self._autopilot = Autopilot(random.Random(rng.getrandbits(64))) if autopilot else None
        self.client.transport.connect_insecure(
            server_addresses=[("server", SERVER_PORT)],
            protocol_id=PROTOCOL_ID,
            client_id=1,
            now=0.0,
        )
        self._player.flush()
        if self._autopilot is not None:
            self.scheduler.call_at(_AUTOPILOT_INTERVAL, self._drive)

    def set_profile(self, name: str) -> None:
        """Put profile ``name`` (or ``CLEAN``) on the link from now on.

        Raises:
            ConfigError: Unknown profile.
        """
        name = check_profile(name)
        if name == CLEAN:
            self.network.set_link("player", "server", LinkConfig())
            self.network.set_link("server", "player", LinkConfig())
        else:
            self.network.set_profile("player", "server", get_profile(name))
        self.profile = name

    def set_model(self, model: str) -> None:
        """Show the cars through display model ``model`` from now on.

        Raises:
            ConfigError: Unknown model.
        """
        view_name(model)
        self.model = model

    def set_predict(self, predict: bool) -> None:
        """Show the own car predicted (True) or through the display model (False)."""
        self.predict = predict

    def set_keys(self, keys: Keys) -> None:
        """Hold ``keys`` on the player's car from now on (one input event per change)."""
        self._player.poke(lambda client: client.set_keys(keys, self.scheduler.now))

    def advance(self, until: float) -> dict[int, DisplayState]:
        """Run the match to virtual time ``until`` (s); return the cars shown then."""
        self.scheduler.run(until=until)
        shown = shown_cars(self.client, self.model, until, predict=self.predict)
        self.paths.sample(shown, until)
        return shown

    def status(self, cars: int) -> LiveStatus:
        """Return the HUD figures with ``cars`` cars shown."""
        return live_status(
            self.client, cars, model=self.model, profile=self.profile, predict=self.predict
        )

    def tick_stats(self) -> TickStats:
        """Return the server's time per tick so far."""
        return self.server.tick_stats()

    def score_line(self) -> str | None:
        """Return the HUD's ram scores: the player's and the leader's, or ``None`` before any."""
        scores = self.server.referee.scores
        if not scores:
            return None
        leader = max(scores, key=lambda car: (scores[car], -car))
        mine = scores.get(self.client.car_id, 0) if self.client.car_id is not None else 0
        who = "you" if leader == self.client.car_id else f"car {leader}"
        return f"rams: you {mine}   leader {who} with {scores[leader]}"

    def player_bytes(self) -> tuple[int, int, int, int]:
        """Return the player's bytes so far: received (payload, wire), sent (payload, wire).

        Wire bytes include 28 IPv4+UDP header bytes per datagram.
        """
        stats = self.network.stats("player")
        return (
            stats.payload_bytes_received,
            stats.wire_bytes_received,
            stats.payload_bytes_sent,
            stats.wire_bytes_sent,
        )

    def _drive(self) -> None:
        assert self._autopilot is not None
        keys = self._autopilot.keys(
            self.client, self.model, self.scheduler.now, predict=self.predict
        )
        if keys is not None:
            self.set_keys(keys)
        self.scheduler.call_at(self.scheduler.now + _AUTOPILOT_INTERVAL, self._drive)
