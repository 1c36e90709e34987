"""Entry point for ``python -m lagless``: the same typer app as the ``lagless`` script."""

from __future__ import annotations

from lagless.cli.app import main

main()
