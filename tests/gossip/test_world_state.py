"""Interest path and conflict rollback (spec 002 §2.7, §2.8, §2.11)."""

from __future__ import annotations

import pytest

from lagless.errors import LocalProtocolError
from lagless.gossip import Interaction, InteractionKind, InterestPath, WorldState

FRAME = 0.05
POS = (1.0, 2.0, 3.0)
FACE = (1.0, 0.0, 0.0)


def _path(**kw: float) -> InterestPath:
    args = {
        "transient_decay": 0.25,
        "important_decay": 2.0,
        "correction_limit": 2,
    }
    return InterestPath(**(args | kw))  # type: ignore[arg-type]


def _pickup(item: int, serial: int = 0) -> Interaction:
    return Interaction(kind=InteractionKind.PICKUP, serial=serial, target=item)


def _shot(serial: int) -> Interaction:
    return Interaction(kind=InteractionKind.SHOT, serial=serial)


def _carried(path: InterestPath, start: float, frames: int) -> list[Interaction | None]:
    return [path.take(start + i * FRAME, 100 + i) for i in range(frames)]


def test_carried_in_consecutive_frames() -> None:
    # Spec 002 §2.8 / Fig. 2.8: the type-10 record names the first carrier and the number of
    # frames it was sent in, so a lone interaction rides in consecutive own messages.
    path = _path(carry_frames=6)
    path.add(_pickup(1), 0.0, POS, FACE)
    carried = _carried(path, 0.0, 40)
    sent_at = [i for i, x in enumerate(carried) if x is not None]
    assert sent_at == [0, 1, 2, 3, 4, 5]  # six consecutive frames, then no more carriers
    records = path.corrections_for(peer_id=1, reported=200)
    assert [(r.first_message, r.length) for r in records] == [(100, 6)]
    assert len(path) == 1  # kept for corrections until it decays at 2 s
    assert path.take(2.0, 999) is None
    assert len(path) == 0


def test_transient_decays_fast_and_important_ranks_first() -> None:
    path = _path()
    path.add(_shot(1), 0.0, POS, FACE)
    path.add(_pickup(2), 0.0, POS, FACE)
    # fresh before due, important before transient; the shot is re-sent once, then decays (0.25 s)
    assert _carried(path, 0.0, 4) == [_pickup(2), _shot(1), _pickup(2), _shot(1)]
    assert _shot(1) not in _carried(path, 0.25, 20)


def test_correction_after_missed_carriers() -> None:
    path = _path()
    path.add(_pickup(5), 0.0, POS, FACE)
    assert path.take(0.0, 10) == _pickup(5)
    assert path.take(FRAME, 11) == _pickup(5)  # carried in messages 10 and 11
    assert path.corrections_for(peer_id=1, reported=9) == []  # not past the carriers yet
    records = path.corrections_for(peer_id=1, reported=12)
    assert [r.interaction for r in records] == [_pickup(5)]
    assert (records[0].first_message, records[0].length, records[0].position) == (10, 2, POS)
    path.note_correction(1, records, 13)
    assert path.corrections_for(peer_id=1, reported=12) == []  # no repeat for the same report
    assert path.corrections_for(peer_id=1, reported=13) == []  # it reported the correction
    assert path.corrections_for(peer_id=1, reported=50) == []  # confirmed for good
    assert path.corrections_for(peer_id=2, reported=11) == []  # peer 2 got a carrier
    assert path.corrections_for(peer_id=2, reported=50) == []


def test_shots_are_never_corrected() -> None:
    path = _path()
    path.add(_shot(1), 0.0, POS, FACE)
    path.take(0.0, 10)
    assert path.corrections_for(peer_id=1, reported=20) == []


def test_conflict_rolls_back_both() -> None:
    world = WorldState(self_id=1, memory=4.0)
    mine = _pickup(9)
    world.local(mine, 0.0)
    applied, undone = world.remote(2, _pickup(9, serial=4), 0.01)
    assert applied
    assert undone == [(1, mine), (2, _pickup(9, serial=4))]
    assert world.holder(9) is None
    world.local(_pickup(3), 0.0)
    with pytest.raises(LocalProtocolError, match="held"):
        world.local(_pickup(3, 1), 0.0)


def test_third_party_conflict_frees_item() -> None:
    world = WorldState(self_id=1, memory=4.0)
    assert world.remote(2, _pickup(9), 0.0) == (True, [])
    assert world.holder(9) == 2
    _, undone = world.remote(3, _pickup(9), 0.0)
    assert [a for a, _ in undone] == [2, 3]
    assert world.holder(9) is None


def test_late_copy_after_rollback_is_ignored() -> None:
    world = WorldState(self_id=1, memory=4.0)
    assert world.rollback(2, _pickup(9), 0.0)  # rollback learnt before the pickup itself
    assert world.remote(2, _pickup(9), 0.1) == (False, [])
    assert world.holder(9) is None
    assert not world.rollback(2, _pickup(9), 0.2)  # once only


def test_duplicates_applied_once_until_forgotten() -> None:
    world = WorldState(self_id=1, memory=4.0)
    assert world.remote(2, _shot(1), 0.0) == (True, [])
    assert world.remote(2, _shot(1), 1.0) == (False, [])
    world.forget_old(4.5)
    assert world.remote(2, _shot(1), 4.5) == (True, [])


def test_rollback_of_holder_frees_item() -> None:
    world = WorldState(self_id=1, memory=4.0)
    world.remote(2, _pickup(9), 0.0)
    assert world.rollback(2, _pickup(9), 0.1)
    assert world.items() == {}
