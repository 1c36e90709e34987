"""UDP segmentation offload (lagless.io.offload): trains out, runs cut back into datagrams in."""

from __future__ import annotations

import asyncio
import errno
import logging
import select
import socket
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless._types import Address
from lagless.io.endpoint import PollEndpoint, open_endpoint
from lagless.io.offload import (
    MAX_SEGMENTS,
    MAX_TRAIN,
    UDP_SEGMENT,
    DatagramWriter,
    drain_segments,
    enable_gro,
    gso_available,
)
from lagless.io.udp import drain, open_udp_socket
from lagless.transport import Client, ClientConnected, Connected, MessageReceived
from tests.io.fake import Fake
from tests.io.test_endpoint import _free_port, _server, _token
from tests.io.test_udp import HAS_IPV6

LINUX = sys.platform == "linux"
A: Address = ("127.0.0.1", 1)
B: Address = ("127.0.0.1", 2)


class Recorder:
    """A socket stand-in that records what the writer asks of it, and can refuse trains."""

    type = socket.SOCK_DGRAM

    def __init__(self, refuse: int | None = None) -> None:
        self.calls: list[tuple[str, list[bytes], Address, int]] = []
        self.refuse = refuse

    def sendto(self, data: bytes, addr: Address) -> int:
        self.calls.append(("sendto", [data], addr, 0))
        return len(data)

    def sendmsg(
        self,
        buffers: list[bytes],
        ancillary: list[tuple[int, int, bytes]],
        flags: int,
        addr: Address,
    ) -> int:
        if self.refuse is not None:
            raise OSError(self.refuse, "refused")
        ((level, kind, value),) = ancillary
        assert (level, kind) == (socket.IPPROTO_UDP, UDP_SEGMENT)
        self.calls.append(("train", list(buffers), addr, int.from_bytes(value, sys.byteorder)))
        return sum(map(len, buffers))


def _writer(sock: Recorder) -> DatagramWriter:
    return DatagramWriter(sock, gso=True)  # type: ignore[arg-type]  # a duck-typed socket


def _receive_all(sock: socket.socket, expected: int, reader: object = drain_segments) -> list:
    got: list[tuple[bytes, Address]] = []
    deadline = time.monotonic() + 5
    while len(got) < expected and time.monotonic() < deadline:
        select.select([sock], [], [], 0.1)
        reader(sock, lambda data, addr: got.append((data, addr)), 1000)  # type: ignore[operator]
    return got


def test_a_run_to_one_address_leaves_as_one_train_with_its_segment_size() -> None:
    sock = Recorder()
    writer = _writer(sock)
    datagrams = [(bytes([i]) * 100, A) for i in range(5)]
    writer.send_all(datagrams)
    assert sock.calls == [("train", [d for d, _ in datagrams], A, 100)]
    assert (writer.trains, writer.datagrams) == (1, 5)


