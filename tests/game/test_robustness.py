"""A client that disconnects, times out or sends garbage mid-match never stops the server or the
other players (issue 14 "Bad input")."""

from __future__ import annotations

import random

import pytest

from lagless.game import Avatar, PlayerLeft
from lagless.netsim import LinkConfig
from lagless.replication import SnapshotReceived

from .helpers import PORT, SERVER, SimMatch


def test_garbage_timeout_and_disconnect_mid_match() -> None:
    rng = random.Random(11)
    match = SimMatch(link=LinkConfig(latency=0.03, loss=0.02))
    steady = match.add_client(1)
    quitter = match.add_client(2)
    sleeper = match.add_client(3)
    vandal = match.add_client(4)
    match.run(1.5)
    assert len(match.game.clients) == 4
    steady.poke(lambda c: c.move((1.0, 0.0), 0.0))
    attacker = match.network.host("10.0.1.4")
    for step in range(60):
        # unauthenticated junk at the server's port from the vandal's host
        junk = rng.randbytes(rng.randint(0, 1300))
        attacker.send(junk, ("10.0.1.4", 5555), (SERVER, PORT))
        # authenticated junk on every channel of the vandal's own connection
        for channel in (0, 2, 3):
            vandal.poke(
                lambda c, ch=channel: c.transport.send(ch, rng.randbytes(rng.randint(1, 300)))
            )
        if step == 10:
            quitter.poke(lambda c: c.disconnect())
        if step == 20:
            sleeper.close()  # stops answering: the server times it out
        dx = 1.0 if step % 20 < 10 else -1.0
        steady.poke(lambda c, dx=dx: c.move((dx, 0.3), 0.0))
        match.run(0.2)
    match.run(2.0)
    reasons = {e.info.client: e.reason for e in match.server_events if isinstance(e, PlayerLeft)}
    assert reasons[2] == "client_disconnected"
    assert reasons[3] == "timed_out"
    assert 1 in [c.client for c in match.game.clients]
    assert (
        match.game.replication.drops["malformed"] + match.game.replication.drops["unknown_type"] > 0
    )
    # the steady player's match went on: snapshots all along, replica in step with the server
    snapshots = [e for e in match.client_events[0] if isinstance(e, SnapshotReceived)]
    assert len(snapshots) > 150  # 20 Hz for ~14 s, some lost
    server_avatar = match.game.avatar_of(1)
    assert server_avatar is not None
    replica = steady.obj.world.find(server_avatar.id)
    assert isinstance(replica, Avatar)
    assert replica.pos == pytest.approx(server_avatar.pos, abs=0.5)
    assert match.game.ticks > 60 * 13
