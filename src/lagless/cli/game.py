"""``lagless game``: the game server, LAN discovery, bots and the room relay over real UDP.

Issue 14 items 1-3 on the command line. ``serve`` runs a `GameServer` on a Tiled map and answers
LAN discovery on a shared port; ``discover`` broadcasts discovery queries and lists the servers
that answer, with the time each took to be found (the issue's "servers found within 1 s");
``bots`` connects bot players that move and shoot; ``rooms`` runs the room and relay service. The
game transport is insecure (no tokens, no encryption: development and the lab only). The first
SIGINT or SIGTERM ends a command with its summary and exit status 130 or 143; a bad argument
prints one ``error:`` line and exits with status 2; ``discover`` exits with 1 when it found no
server, ``bots`` when it cannot reach its server. Register with
``app.add_typer(game.app, name="game")``.

Operations (issue 16 part 3, ``tests/ops/``): ``serve`` and ``rooms`` take ``--metrics
HOST:PORT`` (Prometheus metrics read on the loop's thread at scrape time, `lagless.apps.ops`;
the loop then wakes at least every 5 ms to answer a scrape) and ``--log-format json``
(``rooms``: clients connecting and leaving, violations, rooms created, joined, left and
closed from the service's events, shutdown and summary; `_RoomLog`). On a signal (or at the
end of ``--duration``) ``serve`` kicks every player with the reason "server shutting down"
(`GameServer.shutdown`), pumps until they are gone, 1 s at most (a second signal cuts that
short), disconnects whoever is left, then prints its summary.
``rooms`` tells every client the same reason in the room protocol's own `Closing` message
(`RoomServer.shutdown`), pumps until each is acknowledged, 1 s at most (a second signal cuts
that short), disconnects everyone, flushes and prints its summary.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import typer

from lagless._types import Address
from lagless.apps.serve import (
    SHUTDOWN_GRACE,
    SHUTDOWN_REASON,
    ConnectionCounts,
    metrics_address,
)
from lagless.cli.common import (
    LOG_FORMAT_OPTION,
    METRICS_OPTION,
    bind_address,
    caught_signals,
    echo,
    exit_for,
    fail,
    in_range,
    make_app,
    peer_address,
    seconds,
    show,
)
from lagless.errors import ConfigError
from lagless.game import (
    DEFAULT_DISCOVERY_PORT,
    Avatar,
    ConnectingFailed,
    ConnectionEnded,
    ConnectionEstablished,
    DiscoveryClient,
    DiscoveryResponder,
    GameClient,
    GameConfig,
    GameServer,
    PlayerJoined,
    PlayerLeft,
    PlayerRejected,
    RoomChanged,
    RoomMessageDropped,
    RoomServer,
    ServerAnnouncement,
    ServerDiscovered,
    builtin_map,
)
from lagless.io.discovery import BroadcastEndpoint
from lagless.io.endpoint import PollEndpoint
from lagless.io.logs import EventLog, check_log_format, install_json_logging
from lagless.transport import (
    ClientConnected,
    ClientDisconnected,
    NetcodeServerConfig,
    ServerDisconnectReason,
)

if TYPE_CHECKING:  # prometheus-client is optional: imported only when --metrics is given
    from prometheus_client import Histogram

    from lagless.io.metrics import OwnerThread, ServerMetrics

DEFAULT_PORT: int = 40300  # UDP port of ``lagless game serve`` (vfc: 40200, gossip: 40100)
ROOMS_PORT: int = 40301  # UDP port of ``lagless game rooms``
GAME_PROTOCOL_ID: int = 0x4C41_474C_4553_4701  # "LAGLESG" + 1
FRAME: float = 0.005  # seconds a loop sleeps at most between polls of its second socket
MAX_BOTS: int = 256

app = make_app("The game server, LAN discovery, bots and the room relay over real UDP.")


def _protocol(text: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise ConfigError(f"--protocol-id must be an integer (e.g. 0x1234), got {text!r}") from None
    if not 0 <= value < 2**64:
        raise ConfigError(f"--protocol-id must be in [0, 2**64), got {text}")
    return value


def _run(step: Callable[[], bool], duration: float | None) -> int | None:
    """Call ``step`` until it returns False, ``duration`` (s) passes or a signal comes; return
    the signal. A signal ends the loop between two steps, never inside one (`caught_signals`)."""
    end = None if duration is None else time.monotonic() + duration
    with caught_signals() as caught:
        while not caught and step() and (end is None or time.monotonic() < end):
            pass
    return caught[0] if caught else None


@app.command("serve")
def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", help="name or IP to bind"),
    port: int = typer.Option(DEFAULT_PORT, "--port", "-p", help="UDP port"),
    map_name: str = typer.Option("arena", "--map", help="shipped map name or Tiled .json file"),
    name: str = typer.Option("lagless", "--name", help="server name announced on the LAN"),
    max_players: int = typer.Option(64, "--max-players", help="players at most, 1..4096"),
    sim_rate: float = typer.Option(60.0, "--sim-rate", help="simulation ticks per second"),
    snapshot_rate: float = typer.Option(20.0, "--snapshot-rate", help="snapshots per second"),
    discovery_port: int = typer.Option(
        DEFAULT_DISCOVERY_PORT, "--discovery-port", help="LAN discovery port (0: off)"
    ),
    protocol_id: str = typer.Option(hex(GAME_PROTOCOL_ID), "--protocol-id", help="uint64 id"),
    duration: float | None = typer.Option(
        None, "--duration", help="seconds to run [default: until Ctrl-C]"
    ),
    seed: int = typer.Option(0, "--seed", help="seed of the spawn choices"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no line per join and leave"),
    metrics: str | None = METRICS_OPTION,
    log_format: str = LOG_FORMAT_OPTION,
) -> None:
    """Run an authoritative game server (insecure transport) that answers LAN discovery.

    SIGTERM (or SIGINT) shuts it down gracefully: every player is kicked with the reason
    "server shutting down" and disconnected; the exit status is 143 (130).
    """
    try:
        address = bind_address(host, port)
        in_range(discovery_port, "--discovery-port", 0, 65535)
        seconds(duration, "--duration")
        config = GameConfig(sim_rate=sim_rate, snapshot_rate=snapshot_rate, max_players=max_players)
        level = builtin_map(map_name)
        protocol = _protocol(protocol_id)
        fmt = check_log_format(log_format)
        metrics_at = metrics_address(metrics)
    except ConfigError as exc:
        fail(str(exc))
    log = EventLog("lagless.game", fmt, echo)
    remove = install_json_logging() if log.json else None
    try:
        game = GameServer(
            NetcodeServerConfig(protocol_id=protocol, public_address=address, insecure=True),
            level,
            rng=random.Random(seed),
            config=config,
        )
        game.listen()
        joined, cpu, signum = _serve_game(
            game, address, protocol, name, discovery_port, duration, quiet, log, metrics_at
        )
        per_tick = cpu / game.ticks * 1000.0 if game.ticks else 0.0
        log.info(
            "summary",
            f"{joined} players joined, {game.ticks} ticks, {per_tick:.2f} ms CPU per tick, "
            f"{game.lagcomp.accepted} hits, {game.arbiter.committed} kills",
            players=joined,
            ticks=game.ticks,
            cpu_ms_per_tick=round(per_tick, 3),
            hits=game.lagcomp.accepted,
            kills=game.arbiter.committed,
            signal=signum,
        )
    finally:
        if remove is not None:
            remove()
    exit_for(signum)


def _serve_game(
    game: GameServer,
    address: Address,
    protocol: int,
    name: str,
    discovery_port: int,
    duration: float | None,
    quiet: bool,
    log: EventLog,
    metrics: Address | None,
) -> tuple[int, float, int | None]:
    """Run ``game`` until ``duration`` or a signal, then shut it down.

    Returns:
        The players that joined, the CPU seconds spent pumping, and the stopping signal.
    """
    joined = 0
    cpu = 0.0
    connections = ConnectionCounts()
    owner = None
    if metrics is not None:
        from lagless.io.metrics import OwnerThread

        owner = OwnerThread()
    with PollEndpoint(game, address) as endpoint:
        bound = endpoint.address
        responder: BroadcastEndpoint[DiscoveryResponder] | None = None
        if discovery_port:

            def current() -> ServerAnnouncement:
                return game.announcement(name, bound[1])

            try:
                responder = BroadcastEndpoint(
                    DiscoveryResponder(protocol, current),
                    ("0.0.0.0", discovery_port),
                    broadcast=False,
                    reuse=True,
                )
            except ConfigError as exc:
                fail(str(exc))
        exporter = None
        tick_time = None
        try:
            if metrics is not None and owner is not None:
                exporter, tick_time = _game_metrics(game, endpoint, connections, owner, metrics)
            where = f", discovery on port {discovery_port}" if responder is not None else ""
            log.info(
                "serving",
                f"game server on {show(bound)} (insecure), map {game.level.name}{where}",
                address=show(bound),
                map=game.level.name,
                discovery_port=discovery_port if responder is not None else None,
            )
            if exporter is not None and exporter.address is not None:
                at = show(exporter.address)
                log.info("metrics", f"metrics on http://{at}/metrics", address=at)

            def report(events: list[object]) -> None:
                nonlocal joined
                for event in events:
                    if isinstance(event, PlayerJoined):
                        joined += 1
                        connections.connected()
                        _log_join(log, event, quiet)
                    elif isinstance(event, PlayerLeft):
                        connections.disconnected(event.reason)
                        _log_leave(log, event, quiet)
                    elif isinstance(event, PlayerRejected):
                        connections.disconnected("rejected_" + event.reason)
                        info = event.info
                        log.warning(
                            "client_rejected",
                            f"! {info.name or info.client_id} refused ({event.reason})",
                            client=info.client,
                            client_id=info.client_id,
                            address=show(info.address),
                            reason=event.reason,
                        )

            def pump() -> list[object]:
                nonlocal cpu
                start, ticks = time.process_time(), game.ticks
                wall = time.perf_counter()
                events = endpoint.pump()
                if responder is not None:
                    responder.pump()
                ran = game.ticks - ticks
                if tick_time is not None and ran:
                    per = (time.perf_counter() - wall) / ran
                    for _ in range(ran):
                        tick_time.observe(per)
                cpu += time.process_time() - start
                if owner is not None:
                    owner.run_pending()
                return events

            def step() -> bool:
                endpoint.wait(FRAME)
                report(pump())
                return True

            try:
                signum = _run(step, duration)
            finally:
                _shut_down_game(game, endpoint, log, pump, report)
        finally:
            if exporter is not None:
                exporter.close()
            if responder is not None:
                responder.close()
    return joined, cpu, signum


def _log_join(log: EventLog, event: PlayerJoined, quiet: bool) -> None:
    info = event.info
    message = f"+ {info.name or info.client_id} {show(info.address)}"
    if log.json or not quiet:
        log.info(
            "client_connected",
            message,
            client=info.client,
            client_id=info.client_id,
            name=info.name,
            address=show(info.address),
            avatar=event.avatar,
        )


def _log_leave(log: EventLog, event: PlayerLeft, quiet: bool) -> None:
    info = event.info
    if log.json or not quiet:
        log.info(
            "client_disconnected",
            f"- {info.name or info.client_id} ({event.reason})",
            client=info.client,
            client_id=info.client_id,
            name=info.name,
            address=show(info.address),
            reason=event.reason,
        )


def _shut_down_game(
    game: GameServer,
    endpoint: PollEndpoint[GameServer],
    log: EventLog,
    pump: Callable[[], list[object]],
    report: Callable[[list[object]], None],
) -> None:
    """Kick every player with `SHUTDOWN_REASON`, pump until they are gone (`SHUTDOWN_GRACE` s
    at most; a second signal cuts it short), then disconnect whoever is left and flush."""
    kicked = endpoint.call(lambda g: g.shutdown(SHUTDOWN_REASON, endpoint.now()))
    log.info(
        "shutdown",
        f"shutting down: telling {kicked} players {SHUTDOWN_REASON!r}",
        clients=kicked,
        reason=SHUTDOWN_REASON,
    )
    deadline = time.monotonic() + SHUTDOWN_GRACE
    with caught_signals() as caught:
        while game.clients and not caught and time.monotonic() < deadline:
            endpoint.wait(FRAME)
            report(pump())
    endpoint.call(lambda g: g.close(endpoint.now()))
    report(pump())


def _game_metrics(
    game: GameServer,
    endpoint: PollEndpoint[GameServer],
    connections: ConnectionCounts,
    owner: OwnerThread,
    address: Address,
) -> tuple[ServerMetrics, Histogram]:
    """Start the game server's metrics endpoint; return it and its tick-time histogram."""
    from lagless.apps.ops import TICK_BOUNDS, game_families, transport_families
    from lagless.io.metrics import ServerMetrics

    exporter = ServerMetrics(owner)
    exporter.add_builder(
        lambda: [
            *transport_families(game.transport, connections, endpoint.statistics()),
            *game_families(game),
        ]
    )
    tick_time = exporter.histogram(
        "lagless_tick_seconds", "Wall time per simulation tick, s.", TICK_BOUNDS
    )
    try:
        exporter.start(address)
    except ConfigError as exc:
        fail(str(exc))
    return exporter, tick_time


