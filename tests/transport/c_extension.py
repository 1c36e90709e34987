"""Build one of the compiled core's C modules from its source for a test, as setup.py builds it.

Under an editable install (pure Python, what the README's test command uses) the C modules are
not built, so their tests compile them here: both CI stages then check the same source.
"""

from __future__ import annotations

import importlib.util
import sysconfig
import warnings
from pathlib import Path
from types import ModuleType

SOURCES = Path(__file__).resolve().parents[2] / "src" / "lagless" / "transport"
"""Where the C sources are in the checkout (a compiled build run from build/ci-compiled lacks
them beside its modules)."""


def build_extension(
    tmp: Path, name: str, source: Path, macros: list[tuple[str, str]] | None = None
) -> ModuleType:
    """Compile ``source`` into module ``name`` in ``tmp`` with setuptools and import it."""
    from setuptools import Distribution, Extension

    ext = Extension(
        name, sources=[str(source)], extra_compile_args=["-O3"], define_macros=macros or []
    )
    dist = Distribution({"name": f"{name}-test", "ext_modules": [ext]})
    with warnings.catch_warnings():  # Cython's build_ext, when installed, imports distutils
        warnings.simplefilter("ignore", DeprecationWarning)
        cmd = dist.get_command_obj("build_ext")
        cmd.build_lib = str(tmp)
        cmd.build_temp = str(tmp / "temp")
        cmd.ensure_finalized()
        cmd.run()
    built = tmp / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    spec = importlib.util.spec_from_file_location(name, built)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
