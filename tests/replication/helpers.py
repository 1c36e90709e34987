"""Shared test classes and a simulated-network harness for the replication tests."""

from __future__ import annotations

import enum
import random

from lagless.interest import InterestPolicy
from lagless.io.sim import SimEndpoint
from lagless.netsim import LinkConfig, Network, Scheduler
from lagless.replication.client import ReplicationClient
from lagless.replication.events import NetEvent
from lagless.replication.fields import (
    AngleField,
    BoolField,
    BytesField,
    EnumField,
    FloatField,
    IntField,
    QuatField,
    RefField,
    StringField,
    Vec2Field,
    Vec3Field,
    Writer,
)
from lagless.replication.objects import NetworkObject, World
from lagless.replication.server import ReplicationConfig, ReplicationServer
from lagless.transport.client import Client
from lagless.transport.netcode_client import NetcodeClientConfig
from lagless.transport.netcode_server import NetcodeServerConfig
from lagless.transport.server import Server

PROTOCOL_ID = 0x4C41_474C_4553_5233
SERVER = "10.0.0.1"
PORT = 40000


class Kind(enum.Enum):
    FIGHTER = 1
    TRADER = 2
    MINER = 3


class Station(NetworkObject):
    position_field = "pos"
    pos = Vec2Field(-1000.0, 1000.0, 0.01)
    name = StringField(24, initial_only=True)


class Ship(NetworkObject):
    position_field = "pos"
    pos = Vec2Field(-1000.0, 1000.0, 0.01)
    vel = Vec2Field(-64.0, 64.0, 0.01)
    heading = AngleField(12)
    aim = FloatField(-3.2, 3.2, 0.001, writer=Writer.OWNER)
    kind = EnumField(Kind, initial_only=True)
    hp = IntField(0, 200, 100)
    shield = BoolField()
    dock = RefField(depending=True)
    pilot = StringField(16)


class Gadget(NetworkObject):
    """Every field type once (schemas, savegames, fuzzing)."""

    flag = BoolField(True)
    kind = EnumField(Kind)
    level = IntField(-5, 1000)
    ratio = FloatField(0.0, 1.0, 0.001)
    angle = AngleField(10)
    v2 = Vec2Field(-10.0, 10.0, 0.01)
    v3 = Vec3Field(-10.0, 10.0, 0.01)
    rot = QuatField(10)
    label = StringField(12)
    blob = BytesField(8)
    other = RefField()


class Fire(NetEvent):
    power = FloatField(0.0, 100.0, 0.1)
    shooter = RefField()


class Ping(NetEvent):
    guaranteed = False
    note = StringField(16)


CLASSES = (Station, Ship, Gadget)
EVENTS = (Fire, Ping)


class SimGame:
    """A replication server and clients on the simulated network."""

    def __init__(
        self,
        *,
        link: LinkConfig | None = None,
        seed: int = 3,
        policy: InterestPolicy | None = None,
        config: ReplicationConfig | None = None,
    ) -> None:
        self.scheduler = Scheduler(start=100.0)
        self.network = Network(self.scheduler, seed=seed, default_link=link)
        self.network.add_host(SERVER)
        transport = Server(
            config=NetcodeServerConfig(
                protocol_id=PROTOCOL_ID, public_address=(SERVER, PORT), insecure=True
            ),
            random_bytes=random.Random(seed).randbytes,
        )
        self.world = World(CLASSES)
        self.server_events: list[object] = []
        self.server = SimEndpoint(
            ReplicationServer(transport, self.world, config=config, policy=policy, events=EVENTS),
            self.network.host(SERVER),
            PORT,
            on_event=self.server_events.append,
        )
        self.clients: list[SimEndpoint[ReplicationClient]] = []
        self.client_events: list[list[object]] = []
        self._config = config

    @property
    def now(self) -> float:
        """Simulated time, seconds."""
        return self.scheduler.now

    def add_client(self, n: int) -> SimEndpoint[ReplicationClient]:
        host = f"10.0.1.{n}"
        self.network.add_host(host)
        events: list[object] = []
        replication = ReplicationClient(
            Client(config=NetcodeClientConfig(insecure=True)),
            World(CLASSES),
            config=self._config,
            events=EVENTS,
        )
        endpoint = SimEndpoint(replication, self.network.host(host), on_event=events.append)
        now = self.now
        endpoint.poke(
            lambda c: c.transport.connect_insecure(
                server_addresses=[(SERVER, PORT)], protocol_id=PROTOCOL_ID, client_id=n, now=now
            )
        )
        self.clients.append(endpoint)
        self.client_events.append(events)
        return endpoint

    def run(self, seconds: float) -> None:
        self.scheduler.run(until=self.now + seconds)
