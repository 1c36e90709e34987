"""A game server and clients on the simulated network (shared by the tests of tests/game)."""

from __future__ import annotations

import random

from lagless.game import (
    GameClient,
    GameConfig,
    GameServer,
    Level,
    RoomClient,
    RoomServer,
    builtin_map,
)
from lagless.interest import InterestPolicy
from lagless.io.sim import SimEndpoint
from lagless.netsim import LinkConfig, Network, Scheduler
from lagless.transport import NetcodeServerConfig

PROTOCOL_ID = 0x4C41_474C_4553_4731
SERVER = "10.0.0.1"
PORT = 40000


class SimMatch:
    """One `GameServer` and any number of `GameClient`s on a simulated network."""

    def __init__(
        self,
        *,
        link: LinkConfig | None = None,
        seed: int = 5,
        config: GameConfig | None = None,
        level: Level | None = None,
        listen: bool = True,
        policy: InterestPolicy | None = None,
    ) -> None:
        self.scheduler = Scheduler(start=50.0)
        self.network = Network(self.scheduler, seed=seed, default_link=link)
        self.network.add_host(SERVER)
        self.seed = seed
        game = GameServer(
            NetcodeServerConfig(
                protocol_id=PROTOCOL_ID, public_address=(SERVER, PORT), insecure=True
            ),
            builtin_map() if level is None else level,
            rng=random.Random(seed),
            config=config,
            random_bytes=random.Random(seed + 1).randbytes,
            policy=policy,
        )
        if listen:
            game.listen()
        self.server_events: list[object] = []
        self.server = SimEndpoint(
            game, self.network.host(SERVER), PORT, on_event=self.server_events.append
        )
        self.clients: list[SimEndpoint[GameClient]] = []
        self.client_events: list[list[object]] = []

    @property
    def game(self) -> GameServer:
        """The server object."""
        return self.server.obj

    @property
    def now(self) -> float:
        """Simulated time (s)."""
        return self.scheduler.now

    def add_client(
        self, n: int, *, name: str = "", connect: bool = True
    ) -> SimEndpoint[GameClient]:
        """A client on host 10.0.1.n, connecting at once unless ``connect`` is False."""
        host = f"10.0.1.{n}"
        self.network.add_host(host)
        events: list[object] = []
        client = GameClient(PROTOCOL_ID, rng=random.Random(self.seed * 100 + n))
        endpoint = SimEndpoint(client, self.network.host(host), on_event=events.append)
        if connect:
            now = self.now
            endpoint.poke(
                lambda c: c.connect((SERVER, PORT), now, client_id=n, name=name or f"p{n}")
            )
        self.clients.append(endpoint)
        self.client_events.append(events)
        return endpoint

    def run(self, seconds: float) -> None:
        """Advance simulated time."""
        self.scheduler.run(until=self.now + seconds)


ROOMS_PROTOCOL = 0x524F_4F4D
ROOMS_SERVER = ("10.0.0.1", 41000)


class Lobby:
    """A `RoomServer` and `RoomClient`s on a simulated network."""

    def __init__(self) -> None:
        self.scheduler = Scheduler(start=5.0)
        self.network = Network(self.scheduler, seed=2, default_link=LinkConfig(latency=0.01))
        self.network.add_host(ROOMS_SERVER[0])
        self.server_events: list[object] = []
        self.server = SimEndpoint(
            RoomServer(
                NetcodeServerConfig(
                    protocol_id=ROOMS_PROTOCOL, public_address=ROOMS_SERVER, insecure=True
                ),
                random_bytes=random.Random(1).randbytes,
                max_rooms=3,
            ),
            self.network.host(ROOMS_SERVER[0]),
            ROOMS_SERVER[1],
            on_event=self.server_events.append,
        )
        self.clients: list[SimEndpoint[RoomClient]] = []
        self.events: list[list[object]] = []

    def join(self, n: int) -> SimEndpoint[RoomClient]:
        """A client on host 10.0.2.n, connecting at once."""
        host = f"10.0.2.{n}"
        self.network.add_host(host)
        events: list[object] = []
        client = SimEndpoint(
            RoomClient(ROOMS_PROTOCOL), self.network.host(host), on_event=events.append
        )
        now = self.scheduler.now
        client.poke(lambda c: c.connect(ROOMS_SERVER, now, client_id=n))
        self.clients.append(client)
        self.events.append(events)
        return client

    def run(self, seconds: float = 0.3) -> None:
        """Advance simulated time."""
        self.scheduler.run(until=self.scheduler.now + seconds)
