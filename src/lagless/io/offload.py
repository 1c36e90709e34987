"""UDP segmentation offload on Linux: many datagrams per system call, in both directions.

A bulk sender's datagrams go to one peer and, full of records, have the same size. Linux sends
such a run in one ``sendmsg`` (generic segmentation offload, the ``UDP_SEGMENT`` control
message, kernel 4.18 and later) and, on a socket that asked for it (``UDP_GRO``, 5.0 and later),
hands a run that arrives together to one ``recvmsg`` with the size of its segments. Measured on
this project's 2-core VM over loopback with 1050-byte datagrams, 16 per train: 0.51 µs per
datagram sent and received, against 5.06 µs with one ``sendto`` and one ``recvfrom`` each
(``sendto`` alone 3.7 µs). QUIC stacks use the same two options for the same reason.

* `DatagramWriter.send_all` sends a pump's output. Consecutive datagrams to the same address
  whose sizes match (the last of a run may be shorter, as the kernel requires) go out as one
  *train* of at most `MAX_SEGMENTS` datagrams and `MAX_TRAIN` bytes; any other datagram goes
  out alone with ``sendto``. The kernel cuts a train into ordinary datagrams, so a receiver
  without ``UDP_GRO`` (another stack, the netcode reference, a middlebox) sees the same
  datagrams in the same order as from single sends.
* `drain_segments` is `lagless.io.udp.drain` for a socket with ``UDP_GRO`` on: each
  ``recvmsg`` may return a run of datagrams from one sender glued together, with their segment
  size in a control message, and it hands them to the handler one by one. A datagram that came
  alone has no control message and is passed on as it is.

Policies:
    * **Detected, never required.** `gso_available` and `enable_gro` probe the socket; on another
      system, or a kernel without the options, the writer sends one datagram per ``sendto`` and
      the endpoint drains with ``recvfrom`` as before.
    * **A refused train falls back, it is not lost.** If the kernel refuses a train for a reason
      that single sends would not meet (``EINVAL`` when the path's MTU is below the segment
      size, ``EIO`` on a device without checksum offload, ``EOPNOTSUPP``, ``ENOPROTOOPT``,
      ``EMSGSIZE``), the writer sends that train's datagrams one by one, turns segmentation off
      for its socket and logs it once at INFO on the ``lagless.io`` logger
      (``test_offload.py::test_a_refused_train_is_sent_alone_and_segmentation_turned_off``).
      Any other error (a full buffer) loses the train, as UDP may, and counts every datagram of
      it in ``send_errors``.
    * **Batches are counted in datagrams.** `drain_segments` stops reading once ``limit``
      datagrams were handed on; as one read may bring up to `MAX_SEGMENTS`, it may hand on that
      many minus one more than ``limit``.
"""

from __future__ import annotations

import errno
import logging
import socket
import struct
import sys
from typing import Final

from lagless._types import Address
from lagless.io.udp import MAX_DATAGRAM, DatagramHandler

UDP_SEGMENT: Final = 103  # Linux <linux/udp.h>: the segment size of a train (a 16-bit cmsg)
UDP_GRO: Final = 104  # Linux <linux/udp.h>: receive runs glued together (an int cmsg back)
MAX_SEGMENTS: Final = 64  # datagrams in one train: UDP_MAX_SEGMENTS of Linux before 6.9
MAX_TRAIN: Final = 65000  # bytes in one train: below IPv4's 65 507-byte limit of one send
FALLBACK_ERRORS: Final = frozenset(
    {errno.EINVAL, errno.EIO, errno.EMSGSIZE, errno.EOPNOTSUPP, errno.ENOPROTOOPT}
)
"""Errors of a train send after which the writer sends one datagram at a time (module doc)."""

_SEGMENT_SIZE = struct.Struct("=H")
_GRO_SIZE = struct.Struct("=i")
_GRO_SPACE: Final = socket.CMSG_SPACE(_GRO_SIZE.size) if hasattr(socket, "CMSG_SPACE") else 0

_log = logging.getLogger("lagless.io")


def _is_linux_udp(sock: socket.socket) -> bool:
    return sys.platform == "linux" and sock.type == socket.SOCK_DGRAM and hasattr(sock, "sendmsg")


def gso_available(sock: socket.socket) -> bool:
    """Whether the kernel sends trains on ``sock`` (Linux 4.18+, the ``UDP_SEGMENT`` option).

    Args:
        sock: a UDP socket.

    Returns:
        ``True`` if ``UDP_SEGMENT`` can be read on it, so ``sendmsg`` takes its control message.
    """
    if not _is_linux_udp(sock):
        return False
    try:
        sock.getsockopt(socket.IPPROTO_UDP, UDP_SEGMENT)
    except OSError:
        return False
    return True