@app.command("discover")
def discover_command(
    to: str = typer.Option(
        f"255.255.255.255:{DEFAULT_DISCOVERY_PORT}",
        "--to",
        metavar="HOST:PORT",
        help="broadcast (or unicast) discovery address",
    ),
    timeout: float = typer.Option(1.0, "--timeout", help="seconds to listen for answers"),
    count: int | None = typer.Option(
        None, "--count", "-n", help="stop once this many servers answered"
    ),
    protocol_id: str = typer.Option(hex(GAME_PROTOCOL_ID), "--protocol-id", help="uint64 id"),
    as_json: bool = typer.Option(False, "--json", help="print one JSON object at the end"),
    seed: int | None = typer.Option(None, "--seed", help="seed of the query nonce"),
) -> None:
    """Find game servers on the LAN; print each with the time it took to answer."""
    try:
        target = peer_address(to, field="--to")
        seconds(timeout, "--timeout")
        if count is not None:
            in_range(count, "--count", 1, 65535)
        protocol = _protocol(protocol_id)
    except ConfigError as exc:
        fail(str(exc))
    rng = random.Random(seed) if seed is not None else random.Random()
    client = DiscoveryClient(protocol, rng=rng)
    found: list[tuple[float, ServerDiscovered]] = []
    with BroadcastEndpoint(client, "0.0.0.0:0") as endpoint:
        start = time.monotonic()
        endpoint.call(lambda c: c.start([target], endpoint.now()))

        def step() -> bool:
            endpoint.wait(0.05)
            for event in endpoint.pump():
                if isinstance(event, ServerDiscovered):
                    elapsed = time.monotonic() - start
                    found.append((elapsed, event))
                    s = event.server
                    if not as_json:
                        echo(
                            f"{show(s.address)}  {s.name!r}  {s.players}/{s.max_players} players"
                            f"  {s.game}  found after {elapsed * 1000:.1f} ms"
                        )
            return count is None or len(found) < count

        signum = _run(step, timeout)
        servers = list(client.servers)
    if as_json:
        rows = [
            {
                "address": show(s.address),
                "name": s.name,
                "players": s.players,
                "max_players": s.max_players,
                "game": s.game,
                "rtt_ms": round(s.rtt * 1000, 3),
            }
            for s in servers
        ]
        times = [round(t * 1000, 3) for t, _ in found]
        echo(json.dumps({"servers": rows, "found_after_ms": times}))
    else:
        echo(f"{len(servers)} servers found")
    exit_for(signum)
    if not servers:
        raise typer.Exit(1)


