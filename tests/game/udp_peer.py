"""One process of the real-UDP game test: ``python -m tests.game.udp_peer ROLE``.

``server``: a `GameServer` on 127.0.0.1:0 (prints its port), waits for two players, waits until
the first one's avatar has moved 1 m, kicks the second, waits for the first to disconnect, and
prints a JSON summary. ``client PORT N``: connects as player N; player 1 steers right and
disconnects once player 2's avatar is gone; player 2 waits to be kicked. Every process exits on
its own within its deadline.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from typing import Any

from lagless.game import (
    Avatar,
    ConnectionEnded,
    ConnectionEstablished,
    GameClient,
    GameServer,
    PlayerJoined,
    PlayerLeft,
    builtin_map,
)
from lagless.io.endpoint import PollEndpoint
from lagless.replication import ObjectDestroyed
from lagless.transport import NetcodeServerConfig

PROTOCOL = 0x4C41_474C_4553_5544
DEADLINE = 20.0  # seconds any process runs at most


def _frame(endpoint: PollEndpoint[Any]) -> list[object]:
    endpoint.wait(0.005)
    return endpoint.pump()


def run_server() -> dict[str, Any]:
    game = GameServer(
        NetcodeServerConfig(protocol_id=PROTOCOL, public_address=("127.0.0.1", 0), insecure=True),
        builtin_map(),
        rng=random.Random(1),
    )
    game.listen()
    summary: dict[str, Any] = {"joined": [], "left": []}
    with PollEndpoint(game, "127.0.0.1:0") as endpoint:
        print(endpoint.address[1], flush=True)
        start = time.monotonic()
        start_pos: tuple[float, float] | None = None
        kicked = False
        while time.monotonic() - start < DEADLINE:
            for event in _frame(endpoint):
                if isinstance(event, PlayerJoined):
                    summary["joined"].append([event.info.client_id, event.info.name])
                elif isinstance(event, PlayerLeft):
                    summary["left"].append([event.info.client_id, event.reason])
            players = {c.client_id: c.client for c in game.clients}
            first = game.avatar_of(players[1]) if 1 in players else None
            if first is not None and len(summary["joined"]) == 2 and start_pos is None:
                start_pos = first.pos
            if first is not None and start_pos is not None and not kicked:
                summary["moved"] = math.dist(first.pos, start_pos)
                if summary["moved"] >= 1.0:
                    second = players[2]
                    kicked = endpoint.call(lambda g, c=second: g.kick(c, "test", endpoint.now()))
            if kicked and len(summary["left"]) == 2:
                break
        summary["ticks"] = game.ticks
        summary["drops"] = dict(game.replication.drops)
    return summary


def run_client(port: int, n: int) -> dict[str, Any]:
    client = GameClient(PROTOCOL, rng=random.Random(n))
    summary: dict[str, Any] = {"events": []}
    with PollEndpoint(client, "127.0.0.1:0") as endpoint:
        endpoint.call(lambda c: c.connect(("127.0.0.1", port), endpoint.now(), client_id=n))
        start = time.monotonic()
        other: int | None = None
        while time.monotonic() - start < DEADLINE:
            for event in _frame(endpoint):
                if isinstance(event, ConnectionEstablished):
                    summary["events"].append("established")
                elif isinstance(event, ConnectionEnded):
                    summary["events"].append(["ended", event.reason, event.kicked])
                    return summary
                elif isinstance(event, ObjectDestroyed) and event.ident == other:
                    summary["events"].append("other_destroyed")
                    endpoint.call(lambda c: c.disconnect())
                    mine = client.avatar
                    summary["replica_x"] = mine.pos[0] if mine is not None else None
            if n == 1:
                endpoint.call(lambda c: c.move((1.0, 0.0), 0.0))
                if other is None:
                    others = [
                        o for o in client.world if isinstance(o, Avatar) and o is not client.avatar
                    ]
                    other = others[0].id if others else None
    summary["events"].append("deadline")
    return summary


def main() -> None:
    if sys.argv[1] == "server":
        result = run_server()
    else:
        result = run_client(int(sys.argv[2]), int(sys.argv[3]))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