@pytest.mark.parametrize(
    ("sizes_and_addresses", "expected"),
    [
        # a shorter datagram ends its train; a longer one starts the next
        ([(100, A), (100, A), (60, A), (100, A), (100, A)], [3, 2]),
        # another address starts another train
        ([(100, A), (100, A), (100, B), (100, B), (100, A)], [2, 2, 1]),
        # a longer datagram cannot follow: the kernel cuts at the first one's size
        ([(60, A), (100, A), (100, A)], [1, 2]),
        # an empty datagram goes alone
        ([(100, A), (0, A), (100, A)], [1, 1, 1]),
        # at most MAX_SEGMENTS per train
        ([(10, A)] * (MAX_SEGMENTS + 3), [MAX_SEGMENTS, 3]),
        # at most MAX_TRAIN bytes per train
        ([(1300, A)] * 60, [MAX_TRAIN // 1300, 60 - MAX_TRAIN // 1300]),
    ],
)
def test_trains_follow_the_kernels_rules(
    sizes_and_addresses: list[tuple[int, Address]], expected: list[int]
) -> None:
    sock = Recorder()
    _writer(sock).send_all([(bytes(size), addr) for size, addr in sizes_and_addresses])
    assert [len(buffers) for _, buffers, _, _ in sock.calls] == expected
    assert all(kind == ("sendto" if len(b) == 1 else "train") for kind, b, _, _ in sock.calls)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0, 1, 99, 100, 1200, 1300]), st.sampled_from([A, B])),
        max_size=200,
    )
)
def test_any_batch_goes_out_whole_in_order_and_every_train_is_one_the_kernel_takes(
    batch: list[tuple[int, Address]],
) -> None:
    sock = Recorder()
    datagrams = [
        ((i.to_bytes(2, "big") * 700)[:size], addr) for i, (size, addr) in enumerate(batch)
    ]
    _writer(sock).send_all(datagrams)
    sent = [(data, addr) for _, buffers, addr, _ in sock.calls for data in buffers]
    assert sent == datagrams
    for kind, buffers, _, segment in sock.calls:
        if kind == "train":
            assert 2 <= len(buffers) <= MAX_SEGMENTS
            assert sum(map(len, buffers)) <= MAX_TRAIN
            assert segment == len(buffers[0]) > 0
            assert all(len(b) == segment for b in buffers[:-1])
            assert 0 < len(buffers[-1]) <= segment


def test_a_refused_train_is_sent_alone_and_segmentation_turned_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sock = Recorder(refuse=errno.EIO)
    writer = _writer(sock)
    datagrams = [(bytes([i]) * 100, A) for i in range(4)]
    with caplog.at_level(logging.INFO, logger="lagless.io"):
        writer.send_all(datagrams)
    assert [(kind, buffers[0]) for kind, buffers, _, _ in sock.calls] == [
        ("sendto", d) for d, _ in datagrams
    ]
    assert (writer.gso, writer.fallbacks, writer.send_errors, writer.datagrams) == (False, 1, 0, 4)
    assert "segmentation offload refused" in caplog.text
    writer.send_all(datagrams)  # from now on: one sendto each
    assert [kind for kind, *_ in sock.calls[4:]] == ["sendto"] * 4


def test_a_train_lost_to_a_full_buffer_is_counted_and_segmentation_stays_on() -> None:
    sock = Recorder(refuse=errno.EAGAIN)
    writer = _writer(sock)
    writer.send_all([(bytes(100), A)] * 4)
    assert (writer.gso, writer.fallbacks, writer.send_errors, writer.datagrams) == (True, 0, 4, 0)


def test_without_gso_every_datagram_goes_alone() -> None:
    sock = Recorder()
    writer = DatagramWriter(sock, gso=False)  # type: ignore[arg-type]
    writer.send_all([(bytes(100), A)] * 3)
    assert [kind for kind, *_ in sock.calls] == ["sendto"] * 3
    assert writer.trains == 0


def test_linux_has_both_options_on_a_udp_socket() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        assert gso_available(sock) is LINUX
        assert enable_gro(sock) is LINUX
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as stream:
        assert not gso_available(stream)
        assert not enable_gro(stream)


def _loopback_pair() -> tuple[socket.socket, socket.socket, socket.socket]:
    sender = open_udp_socket("127.0.0.1:0")
    with_gro = open_udp_socket("127.0.0.1:0")
    without_gro = open_udp_socket("127.0.0.1:0")
    enable_gro(with_gro)
    return sender, with_gro, without_gro


def test_trains_arrive_as_the_same_datagrams_with_and_without_gro() -> None:
    sender, with_gro, without_gro = _loopback_pair()
    try:
        to_gro = with_gro.getsockname()
        to_plain = without_gro.getsockname()
        datagrams = (
            [(bytes([i]) * 1000, to_gro) for i in range(30)]
            + [(b"short", to_gro)]
            + [(bytes([i]) * 700, to_plain) for i in range(20)]
            + [(bytes([i]) * 1200, to_gro) for i in range(3)]
        )
        writer = DatagramWriter(sender)
        writer.send_all(datagrams)
        assert writer.send_errors == 0
        assert writer.trains == (3 if LINUX else 0)
        source = sender.getsockname()
        assert _receive_all(with_gro, 34) == [(d, source) for d, to in datagrams if to == to_gro]
        assert _receive_all(without_gro, 20, drain) == [
            (d, source) for d, to in datagrams if to == to_plain
        ]
    finally:
        for sock in (sender, with_gro, without_gro):
            sock.close()


