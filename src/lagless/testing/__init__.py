"""Public test helpers for lagless and for users who write their own protocol objects.

Modelled on ``trio.testing``: a fake clock and a conformance checker every ``SansIO`` object passes.
"""

from __future__ import annotations

from lagless.testing.clock import FakeClock as FakeClock
from lagless.testing.determinism import DeterminismViolation as DeterminismViolation
from lagless.testing.determinism import check_determinism as check_determinism
from lagless.testing.sansio import SansIOViolation as SansIOViolation
from lagless.testing.sansio import check_sans_io as check_sans_io

__all__ = [
    "DeterminismViolation",
    "FakeClock",
    "SansIOViolation",
    "check_determinism",
    "check_sans_io",
]
