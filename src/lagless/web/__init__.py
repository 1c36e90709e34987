"""lagless.web: browsers join the demo's arena over WebSocket or WebTransport (issue 16).

A browser's link replaces the netcode packet layer, not the messages: ``HybridServer``
(``lagless.web.hybrid``) is a transport ``Server`` whose links appear to the game server as one
more client each, carrying the same physics messages in binary frames (``lagless.web.frames``).
``lagless.web.serve`` runs the demo's ``BotServer`` on it, with the UDP endpoint beside, the page
(plain JavaScript in ``lagless/web/static``, no build step) and its WebSocket links on one TCP
port and WebTransport sessions (``aioquic``, with a pinned certificate from
``lagless.web.certificate``) on a UDP port: ``lagless web --port 8080``. ``websockets`` and
``aioquic`` (the ``web`` extra) are imported only by the serving modules.
"""

from __future__ import annotations

from lagless.web.frames import LINK_VERSION as LINK_VERSION
from lagless.web.frames import Hello as Hello
from lagless.web.frames import LinkMessage as LinkMessage
from lagless.web.frames import Ping as Ping
from lagless.web.frames import Pong as Pong
from lagless.web.frames import decode_frame as decode_frame
from lagless.web.frames import encode_frame as encode_frame
from lagless.web.hybrid import LINK_CONNECTION_BASE as LINK_CONNECTION_BASE
from lagless.web.hybrid import HybridServer as HybridServer
from lagless.web.hybrid import LinkClose as LinkClose
from lagless.web.hybrid import OutgoingFrame as OutgoingFrame

__all__ = [
    "LINK_CONNECTION_BASE",
    "LINK_VERSION",
    "Hello",
    "HybridServer",
    "LinkClose",
    "LinkMessage",
    "OutgoingFrame",
    "Ping",
    "Pong",
    "decode_frame",
    "encode_frame",
]
