"""netcode packets: the seven packet types, their writer and the ordered, never-raising reader.

Implements netcode-1.02 spec §6 (types §6.1, request §6.2, framing §6.3, bodies §6.4, read order
§6.5) and the request checks of §10.1 steps 1-7. Decisions:

* A connection request is recognised by a prefix byte of exactly ``0x00``; a prefix with type
  nibble 0 and a non-zero sequence count is an ``INVALID_PACKET_TYPE`` (the reference would read
  it as a request) (``test_netcode_codecs.py::test_prefix_0x10_is_invalid``).
* Without a read key the reader drops a non-request packet as ``NO_ENCRYPTION_MAPPING`` before
  looking at its size, as the reference reader does (``test_netcode_codecs.py::test_no_key``).
* **Insecure mode** (lagless extension, both ends must enable it): encrypted packets keep the
  prefix and sequence framing but carry their body in clear with no tag; the connection request
  is still 1078 bytes (so replies never amplify) and reads
  ``0x00 | "LAGLESS INS1\\0" | protocol id u64 | client id u64 | timeout i32 | user data 256 |
  zero padding``. A secure peer drops insecure requests as ``VERSION_MISMATCH`` and insecure
  packets as ``DECRYPT_FAILED``
  (``test_netcode_codecs.py::test_insecure_request_rejected_by_secure``).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Final, TypeAlias

from lagless.errors import LocalProtocolError
from lagless.transport.constants import (
    CHALLENGE_BODY_BYTES,
    CHALLENGE_TOKEN_BYTES,
    CONNECT_TOKEN_NONCE_BYTES,
    CONNECT_TOKEN_PRIVATE_BYTES,
    CONNECTION_REQUEST_BYTES,
    INSECURE_VERSION_INFO,
    KEEP_ALIVE_BODY_BYTES,
    MAC_BYTES,
    MAX_PAYLOAD_BYTES,
    MIN_ENCRYPTED_PACKET_BYTES,
    REPLAY_BUFFER_SIZE,
    USER_DATA_BYTES,
    VERSION_INFO,
)
from lagless.transport.crypto import PacketCipher, packet_associated_data
from lagless.transport.drops import DropReason
from lagless.transport.replay import EMPTY, ReplayWindow
from lagless.transport.token import (
    ConnectTokenError,
    ConnectTokenPrivate,
    decrypt_private_token,
    read_private_token,
)

_REQUEST_HEAD: Final = struct.Struct("<B13sQQ24s")
_INSECURE_REQUEST_HEAD: Final = struct.Struct("<B13sQQi256s")
_U64: Final = struct.Struct("<Q")
_FROM_BYTES: Final = int.from_bytes
_KEEP_ALIVE: Final = struct.Struct("<II")
_U64_LIMIT: Final = 1 << 64


class PacketType(enum.IntEnum):
    """netcode packet type codes (the low nibble of the prefix byte, spec §6.1)."""

    CONNECTION_REQUEST = 0
    """Client to server, unencrypted, 1078 bytes."""
    CONNECTION_DENIED = 1
    """Server to client: the server is full."""
    CONNECTION_CHALLENGE = 2
    """Server to client: carries the challenge token."""
    CONNECTION_RESPONSE = 3
    """Client to server: echoes the challenge token."""
    KEEP_ALIVE = 4
    """Both ways: keeps the connection alive; the server's carries the slot index."""
    PAYLOAD = 5
    """Both ways: 1 to 1200 application bytes."""
    DISCONNECT = 6
    """Both ways: ends the connection (sent 10 times)."""


