"""A lag-compensated hit across processes over real UDP on loopback (issue 13 #8).

A shooter client (``tests/game/shooting_peer.py client``) fires at a strafing bot of a game server
process (``... server``): its honest shots, judged at the time it saw the bot, are accepted and
damage the bot; the same shot stamped in the future or far in the past is rejected.
"""

from __future__ import annotations

from tests.game.shooting_peer import PLAN
from tests.processes import run_server_and_clients


def test_lag_compensated_hit_and_forged_claims_over_loopback() -> None:
    summary, (seen,) = run_server_and_clients("tests.game.shooting_peer", [[]])
    assert seen["events"] == ["established"]
    assert seen["fired"] == list(PLAN)
    assert summary["left"]
    assert summary["drops"] == {}  # no shot fell to the cooldown: every one was judged
    verdicts = summary["verdicts"]
    assert len(verdicts) == len(PLAN)
    honest = [v for kind, v in zip(PLAN, verdicts, strict=True) if kind == "honest"]
    outcome = [(v["accepted"], v["reason"]) for v in verdicts]
    # Forged time stamps are rejected for what they claim, whatever the aim.
    assert outcome[1] == (False, "from_future")
    assert outcome[3] == (False, "too_old")
    # Honest shots stand, judged in the past: the client's view delay (0.1 s) plus half the RTT.
    assert all(v["accepted"] and not v["blocked"] for v in honest), outcome
    assert all(0.05 <= v["rewind"] <= 0.6 for v in honest), honest
    assert len({round(v["bot_y"], 2) for v in verdicts}) >= 3  # a moving target
    assert summary["accepted"] == len(honest)
    # The damage reached the bot and, replicated, the shooter.
    damage = 25 * len(honest)
    assert summary["bot_hp"] == 100 - damage
    assert seen["hits"] == [[25, 100 - 25 * (i + 1)] for i in range(len(honest))]
