"""Sans-I/O netcode 1.02 server: slots, handshake, encryption mappings, keep-alives, timeouts.

Implements netcode-1.02 spec §10 (request processing §10.1, encryption mappings §10.2, receive
dispatch §10.3, token-reuse history §10.4, responses §10.5, connected clients §10.6) and the
amplification rules of §11. The "raw" mode: payloads are the application's own datagrams.
Decisions:

* A server behind a proxy or NAT is dialled at an address other than the one it binds: the
  config lists those as ``extra_public_addresses`` and a token naming any one of the server's
  public addresses passes step 8 of §10.1, as the reference server's address list does
  (``tests/cli/test_secure_proxy.py``).
* Token expiry needs Unix time while ``now`` is monotonic: the constructor takes
  ``unix_time_offset`` (``unix = now + unix_time_offset``), set once by the driver
  (``test_netcode_session.py::test_expired_token``).
* The token-reuse history is a dict keyed by tag that evicts the oldest entry past 2048, the same
  observable behaviour as the reference's constant-work scan
  (``test_netcode_session.py::test_token_reuse_from_other_address``).
* A payload from a client whose 256-payload queue is full still refreshes its last-receive time,
  then is dropped as ``PAYLOAD_QUEUE_FULL`` (``test_netcode_session.py::test_payload_queue_full``).
* Insecure mode (``NetcodeServerConfig(insecure=True)``) skips the token, the server-address
  match and the reuse history, keeps the challenge round trip, and logs a WARNING
  (``test_netcode_session.py::test_insecure_session``).
* Slots are reused, so the verbs take a ``connection_id`` that is never reused (counting from 1,
  carried by every server event). A verb on a connection that has gone away is a no-op that
  returns False: events of a freed slot may still be queued when the slot's next client
  connects, and a late echo must never reach that client
  (``test_server_robustness.py::test_late_echo_never_reaches_next_client``,
  ``test_netcode_session.py::test_server_disconnect``). An id this server
  never issued is a programming error and raises ``LocalProtocolError``.
* A connection request from the address of a connected slot, or with its client id, is ignored
  by §10.1 steps 9 and 10 until that slot times out, which locks out a client that restarted
  behind the same NAT port (or a newcomer the NAT gave a vanished client's port) for the whole
  token timeout. Here a slot that has been silent for ``takeover_after`` (1 s; a live client
  sends a keep-alive every 0.1 s) is freed as ``REPLACED`` once the request has passed the
  token-reuse check, and the request goes ahead; a slot that is still heard from keeps its
  address and id (``test_server_robustness.py::test_silent_slot_is_replaced``).
* A wrapping layer that consumes payloads at once (``Server`` with a ``Connection`` per slot)
  passes a ``payload_sink`` and calls :meth:`NetcodeServer.deliver_directly` for such a slot:
  its payloads then go to the sink as they are read, with no ``PayloadReceived`` and no queue.
  Well-formed payload packets of connected slots take a short read path
  (``packet.read_payload_packet``) with the same checks and drop reasons as ``read_packet``
  (``test_netcode_session.py::test_direct_delivery``).
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

from lagless._types import Address
from lagless.errors import ConfigError, LocalProtocolError
from lagless.transport.address import normalize_address
from lagless.transport.challenge import (
    ChallengeToken,
    decrypt_challenge_token,
    encrypt_challenge_token,
    read_challenge_token,
    write_challenge_token,
)
from lagless.transport.constants import (
    KEY_BYTES,
    MAC_BYTES,
    MAX_CLIENTS,
    MAX_CONNECT_TOKEN_ENTRIES,
    MAX_ENCRYPTION_MAPPINGS,
    MAX_PAYLOAD_BYTES,
    NUM_DISCONNECT_PACKETS,
    PACKET_QUEUE_SIZE,
    PACKET_SEND_INTERVAL,
    SERVER_GLOBAL_SEQUENCE_START,
)
from lagless.transport.crypto import PacketCipher
from lagless.transport.drops import DropReason
from lagless.transport.netcode_endpoint import NetcodeEndpoint, check_endpoint_fields
from lagless.transport.netcode_events import ClientConnected, ClientDisconnected, PayloadReceived
from lagless.transport.netcode_state import ServerDisconnectReason
from lagless.transport.packet import (
    SERVER_ACCEPTED_TYPES,
    ConnectionChallengePacket,
    ConnectionDeniedPacket,
    ConnectionResponsePacket,
    DisconnectPacket,
    EncryptedPacket,
    InsecureConnectionRequestPacket,
    KeepAlivePacket,
    PayloadPacket,
    VerifiedRequest,
    payload_associated_data,
    read_packet,
    read_payload_packet,
    write_packet,
    write_payload_packet,
)
from lagless.transport.replay import ReplayWindow

# bound once: compiled, heapq.heappush(...) is a generic attribute lookup and call
_heappop: Final = heapq.heappop
_heappush: Final = heapq.heappush

PayloadSink: TypeAlias = Callable[[int, bytes, float], None]
"""Takes ``(connection_id, payload, now)`` for each payload of a slot delivered directly."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NetcodeServerConfig:
    """Configuration of a :class:`NetcodeServer`."""

    protocol_id: int
    """uint64 application protocol id; requests with another id are dropped."""
    private_key: bytes | None = None
    """32-byte key shared with the token backend; required unless ``insecure``."""
    public_address: Address
    """The address clients dial; must equal one of a token's addresses (spec §10.1 step 8)."""
    extra_public_addresses: tuple[Address, ...] = ()
    """Further addresses clients may dial to reach this server (e.g. a proxy or NAT in front of
    it); a token naming any of them, or ``public_address``, is accepted (spec §10.1 step 8)."""
    max_clients: int = MAX_CLIENTS  # netcode NETCODE_MAX_CLIENTS
    """Number of slots, in [1, 256]."""
    keep_alive_interval: float = PACKET_SEND_INTERVAL  # seconds; netcode 10 Hz send rate
    """Seconds of silence towards a client before a keep-alive is sent (> 0)."""
    num_disconnect_packets: int = NUM_DISCONNECT_PACKETS  # netcode NETCODE_NUM_DISCONNECT_PACKETS
    """Redundant disconnect packets sent by :meth:`NetcodeServer.disconnect` (1 to 100)."""
    payload_queue_size: int = PACKET_QUEUE_SIZE  # netcode NETCODE_PACKET_QUEUE_SIZE
    """Received payloads held per client before new ones are dropped (>= 1)."""
    insecure: bool = False  # lagless: development only, see packet.py
    """Use the unencrypted, token-less lagless insecure mode (clients must match)."""
    takeover_after: float = 1.0  # lagless: seconds; math.inf keeps the reference's rule
    """Seconds a connected slot must have been silent before a connection request from its
    address, or with its client id, frees it (``REPLACED``) and goes ahead (> 0; ``math.inf``
    ignores such requests until the slot times out, as spec §10.1 steps 9 and 10 do)."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: a field is out of range.
        """
        if not 0 <= self.protocol_id < (1 << 64):
            raise ConfigError(f"protocol_id must be a uint64, got {self.protocol_id}")
        if not self.insecure and (self.private_key is None or len(self.private_key) != KEY_BYTES):
            raise ConfigError("private_key must be 32 bytes (or set insecure=True)")
        if not self.insecure:
            for address in (self.public_address, *self.extra_public_addresses):
                try:
                    normalize_address(address)
                except LocalProtocolError as error:
                    raise ConfigError(f"public address {address!r}: {error}") from None
        if not 1 <= self.max_clients <= MAX_CLIENTS:
            raise ConfigError(f"max_clients must be in [1, {MAX_CLIENTS}], got {self.max_clients}")
        if not (math.isfinite(self.keep_alive_interval) and self.keep_alive_interval > 0):
            raise ConfigError(
                f"keep_alive_interval must be > 0 seconds, got {self.keep_alive_interval}"
            )
        if not self.takeover_after > 0:  # also rejects NaN; math.inf is allowed
            raise ConfigError(f"takeover_after must be > 0 seconds, got {self.takeover_after}")
        check_endpoint_fields(self.num_disconnect_packets, self.payload_queue_size)


