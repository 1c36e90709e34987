"""``lagless game rooms --log-format json`` (issue 16 part 3, docs/operations.md): a real process
and two real room clients over UDP; every stdout line is one JSON record, and the clients, the
rooms they create, join and leave, a malformed message, the shutdown and the summary each
appear as their event, in the order the service reported them."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable

from lagless.cli.game import GAME_PROTOCOL_ID, _RoomLog
from lagless.game.rooms import (
    RELIABLE_CHANNEL,
    CreateRoom,
    Joined,
    JoinRoom,
    Left,
    RoomChanged,
    RoomClient,
    RoomMessageDropped,
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

    def seen(n: int, kind: type) -> Callable[[], bool]:
        return lambda: any(isinstance(e, kind) for e in events[n])

    try:
        for n, endpoint in enumerate(endpoints):
            endpoint.obj.connect(("127.0.0.1", port), endpoint.now(), client_id=n + 1)
            endpoint.flush()
        pump_until(lambda: all(c.transport.connected for c in clients))
        endpoints[0].call(lambda c: c.request(CreateRoom("lobby", 4)))
        pump_until(seen(0, Joined))
        room = clients[0].room
        assert room is not None
        endpoints[1].call(lambda c: c.request(JoinRoom(room.room)))
        pump_until(seen(1, Joined))
        endpoints[1].call(lambda c: c.transport.send(RELIABLE_CHANNEL, b"\xc1 not msgpack"))
        endpoints[1].call(lambda c: c.request(CreateRoom("solo", 2)))  # leaves the lobby
        pump_until(lambda: sum(isinstance(e, Joined) for e in events[1]) == 2)
        assert any(isinstance(e, Left) for e in events[1])
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
    assert (violation["level"], violation["reason"], violation["client"]) == (
        "warning",
        "malformed",
        me[1],
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


def test_room_events_become_records_in_their_order() -> None:
    lines: list[str] = []
    watch = _RoomLog(EventLog("lagless.rooms", "text", lines.append))
    watch.update(
        [
            RoomChanged(1, "r1", "created", None, 0),
            RoomChanged(1, "r1", "joined", 5, 1),
            RoomMessageDropped(5, "malformed"),
            RoomChanged(2, "r2", "created", None, 0),
            RoomChanged(1, "r1", "left", 5, 0),
            RoomChanged(1, "r1", "closed", None, 0),
            RoomChanged(2, "r2", "joined", 5, 1),
        ]
    )
    assert lines == [
        "room 1 ('r1') created",
        "client 5 joined room 1 (1 members)",
        "client 5: malformed room message dropped",
        "room 2 ('r2') created",
        "client 5 left room 1",
        "room 1 ('r1') closed",
        "client 5 joined room 2 (1 members)",
    ]
