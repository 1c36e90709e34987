"""``replication/x4-matrix`` (spec 003 §6.4) and the §7.3 convergence worked example (§7.2 #15)."""

from __future__ import annotations

import numpy as np
import pytest

from lagless.lab import run
from lagless.lab.experiments.replication_x4 import SPEC, P2PReceiver, jerk_rms
from lagless.smoothing import DisplayState, KinematicState, X4Config, X4Path, X4Sender


def test_worked_example() -> None:
    """p = 1000, v = 100, T = 0.2 s, client at 1010: target 1030, 200 m/s for 0.1 s, then 100."""
    path = X4Path(
        t0=5.0,
        start=DisplayState(t=5.0, x=1010.0, y=0.0),
        server=KinematicState(x=1000.0, vx=100.0),
        horizon=0.2,
        dr_order=1,
    )
    assert path.target[0] == pytest.approx(1030.0)  # 1000 + 100·0.2 + 100·0.1
    corrective = [path.at(5.0 + dt) for dt in (0.0, 0.03, 0.0999)]
    assert all(s.vx == pytest.approx(200.0) for s in corrective)  # (1030 - 1010) / 0.1
    assert not corrective[1].converged
    assert corrective[1].x == pytest.approx(1016.0)
    assert path.at(5.1).x == pytest.approx(1030.0)
    after = path.at(5.3)
    assert (after.x, after.vx, after.converged) == pytest.approx((1050.0, 100.0, True))
    ahead = X4Path(5.0, DisplayState(t=5.0, x=1040.0, y=0.0), path.server, 0.2, 1)
    assert ahead.at(5.05).vx == pytest.approx(-100.0)  # client ahead: moves back (not clamped)


def test_p2p_receiver_holds_the_last_position() -> None:
    sender, receiver = X4Sender(X4Config()), P2PReceiver()
    assert receiver.display(0.0) is None
    update = sender.update(0.0, KinematicState(x=3.0, y=4.0, vx=10.0))
    assert update is not None
    assert receiver.process_update(update.payload, 0.0, 0.0)
    held = receiver.display(0.5)
    assert held is not None
    assert (held.x, held.y, held.vx) == pytest.approx((3.0, 4.0, 0.0))


def test_jerk_of_a_cubic() -> None:
    t = np.linspace(0.0, 1.0, 201)
    assert jerk_rms(t, t**3, np.zeros_like(t)) == pytest.approx(6.0, rel=0.05)
    assert jerk_rms(t, 3.0 * t, 2.0 * t) == pytest.approx(0.0, abs=1e-6)


def test_quick_run_reproduces_every_stated_result() -> None:
    result = run(SPEC, seed=0, quick=True, out=None)
    checks = result.tables["checks"]
    assert all(row["holds"] for row in checks), [r["claim"] for r in checks if not r["holds"]]
    metrics = result.metrics
    assert metrics["checks_holding"] == metrics["checks_total"] == 8
    assert {row["run"] for row in result.tables["runs"]} == {
        "p2p-0",
        "x4-0",
        "p2p-1s",
        "x4-1s",
        "x4-horizon-1s",
    }
    for label in ("p2p_0", "x4_0", "p2p_1s", "x4_1s"):
        mean, rms, peak = (metrics[f"{label}_error_m_{k}"] for k in ("mean", "rms", "max"))
        assert mean is not None
        assert rms is not None
        assert peak is not None
        assert 0.0 < mean <= rms <= peak
