"""``lagless game rooms --log-format json`` (issue 16 part 3, docs/operations.md): a real process
and two real room clients over UDP; every stdout line is one JSON record, and the clients, the
rooms they create, join and leave, a malformed message, the shutdown and the summary each
appear as their event. The service scans its rooms at most every ``ROOM_SCAN_INTERVAL`` s, so
the clients let one pass between their moves."""

from __future__ import annotations

import json
import math
import signal
import time
from collections import Counter
from collections.abc import Callable

from lagless.cli.game import GAME_PROTOCOL_ID, ROOM_SCAN_INTERVAL, _RoomLog
from lagless.game.rooms import (
    RELIABLE_CHANNEL,
    CreateRoom,
    Joined,
    JoinRoom,
    Left,
    RoomClient,
    RoomInfo,
)
from lagless.io.endpoint import PollEndpoint
from lagless.io.logs import EventLog
from lagless.transport import Disconnected
from tests.ops.helpers import JsonServer

REASON = "server shutting down"


def finish(server: JsonServer, timeout: float = 10.0) -> tuple[int, str]:
    """Read stdout to its end line by line, then wait for the exit; return status and stderr.

    (Through the same buffered reader ``wait_event`` used: ``communicate`` would miss the lines
    that reader holds already.)"""
    stream = server.process.stdout
    assert stream is not None
    server.records.extend(json.loads(line) for line in stream)
    _, err = server.process.communicate(timeout=timeout)
    return server.process.returncode, err


