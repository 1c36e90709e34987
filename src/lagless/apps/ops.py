"""What the servers export to Prometheus: their own statistics, mapped to metric families.

Implements issue 16 part 3 ("Operations") for ``lagless serve``, ``lagless game serve``,
``lagless game rooms``, ``lagless demo --server`` and ``lagless web``: each builder below
reads a server's existing counters (`NetcodeStatistics`, each connection's
`ConnectionStatistics`, the endpoint's `EndpointStatistics`, the game server's ticks and drops)
when Prometheus scrapes, so the hot path counts nothing twice. The exposition (a private
registry per server, HTTP, owner-thread reads) is `lagless.io.metrics`; this module needs
``prometheus-client`` (the ``ops`` extra), so callers import it only when ``--metrics`` is given
(`lagless.apps.serve.metrics_address` checks first).

Metrics (units in the names; bytes are UDP payload bytes, without the 28 IPv4+UDP header bytes
per datagram; ``lagless_sent_bytes_total + 28 * lagless_sent_packets_total`` includes them):

* ``lagless_connections{kind}`` gauge (``kind``: ``lagless`` or ``plain`` netcode),
  ``lagless_connections_opened_total``, ``lagless_connections_closed_total{reason}``;
* ``lagless_rtt_seconds`` and ``lagless_loss_ratio``: gauge histograms over the connected lagless
  clients (smoothed RTT; fraction of recent packets lost), clients without an RTT sample left out;
* ``lagless_received_bytes_total``, ``lagless_sent_bytes_total``,
  ``lagless_received_packets_total``, ``lagless_sent_packets_total``;
* ``lagless_dropped_packets_total{reason}`` (every netcode drop reason, zeros included),
  ``lagless_denied_total`` (requests refused because the server was full),
  ``lagless_driver_errors_total``, ``lagless_send_errors_total``, ``lagless_datagrams_sent_total``,
  ``lagless_udp_trains_total`` (the endpoint's);
* game server: ``lagless_players``, ``lagless_bots``, ``lagless_ticks_total``,
  ``lagless_ticks_skipped_total``, ``lagless_tick_seconds`` (a histogram the loop observes),
  ``lagless_snapshots_total``, ``lagless_hits_total``, ``lagless_kills_total``,
  ``lagless_game_dropped_total{reason}``, ``lagless_replication_dropped_total{reason}``;
* room service: ``lagless_rooms``, ``lagless_room_members``, ``lagless_relayed_events_total``,
  ``lagless_room_dropped_total{reason}``;
* demo server: the transport families above (without the opened/closed counts: its physics
  server keeps the transport's connection events to itself), ``lagless_players``,
  ``lagless_bots``, ``lagless_ticks_total``, ``lagless_snapshots_total`` (read live), and from
  its once-a-second status ``lagless_tick_seconds_recent{stat}`` and
  ``lagless_tick_cpu_seconds_recent{stat}`` (``avg``, ``p99``, ``max`` over its recent ticks)
  and ``lagless_client_rate_bytes_per_second``;
* web server (``lagless web``): the transport families of its UDP players, the demo's live
  families, and ``lagless_browsers`` (browser links connected), ``lagless_link_sent_bytes_total``
  (frame payload bytes written to links, without WebSocket, QUIC, TCP/UDP or IP headers),
  ``lagless_link_frames_dropped_total`` (snapshot frames dropped for a browser behind),
  ``lagless_link_bad_frames_total``, ``lagless_links_refused_total``, and from its
  once-a-second status ``lagless_tick_seconds_recent{stat}`` and
  ``lagless_browser_rate_bytes_per_second``.

Connections opened and closed are counted by the application from the transport's
``ClientConnected`` / ``ClientDisconnected`` events it already handles
(`lagless.apps.serve.ConnectionCounts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from lagless.apps.serve import ConnectionCounts
from lagless.io.metrics import gauge_histogram
from lagless.transport import NetcodeServer, Server, ServerDisconnectReason

if TYPE_CHECKING:  # the demo needs pymunk; the game server is only read, never constructed here
    from lagless.demo.arena import BotServer
    from lagless.demo.net import ServerStatus
    from lagless.game import GameServer, RoomServer
    from lagless.io.endpoint import EndpointStatistics
    from lagless.web.serve import WebMatch, WebStatus

__all__ = [
    "LOSS_BOUNDS",
    "RTT_BOUNDS",
    "TICK_BOUNDS",
    "demo_families",
    "game_families",
    "rooms_families",
    "transport_families",
    "web_families",
]

RTT_BOUNDS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0, 2.5)
"""Bucket bounds of ``lagless_rtt_seconds``, s."""
LOSS_BOUNDS: Final = (0.0, 0.001, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
"""Bucket bounds of ``lagless_loss_ratio``, fraction 0..1."""
TICK_BOUNDS: Final = (0.0001, 0.00025, 0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.033, 0.1)
"""Bucket bounds of ``lagless_tick_seconds``, s (one 60 Hz tick is 0.0167 s)."""


def transport_families(
    server: Server | NetcodeServer,
    counts: ConnectionCounts | None,
    endpoint: EndpointStatistics | None = None,
) -> list[Metric]:
    """Connections, RTT and loss histograms, traffic and drops of a transport server, now.

    Call it on the thread that owns ``server`` (reading a connection's statistics applies the
    acks it received since the last pump).

    Args:
        server: a lagless `Server` or a plain `NetcodeServer` (which has no RTT or loss).
        counts: the connections opened and closed so far; None leaves those two families out
            (a server whose connection events the application never sees).
        endpoint: the driver's counters, when known.
    """
    netcode = server.netcode if isinstance(server, Server) else server
    stats = netcode.statistics()
    rtts: list[float] = []
    losses: list[float] = []
    plain = netcode.num_connected_clients
    if isinstance(server, Server):
        plain = len(server.plain_clients)
        for cid in server.clients:
            conn = server.connection_statistics(cid)
            if conn is None or conn.packets_acked == 0:
                continue
            rtts.append(conn.rtt)
            losses.append(conn.loss)
    lagless = netcode.num_connected_clients - plain
    connections = GaugeMetricFamily(
        "lagless_connections", "Clients connected now.", labels=["kind"]
    )
    connections.add_metric(["lagless"], lagless)
    connections.add_metric(["plain"], plain)
    dropped = CounterMetricFamily(
        "lagless_dropped_packets",
        "Datagrams dropped by the netcode layer, by reason.",
        labels=["reason"],
    )
    for drop, count in stats.dropped.items():
        dropped.add_metric([drop.value], count)
    families: list[Metric] = [
        connections,
        gauge_histogram(
            "lagless_rtt_seconds",
            "Smoothed round-trip time of the connected clients, s.",
            rtts,
            RTT_BOUNDS,
        ),
        gauge_histogram(
            "lagless_loss_ratio",
            "Fraction of recent packets lost, over the connected clients.",
            losses,
            LOSS_BOUNDS,
        ),
        _counter(
            "lagless_received_bytes",
            "UDP payload bytes received (without IP/UDP headers).",
            stats.bytes_received,
        ),
        _counter(
            "lagless_sent_bytes",
            "UDP payload bytes sent (without IP/UDP headers).",
            stats.bytes_sent,
        ),
        _counter("lagless_received_packets", "UDP datagrams received.", stats.datagrams_received),
        _counter("lagless_sent_packets", "UDP datagrams sent.", stats.datagrams_sent),
        dropped,
        _counter("lagless_denied", "Connection requests denied: server full.", stats.denied_sent),
    ]
    if counts is not None:
        families += _connection_counts(counts)
    if endpoint is not None:
        families.append(
            _counter(
                "lagless_driver_errors",
                "Exceptions the driver caught from the server.",
                endpoint.errors,
            )
        )
        families.append(
            _counter("lagless_send_errors", "Datagrams the socket refused.", endpoint.send_errors)
        )
        families.append(
            _counter(
                "lagless_datagrams_sent", "Datagrams handed to the socket.", endpoint.datagrams_sent
            )
        )
        families.append(
            _counter(
                "lagless_udp_trains",
                "System calls that sent two datagrams or more (UDP segmentation offload).",
                endpoint.trains,
            )
        )
    return families


def game_families(game: GameServer) -> list[Metric]:
    """Players, bots, ticks, snapshots, hits, kills and refused requests of a game server."""
    return [
        _gauge("lagless_players", "Players connected and accepted.", len(game.clients)),
        _gauge("lagless_bots", "Server-owned bots.", len(game.bots)),
        _counter("lagless_ticks", "Simulation ticks run.", game.ticks),
        _counter(
            "lagless_ticks_skipped", "Simulation ticks skipped after stalls.", game.ticks_skipped
        ),
        _counter("lagless_snapshots", "Replication ticks (snapshots) run.", game.replication.ticks),
        _counter("lagless_hits", "Shots accepted by lag compensation.", game.lagcomp.accepted),
        _counter("lagless_kills", "Kills committed.", game.arbiter.committed),
        _by_reason("lagless_game_dropped", "Client requests refused, by reason.", game.drops),
        _by_reason(
            "lagless_replication_dropped",
            "Client messages dropped by replication, by reason.",
            game.replication.drops,
        ),
    ]


def rooms_families(service: RoomServer) -> list[Metric]:
    """Rooms, members, relayed events and dropped messages of the room service."""
    rooms = service.rooms
    return [
        _gauge("lagless_rooms", "Rooms open.", len(rooms)),
        _gauge("lagless_room_members", "Members over all rooms.", sum(r.players for r in rooms)),
        _counter("lagless_relayed_events", "Events relayed to room members.", service.relayed),
        _by_reason("lagless_room_dropped", "Client messages dropped, by reason.", service.drops),
    ]


def demo_families(server: BotServer, status: ServerStatus | None) -> list[Metric]:
    """Players, bots, ticks and snapshots of a demo server now; tick times and the per-client
    rate from its last once-a-second ``status`` (left out before the first)."""
    physics = server.server
    live = [
        _gauge("lagless_players", "Players connected.", len(physics.cars)),
        _gauge("lagless_bots", "Bots driving.", len(server.bots)),
        _counter(
            "lagless_ticks",
            "Physics ticks run.",
            round(physics.world.time * physics.config.tick_rate),
        ),
        _counter("lagless_snapshots", "Snapshots broadcast.", physics.snapshots_sent),
    ]
    if status is None:
        return live
    tick = GaugeMetricFamily(
        "lagless_tick_seconds_recent", "Wall time per tick over recent ticks, s.", labels=["stat"]
    )
    cpu = GaugeMetricFamily(
        "lagless_tick_cpu_seconds_recent",
        "CPU time per tick over recent ticks, s.",
        labels=["stat"],
    )
    for family, stats in ((tick, status.tick), (cpu, status.cpu)):
        family.add_metric(["avg"], stats.avg_ms / 1000.0)
        family.add_metric(["p99"], stats.p99_ms / 1000.0)
        family.add_metric(["max"], stats.max_ms / 1000.0)
    return [
        *live,
        tick,
        cpu,
        _gauge(
            "lagless_client_rate_bytes_per_second",
            "Bytes per second sent per player over the last second (with IP/UDP headers).",
            status.kbps_per_client * 1000.0,
        ),
    ]


def web_families(match: WebMatch, status: WebStatus | None) -> list[Metric]:
    """The demo's live families of a web match, its browser links now, and the tick times and
    per-browser rate of its last once-a-second ``status`` (left out before the first)."""
    hub = match.hub
    live = [
        *demo_families(match.bot, None),
        _gauge("lagless_browsers", "Browser links connected.", len(hub.link_connections)),
        _counter(
            "lagless_link_sent_bytes",
            "Frame payload bytes written to browser links (without protocol headers).",
            match.bytes_out,
        ),
        _counter(
            "lagless_link_frames_dropped",
            "Snapshot frames dropped because a browser link was behind.",
            match.frames_dropped,
        ),
        _counter(
            "lagless_link_bad_frames",
            "Frames from browser links that broke the protocol (the link was closed).",
            hub.bad_frames,
        ),
        _counter(
            "lagless_links_refused", "Browser links refused: too many open.", hub.links_refused
        ),
    ]
    if status is None:
        return live
    tick = GaugeMetricFamily(
        "lagless_tick_seconds_recent", "Wall time per tick over recent ticks, s.", labels=["stat"]
    )
    tick.add_metric(["avg"], status.tick.avg_ms / 1000.0)
    tick.add_metric(["p99"], status.tick.p99_ms / 1000.0)
    tick.add_metric(["max"], status.tick.max_ms / 1000.0)
    return [
        *live,
        tick,
        _gauge(
            "lagless_browser_rate_bytes_per_second",
            "Frame payload bytes per second written per browser over the last second.",
            status.kbps_per_browser * 1000.0,
        ),
    ]


def _connection_counts(counts: ConnectionCounts) -> list[Metric]:
    closed = CounterMetricFamily(
        "lagless_connections_closed", "Connections closed, by reason.", labels=["reason"]
    )
    reasons = {reason.name.lower(): 0 for reason in ServerDisconnectReason} | counts.closed
    for name, count in sorted(reasons.items()):
        closed.add_metric([name], count)
    return [_counter("lagless_connections_opened", "Connections opened.", counts.opened), closed]


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _by_reason(name: str, documentation: str, counts: Mapping[str, int]) -> CounterMetricFamily:
    family = CounterMetricFamily(name, documentation, labels=["reason"])
    for reason, count in sorted(counts.items()):
        family.add_metric([reason], count)
    return family
