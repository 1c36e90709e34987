"""The rollback datagrams (``lagless.sync.inputs``): round trips, budgets, and fuzzed decoding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.sync.arena import Arena
from lagless.sync.inputs import (
    MAX_INPUT_BYTES,
    DropNotice,
    InputPacket,
    SpectatePacket,
    SpectatorAck,
    decode_rollback_packet,
    encode_drop_notice,
    encode_input_packet,
    encode_spectate_packet,
    encode_spectator_ack,
)
from lagless.sync.rollback import RollbackPeer, RollbackSpectator

inputs_st = st.lists(st.binary(max_size=MAX_INPUT_BYTES), max_size=40)


@given(
    frame=st.integers(0, 2**32 - 1),
    ack=st.integers(-1, 2**31 - 1),
    advantage=st.floats(-2000, 2000, allow_nan=False),
    checksum_frame=st.integers(-1, 2**31 - 1),
    checksum=st.integers(0, 2**32 - 1),
    start=st.integers(0, 2**32 - 1),
    inputs=inputs_st,
)
def test_input_packets_round_trip(
    frame: int,
    ack: int,
    advantage: float,
    checksum_frame: int,
    checksum: int,
    start: int,
    inputs: list[bytes],
) -> None:
    data, carried = encode_input_packet(
        frame=frame,
        ack=ack,
        advantage=advantage,
        checksum_frame=checksum_frame,
        checksum=checksum,
        start=start,
        inputs=inputs,
    )
    assert len(data) <= 1200
    packet = decode_rollback_packet(data)
    assert isinstance(packet, InputPacket)
    assert (packet.frame, packet.ack, packet.start) == (frame, ack, start)
    assert (packet.checksum_frame, packet.checksum) == (checksum_frame, checksum)
    assert packet.advantage == pytest.approx(advantage, abs=1 / 32)
    assert list(packet.inputs) == inputs[:carried]


def test_the_budget_limits_what_one_datagram_carries() -> None:
    inputs = [bytes(63)] * 100
    data, carried = encode_input_packet(
        frame=0, ack=-1, advantage=0.0, checksum_frame=-1, checksum=0, start=0, inputs=inputs
    )
    assert carried == (1200 - 24) // 64
    assert len(data) <= 1200
    with pytest.raises(ValueError, match="limit"):
        encode_input_packet(
            frame=0, ack=-1, advantage=0, checksum_frame=-1, checksum=0, start=0, inputs=[bytes(65)]
        )


@given(
    players=st.integers(1, 8),
    count=st.integers(0, 300),
    start=st.integers(0, 2**32 - 1),
    checksum_frame=st.integers(-1, 2**31 - 1),
    checksum=st.integers(0, 2**32 - 1),
)
def test_spectate_packets_round_trip(
    players: int, count: int, start: int, checksum_frame: int, checksum: int
) -> None:
    frames = [tuple(bytes(((f + p) % 256,)) for p in range(players)) for f in range(count)]
    data, carried = encode_spectate_packet(
        checksum_frame=checksum_frame, checksum=checksum, start=start, frames=frames
    )
    assert len(data) <= 1200
    assert carried == min(count, 255, (1200 - 15) // (2 * players))
    packet = decode_rollback_packet(data)
    assert isinstance(packet, SpectatePacket)
    assert packet.start == start
    assert (packet.checksum_frame, packet.checksum) == (checksum_frame, checksum)
    assert list(packet.frames) == frames[:carried]


@given(
    player=st.integers(0, 7),
    done=st.booleans(),
    last=st.integers(-1, 2**31 - 1),
    start=st.integers(0, 2**32 - 1),
    inputs=st.lists(st.binary(max_size=MAX_INPUT_BYTES), max_size=300),
)
def test_drop_notices_round_trip(
    player: int, done: bool, last: int, start: int, inputs: list[bytes]
) -> None:
    data, carried = encode_drop_notice(
        player=player, done=done, last=last, start=start, inputs=inputs
    )
    assert len(data) <= 1200
    assert carried <= 255
    assert decode_rollback_packet(data) == DropNotice(
        player, done, last, start, tuple(inputs[:carried])
    )
    if carried < len(inputs):  # what did not fit would not have fitted either
        assert carried == 255 or len(data) + 1 + len(inputs[carried]) > 1200


def test_a_drop_notice_for_a_ninth_player_is_refused() -> None:
    with pytest.raises(ValueError, match="player"):
        encode_drop_notice(player=8, done=False, last=0, start=0, inputs=[])
    with pytest.raises(ValueError, match="last"):
        encode_drop_notice(player=1, done=False, last=-2, start=0, inputs=[])
    data, _ = encode_drop_notice(player=1, done=True, last=5, start=0, inputs=[])
    assert decode_rollback_packet(bytes((data[0], 8)) + data[2:]) is None  # player 8
    assert decode_rollback_packet(data[:2] + b"\x02" + data[3:]) is None  # done neither 0 nor 1
    assert decode_rollback_packet(data + b"\x00") is None  # trailing byte


@given(st.integers(-1, 2**31 - 1))
def test_spectator_acks_round_trip(ack: int) -> None:
    assert decode_rollback_packet(encode_spectator_ack(ack)) == SpectatorAck(ack)


@settings(max_examples=400)
@given(st.binary(max_size=300))
def test_decoding_garbage_never_raises(data: bytes) -> None:
    packet = decode_rollback_packet(data)
    if packet is not None:
        assert isinstance(packet, InputPacket | SpectatePacket | SpectatorAck | DropNotice)


@settings(max_examples=300)
@given(
    kind=st.sampled_from([0xB1, 0xB2, 0xB3, 0xB4]),
    body=st.binary(max_size=200),
)
def test_decoding_garbage_with_a_valid_kind_never_raises(kind: int, body: bytes) -> None:
    packet = decode_rollback_packet(bytes((kind,)) + body)
    if isinstance(packet, InputPacket):
        assert all(len(i) <= MAX_INPUT_BYTES for i in packet.inputs)
    if isinstance(packet, SpectatePacket):
        assert all(1 <= len(f) <= 8 for f in packet.frames)
    if isinstance(packet, DropNotice):
        assert 0 <= packet.player < 8
        assert packet.last >= -1
        assert len(packet.inputs) <= 255
        assert all(len(i) <= MAX_INPUT_BYTES for i in packet.inputs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=120), max_size=20))
def test_peers_survive_garbage(datagrams: list[bytes]) -> None:
    game = Arena(2)
    player = RollbackPeer(game, peer=0, peers=3)
    spectator = RollbackSpectator(game, peer=2, peers=3)
    for index, data in enumerate(datagrams):
        player.receive(1 + index % 2, data, index * 0.01)
        spectator.receive(0, data, index * 0.01)
        player.tick(index / 60, game.neutral_input)
        spectator.tick(index / 60, game.neutral_input)
    assert player.displayed_frame <= len(datagrams)
    assert player.stats.bytes_received == sum(len(d) for d in datagrams)