@app.command("bots")
def bots_command(
    server: str = typer.Argument(f"127.0.0.1:{DEFAULT_PORT}", metavar="[HOST:PORT]"),
    count: int = typer.Option(4, "--count", "-n", help=f"bots, 1..{MAX_BOTS}"),
    duration: float = typer.Option(10.0, "--duration", help="seconds to play"),
    protocol_id: str = typer.Option(hex(GAME_PROTOCOL_ID), "--protocol-id", help="uint64 id"),
    seed: int = typer.Option(0, "--seed", help="seed of the bots' choices"),
) -> None:
    """Bot players that steer at random and shoot at the others."""
    try:
        address = peer_address(server, field="server")
        in_range(count, "--count", 1, MAX_BOTS)
        seconds(duration, "--duration")
        protocol = _protocol(protocol_id)
    except ConfigError as exc:
        fail(str(exc))
    rng = random.Random(seed)
    endpoints: list[PollEndpoint[GameClient]] = []
    state = {"connected": 0, "failed": 0, "kills": 0, "shots": 0}
    try:
        for n in range(count):
            bot = GameClient(protocol, rng=random.Random(rng.getrandbits(32)))
            endpoint = PollEndpoint(
                bot, "0.0.0.0:0" if address[0] != "127.0.0.1" else "127.0.0.1:0"
            )
            bot.connect(address, endpoint.now(), client_id=n + 1, name=f"bot{n}")
            endpoint.flush()
            endpoints.append(endpoint)
        next_turn = time.monotonic()

        def step() -> bool:
            nonlocal next_turn
            endpoints[0].wait(FRAME)
            for endpoint in endpoints:
                for event in endpoint.pump():
                    if isinstance(event, ConnectionEstablished):
                        state["connected"] += 1
                    elif isinstance(event, ConnectingFailed | ConnectionEnded):
                        state["failed"] += 1
            if time.monotonic() >= next_turn:
                next_turn += 0.5
                for endpoint in endpoints:
                    _bot_turn(endpoint, rng, state)
            return state["failed"] < count

        signum = _run(step, duration)
        for endpoint in endpoints:
            endpoint.call(lambda c: c.disconnect())
    finally:
        for endpoint in endpoints:
            endpoint.close()
    echo(f"{state['connected']} bots connected, {state['shots']} shots, {state['failed']} ended")
    exit_for(signum)
    if state["connected"] == 0:
        fail(f"no bot could connect to {show(address)}", status=1)


