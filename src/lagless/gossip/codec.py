"""Silac wire codec: `encode`, `decode` and `measure` for every message of spec 002 §2.

Implements spec 002 §2.0–§2.11 (Fig. 2.3–2.11, Table 2.1, 2.2). Full layouts and the decision
list are in ``docs/protocol/silac.md``. Decisions (spec 002 §7), each pinned by a test in
``tests/gossip/test_codec.py``:

* **Big-endian** (network byte order) for every field, as the RFC-style figures suggest; positions
  and facings are IEEE float32, ids and counters u32 (§7.3; ``test_header_layout``).
* State/weapon share one u32: state in the high 8 bits, weapon in the low 24 (§7.2;
  ``test_avatar_info_layout``).
* The name row (drawn as 32 bits) is a u32 byte length (≤ 64) followed by the UTF-8 name padded
  with zeros to a 4-byte boundary; an empty name keeps the drawn 40-byte accept (§7.2;
  ``test_accept_layout``).
* Address block (join-request origin, third-party accept): u16 port, u8 family (4 or 6), u8 zero,
  then 4 or 16 address bytes (§7.4; ``test_join_request_layout``).
* Reject = u32 code (1–5) + u32 rejecter id; leave = u32 avatar id; extra-info request = u32
  wanted contacts; heartbeat = u32 map id + u32 game type (§7.1, §7.12; ``test_small_layouts``).
* Type 10 block = code u32 + position + facing + first message u32 + length u32 = 36 bytes, so one
  interaction gives 8 + 36 bytes (§7.13; ``test_interaction_info_layout``).
* Games list: p bit = most significant bit of the participant-count word (1/31 split); contact
  port in a u32 row, at most 65535 (§7.2; ``test_games_list_layout``).
* The flag-64 block (u32 count 1–64, then u32 ids) comes after the tail, "appended to the end"
  (§2.5.7; ``test_retransmission_block_after_tail``).
* Canonical form only: non-finite floats, non-zero padding, trailing bytes, unknown types or
  interaction kinds all raise `DecodeError`, so ``encode(decode(b)) == b`` for every accepted
  ``b`` (``test_decode_is_canonical``).
"""

from __future__ import annotations

import functools
import ipaddress
import math
import struct
from typing import Final

from lagless._types import Address
from lagless.errors import LocalProtocolError
from lagless.gossip.messages import (
    MAX_CONTACTS,
    MAX_GAMES,
    MAX_INTERACTIONS,
    MAX_NAME_BYTES,
    MAX_RECIPIENTS,
    MAX_RETRANSMIT_IDS,
    RETRANSMISSION_FLAG,
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
    InteractionRecord,
    JoinAccept,
    JoinReject,
    JoinRequest,
    Leave,
    MessageType,
    Packet,
    Payload,
    RejectCode,
    RetransmissionRequest,
    Tail,
)
from lagless.wire import Buffer, DecodeError

__all__ = [
    "AVATAR_INFO_SIZE",
    "HEADER_SIZE",
    "LAST_RECEIVED_OFFSET",
    "decode",
    "encode",
    "measure",
    "with_last_received",
]

HEADER_SIZE: Final = 20  # bytes, Fig. 2.3
AVATAR_INFO_SIZE: Final = 40  # bytes, Fig. 2.9
LAST_RECEIVED_OFFSET: Final = 12  # bytes: offset of the per-recipient header field (bit 96)

_HEADER: Final = struct.Struct(">BBHIIII")
_AVATAR: Final = struct.Struct(">I3f3fI")  # id, position, facing, state:8|weapon:24
_U32: Final = struct.Struct(">I")
_U32X2: Final = struct.Struct(">II")
_RECORD: Final = struct.Struct(">I3f3fII")
_GAME: Final = struct.Struct(">IIIII")
_ADDR_HEAD: Final = struct.Struct(">HBB")
_P_BIT: Final = 1 << 31
# header + avatar info + tail head: the fast path of `decode` for type 9 (no flag)
_AVATAR_INFO_FAST: Final = struct.Struct(">BBHIIII" + "I3f3fI" + "II" + "II")
_AVATAR_INFO_SIZE_BYTES: Final = struct.pack(">I", 40)
_VALID_TYPES: Final = frozenset(int(t) for t in MessageType)


# -- helpers ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=65536)
def _ip_bytes(host: str) -> bytes:
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        raise LocalProtocolError(
            f"address host must be an IPv4 or IPv6 literal, got {host!r}"
        ) from None


