"""ID pools (spec 003 §5.3, checklist 7.1 "ID pools", §7.2 experiment 11)."""

from __future__ import annotations

import pytest

from lagless.errors import LocalProtocolError
from lagless.replication.ids import NO_ID, IdOverflowError, IdPool, IdState, IdTakenError


class Thing:
    def __init__(self, name: str) -> None:
        self.name = name


def test_sequential_from_start_and_never_reused() -> None:
    pool: IdPool[Thing] = IdPool("UniverseID", start=100)
    things = [Thing(str(i)) for i in range(5)]
    ids = [pool.assign(t) for t in things]
    assert ids == [100, 101, 102, 103, 104]
    assert pool.invalidate(104)
    assert pool.invalidate(102)
    assert not pool.invalidate(102)
    assert pool.assign(Thing("x")) == 105  # the freed 104 and 102 are never handed out again
    assert pool.issued == 6
    assert pool.valid == len(pool) == 4
    assert [i for i, _ in pool] == [100, 101, 103, 105]
    assert pool.find(102) is None
    assert pool.find(101) is things[1]
    assert pool.id_of(things[1]) == 101
    assert pool.id_of(things[2]) == NO_ID
    assert 101 in pool
    assert 102 not in pool


def test_explicit_id_collision_and_next_id_bump() -> None:
    pool: IdPool[Thing] = IdPool("P", start=1)
    pool.assign(Thing("a"))
    assert pool.assign(Thing("b"), 50) == 50
    assert pool.next_id == 51
    assert pool.assign(Thing("c")) == 51
    with pytest.raises(IdTakenError):
        pool.assign(Thing("d"), 50)
    assert pool.next_id == 52  # the failed assignment changed nothing
    assert pool.assign(Thing("e"), 10) == 10  # free below next_id: accepted, next_id unchanged
    assert pool.next_id == 52
    thing = Thing("f")
    pool.assign(thing)
    with pytest.raises(IdTakenError):
        pool.assign(thing)


@pytest.mark.parametrize("width", [32, 64])
def test_overflow_at_width(width: int) -> None:
    top = (1 << width) - 1
    pool: IdPool[Thing] = IdPool("P", start=top - 1, width=width)
    assert pool.assign(Thing("a")) == top - 1
    assert pool.assign(Thing("b")) == top
    with pytest.raises(IdOverflowError):
        pool.assign(Thing("c"))
    with pytest.raises(IdOverflowError):
        pool.assign(Thing("d"), top + 1)
    assert pool.valid == 2


def test_unbounded_width() -> None:
    pool: IdPool[Thing] = IdPool("P", start=1 << 70, width=None)
    assert pool.assign(Thing("a")) == 1 << 70
    assert pool.string_to_id(pool.id_to_string(1 << 80)) == 1 << 80


def test_bad_configuration() -> None:
    with pytest.raises(LocalProtocolError):
        IdPool("P", width=16)
    with pytest.raises(LocalProtocolError):
        IdPool("P", start=-1)
    with pytest.raises(IdOverflowError):
        IdPool("P", start=1 << 32)


def test_wrong_station_hazard() -> None:
    """Destroy a station, recreate one with the same explicit ID: the stale ref is None."""
    pool: IdPool[Thing] = IdPool("UniverseID")
    old = Thing("old station")
    sid = pool.assign(old, 7)
    dock_target = pool.ref(sid)
    assert pool.resolve(dock_target) is old
    pool.invalidate(sid)
    new = Thing("new station")
    assert pool.assign(new, 7) == 7
    assert pool.find(7) is new  # the thesis's hazard: the bare ID finds the new station
    assert pool.resolve(dock_target) is None  # the reference does not
    assert pool.resolve(pool.ref(7)) is new
    assert pool.ref(12345).id == NO_ID


def test_strings() -> None:
    pool: IdPool[Thing] = IdPool("UniverseID")
    assert pool.id_to_string(42) == "UniverseID:42"
    assert pool.string_to_id("UniverseID:42") == 42
    for bad in ["Other:42", "UniverseID:-1", "UniverseID:x", "42", "UniverseID:4294967296"]:
        with pytest.raises(LocalProtocolError):
            pool.string_to_id(bad)


def test_debug_state_and_reset() -> None:
    plain: IdPool[Thing] = IdPool("P")
    debug: IdPool[Thing] = IdPool("P", debug=True)
    for pool in (plain, debug):
        pool.assign(Thing("a"))
        pool.invalidate(1)
    assert plain.state(1) is IdState.NEVER_USED
    assert debug.state(1) is IdState.FREED
    assert debug.state(2) is IdState.NEVER_USED
    debug.assign(Thing("b"), 1)
    assert debug.state(1) is IdState.LIVE
    debug.reset(start=10)
    assert (debug.valid, debug.issued, debug.next_id, debug.start) == (0, 0, 10, 10)
    assert debug.state(1) is IdState.NEVER_USED
