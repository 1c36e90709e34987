"""lagless's build backend: setuptools, plus mypy (for mypyc) when a compiled core is asked for.

``LAGLESS_COMPILE=1 pip install .`` (or ``pip wheel .``) compiles the transport's per-packet core
with mypyc from the same Python sources (the module list is in ``setup.py``); without it, and for
every editable install (where a compiled module would shadow the source a developer edits), the
package is pure Python. See docs/compiled.md.
"""

from __future__ import annotations

import os
import tomllib
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (
    build_sdist,
    build_wheel,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
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


def compile_requested() -> bool:
    """Whether ``LAGLESS_COMPILE`` asks for the compiled core (set, and not ``0``)."""
    return os.environ.get("LAGLESS_COMPILE", "") not in ("", "0")


def get_requires_for_build_wheel(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements; when ``LAGLESS_COMPILE`` is set, mypy and the project's own
    dependencies instead (mypyc type-checks the compiled modules against them; setuptools' list
    would come from running ``setup.py``, which needs mypyc installed already)."""
    if compile_requested():
        with open("pyproject.toml", "rb") as file:
            dependencies: list[str] = tomllib.load(file)["project"]["dependencies"]
        return [MYPYC, *dependencies]
    return _setuptools.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings: dict[str, Any] | None = None) -> list[str]:
    """setuptools' requirements only: an editable install is always pure Python."""
    return _setuptools.get_requires_for_build_editable(config_settings)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """An editable install, pure Python whatever ``LAGLESS_COMPILE`` says."""
    os.environ["LAGLESS_COMPILE"] = "0"
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