def _bot_turn(
    endpoint: PollEndpoint[GameClient], rng: random.Random, state: dict[str, int]
) -> None:
    bot = endpoint.obj
    mine = bot.avatar
    if mine is None or mine.dead or not bot.is_connected:
        return
    angle = rng.uniform(-math.pi, math.pi)
    endpoint.call(lambda c: c.move((math.cos(angle), math.sin(angle)), angle))
    targets = [o for o in bot.world if isinstance(o, Avatar) and o is not mine and not o.dead]
    if targets:
        target = rng.choice(targets)
        endpoint.call(lambda c: c.shoot(target, endpoint.now()))
        state["shots"] += 1


@app.command("rooms")
def rooms_command(
    host: str = typer.Option("127.0.0.1", "--host", help="name or IP to bind"),
    port: int = typer.Option(ROOMS_PORT, "--port", "-p", help="UDP port"),
    protocol_id: str = typer.Option(hex(GAME_PROTOCOL_ID), "--protocol-id", help="uint64 id"),
    duration: float | None = typer.Option(
        None, "--duration", help="seconds to run [default: until Ctrl-C]"
    ),
    metrics: str | None = METRICS_OPTION,
    log_format: str = LOG_FORMAT_OPTION,
) -> None:
    """Run the room service: rooms, matchmaking by properties, event relay (insecure)."""
    try:
        address: Address = bind_address(host, port)
        seconds(duration, "--duration")
        protocol = _protocol(protocol_id)
        metrics_at = metrics_address(metrics)
        fmt = check_log_format(log_format)
    except ConfigError as exc:
        fail(str(exc))
    service = RoomServer(
        NetcodeServerConfig(protocol_id=protocol, public_address=address, insecure=True)
    )
    log = EventLog("lagless.rooms", fmt, echo)
    remove = install_json_logging() if log.json else None
    try:
        signum = _serve_rooms(service, address, duration, log, metrics_at)
        rooms = service.rooms
        log.info(
            "summary",
            f"{len(rooms)} rooms open, {service.relayed} events relayed",
            rooms=len(rooms),
            relayed=service.relayed,
            dropped=dict(sorted(service.drops.items())),
            signal=signum,
        )
    finally:
        if remove is not None:
            remove()
    exit_for(signum)


