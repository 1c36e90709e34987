"""A replication server and two clients as separate processes over real UDP on loopback.

Issue 13 "Done when": spawn, move, reference, destroy and events across processes (each process
is ``tests/replication/udp_peer.py``).
"""

from __future__ import annotations

import pytest

from tests.processes import run_server_and_clients


def test_server_and_two_clients_over_loopback() -> None:
    summary, seen = run_server_and_clients("tests.replication.udp_peer", [[str(n)] for n in (1, 2)])
    station, ship = summary["station"], summary["ship"]
    owner = min(s["client"] for s in seen)
    for client in seen:
        assert client["announced"][:2] == [["Station", station], ["Ship", ship]]
        assert client["destroyed"] == [["Station", station], ["Ship", ship]]
        assert client["ship_pos"] == pytest.approx(summary["ship_pos"], abs=0.005)  # 1 cm codes
        assert client["dock_after_destroy"] == -1  # the reference died with the station
        assert ["Fire", None, True] in client["events"]
        assert client["role"] == ("owner" if client["client"] == owner else "proxy")
    owner_seen = next(s for s in seen if s["client"] == owner)
    assert owner_seen["dock_name"] == "alpha"
    assert summary["aim"] == 0.5  # the owner's write reached the authority
    assert sorted(summary["events"]) == sorted(["Ping", s["client"]] for s in seen)
    assert summary["drops"] == {}
