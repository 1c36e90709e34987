"""One process of the real-UDP shooting test: ``python -m tests.game.shooting_peer ROLE``.

``server``: a `GameServer` on 127.0.0.1:0 (prints its port) on a wall-less level with one bot
that strafes up and down across the shooter's line of fire; it records every `ShotJudged` and
prints a JSON summary once the shooter has disconnected. ``client PORT``: connects as the shooter,
waits to see the bot, then fires the `PLAN`: honest shots (`GameClient.shoot` at the bot as this
client sees it) and forged ones (the same shot stamped `FORGED_SHIFT` seconds in the future or in
the past), spaced beyond the weapon's cooldown; it records the `Hit` events it receives and
disconnects. Every process exits on its own within its deadline.
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
    Hit,
    Level,
    Shoot,
    ShotJudged,
)
from lagless.io.endpoint import PollEndpoint
from lagless.replication import EventReceived, Target
from lagless.transport import NetcodeServerConfig

PROTOCOL = 0x4C41_474C_5348_4F54
DEADLINE = 20.0  # seconds any process runs at most
SPAWNS = ((5.0, 10.0), (15.0, 10.0))  # the bot takes one, the shooter the other: 10 m apart
STRAFE = 0.3  # the bot's steer along y (of the 6 m/s top speed): 1.8 m/s across the line
FLIP = 0.8  # s between the bot's turns
PLAN = ("honest", "future", "honest", "past", "honest")  # shots, in order
SHOT_GAP = 0.45  # s between shots (blaster cooldown 0.25 s)
FORGED_SHIFT = {"future": 0.5, "past": -2.0}  # s added to the shot's time stamp


def _frame(endpoint: PollEndpoint[Any]) -> list[object]:
    endpoint.wait(0.005)
    return endpoint.pump()


def run_server() -> dict[str, Any]:
    game = GameServer(
        NetcodeServerConfig(protocol_id=PROTOCOL, public_address=("127.0.0.1", 0), insecure=True),
        Level(20.0, 20.0, spawns=SPAWNS, name="range"),
        rng=random.Random(1),
    )
    game.listen()
    bot = game.add_bot("target")
    summary: dict[str, Any] = {"verdicts": []}
    with PollEndpoint(game, "127.0.0.1:0") as endpoint:
        print(endpoint.address[1], flush=True)
        start = time.monotonic()
        joined = left = False
        while time.monotonic() - start < DEADLINE:
            for event in _frame(endpoint):
                if isinstance(event, ShotJudged):
                    verdict = event.verdict
                    summary["verdicts"].append(
                        {
                            "accepted": verdict.accepted,
                            "reason": None if verdict.reason is None else verdict.reason.value,
                            "rewind": verdict.rewind,
                            "blocked": event.blocked,
                            "bot_y": bot.pos[1],
                        }
                    )
            joined = joined or bool(game.clients)
            if joined and not game.clients:
                left = True
                break
            t = time.monotonic() - start
            bot.steer = (0.0, STRAFE if int(t / FLIP) % 2 == 0 else -STRAFE)
        summary["left"] = left
        summary["bot_hp"] = bot.hp
        summary["drops"] = dict(game.drops)
        summary["accepted"] = game.lagcomp.accepted
    return summary


def _fire(client: GameClient, kind: str, target: Avatar, now: float) -> None:
    if kind == "honest":
        client.shoot(target, now)
        return
    me = client.avatar
    assert me is not None
    (x, y), (tx, ty) = me.pos, target.pos
    shot = Shoot(
        origin=(x, y),
        direction=math.atan2(ty - y, tx - x),
        target=target,
        view_delay=client.view_delay,
    )
    client.send_event(shot, Target.server(), now + FORGED_SHIFT[kind])


def run_client(port: int) -> dict[str, Any]:
    client = GameClient(PROTOCOL, rng=random.Random(7))
    summary: dict[str, Any] = {"fired": [], "hits": [], "events": []}
    with PollEndpoint(client, "127.0.0.1:0") as endpoint:
        endpoint.call(lambda c: c.connect(("127.0.0.1", port), endpoint.now(), client_id=1))
        start = time.monotonic()
        ready: float | None = None
        while time.monotonic() - start < DEADLINE:
            for event in _frame(endpoint):
                if isinstance(event, ConnectionEstablished):
                    summary["events"].append("established")
                elif isinstance(event, ConnectionEnded):
                    summary["events"].append(["ended", event.reason])
                    return summary
                elif isinstance(event, EventReceived) and isinstance(event.event, Hit):
                    summary["hits"].append([event.event.damage, event.event.hp])
            now = endpoint.now()
            me = client.avatar
            bots = [o for o in client.world if isinstance(o, Avatar) and o is not me]
            if me is None or not bots:
                continue
            if ready is None:
                ready = now + 0.5  # a few snapshots and clock-sync rounds first
            fired = len(summary["fired"])
            if fired < len(PLAN) and now >= ready:
                kind = PLAN[fired]
                endpoint.call(lambda c, k=kind, b=bots[0], t=now: _fire(c, k, b, t))
                summary["fired"].append(kind)
                ready = now + SHOT_GAP  # counted from this shot, so a stall cannot bunch them
            # done when every shot had time to be judged and every honest hit to come back
            if fired == len(PLAN) and now >= ready + 0.5:
                break
        for _ in range(20):  # let the last acks out
            _frame(endpoint)
        endpoint.call(lambda c: c.disconnect())
        for _ in range(5):
            _frame(endpoint)
    return summary


def main() -> None:
    result = run_server() if sys.argv[1] == "server" else run_client(int(sys.argv[2]))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
