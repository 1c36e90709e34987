"""Chaos test of the real server processes (issue 11 part 1).

Starts ``lagless serve --echo`` (insecure, and secure with a private key; and ``--raw`` with 4
slots that twice as many plain clients compete for, so some are denied while it is full),
``lagless vfc serve`` and ``lagless gossip lobby`` as processes and drives each over 127.0.0.1 for
``LAGLESS_CHAOS_SECONDS`` (default 6) with, all at once:

* well-behaved clients: lagless clients that verify their echoes in order, plain netcode clients
  that get raw echoes, VFC clients that join and leave, lobby clients that get the games list,
  and ``lagless vfc bots`` / ``lagless gossip peer`` processes that run to the end (exit 0);
* clients that burst messages and disconnect in the same frame, or ``Leave`` and then send
  ``ChangeClientId`` in the same packet;
* clients that vanish: sockets closed without a disconnect, payload packets that never leave,
  and ``lagless connect`` (lagless and ``--raw``), ``vfc bots`` and ``gossip peer`` processes
  killed with SIGKILL;
* clients whose acks acknowledge nothing while they make the server send (echo bursts,
  ``ChangeClientId`` spam), so its reliable send queue fills;
* clients that send every packet twice plus a truncated copy (and must still get their echoes);
* garbage: random datagrams, valid-looking prefixes, truncated, bit-flipped and replayed
  packets, handshake requests of the other security mode, lobby heartbeats of random games;
* clients that reconnect again and again, clients that vanish and restart at once on the same
  port (they must be let in within 3 s, not after the old slot's 10 s timeout), and 1100
  half-open handshakes per round.

Then it waits for the abandoned connections to time out and asserts that every server is
alive, printed no traceback, holds no ghost connections (``serve`` reported every connection
closed; ``vfc serve`` counts 0 clients and 0 objects), still serves fresh well-behaved clients,
and exits with status 0 on SIGTERM. Two shorter tests restart ``vfc bots`` beside their own
ghosts and kill the server under running bots (one ``error:`` line, no traceback).

``LAGLESS_CHAOS_SEED`` picks the random draws (default 11). Every loop is bounded in count and
time; the file takes about a minute on two cores.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import subprocess
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, Final, TypeVar

import pytest

from lagless._types import Address
from lagless.apps import REFERENCE_PROTOCOL_ID, make_token
from lagless.apps.vfc import VFC_PROTOCOL_ID
from lagless.interest.records import CubeOriObj
from lagless.io.endpoint import open_endpoint
from tests.soak.chaos_clients import (
    HOST,
    ServerProcess,
    Target,
    ask_lobby,
    burst_and_leave,
    deny_acks,
    echo_session,
    free_port,
    half_open,
    handshake_requests,
    kill_after,
    lobby_samples,
    mute_payloads,
    never_ack,
    new_vfc,
    plain_session,
    reconnect_loop,
    restart_on_same_port,
    spawn_client,
    spray,
    stutter,
    vanish,
    vfc_session,
    wait_joined,
)

CHAOS_SECONDS: Final = float(os.environ.get("LAGLESS_CHAOS_SECONDS", "6"))
SEED: Final = int(os.environ.get("LAGLESS_CHAOS_SEED", "11"))
SETTLE: Final = 12.0  # seconds: the 5 s connection timeout of abandoned VFC clients, plus
# margin for a loaded machine (a wait-until: a healthy run returns as soon as the count is 0)
ECHO_SETTLE: Final = 12.0  # seconds: the echo servers' 10 s token timeout, plus margin
KEY: Final = bytes(range(32))
MINE: Final = 32767  # object id of the final check; chaos ids stay below 32000
STATS: Final = re.compile(r"clients (\d+) objects (\d+)")

R = TypeVar("R")

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _quiet_insecure_warnings() -> Iterator[None]:
    """The in-test insecure clients each log a warning; keep failure reports readable."""
    logger = logging.getLogger("lagless.transport")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@pytest.fixture
def processes() -> Iterator[list[ServerProcess]]:
    """Server processes a test started; whatever is left is killed at the end."""
    started: list[ServerProcess] = []
    yield started
    for server in started:
        if server.alive():
            server.process.kill()
            server.process.wait(10)


def _start(
    processes: list[ServerProcess], tmp_path: Path, name: str, args: list[str], ready: str
) -> tuple[ServerProcess, Address]:
    server = ServerProcess(name, args, ready, tmp_path)
    processes.append(server)
    return server, server.wait_ready()


class _Errors(logging.Handler):
    """Collects the error records lagless logs (an endpoint logs what its object raised)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


