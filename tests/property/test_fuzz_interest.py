"""Fuzz every decoder of ``lagless.interest`` and the VFC session objects (DESIGN.md "Bad input").

Decoders (``decode_control``, ``message_to_view``, ``CubeOriObj.decode``, ``unpack_records``,
``read_delta_datagram``, ``read_update_ack``) raise only ``DecodeError``. ``VfcServer`` and
``VfcClient`` take fuzzed payloads on every channel of a live session without raising, count
them, and still serve: a new client joins the server afterwards, and a client still applies a
valid update.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.interest.client import VfcClient
from lagless.interest.control import (
    ACK_CHANNEL,
    CONTROL_CHANNEL,
    UPDATE_CHANNEL,
    AddObject,
    ChangeClientId,
    ClientIdChanged,
    Control,
    DelObject,
    Join,
    Kick,
    Leave,
    ObjectDeleted,
    ObjectRejected,
    SetView,
    Welcome,
    decode_control,
    encode_control,
    message_to_view,
    view_to_message,
)
from lagless.interest.records import (
    RECORD_DTYPE,
    RECORD_SIZE,
    CubeOriObj,
    pack_records,
    read_delta_datagram,
    read_update_ack,
    unpack_records,
    write_delta_datagram,
    write_update_ack,
)
from lagless.interest.server import VfcServer
from lagless.interest.view import example_view, normal_view, zoom_view
from lagless.transport.client import Client
from lagless.transport.netcode_client import NetcodeClientConfig
from lagless.wire import DecodeError
from tests.interest.test_server import CLIENT_ADDRS, PROTOCOL_ID, SERVER_ADDR, linked
from tests.property.fuzzing import FUZZ, fuzz_bytes, scaled

ints = st.integers(-(2**63), 2**64 - 1)
small_ints = st.integers(-5, 70)
floats = st.floats(allow_nan=True, allow_infinity=True)
text = st.text(max_size=20)
views = st.sampled_from([normal_view(0.125), zoom_view(0.125), example_view(0.125)])
view_messages = st.builds(
    lambda view, pivots: view_to_message(view, pivots=pivots), views, st.lists(small_ints)
)
raw_views = st.builds(
    SetView,
    radii=st.lists(floats, max_size=4),
    fov=st.lists(floats, max_size=4),
    kappa=st.lists(st.lists(floats, max_size=4), max_size=8),
    pivots=st.lists(ints, max_size=4),
)
controls: st.SearchStrategy[Control] = st.one_of(
    st.builds(Join, version=ints),
    st.builds(Welcome, client_id=ints, encoding=st.sampled_from(["records", "delta"]) | text),
    st.builds(AddObject, record=st.binary(min_size=23, max_size=25)),
    st.builds(DelObject, object_id=small_ints | ints),
    view_messages,
    raw_views,
    st.builds(ChangeClientId, client_id=small_ints | ints),
    st.builds(ClientIdChanged, client_id=ints, accepted=st.booleans()),
    st.just(Leave()),
    st.builds(Kick, reason=text),
    st.builds(ObjectRejected, object_id=ints, reason=text),
    st.builds(ObjectDeleted, object_id=small_ints | ints),
)
control_bytes = controls.map(encode_control)


@st.composite
def record_arrays(draw: st.DrawFn, max_count: int = 40) -> np.ndarray:
    """Arrays of ``RECORD_DTYPE`` records with small non-negative ids and random fields."""
    count = draw(st.integers(0, max_count))
    raw = draw(st.binary(min_size=RECORD_SIZE * count, max_size=RECORD_SIZE * count))
    records = np.frombuffer(raw, dtype=RECORD_DTYPE).copy()
    records["id"] = draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
    return records


record_payloads = record_arrays(37).map(lambda r: pack_records(r)[0] if r.size else b"\x00")


@st.composite
def delta_payloads(draw: st.DrawFn) -> bytes:
    """Valid delta datagrams relative to the zero record or to baselines tagged 1 and 2."""
    records = draw(record_arrays(37))
    bases = draw(st.lists(st.integers(0, 2), min_size=records.size, max_size=records.size))
    tags = draw(st.lists(st.integers(1, 255), min_size=records.size, max_size=records.size))
    baselines = np.zeros(records.size, dtype=RECORD_DTYPE)
    return write_delta_datagram(draw(st.integers(0, 0xFFFF)), records, baselines, tags, bases)


ack_payloads = st.builds(write_update_ack, st.integers(0, 0xFFFF), st.integers(0, 2**32 - 1))
BASELINES = {
    (oid, tag): CubeOriObj(id=oid, x=1.0).to_record() for oid in range(4) for tag in (1, 2)
}


@FUZZ
@given(fuzz_bytes(control_bytes))
def test_decode_control_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        message = decode_control(data)
        if isinstance(message, SetView):
            message_to_view(message)


def test_invalid_utf8_in_a_control_string_is_a_decode_error() -> None:
    for data in (bytes.fromhex("9209a1ff"), encode_control(Kick(reason="é"))[:-1] + b"\xff"):
        with pytest.raises(DecodeError):
            decode_control(data)


@FUZZ
@given(fuzz_bytes(raw_views.map(encode_control) | view_messages.map(encode_control)))
def test_message_to_view_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        message = decode_control(data)
        if isinstance(message, SetView):
            message_to_view(message)


@FUZZ
@given(fuzz_bytes(record_arrays(1).map(lambda r: r.tobytes()), max_size=40))
def test_record_decode_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        assert CubeOriObj.decode(data).id >= 0


@FUZZ
@given(fuzz_bytes(record_payloads))
def test_unpack_records_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        assert unpack_records(data).size <= 37


@FUZZ
@given(fuzz_bytes(delta_payloads()))
def test_read_delta_datagram_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        seq, records, missing = read_delta_datagram(data, BASELINES)
        assert 0 <= seq <= 0xFFFF
        assert len(records) + missing <= 37


@FUZZ
@given(fuzz_bytes(ack_payloads, max_size=16))
def test_read_update_ack_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        ack, bits = read_update_ack(data)
        assert 0 <= ack <= 0xFFFF
        assert 0 <= bits < 2**32


NOW = 1000.0
MAX_MESSAGE = 1024  # bytes: the transport's default max_message_size (a sender-side limit)


@functools.cache
def _session(encoding: str) -> tuple[VfcServer, list[VfcClient], list[float]]:
    """One live session per encoding, shared by the examples of a test; the list holds the time."""
    server, clients = linked(NOW, encoding)
    return server, clients, [NOW]


def _step(server: VfcServer, clients: list[VfcClient], clock: list[float]) -> None:
    clock[0] += 0.033
    t = clock[0]
    for obj in (server, *clients):
        deadline = obj.next_timer()
        if deadline is not None and deadline <= t:
            obj.handle_timer(t)
    for addr, client in zip(CLIENT_ADDRS, clients, strict=True):
        for data, _ in client.datagrams_to_send(t):
            server.receive_datagram(data, addr, t)
    route = dict(zip(CLIENT_ADDRS, clients, strict=True))
    for data, addr in server.datagrams_to_send(t):
        if addr in route:
            route[addr].receive_datagram(data, SERVER_ADDR, t)
    for obj in (server, *clients):
        while obj.next_event() is not None:
            pass


def _payloads(encoding: str) -> st.SearchStrategy[list[tuple[int, bytes]]]:
    updates = record_payloads if encoding == "records" else delta_payloads()
    return st.lists(
        st.one_of(
            st.tuples(st.just(CONTROL_CHANNEL), fuzz_bytes(control_bytes, max_size=300)),
            st.tuples(st.just(UPDATE_CHANNEL), fuzz_bytes(updates, max_size=300)),
            st.tuples(st.just(ACK_CHANNEL), fuzz_bytes(ack_payloads, max_size=16)),
        ),
        min_size=1,
        max_size=4,
    )


def _fuzz_session(encoding: str) -> None:
    @scaled(0.3)
    @given(_payloads(encoding), _payloads(encoding))
    def inject(to_server: list[tuple[int, bytes]], to_client: list[tuple[int, bytes]]) -> None:
        server, clients, clock = _session(encoding)
        sender = clients[1]
        if sender.transport.connected:
            for channel, payload in to_server:
                sender.transport.send(channel, payload[:MAX_MESSAGE])
        conns = server.transport.clients
        if conns:
            for channel, payload in to_client:
                server.transport.send(conns[0], channel, payload[:MAX_MESSAGE])
        _step(server, clients, clock)
        _step(server, clients, clock)

    inject()


def _assert_server_serves(server: VfcServer, clock: list[float]) -> None:
    """A new client still joins the fuzzed server and gets a client id."""
    newcomer = VfcClient(Client(config=NetcodeClientConfig(insecure=True)))
    addr = ("192.0.2.99", 50000)
    newcomer.transport.connect_insecure(
        server_addresses=[SERVER_ADDR], protocol_id=PROTOCOL_ID, client_id=99, now=clock[0]
    )
    for _ in range(60):
        clock[0] += 0.033
        t = clock[0]
        for obj in (server, newcomer):
            deadline = obj.next_timer()
            if deadline is not None and deadline <= t:
                obj.handle_timer(t)
        for data, _ in newcomer.datagrams_to_send(t):
            server.receive_datagram(data, addr, t)
        for data, to in server.datagrams_to_send(t):
            if to == addr:
                newcomer.receive_datagram(data, SERVER_ADDR, t)
    assert newcomer.client_id is not None


def test_vfc_session_survives_fuzzed_messages_records() -> None:
    _fuzz_session("records")
    server, clients, clock = _session("records")
    assert sum(server.drops.values()) > 0
    assert sum(clients[0].drops.values()) > 0
    _assert_server_serves(server, clock)
    if clients[0].transport.connected:
        _assert_client_applies_update(server, clients, clock)


def test_vfc_session_survives_fuzzed_messages_delta() -> None:
    _fuzz_session("delta")
    server, clients, clock = _session("delta")
    assert sum(server.drops.values()) > 0
    assert sum(clients[0].drops.values()) > 0
    _assert_server_serves(server, clock)


def _assert_client_applies_update(
    server: VfcServer, clients: list[VfcClient], clock: list[float]
) -> None:
    """A valid records datagram of a fresh object id still reaches the fuzzed client."""
    client = clients[0]
    payload = pack_records(CubeOriObj(id=30_000, x=7.0).to_record())[0]
    server.transport.send(server.transport.clients[0], UPDATE_CHANNEL, payload)
    _step(server, clients, clock)
    assert client.get_object_ref(30_000).x == 7.0
