"""Peer table (spec 002 §3.12): avatar ids, 10-s forgetting, departures, bounded size."""

from __future__ import annotations

import zlib

import pytest

from lagless.errors import LocalProtocolError
from lagless.gossip import PeerTable, avatar_id_for


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
