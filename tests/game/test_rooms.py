"""Rooms, matchmaking and relay over the simulated network (spec 000 §3.1, issue 14 item 2)."""

from __future__ import annotations

import random

from lagless.game.rooms import (
    CreateRoom,
    Joined,
    JoinRoom,
    LeaveRoom,
    Left,
    ListRooms,
    Matchmake,
    MemberJoined,
    MemberLeft,
    RaiseEvent,
    Relayed,
    RoomChanged,
    RoomError,
    RoomEventReceived,
    RoomList,
    RoomMessageDropped,
)

from .helpers import Lobby


def _last(events: list[object], kind: type) -> object:
    return [e for e in events if isinstance(e, kind)][-1]


def test_create_list_matchmake_relay_leave() -> None:
    lobby = Lobby()
    a, b, c = (lobby.join(n) for n in (1, 2, 3))
    lobby.run(0.5)
    a.poke(lambda x: x.request(CreateRoom("ctf-1", 2, {"mode": "ctf", "map": "arena"})))
    lobby.run()
    room = a.obj.room
    assert room is not None
    assert (room.name, room.players, room.max_players) == ("ctf-1", 1, 2)
    b.poke(lambda x: x.request(ListRooms({"mode": "ctf"})))
    c.poke(lambda x: x.request(ListRooms({"mode": "dm"})))
    lobby.run()
    assert [r.name for r in _last(lobby.events[1], RoomList).rooms] == ["ctf-1"]
    assert _last(lobby.events[2], RoomList).rooms == []
    b.poke(lambda x: x.request(Matchmake({"mode": "ctf"})))
    lobby.run()
    assert b.obj.room is not None
    assert b.obj.room.room == room.room
    assert _last(lobby.events[0], MemberJoined).member == b.obj.me
    assert sorted(a.obj.members) == sorted([a.obj.me, b.obj.me])
    # the room is full: matchmaking the same properties creates a second room
    c.poke(lambda x: x.request(Matchmake({"mode": "ctf"}, max_players=4)))
    lobby.run()
    assert c.obj.room is not None
    assert c.obj.room.room != room.room
    assert c.obj.room.properties == {"mode": "ctf"}
    c.poke(lambda x: x.request(JoinRoom(room.room)))
    lobby.run()
    assert _last(lobby.events[2], RoomError) == RoomError("join", "full")
    # relay: reliable and unreliable events reach the other member only, with the sender named
    a.poke(lambda x: x.raise_event(7, b"hello"))
    a.poke(lambda x: x.raise_event(8, b"fast", reliable=False))
    lobby.run()
    got = [(e.code, e.data, e.sender) for e in lobby.events[1] if isinstance(e, Relayed)]
    assert got == [(7, b"hello", a.obj.me), (8, b"fast", a.obj.me)]
    assert not [e for e in lobby.events[0] if isinstance(e, Relayed)]
    assert not [e for e in lobby.events[2] if isinstance(e, Relayed)]
    assert lobby.server.obj.relayed == 2
    # leave: the other member hears it; the room closes when its last member goes
    b.poke(lambda x: x.request(LeaveRoom()))
    lobby.run()
    assert isinstance(_last(lobby.events[1], Left), Left)
    assert b.obj.room is None
    assert _last(lobby.events[0], MemberLeft).member == b.obj.me
    a.poke(lambda x: x.transport.disconnect())
    lobby.run()
    assert [r.room for r in lobby.server.obj.rooms] == [c.obj.room.room]


