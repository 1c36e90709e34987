"""Chaos test of the real ``lagless game rooms`` process (issue 11 part 1, issue 14 item 2).

For ``LAGLESS_CHAOS_SECONDS`` (default 6) the room service gets, all at once: well-behaved room
clients that create, matchmake, join, raise events and leave; clients that raise a burst of
events and vanish in the same frame (socket closed, no disconnect), sometimes while alone in a
room; clients that send malformed room messages; and random datagrams from 16 sockets. Then it
waits for the vanished clients to time out and asserts that the process is alive, printed no
traceback, closed every room the chaos opened (no ghost members keep one alive), still serves a
fresh client (create, list, the room is there) and exits 143 on SIGTERM after its summary.
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import pytest

from lagless._types import Address
from lagless.cli.game import GAME_PROTOCOL_ID
from lagless.game.rooms import (
    RELIABLE_CHANNEL,
    CreateRoom,
    Joined,
    ListRooms,
    Matchmake,
    RoomClient,
    RoomList,
    encode_room_message,
)
from lagless.io.endpoint import PollEndpoint
from tests.soak.chaos_clients import HOST, ServerProcess, spray

CHAOS_SECONDS: Final = float(os.environ.get("LAGLESS_CHAOS_SECONDS", "6"))
SEED: Final = int(os.environ.get("LAGLESS_CHAOS_SEED", "11"))
SETTLE: Final = 20.0  # s: the insecure transport's 10 s timeout of a vanished client, plus margin
STEP: Final = 0.005  # s between pumps of the in-test clients

pytestmark = pytest.mark.slow


@pytest.fixture
def rooms(tmp_path: Path) -> Iterator[tuple[ServerProcess, Address]]:
    """A ``lagless game rooms`` process on a free port; killed at the end if still running."""
    server = ServerProcess(
        "rooms", ["game", "rooms", "--port", "0"], r"room service on ([\d.]+):(\d+)", tmp_path
    )
    try:
        yield server, server.wait_ready()
    finally:
        if server.alive():
            server.process.kill()
            server.process.wait(10)


def _client(address: Address, client_id: int) -> PollEndpoint[RoomClient]:
    endpoint = PollEndpoint(RoomClient(GAME_PROTOCOL_ID), f"{HOST}:0")
    endpoint.obj.connect(address, endpoint.now(), client_id=client_id)
    endpoint.flush()
    return endpoint


def _pump_until(
    endpoints: list[PollEndpoint[RoomClient]], done: Callable[[], bool], timeout: float
) -> list[object]:
    """Pump every endpoint until ``done()`` or ``timeout`` s; return their events."""
    events: list[object] = []
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(STEP)
        for endpoint in endpoints:
            events.extend(endpoint.pump())
    return events


def _connected(endpoint: PollEndpoint[RoomClient], timeout: float = 5.0) -> bool:
    _pump_until([endpoint], lambda: endpoint.obj.transport.connected, timeout)
    return endpoint.obj.transport.connected


def _session(address: Address, rng: random.Random, client_id: int) -> str:
    """One chaos client; return what it did."""
    endpoint = _client(address, client_id)
    try:
        if not _connected(endpoint):
            return "not connected"
        client = endpoint.obj
        kind = rng.choice(("good", "vanish", "malformed", "alone"))
        if kind == "alone":
            endpoint.call(lambda c: c.request(CreateRoom(f"ghost-{client_id}", 4)))
        else:
            endpoint.call(lambda c: c.request(Matchmake({"mode": "chaos"}, max_players=4)))
        _pump_until([endpoint], lambda: client.room is not None, 3.0)
        if kind == "malformed":
            for _ in range(rng.randint(1, 20)):
                junk = rng.randbytes(rng.randint(0, 64))
                endpoint.call(lambda c, j=junk: c.transport.send(RELIABLE_CHANNEL, j))
            endpoint.call(
                lambda c: c.transport.send(RELIABLE_CHANNEL, encode_room_message(RoomList([])))
            )  # a server-to-client message sent to the server: unexpected
        for i in range(rng.randint(1, 200) if kind != "good" else 5):
            endpoint.call(lambda c, i=i: c.raise_event(1, b"chaos %d" % i))
        if kind in ("vanish", "alone"):
            return kind  # the socket closes with events queued: no disconnect
        _pump_until([endpoint], lambda: False, rng.uniform(0.05, 0.3))
        endpoint.call(lambda c: c.transport.disconnect())
        return kind
    finally:
        endpoint.close()


def _chaos(address: Address, rng: random.Random) -> list[str]:
    """Sessions one after another, two threads of them, plus garbage, for CHAOS_SECONDS."""
    done: list[str] = []
    deadline = time.monotonic() + CHAOS_SECONDS

    def sessions(seed: float, first: int) -> None:
        mine = random.Random(seed)
        n = first
        while time.monotonic() < deadline:
            done.append(_session(address, mine, n))
            n += 2

    def garbage() -> None:
        samples = [encode_room_message(CreateRoom("x", 2)), bytes(64), b"\x01" * 300]
        asyncio.run(
            spray(
                address,
                random.Random(rng.random()),
                samples=samples,
                count=int(400 * CHAOS_SECONDS),
                seconds=CHAOS_SECONDS,
                sockets=16,
            )
        )

    threads = [
        threading.Thread(target=sessions, args=(rng.random(), 1)),
        threading.Thread(target=sessions, args=(rng.random(), 2)),
        threading.Thread(target=garbage),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(CHAOS_SECONDS + 60)
    return done


def _rooms_listed(address: Address, client_id: int) -> list[str] | None:
    """A fresh client creates a room named ``final`` and lists the rooms; None if it cannot."""
    endpoint = _client(address, client_id)
    try:
        if not _connected(endpoint):
            return None
        endpoint.call(lambda c: c.request(CreateRoom("final", 2)))
        events = _pump_until([endpoint], lambda: endpoint.obj.room is not None, 5.0)
        if not any(isinstance(e, Joined) for e in events):
            return None
        endpoint.call(lambda c: c.request(ListRooms()))
        seen: list[object] = []

        def answered() -> bool:
            seen.extend(endpoint.pump())
            return any(isinstance(e, RoomList) for e in seen)

        _pump_until([], answered, 5.0)
        listed = [e for e in seen if isinstance(e, RoomList)]
        return None if not listed else sorted(room.name for room in listed[-1].rooms)
    finally:
        endpoint.call(lambda c: c.transport.disconnect())
        endpoint.close()


def test_room_service_survives_chaos(rooms: tuple[ServerProcess, Address]) -> None:
    server, address = rooms
    done = _chaos(address, random.Random(SEED))
    assert server.alive(), server.stderr()[-4000:]
    assert {"good", "vanish", "malformed", "alone"} <= set(done), done
    # the vanished clients time out and leave their rooms, which close
    deadline = time.monotonic() + SETTLE
    listed = _rooms_listed(address, 10_000)
    while listed != ["final"] and time.monotonic() < deadline:
        time.sleep(1.0)
        listed = _rooms_listed(address, 10_000 + int(time.monotonic()))
    assert listed == ["final"], listed
    assert server.alive(), server.stderr()[-4000:]
    assert "Traceback" not in server.stderr(), server.stderr()[-4000:]
    status = server.stop()
    assert status == 143, server.stderr()[-4000:]
    assert "Traceback" not in server.stderr(), server.stderr()[-4000:]
    assert "events relayed" in server.stdout()
