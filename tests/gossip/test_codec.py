"""Silac wire codec (spec 002 §2): round trips, exact layouts, and only DecodeError on bad bytes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.gossip import (
    AVATAR_INFO_SIZE,
    HEADER_SIZE,
    MAX_RECIPIENTS,
    AvatarInfo,
    AvatarState,
    ExtraInfoRequest,
    GameEntry,
    GameInfo,
    GamesList,
    Header,
    Heartbeat,
    Interaction,
    InteractionInfo,
    InteractionKind,
    InteractionRecord,
    JoinAccept,
    JoinReject,
    JoinRequest,
    Leave,
    MessageType,
    Packet,
    RejectCode,
    RetransmissionRequest,
    Tail,
    decode,
    encode,
    measure,
    with_last_received,
)
from lagless.wire import DecodeError

from .strategies import packet

AVATAR = AvatarState(
    avatar_id=0x01020304, position=(1.0, 2.0, 3.0), facing=(0.0, 1.0, 0.0), state=7, weapon=0xABCDEF
)
HEADER = Header(hop=1, sender_port=0x1F90, game_id=0xCAFEBABE, message_number=42, last_received=41)


def _avatar_bytes() -> bytes:
    return (
        bytes.fromhex("01020304")
        + struct.pack(">3f", 1.0, 2.0, 3.0)
        + struct.pack(">3f", 0.0, 1.0, 0.0)
        + bytes.fromhex("07abcdef")
    )


def _tail(k: int = 0) -> Tail:
    return Tail(free_bandwidth=1000, recipients=tuple(range(10, 10 + k)))


@given(packet)
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_roundtrip(p: Packet) -> None:
    data = encode(p)
    assert decode(data) == p
    assert measure(p) == len(data)


@given(packet)
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_decode_is_canonical(p: Packet) -> None:
    data = encode(p)
    assert encode(decode(data)) == data


@given(st.binary(max_size=300))
@settings(max_examples=1000)
def test_arbitrary_bytes_only_decode_error(data: bytes) -> None:
    try:
        p = decode(data)
    except DecodeError:
        return
    assert encode(p) == data


@given(packet, st.data())
@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
def test_mutated_datagrams_only_decode_error(p: Packet, data: st.DataObject) -> None:
    raw = bytearray(encode(p))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(raw)))
    for candidate in (bytes(raw), bytes(raw[:cut]), bytes(raw) + b"\x00"):
        try:
            decoded = decode(candidate)
        except DecodeError:
            continue
        assert encode(decoded) == candidate


def test_header_layout() -> None:
    p = Packet(header=HEADER, payload=Leave(avatar_id=5), tail=_tail())
    data = encode(p)
    # type 3, hop 1, port 8080, game id, msg no 42, last rx 41, data size 4: big-endian
    assert (
        data[:HEADER_SIZE].hex()
        == "0301" + "1f90" + "cafebabe" + "0000002a" + "00000029" + "00000004"
    )
    assert HEADER_SIZE == 20


def test_avatar_info_layout() -> None:
    shot = Interaction(kind=InteractionKind.SHOT, serial=3, target=9)
    pickup = Interaction(kind=InteractionKind.PICKUP, serial=0, target=0x12345)
    p = Packet(
        header=HEADER,
        payload=AvatarInfo(avatar=AVATAR, interaction=shot, rollback=pickup),
        tail=_tail(2),
    )
    data = encode(p)
    assert data[0] == 9
    payload = data[HEADER_SIZE : HEADER_SIZE + AVATAR_INFO_SIZE]
    assert payload == _avatar_bytes() + bytes.fromhex("10300009") + bytes.fromhex("20012345")
    assert len(data) == 20 + 40 + 8 + 4 * 2  # 68 + 4k (spec 002 §2.9)


def test_interaction_code_layout() -> None:
    i = Interaction(kind=InteractionKind.PICKUP, serial=0xAB, target=0xFFFFF)
    assert i.code == 0x2ABFFFFF
    assert Interaction.from_code(i.code) == i
    with pytest.raises(LocalProtocolError):
        Interaction(kind=InteractionKind.SHOT, target=1 << 20)


def test_tail_layout_is_8_plus_4k() -> None:
    for k in (0, 1, 5):
        p = Packet(header=HEADER, payload=Leave(avatar_id=5), tail=_tail(k))
        data = encode(p)
        assert len(data) == 20 + 4 + 8 + 4 * k
        tail = data[24:]
        assert tail[:8] == struct.pack(">II", 1000, k)
        assert tail[8:] == b"".join(struct.pack(">I", 10 + i) for i in range(k))


def test_accept_layout() -> None:
    p = Packet(header=HEADER, payload=JoinAccept(avatar=AVATAR, model=77), tail=_tail())
    data = encode(p)
    assert data[0] == 1
    assert struct.unpack(">I", data[16:20])[0] == 40  # drawn size with an empty name
    assert data[20:60] == _avatar_bytes() + struct.pack(">II", 77, 0)
    named = encode(
        Packet(header=HEADER, payload=JoinAccept(avatar=AVATAR, name="abcde"), tail=_tail())
    )
    assert struct.unpack(">I", named[16:20])[0] == 40 + 8
    assert named[56:68] == struct.pack(">I", 5) + b"abcde\x00\x00\x00"


def test_join_request_layout() -> None:
    req = JoinRequest(
        avatar=AVATAR, model=1, name="", map_id=2, game_type=3, origin=("10.1.2.3", 4000)
    )
    data = encode(Packet(header=HEADER, payload=req, tail=_tail()))
    assert data[0] == 0
    body = data[20 : 20 + 56]
    assert body[:32] == _avatar_bytes()
    assert body[32:48] == struct.pack(">IIII", 1, 0, 2, 3)
    assert body[48:] == bytes.fromhex("0fa0" + "04" + "00" + "0a010203")
    v6 = JoinRequest(avatar=AVATAR, origin=("::1", 1))
    body6 = encode(Packet(header=HEADER, payload=v6, tail=_tail()))[20 + 48 :]
    assert body6[:20] == bytes.fromhex("0001" + "06" + "00") + bytes(15) + b"\x01"


def test_small_layouts() -> None:
    reject = encode(
        Packet(
            header=HEADER,
            payload=JoinReject(code=RejectCode.NAME_TAKEN, rejecter_id=9),
            tail=_tail(),
        )
    )
    assert reject[0] == 2
    assert reject[20:28] == struct.pack(">II", 4, 9)
    leave = encode(Packet(header=HEADER, payload=Leave(avatar_id=0xDEADBEEF), tail=_tail()))
    assert leave[0] == 3
    assert leave[20:24] == bytes.fromhex("deadbeef")
    extra = encode(Packet(header=HEADER, payload=ExtraInfoRequest(wanted_contacts=6)))
    assert extra[0] == 34
    assert extra[20:] == struct.pack(">I", 6)
    beat = encode(Packet(header=HEADER, payload=Heartbeat(map_id=1, game_type=2)))
    assert beat[0] == 35
    assert beat[20:] == struct.pack(">II", 1, 2)


def test_reject_codes_1_to_5_only() -> None:
    assert [int(c) for c in RejectCode] == [1, 2, 3, 4, 5]
    data = bytearray(
        encode(Packet(header=HEADER, payload=JoinReject(code=RejectCode(1)), tail=_tail()))
    )
    for bad in (0, 6):
        data[20:24] = struct.pack(">I", bad)
        with pytest.raises(DecodeError):
            decode(bytes(data))


def test_interaction_info_layout() -> None:
    i = Interaction(kind=InteractionKind.PICKUP, serial=1, target=2)
    rec = InteractionRecord(
        interaction=i, position=(1.0, 2.0, 3.0), facing=(0.0, 1.0, 0.0), first_message=5, length=3
    )
    data = encode(
        Packet(header=HEADER, payload=InteractionInfo(avatar_id=8, records=(rec,)), tail=_tail())
    )
    assert data[0] == 10
    assert struct.unpack(">I", data[16:20])[0] == 8 + 36
    assert data[20:28] == struct.pack(">II", 8, 1)
    assert data[28:64] == struct.pack(">I3f3fII", i.code, 1.0, 2.0, 3.0, 0.0, 1.0, 0.0, 5, 3)


def test_games_list_layout() -> None:
    g4 = GameEntry(game_id=1, map_id=2, game_type=3, participants=4, contacts=(("1.2.3.4", 80),))
    g6 = GameEntry(game_id=5, participants=2**31 - 1, ipv6=True, contacts=(("::2", 81),))
    data = encode(Packet(header=HEADER, payload=GamesList(games=(g4, g6))))
    assert data[0] == 32
    assert len(data) == 20 + struct.unpack(">I", data[16:20])[0]
    body = data[20:]
    assert body[:4] == struct.pack(">I", 2)
    assert body[4:24] == struct.pack(">IIIII", 1, 2, 3, 4, 1)
    assert body[24:32] == bytes([1, 2, 3, 4]) + struct.pack(">I", 80)
    assert body[32:52] == struct.pack(">IIIII", 5, 0, 0, 0xFFFFFFFF, 1)  # p bit = MSB
    assert body[52:72] == bytes(15) + b"\x02" + struct.pack(">I", 81)
    info = encode(Packet(header=HEADER, payload=GameInfo(game=g4)))
    assert info[0] == 33
    assert info[20:24] == struct.pack(">I", 1)
    bad = bytearray(info)
    bad[20:24] = struct.pack(">I", 2)
    with pytest.raises(DecodeError):
        decode(bytes(bad))


def test_flag_is_or() -> None:
    p = Packet(
        header=HEADER,
        payload=AvatarInfo(avatar=AVATAR),
        tail=_tail(),
        retransmission=RetransmissionRequest(avatar_ids=(7,)),
    )
    assert encode(p)[0] == 9 | 64 == 73


def test_retransmission_block_after_tail() -> None:
    p = Packet(
        header=HEADER,
        payload=Leave(avatar_id=1),
        tail=_tail(1),
        retransmission=RetransmissionRequest(avatar_ids=(7, 8)),
    )
    data = encode(p)
    assert data[0] == 3 | 64
    assert data[24:36] == struct.pack(">III", 1000, 1, 10)  # the tail first
    assert data[36:] == struct.pack(">III", 2, 7, 8)  # then the request


def test_no_tail_and_no_flag_on_info_server_types() -> None:
    with pytest.raises(LocalProtocolError):
        Packet(header=HEADER, payload=Heartbeat(), tail=_tail())
    with pytest.raises(LocalProtocolError):
        Packet(header=HEADER, payload=Leave(avatar_id=1))
    data = bytearray(encode(Packet(header=HEADER, payload=Heartbeat())))
    data[0] |= 64
    with pytest.raises(DecodeError, match="flag"):
        decode(bytes(data))


@pytest.mark.parametrize("type_byte", [4, 8, 11, 31, 36, 63, 64, 128, 255])
def test_unknown_types_rejected(type_byte: int) -> None:
    data = bytearray(encode(Packet(header=HEADER, payload=Leave(avatar_id=1), tail=_tail())))
    data[0] = type_byte
    with pytest.raises(DecodeError):
        decode(bytes(data))


def test_type_ids_match_table_2_1() -> None:
    assert {t.name: int(t) for t in MessageType} == {
        "JOIN_REQUEST": 0,
        "JOIN_ACCEPT": 1,
        "JOIN_REJECT": 2,
        "LEAVE": 3,
        "AVATAR_INFO": 9,
        "INTERACTION_INFO": 10,
        "GAMES_LIST": 32,
        "GAME_INFO": 33,
        "EXTRA_INFO_REQUEST": 34,
        "HEARTBEAT": 35,
    }


def test_non_canonical_inputs_rejected() -> None:
    base = encode(Packet(header=HEADER, payload=AvatarInfo(avatar=AVATAR), tail=_tail()))
    nan = bytearray(base)
    nan[24:28] = struct.pack(">f", float("nan"))
    trailing = base + b"\x00"
    big_k = bytearray(base)
    big_k[64:68] = struct.pack(">I", MAX_RECIPIENTS + 1)
    wrong_size = bytearray(base)
    wrong_size[16:20] = struct.pack(">I", 36)
    named = bytearray(
        encode(Packet(header=HEADER, payload=JoinAccept(avatar=AVATAR, name="a"), tail=_tail()))
    )
    named[61] = 1  # non-zero name padding
    for bad in (nan, trailing, big_k, wrong_size, named):
        with pytest.raises(DecodeError):
            decode(bytes(bad))


def test_with_last_received_patches_one_field() -> None:
    data = encode(Packet(header=HEADER, payload=Leave(avatar_id=1), tail=_tail()))
    patched = with_last_received(data, 0x01020304)
    assert decode(patched).header.last_received == 0x01020304
    assert patched[:12] == data[:12]
    assert patched[16:] == data[16:]


def test_encode_refuses_non_ip_addresses() -> None:
    with pytest.raises(LocalProtocolError, match="IPv4 or IPv6"):
        encode(
            Packet(
                header=HEADER,
                payload=JoinRequest(avatar=AVATAR, origin=("host-a", 1)),
                tail=_tail(),
            )
        )