def _finite(values: tuple[float, ...]) -> tuple[float, float, float]:
    if not all(math.isfinite(v) for v in values):
        raise DecodeError("non-finite float in position or facing")
    return (values[0], values[1], values[2])


def _padded(n: int) -> int:
    return (n + 3) & ~3


def _name_size(name: str) -> int:
    return 4 + _padded(len(name.encode("utf-8")))


def _addr_size(addr: Address) -> int:
    return 4 + len(_ip_bytes(addr[0]))


def _push_addr(buf: Buffer, addr: Address) -> None:
    raw = _ip_bytes(addr[0])
    if not 0 <= addr[1] <= 0xFFFF:
        raise LocalProtocolError(f"port must be in [0, 65535], got {addr[1]}")
    buf.push_bytes(_ADDR_HEAD.pack(addr[1], 4 if len(raw) == 4 else 6, 0))
    buf.push_bytes(raw)


def _pull_addr(buf: Buffer) -> Address:
    port, family, zero = _ADDR_HEAD.unpack(buf.pull_bytes(4))
    if zero != 0 or family not in (4, 6):
        raise DecodeError(f"address block: family must be 4 or 6 with a zero byte, got {family}")
    raw = buf.pull_bytes(4 if family == 4 else 16)
    return (_ip_text(raw), port)


@functools.lru_cache(maxsize=65536)
def _ip_text(raw: bytes) -> str:
    return str(ipaddress.ip_address(raw))


def _push_name(buf: Buffer, name: str) -> None:
    raw = name.encode("utf-8")
    buf.push_bytes(_U32.pack(len(raw)))
    buf.push_bytes(raw + bytes(_padded(len(raw)) - len(raw)))


def _pull_name(buf: Buffer) -> str:
    (n,) = _U32.unpack(buf.pull_bytes(4))
    if n > MAX_NAME_BYTES:
        raise DecodeError(f"name length {n} exceeds {MAX_NAME_BYTES} bytes")
    raw = buf.pull_bytes(_padded(n))
    if any(raw[n:]):
        raise DecodeError("name padding is not zero")
    try:
        return raw[:n].decode("utf-8")
    except UnicodeDecodeError:
        raise DecodeError("name is not UTF-8") from None


def _push_avatar(buf: Buffer, a: AvatarState) -> None:
    buf.push_bytes(_AVATAR.pack(a.avatar_id, *a.position, *a.facing, (a.state << 24) | a.weapon))


def _pull_avatar(buf: Buffer) -> AvatarState:
    v = _AVATAR.unpack(buf.pull_bytes(_AVATAR.size))
    return AvatarState(
        avatar_id=v[0],
        position=_finite(v[1:4]),
        facing=_finite(v[4:7]),
        state=v[7] >> 24,
        weapon=v[7] & 0xFFFFFF,
    )


def _pull_count(buf: Buffer, limit: int, item_size: int, what: str) -> int:
    n: int = _U32.unpack(buf.pull_bytes(4))[0]
    if n > limit or n * item_size > buf.remaining:
        raise DecodeError(f"{what} count {n} exceeds the limit {limit} or the datagram")
    return n


@functools.lru_cache(maxsize=4096)
def _interaction(code: int) -> Interaction:
    # Interactions are immutable; a swarm's frames carry few distinct codes (mostly 0).
    try:
        return Interaction.from_code(code)
    except ValueError:
        raise DecodeError(f"invalid interaction code {code:#010x}") from None


# -- payloads ---------------------------------------------------------------------------------


def _game_size(g: GameEntry) -> int:
    return _GAME.size + len(g.contacts) * (4 + (16 if g.ipv6 else 4))


def _payload_size(p: Payload) -> int:
    match p:
        case AvatarInfo():
            return AVATAR_INFO_SIZE
        case JoinAccept(name=name, origin=origin):
            return (
                _AVATAR.size + 4 + _name_size(name) + (0 if origin is None else _addr_size(origin))
            )
        case JoinRequest(name=name, origin=origin):
            return _AVATAR.size + 12 + _name_size(name) + _addr_size(origin)
        case JoinReject() | Heartbeat():
            return 8
        case Leave() | ExtraInfoRequest():
            return 4
        case InteractionInfo(records=records):
            return 8 + len(records) * _RECORD.size
        case GamesList(games=games):
            return 4 + sum(_game_size(g) for g in games)
        case GameInfo(game=game):
            return 4 + _game_size(game)
    raise LocalProtocolError(f"not a Silac payload: {type(p).__name__}")  # pragma: no cover - typed


