"""Drivers: the only layer with sockets, asyncio, uvloop and real clocks (DESIGN.md "Layers").

``udp`` holds the non-blocking socket helpers (the ``add_reader`` drain loop of DESIGN.md "Speed
rules", ``run`` on uvloop when installed, ``sleep_until`` for a game loop's ticks, which unlike
``asyncio.sleep`` never wakes early on uvloop), ``endpoint`` the asyncio and poll front ends
that drive any sans-I/O object on a real socket (pumped once per readiness batch, a bounded
event queue with backpressure, no exception from the object stops them), ``serve`` a callback
loop over an endpoint's events that survives a failing handler, ``sim`` the same over the
simulator, ``proxy`` the real-UDP link conditioner behind ``lagless proxy``, ``drive`` the
shared pump. The names of ``proxy`` and ``sim`` are imported on first use: they need the network
simulator and so numpy, which an application on real sockets does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lagless._lazy import lazy_exports
from lagless.io.drive import pump as pump
from lagless.io.endpoint import DEFAULT_MAX_EVENTS as DEFAULT_MAX_EVENTS
from lagless.io.endpoint import AsyncEndpoint as AsyncEndpoint
from lagless.io.endpoint import EndpointStatistics as EndpointStatistics
from lagless.io.endpoint import PollEndpoint as PollEndpoint
from lagless.io.endpoint import open_endpoint as open_endpoint
from lagless.io.serve import ServeStatistics as ServeStatistics
from lagless.io.serve import serve_events as serve_events
from lagless.io.udp import add_datagram_reader as add_datagram_reader
from lagless.io.udp import format_hostport as format_hostport
from lagless.io.udp import install_uvloop as install_uvloop
from lagless.io.udp import open_udp_socket as open_udp_socket
from lagless.io.udp import parse_hostport as parse_hostport
from lagless.io.udp import run as run
from lagless.io.udp import sleep_until as sleep_until

if TYPE_CHECKING:
    from lagless.io.proxy import DirectionStats as DirectionStats
    from lagless.io.proxy import LinkOverrides as LinkOverrides
    from lagless.io.proxy import Proxy as Proxy
    from lagless.io.proxy import ProxyConfig as ProxyConfig
    from lagless.io.proxy import ProxyStats as ProxyStats
    from lagless.io.proxy import build_proxy_config as build_proxy_config
    from lagless.io.proxy import overrides_from_flags as overrides_from_flags
    from lagless.io.proxy import run_proxy as run_proxy
    from lagless.io.sim import SimEndpoint as SimEndpoint

# the simulator's names need numpy (lagless.netsim): imported on first use (lagless._lazy)
_HOMES: dict[str, str] = {
    "DirectionStats": "proxy",
    "LinkOverrides": "proxy",
    "Proxy": "proxy",
    "ProxyConfig": "proxy",
    "ProxyStats": "proxy",
    "build_proxy_config": "proxy",
    "overrides_from_flags": "proxy",
    "run_proxy": "proxy",
    "SimEndpoint": "sim",
}

__all__ = [
    "DEFAULT_MAX_EVENTS",
    "AsyncEndpoint",
    "DirectionStats",
    "EndpointStatistics",
    "LinkOverrides",
    "PollEndpoint",
    "Proxy",
    "ProxyConfig",
    "ProxyStats",
    "ServeStatistics",
    "SimEndpoint",
    "add_datagram_reader",
    "build_proxy_config",
    "format_hostport",
    "install_uvloop",
    "open_endpoint",
    "open_udp_socket",
    "overrides_from_flags",
    "parse_hostport",
    "pump",
    "run",
    "run_proxy",
    "serve_events",
    "sleep_until",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
