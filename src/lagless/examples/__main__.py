"""List the examples (``python -m lagless.examples``)."""

from __future__ import annotations

from lagless.examples import EXAMPLES

for name, what in EXAMPLES.items():
    print(f"python -m lagless.examples.{name:<14} {what}")