class _Mapping:
    """Keys of one source address (spec §10.2); in the table only while the handshake is open."""

    __slots__ = ("expire_time", "last_access", "receive", "send", "timeout")

    def __init__(
        self, send: PacketCipher | None, receive: PacketCipher | None, timeout: int, now: float
    ) -> None:
        self.send = send
        self.receive = receive
        self.timeout = timeout
        self.last_access = now
        self.expire_time = now + timeout if timeout >= 0 else -1.0

    def expired(self, now: float) -> bool:
        if self.timeout > 0 and self.last_access + self.timeout < now:
            return True
        return self.expire_time >= 0 and self.expire_time < now


class _Slot:
    """One connected client (spec §10.5 step 6, §10.6)."""

    __slots__ = (
        "address",
        "client_id",
        "confirmed",
        "connection_id",
        "direct",
        "index",
        "last_receive",
        "last_send",
        "mapping",
        "replay",
        "sequence",
        "timeout",
    )

    def __init__(
        self,
        index: int,
        connection_id: int,
        address: Address,
        client_id: int,
        mapping: _Mapping,
        now: float,
    ) -> None:
        self.index = index
        self.connection_id = connection_id
        self.address = address
        self.client_id = client_id
        self.mapping = mapping
        self.timeout = mapping.timeout
        self.sequence = 0
        self.last_send = now
        self.last_receive = now
        self.confirmed = False
        self.direct = False
        self.replay = ReplayWindow()


