"""Local rollback for who-shoots-whom (spec 000 §5.2.3)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.errors import ConfigError, LocalProtocolError
from lagless.replication.rollback_hits import DEFAULT_KILL_WINDOW, Kill, KillArbiter, KillDropReason

A, B, C, D = 1, 2, 3, 4


def test_default_window_is_the_umts_latency() -> None:
    assert DEFAULT_KILL_WINDOW == 0.170
    assert KillArbiter().window == 0.170


def test_spec_example() -> None:
    """B shoots C; within the window A's earlier shot at B arrives: only "A kills B" stands."""
    arbiter = KillArbiter()
    arbiter.submit(Kill(B, C, 10.00), now=10.05)
    assert arbiter.release(10.10) == []  # still held
    arbiter.submit(Kill(A, B, 9.98), now=10.15)
    assert arbiter.next_deadline() == pytest.approx(10.22)
    first = arbiter.release(10.22)
    assert [(d.kill, d.committed, d.reason) for d in first] == [
        (Kill(B, C, 10.00), False, KillDropReason.SHOOTER_DEAD)
    ]
    second = arbiter.release(10.32)
    assert [(d.kill, d.committed) for d in second] == [(Kill(A, B, 9.98), True)]
    assert arbiter.committed == 1
    assert arbiter.dropped() == {KillDropReason.SHOOTER_DEAD: 1}
    assert arbiter.held == 0


def test_kill_after_the_window_is_final() -> None:
    arbiter = KillArbiter(window=0.1)
    arbiter.submit(Kill(B, C, 10.0), now=10.0)
    assert [d.committed for d in arbiter.release(10.1)] == [True]
    arbiter.submit(Kill(A, B, 9.95), now=10.2)  # earlier, but too late to undo B's kill
    assert arbiter.late_conflicts == 1
    assert [d.committed for d in arbiter.release(10.3)] == [True]
    assert arbiter.committed == 2


def test_victim_already_dead() -> None:
    arbiter = KillArbiter()
    arbiter.submit(Kill(A, C, 5.0), now=5.1)
    arbiter.submit(Kill(B, C, 4.9), now=5.12)  # B got C first
    decisions = arbiter.release(6.0)
    assert [(d.kill.shooter, d.committed, d.reason) for d in decisions] == [
        (B, True, None),
        (A, False, KillDropReason.VICTIM_DEAD),
    ]


def test_trade() -> None:
    arbiter = KillArbiter()
    arbiter.submit(Kill(A, B, 3.0), now=3.05)
    arbiter.submit(Kill(B, A, 3.0), now=3.06)
    assert [d.committed for d in arbiter.release(4.0)] == [True, True]


def test_chain_reinstates_a_kill() -> None:
    """D kills A before A kills B, so B lives on and B's kill of C stands."""
    arbiter = KillArbiter()
    arbiter.submit(Kill(B, C, 2.0), now=2.05)
    arbiter.submit(Kill(A, B, 1.9), now=2.06)
    arbiter.submit(Kill(D, A, 1.8), now=2.07)
    decisions = {d.kill.shooter: d for d in arbiter.release(3.0)}
    assert decisions[D].committed
    assert decisions[A].reason is KillDropReason.SHOOTER_DEAD
    assert decisions[B].committed


def test_committed_death_and_respawn() -> None:
    arbiter = KillArbiter(window=0.0)
    arbiter.submit(Kill(A, B, 1.0), now=1.0)
    arbiter.release(1.0)
    arbiter.submit(Kill(B, C, 2.0), now=2.0)  # B is dead
    assert arbiter.release(2.0)[0].reason is KillDropReason.SHOOTER_DEAD
    arbiter.respawn(B, 3.0)
    arbiter.submit(Kill(B, C, 3.5), now=3.5)
    arbiter.submit(Kill(C, B, 2.5), now=3.5)  # B was still dead at 2.5 s
    decisions = arbiter.release(3.5)
    assert [(d.kill.shooter, d.reason) for d in decisions] == [
        (C, KillDropReason.VICTIM_DEAD),
        (B, None),
    ]


def test_bad_input() -> None:
    with pytest.raises(ConfigError):
        KillArbiter(window=-0.1)
    with pytest.raises(LocalProtocolError):
        KillArbiter().submit(Kill(A, A, 1.0), now=1.0)
    with pytest.raises(LocalProtocolError):
        KillArbiter().submit(Kill(A, B, float("nan")), now=1.0)


kills = st.lists(
    st.tuples(st.integers(0, 4), st.integers(0, 4), st.integers(0, 10_000)).filter(
        lambda k: k[0] != k[1]
    ),
    max_size=12,
    unique_by=lambda k: k[2],  # distinct timestamps: no ties, whose order is by arrival
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(kills, st.randoms(use_true_random=False))
def test_outcome_within_the_window_does_not_depend_on_arrival_order(
    drawn: list[tuple[int, int, int]], rng: random.Random
) -> None:
    """All kills inside one window: the committed set is the causal one, whatever the order."""
    ordered = [Kill(a, b, t / 1000.0) for a, b, t in drawn]
    shuffled = ordered[:]
    rng.shuffle(shuffled)
    outcomes = []
    for arrival in (ordered, shuffled):
        arbiter = KillArbiter(window=100.0)
        for i, kill in enumerate(arrival):
            arbiter.submit(kill, now=i * 0.001)
        decisions = arbiter.release(1000.0)
        assert len(decisions) == len(drawn)
        outcomes.append({d.kill for d in decisions if d.committed})
    assert outcomes[0] == outcomes[1]
    dead: dict[int, float] = {}
    for kill in sorted(ordered, key=lambda k: k.time):  # the causal reference
        if dead.get(kill.shooter, math.inf) < kill.time or kill.victim in dead:
            continue
        dead[kill.victim] = kill.time
    assert outcomes[0] == {k for k in ordered if dead.get(k.victim) == k.time}
