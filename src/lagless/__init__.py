"""lagless: real-time multiplayer networking for Python.

Layers, lowest first (a module imports only from layers below it; see ``docs/design.md``):
``wire`` → ``netsim`` → ``io`` → ``transport`` → ``world`` / ``gossip`` / ``sync`` /
``smoothing`` → ``interest`` → ``replication`` → ``rooms`` → ``demo`` → ``lab`` → ``cli``.
"""

from __future__ import annotations

from lagless._version import __version__ as __version__
from lagless.errors import ConfigError as ConfigError
from lagless.errors import LaglessError as LaglessError
from lagless.errors import LocalProtocolError as LocalProtocolError

__all__ = ["ConfigError", "LaglessError", "LocalProtocolError", "__version__"]
