"""Per-pool object IDs that are never reused, and references that cannot dangle.

Implements spec 003 §5.3 (``IDBase<T>`` / ``IDMap<T>``, §7.1.2 of the thesis) and checklist 7.1
"ID pools": one `IdPool` per pool type with a configurable start ID, monotonic IDs that are never
reused, explicit IDs with an "already taken" error and the NextID bump, invalidation, ``find``,
counts of issued and valid IDs, iteration, ID↔string, and an ID width of 32 or 64 bits or
unbounded with overflow detection. The same IDs serve savegames and the network (issue 13 item 1).

Decisions (spec 003 leaves them open):

* **Explicit IDs.** ``assign(obj, ident)`` raises `IdTakenError` when ``ident`` is live in the pool;
  otherwise it sets ``next_id = max(next_id, ident + 1)``. An explicit ID below ``next_id`` that is
  free (never used or freed) is accepted: that is how a client gives a replica the server's ID,
  and it is the thesis's hazard (§7.1.2.4) that `IdRef` answers.
* **Generations.** Every assignment gets a pool-wide serial number, its *generation* (1, 2, ...;
  ``issued`` after the assignment). An `IdRef` holds ``(id, generation)``; `IdPool.resolve`
  returns the object only while the same assignment is live, so a reference to a destroyed station
  resolves to None even after a new station takes the same explicit ID (the "dock at the wrong
  station" hazard, ``test_ids.py::test_wrong_station_hazard``). No memory is kept per freed ID.
* **Overflow.** With ``width=32`` the largest ID is ``2**32 - 1``; an automatic ID beyond it, or
  an explicit one outside ``[0, 2**width)``, raises `IdOverflowError` and changes nothing.
  ``width=None`` is unbounded (Python ints). ID 0 is a valid ID only if ``start`` is 0; `NO_ID`
  (-1) is the invalid ID of the thesis.
* **Never used vs freed** are not distinguished (thesis §7.1.2.4) unless ``debug=True``, which
  keeps the set of freed IDs for `IdPool.state` (memory grows with destroyed objects: debug only).
* **Iteration** is in ascending ID order (the thesis's ``std::map``); it sorts, O(n log n).
* **Strings** are the decimal ID with the pool name as prefix, ``"UniverseID:42"``; parsing
  checks the prefix and the range and raises `LocalProtocolError` on anything else.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from lagless.errors import LaglessError, LocalProtocolError

__all__ = ["NO_ID", "NULL_REF", "IdOverflowError", "IdPool", "IdRef", "IdState", "IdTakenError"]

NO_ID: Final = -1  # the invalid ID (thesis ``InvalidID``); never issued
T = TypeVar("T")


class IdTakenError(LocalProtocolError):
    """An explicit ID is already live in its pool (thesis §7.1.2: "ID already taken")."""


class IdOverflowError(LaglessError, OverflowError):
    """The pool's ID width is exhausted, or an explicit ID does not fit the width."""


class IdState(enum.Enum):
    """What a pool knows about an ID (``debug=True`` tells the last two apart)."""

    LIVE = "live"
    """Associated with an object now."""
    NEVER_USED = "never_used"
    """Never associated (or, without ``debug``, associated once and freed)."""
    FREED = "freed"
    """Associated once, freed since (reported only with ``debug=True``)."""


@dataclass(frozen=True, slots=True)
class IdRef:
    """A reference to one assignment of an ID: ``(id, generation)``; see `IdPool.resolve`."""

    id: int
    """The object's ID in its pool (`NO_ID` for the null reference)."""
    generation: int
    """The pool-wide serial number of the assignment it was taken from (0 for the null one)."""


NULL_REF: Final = IdRef(NO_ID, 0)


