"""lagless's build backend: setuptools, plus mypyc for a compiled transport core where it can.

A wheel (``pip install .``, ``pip wheel .``) gets the transport's per-packet core compiled with
mypyc from the same Python sources (the module list is in ``setup.py``) whenever it can be: a
C compiler and the Python headers are present, and pip could fetch mypy. When they are missing,
or the compiled build fails, the wheel is pure Python, with a note on stderr saying why.
``LAGLESS_COMPILE`` decides instead of that default:

* unset or empty: compile if possible, else pure Python (the default);
* ``0``: pure Python, without fetching mypy (offline installs);
* anything else (``1``): compiled or fail, never quietly pure.

An editable install (``pip install -e .``) is always pure Python: a compiled module would sit
beside the source a developer edits and shadow it. See docs/compiled.md.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (
    build_sdist,
    get_requires_for_build_sdist,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

MYPYC = "mypy>=1.15,<3"  # mypyc ships with mypy; the range the compiled core was built with
Mode = Literal["auto", "off", "on"]
NOTE_LIMIT = 400  # characters of a failure's message quoted in the note (a compiler command line)


def compile_mode() -> Mode:
    """What ``LAGLESS_COMPILE`` asks for: ``auto`` (unset or empty), ``off`` (0), ``on``."""
    value = os.environ.get("LAGLESS_COMPILE", "")
    if value == "":
        return "auto"
    return "off" if value == "0" else "on"


def compile_requested() -> bool:
    """Whether ``setup.py`` should hand the core to mypyc: asked for (``on``), or by default
    (``auto``) on a machine with a C toolchain. Where there is none, ``setup.py`` must not even
    import mypyc: setuptools runs it to find its requirements, before mypy is installed."""
    mode = compile_mode()
    return mode == "on" or (mode == "auto" and missing_toolchain() is None)


def c_compiler() -> list[str]:
    """The C compiler command setuptools will run: ``$CC``, else Python's own ``CC``, else cc."""
    return (os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc").split()


def missing_toolchain() -> str | None:
    """Why a C extension cannot be built here (no compiler, no ``Python.h``), or None."""
    headers = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not headers.is_file():
        return f"the Python headers are missing ({headers}; Debian: python3-dev)"
    compiler = c_compiler()[0]
    if shutil.which(compiler) is None:
        return f"no C compiler ({compiler!r} is not on PATH; Debian: build-essential)"
    return None


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements; for a build that will compile, mypy and the project's own
    dependencies instead (mypyc type-checks the compiled modules against them; setuptools' list
    would come from running ``setup.py``, which needs mypyc installed already). A default build
    on a machine without a toolchain will not compile, so it does not fetch mypy."""
    if compile_requested():
        with open("pyproject.toml", "rb") as file:
            dependencies: list[str] = tomllib.load(file)["project"]["dependencies"]
        return [MYPYC, *dependencies]
    return _setuptools.get_requires_for_build_wheel(config_settings)


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    """The wheel's metadata, which does not depend on the compiled modules: found without
    running mypyc (``setup.py`` would otherwise compile the core only to read the metadata)."""
    with _pure():
        return _setuptools.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """A wheel with the compiled core if the mode allows and the build succeeds (module doc)."""
    mode = compile_mode()
    if mode == "auto":
        why = missing_toolchain()
        advice = "install a C compiler and the Python headers and reinstall for the compiled one"
        if why is None:
            try:
                return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
            except (Exception, SystemExit) as exc:  # a failed compiler run exits setup()
                why = f"the compiled build failed ({str(exc)[:NOTE_LIMIT]})"
                advice = "LAGLESS_COMPILE=1 shows the whole failure"
            _clean_build_tree()
        note(
            f"lagless: building the pure-Python core: {why}. It is correct but slower; "
            f"{advice} (docs/compiled.md)."
        )
        with _pure():
            return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements only: an editable install is always pure Python."""
    with _pure():
        return _setuptools.get_requires_for_build_editable(config_settings)


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: dict[str, Any] | None = None
) -> str:
    """An editable install's metadata, found without mypyc (it is always pure Python)."""
    with _pure():
        return _setuptools.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """An editable install, pure Python whatever ``LAGLESS_COMPILE`` says."""
    with _pure():
        return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)


@contextmanager
def _pure() -> Iterator[None]:
    """Run a setuptools hook with ``LAGLESS_COMPILE=0``, then put the variable back."""
    before = os.environ.get("LAGLESS_COMPILE")
    os.environ["LAGLESS_COMPILE"] = "0"
    try:
        yield
    finally:
        if before is None:
            del os.environ["LAGLESS_COMPILE"]
        else:
            os.environ["LAGLESS_COMPILE"] = before


def _clean_build_tree() -> None:
    """Remove what a failed compiled build left under ``build/`` before the pure build runs."""
    build = Path("build")
    if build.is_dir():
        for path in build.iterdir():
            if path.is_dir() and path.name.startswith(("lib", "temp", "bdist")):
                shutil.rmtree(path, ignore_errors=True)


def note(text: str) -> None:
    """Print a line for the person installing (pip shows stderr with ``-v``)."""
    print(text, file=sys.stderr, flush=True)