def _serve_rooms(
    service: RoomServer,
    address: Address,
    duration: float | None,
    log: EventLog,
    metrics: Address | None,
) -> int | None:
    """Run the room service until ``duration`` or a signal, then shut it down; return the
    stopping signal. In JSON mode every client and room change is an event (`_RoomLog`)."""
    with PollEndpoint(service, address) as endpoint:
        exporter = None if metrics is None else _rooms_metrics(service, endpoint, metrics)
        log.info(
            "serving",
            f"room service on {show(endpoint.address)} (insecure)",
            address=show(endpoint.address),
        )
        if exporter is not None and exporter.address is not None:
            at = show(exporter.address)
            log.info("metrics", f"metrics on http://{at}/metrics", address=at)
        watch = _RoomLog(log) if log.json else None

        def step() -> bool:
            endpoint.wait(0.1 if exporter is None else FRAME)
            events = endpoint.pump()
            if watch is not None:
                watch.update(events)
            if exporter is not None:
                exporter.owner.run_pending()
            return True

        try:
            signum = _run(step, duration)
            _shut_down_rooms(endpoint, step, log)
            events = endpoint.pump()
            if watch is not None:
                watch.update(events)
        finally:
            if exporter is not None:
                exporter.close()
    return signum


class _RoomLog:
    """The room service's JSON events, one record per event of the service: clients
    connecting and leaving (its transport's events), room messages dropped with their sender,
    and rooms created, joined, left and closed (`RoomChanged`)."""

    def __init__(self, log: EventLog) -> None:
        self._log = log

    def update(self, events: list[object]) -> None:
        """Log ``events`` (what a pump returned), in order."""
        log = self._log
        for event in events:
            if isinstance(event, RoomChanged):
                self._room(event)
            elif isinstance(event, RoomMessageDropped):
                log.warning(
                    "client_violation",
                    f"client {event.sender}: {event.reason} room message dropped",
                    client=event.sender,
                    reason=event.reason,
                )
            elif isinstance(event, ClientConnected):
                where = show(event.address)
                log.info(
                    "client_connected",
                    f"client {event.connection_id} connected from {where}",
                    client=event.connection_id,
                    client_id=event.client_id,
                    address=where,
                )
            elif isinstance(event, ClientDisconnected):
                reason = event.reason.name.lower()
                if event.reason == ServerDisconnectReason.PROTOCOL_VIOLATION:
                    log.warning(
                        "client_violation",
                        f"client {event.connection_id} violated the protocol; closed",
                        client=event.connection_id,
                        reason=reason,
                    )
                log.info(
                    "client_disconnected",
                    f"client {event.connection_id} disconnected ({reason})",
                    client=event.connection_id,
                    reason=reason,
                )

    def _room(self, event: RoomChanged) -> None:
        room, name, member = event.room, event.name, event.member
        if event.change == "created":
            self._log.info("room_created", f"room {room} ({name!r}) created", room=room, name=name)
        elif event.change == "closed":
            self._log.info("room_closed", f"room {room} ({name!r}) closed", room=room, name=name)
        elif event.change == "joined":
            self._log.info(
                "room_joined",
                f"client {member} joined room {room} ({event.members} members)",
                room=room,
                client=member,
                members=event.members,
            )
        else:
            self._log.info(
                "room_left", f"client {member} left room {room}", room=room, client=member
            )


