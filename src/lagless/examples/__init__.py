"""Runnable examples: ``python -m lagless.examples`` lists them, ``python -m lagless.examples.NAME``
runs one. Each accepts ``--quick`` and runs in CI as a smoke test (tests/docs/test_examples.py).
"""

from __future__ import annotations

EXAMPLES: dict[str, str] = {
    "asyncio_echo": "a server and a client over real loopback UDP with the asyncio front end",
    "poll_loop": "a client driven once per frame by a game loop (the poll front end)",
    "simulated": "a server and four clients on a simulated UMTS network, in virtual time",
}
"""Example module names and what each shows."""

__all__ = ["EXAMPLES"]
