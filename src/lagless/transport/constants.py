"""Constants of the netcode 1.02 connection protocol (sizes in bytes, times in seconds).

Implements netcode-1.02 spec §2 (constants table) and §12 (timing defaults). Every value is copied
from the reference; none is a lagless choice except ``INSECURE_VERSION_INFO``, the marker of the
lagless insecure mode (see ``lagless.transport.packet``; pinned by
``test_netcode_codecs.py::test_insecure_request_rejected_by_secure``).
"""

from __future__ import annotations

from typing import Final

VERSION_INFO: Final = b"NETCODE 1.02\x00"  # 13 bytes, spec §2
"""Protocol version string carried in tokens, requests and every packet's associated data."""
INSECURE_VERSION_INFO: Final = b"LAGLESS INS1\x00"  # 13 bytes, lagless insecure mode marker
"""Version string of lagless insecure-mode connection requests (never accepted by secure peers)."""

VERSION_INFO_BYTES: Final = 13  # bytes
CONNECT_TOKEN_BYTES: Final = 2048  # bytes, whole public connect token
CONNECT_TOKEN_PRIVATE_BYTES: Final = 1024  # bytes, encrypted private part including its tag
CONNECT_TOKEN_NONCE_BYTES: Final = 24  # bytes, XChaCha20 nonce
CHALLENGE_TOKEN_BYTES: Final = 300  # bytes, encrypted challenge token including its tag
KEY_BYTES: Final = 32  # bytes, every key
MAC_BYTES: Final = 16  # bytes, Poly1305 tag
USER_DATA_BYTES: Final = 256  # bytes, opaque application data in the token
MAX_SERVERS_PER_CONNECT: Final = 32  # server addresses per token
MAX_CLIENTS: Final = 256  # slots per server
MAX_PAYLOAD_BYTES: Final = 1200  # bytes per payload packet
MAX_PACKET_BYTES: Final = 1300  # bytes, receive buffer of the reference
CONNECTION_REQUEST_BYTES: Final = 1078  # bytes, fixed size of a connection request
MIN_ENCRYPTED_PACKET_BYTES: Final = 18  # bytes: prefix + 1 sequence byte + tag
REPLAY_BUFFER_SIZE: Final = 256  # entries of the replay window
PACKET_SEND_INTERVAL: Final = 0.1  # seconds (NETCODE_PACKET_SEND_RATE = 10 Hz)
NUM_DISCONNECT_PACKETS: Final = 10  # redundant disconnect packets
PACKET_QUEUE_SIZE: Final = 256  # received payloads held per client before dropping
MAX_ENCRYPTION_MAPPINGS: Final = 1024  # server encryption-map capacity (4 x 256)
MAX_CONNECT_TOKEN_ENTRIES: Final = 2048  # server token-reuse history (8 x 256)
SERVER_GLOBAL_SEQUENCE_START: Final = 1 << 63  # first sequence of challenge/denied packets
CHALLENGE_BODY_BYTES: Final = 8 + CHALLENGE_TOKEN_BYTES  # bytes, challenge/response body
KEEP_ALIVE_BODY_BYTES: Final = 8  # bytes, client index + max clients
NEVER_EXPIRES: Final = (1 << 64) - 1  # expire timestamp of a token made with expire_seconds < 0

# lagless, not netcode: indices of the default channels (``config.DEFAULT_CHANNELS``), so that
# ``client.send(RELIABLE, data)`` reads as what it does (pinned by tests/cli/test_readme.py).
RELIABLE: Final = 0  # channel 0: reliable, ordered
"""Default channel 0: reliable and ordered (resent until acked, delivered in send order)."""
RELIABLE_UNORDERED: Final = 1  # channel 1
"""Default channel 1: reliable, delivered as it arrives."""
UNRELIABLE_SEQUENCED: Final = 2  # channel 2
"""Default channel 2: unreliable, a message older than the newest received is dropped."""
UNRELIABLE: Final = 3  # channel 3
"""Default channel 3: unreliable, unordered."""
