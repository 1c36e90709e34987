"""netcode codecs: addresses, crypto, replay window, tokens and the seven packet types."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.transport import (
    ChallengeToken,
    ConnectionChallengePacket,
    ConnectionDeniedPacket,
    ConnectionRequestPacket,
    ConnectionResponsePacket,
    ConnectTokenError,
    ConnectTokenPrivate,
    DisconnectPacket,
    DropReason,
    InsecureConnectionRequestPacket,
    KeepAlivePacket,
    PacketCipher,
    PacketType,
    PayloadPacket,
    ReplayWindow,
    VerifiedRequest,
    decode_address,
    encode_address,
    encrypt_private_token,
    format_address,
    generate_connect_token,
    parse_address,
    read_connect_token,
    read_packet,
    read_private_token,
    write_challenge_token,
    write_packet,
    write_private_token,
)
from lagless.transport.address import AddressDecodeError
from lagless.transport.packet import (
    CLIENT_ACCEPTED_TYPES,
    SERVER_ACCEPTED_TYPES,
    payload_associated_data,
    read_payload_packet,
    write_payload_packet,
)

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
PRIVATE_KEY = bytes(range(100, 132))
PROTOCOL = 0x1122334455667788
ALL = frozenset(PacketType)


# -- addresses ----------------------------------------------------------------------------


def test_canonical_hosts() -> None:
    assert parse_address("[0:0::1]:40000") == ("::1", 40000)
    assert parse_address("127.0.0.1") == ("127.0.0.1", 0)
    assert format_address(("::1", 5)) == "[::1]:5"
    assert encode_address(("::1", 1)) == bytes([2]) + bytes(14) + b"\x01\x00" + b"\x01\x00"
    assert encode_address(("127.0.0.1", 40000)).hex() == "017f000001409c"


def test_mapped_ipv6_is_not_ipv4() -> None:
    mapped = encode_address(("::ffff:127.0.0.1", 1))
    assert mapped[0] == 2
    assert mapped != encode_address(("127.0.0.1", 1))
    assert decode_address(mapped, 0)[0] != ("127.0.0.1", 1)


def test_address_errors() -> None:
    with pytest.raises(LocalProtocolError):
        encode_address(("localhost", 1))
    with pytest.raises(LocalProtocolError):
        encode_address(("1.2.3.4", 70000))
    with pytest.raises(AddressDecodeError):
        decode_address(b"\x03" + bytes(20), 0)
    with pytest.raises(AddressDecodeError):
        decode_address(b"\x02" + bytes(5), 0)


@given(st.ip_addresses(), st.integers(0, 65535))
def test_address_round_trip(ip: object, port: int) -> None:
    address = (str(ip), port)
    data = encode_address(address)
    assert len(data) == (7 if ":" not in str(ip) else 19)
    assert decode_address(data + b"junk", 0) == (address, len(data))
    assert parse_address(format_address(address)) == address


# -- crypto and replay --------------------------------------------------------------------


def test_tampered_returns_none() -> None:
    cipher = PacketCipher(KEY)
    sealed = cipher.encrypt(7, b"hello", b"ad")
    assert cipher.decrypt(7, sealed, b"ad") == b"hello"
    assert cipher.decrypt(8, sealed, b"ad") is None
    assert cipher.decrypt(7, sealed, b"ae") is None
    assert PacketCipher(OTHER_KEY).decrypt(7, sealed, b"ad") is None
    with pytest.raises(LocalProtocolError):
        PacketCipher(b"short")


def test_max_sequence_is_never_remembered() -> None:
    window = ReplayWindow()
    top = 2**64 - 1
    assert not window.already_received(top)
    window.advance(top)
    assert window.most_recent == top
    assert not window.already_received(top)  # the reference's empty marker equals 2^64-1
    assert window.already_received(top - 256)


def test_replay_window_edges() -> None:
    window = ReplayWindow()
    window.advance(1000)
    assert window.already_received(744)  # 1000 - 256
    assert not window.already_received(745)
    assert window.already_received(1000)
    window.advance(745)
    assert window.already_received(745)
    window.reset()
    assert window.most_recent == 0
    assert not window.already_received(1000)


# -- tokens -------------------------------------------------------------------------------


def _private(count: int = 2) -> ConnectTokenPrivate:
    addrs = (("127.0.0.1", 40000), ("::1", 40000))
    return ConnectTokenPrivate(
        client_id=42,
        timeout_seconds=-1,
        server_addresses=(addrs * 17)[:count],
        client_to_server_key=KEY,
        server_to_client_key=OTHER_KEY,
        user_data=bytes(range(256)),
    )


@pytest.mark.parametrize("count", [1, 2, 32])
def test_private_token_round_trip(count: int) -> None:
    plaintext = write_private_token(_private(count))
    assert len(plaintext) == 1024
    assert plaintext[-16:] == bytes(16)
    assert read_private_token(plaintext) == _private(count)


def test_private_token_errors() -> None:
    with pytest.raises(LocalProtocolError):
        write_private_token(_private(0))
    with pytest.raises(LocalProtocolError):
        write_private_token(_private(33))
    bad = bytearray(write_private_token(_private(1)))
    bad[16] = 0
    with pytest.raises(ConnectTokenError):
        read_private_token(bytes(bad))
    bad[12] = 33
    with pytest.raises(ConnectTokenError):
        read_private_token(bytes(bad))


def _token(expire_seconds: int = 30) -> bytes:
    return generate_connect_token(
        public_addresses=[("127.0.0.1", 40000)],
        protocol_id=PROTOCOL,
        expire_seconds=expire_seconds,
        timeout_seconds=5,
        client_id=7,
        user_data=b"abc",
        private_key=PRIVATE_KEY,
        now_unix=1000,
        random_bytes=lambda n: bytes(n),
    )


def test_read_connect_token_validation() -> None:
    token = _token()
    parsed = read_connect_token(token)
    assert parsed.expire_timestamp == 1030
    assert parsed.timeout_seconds == 5
    with pytest.raises(ConnectTokenError):
        read_connect_token(token[:-1])
    with pytest.raises(ConnectTokenError):
        read_connect_token(b"X" + token[1:])
    swapped = token[:21] + token[29:37] + token[21:29] + token[37:]  # create > expire
    with pytest.raises(ConnectTokenError):
        read_connect_token(swapped)


@settings(max_examples=200)
@given(st.binary(min_size=0, max_size=2100))
def test_read_arbitrary_bytes(data: bytes) -> None:
    for reader in (read_connect_token, read_private_token):
        with contextlib.suppress(ConnectTokenError):
            reader(data)


@settings(max_examples=100)
@given(st.integers(0, 2**64 - 1), st.binary(max_size=256), st.integers(-(2**31), 2**31 - 1))
def test_token_round_trip(client_id: int, user_data: bytes, timeout: int) -> None:
    token = generate_connect_token(
        public_addresses=[("10.0.0.1", 1), ("::2", 2)],
        protocol_id=PROTOCOL,
        expire_seconds=10,
        timeout_seconds=timeout,
        client_id=client_id,
        user_data=user_data,
        private_key=PRIVATE_KEY,
        now_unix=5,
        random_bytes=lambda n: bytes([n]) * n,
    )
    assert len(token) == 2048
    parsed = read_connect_token(token)
    assert parsed.timeout_seconds == timeout
    request = ConnectionRequestPacket(
        protocol_id=PROTOCOL,
        expire_timestamp=parsed.expire_timestamp,
        token_nonce=parsed.nonce,
        encrypted_private_token=parsed.encrypted_private,
    )
    result = read_packet(
        write_packet(request),
        protocol_id=PROTOCOL,
        accepted=SERVER_ACCEPTED_TYPES,
        cipher=None,
        private_key=PRIVATE_KEY,
        now_unix=5,
    )
    assert isinstance(result, VerifiedRequest)
    assert result.token.client_id == client_id
    assert result.token.user_data == user_data + bytes(256 - len(user_data))


# -- packets ------------------------------------------------------------------------------

seqs = st.integers(0, 2**64 - 1)
ENCRYPTED = st.one_of(
    st.builds(ConnectionDeniedPacket, sequence=seqs),
    st.builds(
        ConnectionChallengePacket,
        sequence=seqs,
        challenge_sequence=seqs,
        challenge_token=st.binary(min_size=300, max_size=300),
    ),
    st.builds(
        ConnectionResponsePacket,
        sequence=seqs,
        challenge_sequence=seqs,
        challenge_token=st.binary(min_size=300, max_size=300),
    ),
    st.builds(
        KeepAlivePacket,
        sequence=seqs,
        client_index=st.integers(0, 2**32 - 1),
        max_clients=st.integers(0, 2**32 - 1),
    ),
    st.builds(PayloadPacket, sequence=seqs, payload=st.binary(min_size=1, max_size=1200)),
    st.builds(DisconnectPacket, sequence=seqs),
)


@settings(max_examples=300)
@given(ENCRYPTED, st.booleans())
def test_packet_round_trip(packet: object, insecure: bool) -> None:
    cipher = PacketCipher(KEY)
    wire = write_packet(packet, protocol_id=PROTOCOL, cipher=cipher, insecure=insecure)
    count = wire[0] >> 4
    assert 1 <= count <= 8
    assert int.from_bytes(wire[1 : 1 + count], "little") == packet.sequence  # type: ignore[attr-defined]
    assert len(wire) <= 1225
    again = read_packet(
        wire,
        protocol_id=PROTOCOL,
        accepted=ALL,
        cipher=cipher,
        replay=ReplayWindow(),
        insecure=insecure,
    )
    assert again == packet


def test_request_round_trips() -> None:
    insecure = InsecureConnectionRequestPacket(
        protocol_id=PROTOCOL, client_id=9, timeout_seconds=-1, user_data=bytes(range(256))
    )
    wire = write_packet(insecure)
    assert len(wire) == 1078
    args = {"protocol_id": PROTOCOL, "accepted": SERVER_ACCEPTED_TYPES, "cipher": None}
    assert read_packet(wire, insecure=True, **args) == insecure
    assert read_packet(wire, insecure=True, **{**args, "protocol_id": 1}) is (
        DropReason.PROTOCOL_ID_MISMATCH
    )


def test_insecure_request_rejected_by_secure() -> None:
    insecure = write_packet(
        InsecureConnectionRequestPacket(
            protocol_id=PROTOCOL, client_id=9, timeout_seconds=5, user_data=bytes(256)
        )
    )
    secure = read_packet(
        insecure,
        protocol_id=PROTOCOL,
        accepted=SERVER_ACCEPTED_TYPES,
        cipher=None,
        private_key=PRIVATE_KEY,
    )
    assert secure is DropReason.VERSION_MISMATCH
    clear = write_packet(KeepAlivePacket(sequence=1, client_index=0, max_clients=0), insecure=True)
    padded = clear + bytes(16)  # even with a tag's worth of bytes it does not authenticate
    result = read_packet(padded, protocol_id=PROTOCOL, accepted=ALL, cipher=PacketCipher(KEY))
    assert result is DropReason.DECRYPT_FAILED


def test_prefix_0x10_is_invalid() -> None:
    data = bytes([0x10]) + bytes(1077)
    result = read_packet(data, protocol_id=PROTOCOL, accepted=ALL, cipher=PacketCipher(KEY))
    assert result is DropReason.INVALID_PACKET_TYPE


def test_no_key() -> None:
    data = write_packet(
        DisconnectPacket(sequence=1), protocol_id=PROTOCOL, cipher=PacketCipher(KEY)
    )
    assert read_packet(data[:3], protocol_id=PROTOCOL, accepted=ALL, cipher=None) is (
        DropReason.NO_ENCRYPTION_MAPPING
    )


def _request(expire: int = 2000) -> bytes:
    plaintext = write_private_token(_private(1))
    encrypted = encrypt_private_token(
        plaintext,
        protocol_id=PROTOCOL,
        expire_timestamp=expire,
        nonce=bytes(24),
        private_key=PRIVATE_KEY,
    )
    return write_packet(
        ConnectionRequestPacket(
            protocol_id=PROTOCOL,
            expire_timestamp=expire,
            token_nonce=bytes(24),
            encrypted_private_token=encrypted,
        )
    )


def test_read_order_of_request_checks() -> None:
    good = _request()

    def read(data: bytes, **kw: object) -> object:
        args: dict[str, object] = {
            "protocol_id": PROTOCOL,
            "accepted": SERVER_ACCEPTED_TYPES,
            "cipher": None,
            "private_key": PRIVATE_KEY,
            "now_unix": 1000,
        }
        args.update(kw)
        return read_packet(data, **args)  # type: ignore[arg-type]

    assert isinstance(read(good), VerifiedRequest)
    assert read(good, accepted=CLIENT_ACCEPTED_TYPES) is DropReason.PACKET_TYPE_NOT_ACCEPTED
    assert read(good + b"\x00") is DropReason.REQUEST_WRONG_SIZE
    assert read(good, private_key=None) is DropReason.NO_PRIVATE_KEY
    assert read(good[:1] + b"X" + good[2:]) is DropReason.VERSION_MISMATCH
    assert read(good, protocol_id=1) is DropReason.PROTOCOL_ID_MISMATCH
    assert read(good, now_unix=2000) is DropReason.TOKEN_EXPIRED
    assert read(good, now_unix=1999.9) is not DropReason.TOKEN_EXPIRED
    assert read(good[:-1] + bytes([good[-1] ^ 1])) is DropReason.TOKEN_DECRYPT_FAILED
    # expiry is bound into the associated data: changing it breaks the token
    changed = good[:22] + (2001).to_bytes(8, "little") + good[30:]
    assert read(changed) is DropReason.TOKEN_DECRYPT_FAILED
    bad_plain = bytearray(write_private_token(_private(1)))
    bad_plain[16] = 9
    encrypted = encrypt_private_token(
        bytes(bad_plain),
        protocol_id=PROTOCOL,
        expire_timestamp=2000,
        nonce=bytes(24),
        private_key=PRIVATE_KEY,
    )
    assert read(good[:54] + encrypted) is DropReason.TOKEN_INVALID


def test_read_order_of_encrypted_checks() -> None:
    cipher = PacketCipher(KEY)
    ka = write_packet(
        KeepAlivePacket(sequence=5, client_index=1, max_clients=2),
        protocol_id=PROTOCOL,
        cipher=cipher,
    )

    def read(data: bytes, accepted: frozenset[PacketType] = ALL, window=None) -> object:
        return read_packet(
            data, protocol_id=PROTOCOL, accepted=accepted, cipher=cipher, replay=window
        )

    assert read(ka[:17]) is DropReason.PACKET_TOO_SHORT
    assert read(bytes([0x17]) + ka[1:]) is DropReason.INVALID_PACKET_TYPE
    assert read(ka, accepted=frozenset({PacketType.PAYLOAD})) is DropReason.PACKET_TYPE_NOT_ACCEPTED
    assert read(bytes([0x94]) + ka[1:]) is DropReason.INVALID_SEQUENCE_BYTES
    assert read(bytes([0x84]) + ka[1:20]) is DropReason.TRUNCATED
    window = ReplayWindow()
    assert isinstance(read(ka, window=window), KeepAlivePacket)
    assert read(ka, window=window) is DropReason.REPLAYED
    # a failed decrypt does not advance the window
    window2 = ReplayWindow()
    assert read(ka[:-1] + bytes([ka[-1] ^ 1]), window=window2) is DropReason.DECRYPT_FAILED
    assert isinstance(read(ka, window=window2), KeepAlivePacket)
    # the window advances before the size check (spec §6.5 step 7)
    wrong = bytes([0x14, 9]) + cipher.encrypt(
        9,
        b"123",
        bytes.fromhex("4e4554434f444520312e303200") + PROTOCOL.to_bytes(8, "little") + b"\x14",
    )
    window3 = ReplayWindow()
    assert read(wrong, window=window3) is DropReason.WRONG_BODY_SIZE
    assert window3.most_recent == 9
    # a longer-than-minimal sequence encoding is accepted
    long_form = bytes([0x24, 5, 0]) + cipher.encrypt(
        5,
        bytes(8),
        bytes.fromhex("4e4554434f444520312e303200") + PROTOCOL.to_bytes(8, "little") + b"\x24",
    )
    assert read(long_form) == KeepAlivePacket(sequence=5, client_index=0, max_clients=0)


def test_write_rejects_bad_fields() -> None:
    cipher = PacketCipher(KEY)
    with pytest.raises(LocalProtocolError):
        write_packet(PayloadPacket(sequence=0, payload=b""), cipher=cipher)
    with pytest.raises(LocalProtocolError):
        write_packet(PayloadPacket(sequence=0, payload=bytes(1201)), cipher=cipher)
    with pytest.raises(LocalProtocolError):
        write_packet(DisconnectPacket(sequence=2**64), cipher=cipher)
    with pytest.raises(LocalProtocolError):
        write_packet(DisconnectPacket(sequence=1))
    with pytest.raises(LocalProtocolError):
        write_challenge_token(ChallengeToken(client_id=1, user_data=b"x"))


@settings(max_examples=500)
@given(st.binary(max_size=1300), st.booleans(), st.booleans())
def test_read_packet_never_raises(data: bytes, server_side: bool, insecure: bool) -> None:
    window = ReplayWindow()
    result = read_packet(
        data,
        protocol_id=PROTOCOL,
        accepted=SERVER_ACCEPTED_TYPES if server_side else CLIENT_ACCEPTED_TYPES,
        cipher=PacketCipher(KEY),
        replay=window,
        private_key=PRIVATE_KEY,
        now_unix=0,
        insecure=insecure,
    )
    if not insecure:
        assert isinstance(result, DropReason)
        assert window.most_recent == 0


@settings(max_examples=200)
@given(st.binary(min_size=1077, max_size=1077))
def test_random_requests_never_raise(tail: bytes) -> None:
    result = read_packet(
        b"\x00" + tail,
        protocol_id=PROTOCOL,
        accepted=SERVER_ACCEPTED_TYPES,
        cipher=None,
        private_key=PRIVATE_KEY,
    )
    assert isinstance(result, DropReason)


@settings(max_examples=300, deadline=None)
@given(
    sequence=st.integers(0, (1 << 64) - 2),
    payload=st.binary(min_size=0, max_size=1210),
    flip=st.integers(-1, 1300),
    prefix=st.integers(0, 255) | st.none(),
    seen=st.lists(st.integers(0, 1 << 20), max_size=4),
    secure=st.booleans(),
)
def test_payload_fast_path_agrees_with_read_packet(
    sequence: int, payload: bytes, flip: int, prefix: int | None, seen: list[int], secure: bool
) -> None:
    """`read_payload_packet` gives `read_packet`'s outcome whenever it answers at all."""
    cipher = PacketCipher(bytes(range(32))) if secure else None
    associated = payload_associated_data(0x1234)
    data = bytearray(write_payload_packet(sequence, payload or b"x", cipher, associated))
    if payload == b"":
        data = data[: len(data) - 1]  # an empty body: not the fast path's shape
    if 0 <= flip < len(data):
        data[flip] ^= 0x55
    if prefix is not None and data:
        data[0] = prefix
    windows = ReplayWindow(), ReplayWindow()
    for window in windows:
        for number in seen:
            window.advance(number)
    fast = read_payload_packet(bytes(data), cipher, windows[0], associated)
    slow = read_packet(
        bytes(data),
        protocol_id=0x1234,
        accepted=SERVER_ACCEPTED_TYPES,
        cipher=cipher,
        replay=windows[1],
        insecure=not secure,
    )
    if fast is None:
        return
    expected = slow if isinstance(slow, DropReason) else slow.payload  # type: ignore[union-attr]
    assert fast == expected
    assert windows[0].most_recent == windows[1].most_recent
    assert [windows[0].already_received(n) for n in (*seen, sequence)] == [
        windows[1].already_received(n) for n in (*seen, sequence)
    ]
