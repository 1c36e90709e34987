"""Fuzz the game layer's decoders and live objects (issue 14 "every new message decoder fuzzed").

Discovery queries and replies, room messages, and live objects fed fuzzed input: a discovery
client and responder, a room server with members in rooms, and a game server taking fuzzed
messages from a connected player. Nothing may raise; state invariants hold afterwards.
"""

from __future__ import annotations

import functools
import math
import random

from hypothesis import given
from hypothesis import strategies as st

from lagless.game import (
    DiscoveryClient,
    DiscoveryResponder,
    ServerAnnouncement,
    Shoot,
    decode_query,
    decode_reply,
    encode_query,
    encode_reply,
)
from lagless.game.rooms import (
    CreateRoom,
    JoinRoom,
    LeaveRoom,
    ListRooms,
    Matchmake,
    RaiseEvent,
    Relayed,
    RoomError,
    decode_room_message,
    encode_room_message,
)
from lagless.replication import Target, encode_event
from tests.game.helpers import Lobby
from tests.property.fuzzing import FUZZ, fuzz_bytes, scaled

PROTOCOL = 0x1234_5678_9ABC_DEF0
u32 = st.integers(0, 2**32 - 1)
text = st.text(max_size=40)
valid_query = st.builds(encode_query, u32, st.just(PROTOCOL))
valid_reply = st.builds(
    encode_reply,
    u32,
    st.just(PROTOCOL),
    st.builds(
        ServerAnnouncement,
        text,
        st.integers(0, 70000),
        st.integers(0, 70000),
        st.integers(1, 65535),
        text,
    ),
)
props = st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3)
room_message = st.one_of(
    st.builds(CreateRoom, st.text(max_size=8), st.integers(1, 4), props, st.booleans()),
    st.builds(ListRooms, props),
    st.builds(JoinRoom, st.integers(0, 5)),
    st.builds(Matchmake, props, st.integers(1, 4), st.booleans()),
    st.just(LeaveRoom()),
    st.builds(RaiseEvent, st.integers(0, 255), st.binary(max_size=32), st.booleans()),
    st.builds(Relayed, st.integers(0, 5), st.integers(0, 9), st.integers(0, 255), st.binary()),
    st.builds(RoomError, st.text(max_size=8), st.text(max_size=8)),
)
valid_room = room_message.map(encode_room_message)


@FUZZ
@given(fuzz_bytes(valid_query))
def test_decode_query(data: bytes) -> None:
    decoded = decode_query(data)
    if decoded is not None:
        assert encode_query(*decoded) == data


@FUZZ
@given(fuzz_bytes(valid_reply))
def test_decode_reply(data: bytes) -> None:
    decoded = decode_reply(data)
    if decoded is not None:
        assert encode_reply(decoded.nonce, decoded.protocol_id, decoded.announcement) == data


@FUZZ
@given(fuzz_bytes(valid_room))
def test_decode_room_message(data: bytes) -> None:
    decoded = decode_room_message(data)
    if decoded is not None:
        assert decode_room_message(encode_room_message(decoded)) == decoded


@FUZZ
@given(st.lists(fuzz_bytes(st.one_of(valid_query, valid_reply)), max_size=6))
def test_live_discovery_objects(datagrams: list[bytes]) -> None:
    client = DiscoveryClient(PROTOCOL, rng=random.Random(1))
    responder = DiscoveryResponder(PROTOCOL, lambda: ServerAnnouncement("s", 1, 2, 3))
    client.start([("10.255.255.255", 47800)], 1.0)
    for i, data in enumerate(datagrams):
        client.receive_datagram(data, ("10.0.0.9", 47800), 1.0 + i)
        responder.receive_datagram(data, ("10.0.0.9", 5000), 1.0 + i)
        client.handle_timer(1.0 + i)
    for _, dst in responder.datagrams_to_send(10.0):
        assert dst == ("10.0.0.9", 5000)
    assert len(client.servers) <= len(datagrams)


@functools.cache
def _lobby() -> Lobby:
    lobby = Lobby()
    for n in (1, 2, 3):
        lobby.join(n)
    lobby.run(0.5)
    return lobby


@scaled(0.5)
@given(st.lists(st.tuples(st.integers(0, 2), fuzz_bytes(valid_room)), min_size=1, max_size=8))
def test_live_room_server_keeps_its_invariants(messages: list[tuple[int, bytes]]) -> None:
    lobby = _lobby()
    server = lobby.server.obj
    members = server.transport.clients
    assert len(members) == 3
    for who, payload in messages:
        server._on_message(members[who], payload)
    lobby.server.flush()
    lobby.run(0.05)  # let the members acknowledge the answers
    seen: set[int] = set()
    for room in server.rooms:
        inside = server.members(room.room)
        assert 0 < len(inside) <= room.max_players
        assert not seen & set(inside)
        seen.update(inside)


@functools.cache
def _match() -> object:
    from tests.game.helpers import SimMatch

    match = SimMatch()
    match.add_client(1)
    match.add_client(2)
    match.run(1.0)
    return match


shots = st.builds(
    Shoot,
    origin=st.tuples(st.floats(-1024, 1024), st.floats(-1024, 1024)),
    direction=st.floats(-math.pi, math.pi),
    target=st.integers(0, 5),
    view_delay=st.floats(0.0, 1.0),
)
valid_shot = st.builds(
    lambda shot, t: encode_event(shot, 1, Target.server(), t), shots, st.floats(0.0, 200.0)
)


@scaled(0.5)
@given(st.lists(fuzz_bytes(valid_shot), min_size=1, max_size=6))
def test_live_game_server_survives_fuzzed_player_messages(messages: list[bytes]) -> None:
    match = _match()
    game = match.game  # type: ignore[attr-defined]
    client = min(c.client for c in game.clients)
    for payload in messages:
        game.replication._on_message(client, payload, match.now)  # type: ignore[attr-defined]
        game._absorb(match.now)  # type: ignore[attr-defined]
    match.server.flush()  # type: ignore[attr-defined]
    match.run(0.05)  # type: ignore[attr-defined]
    assert len(game.clients) == 2
    for avatar in game.world:
        assert 0 <= avatar.hp <= 1000
        assert 0.0 <= avatar.pos[0] <= game.level.width