def test_rooms_log_clients_rooms_violations_shutdown_and_summary_as_json(
    json_server: Callable[..., JsonServer],
) -> None:
    server = json_server("game", "rooms", "-p", "0", "--log-format", "json")
    serving = server.wait_event("serving")
    port = int(str(serving["address"]).rsplit(":", 1)[1])
    clients = [RoomClient(GAME_PROTOCOL_ID) for _ in range(2)]
    endpoints = [PollEndpoint(client, "127.0.0.1:0") for client in clients]
    events: list[list[object]] = [[], []]

    def pump_until(done: Callable[[], bool], timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            endpoints[0].wait(0.01)
            for mine, endpoint in zip(events, endpoints, strict=True):
                mine.extend(endpoint.pump())
        assert done(), events

    def settle() -> None:  # past the service's next scan of the rooms
        until = time.monotonic() + 1.5 * ROOM_SCAN_INTERVAL
        pump_until(lambda: time.monotonic() >= until)

    def seen(n: int, kind: type) -> Callable[[], bool]:
        return lambda: any(isinstance(e, kind) for e in events[n])

    try:
        for n, endpoint in enumerate(endpoints):
            endpoint.obj.connect(("127.0.0.1", port), endpoint.now(), client_id=n + 1)
            endpoint.flush()
        pump_until(lambda: all(c.transport.connected for c in clients))
        endpoints[0].call(lambda c: c.request(CreateRoom("lobby", 4)))
        pump_until(seen(0, Joined))
        settle()
        room = clients[0].room
        assert room is not None
        endpoints[1].call(lambda c: c.request(JoinRoom(room.room)))
        pump_until(seen(1, Joined))
        settle()
        endpoints[1].call(lambda c: c.transport.send(RELIABLE_CHANNEL, b"\xc1 not msgpack"))
        endpoints[1].call(lambda c: c.request(CreateRoom("solo", 2)))  # leaves the lobby
        pump_until(lambda: sum(isinstance(e, Joined) for e in events[1]) == 2)
        assert any(isinstance(e, Left) for e in events[1])
        settle()
        server.process.send_signal(signal.SIGTERM)
        pump_until(lambda: all(any(isinstance(e, Disconnected) for e in mine) for mine in events))
    finally:
        for endpoint in endpoints:
            endpoint.close()
    status, err = finish(server)

    assert status == 128 + signal.SIGTERM, err
    me = [int(c.me) for c in clients if c.me is not None]
    assert len(me) == 2
    lobby, solo = room.room, room.room + 1
    connected = server.events("client_connected")
    assert sorted(int(str(r["client"])) for r in connected) == sorted(me)
    assert sorted(int(str(r["client_id"])) for r in connected) == [1, 2]
    created = [(r["room"], r["name"]) for r in server.events("room_created")]
    assert created == [(lobby, "lobby"), (solo, "solo")]
    joined = [(r["room"], r["client"]) for r in server.events("room_joined")]
    assert joined == [(lobby, me[0]), (lobby, me[1]), (solo, me[1])]
    left = [(int(str(r["room"])), int(str(r["client"]))) for r in server.events("room_left")]
    assert left[0] == (lobby, me[1])  # by its own move, before the shutdown
    assert sorted(left[1:]) == sorted([(lobby, me[0]), (solo, me[1])])  # disconnected
    closed = [int(str(r["room"])) for r in server.events("room_closed")]
    assert sorted(closed) == [lobby, solo]
    (violation,) = server.events("client_violation")
    assert (violation["level"], violation["reason"], violation["count"]) == (
        "warning",
        "malformed",
        1,
    )
    (shutdown,) = server.events("shutdown")
    assert (shutdown["clients"], shutdown["reason"]) == (2, REASON)
    gone = server.events("client_disconnected")
    assert sorted((r["client"], r["reason"]) for r in gone) == sorted(
        (m, "server_disconnected") for m in me
    )
    (summary,) = server.events("summary")
    assert (summary["rooms"], summary["signal"], summary["dropped"]) == (0, 15, {"malformed": 1})
    order = [r["event"] for r in server.records]
    assert order[0] == "serving"
    assert order.index("shutdown") < order.index("client_disconnected") < order.index("summary")
    assert order[-1] == "summary"
    assert "Traceback" not in err


class _Rooms:
    """A stand-in for `RoomServer`'s read side: rooms, members, drops; counts the scans."""

    def __init__(self) -> None:
        self.members_of: dict[int, list[int]] = {}
        self.drops: Counter[str] = Counter()
        self.scans = 0

    @property
    def rooms(self) -> list[RoomInfo]:
        self.scans += 1
        return [RoomInfo(r, f"r{r}", len(m), 8, {}, True) for r, m in self.members_of.items()]

    def members(self, room: int) -> list[int]:
        return list(self.members_of.get(room, []))


def test_the_room_scan_is_throttled_skips_idle_pumps_and_orders_a_move() -> None:
    lines: list[str] = []
    service = _Rooms()
    watch = _RoomLog(EventLog("lagless.rooms", "text", lines.append), service)  # type: ignore[arg-type]
    service.members_of = {1: [5]}
    watch.update([], 1, 10.0)
    assert (service.scans, lines) == (
        1,
        ["room 1 ('r1') created", "client 5 joined room 1 (1 members)"],
    )
    service.members_of = {1: [5, 6]}
    for i in range(20):  # datagrams on every pump, within one interval: no scan
        watch.update([], 2 + i, 10.0 + i * ROOM_SCAN_INTERVAL / 40)
    assert service.scans == 1
    watch.update([], 22, 10.0 + ROOM_SCAN_INTERVAL)  # the next interval: the change shows
    assert service.scans == 2
    assert lines[-1] == "client 6 joined room 1 (2 members)"
    watch.update([], 22, 20.0)  # nothing came since: no scan however late
    assert service.scans == 2
    service.members_of = {2: [6]}  # 5 left (room 1 closes), 6 moved to a new room 2
    service.drops["malformed"] += 2
    watch.update([], -1, math.inf)
    assert lines[-6:] == [
        "2 malformed room messages dropped",
        "client 5 left room 1",
        "client 6 left room 1",
        "room 1 ('r1') closed",
        "room 2 ('r2') created",
        "client 6 joined room 2 (1 members)",
    ]
