"""Game server tick benchmark: N bot players on one `GameServer` at 60 Hz over the simulator.

Issue 14's goal for the demo: 16 bots + 1 player on one server at 60 Hz simulation, server tick
<= 8 ms on one core and <= 8 kB/s per client. Here every player is a `GameClient` bot on the
simulated network (20 ms one-way, no loss) that changes its steering and aim every 0.5 s and fires
at a random other player every 0.6 s (lag-compensated, with walls and kills), on the shipped arena
map. The server's CPU time (``time.process_time`` around every call the driver makes into it:
datagrams, timers, transport, snapshots) is divided by the simulation ticks run: ``server_ms_per_
tick`` is the whole server's cost per 60 Hz tick; ``simulate_ms_p99`` is the 99th percentile of
the simulation step alone (motion, collisions, kills, lag-compensation record). ``client_kBps``
is what each client receives, application payload plus the 28-byte IPv4+UDP header per datagram.

The competitor is the collision step without the broad phase: exact SAT for every pair of
avatars and every avatar-wall pair, timed on the same positions; the ratio is printed.

With ``--server-bots N`` the server also hosts N server-side bots (`GameServer.add_bot`, steered
and firing from the benchmark; no connection each): ``--players 1 --server-bots 16`` is the
issue's "16 bots + 1 player" with bots that cost no transport.

Run: ``python benchmarks/game_server.py [--players N] [--server-bots N] [--seconds S] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import time
from typing import Any

import numpy as np

from lagless.game import Avatar, GameClient, GameServer, builtin_map
from lagless.game.geometry import regular_polygon, sat_contact
from lagless.io.sim import SimEndpoint
from lagless.netsim import LinkConfig, Network, Scheduler
from lagless.transport import NetcodeServerConfig

PROTOCOL = 0x4C41_474C_4553_4231
SERVER = ("10.0.0.1", 40000)


class _Timed:
    """Forwards the sans-I/O calls to the server, adding up their CPU time."""

    def __init__(self, game: GameServer) -> None:
        self.game = game
        self.cpu = 0.0
        self.simulate: list[float] = []
        original = game.simulate

        def simulate(now: float) -> None:
            start = time.process_time()
            original(now)
            self.simulate.append(time.process_time() - start)

        game.simulate = simulate  # type: ignore[method-assign]

    def _timed(self, fn: Any, *args: Any) -> Any:
        start = time.process_time()
        try:
            return fn(*args)
        finally:
            self.cpu += time.process_time() - start

    def receive_datagram(self, data: bytes, addr: tuple[str, int], now: float) -> None:
        self._timed(self.game.receive_datagram, data, addr, now)

    def handle_timer(self, now: float) -> None:
        self._timed(self.game.handle_timer, now)

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, tuple[str, int]]]:
        return self._timed(self.game.datagrams_to_send, now)  # type: ignore[no-any-return]

    def next_timer(self) -> float | None:
        return self._timed(self.game.next_timer)  # type: ignore[no-any-return]

    def next_event(self) -> object | None:
        return self._timed(self.game.next_event)


def _collide_all_pairs(game: GameServer) -> float:
    """CPU seconds of the competitor: exact SAT for every pair, no broad phase."""
    r = game.config.radius
    avatars = [a for a in game.world if isinstance(a, Avatar)]
    start = time.process_time()
    polys = [regular_polygon(a.pos[0], a.pos[1], r) for a in avatars]
    for i, a in enumerate(polys):
        for wall in game.level.walls:
            sat_contact(a, wall)
        for b in polys[i + 1 :]:
            sat_contact(a, b)
    return time.process_time() - start


def run(
    players: int = 17, seconds: float = 20.0, seed: int = 1, server_bots: int = 0
) -> dict[str, Any]:
    """Run the match (``players`` client bots, ``server_bots`` server-side bots); return the
    measured numbers."""
    rng = random.Random(seed)
    scheduler = Scheduler(start=10.0)
    network = Network(scheduler, seed=seed, default_link=LinkConfig(latency=0.02))
    network.add_host(SERVER[0])
    game = GameServer(
        NetcodeServerConfig(protocol_id=PROTOCOL, public_address=SERVER, insecure=True),
        builtin_map(),
        rng=random.Random(seed),
        random_bytes=random.Random(seed).randbytes,
    )
    game.listen()
    timed = _Timed(game)
    SimEndpoint(timed, network.host(SERVER[0]), SERVER[1])
    bots: list[SimEndpoint[GameClient]] = []
    for n in range(players):
        host = f"10.0.1.{n + 1}"
        network.add_host(host)
        bot = SimEndpoint(GameClient(PROTOCOL, rng=random.Random(n)), network.host(host))
        now = scheduler.now
        bot.poke(lambda c, n=n, now=now: c.connect(SERVER, now, client_id=n + 1, name=f"bot{n}"))
        bots.append(bot)

    robots = [game.add_bot(f"robot{n}") for n in range(server_bots)]

    def steer() -> None:
        for bot in bots:
            angle = rng.uniform(-math.pi, math.pi)
            bot.poke(lambda c, a=angle: c.move((math.cos(a), math.sin(a)), a))
        for robot in robots:
            angle = rng.uniform(-math.pi, math.pi)
            robot.steer = (math.cos(angle), math.sin(angle))
            robot.aim = angle
        scheduler.call_at(scheduler.now + 0.5, steer)

    def fire() -> None:
        for bot in bots:
            others = [
                o
                for o in bot.obj.world
                if isinstance(o, Avatar) and o.role.value == "proxy" and not o.dead
            ]
            mine = bot.obj.avatar
            if others and mine is not None and not mine.dead and bot.obj.is_connected:
                target = rng.choice(others)
                bot.poke(lambda c, t=target: c.shoot(t, scheduler.now))
        everyone = [a for a in game.world if isinstance(a, Avatar) and not a.dead]
        for robot in robots:
            others = [a for a in everyone if a is not robot]
            if others and not robot.dead:
                game.bot_shoot(robot, rng.choice(others), scheduler.now)
        scheduler.call_at(scheduler.now + 0.6, fire)

    scheduler.run(until=scheduler.now + 2.0)  # everyone joins
    steer()
    fire()
    warm_cpu, warm_ticks = timed.cpu, game.ticks
    timed.simulate.clear()
    received = [b.obj.transport.connection_statistics().packets_received for b in bots]
    t0 = scheduler.now
    scheduler.run(until=t0 + seconds)
    ticks = game.ticks - warm_ticks
    server_ms = (timed.cpu - warm_cpu) / ticks * 1000.0
    stats = [b.obj.transport.connection_statistics() for b in bots]
    kbps = [s.received_bps / 1000.0 for s in stats]
    packets = [s.packets_received - r for s, r in zip(stats, received, strict=True)]
    header_kbps = [p * 28 / seconds / 1000.0 for p in packets]
    simulate = np.array(timed.simulate) * 1000.0
    competitor = _collide_all_pairs(game) * 1000.0
    start = time.process_time()
    game.simulate(scheduler.now + 1.0)
    ours = (time.process_time() - start) * 1000.0
    return {
        "players": len(game.clients),
        "server_bots": len(game.bots),
        "seconds": seconds,
        "sim_ticks": ticks,
        "server_ms_per_tick": round(server_ms, 3),
        "simulate_ms_median": round(float(np.median(simulate)), 3),
        "simulate_ms_p99": round(float(np.percentile(simulate, 99)), 3),
        "client_kBps_payload": round(float(np.mean(kbps)), 2),
        "client_kBps_with_headers": round(float(np.mean(kbps) + np.mean(header_kbps)), 2),
        "shots": dict(game.drops) | {"accepted": game.lagcomp.accepted},
        "kills": game.arbiter.committed,
        "collision_all_pairs_ms": round(competitor, 3),
        "simulate_step_ms": round(ours, 3),
        "ratio_all_pairs_vs_step": round(competitor / ours, 2) if ours > 0 else None,
    }


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--players", type=int, default=17)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--server-bots", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = run(args.players, args.seconds, args.seed, args.server_bots)
    if args.json:
        print(json.dumps(result))
        return
    for key, value in result.items():
        print(f"{key:28} {value}")


if __name__ == "__main__":
    main()
