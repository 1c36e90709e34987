"""Keys, protocol ids and connect tokens for the command-line programs.

Implements netcode-1.02 spec §14: by default lagless uses the protocol id and the public *test*
private key hard-coded in the netcode reference examples, so ``lagless serve`` accepts the
reference ``client`` and ``lagless connect`` reaches the reference ``server`` with no setup. That
key is public: real deployments pass their own with ``--private-key``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Final

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.transport import generate_connect_token, mark_user_data

REFERENCE_PROTOCOL_ID: Final = 0x1122334455667788  # netcode reference examples (spec §14)
REFERENCE_PRIVATE_KEY: Final = bytes.fromhex(
    "606abe6ec91910ea9a6562f66f2b30e44371d62cd19927266b3c60f4b715aba1"
)  # the reference examples' public test key (spec §14): never use it in production
KEY_BYTES: Final = 32


def parse_key(text: str | None) -> bytes:
    """Return the 32-byte key given as 64 hex digits, or the reference test key for ``None``.

    Raises:
        ConfigError: not 64 hex digits.
    """
    if text is None:
        return REFERENCE_PRIVATE_KEY
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise ConfigError("--private-key must be 64 hex digits") from None
    if len(key) != KEY_BYTES:
        raise ConfigError(f"--private-key must be 64 hex digits (32 bytes), got {len(key)} bytes")
    return key


def make_token(
    servers: Sequence[Address],
    *,
    client_id: int,
    private_key: bytes = REFERENCE_PRIVATE_KEY,
    protocol_id: int = REFERENCE_PROTOCOL_ID,
    expire_seconds: int = 30,
    timeout_seconds: int = 5,
    user_data: bytes = b"",
    lagless: bool = True,
) -> bytes:
    """Generate a 2048-byte connect token now (wall-clock Unix time, OS randomness).

    Defaults follow the reference client (expiry 30 s, timeout 5 s; spec §14). With ``lagless``
    the user data carries `LAGLESS_MARK` first (at most 248 bytes of ``user_data`` then), so a
    server serving plain netcode clients too treats the holder as a lagless client.

    Raises:
        LocalProtocolError: an argument is out of range.
    """
    return generate_connect_token(
        public_addresses=list(servers),
        protocol_id=protocol_id,
        expire_seconds=expire_seconds,
        timeout_seconds=timeout_seconds,
        client_id=client_id,
        user_data=mark_user_data(user_data) if lagless else user_data,
        private_key=private_key,
        now_unix=int(time.time()),
        random_bytes=os.urandom,
    )