def _push_game(buf: Buffer, g: GameEntry) -> None:
    word = g.participants | (_P_BIT if g.ipv6 else 0)
    buf.push_bytes(_GAME.pack(g.game_id, g.map_id, g.game_type, word, len(g.contacts)))
    for host, port in g.contacts:
        raw = _ip_bytes(host)
        if len(raw) != (16 if g.ipv6 else 4):
            raise LocalProtocolError(f"contact {host!r} does not match the game's p bit")
        if not 0 <= port <= 0xFFFF:
            raise LocalProtocolError(f"contact port must be in [0, 65535], got {port}")
        buf.push_bytes(raw + _U32.pack(port))


def _pull_game(buf: Buffer) -> GameEntry:
    game_id, map_id, game_type, word, n = _GAME.unpack(buf.pull_bytes(_GAME.size))
    ipv6 = bool(word & _P_BIT)
    size = 16 if ipv6 else 4
    if n > MAX_CONTACTS or n * (size + 4) > buf.remaining:
        raise DecodeError(f"contact count {n} exceeds the limit {MAX_CONTACTS} or the datagram")
    contacts = []
    for _ in range(n):
        host = str(ipaddress.ip_address(buf.pull_bytes(size)))
        (port,) = _U32.unpack(buf.pull_bytes(4))
        if port > 0xFFFF:
            raise DecodeError(f"contact port {port} exceeds 65535")
        contacts.append((host, port))
    return GameEntry(
        game_id=game_id,
        map_id=map_id,
        game_type=game_type,
        participants=word & ~_P_BIT,
        ipv6=ipv6,
        contacts=tuple(contacts),
    )


def _push_payload(buf: Buffer, p: Payload) -> None:
    match p:
        case AvatarInfo(avatar=a, interaction=i, rollback=r):
            _push_avatar(buf, a)
            buf.push_bytes(_U32X2.pack(i.code, r.code))
        case JoinAccept(avatar=a, model=model, name=name, origin=origin):
            _push_avatar(buf, a)
            buf.push_bytes(_U32.pack(model))
            _push_name(buf, name)
            if origin is not None:
                _push_addr(buf, origin)
        case JoinRequest():
            _push_avatar(buf, p.avatar)
            buf.push_bytes(_U32.pack(p.model))
            _push_name(buf, p.name)
            buf.push_bytes(_U32X2.pack(p.map_id, p.game_type))
            _push_addr(buf, p.origin)
        case JoinReject(code=code, rejecter_id=rid):
            buf.push_bytes(_U32X2.pack(int(code), rid))
        case Leave(avatar_id=aid):
            buf.push_bytes(_U32.pack(aid))
        case InteractionInfo(avatar_id=aid, records=records):
            buf.push_bytes(_U32X2.pack(aid, len(records)))
            for rec in records:
                buf.push_bytes(
                    _RECORD.pack(
                        rec.interaction.code,
                        *rec.position,
                        *rec.facing,
                        rec.first_message,
                        rec.length,
                    )
                )
        case GamesList(games=games):
            buf.push_bytes(_U32.pack(len(games)))
            for g in games:
                _push_game(buf, g)
        case GameInfo(game=game):
            buf.push_bytes(_U32.pack(1))
            _push_game(buf, game)
        case ExtraInfoRequest(wanted_contacts=n):
            buf.push_bytes(_U32.pack(n))
        case Heartbeat(map_id=map_id, game_type=game_type):
            buf.push_bytes(_U32X2.pack(map_id, game_type))


