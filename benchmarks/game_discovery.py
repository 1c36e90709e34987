"""LAN discovery benchmark: how long until a client has found every game server (issue 14 goal 1 s).

Starts ``servers`` ``lagless game serve`` processes on loopback that share one discovery port, then
runs ``rounds`` discoveries, each a fresh `DiscoveryClient` on a broadcast socket querying
``127.255.255.255`` (loopback's broadcast address; on a LAN it is the subnet's or
255.255.255.255), and times (wall clock, ``time.monotonic``) from the first query to the answer of
the last server. Printed: median, 95th percentile and worst time to find all servers, and the
worst against the issue's 1 s goal as a ratio (the "competitor" is the goal itself: nothing else
on the machine does LAN discovery for lagless).

Run: ``python benchmarks/game_discovery.py [--servers N] [--rounds N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import subprocess
import sys
import time
from typing import Any

import numpy as np

from lagless.cli.game import GAME_PROTOCOL_ID
from lagless.game import DiscoveryClient, ServerDiscovered
from lagless.io.discovery import BroadcastEndpoint

GOAL = 1.0  # seconds, issue 14


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("0.0.0.0", 0))
        return int(probe.getsockname()[1])


def _find_all(port: int, servers: int, seed: int, limit: float = 5.0) -> float:
    client = DiscoveryClient(GAME_PROTOCOL_ID, rng=random.Random(seed))
    with BroadcastEndpoint(client, "0.0.0.0:0") as endpoint:
        start = time.monotonic()
        endpoint.call(lambda c: c.start([("127.255.255.255", port)], endpoint.now()))
        found = 0
        while found < servers and time.monotonic() - start < limit:
            endpoint.wait(0.05)
            found += sum(isinstance(e, ServerDiscovered) for e in endpoint.pump())
        elapsed = time.monotonic() - start
    return elapsed if found == servers else float("inf")


def run(servers: int = 4, rounds: int = 20, seed: int = 0) -> dict[str, Any]:
    """Start the servers, time ``rounds`` discoveries, stop the servers; return the numbers."""
    port = _free_port()
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lagless",
                "game",
                "serve",
                "-p",
                "0",
                "--discovery-port",
                str(port),
                "--name",
                f"bench{n}",
                "-q",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        for n in range(servers)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            proc.stdout.readline()  # "game server on ...": its responder is bound
        times = np.array([_find_all(port, servers, seed + r) for r in range(rounds)]) * 1000.0
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)
    worst = float(times.max())
    return {
        "servers": servers,
        "rounds": rounds,
        "all_found_ms_median": round(float(np.median(times)), 2),
        "all_found_ms_p95": round(float(np.percentile(times, 95)), 2),
        "all_found_ms_worst": round(worst, 2),
        "worst_vs_goal_1s": round(worst / (GOAL * 1000.0), 4),
    }


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.servers, args.rounds, args.seed)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:24} {value}")


if __name__ == "__main__":
    main()
