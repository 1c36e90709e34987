"""The workload a profile-guided build of the compiled core is trained on (see lagless_pgo.py).

Runs an instrumented build (``PYTHONPATH`` points at it) through what the transport does most, in
memory and on a fake clock, so it needs no socket and no network: a `Server` and a `Client`
connect, exchange a 60 Hz ping-pong on a reliable channel (acks, clock sync, keep-alives,
timers), then bulk transfers of 100 B and 1000 B reliable messages, unreliable messages, and
messages large enough to be fragmented. Exits non-zero when the core it imports is not the
compiled one (the profile would be empty) or when any exchange does not complete.
"""

from __future__ import annotations

import sys

from lagless.transport import (
    RELIABLE,
    UNRELIABLE,
    Client,
    MessageReceived,
    NetcodeServerConfig,
    SendQueueFull,
    Server,
    generate_connect_token,
)
from lagless.transport.build import compiled

PROTOCOL_ID = 0x50474F
KEY = bytes(range(32))
SERVER = ("127.0.0.1", 40000)
CLIENT = ("127.0.0.1", 50000)
TICK = 1 / 60  # s
UNIX_NOW = 1_800_000_000.0  # s; a fixed wall clock (the token is made and checked in memory)


class Pair:
    """A connected `Server` and `Client` that pass datagrams to each other in memory."""

    def __init__(self) -> None:
        self.now = 0.0
        self.server = Server(
            config=NetcodeServerConfig(
                protocol_id=PROTOCOL_ID, private_key=KEY, public_address=SERVER
            ),
            unix_time_offset=UNIX_NOW,
        )
        self.client = Client()
        token = generate_connect_token(
            public_addresses=[SERVER],
            protocol_id=PROTOCOL_ID,
            expire_seconds=300,
            timeout_seconds=10,
            client_id=1,
            user_data=b"",
            private_key=KEY,
            now_unix=int(UNIX_NOW),
        )
        self.client.connect(token, self.now)
        for _ in range(1000):
            self.step(0.01)
            if self.client.connected and self.server.clients:
                break
        else:
            raise SystemExit("pgo training: the client did not connect")
        self.connection = self.server.clients[0]
        self.take()

    def step(self, dt: float) -> None:
        """Advance the clock, run both sides' timers and pass every datagram across."""
        self.now += dt
        for side in (self.client, self.server):
            due = side.next_timer()
            if due is not None and due <= self.now:
                side.handle_timer(self.now)
        self.shuttle()

    def shuttle(self) -> None:
        for data, _ in self.client.datagrams_to_send(self.now):
            self.server.receive_datagram(data, CLIENT, self.now)
        for data, _ in self.server.datagrams_to_send(self.now):
            self.client.receive_datagram(data, SERVER, self.now)

    def take(self) -> tuple[list[object], list[object]]:
        return self.server.take_events(), self.client.take_events()


def ping_pong(pair: Pair, count: int) -> None:
    """``count`` 32 B reliable pings at 60 Hz, each echoed by the server."""
    echoed = 0
    for k in range(count):
        pair.client.send(RELIABLE, k.to_bytes(32, "little"))
        pair.shuttle()
        for event in pair.server.take_events():
            if isinstance(event, MessageReceived):
                pair.server.send(event.connection_id, RELIABLE, event.payload)
        pair.shuttle()
        echoed += sum(isinstance(e, MessageReceived) for e in pair.client.take_events())
        pair.step(TICK)
    if echoed < count:
        raise SystemExit(f"pgo training: {echoed} of {count} pings came back")


def transfer(pair: Pair, count: int, size: int, channel: int) -> None:
    """``count`` messages of ``size`` bytes from the client to the server, as fast as it takes."""
    payload = bytes(size)
    sent = received = 0
    for _ in range(100 * count):
        while sent < count:
            try:
                pair.client.send(channel, payload)
            except SendQueueFull:
                break
            sent += 1
        pair.step(0.001)
        server_events, _ = pair.take()
        received += sum(
            isinstance(e, MessageReceived) and len(e.payload) == size for e in server_events
        )
        if sent == count and (received == count or channel == UNRELIABLE):
            return
    raise SystemExit(f"pgo training: {received} of {count} messages of {size} B arrived")


def main() -> None:
    if not compiled():
        raise SystemExit("pgo training: the imported core is not compiled")
    pair = Pair()
    ping_pong(pair, 3000)
    transfer(pair, 50000, 100, RELIABLE)
    transfer(pair, 10000, 1000, RELIABLE)
    transfer(pair, 4000, 100, UNRELIABLE)
    transfer(pair, 100, 5000, RELIABLE)
    ping_pong(pair, 500)


if __name__ == "__main__":
    main()
    sys.exit(0)
