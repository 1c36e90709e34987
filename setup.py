"""Extension modules for ``LAGLESS_COMPILE=1`` builds (mypyc); the metadata is in pyproject.toml.

The compiled modules are the transport's per-packet core. `Server` and `Client` stay interpreted
so that applications can subclass them (an interpreted class cannot inherit a compiled one).
"""

import os

from setuptools import setup

COMPILED = [
    f"src/lagless/transport/{name}.py"
    for name in (
        "acks",
        "channels",
        "clocksync",
        "congestion",
        "connection",
        "crypto",
        "fragment",
        "netcode_client",
        "netcode_endpoint",
        "netcode_server",
        "packer",
        "packet",
        "records",
        "rtt",
    )
]

ext_modules = []
if os.environ.get("LAGLESS_COMPILE", "") not in ("", "0"):
    from mypyc.build import mypycify

    ext_modules = mypycify(COMPILED, opt_level="3", multi_file=True)

setup(ext_modules=ext_modules)
