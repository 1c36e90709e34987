"""Names a package exports from its submodules, imported on first use (PEP 562).

A package whose ``__init__`` imports every submodule makes an application pay for all of them:
``import lagless.transport`` imported numpy through ``lagless.wire`` (about 60 ms, and OpenBLAS
threads that spin on a core for about a second), and ``import lagless.io`` through the network
simulator behind its proxy. `lazy_exports` gives such a package the module-level
``__getattr__`` and ``__dir__`` that import a name's submodule when the name is first read.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping


class _LazyPackage(types.ModuleType):
    """A package whose lazy export keeps its place when a submodule of the same name is imported.

    Importing ``pkg.quantize`` sets the attribute ``quantize`` of ``pkg`` to the submodule;
    when ``pkg`` exports a function ``quantize`` from it (``lagless.wire`` does), the eager
    ``__init__`` had bound the function after the submodule, and so does this.
    """

    def __setattr__(self, name: str, value: object) -> None:
        homes = self.__dict__.get("__lazy_homes__", {})
        if (
            isinstance(value, types.ModuleType)
            and homes.get(name) == name
            and value.__name__ == f"{self.__name__}.{name}"
        ):
            value = getattr(value, name)
        super().__setattr__(name, value)


def lazy_exports(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Return ``(__getattr__, __dir__)`` for ``package``'s lazily imported names.

    Args:
        package: The package's ``__name__``.
        homes: Each lazy name and the submodule (relative to ``package``) that defines it.

    Returns:
        The two module-level functions; assign them to ``__getattr__`` and ``__dir__``. A name
        read once is stored in the package's namespace, so later reads cost nothing.
    """
    module = sys.modules[package]
    namespace = module.__dict__
    namespace["__lazy_homes__"] = homes  # what _LazyPackage reads
    module.__class__ = _LazyPackage

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