def test_targets_errors_and_server_logic_rooms() -> None:
    lobby = Lobby()
    a, b, c = (lobby.join(n) for n in (1, 2, 3))
    lobby.run(0.5)
    a.poke(lambda x: x.request(LeaveRoom()))
    a.poke(lambda x: x.raise_event(1))
    a.poke(lambda x: x.request(JoinRoom(99)))
    a.poke(lambda x: x.request(Matchmake({"mode": "x"}, create=False)))
    lobby.run()
    errors = [e for e in lobby.events[0] if isinstance(e, RoomError)]
    assert errors == [
        RoomError("leave", "not_in_room"),
        RoomError("raise", "not_in_room"),
        RoomError("join", "no_such_room"),
        RoomError("match", "no_match"),
    ]
    a.poke(lambda x: x.request(CreateRoom("three", 3)))
    lobby.run()
    assert a.obj.room is not None
    ident = a.obj.room.room
    for client in (b, c):
        client.poke(lambda x: x.request(JoinRoom(ident)))
    lobby.run()
    c_id = c.obj.me
    a.poke(lambda x: x.request(RaiseEvent(5, b"psst", to=[c_id, 12345])))
    lobby.run()
    assert [e.data for e in lobby.events[2] if isinstance(e, Relayed)] == [b"psst"]
    assert not [e for e in lobby.events[1] if isinstance(e, Relayed)]
    # a room with server logic: events go to the application, which answers the room
    b.poke(lambda x: x.request(CreateRoom("logic", 4, relay=False)))
    lobby.run()
    assert b.obj.room is not None
    logic = b.obj.room.room
    assert not b.obj.room.relay
    b.poke(lambda x: x.raise_event(9, b"move"))
    lobby.run()
    received = [e for e in lobby.server_events if isinstance(e, RoomEventReceived)]
    assert received == [RoomEventReceived(logic, b.obj.me, 9, b"move")]
    assert lobby.server.obj.send_to_room(logic, 10, b"ok") == 1
    assert lobby.server.obj.send_to_room(999, 10, b"none") == 0
    lobby.server.flush()
    lobby.run()
    assert _last(lobby.events[1], Relayed) == Relayed(logic, 0, 10, b"ok")
    # too many rooms (max_rooms=3: "three", "logic", then one more)
    c.poke(lambda x: x.request(CreateRoom("extra", 2)))
    a.poke(lambda x: x.request(CreateRoom("one-too-many", 2)))
    lobby.run()
    assert _last(lobby.events[0], RoomError) == RoomError("create", "too_many_rooms")
    assert isinstance(_last(lobby.events[2], Joined), Joined)


def test_garbage_from_a_member_is_counted_and_the_room_goes_on() -> None:
    lobby = Lobby()
    a, b = lobby.join(1), lobby.join(2)
    lobby.run(0.5)
    a.poke(lambda x: x.request(Matchmake({"q": "1"})))
    lobby.run()
    b.poke(lambda x: x.request(Matchmake({"q": "1"})))
    lobby.run()
    rng = random.Random(4)
    for _ in range(50):
        b.poke(lambda x: x.transport.send(0, rng.randbytes(rng.randint(1, 200))))
    b.poke(lambda x: x.transport.send(0, b"\x81\xa4type\xa6joined"))  # a server message
    lobby.run()
    server = lobby.server.obj
    assert server.drops["malformed"] + server.drops["unexpected"] == 51
    a.poke(lambda x: x.raise_event(1, b"still here"))
    lobby.run()
    assert _last(lobby.events[1], Relayed).data == b"still here"


def test_an_unreliable_event_too_large_for_one_datagram_is_counted() -> None:
    lobby = Lobby()
    a, b = lobby.join(1), lobby.join(2)
    lobby.run(0.5)
    for client in (a, b):
        client.poke(lambda x: x.request(Matchmake({"big": "1"})))
        lobby.run()
    assert a.obj.room is not None
    room = a.obj.room.room
    server = lobby.server.obj
    assert server.send_to_room(room, 1, bytes(1020), reliable=False) == 0
    assert server.drops["too_large"] == 2
    assert server.send_to_room(room, 2, bytes(1020)) == 2  # reliable: fragmented
    b.poke(lambda x: x.raise_event(3, bytes(900), reliable=False))
    lobby.server.flush()
    lobby.run()
    assert [e.code for e in lobby.events[0] if isinstance(e, Relayed)] == [2, 3]


def test_the_server_reports_every_room_change_and_dropped_message_with_its_sender() -> None:
    lobby = Lobby()
    a, b = (lobby.join(n) for n in (1, 2))
    lobby.run(0.5)
    a.poke(lambda x: x.request(CreateRoom("lobby", 4)))
    lobby.run()
    room = a.obj.room
    assert room is not None
    b.poke(lambda x: x.request(JoinRoom(room.room)))
    lobby.run()
    b.poke(lambda x: x.request(CreateRoom("solo", 2)))  # a move: leave the lobby, then join
    b.poke(lambda x: x.transport.send(0, b"\xc1 not msgpack"))
    lobby.run()
    a.poke(lambda x: x.request(LeaveRoom()))  # the last member: the lobby closes
    lobby.run()
    me_a, me_b = a.obj.me, b.obj.me
    lobby_id, solo = room.room, room.room + 1
    changes = [
        (e.room, e.change, e.member, e.members)
        for e in lobby.server_events
        if isinstance(e, RoomChanged)
    ]
    assert changes == [
        (lobby_id, "created", None, 0),
        (lobby_id, "joined", me_a, 1),
        (lobby_id, "joined", me_b, 2),
        (solo, "created", None, 0),
        (lobby_id, "left", me_b, 1),  # a move: the old room is left, then the new one joined
        (solo, "joined", me_b, 1),
        (lobby_id, "left", me_a, 0),
        (lobby_id, "closed", None, 0),
    ]
    dropped = [e for e in lobby.server_events if isinstance(e, RoomMessageDropped)]
    assert dropped == [RoomMessageDropped(me_b, "malformed")]
