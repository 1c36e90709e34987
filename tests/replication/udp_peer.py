"""One process of the real-UDP replication test: ``python -m tests.replication.udp_peer ROLE``.

``server``: binds 127.0.0.1:0, prints its port, waits for two clients, then spawns a station and a
ship that depends on it (owned by the first client), moves the ship, fires an event to everyone,
destroys the station, then the ship, and prints a JSON summary. ``client PORT N``: connects,
writes the ship's owner field when it owns it, sends a ``Ping`` to the server, and prints a JSON
summary of what it saw. Every process exits on its own within its deadline.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from lagless.io.endpoint import PollEndpoint
from lagless.replication.client import ReplicationClient
from lagless.replication.events import Target
from lagless.replication.ids import NULL_REF
from lagless.replication.objects import Role, World
from lagless.replication.server import ReplicationServer
from lagless.replication.session import (
    EventReceived,
    ObjectAnnounced,
    ObjectDestroyed,
    Welcomed,
)
from lagless.transport.client import Client
from lagless.transport.netcode_client import NetcodeClientConfig
from lagless.transport.netcode_server import NetcodeServerConfig
from lagless.transport.server import Server

from .helpers import CLASSES, EVENTS, PROTOCOL_ID, Fire, Ping, Ship, Station

DEADLINE = 20.0  # seconds any process runs at most


def _frame(endpoint: PollEndpoint[Any]) -> list[object]:
    endpoint.wait(0.01)
    return endpoint.pump()


def run_server() -> dict[str, Any]:
    world = World(CLASSES)
    transport = Server(
        config=NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, public_address=("127.0.0.1", 0), insecure=True
        )
    )
    server = ReplicationServer(transport, world, events=EVENTS)
    summary: dict[str, Any] = {"events": []}
    with PollEndpoint(server, "127.0.0.1:0") as endpoint:
        port = endpoint._driver.sock.getsockname()[1]
        print(port, flush=True)
        start = time.monotonic()
        while len(server.clients) < 2:
            _frame(endpoint)
            if time.monotonic() - start > DEADLINE:
                return {"error": "clients did not join"}
        first = min(server.clients)
        t0 = time.monotonic()
        station = server.spawn(Station, pos=(10.0, 10.0), name="alpha")
        ship = server.spawn(Ship, owner=first, pos=(0.0, 0.0), dock=station)
        summary["station"], summary["ship"] = station.id, ship.id
        fired = destroyed_station = False
        while True:
            for event in _frame(endpoint):
                if isinstance(event, EventReceived):
                    summary["events"].append([event.event.class_id, event.sender])
            t = time.monotonic() - t0
            if 0.3 <= t <= 1.3:
                ship.pos = (5.0 * (t - 0.3), 1.0)
            if t >= 1.0 and not fired:
                server.send_event(Fire(power=7.0, shooter=ship), Target.everyone(), endpoint.now())
                fired = True
            if t >= 2.0 and not destroyed_station:
                summary["ship_pos"] = list(ship.pos)
                summary["aim"] = ship.aim
                server.destroy(station)
                destroyed_station = True
            if t >= 2.5 and ship.alive:
                server.destroy(ship)
            if t >= 3.1:
                break
        summary["drops"] = dict(server.drops)
    return summary


def run_client(port: int, n: int) -> dict[str, Any]:
    transport = Client(config=NetcodeClientConfig(insecure=True))
    client = ReplicationClient(transport, World(CLASSES), events=EVENTS)
    summary: dict[str, Any] = {"announced": [], "destroyed": [], "events": []}
    with PollEndpoint(client, "127.0.0.1:0") as endpoint:
        transport.connect_insecure(
            server_addresses=[("127.0.0.1", port)],
            protocol_id=PROTOCOL_ID,
            client_id=n,
            now=endpoint.now(),
        )
        start = time.monotonic()
        ship_id: int | None = None
        pinged = False
        while time.monotonic() - start < DEADLINE:
            for event in _frame(endpoint):
                if isinstance(event, Welcomed):
                    summary["client"] = event.client
                elif isinstance(event, ObjectAnnounced):
                    summary["announced"].append([event.obj.class_id, event.obj.id])
                    if isinstance(event.obj, Ship):
                        ship_id = event.obj.id
                        summary["role"] = event.obj.role.value
                elif isinstance(event, ObjectDestroyed):
                    if event.cls is Station and ship_id is not None:
                        ship = client.world.find(ship_id)
                        assert ship is not None
                        summary["ship_pos"] = list(ship.pos)
                        summary["dock_after_destroy"] = ship.dock.id
                    summary["destroyed"].append([event.cls.class_id, event.ident])
                elif isinstance(event, EventReceived):
                    shooter = client.world.resolve(getattr(event.event, "shooter", NULL_REF))
                    summary["events"].append(
                        [event.event.class_id, event.sender, shooter is not None]
                    )
            ship = client.world.find(ship_id) if ship_id is not None else None
            if ship is not None and not pinged:
                if ship.role is Role.OWNER:
                    ship.aim = 0.5
                    dock = ship.resolve(ship.dock)
                    summary["dock_name"] = dock.name if isinstance(dock, Station) else None
                client.send_event(Ping(note=f"hi {n}"), Target.server(), endpoint.now())
                pinged = True
            if summary["destroyed"] and len(summary["destroyed"]) >= 2:
                break
        for _ in range(20):  # let the last acks and the disconnect out
            _frame(endpoint)
        transport.disconnect()
        endpoint.pump()
    return summary


def main(argv: list[str]) -> None:
    server = argv[0] == "server"
    result = run_server() if server else run_client(int(argv[1]), int(argv[2]))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
