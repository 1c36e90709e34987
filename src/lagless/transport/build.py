"""How this installation runs the transport's per-packet core: compiled or from source.

A wheel build (``pip install .``) compiles the core (the modules listed in ``setup.py``: acks,
channels, connection, packer, the netcode endpoints, ...) with mypyc from the same Python sources
where the machine has a C compiler and the Python headers; editable installs, ``LAGLESS_COMPILE=0``
builds and wheels whose compiled build failed run them as Python. Behaviour is the same
either way, except that compiled code checks argument types at call time and raises `TypeError`
for a wrong one (docs/compiled.md).
"""

from __future__ import annotations

from typing import Literal

from lagless.transport import connection


def compiled() -> bool:
    """True when the per-packet core is mypyc-compiled, False when it runs from source."""
    return not str(connection.__file__).endswith(".py")


def core() -> Literal["mypyc", "python"]:
    """``"mypyc"`` for a compiled core, ``"python"`` for source; benchmarks print it."""
    return "mypyc" if compiled() else "python"