def _pull_payload(buf: Buffer, mtype: MessageType) -> Payload:
    if mtype is MessageType.AVATAR_INFO:
        avatar = _pull_avatar(buf)
        code, rollback = _U32X2.unpack(buf.pull_bytes(8))
        return AvatarInfo(
            avatar=avatar, interaction=_interaction(code), rollback=_interaction(rollback)
        )
    if mtype is MessageType.JOIN_ACCEPT:
        avatar = _pull_avatar(buf)
        (model,) = _U32.unpack(buf.pull_bytes(4))
        name = _pull_name(buf)
        origin = _pull_addr(buf) if not buf.eof() else None
        return JoinAccept(avatar=avatar, model=model, name=name, origin=origin)
    if mtype is MessageType.JOIN_REQUEST:
        avatar = _pull_avatar(buf)
        (model,) = _U32.unpack(buf.pull_bytes(4))
        name = _pull_name(buf)
        map_id, game_type = _U32X2.unpack(buf.pull_bytes(8))
        return JoinRequest(
            avatar=avatar,
            model=model,
            name=name,
            map_id=map_id,
            game_type=game_type,
            origin=_pull_addr(buf),
        )
    if mtype is MessageType.JOIN_REJECT:
        code, rid = _U32X2.unpack(buf.pull_bytes(8))
        try:
            reject = RejectCode(code)
        except ValueError:
            raise DecodeError(f"reject code {code} is not in 1-5") from None
        return JoinReject(code=reject, rejecter_id=rid)
    if mtype is MessageType.LEAVE:
        return Leave(avatar_id=_U32.unpack(buf.pull_bytes(4))[0])
    if mtype is MessageType.INTERACTION_INFO:
        (aid,) = _U32.unpack(buf.pull_bytes(4))
        n = _pull_count(buf, MAX_INTERACTIONS, _RECORD.size, "interaction")
        records = []
        for _ in range(n):
            v = _RECORD.unpack(buf.pull_bytes(_RECORD.size))
            records.append(
                InteractionRecord(
                    interaction=_interaction(v[0]),
                    position=_finite(v[1:4]),
                    facing=_finite(v[4:7]),
                    first_message=v[7],
                    length=v[8],
                )
            )
        return InteractionInfo(avatar_id=aid, records=tuple(records))
    if mtype is MessageType.GAMES_LIST:
        n = _pull_count(buf, MAX_GAMES, _GAME.size, "game")
        return GamesList(games=tuple(_pull_game(buf) for _ in range(n)))
    if mtype is MessageType.GAME_INFO:
        (n,) = _U32.unpack(buf.pull_bytes(4))
        if n != 1:
            raise DecodeError(f"game info must hold exactly 1 game, got {n}")
        return GameInfo(game=_pull_game(buf))
    if mtype is MessageType.EXTRA_INFO_REQUEST:
        return ExtraInfoRequest(wanted_contacts=_U32.unpack(buf.pull_bytes(4))[0])
    map_id, game_type = _U32X2.unpack(buf.pull_bytes(8))
    return Heartbeat(map_id=map_id, game_type=game_type)


# -- public -----------------------------------------------------------------------------------


def measure(packet: Packet) -> int:
    """Return ``len(encode(packet))`` without encoding, in bytes.

    Args:
        packet: The message.

    Returns:
        20 + payload + (8 + 4k tail) + (4 + 4n retransmission block).

    Raises:
        LocalProtocolError: an address is not an IP literal.
    """
    size = HEADER_SIZE + _payload_size(packet.payload)
    if packet.tail is not None:
        size += 8 + 4 * len(packet.tail.recipients)
    if packet.retransmission is not None:
        size += 4 + 4 * len(packet.retransmission.avatar_ids)
    return size


def encode(packet: Packet) -> bytes:
    """Encode one datagram: header, game data, tail, then the flag-64 block (spec 002 §2).

    Args:
        packet: The message.

    Returns:
        The datagram bytes.

    Raises:
        LocalProtocolError: an address is not an IP literal, a port is out of range, or a games
            list contact does not match its p bit.
    """
    h = packet.header
    mtype = int(packet.message_type)
    if packet.retransmission is not None:
        mtype |= RETRANSMISSION_FLAG
    data_size = _payload_size(packet.payload)
    buf = Buffer()
    buf.push_bytes(
        _HEADER.pack(
            mtype,
            h.hop,
            h.sender_port,
            h.game_id,
            h.message_number,
            h.last_received,
            data_size,
        )
    )
    _push_payload(buf, packet.payload)
    if packet.tail is not None:
        buf.push_bytes(_U32X2.pack(packet.tail.free_bandwidth, len(packet.tail.recipients)))
        buf.push_bytes(b"".join(_U32.pack(r) for r in packet.tail.recipients))
    if packet.retransmission is not None:
        ids = packet.retransmission.avatar_ids
        buf.push_bytes(_U32.pack(len(ids)) + b"".join(_U32.pack(i) for i in ids))
    return buf.data


