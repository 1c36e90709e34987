"""netcode challenge tokens: the server-only proof that a client owns its source address.

Implements netcode-1.02 spec §5. The token is ChaCha20-Poly1305-IETF under the server's random
challenge key with nonce ``00000000 || uint64_le(challenge sequence)`` and no associated data.
Decisions: decryption returns ``None`` on any failure instead of raising, so the server counts a
``CHALLENGE_TOKEN_INVALID`` drop (``test_netcode_session.py::test_forged_response_is_dropped``).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from lagless.errors import LocalProtocolError
from lagless.transport.constants import CHALLENGE_TOKEN_BYTES, MAC_BYTES, USER_DATA_BYTES
from lagless.transport.crypto import PacketCipher

_CLIENT_ID: Final = struct.Struct("<Q")
_PLAINTEXT_BYTES: Final = CHALLENGE_TOKEN_BYTES - MAC_BYTES


@dataclass(frozen=True, slots=True, kw_only=True)
class ChallengeToken:
    """The contents of a challenge token (spec §5)."""

    client_id: int
    """uint64 client id, copied from the private connect token."""
    user_data: bytes
    """256 bytes of user data, copied from the private connect token."""


def write_challenge_token(token: ChallengeToken) -> bytes:
    """Write the 300-byte challenge-token plaintext: client id, user data, 36 zero bytes.

    Args:
        token: the fields.

    Returns:
        300 bytes.

    Raises:
        LocalProtocolError: ``user_data`` is not 256 bytes or ``client_id`` is not a uint64.
    """
    if len(token.user_data) != USER_DATA_BYTES:
        raise LocalProtocolError(f"user_data must be {USER_DATA_BYTES} bytes")
    if not 0 <= token.client_id < (1 << 64):
        raise LocalProtocolError(f"client_id must be a uint64, got {token.client_id}")
    body = _CLIENT_ID.pack(token.client_id) + token.user_data
    return body + bytes(CHALLENGE_TOKEN_BYTES - len(body))


def read_challenge_token(plaintext: bytes) -> ChallengeToken:
    """Parse a decrypted challenge token.

    Args:
        plaintext: at least 264 bytes.

    Returns:
        The fields.

    Raises:
        LocalProtocolError: the buffer is shorter than 264 bytes.
    """
    if len(plaintext) < _CLIENT_ID.size + USER_DATA_BYTES:
        raise LocalProtocolError("challenge token plaintext must be at least 264 bytes")
    (client_id,) = _CLIENT_ID.unpack_from(plaintext, 0)
    return ChallengeToken(client_id=client_id, user_data=bytes(plaintext[8 : 8 + USER_DATA_BYTES]))


def encrypt_challenge_token(plaintext: bytes, sequence: int, cipher: PacketCipher) -> bytes:
    """Encrypt bytes [0, 284) of a challenge token (spec §5).

    Args:
        plaintext: the 300-byte buffer from :func:`write_challenge_token`.
        sequence: the challenge sequence number (nonce).
        cipher: the server's challenge-key cipher.

    Returns:
        284 ciphertext bytes followed by the 16-byte tag.

    Raises:
        LocalProtocolError: the plaintext is not 300 bytes.
    """
    if len(plaintext) != CHALLENGE_TOKEN_BYTES:
        raise LocalProtocolError(f"plaintext must be {CHALLENGE_TOKEN_BYTES} bytes")
    return cipher.encrypt(sequence, plaintext[:_PLAINTEXT_BYTES], None)


def decrypt_challenge_token(encrypted: bytes, sequence: int, cipher: PacketCipher) -> bytes | None:
    """Decrypt an encrypted challenge token (spec §10.5 step 2).

    Args:
        encrypted: 300 bytes of ciphertext and tag.
        sequence: the challenge sequence number carried beside it.
        cipher: the server's challenge-key cipher.

    Returns:
        The 300-byte plaintext (last 16 bytes zero), or ``None`` if the tag fails.
    """
    if len(encrypted) != CHALLENGE_TOKEN_BYTES:
        return None
    plaintext = cipher.decrypt(sequence, encrypted, None)
    return None if plaintext is None else plaintext + bytes(MAC_BYTES)
