"""netcode connect tokens: the private part (XChaCha-encrypted) and the 2048-byte public token.

Implements netcode-1.02 spec §4 (layouts §4.1 and §4.3, encryption §4.2, generation §4.4, client
validation §4.5). Decisions:

* Readers raise :class:`ConnectTokenError` (this layer's decode error for tokens) and nothing
  else, whatever the bytes (``test_netcode_codecs.py::test_read_arbitrary_bytes``).
* ``timeout_seconds`` is a signed int32 written as uint32; ``-1`` reads back as ``-1``
  (vector ``connect_token_ipv6_no_timeout``).
* The client reader checks only what the reference checks (size, version, create <= expire,
  address count, address types); it ignores the protocol id and the clock (spec §4.5).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from lagless._types import Address
from lagless.errors import LaglessError, LocalProtocolError
from lagless.transport.address import AddressDecodeError, decode_address, encode_address
from lagless.transport.constants import (
    CONNECT_TOKEN_BYTES,
    CONNECT_TOKEN_NONCE_BYTES,
    CONNECT_TOKEN_PRIVATE_BYTES,
    KEY_BYTES,
    MAC_BYTES,
    MAX_SERVERS_PER_CONNECT,
    NEVER_EXPIRES,
    USER_DATA_BYTES,
    VERSION_INFO,
)
from lagless.transport.crypto import xchacha_decrypt, xchacha_encrypt

_PRIVATE_HEAD: Final = struct.Struct("<QiI")
_PUBLIC_HEAD: Final = struct.Struct("<13sQQQ24s")
_TOKEN_AD: Final = struct.Struct("<13sQQ")
_COUNTS: Final = struct.Struct("<iI")
_PRIVATE_PLAINTEXT_BYTES: Final = CONNECT_TOKEN_PRIVATE_BYTES - MAC_BYTES
_PUBLIC_ADDRESSES_OFFSET: Final = _PUBLIC_HEAD.size + CONNECT_TOKEN_PRIVATE_BYTES + _COUNTS.size


class ConnectTokenError(LaglessError, ValueError):
    """Bytes that are not a valid connect token or private token (decode error of tokens)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectTokenPrivate:
    """The private part of a connect token, readable only by servers (spec §4.1)."""

    client_id: int
    """Globally unique id of the authenticated user (uint64)."""
    timeout_seconds: int
    """Connection timeout in seconds (int32); zero or negative disables timeouts."""
    server_addresses: tuple[Address, ...]
    """The servers' internal addresses (1 to 32), matched against the server's own address."""
    client_to_server_key: bytes
    """32-byte key of client-to-server packets."""
    server_to_client_key: bytes
    """32-byte key of server-to-client packets."""
    user_data: bytes
    """256 bytes of opaque application data."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectToken:
    """The 2048-byte connect token handed to the client (spec §4.3)."""

    protocol_id: int
    """Application protocol id (uint64)."""
    create_timestamp: int
    """Unix time (seconds) the token was made."""
    expire_timestamp: int
    """Unix time (seconds) after which servers refuse the token; ``2^64 - 1`` means never."""
    nonce: bytes
    """24-byte XChaCha nonce of the private part."""
    encrypted_private: bytes
    """The 1024-byte encrypted private part (ciphertext and tag)."""
    timeout_seconds: int
    """Connection timeout in seconds (int32); zero or negative disables timeouts."""
    server_addresses: tuple[Address, ...]
    """Public server addresses the client tries, in order (1 to 32)."""
    client_to_server_key: bytes
    """32-byte key of client-to-server packets."""
    server_to_client_key: bytes
    """32-byte key of server-to-client packets."""


def _encode_addresses(addresses: Sequence[Address]) -> bytes:
    if not 1 <= len(addresses) <= MAX_SERVERS_PER_CONNECT:
        raise LocalProtocolError(
            f"server_addresses must hold 1 to {MAX_SERVERS_PER_CONNECT} addresses, "
            f"got {len(addresses)}"
        )
    return b"".join(encode_address(a) for a in addresses)


def _check_bytes(value: bytes, size: int, field: str) -> None:
    if len(value) != size:
        raise LocalProtocolError(f"{field} must be {size} bytes, got {len(value)}")


def _check_timeout(timeout_seconds: int) -> None:
    if not -(1 << 31) <= timeout_seconds < (1 << 31):
        raise LocalProtocolError(f"timeout_seconds must fit an int32, got {timeout_seconds}")


def write_private_token(token: ConnectTokenPrivate) -> bytes:
    """Write the 1024-byte private-token plaintext, zero-padded (spec §4.1).

    Args:
        token: the private fields.

    Returns:
        1024 bytes whose last 16 are zero (they become the tag after encryption).

    Raises:
        LocalProtocolError: a field is out of range or has the wrong size.
    """
    _check_bytes(token.client_to_server_key, KEY_BYTES, "client_to_server_key")
    _check_bytes(token.server_to_client_key, KEY_BYTES, "server_to_client_key")
    _check_bytes(token.user_data, USER_DATA_BYTES, "user_data")
    _check_timeout(token.timeout_seconds)
    if not 0 <= token.client_id < (1 << 64):
        raise LocalProtocolError(f"client_id must be a uint64, got {token.client_id}")
    addresses = _encode_addresses(token.server_addresses)
    body = b"".join(
        (
            _PRIVATE_HEAD.pack(token.client_id, token.timeout_seconds, len(token.server_addresses)),
            addresses,
            token.client_to_server_key,
            token.server_to_client_key,
            token.user_data,
        )
    )
    return body + bytes(CONNECT_TOKEN_PRIVATE_BYTES - len(body))


def read_private_token(plaintext: bytes) -> ConnectTokenPrivate:
    """Parse a decrypted private token (spec §4.1; §10.1 step 7).

    Args:
        plaintext: at least the first 1008 bytes of the decrypted private part.

    Returns:
        The private fields.

    Raises:
        ConnectTokenError: the address count is not in [1, 32], an address type is not 1 or 2,
            or the buffer is too short.
    """
    if len(plaintext) < _PRIVATE_PLAINTEXT_BYTES:
        raise ConnectTokenError(f"private token must be >= {_PRIVATE_PLAINTEXT_BYTES} bytes")
    client_id, timeout, count = _PRIVATE_HEAD.unpack_from(plaintext, 0)
    if not 1 <= count <= MAX_SERVERS_PER_CONNECT:
        raise ConnectTokenError(f"address count must be in [1, 32], got {count}")
    addresses, offset = _decode_addresses(plaintext, _PRIVATE_HEAD.size, count)
    keys_end = offset + 2 * KEY_BYTES
    return ConnectTokenPrivate(
        client_id=client_id,
        timeout_seconds=timeout,
        server_addresses=addresses,
        client_to_server_key=bytes(plaintext[offset : offset + KEY_BYTES]),
        server_to_client_key=bytes(plaintext[offset + KEY_BYTES : keys_end]),
        user_data=bytes(plaintext[keys_end : keys_end + USER_DATA_BYTES]),
    )


def _decode_addresses(data: bytes, offset: int, count: int) -> tuple[tuple[Address, ...], int]:
    addresses = []
    try:
        for _ in range(count):
            address, offset = decode_address(data, offset)
            addresses.append(address)
    except AddressDecodeError as error:
        raise ConnectTokenError(str(error)) from None
    return tuple(addresses), offset


def token_associated_data(protocol_id: int, expire_timestamp: int) -> bytes:
    """Return the 29-byte associated data of the private token (spec §4.2).

    Args:
        protocol_id: uint64 protocol id.
        expire_timestamp: uint64 expiry, Unix seconds.

    Returns:
        ``version info || uint64_le(protocol_id) || uint64_le(expire_timestamp)``.
    """
    return _TOKEN_AD.pack(VERSION_INFO, protocol_id, expire_timestamp)


def encrypt_private_token(
    plaintext: bytes, *, protocol_id: int, expire_timestamp: int, nonce: bytes, private_key: bytes
) -> bytes:
    """Encrypt bytes [0, 1008) of a private-token buffer with XChaCha20-Poly1305 (spec §4.2).

    Args:
        plaintext: the 1024-byte buffer from :func:`write_private_token`.
        protocol_id: uint64 protocol id (bound into the associated data).
        expire_timestamp: uint64 expiry in Unix seconds (bound into the associated data).
        nonce: 24-byte connect-token nonce.
        private_key: 32-byte key shared by the backend and the servers.

    Returns:
        1008 bytes of ciphertext followed by the 16-byte tag.

    Raises:
        LocalProtocolError: a size is wrong.
    """
    _check_bytes(plaintext, CONNECT_TOKEN_PRIVATE_BYTES, "plaintext")
    ad = token_associated_data(protocol_id, expire_timestamp)
    return xchacha_encrypt(private_key, nonce, plaintext[:_PRIVATE_PLAINTEXT_BYTES], ad)


def decrypt_private_token(
    encrypted: bytes, *, protocol_id: int, expire_timestamp: int, nonce: bytes, private_key: bytes
) -> bytes | None:
    """Decrypt a 1024-byte encrypted private token (spec §4.2).

    Args:
        encrypted: ciphertext and tag, 1024 bytes.
        protocol_id: uint64 protocol id used in the associated data.
        expire_timestamp: uint64 expiry used in the associated data.
        nonce: 24-byte connect-token nonce.
        private_key: 32-byte key.

    Returns:
        The 1024-byte plaintext buffer (last 16 bytes zero), or ``None`` if the tag fails.
    """
    if len(encrypted) != CONNECT_TOKEN_PRIVATE_BYTES:
        return None
    ad = token_associated_data(protocol_id, expire_timestamp)
    plaintext = xchacha_decrypt(private_key, nonce, encrypted, ad)
    if plaintext is None:
        return None
    return plaintext + bytes(MAC_BYTES)


def write_connect_token(token: ConnectToken) -> bytes:
    """Write the 2048-byte public connect token (spec §4.3).

    Args:
        token: the token fields.

    Returns:
        2048 bytes, zero-padded.

    Raises:
        LocalProtocolError: a field is out of range or has the wrong size.
    """
    _check_bytes(token.nonce, CONNECT_TOKEN_NONCE_BYTES, "nonce")
    _check_bytes(token.encrypted_private, CONNECT_TOKEN_PRIVATE_BYTES, "encrypted_private")
    _check_bytes(token.client_to_server_key, KEY_BYTES, "client_to_server_key")
    _check_bytes(token.server_to_client_key, KEY_BYTES, "server_to_client_key")
    _check_timeout(token.timeout_seconds)
    for field in ("protocol_id", "create_timestamp", "expire_timestamp"):
        value = getattr(token, field)
        if not 0 <= value < (1 << 64):
            raise LocalProtocolError(f"{field} must be a uint64, got {value}")
    body = b"".join(
        (
            _PUBLIC_HEAD.pack(
                VERSION_INFO,
                token.protocol_id,
                token.create_timestamp,
                token.expire_timestamp,
                token.nonce,
            ),
            token.encrypted_private,
            _COUNTS.pack(token.timeout_seconds, len(token.server_addresses)),
            _encode_addresses(token.server_addresses),
            token.client_to_server_key,
            token.server_to_client_key,
        )
    )
    return body + bytes(CONNECT_TOKEN_BYTES - len(body))


def read_connect_token(data: bytes) -> ConnectToken:
    """Parse and validate a 2048-byte connect token as the client does (spec §4.5).

    Args:
        data: the token bytes.

    Returns:
        The token fields.

    Raises:
        ConnectTokenError: wrong size, wrong version, create > expire, address count not in
            [1, 32], or an address type other than 1 or 2.
    """
    if len(data) != CONNECT_TOKEN_BYTES:
        raise ConnectTokenError(
            f"connect token must be {CONNECT_TOKEN_BYTES} bytes, got {len(data)}"
        )
    version, protocol_id, create, expire, nonce = _PUBLIC_HEAD.unpack_from(data, 0)
    if version != VERSION_INFO:
        raise ConnectTokenError("connect token version info is not 'NETCODE 1.02'")
    if create > expire:
        raise ConnectTokenError("connect token create timestamp is after its expire timestamp")
    private_end = _PUBLIC_HEAD.size + CONNECT_TOKEN_PRIVATE_BYTES
    timeout, count = _COUNTS.unpack_from(data, private_end)
    if not 1 <= count <= MAX_SERVERS_PER_CONNECT:
        raise ConnectTokenError(f"address count must be in [1, 32], got {count}")
    addresses, offset = _decode_addresses(data, _PUBLIC_ADDRESSES_OFFSET, count)
    return ConnectToken(
        protocol_id=protocol_id,
        create_timestamp=create,
        expire_timestamp=expire,
        nonce=bytes(nonce),
        encrypted_private=bytes(data[_PUBLIC_HEAD.size : private_end]),
        timeout_seconds=timeout,
        server_addresses=addresses,
        client_to_server_key=bytes(data[offset : offset + KEY_BYTES]),
        server_to_client_key=bytes(data[offset + KEY_BYTES : offset + 2 * KEY_BYTES]),
    )


def generate_connect_token(
    *,
    public_addresses: Sequence[Address],
    internal_addresses: Sequence[Address] | None = None,
    protocol_id: int,
    expire_seconds: int,
    timeout_seconds: int,
    client_id: int,
    user_data: bytes,
    private_key: bytes,
    now_unix: int,
    random_bytes: Callable[[int], bytes] = os.urandom,
) -> bytes:
    """Make a connect token on the web backend (spec §4.4, ``netcode_generate_connect_token``).

    Random values are drawn in the reference's order: the 24-byte nonce, then the
    client-to-server key, then the server-to-client key.

    Args:
        public_addresses: addresses the client dials, in order (1 to 32).
        internal_addresses: addresses the servers check themselves against; defaults to
            ``public_addresses``.
        protocol_id: uint64 application protocol id.
        expire_seconds: token lifetime in seconds; negative means it never expires.
        timeout_seconds: connection timeout in seconds (int32); zero or negative disables it.
        client_id: uint64 id of the authenticated user.
        user_data: up to 256 bytes of application data (zero-padded to 256).
        private_key: 32-byte key shared with the servers.
        now_unix: current Unix time in whole seconds (the create timestamp).
        random_bytes: source of cryptographic randomness, ``n -> n bytes``.

    Returns:
        The 2048-byte connect token.

    Raises:
        LocalProtocolError: an argument is out of range or has the wrong size.
    """
    if len(user_data) > USER_DATA_BYTES:
        raise LocalProtocolError(f"user_data must be at most {USER_DATA_BYTES} bytes")
    internal = public_addresses if internal_addresses is None else internal_addresses
    if len(internal) != len(public_addresses):
        raise LocalProtocolError("internal_addresses must have as many entries as public_addresses")
    expire = NEVER_EXPIRES if expire_seconds < 0 else now_unix + expire_seconds
    nonce = random_bytes(CONNECT_TOKEN_NONCE_BYTES)
    c2s = random_bytes(KEY_BYTES)
    s2c = random_bytes(KEY_BYTES)
    private = ConnectTokenPrivate(
        client_id=client_id,
        timeout_seconds=timeout_seconds,
        server_addresses=tuple(internal),
        client_to_server_key=c2s,
        server_to_client_key=s2c,
        user_data=user_data + bytes(USER_DATA_BYTES - len(user_data)),
    )
    encrypted = encrypt_private_token(
        write_private_token(private),
        protocol_id=protocol_id,
        expire_timestamp=expire,
        nonce=nonce,
        private_key=private_key,
    )
    return write_connect_token(
        ConnectToken(
            protocol_id=protocol_id,
            create_timestamp=now_unix,
            expire_timestamp=expire,
            nonce=nonce,
            encrypted_private=encrypted,
            timeout_seconds=timeout_seconds,
            server_addresses=tuple(public_addresses),
            client_to_server_key=c2s,
            server_to_client_key=s2c,
        )
    )
