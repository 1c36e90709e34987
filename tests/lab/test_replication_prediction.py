"""``replication/prediction``: prediction hides the RTT that a waiting client shows."""

from __future__ import annotations

import pytest

from lagless.lab import run
from lagless.lab.experiments.replication_prediction import SPEC, KeysCodec, StateCodec
from lagless.wire import DecodeError
from lagless.world import EntityState, Keys


def test_codecs_round_trip_and_reject() -> None:
    keys = Keys.UP | Keys.LEFT
    assert KeysCodec().decode(KeysCodec().encode(keys)) == keys
    state = EntityState(x=1.0, y=-2.0, heading=0.5, vx=3.0, vy=4.0, ax=0.1, ay=0.2, turn_rate=1.0)
    assert StateCodec().decode(StateCodec().encode(state)) == state
    for bad in (b"", b"\x80", b"\x01\x02"):
        with pytest.raises(DecodeError):
            KeysCodec().decode(bad)
    with pytest.raises(DecodeError):
        StateCodec().decode(b"\x00" * 63)


def test_quick_run() -> None:
    result = run(SPEC, seed=0, quick=True, out=None)
    rows = result.tables["runs"]
    assert len(rows) == 6  # 3 RTTs x 2 losses
    for row in rows:
        rtt = float(row["rtt_ms"])  # type: ignore[arg-type]
        assert row["input_delay_ms_predicted_mean"] == 0.0  # drawn in the frame of the input
        waiting = row["input_delay_ms_waiting_mean"]
        assert isinstance(waiting, float)
        assert rtt + 20.0 <= waiting <= rtt + 60.0  # one round trip plus the tick phase
        predicted, late = row["display_error_m_predicted_mean"], row["display_error_m_waiting_mean"]
        assert isinstance(predicted, float)
        assert isinstance(late, float)
        assert predicted < late / 5.0
        mispredictions = row["mispredictions"]
        assert isinstance(mispredictions, int)
        assert mispredictions > 0  # the server's pushes
        assert row["inputs_skipped"] == 0  # redundancy covers 10 % loss
    pending = result.metrics["pending_inputs_mean_rtt100_loss0"]
    assert pending is not None
    assert 5.0 <= pending <= 7.0  # spec 000 §2.10: about 5 at 50 fps and 100 ms RTT
    errors = [r["correction_m_mean"] for r in rows if r["loss"] == 0.0]
    assert errors == sorted(errors)  # a push is found out later at a longer RTT