def _run(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run ``main`` on a fresh loop; an exception that an in-test endpoint or a loop callback
    swallowed (logged, or passed to the loop's handler) fails the test."""
    errors = _Errors()
    logger = logging.getLogger("lagless")
    logger.addHandler(errors)

    async def guarded() -> None:
        swallowed: list[dict[str, Any]] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, ctx: swallowed.append(ctx))
        await main()
        assert not swallowed, swallowed

    try:
        asyncio.run(guarded())
    finally:
        logger.removeHandler(errors)
    assert not errors.records, "\n".join(errors.records[:5])


async def _repeat(seconds: float, limit: int, behaviour: Callable[[], Awaitable[R]]) -> list[R]:
    """Run ``behaviour`` again and again for ``seconds`` (at most ``limit`` times); return the
    results of the runs."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    results: list[R] = []
    while len(results) < limit and loop.time() < deadline:
        results.append(await behaviour())
    return results


def _assert_healthy(server: ServerProcess) -> None:
    assert server.alive(), f"{server.name} died:\n{server.stderr()[-4000:]}"
    assert "Traceback" not in server.stderr(), server.stderr()[-4000:]


def _assert_stops_cleanly(server: ServerProcess) -> None:
    status = server.stop()  # SIGTERM: the summary, then exit status 128 + 15
    assert status == 143, f"{server.name} exited with {status}:\n{server.stderr()[-4000:]}"
    assert "Traceback" not in server.stderr(), server.stderr()[-4000:]


def _open_connections(stdout: str) -> set[str]:
    """Connection ids ``lagless serve`` reported connected and not yet disconnected."""
    connected = set(re.findall(r"^client (\d+) connected", stdout, re.MULTILINE))
    return connected - set(re.findall(r"^client (\d+) disconnected", stdout, re.MULTILINE))


# -- lagless serve --echo -------------------------------------------------------------------------


async def _echo_chaos(target: Target, rng: random.Random, tmp_path: Path) -> dict[str, int]:
    """Every behaviour against one echo server for CHAOS_SECONDS; return what to check: the
    runs of the well-behaved sessions and the never-acking clients the server dropped."""
    seconds = CHAOS_SECONDS
    samples = handshake_requests(target, rng, 4) + handshake_requests(
        target, rng, 4, other_mode=True
    )

    def record(data: bytes) -> list[bytes]:
        if len(samples) < 200:
            samples.append(data)
        return [data]

    await echo_session(target, rng, messages=50, outgoing=record)
    where = f"{HOST}:{target.address[1]}"
    if target.insecure:
        connects = [["connect", where, "--insecure"], ["connect", where, "--insecure", "--raw"]]
    else:
        connects = []
        for raw in (False, True):
            token = tmp_path / f"token-{target.address[1]}-{raw}"
            token.write_bytes(
                make_token(
                    [target.address],
                    client_id=rng.getrandbits(62),
                    private_key=KEY,
                    lagless=not raw,
                )
            )
            connects.append(["connect", where, "--token", str(token), *(["--raw"] * raw)])
    async with asyncio.TaskGroup() as group:
        good = group.create_task(
            _repeat(seconds, 100, lambda: echo_session(target, rng, messages=20))
        )
        stuttering = group.create_task(
            _repeat(seconds, 100, lambda: echo_session(target, rng, messages=20, outgoing=stutter))
        )
        group.create_task(
            _repeat(seconds, 200, lambda: burst_and_leave(target, rng, burst=rng.randrange(1, 300)))
        )
        group.create_task(
            _repeat(seconds, 200, lambda: vanish(target, rng, burst=rng.randrange(0, 100)))
        )
        group.create_task(
            _repeat(
                seconds,
                10,
                lambda: vanish(target, rng, burst=rng.randrange(0, 1000), outgoing=mute_payloads),
            )
        )
        group.create_task(_repeat(seconds, 100, lambda: reconnect_loop(target, rng, cycles=3)))
        group.create_task(_repeat(seconds, 3, lambda: restart_on_same_port(target, rng)))
        group.create_task(
            _repeat(seconds, 2, lambda: half_open(target, rng, count=1100, seconds=seconds / 2))
        )
        group.create_task(
            spray(target.address, rng, samples=samples, count=int(500 * seconds), seconds=seconds)
        )
        for args in connects:
            group.create_task(
                _repeat(seconds, 3, lambda args=args: kill_after(spawn_client(args), 1.5, lines=50))
            )
        plain = group.create_task(
            _repeat(
                seconds,
                100,
                lambda: plain_session(target, rng, payloads=5, leave_at_once=False),
            )
        )
        group.create_task(
            _repeat(
                seconds,
                100,
                lambda: plain_session(
                    target, rng, payloads=rng.randrange(1, 50), leave_at_once=True
                ),
            )
        )
        dropped = (
            group.create_task(_repeat(seconds, 3, lambda: never_ack(target, rng, seconds=6.0)))
            if target.insecure
            else None
        )
    return {
        "good": len(good.result()),
        "plain": len(plain.result()),
        "stuttering": len(stuttering.result()),
        "never_ack_dropped": 0 if dropped is None else sum(dropped.result()),
        "never_ack_runs": 0 if dropped is None else len(dropped.result()),
    }


def test_echo_servers_survive_chaos(tmp_path: Path, processes: list[ServerProcess]) -> None:
    ready = r"serving lagless \(\w+\) on ([\d.]+):(\d+)"
    insecure, insecure_at = _start(
        processes, tmp_path, "insecure", ["serve", "--insecure", "--echo", "--port", "0"], ready
    )
    secure, secure_at = _start(
        processes,
        tmp_path,
        "secure",
        ["serve", "--echo", "--port", str(free_port()), "--private-key", KEY.hex()],
        ready,
    )
    targets = [
        Target(insecure_at, REFERENCE_PROTOCOL_ID, None),
        Target(secure_at, REFERENCE_PROTOCOL_ID, KEY),
    ]
    rng = random.Random(SEED)
    counts: list[dict[str, int]] = []

    async def main() -> None:
        async with asyncio.TaskGroup() as group:
            tasks = [
                group.create_task(_echo_chaos(t, random.Random(rng.random()), tmp_path))
                for t in targets
            ]
        counts.extend(task.result() for task in tasks)
        await asyncio.sleep(ECHO_SETTLE)
        for server in (insecure, secure):
            _assert_healthy(server)
            assert _open_connections(server.stdout()) == set(), server.name
        for target in targets:
            await echo_session(target, rng, messages=100)
        await asyncio.sleep(0.5)

    _run(main)
    assert all(c["good"] >= 2 and c["stuttering"] >= 2 and c["plain"] >= 2 for c in counts), counts
    assert 1 <= counts[0]["never_ack_runs"] == counts[0]["never_ack_dropped"], counts
    assert "(send_queue_full)" in insecure.stdout()
    for server in (insecure, secure):
        _assert_healthy(server)
        assert _open_connections(server.stdout()) == set(), server.name
        _assert_stops_cleanly(server)


async def _plain_or_denied(target: Target, rng: random.Random, *, leave_at_once: bool) -> str:
    """One plain netcode session; "served", or "denied" when every slot was taken."""
    try:
        await plain_session(target, rng, payloads=rng.randrange(1, 20), leave_at_once=leave_at_once)
    except AssertionError as exc:
        if "DENIED" not in str(exc):
            raise
        return "denied"
    return "served"


def test_a_full_raw_echo_server_survives_chaos(
    tmp_path: Path, processes: list[ServerProcess]
) -> None:
    slots = 4
    server, at = _start(
        processes,
        tmp_path,
        "raw-full",
        ["serve", "--insecure", "--raw", "--echo", "--port", "0", "--max-clients", str(slots)],
        r"serving raw netcode \(\w+\) on ([\d.]+):(\d+)",
    )
    target = Target(at, REFERENCE_PROTOCOL_ID, None)
    rng = random.Random(SEED)
    seconds = CHAOS_SECONDS
    outcomes: list[str] = []

    async def main() -> None:
        samples = handshake_requests(target, rng, 4)
        where = f"{HOST}:{at[1]}"
        async with asyncio.TaskGroup() as group:
            waiting = [  # twice as many clients as slots: some are turned away
                group.create_task(
                    _repeat(
                        seconds,
                        100,
                        lambda: _plain_or_denied(target, rng, leave_at_once=False),
                    )
                )
                for _ in range(2 * slots)
            ]
            leaving = group.create_task(
                _repeat(seconds, 100, lambda: _plain_or_denied(target, rng, leave_at_once=True))
            )
            group.create_task(spray(at, rng, samples=samples, count=500 * 6, seconds=seconds))
            group.create_task(
                _repeat(seconds, 2, lambda: half_open(target, rng, count=1100, seconds=seconds / 2))
            )
            group.create_task(
                _repeat(
                    seconds,
                    3,
                    lambda: kill_after(
                        spawn_client(["connect", where, "--insecure", "--raw"]), 1.5, lines=50
                    ),
                )
            )
        for task in (*waiting, leaving):
            outcomes.extend(task.result())
        await asyncio.sleep(ECHO_SETTLE)
        _assert_healthy(server)
        assert _open_connections(server.stdout()) == set(), server.name
        assert await _plain_or_denied(target, rng, leave_at_once=False) == "served"

    _run(main)
    assert outcomes.count("served") >= 2 * slots, outcomes  # slots came free again and again
    assert "denied" in outcomes, outcomes  # the server was full at times
    _assert_healthy(server)
    _assert_stops_cleanly(server)


# -- lagless vfc serve ----------------------------------------------------------------------------


def _vfc_stats(server: ServerProcess) -> tuple[int, int] | None:
    found = STATS.findall(server.stdout())
    return None if not found else (int(found[-1][0]), int(found[-1][1]))


async def _wait_stats(server: ServerProcess, wanted: tuple[int, int], timeout: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while _vfc_stats(server) != wanted:
        assert loop.time() < deadline, f"{server.name} reports {_vfc_stats(server)}, not {wanted}"
        await asyncio.sleep(0.2)


async def _vfc_chaos(address: Address, rng: random.Random) -> None:
    """Every behaviour against the VFC server for CHAOS_SECONDS; bots that finish exit 0."""
    seconds = CHAOS_SECONDS
    target = Target(address, VFC_PROTOCOL_ID, None)
    samples = handshake_requests(target, rng, 4) + handshake_requests(
        target, rng, 4, other_mode=True
    )

    def record(data: bytes) -> list[bytes]:
        if len(samples) < 200:
            samples.append(data)
        return [data]

    await vfc_session(address, rng, objects=2, ending="leave", seconds=0.5, outgoing=record)
    where = f"{HOST}:{address[1]}"
    finishing = spawn_client(
        ["vfc", "bots", where, "--count", "3", "--duration", "2"], capture=True
    )

    def session(ending: str, **kwargs: Any) -> Callable[[], Awaitable[object]]:
        return lambda: vfc_session(
            address, rng, objects=rng.randrange(1, 4), ending=ending, seconds=0.5, **kwargs
        )

    async with asyncio.TaskGroup() as group:
        for ending in ("leave", "vanish", "leave+change-id"):
            group.create_task(_repeat(seconds, 100, session(ending)))
        group.create_task(_repeat(seconds, 10, session("spam-change-id", outgoing=deny_acks)))
        group.create_task(_repeat(seconds, 10, session("mute")))
        group.create_task(
            _repeat(
                seconds,
                3,
                lambda: kill_after(
                    spawn_client(["vfc", "bots", where, "--count", "4", "--duration", "60"]), 2.0
                ),
            )
        )
        group.create_task(
            _repeat(seconds, 2, lambda: half_open(target, rng, count=1100, seconds=seconds / 2))
        )
        group.create_task(
            spray(address, rng, samples=samples, count=int(300 * seconds), seconds=seconds)
        )
    out, err = await asyncio.to_thread(finishing.communicate, b"", 30)
    assert b"Traceback" not in err, err.decode()
    assert finishing.returncode == 0, (out + err).decode()


async def _vfc_final(server: ServerProcess, address: Address, rng: random.Random) -> None:
    """Two fresh clients join, one sees the other's object move; the server counts exactly them."""
    (a, _), (b, _) = new_vfc(address, rng), new_vfc(address, rng)
    async with open_endpoint(a, f"{HOST}:0") as ep_a, open_endpoint(b, f"{HOST}:0") as ep_b:
        ep_a.flush()
        ep_b.flush()
        a.add_object(CubeOriObj(id=MINE, x=10.0, y=10.0))
        b.add_object(CubeOriObj(id=MINE - 1, x=12.0, y=10.0))
        ep_a.flush()
        ep_b.flush()
        await wait_joined(ep_a, a)
        await wait_joined(ep_b, b)
        avatar = a.get_object_ref(MINE)
        seen: set[int] = set()
        for step in range(100):
            avatar.x = 10.0 + 0.05 * step
            seen.update(b.get_updated_ids())
            await asyncio.sleep(0.033)
        assert MINE in seen
        assert abs(b.get_object_ref(MINE).x - avatar.x) < 1.0
        await _wait_stats(server, (2, 2), timeout=3.0)
        a.disconnect()
        b.disconnect()
        ep_a.flush()
        ep_b.flush()
        await asyncio.sleep(0.2)
    await _wait_stats(server, (0, 0), timeout=3.0)


def test_vfc_server_survives_chaos(tmp_path: Path, processes: list[ServerProcess]) -> None:
    server, address = _start(
        processes,
        tmp_path,
        "vfc",
        ["vfc", "serve", "--host", HOST, "--port", "0"],
        r"vfc server on ([\d.]+):(\d+)",
    )
    rng = random.Random(SEED)

    async def main() -> None:
        await _vfc_chaos(address, random.Random(rng.random()))
        _assert_healthy(server)
        await _wait_stats(server, (0, 0), timeout=SETTLE)  # no ghosts once the timeouts ran
        await _vfc_final(server, address, rng)

    _run(main)
    _assert_healthy(server)
    _assert_stops_cleanly(server)


def _wait_joins(
    server: ServerProcess, bots: subprocess.Popen[bytes], count: int, timeout: float = 20.0
) -> None:
    """Wait until the server printed ``count`` joins; else stop ``bots`` and show its output."""
    deadline = time.monotonic() + timeout
    while server.stdout().count(" joined") < count:
        if bots.poll() is not None or time.monotonic() >= deadline:
            bots.kill()
            out, err = bots.communicate(timeout=10)
            raise AssertionError(
                f"{count} joins not seen; bots exited with {bots.returncode}:\n"
                f"{(out + err).decode()}\nserver:\n{server.stdout()[-2000:]}"
            )
        time.sleep(0.1)


def test_restarted_bots_get_in_beside_their_ghosts(
    tmp_path: Path, processes: list[ServerProcess]
) -> None:
    server, address = _start(
        processes,
        tmp_path,
        "vfc",
        ["vfc", "serve", "--host", HOST, "--port", "0"],
        r"vfc server on ([\d.]+):(\d+)",
    )
    where = f"{HOST}:{address[1]}"
    crashed = spawn_client(["vfc", "bots", where, "--count", "3", "--duration", "60"], capture=True)
    _wait_joins(server, crashed, 3)
    crashed.kill()
    crashed.communicate(timeout=10)
    # the same seed again while the killed bots' connections are still live on the server
    restarted = spawn_client(
        ["vfc", "bots", where, "--count", "3", "--duration", "3"], capture=True
    )
    out, err = restarted.communicate(b"", timeout=30)
    assert restarted.returncode == 0, (out + err).decode()
    assert b"3 of 3 bots joined" in out

    async def no_ghosts() -> None:
        await _wait_stats(server, (0, 0), timeout=SETTLE)

    _run(no_ghosts)
    _assert_healthy(server)
    _assert_stops_cleanly(server)


def test_vfc_bots_exit_with_one_error_line_when_the_server_dies(
    tmp_path: Path, processes: list[ServerProcess]
) -> None:
    server, address = _start(
        processes,
        tmp_path,
        "vfc",
        ["vfc", "serve", "--host", HOST, "--port", "0"],
        r"vfc server on ([\d.]+):(\d+)",
    )
    where = f"{HOST}:{address[1]}"
    bots = spawn_client(["vfc", "bots", where, "--count", "3", "--duration", "60"], capture=True)
    try:
        _wait_joins(server, bots, 3)
        server.process.kill()
        server.process.wait(10)
        out, err = bots.communicate(b"", timeout=20)
    finally:
        if bots.poll() is None:
            bots.kill()
            bots.wait(10)
    text = err.decode()
    assert bots.returncode not in (0, None), (out, text)
    assert "Traceback" not in text, text
    assert [line for line in text.splitlines() if line.startswith("error:")] == [
        line for line in text.splitlines() if "error" in line.lower()
    ]
    assert len([line for line in text.splitlines() if line.startswith("error:")]) == 1, text
    assert f"lost the VFC server at {where}: every bot ended (connection_timed_out)" in text


# -- lagless gossip lobby -------------------------------------------------------------------------


async def _lobby_chaos(lobby: Address, rng: random.Random) -> int:
    """Every behaviour against the lobby for CHAOS_SECONDS; return the finishing peer's status."""
    seconds = CHAOS_SECONDS
    where = f"{HOST}:{lobby[1]}"
    finishing = spawn_client(["gossip", "peer", "--lobby", where, "--duration", "2"])
    async with asyncio.TaskGroup() as group:
        asks = group.create_task(_repeat(seconds, 100, lambda: ask_lobby(lobby)))
        group.create_task(
            _repeat(
                seconds,
                3,
                lambda: kill_after(
                    spawn_client(["gossip", "peer", "--lobby", where, "--duration", "60"]), 2.0
                ),
            )
        )
        group.create_task(
            spray(
                lobby,
                rng,
                samples=lobby_samples(rng, 600),
                count=int(800 * seconds),
                seconds=seconds,
                sockets=64,
            )
        )
    assert len(asks.result()) >= 2
    return await asyncio.to_thread(finishing.wait, 30)


def test_lobby_survives_chaos(tmp_path: Path, processes: list[ServerProcess]) -> None:
    server, address = _start(
        processes,
        tmp_path,
        "lobby",
        ["gossip", "lobby", "--port", "0"],
        r"lobby on ([\d.]+):(\d+)",
    )
    rng = random.Random(SEED)
    codes: list[int] = []

    async def main() -> None:
        codes.append(await _lobby_chaos(address, random.Random(rng.random())))
        _assert_healthy(server)
        listed = await ask_lobby(address)
        assert listed.games  # the chaos heartbeats opened games that are still alive

    _run(main)
    assert codes == [0]
    _assert_healthy(server)
    _assert_stops_cleanly(server)
