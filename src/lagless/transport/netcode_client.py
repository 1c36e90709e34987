"""Sans-I/O netcode 1.02 client: connect token in, authenticated datagrams to one server out.

Implements netcode-1.02 spec §9 (client state machine, sending at 10 Hz, receive table,
timeouts, expiry), §8 (client sequence: requests consume a number) and §4.5 (token validation).
The "raw" mode: payloads are the application's own datagrams. Decisions:

* Sending uses the reference's strict test ``now > last_send + 0.1``; ``next_timer`` returns the
  first float above that instant so a simulated clock never spins on an unmet deadline
  (``test_netcode_session.py::test_timer_fires_strictly_after``). Timeouts likewise use
  ``last_receive + timeout < now`` (spec §16 trap 12).
* A denial or server disconnect acts as soon as it is received (the reference flags it and acts
  on the next update); no datagram is sent in between either way
  (``test_netcode_session.py::test_denied_tries_next_server``).
* The source address is checked before decryption (the reference decrypts first), so a foreign
  sender costs no AEAD work (``test_netcode_session.py::test_foreign_source_dropped``).
* Token expiry is measured from the start of the current server attempt, as the reference does
  (spec §9 "Expiry") (``test_netcode_session.py::test_expired_token``).
* Insecure mode needs ``NetcodeClientConfig(insecure=True)`` and :meth:`connect_insecure`; it logs
  a WARNING (``test_netcode_session.py::test_insecure_session``).
* A wrapping layer that consumes payloads at once (``Client``) passes a ``payload_sink``: while
  connected, payloads go to it as they are read, with no ``PayloadReceived`` and no queue, and
  well-formed payload packets take a short read path (``packet.read_payload_packet``) with the
  same checks and drop reasons as ``read_packet``
  (``test_netcode_session.py::test_direct_delivery``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

from lagless._types import Address
from lagless.errors import ConfigError, LocalProtocolError
from lagless.transport.address import normalize_address
from lagless.transport.constants import (
    MAX_PAYLOAD_BYTES,
    MAX_SERVERS_PER_CONNECT,
    NUM_DISCONNECT_PACKETS,
    PACKET_QUEUE_SIZE,
    PACKET_SEND_INTERVAL,
    USER_DATA_BYTES,
)
from lagless.transport.crypto import PacketCipher
from lagless.transport.drops import DropReason
from lagless.transport.netcode_endpoint import NetcodeEndpoint, check_endpoint_fields
from lagless.transport.netcode_events import Connected, ConnectFailed, Disconnected, PayloadReceived
from lagless.transport.netcode_state import (
    ClientDisconnectReason,
    ClientInput,
    NetcodeClientState,
    next_client_state,
)
from lagless.transport.packet import (
    CLIENT_ACCEPTED_TYPES,
    ConnectionChallengePacket,
    ConnectionDeniedPacket,
    ConnectionRequestPacket,
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
from lagless.transport.token import ConnectToken, ConnectTokenError, read_connect_token

_log: Final = logging.getLogger("lagless.transport")
# the states bound once: compiled, a member read through its class is a generic attribute lookup
_CONNECTED: Final = NetcodeClientState.CONNECTED
_DISCONNECTED: Final = NetcodeClientState.DISCONNECTED
_SENDING_CONNECTION_REQUEST: Final = NetcodeClientState.SENDING_CONNECTION_REQUEST
_SENDING_CONNECTION_RESPONSE: Final = NetcodeClientState.SENDING_CONNECTION_RESPONSE
_nextafter: Final = math.nextafter

ClientPayloadSink: TypeAlias = Callable[[bytes, float], None]
"""Takes ``(payload, now)`` for each payload received while connected."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NetcodeClientConfig:
    """Configuration of a :class:`NetcodeClient`."""

    send_interval: float = PACKET_SEND_INTERVAL  # seconds; netcode NETCODE_PACKET_SEND_RATE 10 Hz
    """Seconds between requests, responses and idle keep-alives (> 0)."""
    num_disconnect_packets: int = NUM_DISCONNECT_PACKETS  # netcode NETCODE_NUM_DISCONNECT_PACKETS
    """Redundant disconnect packets sent by :meth:`NetcodeClient.disconnect` (1 to 100)."""
    payload_queue_size: int = PACKET_QUEUE_SIZE  # netcode NETCODE_PACKET_QUEUE_SIZE
    """Received payloads held for the application before new ones are dropped (>= 1)."""
    insecure: bool = False  # lagless: development only, see packet.py
    """Use the unencrypted, token-less lagless insecure mode (the server must match)."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: a field is out of range.
        """
        if not (math.isfinite(self.send_interval) and self.send_interval > 0):
            raise ConfigError(f"send_interval must be > 0 seconds, got {self.send_interval}")
        check_endpoint_fields(self.num_disconnect_packets, self.payload_queue_size)


