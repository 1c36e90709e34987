"""Fuzz the Silac codec, the gossip peer and the lobby (DESIGN.md "Bad input").

``lagless.gossip.codec.decode`` raises only ``DecodeError``. ``GossipPeer``, ``Lobby`` and
``LobbyClient`` take random bytes and mutated valid datagrams (most of them addressed to the
peer's own game, so they get past the game check) without raising, and still serve afterwards: the
peer answers a new join request, the lobby answers a games-list request.
"""

from __future__ import annotations

import contextlib
import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from lagless.gossip import GossipPeer, Header, Packet
from lagless.gossip.codec import decode, encode
from lagless.gossip.lobby import LobbyClient, LobbyClientConfig
from lagless.gossip.messages import ExtraInfoRequest
from lagless.wire import DecodeError
from tests.gossip.strategies import packet
from tests.gossip.test_lobby import LOBBY, T0, _heartbeat, _lobby, _member
from tests.gossip.test_peer import _addr, _host, _join_request, _known
from tests.property.fuzzing import FUZZ, fuzz_bytes, scaled

GAME = 77  # the game the fuzzed peer hosts (tests/gossip/test_peer.py)


def _in_game(p: Packet) -> Packet:
    return dataclasses.replace(p, header=dataclasses.replace(p.header, game_id=GAME))


datagrams = fuzz_bytes(st.one_of(packet, packet.map(_in_game)).map(encode))


@FUZZ
@given(datagrams)
def test_decode_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        assert encode(decode(data)) == data  # canonical form only


def _answers_join(peer: GossipPeer, now: float) -> bool:
    newcomer = _addr(200)
    peer.receive_datagram(_join_request(200), newcomer, now)
    return any(addr == newcomer for _, addr in peer.datagrams_to_send(now))


@scaled(0.5)
@given(st.lists(st.tuples(datagrams, st.integers(0, 6)), min_size=1, max_size=6))
def test_peer_survives_fuzzed_datagrams(inputs: list[tuple[bytes, int]]) -> None:
    peer = _host()
    _known(peer, range(1, 6))
    now = T0
    for data, sender in inputs:
        now += 0.01
        peer.receive_datagram(data, _addr(sender), now)
        peer.datagrams_to_send(now)
        if (deadline := peer.next_timer()) is not None and deadline <= now:
            peer.handle_timer(now)
        while peer.next_event() is not None:
            pass
    assert _answers_join(peer, now + 0.01)


@FUZZ
@given(st.lists(st.tuples(datagrams, st.integers(0, 3)), min_size=1, max_size=4))
def test_lobby_survives_fuzzed_datagrams(inputs: list[tuple[bytes, int]]) -> None:
    lobby = _lobby()
    lobby.receive_datagram(_heartbeat(1), _member(0), T0)
    for data, sender in inputs:
        lobby.receive_datagram(data, _member(sender), T0)
        lobby.datagrams_to_send(T0)
        while lobby.next_event() is not None:
            pass
    request = encode(Packet(header=Header(game_id=0), payload=ExtraInfoRequest(wanted_contacts=4)))
    lobby.receive_datagram(request, _member(9), T0 + 1.0)
    assert any(addr == _member(9) for _, addr in lobby.datagrams_to_send(T0 + 1.0))


@FUZZ
@given(st.lists(datagrams, min_size=1, max_size=4))
def test_lobby_client_survives_fuzzed_datagrams(inputs: list[bytes]) -> None:
    client = LobbyClient(config=LobbyClientConfig(), lobby=LOBBY, port=1)
    client.request_games(T0)
    client.datagrams_to_send(T0)
    for data in inputs:
        client.receive_datagram(data, LOBBY, T0)
        while client.next_event() is not None:
            pass
    client.request_games(T0 + 1.0)
    assert client.datagrams_to_send(T0 + 1.0)
