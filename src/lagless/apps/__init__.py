"""Ready-to-run programs over the transport: a server and a line client on real UDP.

They back ``lagless serve``, ``lagless connect`` and ``lagless token`` and are usable from Python.
This layer sits above ``transport`` and ``io`` (it needs both) and, like ``io``, may use asyncio and
real clocks; see docs/design.md.
"""

from __future__ import annotations

from lagless.apps.netcode_keys import REFERENCE_PRIVATE_KEY as REFERENCE_PRIVATE_KEY
from lagless.apps.netcode_keys import REFERENCE_PROTOCOL_ID as REFERENCE_PROTOCOL_ID
from lagless.apps.netcode_keys import make_token as make_token
from lagless.apps.netcode_keys import parse_key as parse_key
from lagless.apps.serve import ServeOptions as ServeOptions
from lagless.apps.serve import ServeSummary as ServeSummary
from lagless.apps.serve import serve as serve
from lagless.apps.talk import ConnectOptions as ConnectOptions
from lagless.apps.talk import connect_and_talk as connect_and_talk

__all__ = [
    "REFERENCE_PRIVATE_KEY",
    "REFERENCE_PROTOCOL_ID",
    "ConnectOptions",
    "ServeOptions",
    "ServeSummary",
    "connect_and_talk",
    "make_token",
    "parse_key",
    "serve",
]
