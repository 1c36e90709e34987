"""The asyncio and poll front ends drive a real Server and Client over loopback UDP."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from lagless.io.endpoint import PollEndpoint, open_endpoint
from lagless.transport import (
    Client,
    ClientConnected,
    Connected,
    MessageReceived,
    NetcodeClientConfig,
    NetcodeServerConfig,
    Server,
    generate_connect_token,
)

KEY = bytes(range(100, 132))
PROTOCOL_ID = 0x4C41474C455353


def _server(port: int) -> Server:
    return Server(
        config=NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, private_key=KEY, public_address=("127.0.0.1", port)
        ),
        unix_time_offset=time.time() - time.monotonic(),
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _token(port: int, client_id: int) -> bytes:
    return generate_connect_token(
        public_addresses=[("127.0.0.1", port)],
        protocol_id=PROTOCOL_ID,
        expire_seconds=30,
        timeout_seconds=5,
        client_id=client_id,
        user_data=b"",
        private_key=KEY,
        now_unix=int(time.time()),
    )


def test_async_server_and_client_exchange_messages() -> None:
    async def main() -> None:
        port = _free_port()  # tokens name the server's public address, so fix the port first
        async with (
            open_endpoint(_server(port), ("127.0.0.1", port)) as server_ep,
            open_endpoint(Client()) as client_ep,
        ):
            client_ep.call(lambda c: c.connect(_token(port, 42), client_ep.now()))
            await client_ep.wait_for(Connected, timeout=5)
            joined = await server_ep.wait_for(ClientConnected, timeout=5)
            assert joined.client_id == 42
            for i in range(20):
                client_ep.call(lambda c, i=i: c.send(0, f"ping {i}".encode()))
            got = [
                (await server_ep.wait_for(MessageReceived, timeout=5)).payload for _ in range(20)
            ]
            assert got == [f"ping {i}".encode() for i in range(20)]
            server_ep.call(lambda s: s.send(joined.connection_id, 0, b"pong"))
            reply = await client_ep.wait_for(MessageReceived, timeout=5)
            assert reply.payload == b"pong"
            await client_ep.sleep(0.3)
            stats = client_ep.obj.connection_statistics()
            assert 0.0 < stats.rtt < 0.1
            assert client_ep.obj.synchronized

    asyncio.run(main())


def test_poll_client_against_async_server() -> None:
    async def main() -> None:
        port = _free_port()
        async with open_endpoint(_server(port), ("127.0.0.1", port)) as server_ep:
            client = PollEndpoint(Client(config=NetcodeClientConfig()))
            try:
                client.call(lambda c: c.connect(_token(port, 7), client.now()))
                events: list[object] = []
                deadline = time.monotonic() + 5
                sent = False
                while time.monotonic() < deadline:
                    events += client.pump()  # one "frame"
                    if not sent and any(isinstance(e, Connected) for e in events):
                        client.call(lambda c: c.send(0, b"from the game loop"))
                        sent = True
                    joined = [e for e in events if isinstance(e, MessageReceived)]
                    if joined:
                        break
                    while (event := server_ep.receive_nowait()) is not None:
                        if isinstance(event, MessageReceived):
                            server_ep.call(
                                lambda s, e=event: s.send(e.connection_id, 0, e.payload[::-1])
                            )
                    await asyncio.sleep(1 / 60)
                replies = [e.payload for e in events if isinstance(e, MessageReceived)]
                assert replies == [b"pool emag eht morf"]
            finally:
                client.close()

    asyncio.run(main())


def test_receive_times_out_cleanly() -> None:
    async def main() -> None:
        async with open_endpoint(Client()) as ep:
            with pytest.raises(TimeoutError):
                await ep.receive(timeout=0.05)

    asyncio.run(main())