class NetcodeServer(NetcodeEndpoint):
    """A netcode server as a sans-I/O state machine (STYLE §3)."""

    def __init__(
        self,
        *,
        config: NetcodeServerConfig,
        random_bytes: Callable[[int], bytes] = os.urandom,
        unix_time_offset: float = 0.0,
        payload_sink: PayloadSink | None = None,
    ) -> None:
        """Create and start the server (spec §10.6 ``start``).

        Args:
            config: the server's configuration.
            random_bytes: source of cryptographic randomness (draws the 32-byte challenge key).
            unix_time_offset: seconds to add to ``now`` to get Unix time (token expiry checks).
            payload_sink: where the payloads of slots named in `deliver_directly` go.
        """
        super().__init__(
            role="server",
            insecure=config.insecure,
            insecure_note="no connect tokens, no encryption",
        )
        self._config = config
        self._unix_offset = unix_time_offset
        self._public_addresses = frozenset(
            (config.public_address, *config.extra_public_addresses)
            if config.insecure
            else map(normalize_address, (config.public_address, *config.extra_public_addresses))
        )
        self._challenge_cipher = PacketCipher(random_bytes(KEY_BYTES))
        self._challenge_sequence = 0
        self._global_sequence = SERVER_GLOBAL_SEQUENCE_START
        self._slots: list[_Slot | None] = [None] * config.max_clients
        self._by_address: dict[Address, _Slot] = {}
        self._by_client_id: dict[int, _Slot] = {}
        self._mappings: dict[Address, _Mapping] = {}
        self._token_history: dict[bytes, Address] = {}
        self._by_connection: dict[int, _Slot] = {}
        self._last_connection_id = 0
        self._queued: dict[int, int] = {}  # connection id -> payloads waiting in the event queue
        self._timers: list[tuple[float, int]] = []  # (deadline s, connection id), one per slot
        self._payload_sink = payload_sink
        self._payload_ad = payload_associated_data(config.protocol_id)

    # -- introspection ---------------------------------------------------------------------

    @property
    def num_connected_clients(self) -> int:
        """Number of occupied slots."""
        return len(self._by_address)

    def is_client_connected(self, client_index: int) -> bool:
        """Return whether slot ``client_index`` is occupied.

        Args:
            client_index: slot index.

        Returns:
            True if a client owns the slot.
        """
        return 0 <= client_index < len(self._slots) and self._slots[client_index] is not None

    def client_address(self, client_index: int) -> Address:
        """Return the address of the client in slot ``client_index``.

        Args:
            client_index: slot index of a connected client.

        Returns:
            The client's source address.

        Raises:
            LocalProtocolError: the slot is empty or out of range.
        """
        slot = self._slots[client_index] if 0 <= client_index < len(self._slots) else None
        if slot is None:
            raise LocalProtocolError(f"client_index {client_index} is not a connected client")
        return slot.address

    def is_connected(self, connection_id: int) -> bool:
        """Return whether the connection ``connection_id`` is still open.

        Raises:
            LocalProtocolError: this server never issued ``connection_id``.
        """
        return self._live(connection_id) is not None

    def deliver_directly(self, connection_id: int) -> None:
        """Hand this connection's payloads to the ``payload_sink`` as they are read.

        They no longer become `PayloadReceived` events nor count against the payload queue.
        Call it on the connection's ``ClientConnected``, before the next datagram.

        Raises:
            LocalProtocolError: no ``payload_sink`` was given, or the id was never issued.
        """
        if self._payload_sink is None:
            raise LocalProtocolError("deliver_directly needs a payload_sink")
        slot = self._live(connection_id)
        if slot is not None:
            slot.direct = True

    def count_verb_on_gone(self) -> None:
        """Count a verb of a wrapping layer that named a connection that has gone away."""
        self._counter.verbs_on_gone += 1

    # -- application verbs -----------------------------------------------------------------

    def send_payload(self, connection_id: int, data: bytes) -> bool:
        """Queue one payload packet to a connected client (spec §10.6).

        While the client is unconfirmed a keep-alive goes first, so it learns its slot even if the
        first keep-alive was lost. Pump the object afterwards (see ``lagless.io.drive.pump``).

        Args:
            connection_id: the client's identity from its ``ClientConnected``.
            data: 1 to 1200 bytes.

        Returns:
            True if queued, False if that connection has gone away (nothing is sent).

        Raises:
            LocalProtocolError: ``data`` is empty or over 1200 bytes, or the id was never issued.
        """
        return self.send_payloads(connection_id, (data,))

    def send_payloads(self, connection_id: int, payloads: Sequence[bytes]) -> bool:
        """Queue one payload packet per item of ``payloads`` to a connected client, in order.

        What `send_payload` does for each, with one lookup of the connection.

        Returns:
            True if queued, False if that connection has gone away (nothing is sent).

        Raises:
            LocalProtocolError: a payload is empty or over 1200 bytes (nothing is sent), or the
                id was never issued.
        """
        for data in payloads:
            if not 1 <= len(data) <= MAX_PAYLOAD_BYTES:
                raise LocalProtocolError(
                    f"payload must be 1 to {MAX_PAYLOAD_BYTES} bytes, got {len(data)}"
                )
        slot = self._live(connection_id)
        if slot is None:
            self._counter.verbs_on_gone += 1
            return False
        now = self._now
        cipher = slot.mapping.send
        associated = self._payload_ad
        outbox = self._outbox
        address = slot.address
        written = 0
        for data in payloads:
            if not slot.confirmed:
                self._send_keep_alive(slot, now)
            packet = write_payload_packet(slot.sequence, data, cipher, associated)
            outbox.append((packet, address))
            written += len(packet)
            slot.sequence += 1
        self._outbox_bytes += written
        slot.last_send = now
        slot.mapping.last_access = now
        self._counter.payloads_sent += len(payloads)
        return True

    def disconnect(
        self,
        connection_id: int,
        reason: ServerDisconnectReason = ServerDisconnectReason.SERVER_DISCONNECTED,
    ) -> bool:
        """Disconnect a client with redundant disconnect packets and free its slot (spec §10.6).

        Emits :class:`ClientDisconnected` with ``reason``. Pump the object afterwards (see
        ``lagless.io.drive.pump``).

        Args:
            connection_id: the client's identity from its ``ClientConnected``.
            reason: what the ``ClientDisconnected`` event reports.

        Returns:
            True if it was connected, False if it had already gone (nothing happens).

        Raises:
            LocalProtocolError: the id was never issued.
        """
        slot = self._live(connection_id)
        if slot is None:
            self._counter.verbs_on_gone += 1
            return False
        for _ in range(self._config.num_disconnect_packets):
            self._send_to(slot, DisconnectPacket(sequence=slot.sequence), self._now)
        self._free(slot, reason)
        return True

    def disconnect_all(self) -> None:
        """Disconnect every client (what the reference's ``stop`` does first).

        Pump the object afterwards (see ``lagless.io.drive.pump``).
        """
        for slot in list(self._by_address.values()):
            self.disconnect(slot.connection_id)

    # -- sans-I/O interface ----------------------------------------------------------------

    def _receive(self, data: bytes, addr: Address, now: float) -> None:
        # spec §10.3 receive dispatch: length, encryption mapping, then read_packet's checks.
        slot = self._by_address.get(addr)
        if slot is not None and slot.direct:
            payload = read_payload_packet(data, slot.mapping.receive, slot.replay, self._payload_ad)
            if payload is not None:
                if isinstance(payload, DropReason):
                    self._drop(payload, addr)
                    return
                slot.last_receive = now
                slot.confirmed = True
                self._counter.payloads_received += 1
                assert self._payload_sink is not None  # invariant: checked by deliver_directly
                self._payload_sink(slot.connection_id, payload, now)
                return
        if len(data) <= 1:
            self._drop(DropReason.DATAGRAM_TOO_SHORT, addr)
            return
        mapping = slot.mapping if slot is not None else self._live_mapping(addr, now)
        if mapping is None and data[0] != 0:
            self._drop(DropReason.NO_ENCRYPTION_MAPPING, addr)
            return
        result = read_packet(
            data,
            protocol_id=self._config.protocol_id,
            accepted=SERVER_ACCEPTED_TYPES,
            cipher=mapping.receive if mapping is not None else None,
            replay=slot.replay if slot is not None else None,
            private_key=self._config.private_key,
            now_unix=now + self._unix_offset,
            insecure=self._config.insecure,
        )
        if isinstance(result, DropReason):
            self._drop(result, addr)
        elif isinstance(result, VerifiedRequest):
            token = result.token
            if self._public_addresses.isdisjoint(token.server_addresses):
                self._drop(DropReason.SERVER_ADDRESS_NOT_IN_TOKEN, addr)
                return
            self._process_request(
                addr,
                ChallengeToken(client_id=token.client_id, user_data=token.user_data),
                token.timeout_seconds,
                (token.server_to_client_key, token.client_to_server_key),
                result.packet.encrypted_private_token[-MAC_BYTES:],
                now,
            )
        elif isinstance(result, InsecureConnectionRequestPacket):
            identity = ChallengeToken(client_id=result.client_id, user_data=result.user_data)
            self._process_request(addr, identity, result.timeout_seconds, None, None, now)
        elif isinstance(result, ConnectionResponsePacket):
            assert mapping is not None  # invariant: non-request packets need a mapping
            self._process_response(addr, result, mapping, now)
        elif slot is None:
            self._drop(DropReason.NOT_CONNECTED, addr)
        else:
            self._process_connected(slot, result, addr, now)

    def handle_timer(self, now: float) -> None:
        """Send due keep-alives, then free timed-out slots (spec §10.6).

        Harmless when called early. Pump the object afterwards (see ``lagless.io.drive.pump``).

        Args:
            now: current time in seconds.
        """
        self._now = now
        timers = self._timers
        by_connection = self._by_connection
        while timers and timers[0][0] <= now:
            _, connection_id = _heappop(timers)
            slot = by_connection.get(connection_id)
            if slot is None:
                continue  # freed since the entry was pushed
            if slot.timeout > 0 and slot.last_receive + slot.timeout <= now:
                self._free(slot, ServerDisconnectReason.TIMED_OUT)
                continue
            if slot.last_send + self._config.keep_alive_interval <= now:
                self._send_keep_alive(slot, now)
            _heappush(timers, (self._due(slot), connection_id))

    def next_timer(self) -> float | None:
        """Return the absolute time (seconds) of the next keep-alive or timeout deadline.

        Each slot has one heap entry, pushed when it connects; sends and receives only move a
        slot's deadline later, so an entry that surfaces early is re-pushed at the slot's real
        deadline by `handle_timer` (O(log n) per event, no walk over the slots).

        Returns:
            The deadline (possibly early, which `handle_timer` tolerates), or ``None`` when no
            client is connected.
        """
        timers = self._timers
        while timers and timers[0][1] not in self._by_connection:
            _heappop(timers)
        return timers[0][0] if timers else None

    def _due(self, slot: _Slot) -> float:
        due = slot.last_send + self._config.keep_alive_interval
        if slot.timeout > 0:
            due = min(due, slot.last_receive + slot.timeout)
        return due

    def _payload_taken(self, event: PayloadReceived) -> None:
        waiting = self._queued.get(event.connection_id)
        if waiting is not None:
            self._queued[event.connection_id] = waiting - 1

    # -- internals -------------------------------------------------------------------------

    def _live(self, connection_id: int) -> _Slot | None:
        slot = self._by_connection.get(connection_id)
        if slot is None and not 0 < connection_id <= self._last_connection_id:
            raise LocalProtocolError(
                f"connection_id {connection_id} was never issued by this server "
                f"(ids run from 1 to {self._last_connection_id})"
            )
        return slot

    def _silent(self, slot: _Slot, now: float) -> bool:
        """Whether ``slot`` has received nothing for ``takeover_after`` seconds (a connected
        client sends at least a keep-alive every 0.1 s)."""
        return now - slot.last_receive >= self._config.takeover_after

    def _live_mapping(self, addr: Address, now: float) -> _Mapping | None:
        mapping = self._mappings.get(addr)
        if mapping is None:
            return None
        del self._mappings[addr]
        if mapping.expired(now):
            return None
        mapping.last_access = now
        self._mappings[addr] = mapping  # most recently used last: the table is in LRU order
        return mapping

    def _add_mapping(self, addr: Address, mapping: _Mapping) -> None:
        mappings = self._mappings
        if mappings.pop(addr, None) is None and len(mappings) >= MAX_ENCRYPTION_MAPPINGS:
            # the table holds only half-open handshakes, least recently used first: evict the
            # first. A flood must then outpace every real client's round trip (each request or
            # response moves its mapping to the end) instead of locking all of them out for the
            # token timeout (spec §10.2 leaves the full table's policy open); O(1) per request
            del mappings[next(iter(mappings))]
            self._counter.dropped[DropReason.ENCRYPTION_MAPPING_TABLE_FULL] += 1
        mappings[addr] = mapping

    def _token_seen_elsewhere(self, tag: bytes, addr: Address) -> bool:
        # spec §10.4: find-or-add keyed by the token tag; the stored entry is not refreshed.
        seen = self._token_history.get(tag)
        if seen is not None:
            return seen != addr
        if len(self._token_history) >= MAX_CONNECT_TOKEN_ENTRIES:
            del self._token_history[next(iter(self._token_history))]
        self._token_history[tag] = addr
        return False

    def _send_global(
        self, packet: EncryptedPacket, cipher: PacketCipher | None, addr: Address
    ) -> None:
        data = write_packet(
            packet,
            protocol_id=self._config.protocol_id,
            cipher=cipher,
            insecure=self._config.insecure,
        )
        self._outbox.append((data, addr))
        self._outbox_bytes += len(data)

    def _next_global_sequence(self) -> int:
        sequence = self._global_sequence
        self._global_sequence += 1
        return sequence

    def _deny(self, cipher: PacketCipher | None, addr: Address) -> None:
        packet = ConnectionDeniedPacket(sequence=self._next_global_sequence())
        self._send_global(packet, cipher, addr)
        self._counter.denied_sent += 1

    def _process_request(
        self,
        addr: Address,
        identity: ChallengeToken,
        timeout: int,
        keys: tuple[bytes, bytes] | None,
        tag: bytes | None,
        now: float,
    ) -> None:
        # spec §10.1 steps 9-14 (steps 1-8 already passed); a silent slot in the way of steps 9
        # and 10 is replaced once the request has passed step 11.
        same_address = self._by_address.get(addr)
        if same_address is not None and not self._silent(same_address, now):
            self._drop(DropReason.ADDRESS_ALREADY_CONNECTED, addr)
            return
        same_client = self._by_client_id.get(identity.client_id)
        if same_client is not None and not self._silent(same_client, now):
            self._drop(DropReason.CLIENT_ID_ALREADY_CONNECTED, addr)
            return
        if tag is not None and self._token_seen_elsewhere(tag, addr):
            self._drop(DropReason.TOKEN_REUSED, addr)
            return
        if same_address is not None:
            self._free(same_address, ServerDisconnectReason.REPLACED)
        if same_client is not None and same_client is not same_address:
            self._free(same_client, ServerDisconnectReason.REPLACED)
        send = PacketCipher(keys[0]) if keys is not None else None
        if len(self._by_address) >= self._config.max_clients:
            self._deny(send, addr)
            return
        receive = PacketCipher(keys[1]) if keys is not None else None
        self._add_mapping(addr, _Mapping(send, receive, timeout, now))
        challenge_sequence = self._challenge_sequence
        self._challenge_sequence += 1
        token = encrypt_challenge_token(
            write_challenge_token(identity), challenge_sequence, self._challenge_cipher
        )
        packet = ConnectionChallengePacket(
            sequence=self._next_global_sequence(),
            challenge_sequence=challenge_sequence,
            challenge_token=token,
        )
        self._send_global(packet, send, addr)

    def _process_response(
        self, addr: Address, packet: ConnectionResponsePacket, mapping: _Mapping, now: float
    ) -> None:
        # spec §10.5 steps 2-6.
        plaintext = decrypt_challenge_token(
            packet.challenge_token, packet.challenge_sequence, self._challenge_cipher
        )
        if plaintext is None:
            self._drop(DropReason.CHALLENGE_TOKEN_INVALID, addr)
            return
        challenge = read_challenge_token(plaintext)
        if addr in self._by_address:
            self._drop(DropReason.ADDRESS_ALREADY_CONNECTED, addr)
            return
        if challenge.client_id in self._by_client_id:
            self._drop(DropReason.CLIENT_ID_ALREADY_CONNECTED, addr)
            return
        if len(self._by_address) >= self._config.max_clients:
            self._deny(mapping.send, addr)
            return
        index = self._slots.index(None)
        del self._mappings[addr]  # the slot holds it now; the table keeps half-open ones only
        self._last_connection_id += 1
        slot = _Slot(index, self._last_connection_id, addr, challenge.client_id, mapping, now)
        self._slots[index] = slot
        self._by_address[addr] = slot
        self._by_client_id[challenge.client_id] = slot
        self._by_connection[slot.connection_id] = slot
        self._queued[slot.connection_id] = 0
        self._send_keep_alive(slot, now)
        _heappush(self._timers, (self._due(slot), slot.connection_id))
        self._events.append(
            ClientConnected(
                client_index=index,
                connection_id=slot.connection_id,
                client_id=challenge.client_id,
                address=addr,
                user_data=challenge.user_data,
            )
        )

    def _process_connected(
        self, slot: _Slot, packet: EncryptedPacket, addr: Address, now: float
    ) -> None:
        if isinstance(packet, DisconnectPacket):
            self._free(slot, ServerDisconnectReason.CLIENT_DISCONNECTED)
            return
        slot.last_receive = now
        slot.confirmed = True
        if isinstance(packet, PayloadPacket):
            queued = self._queued[slot.connection_id]
            if queued >= self._config.payload_queue_size:
                self._drop(DropReason.PAYLOAD_QUEUE_FULL, addr)
                return
            self._queued[slot.connection_id] = queued + 1
            self._counter.payloads_received += 1
            self._events.append(
                PayloadReceived(
                    client_index=slot.index,
                    connection_id=slot.connection_id,
                    payload=packet.payload,
                )
            )

    def _send_keep_alive(self, slot: _Slot, now: float) -> None:
        packet = KeepAlivePacket(
            sequence=slot.sequence, client_index=slot.index, max_clients=self._config.max_clients
        )
        self._send_to(slot, packet, now)

    def _send_to(self, slot: _Slot, packet: EncryptedPacket, now: float) -> None:
        data = write_packet(
            packet,
            protocol_id=self._config.protocol_id,
            cipher=slot.mapping.send,
            insecure=self._config.insecure,
        )
        self._outbox.append((data, slot.address))
        self._outbox_bytes += len(data)
        slot.sequence += 1
        slot.last_send = now
        slot.mapping.last_access = now

    def _free(self, slot: _Slot, reason: ServerDisconnectReason) -> None:
        self._slots[slot.index] = None
        del self._by_address[slot.address]
        del self._by_client_id[slot.client_id]
        del self._by_connection[slot.connection_id]
        del self._queued[slot.connection_id]
        self._events.append(
            ClientDisconnected(
                client_index=slot.index, connection_id=slot.connection_id, reason=reason
            )
        )
