"""The package version, in a module of its own so any layer may read it."""

from __future__ import annotations

from typing import Final

__version__: Final = "0.1.0"
