"""Hypothesis strategies for every Silac message (shared by the gossip tests)."""

from __future__ import annotations

import ipaddress

from hypothesis import strategies as st

from lagless.gossip import (
    MAX_NAME_BYTES,
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
    Packet,
    RejectCode,
    RetransmissionRequest,
    Tail,
)

u8 = st.integers(0, 255)
u16 = st.integers(0, 0xFFFF)
u32 = st.integers(0, 2**32 - 1)
f32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
vec3 = st.tuples(f32, f32, f32)
ipv4 = st.integers(0, 2**32 - 1).map(lambda n: str(ipaddress.IPv4Address(n)))
ipv6 = st.integers(0, 2**128 - 1).map(lambda n: str(ipaddress.IPv6Address(n)))
address = st.tuples(st.one_of(ipv4, ipv6), u16)
name = st.text(max_size=MAX_NAME_BYTES).filter(lambda s: len(s.encode()) <= MAX_NAME_BYTES)

avatar = st.builds(
    AvatarState,
    avatar_id=u32,
    position=vec3,
    facing=vec3,
    state=u8,
    weapon=st.integers(0, 2**24 - 1),
)
interaction = st.one_of(
    st.just(Interaction(kind=InteractionKind.NONE)),
    st.builds(
        Interaction,
        kind=st.sampled_from([InteractionKind.SHOT, InteractionKind.PICKUP]),
        serial=u8,
        target=st.integers(0, 2**20 - 1),
    ),
)
record = st.builds(
    InteractionRecord,
    interaction=interaction,
    position=vec3,
    facing=vec3,
    first_message=u32,
    length=u32,
)


@st.composite
def game_entry(draw: st.DrawFn) -> GameEntry:
    v6 = draw(st.booleans())
    host = ipv6 if v6 else ipv4
    return GameEntry(
        game_id=draw(u32),
        map_id=draw(u32),
        game_type=draw(u32),
        participants=draw(st.integers(0, 2**31 - 1)),
        ipv6=v6,
        contacts=tuple(draw(st.lists(st.tuples(host, u16), max_size=4))),
    )


game_payload = st.one_of(
    st.builds(
        JoinRequest, avatar=avatar, model=u32, name=name, map_id=u32, game_type=u32, origin=address
    ),
    st.builds(JoinAccept, avatar=avatar, model=u32, name=name, origin=st.none() | address),
    st.builds(JoinReject, code=st.sampled_from(RejectCode), rejecter_id=u32),
    st.builds(Leave, avatar_id=u32),
    st.builds(AvatarInfo, avatar=avatar, interaction=interaction, rollback=interaction),
    st.builds(InteractionInfo, avatar_id=u32, records=st.lists(record, max_size=4).map(tuple)),
)
server_payload = st.one_of(
    st.builds(GamesList, games=st.lists(game_entry(), max_size=3).map(tuple)),
    st.builds(GameInfo, game=game_entry()),
    st.builds(ExtraInfoRequest, wanted_contacts=u32),
    st.builds(Heartbeat, map_id=u32, game_type=u32),
)
header = st.builds(
    Header, hop=u8, sender_port=u16, game_id=u32, message_number=u32, last_received=u32
)
tail = st.builds(Tail, free_bandwidth=u32, recipients=st.lists(u32, max_size=8).map(tuple))
retransmission = st.builds(
    RetransmissionRequest, avatar_ids=st.lists(u32, min_size=1, max_size=8).map(tuple)
)
packet = st.one_of(
    st.builds(
        Packet,
        header=header,
        payload=game_payload,
        tail=tail,
        retransmission=st.none() | retransmission,
    ),
    st.builds(Packet, header=header, payload=server_payload),
)
