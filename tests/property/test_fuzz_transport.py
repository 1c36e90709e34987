"""Fuzz the transport decoders and the transport ``Server``/``Client`` (DESIGN.md "Bad input").

Decoders and their documented errors: ``read_connect_token`` and ``read_private_token``
(``ConnectTokenError``), ``read_challenge_token`` (``LocalProtocolError``, short input only),
``decode_address`` (``AddressDecodeError``), ``parse_payload`` (``DecodeError``);
``read_packet``, ``decode_header`` and ``decode_time_message`` never raise.

``Server.receive_datagram`` and ``Client.receive_datagram`` take random bytes and mutated datagrams
of a live insecure session (no encryption, so mutations reach the acks header, the records,
fragments and clock-sync messages) without raising, and still serve afterwards: a new client
connects, and a message still flows while the fuzzed client is connected.
"""

from __future__ import annotations

import contextlib
import functools
import random

from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.transport.acks import AckHeader, decode_header, encode_header
from lagless.transport.address import AddressDecodeError, decode_address, encode_address
from lagless.transport.challenge import ChallengeToken, read_challenge_token, write_challenge_token
from lagless.transport.client import Client
from lagless.transport.clocksync import (
    TimeRequest,
    TimeResponse,
    decode_time_message,
    encode_time_message,
)
from lagless.transport.events import MessageReceived
from lagless.transport.netcode_client import NetcodeClientConfig
from lagless.transport.netcode_server import NetcodeServerConfig
from lagless.transport.packer import encode_record, parse_payload
from lagless.transport.packet import CLIENT_ACCEPTED_TYPES, SERVER_ACCEPTED_TYPES, read_packet
from lagless.transport.server import Server
from lagless.transport.token import (
    ConnectTokenError,
    ConnectTokenPrivate,
    generate_connect_token,
    read_connect_token,
    read_private_token,
    write_private_token,
)
from lagless.wire import DecodeError
from tests.property.fuzzing import FUZZ, fuzz_bytes, scaled

PROTOCOL_ID = 0x1122334455667788
SERVER_ADDR = ("192.0.2.1", 40000)
CLIENT_ADDR = ("192.0.2.2", 50000)
KEY = bytes(range(32))
ipv4 = st.tuples(st.ip_addresses(v=4).map(str), st.integers(0, 65535))
ipv6 = st.tuples(st.ip_addresses(v=6).map(str), st.integers(0, 65535))
addresses = ipv4 | ipv6
u64 = st.integers(0, 2**64 - 1)


@FUZZ
@given(fuzz_bytes(addresses.map(encode_address), max_size=40), st.integers(0, 3))
def test_decode_address_raises_address_decode_error_only(data: bytes, offset: int) -> None:
    with contextlib.suppress(AddressDecodeError):
        _, end = decode_address(data, offset)
        assert end <= len(data)


tokens = st.builds(
    lambda addrs, client_id, seed: generate_connect_token(
        public_addresses=addrs,
        protocol_id=PROTOCOL_ID,
        expire_seconds=30,
        timeout_seconds=5,
        client_id=client_id,
        user_data=bytes(256),
        private_key=KEY,
        now_unix=1_700_000_000,
        random_bytes=random.Random(seed).randbytes,
    ),
    st.lists(addresses, min_size=1, max_size=3),
    u64,
    st.integers(0, 9),
)


@scaled(0.5)
@given(fuzz_bytes(tokens, max_size=2100))
def test_read_connect_token_raises_connect_token_error_only(data: bytes) -> None:
    with contextlib.suppress(ConnectTokenError):
        read_connect_token(data)


private_tokens = st.builds(
    ConnectTokenPrivate,
    client_id=u64,
    timeout_seconds=st.integers(-1, 60),
    server_addresses=st.lists(addresses, min_size=1, max_size=4).map(tuple),
    client_to_server_key=st.just(bytes(32)),
    server_to_client_key=st.just(bytes(32)),
    user_data=st.just(bytes(256)),
).map(write_private_token)


@FUZZ
@given(fuzz_bytes(private_tokens, max_size=1100))
def test_read_private_token_raises_connect_token_error_only(data: bytes) -> None:
    with contextlib.suppress(ConnectTokenError):
        read_private_token(data)


@FUZZ
@given(
    fuzz_bytes(
        st.builds(ChallengeToken, client_id=u64, user_data=st.just(bytes(256))).map(
            write_challenge_token
        ),
        max_size=400,
    )
)
def test_read_challenge_token_raises_only_on_short_input(data: bytes) -> None:
    try:
        read_challenge_token(data)
    except LocalProtocolError:
        assert len(data) < 264


@FUZZ
@given(
    fuzz_bytes(
        st.builds(
            AckHeader,
            sequence=st.integers(0, 0xFFFF),
            ack=st.integers(0, 0xFFFF),
            ack_bits=st.integers(0, 2**32 - 1),
        ).map(encode_header),
        max_size=16,
    ),
    st.integers(-2, 4),
)
def test_decode_header_never_raises(data: bytes, offset: int) -> None:
    decode_header(data, offset)


time_messages = st.one_of(
    st.builds(TimeRequest, client_time=st.floats(0, 1e6)),
    st.builds(
        TimeResponse,
        client_time=st.floats(0, 1e6),
        server_time=st.floats(0, 1e6),
        processing_time=st.floats(0, 1.0),
    ),
).map(encode_time_message)


@FUZZ
@given(fuzz_bytes(time_messages, max_size=40), st.integers(-2, 4))
def test_decode_time_message_never_raises(data: bytes, offset: int) -> None:
    decode_time_message(data, offset)


