"""A client driven once per frame by a game loop: the poll front end (``PollEndpoint.pump``).

Run: ``python -m lagless.examples.poll_loop [--quick]``. A server runs in a background thread
(its own asyncio loop); the "game" runs a 60 Hz loop that sends its position every frame on the
unreliable-sequenced channel and prints what the server echoes back, never blocking.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
import time

from lagless.apps import REFERENCE_PRIVATE_KEY, make_token
from lagless.examples.asyncio_echo import free_port
from lagless.io import PollEndpoint, open_endpoint
from lagless.transport import (
    Client,
    Connected,
    MessageReceived,
    NetcodeServerConfig,
    Server,
)

SEQUENCED = 2  # default channel 2: unreliable-sequenced (older updates are dropped)


def run_server(address: tuple[str, int], stop: threading.Event) -> None:
    """Echo every message back on its channel until ``stop`` is set."""

    async def serve() -> None:
        config = NetcodeServerConfig(
            protocol_id=1, private_key=REFERENCE_PRIVATE_KEY, public_address=address
        )
        server = Server(config=config, unix_time_offset=time.time() - time.monotonic())
        async with open_endpoint(server, address) as ep:
            while not stop.is_set():
                try:
                    event = await ep.receive(timeout=0.05)
                except TimeoutError:
                    continue
                if isinstance(event, MessageReceived):
                    ep.obj.send(event.connection_id, event.channel, event.payload)
                    ep.flush()

    asyncio.run(serve())


def game(frames: int) -> None:
    """Run the frame loop for ``frames`` frames at 60 Hz."""
    address = ("127.0.0.1", free_port())
    stop = threading.Event()
    thread = threading.Thread(target=run_server, args=(address, stop), daemon=True)
    thread.start()
    time.sleep(0.2)
    client = PollEndpoint(Client())
    token = make_token([address], client_id=1, protocol_id=1)
    client.call(lambda c: c.connect(token, client.now()))
    connected, echoes = False, 0
    try:
        for frame in range(frames):
            for event in client.pump():  # once per frame: receive, timers, send
                if isinstance(event, Connected):
                    connected = True
                elif isinstance(event, MessageReceived):
                    echoes += 1
            if connected:
                x = 100.0 + frame
                client.obj.send(SEQUENCED, f"pos {x:.1f}".encode())
                client.flush()
            time.sleep(1 / 60)
    finally:
        client.close()
        stop.set()
        thread.join(timeout=2)
    print(f"{frames} frames, connected: {connected}, echoes received: {echoes}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="run 40 frames instead of 300")
    args = parser.parse_args()
    game(40 if args.quick else 300)