SERVER_ACCEPTED_TYPES: Final = frozenset(
    {
        PacketType.CONNECTION_REQUEST,
        PacketType.CONNECTION_RESPONSE,
        PacketType.KEEP_ALIVE,
        PacketType.PAYLOAD,
        PacketType.DISCONNECT,
    }
)
"""Packet types a server reads (spec §6.1)."""
CLIENT_ACCEPTED_TYPES: Final = frozenset(
    {
        PacketType.CONNECTION_DENIED,
        PacketType.CONNECTION_CHALLENGE,
        PacketType.KEEP_ALIVE,
        PacketType.PAYLOAD,
        PacketType.DISCONNECT,
    }
)
"""Packet types a client reads (spec §6.1)."""
_TYPES: Final = tuple(PacketType)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionRequestPacket:
    """Type 0: the unencrypted request that carries the encrypted private token (spec §6.2)."""

    protocol_id: int
    """uint64 protocol id copied from the connect token."""
    expire_timestamp: int
    """uint64 expiry (Unix seconds) copied from the connect token."""
    token_nonce: bytes
    """24-byte connect-token nonce."""
    encrypted_private_token: bytes
    """1024-byte encrypted private connect token."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InsecureConnectionRequestPacket:
    """Type 0 in lagless insecure mode: the client's identity in clear (module docstring)."""

    protocol_id: int
    """uint64 protocol id."""
    client_id: int
    """uint64 client id the client claims (unauthenticated)."""
    timeout_seconds: int
    """Connection timeout in seconds (int32); zero or negative disables it."""
    user_data: bytes
    """256 bytes of application data."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedRequest:
    """A secure request whose private token decrypted and parsed (spec §10.1 steps 1-7)."""

    packet: ConnectionRequestPacket
    """The request as received."""
    token: ConnectTokenPrivate
    """Its decrypted private connect token."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionDeniedPacket:
    """Type 1: the server is full (empty body)."""

    sequence: int
    """uint64 packet sequence (the server's global sequence)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionChallengePacket:
    """Type 2: challenge sequence and encrypted challenge token (308-byte body)."""

    sequence: int
    """uint64 packet sequence (the server's global sequence)."""
    challenge_sequence: int
    """uint64 nonce of the challenge token."""
    challenge_token: bytes
    """300-byte encrypted challenge token."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionResponsePacket:
    """Type 3: the client echoes the challenge unchanged (308-byte body)."""

    sequence: int
    """uint64 packet sequence (the client's sequence)."""
    challenge_sequence: int
    """uint64 nonce of the challenge token."""
    challenge_token: bytes
    """300-byte encrypted challenge token."""


@dataclass(frozen=True, slots=True, kw_only=True)
class KeepAlivePacket:
    """Type 4: client index and max clients (8-byte body; both 0 from the client)."""

    sequence: int
    """uint64 packet sequence."""
    client_index: int
    """uint32 slot index assigned by the server."""
    max_clients: int
    """uint32 number of slots of the server."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PayloadPacket:
    """Type 5: 1 to 1200 bytes of application data."""

    sequence: int
    """uint64 packet sequence."""
    payload: bytes
    """The application's datagram (1 to 1200 bytes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DisconnectPacket:
    """Type 6: the sender ends the connection (empty body)."""

    sequence: int
    """uint64 packet sequence."""


EncryptedPacket: TypeAlias = (
    ConnectionDeniedPacket
    | ConnectionChallengePacket
    | ConnectionResponsePacket
    | KeepAlivePacket
    | PayloadPacket
    | DisconnectPacket
)
"""Packets of types 1 to 6."""
Packet: TypeAlias = ConnectionRequestPacket | InsecureConnectionRequestPacket | EncryptedPacket
"""Every packet :func:`write_packet` accepts."""
ReadResult: TypeAlias = VerifiedRequest | InsecureConnectionRequestPacket | EncryptedPacket
"""Every packet :func:`read_packet` can return."""


def sequence_bytes(sequence: int) -> int:
    """Return how many bytes the minimal little-endian encoding of ``sequence`` takes (1 to 8).

    Args:
        sequence: uint64 sequence number.

    Returns:
        The byte count written in the prefix's high nibble.
    """
    return max(1, (sequence.bit_length() + 7) >> 3)


def _check_uint64(value: int, field: str) -> None:
    if not 0 <= value < _U64_LIMIT:
        raise LocalProtocolError(f"{field} must be a uint64, got {value}")


def _write_request(packet: ConnectionRequestPacket | InsecureConnectionRequestPacket) -> bytes:
    _check_uint64(packet.protocol_id, "protocol_id")
    if isinstance(packet, InsecureConnectionRequestPacket):
        _check_uint64(packet.client_id, "client_id")
        if not -(1 << 31) <= packet.timeout_seconds < (1 << 31):
            raise LocalProtocolError("timeout_seconds must fit an int32")
        if len(packet.user_data) != USER_DATA_BYTES:
            raise LocalProtocolError(f"user_data must be {USER_DATA_BYTES} bytes")
        head = _INSECURE_REQUEST_HEAD.pack(
            0,
            INSECURE_VERSION_INFO,
            packet.protocol_id,
            packet.client_id,
            packet.timeout_seconds,
            packet.user_data,
        )
        return head + bytes(CONNECTION_REQUEST_BYTES - len(head))
    _check_uint64(packet.expire_timestamp, "expire_timestamp")
    if len(packet.token_nonce) != CONNECT_TOKEN_NONCE_BYTES:
        raise LocalProtocolError(f"token_nonce must be {CONNECT_TOKEN_NONCE_BYTES} bytes")
    if len(packet.encrypted_private_token) != CONNECT_TOKEN_PRIVATE_BYTES:
        raise LocalProtocolError(
            f"encrypted_private_token must be {CONNECT_TOKEN_PRIVATE_BYTES} bytes"
        )
    head = _REQUEST_HEAD.pack(
        0, VERSION_INFO, packet.protocol_id, packet.expire_timestamp, packet.token_nonce
    )
    return head + packet.encrypted_private_token


def _body_of(packet: EncryptedPacket) -> tuple[PacketType, bytes]:
    if isinstance(packet, PayloadPacket):
        if not 1 <= len(packet.payload) <= MAX_PAYLOAD_BYTES:
            raise LocalProtocolError(
                f"payload must be 1 to {MAX_PAYLOAD_BYTES} bytes, got {len(packet.payload)}"
            )
        return PacketType.PAYLOAD, packet.payload
    if isinstance(packet, KeepAlivePacket):
        if not (0 <= packet.client_index < 1 << 32 and 0 <= packet.max_clients < 1 << 32):
            raise LocalProtocolError("client_index and max_clients must be uint32")
        return PacketType.KEEP_ALIVE, _KEEP_ALIVE.pack(packet.client_index, packet.max_clients)
    if isinstance(packet, ConnectionChallengePacket | ConnectionResponsePacket):
        _check_uint64(packet.challenge_sequence, "challenge_sequence")
        if len(packet.challenge_token) != CHALLENGE_TOKEN_BYTES:
            raise LocalProtocolError(f"challenge_token must be {CHALLENGE_TOKEN_BYTES} bytes")
        kind = (
            PacketType.CONNECTION_CHALLENGE
            if isinstance(packet, ConnectionChallengePacket)
            else PacketType.CONNECTION_RESPONSE
        )
        return kind, _U64.pack(packet.challenge_sequence) + packet.challenge_token
    if isinstance(packet, DisconnectPacket):
        return PacketType.DISCONNECT, b""
    return PacketType.CONNECTION_DENIED, b""


def write_packet(
    packet: Packet,
    *,
    protocol_id: int = 0,
    cipher: PacketCipher | None = None,
    insecure: bool = False,
) -> bytes:
    """Write any packet to wire bytes (spec §6.2-§6.4).

    Args:
        packet: the packet; requests carry their own protocol id and are never encrypted.
        protocol_id: uint64 protocol id bound into the associated data of types 1 to 6.
        cipher: the sender's direction key; required for types 1 to 6 unless ``insecure``.
        insecure: write types 1 to 6 in lagless insecure framing (clear body, no tag).

    Returns:
        The datagram.

    Raises:
        LocalProtocolError: a field is out of range, or no cipher was given in secure mode.
    """
    if isinstance(packet, ConnectionRequestPacket | InsecureConnectionRequestPacket):
        return _write_request(packet)
    _check_uint64(packet.sequence, "sequence")
    kind, body = _body_of(packet)
    count = sequence_bytes(packet.sequence)
    prefix = (count << 4) | kind
    head = bytes((prefix,)) + packet.sequence.to_bytes(count, "little")
    if insecure:
        return head + body
    if cipher is None:
        raise LocalProtocolError("cipher is required to write an encrypted packet")
    return cipher.encrypt(packet.sequence, body, packet_associated_data(protocol_id, prefix), head)


def _read_request(
    data: bytes, protocol_id: int, private_key: bytes | None, now_unix: float
) -> VerifiedRequest | DropReason:
    # spec §10.1 steps 2-7, in order; step 1 (size) already passed.
    if private_key is None:
        return DropReason.NO_PRIVATE_KEY
    _, version, packet_protocol, expire, nonce = _REQUEST_HEAD.unpack_from(data, 0)
    if version != VERSION_INFO:
        return DropReason.VERSION_MISMATCH
    if packet_protocol != protocol_id:
        return DropReason.PROTOCOL_ID_MISMATCH
    if expire <= now_unix:
        return DropReason.TOKEN_EXPIRED
    encrypted = bytes(data[_REQUEST_HEAD.size :])
    plaintext = decrypt_private_token(
        encrypted,
        protocol_id=protocol_id,
        expire_timestamp=expire,
        nonce=nonce,
        private_key=private_key,
    )
    if plaintext is None:
        return DropReason.TOKEN_DECRYPT_FAILED
    try:
        token = read_private_token(plaintext)
    except ConnectTokenError:
        return DropReason.TOKEN_INVALID
    packet = ConnectionRequestPacket(
        protocol_id=packet_protocol,
        expire_timestamp=expire,
        token_nonce=bytes(nonce),
        encrypted_private_token=encrypted,
    )
    return VerifiedRequest(packet=packet, token=token)


def _read_insecure_request(
    data: bytes, protocol_id: int
) -> InsecureConnectionRequestPacket | DropReason:
    _, version, packet_protocol, client_id, timeout, user_data = _INSECURE_REQUEST_HEAD.unpack_from(
        data, 0
    )
    if version != INSECURE_VERSION_INFO:
        return DropReason.VERSION_MISMATCH
    if packet_protocol != protocol_id:
        return DropReason.PROTOCOL_ID_MISMATCH
    return InsecureConnectionRequestPacket(
        protocol_id=packet_protocol,
        client_id=client_id,
        timeout_seconds=timeout,
        user_data=bytes(user_data),
    )


def _decode_body(kind: int, sequence: int, body: bytes) -> EncryptedPacket | DropReason:
    size = len(body)
    if kind == PacketType.PAYLOAD:
        if not 1 <= size <= MAX_PAYLOAD_BYTES:
            return DropReason.WRONG_BODY_SIZE
        return PayloadPacket(sequence=sequence, payload=bytes(body))
    if kind == PacketType.KEEP_ALIVE:
        if size != KEEP_ALIVE_BODY_BYTES:
            return DropReason.WRONG_BODY_SIZE
        index, max_clients = _KEEP_ALIVE.unpack(body)
        return KeepAlivePacket(sequence=sequence, client_index=index, max_clients=max_clients)
    if kind in (PacketType.CONNECTION_CHALLENGE, PacketType.CONNECTION_RESPONSE):
        if size != CHALLENGE_BODY_BYTES:
            return DropReason.WRONG_BODY_SIZE
        (challenge_sequence,) = _U64.unpack_from(body, 0)
        token = bytes(body[_U64.size :])
        if kind == PacketType.CONNECTION_CHALLENGE:
            return ConnectionChallengePacket(
                sequence=sequence, challenge_sequence=challenge_sequence, challenge_token=token
            )
        return ConnectionResponsePacket(
            sequence=sequence, challenge_sequence=challenge_sequence, challenge_token=token
        )
    if size != 0:
        return DropReason.WRONG_BODY_SIZE
    if kind == PacketType.DISCONNECT:
        return DisconnectPacket(sequence=sequence)
    return ConnectionDeniedPacket(sequence=sequence)


_PAYLOAD_PREFIXES: Final = tuple(bytes(((count << 4) | PacketType.PAYLOAD,)) for count in range(9))
_PAYLOAD_COUNT: Final = tuple(
    prefix >> 4 if prefix & 0x0F == PacketType.PAYLOAD and 1 <= prefix >> 4 <= 8 else 0
    for prefix in range(256)
)  # prefix byte -> sequence byte count of a payload packet, 0 for any other prefix


def payload_associated_data(protocol_id: int) -> tuple[bytes, ...]:
    """Return the associated data of payload packets, indexed by sequence byte count (spec §6.3).

    Built once per key so `write_payload_packet` and `read_payload_packet` pack nothing per
    packet; index 0 (no sequence byte) is never used.

    Args:
        protocol_id: the uint64 protocol id.

    Returns:
        Nine 22-byte strings; entry ``n`` belongs to the prefix ``(n << 4) | PAYLOAD``.
    """
    return tuple(
        packet_associated_data(protocol_id, (count << 4) | PacketType.PAYLOAD) for count in range(9)
    )


def write_payload_packet(
    sequence: int, payload: bytes, cipher: PacketCipher | None, associated: tuple[bytes, ...]
) -> bytes:
    """Write a payload packet, the hot path of `write_packet` (same bytes, fewer steps).

    The caller has checked that ``payload`` holds 1 to 1200 bytes.

    Args:
        sequence: uint64 packet sequence.
        payload: the application's datagram.
        cipher: the sender's direction key, or ``None`` for lagless insecure framing.
        associated: `payload_associated_data` of the protocol id.

    Returns:
        The datagram.
    """
    count = (sequence.bit_length() + 7) >> 3 or 1
    head = _PAYLOAD_PREFIXES[count] + sequence.to_bytes(count, "little")
    if cipher is None:
        return head + payload
    return cipher.encrypt(sequence, payload, associated[count], head)


def read_payload_packet(
    data: bytes, cipher: PacketCipher | None, replay: ReplayWindow, associated: tuple[bytes, ...]
) -> bytes | DropReason | None:
    """Read a well-formed payload packet of a connected peer, the hot path of `read_packet`.

    Runs the checks of `read_packet` that a payload packet of a valid size can still fail, in
    the same order (replay, decrypt, then the window advances), so every outcome and drop
    reason is the one `read_packet` gives for the same bytes.

    Args:
        data: the datagram.
        cipher: the peer's direction key, or ``None`` for lagless insecure framing.
        replay: the peer's replay window.
        associated: `payload_associated_data` of the protocol id.

    Returns:
        The payload; the `DropReason` of a failed check; or ``None`` when ``data`` is not a
        payload packet with a valid prefix and size (read it with `read_packet` then).
    """
    if not data:
        return None
    count = _PAYLOAD_COUNT[data[0]]
    body_size = len(data) - 1 - count - (0 if cipher is None else MAC_BYTES)
    if not count or not 1 <= body_size <= MAX_PAYLOAD_BYTES:
        return None
    sequence: int = _FROM_BYTES(data[1 : 1 + count], "little")
    # ReplayWindow.already_received, inline (spec §7)
    most_recent = replay.most_recent
    if most_recent >= REPLAY_BUFFER_SIZE and sequence <= most_recent - REPLAY_BUFFER_SIZE:
        return DropReason.REPLAYED
    entries = replay.entries
    slot = sequence % REPLAY_BUFFER_SIZE
    entry = entries[slot]
    if entry != EMPTY and entry >= sequence:
        return DropReason.REPLAYED
    if cipher is None:
        body = bytes(data[1 + count :])
    else:
        opened = cipher.decrypt(sequence, data, associated[count], 1 + count)
        if opened is None:
            return DropReason.DECRYPT_FAILED
        body = opened
    # ReplayWindow.advance, inline
    if sequence > most_recent:
        replay.most_recent = sequence
    entries[slot] = sequence
    return body


def read_packet(
    data: bytes,
    *,
    protocol_id: int,
    accepted: frozenset[PacketType],
    cipher: PacketCipher | None,
    replay: ReplayWindow | None = None,
    private_key: bytes | None = None,
    now_unix: float = 0.0,
    insecure: bool = False,
) -> ReadResult | DropReason:
    """Read one datagram, running netcode's checks in order; never raises on any bytes.

    Checks (spec §6.5, §10.1): request path for prefix ``0x00`` (type accepted, exactly 1078
    bytes, private key, version, protocol id, expiry, token decrypt, token parse); otherwise read
    key present, at least 18 bytes, type in 1..6 and accepted, sequence count in 1..8, length
    covers prefix + sequence + tag, replay check (types 4-6 with a window), decrypt, window
    advance, body size.

    Args:
        data: the datagram.
        protocol_id: this side's protocol id (the server's, or the token's on the client).
        accepted: packet types this side reads (:data:`SERVER_ACCEPTED_TYPES` or
            :data:`CLIENT_ACCEPTED_TYPES`).
        cipher: the peer's direction key, or ``None`` if there is none for this peer.
        replay: the peer's replay window, if it has one (types 4 to 6 only).
        private_key: 32-byte private key for connection requests.
        now_unix: current Unix time in seconds, for the request expiry check.
        insecure: read lagless insecure-mode framing (no encryption).

    Returns:
        The decoded packet, or the :class:`DropReason` of the first failed check.
    """
    size = len(data)
    if size == 0:
        return DropReason.PACKET_TOO_SHORT
    prefix = data[0]
    if prefix == 0:
        if PacketType.CONNECTION_REQUEST not in accepted:
            return DropReason.PACKET_TYPE_NOT_ACCEPTED
        if size != CONNECTION_REQUEST_BYTES:
            return DropReason.REQUEST_WRONG_SIZE
        if insecure:
            return _read_insecure_request(data, protocol_id)
        return _read_request(data, protocol_id, private_key, now_unix)
    if cipher is None and not insecure:
        return DropReason.NO_ENCRYPTION_MAPPING
    tag = 0 if insecure else MAC_BYTES
    # spec §6.5 step 1: 18 bytes (2 in insecure framing, which has no tag).
    if size < (2 if insecure else MIN_ENCRYPTED_PACKET_BYTES):
        return DropReason.PACKET_TOO_SHORT
    kind = prefix & 0x0F
    if kind == 0 or kind >= len(_TYPES):
        return DropReason.INVALID_PACKET_TYPE
    if _TYPES[kind] not in accepted:
        return DropReason.PACKET_TYPE_NOT_ACCEPTED
    count = prefix >> 4
    if not 1 <= count <= 8:
        return DropReason.INVALID_SEQUENCE_BYTES
    if size < 1 + count + tag:
        return DropReason.TRUNCATED
    sequence = int.from_bytes(data[1 : 1 + count], "little")
    window = replay if kind >= PacketType.KEEP_ALIVE else None
    if window is not None and window.already_received(sequence):
        return DropReason.REPLAYED
    if insecure:
        body = bytes(data[1 + count :])
    else:
        assert cipher is not None  # invariant: checked before the size checks
        decrypted = cipher.decrypt(
            sequence, data, packet_associated_data(protocol_id, prefix), 1 + count
        )
        if decrypted is None:
            return DropReason.DECRYPT_FAILED
        body = decrypted
    if window is not None:
        window.advance(sequence)
    return _decode_body(kind, sequence, body)