@st.composite
def payloads(draw: st.DrawFn) -> bytes:
    """Valid record sequences: whole messages and fragments of 64-byte fragment size."""
    out = bytearray()
    for _ in range(draw(st.integers(0, 4))):
        channel, message_id = draw(st.integers(0, 63)), draw(st.integers(0, 0xFFFF))
        if draw(st.booleans()):
            encode_record(out, channel, message_id, draw(st.binary(max_size=200)))
        else:
            count = draw(st.integers(2, 256))
            index = draw(st.integers(0, count - 1))
            size = draw(st.integers(1, 64)) if index == count - 1 else 64
            encode_record(out, channel, message_id, bytes(size), index, count)
    return bytes(out)


@FUZZ
@given(fuzz_bytes(payloads()))
def test_parse_payload_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        parse_payload(data, 64)


# -- live insecure session ----------------------------------------------------------------------


def _pair(now: float) -> tuple[Server, Client]:
    server = Server(
        config=NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, public_address=SERVER_ADDR, insecure=True
        ),
        random_bytes=random.Random(1).randbytes,
    )
    client = Client(config=NetcodeClientConfig(insecure=True))
    client.connect_insecure(
        server_addresses=[SERVER_ADDR], protocol_id=PROTOCOL_ID, client_id=7, now=now
    )
    return server, client


def _exchange(
    server: Server, client: Client, t: float, seen: list[tuple[bytes, bool]] | None = None
) -> None:
    """One step at time ``t``: timers, then client → server, then server → client."""
    for obj in (server, client):
        deadline = obj.next_timer()
        if deadline is not None and deadline <= t:
            obj.handle_timer(t)
    for data, _ in client.datagrams_to_send(t):
        if seen is not None:
            seen.append((data, True))
        server.receive_datagram(data, CLIENT_ADDR, t)
    for data, addr in server.datagrams_to_send(t):
        if seen is not None:
            seen.append((data, False))
        if addr == CLIENT_ADDR:
            client.receive_datagram(data, SERVER_ADDR, t)


@functools.cache
def _corpus() -> tuple[list[bytes], list[bytes]]:
    """Datagrams of a 2 s insecure session: (client → server, server → client)."""
    server, client = _pair(100.0)
    seen: list[tuple[bytes, bool]] = []
    for step in range(60):
        t = 100.0 + step * 0.033
        if client.connected and step % 5 == 0:
            for channel in range(4):
                client.send(channel, bytes([step]) * (1 + 300 * channel))
            conns = server.clients
            if conns:
                server.send(conns[0], step % 4, bytes(min(step * 40, 1000)))
            if step == 10:
                client.send(0, bytes(range(256)) * 12)  # fragmented
        _exchange(server, client, t, seen)
    return [d for d, up in seen if up], [d for d, up in seen if not up]


def _datagrams(up: bool) -> st.SearchStrategy[bytes]:
    return fuzz_bytes(st.integers(0, 999).map(lambda i: _pick(up, i)))


def _pick(up: bool, index: int) -> bytes:
    corpus = _corpus()[0 if up else 1]
    return corpus[index % len(corpus)]


@FUZZ
@given(_datagrams(True), _datagrams(False))
def test_read_packet_never_raises(to_server: bytes, to_client: bytes) -> None:
    read_packet(
        to_server,
        protocol_id=PROTOCOL_ID,
        accepted=SERVER_ACCEPTED_TYPES,
        cipher=None,
        insecure=True,
    )
    read_packet(
        to_client,
        protocol_id=PROTOCOL_ID,
        accepted=CLIENT_ACCEPTED_TYPES,
        cipher=None,
        insecure=True,
    )
    read_packet(
        to_server,
        protocol_id=PROTOCOL_ID,
        accepted=SERVER_ACCEPTED_TYPES,
        cipher=None,
        private_key=KEY,
    )


@functools.cache
def _session() -> tuple[Server, Client, list[float]]:
    server, client = _pair(500.0)
    clock = [500.0]
    for _ in range(30):
        clock[0] += 0.033
        _exchange(server, client, clock[0])
    assert client.connected
    return server, client, clock


def test_server_and_client_survive_fuzzed_datagrams() -> None:
    @scaled(0.5)
    @given(st.lists(st.tuples(st.booleans(), _datagrams(True), _datagrams(False)), max_size=4))
    def inject(inputs: list[tuple[bool, bytes, bytes]]) -> None:
        server, client, clock = _session()
        for both, to_server, to_client in inputs:
            server.receive_datagram(to_server, CLIENT_ADDR, clock[0])
            if both:
                client.receive_datagram(to_client, SERVER_ADDR, clock[0])
        clock[0] += 0.033
        _exchange(server, client, clock[0])
        for obj in (server, client):
            while obj.next_event() is not None:
                pass

    inject()
    server, _, clock = _session()
    newcomer = Client(config=NetcodeClientConfig(insecure=True))
    newcomer.connect_insecure(
        server_addresses=[SERVER_ADDR], protocol_id=PROTOCOL_ID, client_id=8, now=clock[0]
    )
    other = ("192.0.2.3", 50000)
    received = []
    for _ in range(60):
        clock[0] += 0.033
        for obj in (server, newcomer):
            deadline = obj.next_timer()
            if deadline is not None and deadline <= clock[0]:
                obj.handle_timer(clock[0])
        for data, _ in newcomer.datagrams_to_send(clock[0]):
            server.receive_datagram(data, other, clock[0])
        for data, addr in server.datagrams_to_send(clock[0]):
            if addr == other:
                newcomer.receive_datagram(data, SERVER_ADDR, clock[0])
        if newcomer.connected and not received:
            newcomer.send(0, b"still here")
        while (event := server.next_event()) is not None:
            if isinstance(event, MessageReceived):
                received.append(event.payload)
    assert b"still here" in received
