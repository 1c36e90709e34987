"""Several rollback players falling silent at once (``lagless.sync.rollback``, dropping).

Every run goes through the deterministic harness (``lagless.sync.harness``: simulated links
with loss and jitter, the transport's connections, seeded phases); a player "dies" by no longer
ticking, sending or hearing anything from a given second of its own clock on. Before it dies,
its datagrams to some peers may be lost on purpose (``mute``), so the survivors hold different
amounts of its inputs and must relay them to each other.

What every test checks on the survivors (``_check_survivors``): each one settled each dead
player's drop on the same first neutral frame; every frame's confirmed checksum they share (one
per frame: ``checksum_interval=1``) is the same on all of them, from well before the drops to
the end; none saw a desync; and they went on at full speed for at least 5 s after the last drop
settled.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs
from lagless.sync.contract import Outgoing, SyncStats
from lagless.sync.harness import HarnessConfig, HarnessResult, run_keeping_peers
from lagless.sync.inputs import (
    MAX_INPUT_BYTES,
    DropNotice,
    decode_rollback_packet,
    encode_drop_report,
)
from lagless.sync.rollback import RollbackPeer

FRAME_RATE = 60.0
KNOBS: Mapping[str, Any] = {"input_delay": 2, "max_prediction": 8, "checksum_interval": 1}
AFTER = 5.0
"""Seconds the survivors must run on after the last drop settled."""


@dataclass
class _Fate:
    """When a player dies and from when its datagrams stop reaching some peers.

    It dies at ``dies_at`` seconds of its own clock or once it displays frame ``dies_at_frame``,
    whichever comes first; its datagrams to ``muted`` are lost from ``mute_from`` seconds on.
    """

    dies_at: float = float("inf")
    dies_at_frame: int = 2**31
    mute_from: float = float("inf")
    muted: frozenset[int] = field(default_factory=frozenset)


class _Mortal:
    """A rollback player that stops ticking, sending and hearing when its ``_Fate`` says so."""

    def __init__(self, inner: RollbackPeer[ArenaState], fate: _Fate) -> None:
        self.inner = inner
        self.fate = fate
        self.now = 0.0
        self.dead = False

    @property
    def alive(self) -> bool:
        if not self.dead:
            fate = self.fate
            self.dead = self.now >= fate.dies_at or self.inner.displayed_frame >= fate.dies_at_frame
        return not self.dead

    @property
    def peer(self) -> int:
        return self.inner.peer

    @property
    def peers(self) -> int:
        return self.inner.peers

    @property
    def frame_period(self) -> float:
        return self.inner.frame_period if self.alive else 1.0 / FRAME_RATE

    @property
    def displayed_frame(self) -> int:
        return self.inner.displayed_frame

    @property
    def displayed_state(self) -> ArenaState:
        return self.inner.displayed_state

    @property
    def stats(self) -> SyncStats:
        return self.inner.stats

    def tick(self, now: float, local_input: bytes) -> None:
        self.now = now
        if self.alive:
            self.inner.tick(now, local_input)

    def receive(self, source: int, payload: bytes, now: float) -> None:
        self.now = max(self.now, now)
        if self.alive:
            self.inner.receive(source, payload, now)

    def outgoing(self) -> list[Outgoing]:
        out = self.inner.outgoing()
        if self.now < self.fate.mute_from:
            return out
        return [o for o in out if o.destination not in self.fate.muted]


def _bots(seed: int) -> Any:
    bots = [ScriptedInputs(p, seed) for p in range(8)]
    return lambda peer, tick: bots[peer].at_frame(tick)


def _run(
    players: int,
    fates: Mapping[int, _Fate],
    *,
    seed: int,
    loss: float = 0.15,
    profile: str = "l40j20",
    duration: float = 9.0,
) -> tuple[HarnessResult, list[RollbackPeer[ArenaState]]]:
    """Run ``players`` rollback players over the harness, each meeting its fate."""
    game = Arena(players, entities=8)
    config = HarnessConfig(
        algorithm="rollback",
        peers=players,
        profile=profile,
        loss=loss,
        duration=duration,
        drain=0.0,
        frame_rate=FRAME_RATE,
        seed=seed,
        knobs=KNOBS,
    )

    def make(peer: int, rng: random.Random) -> _Mortal:
        del rng
        inner: RollbackPeer[ArenaState] = RollbackPeer(
            game, peer=peer, peers=players, frame_period=1.0 / FRAME_RATE, **KNOBS
        )
        return _Mortal(inner, fates.get(peer, _Fate()))

    result, mortals = run_keeping_peers(config, game, _bots(seed), make)
    return result, [m.inner for m in mortals]


def _check_survivors(
    peers: Sequence[RollbackPeer[ArenaState]], dead: set[int], result: HarnessResult
) -> dict[int, int]:
    """Assert what the module docstring lists; return the agreed drop frame of each dead player."""
    survivors = [p for p in peers if p.peer not in dead]
    drops = [p.dropped for p in survivors]
    assert all(set(d) == dead for d in drops), drops
    assert all(d == drops[0] for d in drops), drops  # the same drop frame on every survivor
    for peer in survivors:
        assert peer.stats.desyncs == [], (peer.peer, peer.stats.desyncs[:5])
    tables = [p.confirmed_checksums for p in survivors]
    shared = set(tables[0]).intersection(*tables[1:])
    last_drop = max(drops[0].values())
    # every frame from before the deaths to the end, and on each the same checksum everywhere
    assert min(shared) <= max(0, min(drops[0].values()) - 30)
    assert max(shared) >= last_drop + AFTER * FRAME_RATE
    for frame in range(min(shared), max(shared) + 1):
        assert frame in shared, frame
        sums = {t[frame] for t in tables}
        assert len(sums) == 1, (frame, sums)
    # full speed once every drop settled: the survivors kept displaying a frame per tick
    for index, peer in enumerate(peers):
        if peer.peer in dead:
            continue
        record = result.records[index]
        settled_at = next(
            t for t, f in zip(record.times, record.frames, strict=True) if f > last_drop + 30
        )
        late = [(t, f) for t, f in zip(record.times, record.frames, strict=True) if t >= settled_at]
        assert late[-1][0] - late[0][0] >= AFTER
        assert late[-1][1] - late[0][1] >= 0.9 * FRAME_RATE * (late[-1][0] - late[0][0])
    return drops[0]


def _others(players: int, *excluded: int) -> frozenset[int]:
    return frozenset(range(players)) - set(excluded)


@pytest.mark.parametrize(("players", "loss", "seed"), [(4, 0.15, 1), (6, 0.2, 2)])
def test_two_players_die_at_the_same_frame(players: int, loss: float, seed: int) -> None:
    """Players 1 and 3 die after frame 59; the last 0.25 s of 1's datagrams reached only 3.

    Player 3 confirmed frames with inputs of player 1 that no survivor holds, and its checksums
    of them reached the survivors: those must not count once 3 is dropped, and the survivors
    must agree on where 1's inputs end without either of the dead.
    """
    fates = {
        1: _Fate(dies_at_frame=60, mute_from=0.75, muted=_others(players, 1, 3)),
        3: _Fate(dies_at_frame=60),
    }
    result, peers = _run(players, fates, seed=seed, loss=loss)
    drops = _check_survivors(peers, {1, 3}, result)
    assert 40 <= drops[1] <= 62
    assert 55 <= drops[3] <= 62


@pytest.mark.parametrize(("players", "loss", "seed"), [(4, 0.1, 3), (6, 0.15, 4)])
def test_two_players_die_five_frames_apart(players: int, loss: float, seed: int) -> None:
    """Player 0 dies at 1 s, player 2 five frames later; each last reached only one survivor.

    Five frames of time: the others stall once their prediction window runs past the inputs
    of player 0 they hold, so player 2 may die on a frame it already displayed.
    """
    fates = {
        0: _Fate(dies_at=1.0, mute_from=0.8, muted=_others(players, 0, 1)),
        2: _Fate(dies_at=1.0 + 5 / FRAME_RATE, mute_from=0.9, muted=_others(players, 2, 3)),
    }
    result, peers = _run(players, fates, seed=seed, loss=loss)
    drops = _check_survivors(peers, {0, 2}, result)
    # between the frames every survivor held (mutes from 0.8 s) and the window past the deaths
    assert all(0.8 * FRAME_RATE <= frame <= 1.1 * FRAME_RATE + 10 for frame in drops.values())


@pytest.mark.parametrize(("players", "loss", "seed"), [(4, 0.15, 5), (6, 0.2, 6)])
def test_a_player_dies_while_relaying_the_inputs_of_a_dead_one(
    players: int, loss: float, seed: int
) -> None:
    """The last player dies at 1 s; its last 0.25 s reached only the one before it (the relay).

    The relay's datagrams stop reaching player 1 (and 2 of 6) at 0.84 s, so those survivors
    drop it at 2.84 s, just as the drop of the first begins; the relay reports what it holds to
    the others and dies at 2.9 s. The survivors that heard its report hold the first one's
    inputs about 15 frames further than those that did not, and must all settle on that.
    """
    first, relay = players - 1, players - 2
    cut = frozenset({1, 2}) if players > 4 else frozenset({1})
    fates = {
        first: _Fate(dies_at=1.0, mute_from=0.75, muted=_others(players, first, relay)),
        relay: _Fate(dies_at=2.9, mute_from=0.84, muted=cut),
    }
    result, peers = _run(players, fates, seed=seed, loss=loss)
    drops = _check_survivors(peers, {first, relay}, result)
    assert drops[first] >= 58  # the relay's holding, not the survivors' own (about 45)


def test_eight_players_three_deaths() -> None:
    """Players 5 and 7 die at 1 s (7's last 0.25 s reached only 6); 6 dies at 2.9 s, relaying."""
    fates = {
        7: _Fate(dies_at=1.0, mute_from=0.75, muted=_others(8, 7, 6)),
        5: _Fate(dies_at=1.0),
        6: _Fate(dies_at=2.9, mute_from=0.84, muted=frozenset({1, 2})),
    }
    result, peers = _run(8, fates, seed=9, loss=0.1)
    drops = _check_survivors(peers, {5, 6, 7}, result)
    assert drops[7] >= 58


@settings(max_examples=8, deadline=None, derandomize=True, database=None)
@given(
    players=st.integers(3, 5),
    pair=st.lists(st.integers(0, 4), min_size=2, max_size=2, unique=True),
    first=st.floats(0.6, 1.2),
    later=st.floats(0.0, 2.4),
    leads=st.tuples(st.floats(0.0, 0.3), st.floats(0.0, 0.3)),
    cuts=st.tuples(st.integers(0, 31), st.integers(0, 31)),
    seed=st.integers(0, 1000),
)
def test_any_two_deaths_leave_the_survivors_in_agreement(
    players: int,
    pair: list[int],
    first: float,
    later: float,
    leads: tuple[float, float],
    cuts: tuple[int, int],
    seed: int,
) -> None:
    """Two random players die at random times, each muted to a random set shortly before."""
    dead = [p % players for p in pair]
    if dead[0] == dead[1]:
        dead[1] = (dead[1] + 1) % players
    times = (first, first + later)
    fates = {
        player: _Fate(
            dies_at=when,
            mute_from=when - lead,
            muted=frozenset(p for p in range(players) if cut >> p & 1) - {player},
        )
        for player, when, lead, cut in zip(dead, times, leads, cuts, strict=True)
    }
    result, peers = _run(players, fates, seed=seed, loss=0.15, duration=times[1] + 8.0)
    _check_survivors(peers, set(dead), result)


def _cut(players: int, groups: Sequence[set[int]], at: float) -> dict[int, _Fate]:
    """Fates that cut every link between two groups, both ways, from ``at`` seconds on."""
    return {
        p: _Fate(mute_from=at, muted=frozenset(range(players)) - group)
        for group in groups
        for p in group
    }


def test_a_partition_splits_the_survivors_into_sessions_that_each_agree() -> None:
    """Player 5 dies at 1 s (its last 0.25 s reached only 0); {0, 1, 2} and {3, 4} lose each
    other at 1.2 s. Each side drops the other side and 5, agrees within itself and goes on;
    the sides may settle 5 on different frames (here they do: only 0 held its last inputs)."""
    fates = _cut(6, [{0, 1, 2}, {3, 4}], at=1.2)
    fates[5] = _Fate(dies_at=1.0, mute_from=0.75, muted=frozenset({1, 2, 3, 4}))
    result, peers = _run(6, fates, seed=7, duration=10.0)
    left = _check_survivors(peers, {3, 4, 5}, result)
    right = _check_survivors(peers, {0, 1, 2, 5}, result)
    assert left[5] > right[5]


def test_a_survivor_cut_off_during_the_agreement_is_dropped_by_the_others() -> None:
    """Player 4 dies at 1 s; player 3 loses every link at 2.9 s, while 4's drop is agreed.

    The others cannot hear 3's report, so they wait until 3 is silent for 2 s, drop it too and
    settle both among themselves; 3 drops everyone and goes on alone.
    """
    fates = _cut(5, [{0, 1, 2, 4}, {3}], at=2.9)
    fates[4] = _Fate(dies_at=1.0, mute_from=0.8, muted=frozenset({0}))
    result, peers = _run(5, fates, seed=8, duration=11.0)
    _check_survivors(peers, {3, 4}, result)
    alone = peers[3]
    assert set(alone.dropped) == {0, 1, 2, 4}
    assert alone.displayed_frame > max(alone.dropped.values()) + AFTER * FRAME_RATE


@settings(max_examples=200)
@given(
    player=st.integers(0, 7),
    view=st.integers(0, 255),
    last=st.integers(-1, 2**31 - 1),
    start=st.integers(0, 2**32 - 1),
    inputs=st.lists(st.binary(max_size=MAX_INPUT_BYTES), max_size=300),
)
def test_drop_reports_round_trip(
    player: int, view: int, last: int, start: int, inputs: list[bytes]
) -> None:
    view &= ~(1 << player)
    data, carried = encode_drop_report(
        player=player, view=view, last=last, start=start, inputs=inputs
    )
    assert data[0] == 0xB5
    assert len(data) <= 1200
    assert carried <= 255
    expected = DropNotice(player, False, last, start, tuple(inputs[:carried]), view)
    assert decode_rollback_packet(data) == expected
    assert decode_rollback_packet(data[:-1]) is None
    assert decode_rollback_packet(data + b"\x00") is None


def test_bad_drop_reports_are_refused() -> None:
    with pytest.raises(ValueError, match="view"):
        encode_drop_report(player=2, view=0b100, last=0, start=0, inputs=[])
    with pytest.raises(ValueError, match="view"):
        encode_drop_report(player=2, view=256, last=0, start=0, inputs=[])
    with pytest.raises(ValueError, match="player"):
        encode_drop_report(player=8, view=1, last=0, start=0, inputs=[])
    with pytest.raises(ValueError, match="last"):
        encode_drop_report(player=1, view=1, last=-2, start=0, inputs=[])
    data, _ = encode_drop_report(player=1, view=0b1, last=5, start=0, inputs=[])
    assert decode_rollback_packet(data[:2] + b"\x03" + data[3:]) is None  # view holds player 1


@settings(max_examples=300)
@given(st.binary(max_size=200))
def test_decoding_any_drop_report_never_raises(body: bytes) -> None:
    packet = decode_rollback_packet(b"\xb5" + body)
    if packet is not None:
        assert isinstance(packet, DropNotice)
        assert packet.view is not None
        assert not packet.view >> packet.player & 1
        assert not packet.done
        assert packet.last >= -1
        assert 0 <= packet.player < 8
        assert len(packet.inputs) <= min(255, len(body))


def test_a_report_whose_view_leaves_out_its_sender_or_receiver_is_refused() -> None:
    game = Arena(4)
    peer = RollbackPeer(game, peer=0, peers=4)
    without_sender, _ = encode_drop_report(player=3, view=0b0101, last=2, start=0, inputs=[])
    without_me, _ = encode_drop_report(player=3, view=0b0110, last=2, start=0, inputs=[])
    peer.receive(1, without_sender, 0.0)
    peer.receive(1, without_me, 0.0)
    assert peer.rejected == 2
    assert peer.disconnected == []
    fine, _ = encode_drop_report(player=3, view=0b0111, last=2, start=0, inputs=[])
    peer.receive(1, fine, 0.0)
    assert peer.disconnected == [3]
