"""Every netcode 1.02 reference vector (shared/vectors/netcode-1.02.json) reproduced byte for byte.

One test per vector id, parametrised over the file; the handshake transcript drives a real
NetcodeClient and NetcodeServer with the vector's fixed keys, times and addresses.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lagless.transport import (
    ChallengeToken,
    ConnectTokenPrivate,
    DropReason,
    KeepAlivePacket,
    NetcodeClient,
    NetcodeClientConfig,
    NetcodeClientState,
    NetcodeServer,
    NetcodeServerConfig,
    PacketCipher,
    PacketType,
    ReplayWindow,
    decrypt_challenge_token,
    decrypt_private_token,
    encrypt_challenge_token,
    encrypt_private_token,
    generate_connect_token,
    parse_address,
    read_connect_token,
    read_packet,
    read_private_token,
    write_challenge_token,
    write_connect_token,
    write_packet,
    write_private_token,
)
from lagless.transport.crypto import packet_associated_data, packet_nonce
from lagless.transport.packet import (
    CLIENT_ACCEPTED_TYPES,
    SERVER_ACCEPTED_TYPES,
    ConnectionChallengePacket,
    ConnectionDeniedPacket,
    ConnectionRequestPacket,
    ConnectionResponsePacket,
    DisconnectPacket,
    PayloadPacket,
    VerifiedRequest,
)
from lagless.transport.token import token_associated_data

VECTORS_PATH = Path(__file__).resolve().parent / "vectors" / "netcode-1.02.json"  # copy of shared/
DOC = json.loads(VECTORS_PATH.read_text())
VECTORS: dict[str, dict[str, Any]] = {v["id"]: v for v in DOC["vectors"]}
ALL_TYPES = frozenset(PacketType)
h = bytes.fromhex


def stream(*chunks: bytes) -> Callable[[int], bytes]:
    """A random_bytes that replays fixed chunks in order, checking the requested sizes."""
    pending = list(chunks)

    def draw(n: int) -> bytes:
        chunk = pending.pop(0)
        assert len(chunk) == n
        return chunk

    return draw


def addresses(text: str) -> tuple[tuple[str, int], ...]:
    return tuple(parse_address(a) for a in text.split(","))


def private_from(inputs: dict[str, Any]) -> ConnectTokenPrivate:
    return ConnectTokenPrivate(
        client_id=inputs["client_id"],
        timeout_seconds=inputs["timeout_seconds"],
        server_addresses=addresses(inputs["server_addresses"]),
        client_to_server_key=h(inputs["client_to_server_key"]),
        server_to_client_key=h(inputs["server_to_client_key"]),
        user_data=h(inputs["user_data"]),
    )


def check_connect_token_private(v: dict[str, Any]) -> None:
    i = v["inputs"]
    plaintext = write_private_token(private_from(i))
    assert plaintext == h(v["expected"]["plaintext"])
    assert token_associated_data(i["protocol_id"], i["expire_timestamp"]) == h(
        v["intermediate"]["associated_data"]
    )
    args = {
        "protocol_id": i["protocol_id"],
        "expire_timestamp": i["expire_timestamp"],
        "nonce": h(i["nonce"]),
        "private_key": h(i["private_key"]),
    }
    encrypted = encrypt_private_token(plaintext, **args)
    assert encrypted == h(v["expected"]["encrypted"])
    decrypted = decrypt_private_token(encrypted, **args)
    assert decrypted == plaintext
    assert read_private_token(decrypted) == private_from(i)


def _vector_private_inputs() -> dict[str, Any]:
    return VECTORS["connect_token_private"]["inputs"]


def check_connect_token(v: dict[str, Any]) -> None:
    i = v["inputs"]
    token = read_connect_token(h(v["expected"]["connect_token"]))
    assert token.protocol_id == i["protocol_id"]
    assert token.create_timestamp == i["create_timestamp"]
    assert token.expire_timestamp == i["expire_timestamp"]
    assert token.nonce == h(i["nonce"])
    assert token.encrypted_private == h(i["encrypted_private_part"])
    assert token.timeout_seconds == i["timeout_seconds"]
    assert token.server_addresses == addresses(i["server_addresses"])
    assert token.client_to_server_key == h(i["client_to_server_key"])
    assert token.server_to_client_key == h(i["server_to_client_key"])
    assert write_connect_token(token) == h(v["expected"]["connect_token"])


def check_generate(v: dict[str, Any]) -> None:
    p = _vector_private_inputs()
    assert v["expected"]["identical_to_connect_token"] is True
    token = generate_connect_token(
        public_addresses=addresses(p["server_addresses"]),
        protocol_id=p["protocol_id"],
        expire_seconds=v["inputs"]["expire_seconds"],
        timeout_seconds=p["timeout_seconds"],
        client_id=p["client_id"],
        user_data=h(p["user_data"]),
        private_key=h(p["private_key"]),
        now_unix=v["inputs"]["now"],
        random_bytes=stream(
            h(p["nonce"]), h(p["client_to_server_key"]), h(p["server_to_client_key"])
        ),
    )
    assert token == h(VECTORS["connect_token"]["expected"]["connect_token"])


def check_ipv6_no_timeout(v: dict[str, Any]) -> None:
    i = v["inputs"]
    token_bytes = generate_connect_token(
        public_addresses=addresses(i["server_addresses"]),
        protocol_id=i["protocol_id"],
        expire_seconds=i["expire_seconds"],
        timeout_seconds=i["timeout_seconds"],
        client_id=i["client_id"],
        user_data=h(i["user_data"]),
        private_key=h(i["private_key"]),
        now_unix=i["create_timestamp"],
        random_bytes=stream(
            h(i["nonce"]), h(i["client_to_server_key"]), h(i["server_to_client_key"])
        ),
    )
    assert token_bytes == h(v["expected"]["connect_token"])
    token = read_connect_token(token_bytes)
    assert token.expire_timestamp == 2**64 - 1
    assert token.timeout_seconds == -1
    plaintext = decrypt_private_token(
        token.encrypted_private,
        protocol_id=i["protocol_id"],
        expire_timestamp=token.expire_timestamp,
        nonce=token.nonce,
        private_key=h(i["private_key"]),
    )
    assert plaintext == h(v["expected"]["private_plaintext"])
    assert read_private_token(plaintext).server_addresses == addresses(i["server_addresses"])


def check_challenge_token(v: dict[str, Any]) -> None:
    i = v["inputs"]
    plaintext = write_challenge_token(
        ChallengeToken(client_id=i["client_id"], user_data=h(i["user_data"]))
    )
    assert plaintext == h(v["expected"]["plaintext"])
    assert packet_nonce(i["challenge_sequence"]) == h(v["intermediate"]["nonce"])
    cipher = PacketCipher(h(i["challenge_key"]))
    encrypted = encrypt_challenge_token(plaintext, i["challenge_sequence"], cipher)
    assert encrypted == h(v["expected"]["encrypted"])
    assert decrypt_challenge_token(encrypted, i["challenge_sequence"], cipher) == plaintext


def check_request(v: dict[str, Any]) -> None:
    i = v["inputs"]
    expected = h(v["expected"]["packet"])
    packet = ConnectionRequestPacket(
        protocol_id=i["protocol_id"],
        expire_timestamp=i["connect_token_expire_timestamp"],
        token_nonce=h(i["connect_token_nonce"]),
        encrypted_private_token=h(i["connect_token_data"]),
    )
    assert write_packet(packet) == expected
    assert len(expected) == v["expected"]["packet_bytes"]
    key = h(_vector_private_inputs()["private_key"])
    create = VECTORS["connect_token"]["inputs"]["create_timestamp"]

    def read(data: bytes, now: int, protocol_id: int = i["protocol_id"]) -> object:
        return read_packet(
            data,
            protocol_id=protocol_id,
            accepted=SERVER_ACCEPTED_TYPES,
            cipher=None,
            private_key=key,
            now_unix=now,
        )

    result = read(expected, create)
    assert isinstance(result, VerifiedRequest)
    assert result.packet == packet
    assert result.token == private_from(_vector_private_inputs())
    assert read(expected[:-1], create) is DropReason.REQUEST_WRONG_SIZE
    assert read(expected, i["connect_token_expire_timestamp"]) is DropReason.TOKEN_EXPIRED
    assert read(expected, create, i["protocol_id"] + 1) is DropReason.PROTOCOL_ID_MISMATCH


def _packet_from(i: dict[str, Any]) -> object:
    kind = i["packet_type"]
    seq = i["sequence"]
    if kind == "connection_denied":
        return ConnectionDeniedPacket(sequence=seq)
    if kind in ("connection_challenge", "connection_response"):
        cls = (
            ConnectionChallengePacket
            if kind == "connection_challenge"
            else ConnectionResponsePacket
        )
        return cls(
            sequence=seq,
            challenge_sequence=i["challenge_token_sequence"],
            challenge_token=h(i["challenge_token_data"]),
        )
    if kind == "connection_keep_alive":
        return KeepAlivePacket(
            sequence=seq, client_index=i["client_index"], max_clients=i["max_clients"]
        )
    if kind == "connection_payload":
        return PayloadPacket(sequence=seq, payload=h(i["payload"]))
    assert kind == "connection_disconnect"
    return DisconnectPacket(sequence=seq)


def _check_encrypted(i: dict[str, Any], intermediate: dict[str, Any], expected: bytes) -> None:
    packet = _packet_from(i)
    cipher = PacketCipher(h(i["key"]))
    assert packet_nonce(i["sequence"]) == h(intermediate["nonce"])
    assert packet_associated_data(i["protocol_id"], intermediate["prefix_byte"]) == h(
        intermediate["associated_data"]
    )
    wire = write_packet(packet, protocol_id=i["protocol_id"], cipher=cipher)
    assert wire == expected
    assert wire[0] == intermediate["prefix_byte"]
    assert wire[0] >> 4 == intermediate["sequence_bytes"]
    read = read_packet(
        expected,
        protocol_id=i["protocol_id"],
        accepted=ALL_TYPES,
        cipher=cipher,
        replay=ReplayWindow(),
    )
    assert read == packet


def check_encrypted_packet(v: dict[str, Any]) -> None:
    assert v["reference_checks"]["reference_read_packet_accepts"] is True
    expected = h(v["expected"]["packet"])
    assert len(expected) == v["expected"]["packet_bytes"]
    inputs = dict(v["inputs"])
    if "challenge_token_data" in inputs:
        assert (
            inputs["challenge_token_data"]
            == VECTORS["challenge_token_seq0"]["expected"]["encrypted"]
        )
    _check_encrypted(inputs, v["intermediate"], expected)


def check_sequence_encoding(v: dict[str, Any]) -> None:
    assert len(v["cases"]) == 19
    for case in v["cases"]:
        inputs = dict(v["inputs"], sequence=case["sequence"])
        expected = h(case["packet"])
        assert len(expected) == case["packet_bytes"]
        _check_encrypted(inputs, case, expected)


def check_read_rejections(v: dict[str, Any]) -> None:
    base_vector = VECTORS["packet_keep_alive_server_to_client"]
    i = base_vector["inputs"]
    base = h(base_vector["expected"]["packet"])
    cipher = PacketCipher(h(i["key"]))

    def read(data: bytes, window: ReplayWindow | None = None, protocol_id: int = i["protocol_id"]):
        return read_packet(
            data,
            protocol_id=protocol_id,
            accepted=CLIENT_ACCEPTED_TYPES,
            cipher=cipher,
            replay=window if window is not None else ReplayWindow(),
        )

    assert isinstance(read(base), KeepAlivePacket)
    flipped_tag = base[:-1] + bytes([base[-1] ^ 0x80])
    flipped_body = base[:2] + bytes([base[2] ^ 0x01]) + base[3:]
    retyped = bytes([(base[0] & 0xF0) | 5]) + base[1:]
    outcomes = {
        "flip_last_tag_bit": read(flipped_tag),
        "flip_first_ciphertext_bit": read(flipped_body),
        "change_prefix_type_4_to_5": read(retyped),
        "wrong_protocol_id": read(base, protocol_id=i["protocol_id"] ^ 1),
        "truncated_by_one_byte": read(base[:-1]),
    }
    window = ReplayWindow()
    assert isinstance(read(base, window), KeepAlivePacket)
    outcomes["replayed_second_copy"] = read(base, window)
    assert set(outcomes) == set(v["expected"])
    for name, result in outcomes.items():
        assert v["expected"][name] is True
        assert isinstance(result, DropReason), name
    assert outcomes["replayed_second_copy"] is DropReason.REPLAYED
    assert outcomes["flip_last_tag_bit"] is DropReason.DECRYPT_FAILED
    assert outcomes["truncated_by_one_byte"] is DropReason.DECRYPT_FAILED


def check_replay(v: dict[str, Any]) -> None:
    sequences = [int(s) for s in v["inputs"]["sequences_csv"].split(",")]
    expected = [s == "1" for s in v["expected"]["accepted_csv"].split(",")]
    window = ReplayWindow()
    accepted = []
    for sequence in sequences:
        ok = not window.already_received(sequence)
        if ok:
            window.advance(sequence)
        accepted.append(ok)
    assert accepted == expected


def check_transcript(v: dict[str, Any]) -> None:
    i = v["inputs"]
    server_address = parse_address(i["server_address"])
    client_address = parse_address(i["client_address"])
    server = NetcodeServer(
        config=NetcodeServerConfig(
            protocol_id=i["protocol_id"],
            private_key=h(i["private_key"]),
            public_address=server_address,
            max_clients=i["max_clients"],
        ),
        random_bytes=stream(h(i["challenge_key"])),
        unix_time_offset=float(i["now"]),
    )
    client = NetcodeClient(config=NetcodeClientConfig())
    client.connect(h(i["connect_token"]), 0.0)
    sent: list[tuple[float, str, bytes]] = []
    to_client: list[bytes] = []
    to_server: list[bytes] = []
    states = []
    payload = h(i["payload"])

    def collect(t: float) -> None:
        for data, addr in client.datagrams_to_send(t):
            assert addr == server_address
            sent.append((t, "client_to_server", data))
            to_server.append(data)
        for data, addr in server.datagrams_to_send(t):
            assert addr == client_address
            sent.append((t, "server_to_client", data))
            to_client.append(data)

    for step in range(6):
        t = step * 0.25
        for data in to_client:
            client.receive_datagram(data, server_address, t)
        to_client.clear()
        client.handle_timer(t)
        collect(t)
        for data in to_server:
            server.receive_datagram(data, client_address, t)
        to_server.clear()
        server.handle_timer(t)
        collect(t)
        if step == 3:
            client.send_payload(payload)
            server.send_payload(1, payload)  # connection id 1: the first client
            collect(t)
        if step == 4:
            client.disconnect()
            collect(t)
        states.append(
            f"t={t:.2f} client_state={int(client.state)} "
            f"server_clients={server.num_connected_clients}"
        )
    expected = v["expected"]["datagrams"]
    assert len(sent) == v["expected"]["num_datagrams"] == len(expected)
    for (t, direction, data), want in zip(sent, expected, strict=True):
        assert (t, direction, len(data)) == (want["time"], want["direction"], want["bytes"])
        assert data.hex() == want["packet"], want["index"]
    assert "; ".join(states) == v["expected"]["state_log"]
    assert client.state is NetcodeClientState.DISCONNECTED
    drops = server.statistics().dropped
    assert drops[DropReason.NO_ENCRYPTION_MAPPING] == 9  # the 9 redundant disconnects


CHECKS: dict[str, Callable[[dict[str, Any]], None]] = {
    "connect_token_private": check_connect_token_private,
    "connect_token": check_connect_token,
    "connect_token_via_generate_connect_token": check_generate,
    "connect_token_ipv6_no_timeout": check_ipv6_no_timeout,
    "challenge_token_seq0": check_challenge_token,
    "challenge_token_seq1000": check_challenge_token,
    "packet_connection_request": check_request,
    "sequence_encoding": check_sequence_encoding,
    "read_rejections": check_read_rejections,
    "replay_protection": check_replay,
    "handshake_transcript": check_transcript,
}


def test_vector_file_has_21_vectors() -> None:
    assert len(VECTORS) == len(DOC["vectors"]) == 21


@pytest.mark.parametrize("vector_id", list(VECTORS))
def test_vector(vector_id: str) -> None:
    vector = VECTORS[vector_id]
    check = CHECKS.get(vector_id)
    if check is None:
        assert vector_id.startswith("packet_")
        check = check_encrypted_packet
    check(vector)