class NetcodeClient(NetcodeEndpoint):
    """A netcode client as a sans-I/O state machine (STYLE §3)."""

    def __init__(
        self, *, config: NetcodeClientConfig, payload_sink: ClientPayloadSink | None = None
    ) -> None:
        """Create an idle client.

        Args:
            config: the client's configuration.
            payload_sink: where payloads go instead of `PayloadReceived` events, if given.
        """
        super().__init__(
            role="client", insecure=config.insecure, insecure_note="no connect token, no encryption"
        )
        self._config = config
        self._state = _DISCONNECTED
        self._token: ConnectToken | None = None
        self._insecure_request: InsecureConnectionRequestPacket | None = None
        self._protocol_id = 0
        self._lifetime = math.inf
        self._timeout = 0
        self._server_index = 0
        self._addresses: tuple[Address, ...] = ()
        self._server_address: Address | None = None
        self._send_cipher: PacketCipher | None = None
        self._receive_cipher: PacketCipher | None = None
        self._replay = ReplayWindow()
        self._sequence = 0
        self._connect_start = 0.0
        self._last_send = 0.0
        self._last_receive = 0.0
        self._challenge: tuple[int, bytes] | None = None
        self._client_index = 0
        self._connection_id = 0  # ordinal of the connections this client made
        self._max_clients = 0
        self._queued_payloads = 0
        self._payload_sink = payload_sink
        self._payload_ad = payload_associated_data(0)

    # -- introspection ---------------------------------------------------------------------

    @property
    def state(self) -> NetcodeClientState:
        """The current state (negative values are failures)."""
        return self._state

    @property
    def client_index(self) -> int:
        """Slot index the server assigned (valid once connected)."""
        return self._client_index

    @property
    def max_clients(self) -> int:
        """The server's number of slots (valid once connected)."""
        return self._max_clients

    @property
    def server_address(self) -> Address | None:
        """The server currently being talked to, or ``None`` when idle."""
        return self._server_address

    # -- application verbs -----------------------------------------------------------------

    def connect(self, token: bytes, now: float) -> None:
        """Start connecting with a 2048-byte connect token (spec §9 ``connect``).

        An active connection is first ended with disconnect packets. An invalid token moves the
        state to ``INVALID_CONNECT_TOKEN`` and emits :class:`ConnectFailed`. Pump the object
        afterwards (see ``lagless.io.drive.pump``).

        Args:
            token: the connect token from the backend.
            now: current time in seconds.

        Raises:
            LocalProtocolError: the client is configured for insecure mode.
        """
        if self._config.insecure:
            raise LocalProtocolError("connect needs insecure=False; use connect_insecure")
        self._now = now
        self._end_active(ClientDisconnectReason.LOCAL)
        try:
            parsed = read_connect_token(token)
        except ConnectTokenError as error:
            _log.debug("invalid connect token: %s", error)
            self._apply(ClientInput.CONNECT_INVALID_TOKEN)
            self._events.append(ConnectFailed(state=self._state))
            return
        self._token = parsed
        self._insecure_request = None
        self._protocol_id = parsed.protocol_id
        self._lifetime = float(parsed.expire_timestamp - parsed.create_timestamp)
        self._timeout = parsed.timeout_seconds
        self._send_cipher = PacketCipher(parsed.client_to_server_key)
        self._receive_cipher = PacketCipher(parsed.server_to_client_key)
        self._begin(parsed.server_addresses, now)

    def connect_insecure(
        self,
        *,
        server_addresses: Sequence[Address],
        protocol_id: int,
        client_id: int,
        now: float,
        user_data: bytes = b"",
        timeout_seconds: int = 5,
    ) -> None:
        """Start connecting in lagless insecure mode: no token, no encryption (development only).

        Pump the object afterwards (see ``lagless.io.drive.pump``).

        Args:
            server_addresses: servers to try in order (1 to 32); any hashable host form.
            protocol_id: uint64 protocol id the server expects.
            client_id: uint64 id this client claims (nothing verifies it).
            now: current time in seconds.
            user_data: up to 256 bytes of application data (zero-padded).
            timeout_seconds: connection timeout in seconds; zero or negative disables it.

        Raises:
            LocalProtocolError: insecure mode is off or an argument is out of range.
        """
        if not self._config.insecure:
            raise LocalProtocolError("connect_insecure needs NetcodeClientConfig(insecure=True)")
        if not 1 <= len(server_addresses) <= MAX_SERVERS_PER_CONNECT:
            raise LocalProtocolError("server_addresses must hold 1 to 32 addresses")
        if len(user_data) > USER_DATA_BYTES:
            raise LocalProtocolError(f"user_data must be at most {USER_DATA_BYTES} bytes")
        request = InsecureConnectionRequestPacket(
            protocol_id=protocol_id,
            client_id=client_id,
            timeout_seconds=timeout_seconds,
            user_data=user_data + bytes(USER_DATA_BYTES - len(user_data)),
        )
        write_packet(request)  # validates every field before any state changes
        self._now = now
        self._end_active(ClientDisconnectReason.LOCAL)
        self._token = None
        self._insecure_request = request
        self._protocol_id = protocol_id
        self._lifetime = math.inf
        self._timeout = timeout_seconds
        self._send_cipher = None
        self._receive_cipher = None
        self._begin(tuple(server_addresses), now)

    def send_payload(self, data: bytes) -> None:
        """Queue one payload packet to the server.

        Pump the object afterwards (see ``lagless.io.drive.pump``).

        Args:
            data: 1 to 1200 bytes.

        Raises:
            LocalProtocolError: not connected, or ``data`` is empty or over 1200 bytes.
        """
        self.send_payloads((data,))

    def send_payloads(self, payloads: Sequence[bytes]) -> None:
        """Queue one payload packet per item of ``payloads`` to the server, in order.

        Pump the object afterwards (see ``lagless.io.drive.pump``).

        Raises:
            LocalProtocolError: not connected, or a payload is empty or over 1200 bytes
                (nothing is sent).
        """
        if self._state != _CONNECTED:
            raise LocalProtocolError(f"send_payload needs state CONNECTED, got {self._state.name}")
        for data in payloads:
            if not 1 <= len(data) <= MAX_PAYLOAD_BYTES:
                raise LocalProtocolError(
                    f"payload must be 1 to {MAX_PAYLOAD_BYTES} bytes, got {len(data)}"
                )
        address = self._server_address
        assert address is not None  # invariant: set in every active state
        cipher = self._send_cipher
        associated = self._payload_ad
        outbox = self._outbox
        sequence = self._sequence
        written = 0
        for data in payloads:
            packet = write_payload_packet(sequence, data, cipher, associated)
            outbox.append((packet, address))
            written += len(packet)
            sequence += 1
        self._sequence = sequence
        self._outbox_bytes += written
        self._last_send = self._now
        self._counter.payloads_sent += len(payloads)

    def disconnect(self) -> None:
        """End the connection (or attempt) with redundant disconnect packets (spec §9).

        Does nothing when the client is idle or failed. Pump the object afterwards (see
        ``lagless.io.drive.pump``).
        """
        self._end_active(ClientDisconnectReason.LOCAL)

    # -- sans-I/O interface ----------------------------------------------------------------

    def _receive(self, data: bytes, addr: Address, now: float) -> None:
        # spec §9 receive table: state, then source address, then read_packet's checks.
        if self._state <= _DISCONNECTED:
            self._drop(DropReason.UNEXPECTED_IN_STATE, addr)
            return
        if addr != self._server_address and self._normalized(addr) != self._server_address:
            self._drop(DropReason.WRONG_SOURCE_ADDRESS, addr)
            return
        sink = self._payload_sink
        if sink is not None and self._state == _CONNECTED:
            payload = read_payload_packet(
                data, self._receive_cipher, self._replay, self._payload_ad
            )
            if payload is not None:
                if isinstance(payload, DropReason):
                    self._drop(payload, addr)
                    return
                self._last_receive = now
                self._counter.payloads_received += 1
                sink(payload, now)
                return
        result = read_packet(
            data,
            protocol_id=self._protocol_id,
            accepted=CLIENT_ACCEPTED_TYPES,
            cipher=self._receive_cipher,
            replay=self._replay,
            insecure=self._config.insecure,
        )
        if isinstance(result, DropReason):
            self._drop(result, addr)
            return
        assert not isinstance(result, InsecureConnectionRequestPacket)  # invariant: not accepted
        assert not isinstance(result, VerifiedRequest)  # invariant: not accepted
        self._process(result, addr, now)

    def handle_timer(self, now: float) -> None:
        """Send what is due, then check expiry and timeouts (spec §9 update order).

        Harmless when called early. Pump the object afterwards (see ``lagless.io.drive.pump``).

        Args:
            now: current time in seconds.
        """
        self._now = now
        state = self._state
        if state <= _DISCONNECTED:
            return
        if now > self._last_send + self._config.send_interval:
            if state == _SENDING_CONNECTION_REQUEST:
                self._send_request(now)
            elif state == _SENDING_CONNECTION_RESPONSE:
                assert self._challenge is not None  # invariant: set on entering the state
                sequence, token = self._challenge
                packet = ConnectionResponsePacket(
                    sequence=self._sequence, challenge_sequence=sequence, challenge_token=token
                )
                self._send(packet, now)
            else:
                self._send(
                    KeepAlivePacket(sequence=self._sequence, client_index=0, max_clients=0), now
                )
        if state != _CONNECTED and now - self._connect_start >= self._lifetime:
            self._fail(ClientInput.TOKEN_EXPIRED)
            return
        if self._timeout > 0 and self._last_receive + self._timeout < now:
            self._timed_out(now)

    def next_timer(self) -> float | None:
        """Return the absolute time (seconds) of the next send, expiry or timeout deadline.

        Returns:
            The deadline, or ``None`` when idle or failed.
        """
        if self._state <= _DISCONNECTED:
            return None
        deadline = _nextafter(self._last_send + self._config.send_interval, math.inf)
        if self._state != _CONNECTED:
            deadline = min(deadline, self._connect_start + self._lifetime)
        if self._timeout > 0:
            deadline = min(deadline, _nextafter(self._last_receive + self._timeout, math.inf))
        return deadline

    def _payload_taken(self, event: PayloadReceived) -> None:
        self._queued_payloads -= 1

    # -- internals -------------------------------------------------------------------------

    @staticmethod
    def _normalized(addr: Address) -> Address | None:
        try:
            return normalize_address(addr)
        except LocalProtocolError:
            return None

    def _apply(self, event: ClientInput) -> None:
        new_state = next_client_state(self._state, event)
        assert new_state is not None, (self._state, event)  # invariant: callers check the state
        _log.debug("netcode client %s -> %s (%s)", self._state.name, new_state.name, event.value)
        self._state = new_state

    def _begin(self, addresses: tuple[Address, ...], now: float) -> None:
        self._now = now
        self._addresses = addresses
        self._payload_ad = payload_associated_data(self._protocol_id)
        self._sequence = 0
        self._server_index = 0
        self._apply(ClientInput.CONNECT)
        self._reset_attempt(now)

    def _reset_attempt(self, now: float) -> None:
        address = self._addresses[self._server_index]
        self._server_address = self._normalized(address) or address
        self._connect_start = now
        self._last_send = now - 1.0
        self._last_receive = now
        self._challenge = None
        self._replay.reset()

    def _try_next_server(self, now: float) -> bool:
        if self._server_index + 1 >= len(self._addresses):
            return False
        self._server_index += 1
        self._apply(ClientInput.TRY_NEXT_SERVER)
        self._reset_attempt(now)
        return True

    def _timed_out(self, now: float) -> None:
        if self._state == _CONNECTED:
            self._apply(ClientInput.TIMED_OUT)
            self._server_address = None
            self._events.append(Disconnected(reason=ClientDisconnectReason.TIMED_OUT))
        elif not self._try_next_server(now):
            self._fail(ClientInput.TIMED_OUT)

    def _fail(self, event: ClientInput) -> None:
        self._apply(event)
        self._server_address = None
        self._events.append(ConnectFailed(state=self._state))

    def _end_active(self, reason: ClientDisconnectReason) -> None:
        if self._state <= _DISCONNECTED:
            return
        for _ in range(self._config.num_disconnect_packets):
            self._send(DisconnectPacket(sequence=self._sequence), self._now)
        self._apply(ClientInput.LOCAL_DISCONNECT)
        self._server_address = None
        self._events.append(Disconnected(reason=reason))

    def _send_request(self, now: float) -> None:
        assert self._server_address is not None  # invariant: set in every active state
        if self._token is not None:
            request = ConnectionRequestPacket(
                protocol_id=self._token.protocol_id,
                expire_timestamp=self._token.expire_timestamp,
                token_nonce=self._token.nonce,
                encrypted_private_token=self._token.encrypted_private,
            )
            data = write_packet(request)
        else:
            assert self._insecure_request is not None  # invariant: set by connect_insecure
            data = write_packet(self._insecure_request)
        self._outbox.append((data, self._server_address))
        self._outbox_bytes += len(data)
        # spec §6.2 [ref]: a request consumes a sequence number although none goes on the wire.
        self._sequence += 1
        self._last_send = now

    def _send(self, packet: EncryptedPacket, now: float) -> None:
        assert self._server_address is not None  # invariant: set in every active state
        data = write_packet(
            packet,
            protocol_id=self._protocol_id,
            cipher=self._send_cipher,
            insecure=self._config.insecure,
        )
        self._outbox.append((data, self._server_address))
        self._outbox_bytes += len(data)
        self._sequence += 1
        self._last_send = now

    def _process(self, packet: EncryptedPacket, addr: Address, now: float) -> None:
        state = self._state
        if isinstance(packet, PayloadPacket):
            if state != _CONNECTED:
                self._drop(DropReason.UNEXPECTED_IN_STATE, addr)
            elif self._queued_payloads >= self._config.payload_queue_size:
                self._drop(DropReason.PAYLOAD_QUEUE_FULL, addr)
            else:
                self._last_receive = now
                self._queued_payloads += 1
                self._counter.payloads_received += 1
                self._events.append(
                    PayloadReceived(
                        client_index=self._client_index,
                        connection_id=self._connection_id,
                        payload=packet.payload,
                    )
                )
        elif isinstance(packet, KeepAlivePacket):
            if state == _SENDING_CONNECTION_RESPONSE:
                self._client_index = packet.client_index
                self._connection_id += 1
                self._max_clients = packet.max_clients
                self._last_receive = now
                self._apply(ClientInput.KEEP_ALIVE_RECEIVED)
                self._events.append(
                    Connected(
                        client_index=packet.client_index,
                        connection_id=self._connection_id,
                        max_clients=packet.max_clients,
                    )
                )
            elif state == _CONNECTED:
                self._last_receive = now
            else:
                self._drop(DropReason.UNEXPECTED_IN_STATE, addr)
        elif isinstance(packet, ConnectionChallengePacket):
            if state != _SENDING_CONNECTION_REQUEST:
                self._drop(DropReason.UNEXPECTED_IN_STATE, addr)
                return
            self._challenge = (packet.challenge_sequence, packet.challenge_token)
            self._last_receive = now
            self._apply(ClientInput.CHALLENGE_RECEIVED)
        elif isinstance(packet, ConnectionDeniedPacket):
            if state == _CONNECTED:
                self._drop(DropReason.UNEXPECTED_IN_STATE, addr)
            elif not self._try_next_server(now):
                self._fail(ClientInput.DENIED)
        else:
            assert isinstance(packet, DisconnectPacket)  # invariant: responses are not accepted
            if state != _CONNECTED:
                self._drop(DropReason.UNEXPECTED_IN_STATE, addr)
                return
            self._apply(ClientInput.SERVER_DISCONNECTED)
            self._server_address = None
            self._events.append(Disconnected(reason=ClientDisconnectReason.SERVER_DISCONNECTED))
