"""A server and a client on real loopback UDP, driven by the asyncio front end.

Run: ``python -m lagless.examples.asyncio_echo [--quick]``. The client sends numbered messages on
the reliable-ordered channel; the server answers each in upper case; the client prints the replies
and the connection's RTT, loss and synchronised server clock.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import time

from lagless.apps import REFERENCE_PRIVATE_KEY, make_token
from lagless.io import open_endpoint
from lagless.transport import (
    Client,
    Connected,
    MessageReceived,
    NetcodeServerConfig,
    Server,
)


def free_port() -> int:
    """Return a UDP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def main(count: int) -> None:
    """Connect, exchange ``count`` messages, print statistics."""
    address = ("127.0.0.1", free_port())
    config = NetcodeServerConfig(
        protocol_id=1, private_key=REFERENCE_PRIVATE_KEY, public_address=address
    )
    server = Server(config=config, unix_time_offset=time.time() - time.monotonic())
    async with open_endpoint(server, address) as srv, open_endpoint(Client()) as cli:
        token = make_token([address], client_id=7, protocol_id=1)  # the backend's job
        cli.call(lambda c: c.connect(token, cli.now()))
        await cli.wait_for(Connected, timeout=5)
        for i in range(count):
            cli.obj.send(0, f"message {i}".encode())
            cli.flush()
            msg = await srv.wait_for(MessageReceived, timeout=5)
            srv.obj.send(msg.connection_id, 0, msg.payload.upper())
            srv.flush()
            reply = await cli.wait_for(MessageReceived, timeout=5)
            print(reply.payload.decode())
        stats = cli.obj.connection_statistics()
        offset = cli.obj.server_time(cli.now()) - cli.now()
        print(f"rtt {stats.rtt * 1000:.2f} ms, loss {stats.loss:.1%}, clock offset {offset:+.6f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="exchange 3 messages instead of 20")
    args = parser.parse_args()
    asyncio.run(main(3 if args.quick else 20))
