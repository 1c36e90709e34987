"""Deterministic discrete-event network simulator: virtual clock, links, profiles, traces.

Implements spec 000 §3.7 (network property simulation with GPRS/UMTS profiles), spec 004 §5.3.3
(simulated latency and jitter), spec 003 §6.3 (emulated 1 s RTT link) and STYLE §5 "netsim". No
sockets and no wall clock: everything runs on ``Scheduler`` time from named seeded streams.
"""

from __future__ import annotations

from lagless.netsim import profiles as profiles
from lagless.netsim.demo import DemoResult as DemoResult
from lagless.netsim.demo import run_demo as run_demo
from lagless.netsim.link import UDP_IPV4_HEADER as UDP_IPV4_HEADER
from lagless.netsim.link import Fate as Fate
from lagless.netsim.link import GilbertElliott as GilbertElliott
from lagless.netsim.link import JitterConfig as JitterConfig
from lagless.netsim.link import Link as Link
from lagless.netsim.link import LinkConfig as LinkConfig
from lagless.netsim.link import LinkOutcome as LinkOutcome
from lagless.netsim.network import Datagram as Datagram
from lagless.netsim.network import Host as Host
from lagless.netsim.network import HostStats as HostStats
from lagless.netsim.network import LinkStats as LinkStats
from lagless.netsim.network import Network as Network
from lagless.netsim.profiles import PROFILES as PROFILES
from lagless.netsim.profiles import Profile as Profile
from lagless.netsim.profiles import get_profile as get_profile
from lagless.netsim.scheduler import Handle as Handle
from lagless.netsim.scheduler import Scheduler as Scheduler
from lagless.netsim.seeds import random_stream as random_stream
from lagless.netsim.seeds import stream as stream
from lagless.netsim.trace import PacketRecord as PacketRecord
from lagless.netsim.trace import Trace as Trace
from lagless.netsim.trace import TraceSink as TraceSink

__all__ = [
    "PROFILES",
    "UDP_IPV4_HEADER",
    "Datagram",
    "DemoResult",
    "Fate",
    "GilbertElliott",
    "Handle",
    "Host",
    "HostStats",
    "JitterConfig",
    "Link",
    "LinkConfig",
    "LinkOutcome",
    "LinkStats",
    "Network",
    "PacketRecord",
    "Profile",
    "Scheduler",
    "Trace",
    "TraceSink",
    "get_profile",
    "profiles",
    "random_stream",
    "run_demo",
    "stream",
]
