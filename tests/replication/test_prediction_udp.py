"""Client-side prediction and reconciliation across two processes over real UDP on loopback.

Issue 13 #7 over real UDP: the client (``tests/replication/prediction_peer.py client``) predicts
its inputs at once and sends them with redundancy on an unreliable channel; the server process
applies them in order at its tick and reports back; the client reconciles with every report.
"""

from __future__ import annotations

import pytest

from tests.processes import run_server_and_clients
from tests.replication.prediction_peer import INPUTS, quantized_path


def test_prediction_reconciles_with_server_over_loopback() -> None:
    summary, (seen,) = run_server_and_clients("tests.replication.prediction_peer", [[]])
    assert seen.get("done"), seen  # every input acknowledged before the deadline
    assert summary["ended"] == "client_disconnected"
    # The server applied every input once, in order, none skipped (loopback loses nothing).
    assert summary["applied"] == list(range(INPUTS))
    stats = summary["stats"]
    assert stats["inputs_applied"] == INPUTS
    assert stats["inputs_skipped"] == 0
    assert stats["packets_malformed"] == 0
    assert stats["inputs_too_far"] == 0
    assert summary["other_channels"] == 0
    # Its authority is the walk the inputs describe, computed here independently.
    expected = quantized_path()
    assert summary["state"] == pytest.approx(expected, abs=1e-9)
    # The client reconciled: nothing pending, its prediction is the server's state, and a
    # deterministic step never mispredicted.
    mine = seen["stats"]
    assert mine["inputs"] == INPUTS
    assert mine["pending"] == 0
    assert mine["reports"] >= 1
    assert mine["reports_malformed"] == 0
    assert mine["mispredictions"] == 0
    assert mine["misprediction_error_max"] == 0.0
    assert mine["pending_overflows"] == 0
    assert seen["rejected_reports"] == mine["reports_stale"]
    assert seen["state"] == pytest.approx(summary["state"], abs=1e-9)
    assert seen["display"] == pytest.approx(summary["state"], abs=1e-6)
    assert seen["max_pending"] >= 1