def decode(data: bytes) -> Packet:
    """Decode one datagram; checks run in the order listed in ``docs/protocol/silac.md``.

    Args:
        data: The datagram bytes.

    Returns:
        The packet.

    Raises:
        DecodeError: the bytes are not one canonical Silac datagram (the only exception raised).
    """
    try:
        return _decode(data)
    except DecodeError:
        raise
    except (ValueError, struct.error) as exc:
        raise DecodeError(f"invalid Silac datagram: {exc}") from None


def _decode_avatar_info(data: bytes) -> Packet:
    """Fast path for the most frequent message (> 90 % of traffic, spec 002 §3.3)."""
    v = _AVATAR_INFO_FAST.unpack_from(data)
    k = v[18]
    if k > MAX_RECIPIENTS or len(data) != _AVATAR_INFO_FAST.size + 4 * k:
        raise DecodeError(f"avatar info with {k} recipients has the wrong length {len(data)}")
    avatar = AvatarState(
        avatar_id=v[7],
        position=_finite(v[8:11]),
        facing=_finite(v[11:14]),
        state=v[14] >> 24,
        weapon=v[14] & 0xFFFFFF,
    )
    return Packet(
        header=Header(
            hop=v[1], sender_port=v[2], game_id=v[3], message_number=v[4], last_received=v[5]
        ),
        payload=AvatarInfo(
            avatar=avatar, interaction=_interaction(v[15]), rollback=_interaction(v[16])
        ),
        tail=Tail(
            free_bandwidth=v[17],
            recipients=struct.unpack_from(f">{k}I", data, _AVATAR_INFO_FAST.size),
        ),
    )


def _decode(data: bytes) -> Packet:
    if (
        len(data) >= _AVATAR_INFO_FAST.size
        and data[0] == MessageType.AVATAR_INFO
        and data[16:20] == _AVATAR_INFO_SIZE_BYTES
    ):
        return _decode_avatar_info(data)
    buf = Buffer(data=data)
    raw_type, hop, port, game_id, number, last, size = _HEADER.unpack(buf.pull_bytes(HEADER_SIZE))
    flagged = bool(raw_type & RETRANSMISSION_FLAG)
    base = raw_type & ~RETRANSMISSION_FLAG
    if base not in _VALID_TYPES:
        raise DecodeError(f"unknown message type {raw_type}")
    mtype = MessageType(base)
    if flagged and not mtype.has_tail:
        raise DecodeError(f"retransmission flag on info-server type {base}")
    if size > buf.remaining:
        raise DecodeError(f"data size {size} exceeds the {buf.remaining} bytes left")
    payload = _pull_payload(Buffer(data=buf.pull_bytes(size)), mtype)
    if _payload_size(payload) != size:
        raise DecodeError(f"data size {size} does not match the {mtype.name} payload")
    tail = None
    if mtype.has_tail:
        free_bw = _U32.unpack(buf.pull_bytes(4))[0]
        k = _pull_count(buf, MAX_RECIPIENTS, 4, "recipient")
        tail = Tail(
            free_bandwidth=free_bw,
            recipients=tuple(_U32.unpack(buf.pull_bytes(4))[0] for _ in range(k)),
        )
    retransmission = None
    if flagged:
        n = _pull_count(buf, MAX_RETRANSMIT_IDS, 4, "retransmission id")
        retransmission = RetransmissionRequest(
            avatar_ids=tuple(_U32.unpack(buf.pull_bytes(4))[0] for _ in range(n))
        )
    if not buf.eof():
        raise DecodeError(f"{buf.remaining} trailing bytes after the message")
    header = Header(
        hop=hop, sender_port=port, game_id=game_id, message_number=number, last_received=last
    )
    return Packet(header=header, payload=payload, tail=tail, retransmission=retransmission)


def with_last_received(data: bytes, value: int) -> bytes:
    """Return ``data`` with the header's per-recipient "last received" field set to ``value``.

    Lets a sender encode a message once and patch the one field that differs per recipient
    (spec 002 §2.11).

    Args:
        data: An encoded datagram (at least 20 bytes).
        value: The u32 message number.

    Raises:
        LocalProtocolError: ``data`` is shorter than a header or ``value`` is not a u32.
    """
    if len(data) < HEADER_SIZE or not 0 <= value < (1 << 32):
        raise LocalProtocolError("with_last_received needs a datagram of >= 20 bytes and a u32")
    end = LAST_RECEIVED_OFFSET + 4
    return data[:LAST_RECEIVED_OFFSET] + _U32.pack(value) + data[end:]