@pytest.mark.skipif(not HAS_IPV6, reason="environment limit: this machine has no ::1")
def test_trains_over_ipv6_arrive_with_a_two_part_sender_address() -> None:
    sender = open_udp_socket("[::1]:0")
    receiver = open_udp_socket("[::1]:0")
    try:
        enable_gro(receiver)
        to = receiver.getsockname()[:2]
        datagrams = [(bytes([i]) * 900, to) for i in range(12)]
        writer = DatagramWriter(sender)
        writer.send_all(datagrams)
        assert writer.trains == (1 if LINUX else 0)
        source = tuple(sender.getsockname()[:2])
        assert _receive_all(receiver, 12) == [(d, source) for d, _ in datagrams]
    finally:
        sender.close()
        receiver.close()


def test_drain_segments_stops_after_its_limit_and_reads_the_rest_later() -> None:
    sender, with_gro, _ = _loopback_pair()
    try:
        to = with_gro.getsockname()
        DatagramWriter(sender).send_all([(bytes([i]) * 100, to) for i in range(10)])
        for i in range(10):
            sender.sendto(bytes([100 + i]) * 50, to)
        got: list[bytes] = []
        select.select([with_gro], [], [], 1.0)
        time.sleep(0.05)
        first = drain_segments(with_gro, lambda data, _: got.append(data), 12)
        # the train of 10 counts as 10; the limit stops reading after the next two singles
        assert first == 12
        rest = _receive_all(with_gro, 8)
        assert got + [d for d, _ in rest] == [bytes([i]) * 100 for i in range(10)] + [
            bytes([100 + i]) * 50 for i in range(10)
        ]
    finally:
        sender.close()
        with_gro.close()


def test_bulk_transfer_between_endpoints_goes_in_trains_and_arrives_in_order() -> None:
    count = 3000

    async def transfer(offload: bool) -> tuple[int, int]:
        port = _free_port()
        async with (
            open_endpoint(_server(port), ("127.0.0.1", port), offload=offload) as server_ep,
            open_endpoint(Client(), offload=offload) as client_ep,
        ):
            client_ep.call(lambda c: c.connect(_token(port, 7), client_ep.now()))
            await client_ep.wait_for(Connected, timeout=5)
            await server_ep.wait_for(ClientConnected, timeout=5)
            sent = 0
            got: list[bytes] = []
            while len(got) < count:
                while sent < count and sent - len(got) < 500:
                    client_ep.call(lambda c, k=sent: c.send(0, k.to_bytes(4, "big") + bytes(996)))
                    sent += 1
                for event in await server_ep.receive_batch(timeout=10):
                    if isinstance(event, MessageReceived):
                        got.append(event.payload)
            assert [int.from_bytes(p[:4], "big") for p in got] == list(range(count))
            stats = client_ep.statistics()
            return stats.trains, stats.datagrams_sent

    trains, datagrams = asyncio.run(transfer(True))
    assert datagrams >= count
    assert (trains > 0) is LINUX
    assert asyncio.run(transfer(False))[0] == 0


def test_poll_endpoint_reads_trains_sent_to_it() -> None:
    fake = Fake()
    sender = open_udp_socket("127.0.0.1:0")
    try:
        with PollEndpoint(fake) as ep:
            DatagramWriter(sender).send_all([(b"ev %03d" % i, ep.address) for i in range(40)])
            deadline = time.monotonic() + 5
            events: list[object] = []
            while len(events) < 40 and time.monotonic() < deadline:
                ep.wait(0.1)
                events += ep.pump()
            assert events == [b"ev %03d" % i for i in range(40)]
    finally:
        sender.close()
