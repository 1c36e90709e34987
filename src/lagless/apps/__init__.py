"""Ready-to-run programs on real UDP: a server, a line client, the Silac lobby, peers and swarms.

They back ``lagless serve``, ``connect``, ``token`` and ``lagless gossip``, and are usable from
Python.
This layer sits above ``transport`` and ``io`` (it needs both) and, like ``io``, may use asyncio and
real clocks; see docs/design.md.
"""

from __future__ import annotations

from lagless.apps.gossip import LobbyError as LobbyError
from lagless.apps.gossip import LobbySummary as LobbySummary
from lagless.apps.gossip import PeerSummary as PeerSummary
from lagless.apps.gossip import SwarmSummary as SwarmSummary
from lagless.apps.gossip import run_lobby as run_lobby
from lagless.apps.gossip import run_peer as run_peer
from lagless.apps.gossip import run_swarm as run_swarm
from lagless.apps.netcode_keys import REFERENCE_PRIVATE_KEY as REFERENCE_PRIVATE_KEY
from lagless.apps.netcode_keys import REFERENCE_PROTOCOL_ID as REFERENCE_PROTOCOL_ID
from lagless.apps.netcode_keys import make_token as make_token
from lagless.apps.netcode_keys import parse_key as parse_key
from lagless.apps.serve import ServeOptions as ServeOptions
from lagless.apps.serve import ServeSummary as ServeSummary
from lagless.apps.serve import serve as serve
from lagless.apps.talk import ConnectOptions as ConnectOptions
from lagless.apps.talk import TalkSummary as TalkSummary
from lagless.apps.talk import connect_and_talk as connect_and_talk

__all__ = [
    "REFERENCE_PRIVATE_KEY",
    "REFERENCE_PROTOCOL_ID",
    "ConnectOptions",
    "LobbyError",
    "LobbySummary",
    "PeerSummary",
    "ServeOptions",
    "ServeSummary",
    "SwarmSummary",
    "TalkSummary",
    "connect_and_talk",
    "make_token",
    "parse_key",
    "run_lobby",
    "run_peer",
    "run_swarm",
    "serve",
]
