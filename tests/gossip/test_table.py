"""Peer table (spec 002 §3.12): avatar ids, 10-s forgetting, departures, bounded size."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from lagless.errors import LocalProtocolError
from lagless.gossip import AvatarState, PeerTable, avatar_id_for


def test_avatar_id_is_crc32_of_address() -> None:
    assert avatar_id_for(("10.0.0.1", 4000)) == zlib.crc32(bytes([10, 0, 0, 1, 0x0F, 0xA0]))
    v6 = avatar_id_for(("::1", 1))
    assert v6 == zlib.crc32(bytes(15) + b"\x01" + b"\x00\x01")
    assert avatar_id_for(("10.0.0.1", 4001)) != avatar_id_for(("10.0.0.1", 4000))
    with pytest.raises(LocalProtocolError):
        avatar_id_for(("example.org", 1))
    with pytest.raises(LocalProtocolError):
        avatar_id_for(("10.0.0.1", 70000))


def test_forgets_after_timeout() -> None:
    table = PeerTable(self_id=0, forget_timeout=10.0, max_peers=10)
    table.touch(1, 100.0)
    table.touch(2, 105.0)
    assert table.next_expiry() == 110.0
    assert table.expire(109.999) == []
    assert table.expire(110.0) == [1]
    assert 1 not in table
    assert 2 in table
    table.touch(2, 112.0)  # heard again: the clock restarts
    assert table.expire(120.0) == []
    assert table.expire(122.0) == [2]
    assert table.next_expiry() is None


def test_departed_not_resurrected() -> None:
    table = PeerTable(self_id=0, forget_timeout=10.0, max_peers=10)
    record = table.touch(1, 0.0)
    assert record is not None
    table.set_address(record, ("10.0.0.1", 1))
    table.remove(1, 1.0, departed=True)
    assert table.touch(1, 5.0) is None
    assert table.by_address(("10.0.0.1", 1)) is None
    assert table.touch(1, 11.5) is not None  # the departure is forgotten after the timeout too
    table.remove(1, 12.0, departed=True)
    table.revive(1)
    assert table.touch(1, 12.5) is not None


def test_never_stores_self_and_is_bounded() -> None:
    table = PeerTable(self_id=7, forget_timeout=10.0, max_peers=2)
    assert table.touch(7, 0.0) is None
    assert table.touch(1, 0.0) is not None
    assert table.touch(2, 0.0) is not None
    assert table.touch(3, 0.0) is None
    assert len(table) == 2
    assert table.touch(1, 1.0) is not None  # known ids still update when full


def test_address_index_follows_moves() -> None:
    table = PeerTable(self_id=0, forget_timeout=10.0, max_peers=10)
    record = table.touch(1, 0.0)
    assert record is not None
    table.set_address(record, ("10.0.0.1", 1))
    table.set_address(record, ("10.0.0.2", 1))
    assert table.by_address(("10.0.0.1", 1)) is None
    assert table.by_address(("10.0.0.2", 1)) is record


def test_columns_follow_records() -> None:
    table = PeerTable(self_id=0, forget_timeout=10.0, max_peers=1000)
    records = [table.touch(aid, 0.0) for aid in range(1, 200)]
    assert all(r is not None for r in records)
    for r in records[::2]:
        assert r is not None
        table.set_address(r, ("10.0.0.1", r.avatar_id))
        avatar = AvatarState(avatar_id=r.avatar_id, position=(r.avatar_id, 2, 3), facing=(1, 0, 0))
        table.set_avatar(r, avatar, 5)
        table.set_bandwidth(r, 10 * r.avatar_id)
    table.remove(3, 1.0, departed=False)
    late = table.touch(500, 1.0)  # reuses the freed slot of 3, yet is last in table order
    assert late is not None
    table.set_address(late, ("10.0.0.2", 1))
    slots = table.candidate_slots({5})
    got = [table.record_at(int(s)).avatar_id for s in slots]
    expected = [r.avatar_id for r in table if r.address is not None and r.avatar_id != 5]
    assert got == expected
    assert got[-1] == 500
    pos, has_pos, bw = table.columns()
    for s, aid in zip(slots, got, strict=True):
        record = table.get(aid)
        assert record is not None
        assert record.avatar_number == (5 if aid != 500 else -1)
        assert has_pos[s] == (aid != 500)
        if aid != 500:
            assert tuple(pos[s]) == (aid, 2.0, 3.0)
            assert bw[s] == 10 * aid
        else:
            assert np.isnan(bw[s])


def test_changes_are_tracked() -> None:
    table = PeerTable(self_id=0, forget_timeout=10.0, max_peers=10)
    a, b = table.touch(1, 0.0), table.touch(2, 0.0)
    assert a is not None
    assert b is not None
    assert table.take_changed() == {a.slot, b.slot}
    assert table.take_changed() == set()
    version = table.bandwidth_version
    table.set_bandwidth(a, 500)
    assert table.bandwidth_version > version
    version = table.bandwidth_version
    table.set_bandwidth(a, 500)  # the same advertisement again is no change
    assert table.bandwidth_version == version
    assert table.take_changed() == set()
    table.set_address(b, ("10.0.0.2", 2))
    table.set_avatar(a, AvatarState(avatar_id=1, position=(1, 2, 3), facing=(1, 0, 0)), 4)
    assert table.take_changed() == {a.slot, b.slot}
    assert list(np.flatnonzero(table.addressable())) == [b.slot]
    slot = a.slot
    table.remove(1, 1.0, departed=False)
    assert table.bandwidth_version > version
    assert table.take_changed() == {slot}
    assert np.isnan(table.columns()[2][slot])  # a freed slot advertises nothing


def test_expiry_scan_is_lazy_but_exact() -> None:
    table = PeerTable(self_id=0, forget_timeout=10.0, max_peers=10)
    table.touch(1, 0.0)
    table.touch(2, 4.0)
    table.touch(1, 6.0)  # 1 heard again; the cached bound (10 s) is now early, never late
    assert table.next_expiry() == 10.0
    assert table.expire(10.0) == []
    assert table.next_expiry() == 14.0  # recomputed by the scan
    assert table.expire(14.0) == [2]
    assert table.expire(16.0) == [1]
