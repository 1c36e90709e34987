"""Secure mode through ``lagless proxy`` over real UDP: the token names the proxy.

The server is told the proxy's address with ``serve --public-address``; the client dials the
address in its token (the proxy), the proxy forwards to the server, and an echo comes back.
Without ``--public-address`` the server refuses that token (netcode-1.02 spec §10.1 step 8).
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lagless.apps import REFERENCE_PRIVATE_KEY, make_token
from lagless.transport import (
    ClientConnected,
    NetcodeClient,
    NetcodeClientConfig,
    NetcodeServer,
    NetcodeServerConfig,
)

PROTOCOL = 0x1122334455667788


def _handshake(config: NetcodeServerConfig, token: bytes, dialled: tuple[str, int]) -> bool:
    """Run a netcode handshake in memory, the client dialling ``dialled`` (a proxy in front of
    the server); return whether the server connected the client."""
    server = NetcodeServer(config=config, unix_time_offset=1_700_000_000.0)
    client = NetcodeClient(config=NetcodeClientConfig())
    client.connect(token, 0.0)
    now = 0.0
    for _ in range(20):
        now += 0.1
        client.handle_timer(now)
        for data, _addr in client.datagrams_to_send(now):
            server.receive_datagram(data, ("127.0.0.1", 50000), now)
        server.handle_timer(now)
        for data, _addr in server.datagrams_to_send(now):
            client.receive_datagram(data, dialled, now)
        while (event := server.next_event()) is not None:
            if isinstance(event, ClientConnected):
                return True
    return False


def test_server_accepts_a_token_naming_any_of_its_public_addresses() -> None:
    proxy = ("127.0.0.1", 41001)
    base = NetcodeServerConfig(
        protocol_id=PROTOCOL, private_key=REFERENCE_PRIVATE_KEY, public_address=("127.0.0.1", 4)
    )
    token = make_token([proxy], client_id=5, protocol_id=PROTOCOL)
    assert not _handshake(base, token, proxy)
    extra = NetcodeServerConfig(
        protocol_id=PROTOCOL,
        private_key=REFERENCE_PRIVATE_KEY,
        public_address=("127.0.0.1", 4),
        extra_public_addresses=(proxy,),
    )
    assert _handshake(extra, token, proxy)


def test_secure_client_reaches_server_through_proxy(
    lagless: Callable[..., Any], free_port: Callable[[], int], tmp_path: Path
) -> None:
    start = lagless
    proxy_port = free_port()
    server = start(
        "serve",
        *("--port", "0", "--echo", "--quiet"),
        *("--public-address", f"localhost:{proxy_port}"),
    )
    server_port = server.wait_line(r"serving lagless \(secure\) on 127\.0\.0\.1:(\d+)").group(1)
    server.wait_line(rf"also accepting tokens that name 127\.0\.0\.1:{proxy_port}")
    proxy = start(
        "proxy",
        *("--listen", f"127.0.0.1:{proxy_port}", "--forward", f"127.0.0.1:{server_port}"),
        *("--quiet", "--latency-ms", "5"),
    )
    proxy.wait_line(rf"proxy 127\.0\.0\.1:{proxy_port} -> 127\.0\.0\.1:{server_port}")
    token = tmp_path / "token.bin"
    made = start("token", "--server", f"localhost:{proxy_port}", "--client-id", "77", cwd=tmp_path)
    status, out, err = made.finish(timeout=20)
    assert status == 0, err
    assert out.startswith("wrote 2048 bytes to token.bin")
    client = start("connect", "--token", str(token))
    status, out, err = client.finish(timeout=20, stdin="through the proxy\n")
    assert status == 0, err
    assert out.splitlines()[:2] == [f"connected to 127.0.0.1:{proxy_port}", "through the proxy"]
    proxy.process.send_signal(signal.SIGINT)
    status, summary, err = proxy.finish(timeout=10)
    assert status == 130, err
    forwarded = re.search(r"│ forwarded\s*│\s*(\d+)\s*│\s*(\d+)", summary)
    assert forwarded is not None, summary
    assert int(forwarded.group(1)) >= 3, summary  # up: request, response, payloads
    assert int(forwarded.group(2)) >= 3, summary  # down: challenge, keep-alive, echo
    server.process.send_signal(signal.SIGTERM)
    status, log, err = server.finish(timeout=10)
    assert status == 143, err
    assert "(id 77)" in log
    assert "client 1 ch0: through the proxy" in log
