"""Extension modules of a compiled build (mypyc); the metadata is in pyproject.toml.

Wheels are compiled unless ``LAGLESS_COMPILE=0``; editable installs never are, and a wheel whose
compiled build fails is built again as pure Python (the build backend, ``_build/lagless_build.py``,
decides: docs/compiled.md).

The compiled modules are the transport's per-packet core (`Server` and `Client` included) and
the io modules every datagram passes through; two C modules join them: the cipher that seals
every packet (``_aead.c``) and the builder of the reliability layer's events (``_events.c``).
`Server` and `Client` are marked
``@mypyc_attr(allow_interpreted_subclasses=True)`` so that applications can still subclass them
(an interpreted class cannot inherit any other compiled class).

With GCC the build is profile-guided (``_build/lagless_pgo.py``; ``LAGLESS_PGO=0`` turns it off).
"""

import sys
from pathlib import Path

from setuptools import Extension, setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "_build"))
from lagless_build import compile_requested  # the in-tree build backend
from lagless_pgo import ProfiledBuildExt  # a profile-guided compiled core (GCC)

COMPILED = [
    f"src/lagless/transport/{name}.py"
    for name in (
        "acks",
        "channels",
        "clocksync",
        "congestion",
        "connection",
        "crypto",
        "drops",
        "fragment",
        "netcode_client",
        "netcode_endpoint",
        "netcode_server",
        "packer",
        "packet",
        "records",
        "replay",
        "rtt",
        "server",
        "client",
    )
] + [f"src/lagless/io/{name}.py" for name in ("drive", "driver", "offload")]

SMALL_AEAD = Extension(
    "lagless.transport._aead",
    sources=["src/lagless/transport/_aead.c"],
    extra_compile_args=["-O3"],
)
"""The C cipher for every packet (docs/compiled.md, "A C AEAD for every packet")."""

EVENTS = Extension(
    "lagless.transport._events",
    sources=["src/lagless/transport/_events.c"],
    extra_compile_args=["-O3"],
)
"""The builder of the reliability layer's events (docs/compiled.md, "Events built in C")."""

ext_modules = []
if compile_requested():
    from mypyc.build import mypycify

    ext_modules = [*mypycify(COMPILED, opt_level="3", multi_file=True), SMALL_AEAD, EVENTS]

setup(ext_modules=ext_modules, cmdclass={"build_ext": ProfiledBuildExt})