def enable_gro(sock: socket.socket) -> bool:
    """Ask the kernel to hand runs of datagrams from one sender to one ``recvmsg`` (Linux 5.0+).

    Args:
        sock: a UDP socket; read it with `drain_segments` afterwards, never with ``recvfrom``
            alone (which would return a run as one datagram).

    Returns:
        ``True`` if the option is on.
    """
    if not _is_linux_udp(sock) or not _GRO_SPACE:
        return False
    try:
        sock.setsockopt(socket.IPPROTO_UDP, UDP_GRO, 1)
    except OSError:
        return False
    return True


class DatagramWriter:
    """Send the datagrams of a pump on one socket, as trains where Linux allows (module doc).

    Args:
        sock: a bound, non-blocking UDP socket (not connected).
        gso: send trains; ``None`` (the default) asks `gso_available`.
    """

    __slots__ = ("datagrams", "fallbacks", "gso", "send_errors", "sock", "trains")

    def __init__(self, sock: socket.socket, *, gso: bool | None = None) -> None:
        self.sock = sock
        self.gso = gso_available(sock) if gso is None else gso
        """Whether trains are sent (turned off after a `FALLBACK_ERRORS` error)."""
        self.datagrams = 0
        """Datagrams handed to the kernel (sent alone or in trains)."""
        self.trains = 0
        """Trains handed to the kernel (one ``sendmsg`` of two datagrams or more each)."""
        self.send_errors = 0
        """Datagrams the socket refused (full buffer, ICMP error): lost, as UDP allows."""
        self.fallbacks = 0
        """Trains the kernel refused and that were then sent one datagram at a time."""

    def send(self, data: bytes, addr: Address) -> None:
        """Send one datagram with ``sendto``; a refusal is counted, never raised."""
        try:
            self.sock.sendto(data, addr)
        except OSError:
            self.send_errors += 1
        else:
            self.datagrams += 1

    def send_all(self, datagrams: list[tuple[bytes, Address]]) -> None:
        """Send ``datagrams`` in order: runs to one address with one size as trains.

        Args:
            datagrams: ``(bytes, address)`` pairs, as ``datagrams_to_send`` returns them.
        """
        count = len(datagrams)
        if count == 1 or not self.gso:
            send = self.send
            for data, addr in datagrams:
                send(data, addr)
            return
        start = 0
        while start < count:
            data, addr = datagrams[start]
            size = len(data)
            end = start + 1
            total = size
            last = min(count, start + MAX_SEGMENTS)
            while end < last:
                following, to = datagrams[end]
                length = len(following)
                if length > size or length == 0 or total + length > MAX_TRAIN or to != addr:
                    break
                end += 1
                total += length
                if length < size:
                    break  # only the last datagram of a train may be shorter
            if end - start == 1:
                self.send(data, addr)
            else:
                self._send_train([d for d, _ in datagrams[start:end]], size, addr)
            start = end

    def _send_train(self, train: list[bytes], size: int, addr: Address) -> None:
        try:
            self.sock.sendmsg(
                train, [(socket.IPPROTO_UDP, UDP_SEGMENT, _SEGMENT_SIZE.pack(size))], 0, addr
            )
        except OSError as exc:
            if exc.errno not in FALLBACK_ERRORS:
                self.send_errors += len(train)
                return
            self.gso = False
            self.fallbacks += 1
            _log.info(
                "UDP segmentation offload refused on this socket (%s); sending datagrams one "
                "by one from now on",
                exc,
            )
            for data in train:
                self.send(data, addr)
            return
        self.trains += 1
        self.datagrams += len(train)


def _segment_size(ancillary: list[tuple[int, int, bytes]]) -> int:
    """The segment size in a ``recvmsg``'s control messages, or 0 when there is none."""
    for level, kind, value in ancillary:
        if level == socket.IPPROTO_UDP and kind == UDP_GRO and len(value) >= _GRO_SIZE.size:
            return int(_GRO_SIZE.unpack_from(value)[0])
    return 0


def drain_segments(sock: socket.socket, handler: DatagramHandler, limit: int) -> int:
    """`lagless.io.udp.drain` for a socket with ``UDP_GRO`` on: cut runs into their datagrams.

    Args:
        sock: a non-blocking UDP socket on which `enable_gro` returned ``True``.
        handler: called with each datagram's ``bytes`` and its sender's ``(host, port)``.
        limit: read no more once this many datagrams were handed on (see the module doc).

    Returns:
        How many datagrams were handed to ``handler`` (fewer than ``limit`` means the socket is
        empty).
    """
    receive = sock.recvmsg
    space = _GRO_SPACE
    count = 0
    while count < limit:
        try:
            data, ancillary, _flags, sender = receive(MAX_DATAGRAM, space)
        except BlockingIOError:
            break
        except ConnectionRefusedError:
            continue  # an ICMP error for an earlier send (see udp.drain)
        if len(sender) != 2:
            sender = (sender[0], sender[1])  # IPv6: (host, port, flowinfo, scope_id)
        size = _segment_size(ancillary) if ancillary else 0
        if size and len(data) > size:
            for offset in range(0, len(data), size):
                handler(data[offset : offset + size], sender)
                count += 1
            continue
        count += 1
        handler(data, sender)
    return count
