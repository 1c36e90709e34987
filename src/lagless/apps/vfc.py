"""``vfc serve`` / ``vfc bots``: the VFC server and N bot clients over real UDP (spec 001 §6.3).

Implements issue 5 part 3's real-network runs: ``serve_vfc`` drives a ``VfcServer`` on an asyncio
UDP endpoint and prints joins, leaves and a status line when the number of clients or objects
changed (checked once a second; an idle server prints nothing), and hands a live view the clients'
statuses every second; ``run_bots`` connects N
``VfcClient``s (one socket each, one process for all, unlike the thesis's one process per bot) and
writes the ``Bots`` mobility into their avatars every 33 ms. Both use the transport's insecure
mode (local development and the lab only), like the thesis's LAN setup.

Decisions, pinned in ``tests/soak/test_chaos.py``: both runs stop cleanly when ``stop`` is set
(the commands set it on SIGINT and SIGTERM); ``run_bots`` raises `ServerLost` as soon as every
bot's connection has ended (the server died, never answered, or disconnected them all), instead
of running out its duration with no server
(``test_vfc_bots_exit_with_one_error_line_when_the_server_dies``). Bot client ids are drawn
from the system's randomness, not from the mobility seed: a netcode server refuses a client id
that is still connected, so bots restarted after a crash (whose old connections have not timed
out yet), or a second bots process with the same seed, would otherwise not get in
(``test_restarted_bots_get_in_beside_their_ghosts``).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from lagless._types import Address
from lagless.apps.serve import ClientStatus, client_statuses
from lagless.errors import LaglessError
from lagless.interest.client import VfcClient
from lagless.interest.control import CONTROL_CHANNEL, UPDATE_CHANNEL
from lagless.interest.mobility import Bots, BotsConfig, get_map
from lagless.interest.policy import ROUND_PERIOD
from lagless.interest.records import CubeOriObj
from lagless.interest.server import VfcServer
from lagless.interest.session_events import ClientJoined, ClientLeft
from lagless.io.endpoint import open_endpoint
from lagless.io.udp import format_hostport
from lagless.transport import (
    Client,
    NetcodeClientConfig,
    NetcodeClientState,
    NetcodeServerConfig,
    Server,
)

__all__ = [
    "VFC_PROTOCOL_ID",
    "BotsSummary",
    "ServeSummary",
    "ServerLost",
    "run_bots",
    "serve_vfc",
]

VFC_PROTOCOL_ID = 0x5646_4334_4650_5301  # "VFC4FPS\x01"


class ServerLost(LaglessError):
    """Every bot's connection to the VFC server ended: it died, never answered or left them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSummary:
    """Counters of one ``serve_vfc`` run."""

    joined: int
    """Clients that joined."""
    update_bytes: int
    """Update-channel payload bytes sent."""
    control_bytes: int
    """Control-channel payload bytes sent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BotsSummary:
    """Counters of one ``run_bots`` run."""

    joined: int
    """Bots the server welcomed."""
    replicas: int
    """Replica refreshes the bots received in total."""


async def serve_vfc(
    address: Address,
    *,
    out: Callable[[str], None],
    duration: float | None = None,
    ready: Callable[[Address], None] | None = None,
    stop: asyncio.Event | None = None,
    monitor: Callable[[list[ClientStatus]], None] | None = None,
) -> ServeSummary:
    """Serve VFC on ``address`` for ``duration`` seconds (``None``: forever) or until ``stop``.

    Args:
        address: where to bind (and the public address).
        out: receives one line per join/leave and a status line when clients or objects changed.
        duration: seconds to run.
        ready: called with the bound address once the socket is open.
        stop: set it (e.g. from a signal handler) to end the run cleanly.
        monitor: called once a second with every connected client's status.
    """
    transport = Server(
        config=NetcodeServerConfig(
            protocol_id=VFC_PROTOCOL_ID, public_address=address, insecure=True, max_clients=256
        )
    )
    server = VfcServer(transport)
    joined = 0
    async with open_endpoint(server, address) as endpoint:
        if ready is not None:
            ready(endpoint.address)
        loop = asyncio.get_running_loop()
        stop_at = None if duration is None else loop.time() + duration
        next_report = loop.time() + 1.0
        shown = (0, 0)
        while (stop_at is None or loop.time() < stop_at) and not (stop and stop.is_set()):
            try:
                event = await endpoint.receive(timeout=0.1)
            except TimeoutError:
                event = None
            match event:
                case ClientJoined(client_id=cid):
                    joined += 1
                    out(f"client {cid} joined")
                case ClientLeft(client_id=cid):
                    out(f"client {cid} left")
                case _:
                    pass
            if loop.time() >= next_report:
                next_report += 1.0
                stats = server.policy.statistics()
                if (stats.clients, stats.objects) != shown:
                    shown = (stats.clients, stats.objects)
                    out(
                        f"clients {stats.clients} objects {stats.objects} "
                        f"updates out {server.bytes_out[UPDATE_CHANNEL]} B"
                    )
                if monitor is not None:
                    monitor(client_statuses(transport, {}))
    return ServeSummary(
        joined=joined,
        update_bytes=server.bytes_out[UPDATE_CHANNEL],
        control_bytes=server.bytes_out[CONTROL_CHANNEL],
    )


async def run_bots(
    server: Address,
    *,
    count: int,
    map_name: str,
    duration: float,
    out: Callable[[str], None],
    seed: int = 0,
    stop: asyncio.Event | None = None,
) -> BotsSummary:
    """Connect ``count`` bot clients to ``server`` and move them for ``duration`` seconds.

    Args:
        server: the VFC server's address.
        count: number of bots.
        map_name: a map of Table 5.4 (its size and mobility).
        duration: seconds to run after connecting.
        out: receives progress lines.
        seed: mobility seed (client ids are drawn afresh each run, see the module docstring).
        stop: set it (e.g. from a signal handler) to end the run early; the bots leave.

    Raises:
        ServerLost: every bot's connection ended (the server died or never answered).
    """
    rng = np.random.default_rng(seed)
    bots = Bots(BotsConfig(count=count, map=get_map(map_name)), rng=rng)
    loop = asyncio.get_running_loop()
    endpoints = []
    local = (
        "[::]:0" if ":" in server[0] else "127.0.0.1:0" if server[0] == "127.0.0.1" else "0.0.0.0:0"
    )
    for i in range(count):
        client = VfcClient(Client(config=NetcodeClientConfig(insecure=True)))
        endpoint = open_endpoint(client, local)
        await endpoint.__aenter__()
        client.transport.connect_insecure(
            server_addresses=[server],
            protocol_id=VFC_PROTOCOL_ID,
            client_id=secrets.randbits(63),
            now=loop.time(),
        )
        client.add_object(CubeOriObj(id=i))
        endpoint.flush()
        endpoints.append(endpoint)
    replicas = 0
    seen_server = False
    try:
        stop_at = loop.time() + duration
        while loop.time() < stop_at and not (stop and stop.is_set()):
            ended = [e.obj.transport.state for e in endpoints if e.obj.transport.state <= 0]
            if len(ended) == count:
                # a bot that timed out from CONNECTED had the server even if no round saw it
                lost = seen_server or NetcodeClientState.CONNECTION_TIMED_OUT in ended
                what = "lost the VFC server" if lost else "no answer from the VFC server"
                reasons = ", ".join(sorted({state.name.lower() for state in ended}))
                raise ServerLost(
                    f"{what} at {format_hostport(server)}: every bot ended ({reasons})"
                )
            bots.step(ROUND_PERIOD, rng=rng)
            pos, vel = bots.positions, bots.velocity
            for i, endpoint in enumerate(endpoints):
                client = endpoint.obj
                if client.is_connected():
                    seen_server = True
                    avatar = client.get_object_ref(i)
                    avatar.x, avatar.y, avatar.z = (float(v) for v in pos[i])
                    avatar.yaw, avatar.pitch = float(bots.yaw[i]), float(bots.pitch[i])
                    avatar.vx, avatar.vy, avatar.vz = (float(v) for v in vel[i])
                    replicas += len(client.get_updated_ids())
            await asyncio.sleep(ROUND_PERIOD)
        joined = sum(e.obj.is_connected() for e in endpoints)
        out(f"{joined} of {count} bots joined; {replicas} replica refreshes received")
    finally:
        for endpoint in endpoints:
            endpoint.obj.disconnect()
            endpoint.flush()
        await asyncio.sleep(0.1)
        for endpoint in endpoints:
            await endpoint.__aexit__(None, None, None)
    return BotsSummary(joined=joined, replicas=replicas)
