"""AEAD primitives of netcode 1.02: per-packet ChaCha20-Poly1305 and token XChaCha20-Poly1305.

Implements netcode-1.02 spec §2 (primitives), §4.2 (token encryption), §5 (challenge token) and
§6.3 (packet nonce and associated data). Per-packet crypto uses ``cryptography``'s IETF
ChaCha20Poly1305; connect tokens use PyNaCl's XChaCha20-Poly1305-IETF (DESIGN.md "Speed rules").
A compiled build adds `lagless.transport._aead`, the same cipher in a few kilobytes of C, and
packets of at most `C_AEAD_BYTES` of plaintext go through it: every packet on an x86-64 CPU with
AVX2, where its vector code seals 1100 bytes in 1.4 µs (0.9 µs with AVX-512) against
``cryptography``'s 2.4, and packets of at most `SMALL_AEAD_BYTES` elsewhere. ``cryptography``'s
call also costs about 40 µs the first time it runs after the process slept, against 9 µs
(docs/compiled.md, "A C AEAD for every packet"). Both give the same bytes
(``tests/transport/test_small_aead.py``).

Decisions:

* The packet nonce is ``00 00 00 00 || uint64_le(sequence)`` (spec §16 trap 1), pinned by every
  ``packet_*`` vector in ``tests/conformance/test_netcode_vectors.py``.
* Decryption failures return ``None`` rather than raising, so the read path can count a drop
  without exception handling (``test_netcode_codecs.py::test_tampered_returns_none``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Final

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
from nacl.bindings import (
    crypto_aead_xchacha20poly1305_ietf_decrypt,
    crypto_aead_xchacha20poly1305_ietf_encrypt,
)
from nacl.exceptions import CryptoError

from lagless.errors import LocalProtocolError
from lagless.transport.constants import (
    CONNECT_TOKEN_NONCE_BYTES,
    KEY_BYTES,
    MAC_BYTES,
    VERSION_INFO,
)

_NONCE: Final = struct.Struct("<4xQ")
_NONCE_PACK: Final = _NONCE.pack  # bound once: the payload hot path (records.SHORT_PACK)
_PACKET_AD: Final = struct.Struct("<13sQB")

SMALL_AEAD_BYTES: Final = 256
"""Plaintexts up to this size go through the portable code of `lagless.transport._aead` (a CPU
without AVX2); above it, ``cryptography``'s vectorised cipher is faster (about 250 bytes is where
they cross)."""
C_DATA_LIMIT: Final = 2**38 - 80
"""The most plaintext bytes `lagless.transport._aead` seals and opens (RFC 8439's 32-bit block
counter allows 2^38 - 64 bytes, here for the sealed bytes, tag included)."""

Seal = Callable[[bytes, int, bytes, "bytes | None", bytes], bytes]
"""``seal(key, sequence, plaintext, associated_data, prefix)``: the prefix, the ciphertext, then
the 16-byte tag, in one buffer."""
Open = Callable[[bytes, int, bytes, "bytes | None", int], "bytes | None"]
"""``open(key, sequence, data, associated_data, offset)``: the plaintext of ``data[offset:]``
(ciphertext, then tag), or ``None`` on a bad tag."""


def _small_aead() -> tuple[Seal, Open] | None:
    try:
        from lagless.transport import _aead
    except ImportError:  # a pure-Python install: cryptography seals every packet
        return None
    return _aead.seal, _aead.open


SMALL_AEAD: Final = _small_aead()
"""``(seal, open)`` of the C cipher of a compiled build, or ``None`` (see the module docstring)."""


def _c_aead_bytes() -> int:
    try:
        from lagless.transport import _aead
    except ImportError:
        return 0
    return C_DATA_LIMIT if _aead.VECTORIZED else SMALL_AEAD_BYTES


C_AEAD_BYTES: Final = _c_aead_bytes()
"""Plaintexts up to this size go through `SMALL_AEAD`: all of them with its vector code,
`SMALL_AEAD_BYTES` with its portable code, none in a pure-Python install (bytes)."""


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

    __slots__ = ("aead", "key", "small")

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
        """``cryptography``'s AEAD object, for packets above `C_AEAD_BYTES` (or all of them)."""
        self.small: tuple[Seal, Open] | None = SMALL_AEAD
        """`SMALL_AEAD`, or ``None`` to seal everything with `aead` (tests compare the two)."""

    def encrypt(
        self, sequence: int, plaintext: bytes, associated_data: bytes | None, prefix: bytes = b""
    ) -> bytes:
        """Encrypt and authenticate ``plaintext``.

        Args:
            sequence: nonce sequence number in [0, 2^64).
            plaintext: bytes to encrypt.
            associated_data: authenticated but unencrypted bytes, or ``None`` for none.
            prefix: bytes to put first (a packet's cleartext header), neither encrypted nor
                authenticated; the C cipher writes everything into one buffer.

        Returns:
            ``prefix``, the ciphertext (as long as ``plaintext``), then the 16-byte tag.
        """
        small = self.small
        if small is not None and len(plaintext) <= C_AEAD_BYTES:
            return small[0](self.key, sequence, plaintext, associated_data, prefix)
        sealed = self.aead.encrypt(_NONCE_PACK(sequence), plaintext, associated_data)
        return prefix + sealed if prefix else sealed

    def decrypt(
        self, sequence: int, ciphertext: bytes, associated_data: bytes | None, offset: int = 0
    ) -> bytes | None:
        """Check the tag and decrypt ``ciphertext[offset:]``.

        Args:
            sequence: nonce sequence number in [0, 2^64).
            ciphertext: ciphertext followed by the 16-byte tag, from ``offset`` on.
            associated_data: the associated data used at encryption, or ``None``.
            offset: where the ciphertext starts (after a packet's cleartext header), in
                ``[0, len(ciphertext)]``; the C cipher reads it in place, without a slice.

        Returns:
            The plaintext, or ``None`` when the tag does not verify.
        """
        small = self.small
        if small is not None and len(ciphertext) - offset - MAC_BYTES <= C_AEAD_BYTES:
            return small[1](self.key, sequence, ciphertext, associated_data, offset)
        sealed = ciphertext[offset:] if offset else ciphertext
        try:
            return self.aead.decrypt(_NONCE_PACK(sequence), sealed, associated_data)
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
