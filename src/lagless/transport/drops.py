"""Drop reasons and statistics of the netcode connection layer.

Implements STYLE §4 (second channel: count bad bytes by reason) for netcode-1.02 spec §6.5 (read
order), §9 (client receive rules), §10.1 (request checks), §10.3 (server dispatch) and §10.5
(response checks). Members are listed in the order the checks run. Decisions:

* §10.5 step 3 ("the mapping must have a send key") cannot fail here: the response was decrypted
  with that same mapping a moment earlier, so it has no member.
* "Server full" is not a drop: the server answers with a denied packet and counts it in
  ``NetcodeStatistics.denied_sent`` (``test_netcode_session.py::test_server_full_denies``).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType


class DropReason(enum.Enum):
    """Why a received datagram was dropped, in read order."""

    DATAGRAM_TOO_SHORT = "datagram_too_short"
    """Server: the datagram is 1 byte or less (spec §10.3)."""
    NO_ENCRYPTION_MAPPING = "no_encryption_mapping"
    """Server: a non-request packet from an address with no live key (spec §10.3)."""
    WRONG_SOURCE_ADDRESS = "wrong_source_address"
    """Client: the datagram does not come from the server being talked to (spec §9)."""
    PACKET_TYPE_NOT_ACCEPTED = "packet_type_not_accepted"
    """This side never accepts the packet type (spec §6.1, §6.5 step 2)."""
    REQUEST_WRONG_SIZE = "request_wrong_size"
    """A connection request is not exactly 1078 bytes (spec §10.1 step 1)."""
    NO_PRIVATE_KEY = "no_private_key"
    """A secure connection request reached a reader without a private key (spec §10.1 step 2)."""
    VERSION_MISMATCH = "version_mismatch"
    """The request's version info is not this side's (spec §10.1 step 3)."""
    PROTOCOL_ID_MISMATCH = "protocol_id_mismatch"
    """The request's protocol id is not the server's (spec §10.1 step 4)."""
    TOKEN_EXPIRED = "token_expired"
    """The request's expire timestamp is at or before the server's Unix time (spec §10.1 step 5)."""
    TOKEN_DECRYPT_FAILED = "token_decrypt_failed"
    """The private connect token does not decrypt (spec §10.1 step 6)."""
    TOKEN_INVALID = "token_invalid"
    """The decrypted private token does not parse (spec §10.1 step 7)."""
    SERVER_ADDRESS_NOT_IN_TOKEN = "server_address_not_in_token"
    """The server's public address is not among the token's addresses (spec §10.1 step 8)."""
    ADDRESS_ALREADY_CONNECTED = "address_already_connected"
    """A connected client already uses the source address (spec §10.1 step 9, §10.5 step 4)."""
    CLIENT_ID_ALREADY_CONNECTED = "client_id_already_connected"
    """A connected client already has this client id (spec §10.1 step 10, §10.5 step 4)."""
    TOKEN_REUSED = "token_reused"
    """The token was already used from a different address (spec §10.1 step 11)."""
    ENCRYPTION_MAPPING_TABLE_FULL = "encryption_mapping_table_full"
    """No room for a new encryption mapping (spec §10.1 step 13)."""
    PACKET_TOO_SHORT = "packet_too_short"
    """An encrypted packet is shorter than 18 bytes (spec §6.5 step 1)."""
    INVALID_PACKET_TYPE = "invalid_packet_type"
    """The prefix's type nibble is 0 with a sequence count, or 7 and above (spec §6.5 step 2)."""
    INVALID_SEQUENCE_BYTES = "invalid_sequence_bytes"
    """The prefix's sequence byte count is not in [1, 8] (spec §6.5 step 3)."""
    TRUNCATED = "truncated"
    """The packet is shorter than prefix + sequence + tag (spec §6.5 step 3)."""
    REPLAYED = "replayed"
    """The sequence number was already received (spec §6.5 step 5, §7)."""
    DECRYPT_FAILED = "decrypt_failed"
    """The packet's tag does not verify (spec §6.5 step 6)."""
    WRONG_BODY_SIZE = "wrong_body_size"
    """The decrypted body has the wrong size for its type (spec §6.5 step 8)."""
    CHALLENGE_TOKEN_INVALID = "challenge_token_invalid"
    """A response's challenge token does not decrypt (spec §10.5 step 2)."""
    NOT_CONNECTED = "not_connected"
    """Server: a keep-alive, payload or disconnect from an address without a slot (spec §10.3)."""
    UNEXPECTED_IN_STATE = "unexpected_in_state"
    """Client: a valid packet the current state ignores (spec §9 receive table)."""
    PAYLOAD_QUEUE_FULL = "payload_queue_full"
    """256 received payloads of one client are already waiting for the application."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NetcodeStatistics:
    """A snapshot of one endpoint's counters (trio-style ``statistics()``)."""

    dropped: Mapping[DropReason, int]
    """Datagrams dropped, per reason; every reason is present (0 if never seen)."""
    datagrams_received: int
    """Datagrams handed to ``receive_datagram``."""
    datagrams_sent: int
    """Datagrams returned by ``datagrams_to_send``."""
    bytes_received: int
    """Bytes handed to ``receive_datagram`` (UDP payload only, no IP/UDP headers)."""
    bytes_sent: int
    """Bytes returned by ``datagrams_to_send`` (UDP payload only)."""
    payloads_received: int
    """Payload packets delivered to the application."""
    payloads_sent: int
    """Payload packets queued by the application."""
    denied_sent: int
    """Connection-denied packets sent because the server was full (server only)."""
    verbs_on_gone: int
    """Verbs (send, disconnect) that named a connection that had already gone: no-ops."""


class DropCounter:
    """Mutable per-reason counters and traffic totals behind ``statistics()``."""

    __slots__ = (
        "bytes_received",
        "bytes_sent",
        "datagrams_received",
        "datagrams_sent",
        "denied_sent",
        "dropped",
        "payloads_received",
        "payloads_sent",
        "verbs_on_gone",
    )

    def __init__(self) -> None:
        """Start every counter at zero."""
        self.dropped: dict[DropReason, int] = dict.fromkeys(DropReason, 0)
        """Drops per reason."""
        self.datagrams_received = 0
        self.datagrams_sent = 0
        self.bytes_received = 0
        self.bytes_sent = 0
        self.payloads_received = 0
        self.payloads_sent = 0
        self.denied_sent = 0
        self.verbs_on_gone = 0

    def snapshot(self) -> NetcodeStatistics:
        """Return the current values as a frozen :class:`NetcodeStatistics`.

        Returns:
            A copy that later traffic does not change.
        """
        return NetcodeStatistics(
            dropped=MappingProxyType(dict(self.dropped)),
            datagrams_received=self.datagrams_received,
            datagrams_sent=self.datagrams_sent,
            bytes_received=self.bytes_received,
            bytes_sent=self.bytes_sent,
            payloads_received=self.payloads_received,
            payloads_sent=self.payloads_sent,
            denied_sent=self.denied_sent,
            verbs_on_gone=self.verbs_on_gone,
        )
