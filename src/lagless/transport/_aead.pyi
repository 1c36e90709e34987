"""Types of the C cipher of a compiled build (``_aead.c``; see `lagless.transport.crypto`)."""

VECTORIZED: bool
"""Whether this build runs vector code on this CPU (x86-64 with AVX2), which makes it faster
than ``cryptography`` for packets of every size; the portable code is faster only up to about
256 bytes."""
AVX512: bool
"""Whether it runs its AVX-512 code (the CPU also has AVX-512 F and BW): sixteen ChaCha20 blocks
and eight Poly1305 blocks at a time."""

def seal(
    key: bytes, sequence: int, plaintext: bytes, aad: bytes | None, prefix: bytes | None = None, /
) -> bytes:
    """ChaCha20-Poly1305-IETF with the nonce ``00 00 00 00 || uint64_le(sequence)``.

    Returns ``prefix`` (cleartext, not authenticated), the ciphertext, then the 16-byte tag.
    """

def open(
    key: bytes, sequence: int, sealed: bytes, aad: bytes | None, offset: int = 0, /
) -> bytes | None:
    """The plaintext of ``sealed[offset:]`` (ciphertext, then tag), or ``None`` on a bad tag.

    Raises ValueError when ``offset`` is outside ``[0, len(sealed)]``.
    """
