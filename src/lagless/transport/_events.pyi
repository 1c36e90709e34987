"""Types of the C event builder of a compiled build (``_events.c``, see `lagless.transport`)."""

from collections.abc import Iterable
from typing import Any

def build(
    kind: type, head: tuple[object, ...], entries: Iterable[tuple[object, ...]], /
) -> list[Any]:
    """``[kind(*head, *entry) for entry in entries]``, built as ``tuple.__new__`` builds them.

    Raises TypeError when ``kind`` is not a subclass of tuple or ``head`` or an entry is not a
    tuple.
    """
