"""AEAD primitives of netcode 1.02: per-packet ChaCha20-Poly1305 and token XChaCha20-Poly1305.

Implements netcode-1.02 spec §2 (primitives), §4.2 (token encryption), §5 (challenge token) and
§6.3 (packet nonce and associated data). Per-packet crypto uses ``cryptography``'s IETF
ChaCha20Poly1305; connect tokens use PyNaCl's XChaCha20-Poly1305-IETF (DESIGN.md "Speed rules").
Decisions:

* The packet nonce is ``00 00 00 00 || uint64_le(sequence)`` (spec §16 trap 1), pinned by every
  ``packet_*`` vector in ``tests/conformance/test_netcode_vectors.py``.
* Decryption failures return ``None`` rather than raising, so the read path can count a drop
  without exception handling (``test_netcode_codecs.py::test_tampered_returns_none``).
"""

from __future__ import annotations

import struct
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from nacl.bindings import (
    crypto_aead_xchacha20poly1305_ietf_decrypt,
    crypto_aead_xchacha20poly1305_ietf_encrypt,
)
from nacl.exceptions import CryptoError

from lagless.errors import LocalProtocolError
from lagless.transport.constants import CONNECT_TOKEN_NONCE_BYTES, KEY_BYTES, VERSION_INFO

_NONCE: Final = struct.Struct("<4xQ")
_NONCE_PACK: Final = _NONCE.pack  # bound once: the payload hot path (records.SHORT_PACK)
NONCE_PAD: Final = bytes(4)
"""The 4 zero bytes in front of the uint64 LE sequence in a packet nonce."""
_PACKET_AD: Final = struct.Struct("<13sQB")


def packet_nonce(sequence: int) -> bytes:
    """Return the 12-byte IETF nonce of a packet: 4 zero bytes then the uint64 LE sequence.

    Args:
        sequence: packet (or challenge) sequence number in [0, 2^64).

    Returns:
        12 bytes.
    """
    return _NONCE.pack(sequence)


def packet_associated_data(protocol_id: int, prefix: int) -> bytes:
    """Return the 22-byte associated data of an encrypted packet (spec §6.3).

    Args:
        protocol_id: the uint64 protocol id.
        prefix: the packet's prefix byte.

    Returns:
        ``version info (13) || uint64_le(protocol_id) || prefix (1)``.
    """
    return _PACKET_AD.pack(VERSION_INFO, protocol_id, prefix)


def _check_key(key: bytes, field: str) -> None:
    if len(key) != KEY_BYTES:
        raise LocalProtocolError(f"{field} must be {KEY_BYTES} bytes, got {len(key)}")


class PacketCipher:
    """ChaCha20-Poly1305-IETF under one 32-byte key, with netcode's sequence nonces.

    One object per direction key; building it once per connection keeps the per-packet cost to
    the AEAD call itself.
    """

    __slots__ = ("aead", "key")

    def __init__(self, key: bytes) -> None:
        """Create the cipher.

        Args:
            key: 32-byte key.

        Raises:
            LocalProtocolError: the key is not 32 bytes.
        """
        _check_key(key, "key")
        self.key: bytes = bytes(key)
        """The 32-byte key."""
        self.aead = ChaCha20Poly1305(self.key)
        """The AEAD object; the payload hot path (``packet.read_payload_packet``) calls it."""

    def encrypt(self, sequence: int, plaintext: bytes, associated_data: bytes | None) -> bytes:
        """Encrypt and authenticate ``plaintext``.

        Args:
            sequence: nonce sequence number in [0, 2^64).
            plaintext: bytes to encrypt.
            associated_data: authenticated but unencrypted bytes, or ``None`` for none.

        Returns:
            Ciphertext (same length as ``plaintext``) followed by the 16-byte tag.
        """
        return self.aead.encrypt(_NONCE_PACK(sequence), plaintext, associated_data)

    def decrypt(
        self, sequence: int, ciphertext: bytes, associated_data: bytes | None
    ) -> bytes | None:
        """Check the tag and decrypt.

        Args:
            sequence: nonce sequence number in [0, 2^64).
            ciphertext: ciphertext followed by the 16-byte tag.
            associated_data: the associated data used at encryption, or ``None``.

        Returns:
            The plaintext, or ``None`` when the tag does not verify.
        """
        try:
            return self.aead.decrypt(_NONCE_PACK(sequence), ciphertext, associated_data)
        except InvalidTag:
            return None


def xchacha_encrypt(key: bytes, nonce: bytes, plaintext: bytes, associated_data: bytes) -> bytes:
    """XChaCha20-Poly1305-IETF encryption, used only for the private connect token (spec §4.2).

    Args:
        key: 32-byte private key.
        nonce: 24-byte connect-token nonce.
        plaintext: bytes to encrypt.
        associated_data: authenticated bytes.

    Returns:
        Ciphertext followed by the 16-byte tag.

    Raises:
        LocalProtocolError: the key or nonce has the wrong size.
    """
    _check_key(key, "private_key")
    if len(nonce) != CONNECT_TOKEN_NONCE_BYTES:
        raise LocalProtocolError(
            f"nonce must be {CONNECT_TOKEN_NONCE_BYTES} bytes, got {len(nonce)}"
        )
    return bytes(crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, associated_data, nonce, key))


def xchacha_decrypt(
    key: bytes, nonce: bytes, ciphertext: bytes, associated_data: bytes
) -> bytes | None:
    """XChaCha20-Poly1305-IETF decryption (spec §4.2).

    Args:
        key: 32-byte private key.
        nonce: 24-byte connect-token nonce.
        ciphertext: ciphertext followed by the 16-byte tag.
        associated_data: authenticated bytes.

    Returns:
        The plaintext, or ``None`` when the tag does not verify or a size is wrong.
    """
    if len(key) != KEY_BYTES or len(nonce) != CONNECT_TOKEN_NONCE_BYTES:
        return None
    try:
        return bytes(
            crypto_aead_xchacha20poly1305_ietf_decrypt(ciphertext, associated_data, nonce, key)
        )
    except CryptoError:
        return None
