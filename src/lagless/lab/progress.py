"""Progress reporting for lab runs: rich progress bars on the CLI, silence in tests.

Implements DESIGN.md "Lab" ("Rich progress bars on long runs"). Experiments only see the
``Progress`` protocol through ``ExperimentContext.track`` / ``ExperimentContext.progress``.

Decisions:
    * Bars draw on stderr and are transient (they disappear when the run ends), so stdout carries
      only the results table and ``results.json`` never sees progress output
      (``test_runner.py::test_progress_reporter_counts_steps``).
    * The reporter never feeds anything back into the experiment: a run with bars and one without
      produce identical results.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sized
from typing import Protocol, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Progress as RichBars

__all__ = ["NullProgress", "Progress", "RichProgress"]

T = TypeVar("T")


class Progress(Protocol):
    """Where an experiment reports how far it got; never changes what it computes."""

    def start(self, description: str, total: int | None) -> int:
        """Open a task of ``total`` steps (``None``: unknown) and return its handle."""
        ...

    def advance(self, task: int, steps: int = 1) -> None:
        """Mark ``steps`` more steps of ``task`` as done."""
        ...

    def finish(self, task: int) -> None:
        """Close ``task``."""
        ...


class NullProgress:
    """A silent ``Progress`` that only counts steps (used in tests and library calls)."""

    def __init__(self) -> None:
        self.steps: dict[int, int] = {}
        """Steps advanced per task handle."""
        self.descriptions: dict[int, str] = {}
        """Description per task handle."""

    def start(self, description: str, total: int | None) -> int:
        """Open a task and return its handle (0, 1, 2, ... in start order)."""
        task = len(self.descriptions)
        self.descriptions[task] = description
        self.steps[task] = 0
        return task

    def advance(self, task: int, steps: int = 1) -> None:
        """Count ``steps`` more steps of ``task``."""
        self.steps[task] += steps

    def finish(self, task: int) -> None:
        """Do nothing: a silent task needs no closing."""


class RichProgress:
    """Rich progress bars on stderr; use as a context manager around the run."""

    def __init__(self, console: Console | None = None) -> None:
        """Create the bars on ``console`` (default: a stderr console)."""
        self._bars = RichBars(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console if console is not None else Console(stderr=True),
            transient=True,
        )

    def __enter__(self) -> RichProgress:
        """Start drawing."""
        self._bars.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Stop drawing and remove the bars."""
        self._bars.stop()

    def start(self, description: str, total: int | None) -> int:
        """Add a bar and return its handle."""
        return int(self._bars.add_task(description, total=total))

    def advance(self, task: int, steps: int = 1) -> None:
        """Move bar ``task`` forward by ``steps``."""
        self._bars.advance(TaskID(task), steps)

    def finish(self, task: int) -> None:
        """Remove bar ``task``."""
        self._bars.remove_task(TaskID(task))


def track(
    progress: Progress, items: Iterable[T], *, description: str, total: int | None = None
) -> Iterator[T]:
    """Yield ``items`` while advancing one ``progress`` task per item.

    Args:
        progress: The reporter.
        items: What to iterate over.
        description: Task label.
        total: Number of items; taken from ``len(items)`` when it has one.

    Yields:
        The items, unchanged.
    """
    if total is None and isinstance(items, Sized):
        total = len(items)
    task = progress.start(description, total)
    try:
        for item in items:
            yield item
            progress.advance(task)
    finally:
        progress.finish(task)
