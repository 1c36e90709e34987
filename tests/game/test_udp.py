"""A game server and two clients as separate processes over real UDP on loopback.

Connect, move, kick and disconnect across processes (each is ``tests/game/udp_peer.py``).
"""

from __future__ import annotations

from tests.processes import run_server_and_clients


def test_connect_move_kick_disconnect_over_loopback() -> None:
    summary, (first, second) = run_server_and_clients(
        "tests.game.udp_peer", [[str(n)] for n in (1, 2)]
    )
    assert sorted(summary["joined"]) == [[1, ""], [2, ""]]
    assert summary["moved"] >= 1.0
    assert sorted(summary["left"]) == [[1, "client_disconnected"], [2, "kicked"]]
    assert summary["drops"] == {}
    assert second["events"] == ["established", ["ended", "server_disconnected", "test"]]
    assert first["events"][:2] == ["established", "other_destroyed"]
    assert first["replica_x"] is not None
