"""A server and four clients on a simulated UMTS network, in virtual time (no sockets).

Run: ``python -m lagless.examples.simulated [--quick]``. Every client sends 50 reliable messages
across a link with UMTS latency, jitter and loss (spec 000 Table 2.2); the server counts what
arrived and each client reports its measured RTT and loss. The same seed gives the same output.
"""

from __future__ import annotations

import argparse
import random

from lagless.io import SimEndpoint
from lagless.netsim import Network, Scheduler, get_profile
from lagless.transport import (
    Client,
    MessageReceived,
    NetcodeClientConfig,
    NetcodeServerConfig,
    Server,
)


def simulate(seconds: float, seed: int = 1) -> None:
    """Run the scenario for ``seconds`` of simulated time and print the outcome."""
    scheduler = Scheduler(start=100.0)
    network = Network(scheduler, seed=seed, default_link=get_profile("umts").up)
    network.add_host("server")
    received: list[MessageReceived] = []
    config = NetcodeServerConfig(protocol_id=5, public_address=("server", 9000), insecure=True)
    SimEndpoint(
        Server(config=config, random_bytes=random.Random(seed).randbytes),
        network.host("server"),
        9000,
        on_event=lambda e: received.append(e) if isinstance(e, MessageReceived) else None,
    )
    clients = []
    for k in range(4):
        network.add_host(f"phone{k}")
        client = SimEndpoint(
            Client(config=NetcodeClientConfig(insecure=True)), network.host(f"phone{k}")
        )
        client.obj.connect_insecure(
            server_addresses=[("server", 9000)], protocol_id=5, client_id=k, now=scheduler.now
        )
        client.flush()
        clients.append(client)
    scheduler.run(until=scheduler.now + 2.0)
    for k, client in enumerate(clients):
        for i in range(50):
            client.obj.send(0, f"phone{k} #{i}".encode())
        client.flush()
    scheduler.run(until=scheduler.now + seconds)
    print(f"server received {len(received)} of 200 messages in {seconds:.0f} simulated seconds")
    for k, client in enumerate(clients):
        stats = client.obj.connection_statistics()
        print(f"phone{k}: rtt {stats.rtt * 1000:.0f} ms, loss {stats.loss:.1%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="simulate 5 s instead of 30 s")
    args = parser.parse_args()
    simulate(5.0 if args.quick else 30.0)