class IdPool(Generic[T]):
    """One ID pool (thesis ``IDMap<T>``): IDs from ``start`` upwards, never reused.

    Args:
        name: Pool name, used in strings (``"UniverseID:42"``) and error messages.
        start: First automatic ID (thesis ``StartID``), ``>= 0``.
        width: ID width in bits (32 or 64), or None for unbounded IDs.
        debug: Remember freed IDs so `state` can tell them from never-used ones.

    Raises:
        LocalProtocolError: ``start`` is negative or does not fit ``width``, or ``width`` is
            not 32, 64 or None.

    >>> pool: IdPool[str] = IdPool("UniverseID", start=100)
    >>> pool.assign("ship"), pool.assign("station"), pool.find(101)
    (100, 101, 'station')
    """

    def __init__(
        self, name: str, *, start: int = 1, width: int | None = 32, debug: bool = False
    ) -> None:
        if width not in (32, 64, None):
            raise LocalProtocolError(f"width must be 32, 64 or None, got {width!r}")
        self.name = name
        self.width = width
        self._limit = None if width is None else 1 << width  # first ID that does not fit
        self._check_fits(start, "start")
        self._start = start
        self._next = start
        self._objects: dict[int, T] = {}
        self._generation: dict[int, int] = {}  # live id -> serial number of its assignment
        self._index: dict[int, int] = {}  # id(object) -> its pool ID
        self._issued = 0
        self._freed: set[int] | None = set() if debug else None

    # -- assignment ---------------------------------------------------------------------------

    @property
    def next_id(self) -> int:
        """The ID the next automatic assignment will get (thesis ``NextID``)."""
        return self._next

    @property
    def start(self) -> int:
        """The start ID the pool was created with."""
        return self._start

    def assign(self, obj: T, ident: int | None = None) -> int:
        """Give ``obj`` an ID: the next one, or ``ident`` if given (thesis ``GetID``).

        Args:
            obj: The object; one object holds at most one ID in a pool.
            ident: An explicit ID (e.g. the server's ID for a replica), or None.

        Returns:
            The ID.

        Raises:
            IdTakenError: ``ident`` is live in this pool, or ``obj`` already has an ID here.
            IdOverflowError: the width is exhausted or ``ident`` does not fit it.
        """
        held = self._index.get(_identity(obj))
        if held is not None:
            raise IdTakenError(f"{self.name}: object already holds ID {held}")
        if ident is None:
            new = self._next
            self._check_fits(new, "next ID")
        else:
            self._check_fits(ident, "ident")
            if ident in self._objects:
                raise IdTakenError(f"{self.name}: ID {ident} is already taken")
            new = ident
        self._next = max(self._next, new + 1)
        self._issued += 1
        self._objects[new] = obj
        self._generation[new] = self._issued
        self._index[_identity(obj)] = new
        if self._freed is not None:
            self._freed.discard(new)
        return new

    def advance(self, next_id: int) -> None:
        """Raise ``next_id`` to at least ``next_id`` (a loaded savegame keeps its counter).

        Raises:
            LocalProtocolError: ``next_id`` is negative.
            IdOverflowError: it exceeds the width by more than one.
        """
        if self._limit is not None and next_id == self._limit:
            self._next = max(self._next, next_id)
            return
        self._check_fits(next_id, "next_id")
        self._next = max(self._next, next_id)

    def invalidate(self, ident: int) -> bool:
        """Free ``ident`` (thesis ``InvalidateObject``); it is never handed out automatically again.

        Returns:
            True if ``ident`` was live, False otherwise (nothing changes).
        """
        if ident not in self._generation:
            return False
        obj = self._objects.pop(ident)
        del self._generation[ident]
        del self._index[_identity(obj)]
        if self._freed is not None:
            self._freed.add(ident)
        return True

    def reset(self, start: int | None = None) -> None:
        """Forget every object and restart at ``start`` (thesis ``ResetMap``; new game only).

        Raises:
            LocalProtocolError: ``start`` is negative or does not fit the width.
        """
        if start is not None:
            self._check_fits(start, "start")
            self._start = start
        self._next = self._start
        self._objects.clear()
        self._generation.clear()
        self._index.clear()
        self._issued = 0
        if self._freed is not None:
            self._freed.clear()

    # -- lookup -------------------------------------------------------------------------------

    def find(self, ident: int) -> T | None:
        """Return the object holding ``ident`` now, or None (thesis ``FindObject``)."""
        return self._objects.get(ident)

    def id_of(self, obj: T) -> int:
        """Return the ID ``obj`` holds in this pool, or `NO_ID`."""
        return self._index.get(_identity(obj), NO_ID)

    def ref(self, ident: int) -> IdRef:
        """Return a reference to the current assignment of ``ident`` (the null one if not live)."""
        generation = self._generation.get(ident)
        return NULL_REF if generation is None else IdRef(ident, generation)

    def resolve(self, ref: IdRef) -> T | None:
        """Return the referenced object if the same assignment is still live, else None."""
        if self._generation.get(ref.id) != ref.generation:
            return None
        return self._objects[ref.id]

    def generation(self, ident: int) -> int:
        """Return the serial number of the live assignment of ``ident``, or 0."""
        return self._generation.get(ident, 0)

    def state(self, ident: int) -> IdState:
        """Return whether ``ident`` is live, never used or (``debug=True`` only) freed."""
        if ident in self._objects:
            return IdState.LIVE
        if self._freed is not None and ident in self._freed:
            return IdState.FREED
        return IdState.NEVER_USED

    @property
    def issued(self) -> int:
        """IDs assigned since creation or `reset` (thesis ``GetNumOfIDs``)."""
        return self._issued

    @property
    def valid(self) -> int:
        """IDs live now (thesis ``GetNumOfValidIDs``)."""
        return len(self._objects)

    def __len__(self) -> int:
        """Number of live IDs."""
        return len(self._objects)

    def __contains__(self, ident: object) -> bool:
        """Whether ``ident`` is live."""
        return ident in self._objects

    def __iter__(self) -> Iterator[tuple[int, T]]:
        """``(id, object)`` pairs in ascending ID order (a snapshot: safe to destroy while
        iterating)."""
        return iter(sorted(self._objects.items(), key=_first))

    # -- strings ------------------------------------------------------------------------------

    def id_to_string(self, ident: int) -> str:
        """Return ``"<pool>:<id>"`` (thesis ``IDToString``), e.g. ``"UniverseID:42"``."""
        return f"{self.name}:{ident}"

    def string_to_id(self, text: str) -> int:
        """Parse `id_to_string` output (thesis ``StringToID``).

        Raises:
            LocalProtocolError: wrong pool prefix, not a decimal integer, or out of the width.
        """
        prefix, sep, digits = text.rpartition(":")
        if not sep or prefix != self.name or not digits.isdigit() or not digits.isascii():
            raise LocalProtocolError(f"expected '{self.name}:<decimal id>', got {text!r}")
        value = int(digits)
        if self._limit is not None and value >= self._limit:
            raise LocalProtocolError(f"{self.name}: ID {value} does not fit {self.width} bits")
        return value

    # -- internals ----------------------------------------------------------------------------

    def _check_fits(self, value: int, what: str) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LocalProtocolError(f"{self.name}: {what} must be an int >= 0, got {value!r}")
        if self._limit is not None and value >= self._limit:
            raise IdOverflowError(
                f"{self.name}: {what} {value} does not fit {self.width} bits "
                f"(largest {self._limit - 1})"
            )


def _identity(obj: object) -> int:
    return id(obj)


def _first(item: tuple[int, object]) -> int:
    return item[0]
