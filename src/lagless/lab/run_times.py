"""Measured wall-clock run times of the built-in experiments, shown by ``lagless lab list``.

Seconds for a ``--quick`` and a full run with the default seed, measured on the 2-core
development VM with ``lagless lab run ID [--quick]`` (plots included) in one sequential pass.
``None``: not measured (a full run longer than the measuring pass allowed). Re-measure after a
change that moves an experiment's cost by more than about a third.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

RUN_SECONDS: Final[Mapping[str, tuple[float | None, float | None]]] = {}
"""Experiment id -> (seconds of a ``--quick`` run, seconds of a full run)."""