def _shut_down_rooms(
    endpoint: PollEndpoint[RoomServer], step: Callable[[], bool], log: EventLog
) -> None:
    """Tell every client `SHUTDOWN_REASON` (`RoomServer.shutdown`), pump until each is
    acknowledged (`SHUTDOWN_GRACE` s at most; a second signal cuts it short), then disconnect
    everyone and flush."""
    service = endpoint.obj
    told = endpoint.call(lambda s: s.shutdown(SHUTDOWN_REASON))
    log.info(
        "shutdown",
        f"shutting down: telling {told} clients {SHUTDOWN_REASON!r}",
        clients=told,
        reason=SHUTDOWN_REASON,
    )
    deadline = time.monotonic() + SHUTDOWN_GRACE
    with caught_signals() as caught:
        while service.goodbyes_pending and not caught and time.monotonic() < deadline:
            step()
    endpoint.call(lambda s: s.close())


def _rooms_metrics(
    service: RoomServer, endpoint: PollEndpoint[RoomServer], address: Address
) -> ServerMetrics:
    """Start the room service's metrics endpoint (transport and room families)."""
    from lagless.apps.ops import rooms_families, transport_families
    from lagless.io.metrics import OwnerThread, ServerMetrics

    exporter = ServerMetrics(OwnerThread())
    exporter.add_builder(
        lambda: [
            # the room service keeps its connection events to itself: no opened/closed counts
            *transport_families(service.transport, None, endpoint.statistics()),
            *rooms_families(service),
        ]
    )
    try:
        exporter.start(address)
    except ConfigError as exc:
        fail(str(exc))
    return exporter
