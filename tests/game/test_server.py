"""GameServer and GameClient over the simulated network (issue 14 item 1, spec 003 §5.4)."""

from __future__ import annotations

import math
import random

import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.game import (
    Avatar,
    ClientInfo,
    Collision,
    ConnectingFailed,
    ConnectionEnded,
    ConnectionEstablished,
    GameClient,
    GameConfig,
    GameServer,
    Hit,
    KillDecided,
    Killed,
    Level,
    PlayerLeft,
    PlayerRejected,
    ServerAnnouncement,
    ShotJudged,
)
from lagless.game.geometry import ConvexPolygon
from lagless.interest import AuraPolicy
from lagless.io.sim import SimEndpoint
from lagless.netsim import LinkConfig, Network, Scheduler
from lagless.replication import EventReceived, ObjectDestroyed
from lagless.testing import check_sans_io
from lagless.transport import (
    NetcodeClientConfig,
    NetcodeServerConfig,
    generate_connect_token,
    mark_user_data,
)

from .helpers import PORT, PROTOCOL_ID, SERVER, SimMatch

LINK = LinkConfig(latency=0.02)


def _of(events: list[object], kind: type) -> list:
    return [e for e in events if isinstance(e, kind)]


def _open_level() -> Level:
    """A 40 m x 20 m room with one wall block in the middle and two spawn points."""
    return Level(
        40.0, 20.0, [ConvexPolygon.rectangle(19.0, 0.0, 2.0, 8.0)], [(10.0, 10.0), (30.0, 10.0)]
    )


def test_accept_decision_client_list_and_callbacks() -> None:
    match = SimMatch(link=LINK, listen=False)
    seen: list[str] = []
    left: list[tuple[str, str]] = []

    def accept(info: ClientInfo) -> bool:
        seen.append(info.name)
        return info.name != "mallory"

    match.add_client(1, name="early")  # before listen: refused
    match.run(0.5)
    match.game.listen(
        accept,
        on_connect=lambda info: seen.append(f"+{info.name}"),
        on_disconnect=lambda info, why: left.append((info.name, why)),
    )
    match.add_client(2, name="alice")
    match.add_client(3, name="mallory")
    match.run(1.0)
    rejected = {e.info.name: e.reason for e in _of(match.server_events, PlayerRejected)}
    assert rejected == {"early": "not_listening", "mallory": "refused"}
    assert [c.name for c in match.game.clients] == ["alice"]
    assert seen == ["alice", "+alice", "mallory"]
    assert match.game.is_listening
    assert match.clients[1].obj.is_connected
    for refused in (0, 2):
        assert not match.clients[refused].obj.is_connected
        failed = _of(match.client_events[refused], ConnectingFailed)
        assert failed == [ConnectingFailed("server_disconnected")]
    match.game.stop_listening()
    match.add_client(4, name="late")
    match.run(1.0)
    assert [c.name for c in match.game.clients] == ["alice"]
    match.clients[1].poke(lambda c: c.disconnect())
    match.run(0.5)
    assert left == [("alice", "client_disconnected")]
    assert match.game.clients == []


def test_full_server_refuses() -> None:
    match = SimMatch(link=LINK, config=GameConfig(max_players=1))
    match.add_client(1)
    match.run(0.5)
    match.add_client(2)
    match.run(0.5)
    assert [e.reason for e in _of(match.server_events, PlayerRejected)] == ["full"]
    assert len(match.game.clients) == 1


def test_move_drives_the_owned_avatar_at_the_configured_speed() -> None:
    match = SimMatch(link=LINK, level=_open_level())
    a = match.add_client(1)
    b = match.add_client(2)
    match.run(1.0)
    assert _of(match.client_events[0], ConnectionEstablished)
    mine = a.obj.avatar
    assert mine is not None
    server_avatar = match.game.avatar_of(1)
    assert server_avatar is not None
    start = server_avatar.pos
    assert a.poke(lambda c: c.move((0.0, 3.0), 1.0)) is None  # steer length clipped to 1
    match.run(1.0)
    moved = server_avatar.pos[1] - start[1]
    # 6 m/s for ~1 s minus the input's trip (one client tick + 20 ms)
    assert 4.5 < moved < 6.01
    assert server_avatar.heading == pytest.approx(1.0, abs=0.01)
    a.poke(lambda c: c.move((0.0, 0.0), 1.0))
    match.run(0.5)
    replica = b.obj.world.find(server_avatar.id)
    assert isinstance(replica, Avatar)
    assert replica.pos == pytest.approx(server_avatar.pos, abs=0.011)
    assert server_avatar.pos[1] <= 20.0 - match.game.config.radius + 1e-9  # clamped to the map


def test_fixed_tick_rate_and_catch_up_limit() -> None:
    match = SimMatch(link=LINK, config=GameConfig(sim_rate=50.0, snapshot_rate=25.0))
    match.run(0.001)
    before = match.game.ticks
    match.run(2.0)
    assert match.game.ticks - before == pytest.approx(100, abs=1)
    game = match.game
    ran = game.move(match.now + 1.0)  # a one-second stall: 50 ticks due, 6 run
    assert ran == game.config.max_catch_up
    assert game.ticks_skipped >= 40


def test_walls_and_entities_collide() -> None:
    match = SimMatch(link=LINK, level=_open_level())
    a = match.add_client(1)
    b = match.add_client(2)
    match.run(1.0)
    pa, pb = match.game.avatar_of(1), match.game.avatar_of(2)
    assert pa is not None
    assert pb is not None
    first = min((pa, pb), key=lambda av: av.pos[0])
    left_client, right_client = (a, b) if first is pa else (b, a)
    # both run towards the wall block between them at y = 10 (the block spans y 0..8): they meet
    left_client.poke(lambda c: c.move((1.0, 0.0), 0.0))
    right_client.poke(lambda c: c.move((-1.0, 0.0), math.pi))
    match.run(3.0)
    r = match.game.config.radius
    gap = math.dist(pa.pos, pb.pos)
    assert gap >= 2 * r * math.cos(math.pi / 8) - 0.02  # octagons do not overlap
    collisions = [
        e for e in _of(match.client_events[0], EventReceived) if isinstance(e.event, Collision)
    ]
    assert collisions
    # now push one into the wall block from above
    left_client.poke(lambda c: c.move((0.0, -1.0), 0.0))
    right_client.poke(lambda c: c.move((0.0, 0.0), 0.0))
    match.run(0.2)
    left_avatar = match.game.avatar_of(1 if left_client is a else 2)
    assert left_avatar is not None
    left_client.poke(lambda c: c.move((1.0, -1.0), 0.0))
    match.run(3.0)
    x, y = left_avatar.pos
    inside = 19.0 < x < 21.0 and y < 8.0
    assert not inside


def _duel(match: SimMatch) -> tuple:
    a = match.add_client(1)
    b = match.add_client(2)
    match.run(1.5)
    shooter, victim = match.game.avatar_of(1), match.game.avatar_of(2)
    assert shooter is not None
    assert victim is not None
    return a, b, shooter, victim


def test_hits_take_hitpoints_and_a_kill_waits_for_the_rollback_window() -> None:
    level = Level(40.0, 20.0, [], [(10.0, 10.0), (20.0, 10.0)])
    match = SimMatch(link=LINK, level=level, seed=1)
    a, _b, shooter, victim = _duel(match)
    assert math.dist(shooter.pos, victim.pos) == pytest.approx(10.0)
    target = a.obj.world.find(victim.id)
    assert isinstance(target, Avatar)
    fired = 0
    while victim.hp > 0 and fired < 10:
        a.poke(lambda c: c.shoot(target, match.now))
        fired += 1
        match.run(0.3)  # blaster: 25 damage, 0.25 s cooldown
    assert fired == 4
    received = _of(match.client_events[1], EventReceived)
    hits = [e.event for e in received if isinstance(e.event, Hit)]
    assert [h.hp for h in hits] == [75, 50, 25]
    decided = _of(match.server_events, KillDecided)
    assert len(decided) == 1
    assert decided[0].decision.committed
    assert decided[0].decision.decided_at - decided[0].decision.kill.time >= 0.17
    kills = [
        e.event for e in _of(match.client_events[1], EventReceived) if isinstance(e.event, Killed)
    ]
    assert len(kills) == 1
    assert kills[0].victim.id == victim.id
    assert victim.dead
    match.run(2.5)  # respawn delay 2 s
    assert not victim.dead
    assert victim.hp == 100
    verdicts = [e.verdict for e in _of(match.server_events, ShotJudged)]
    assert all(v.accepted for v in verdicts)
    assert len(verdicts) == 4


def test_shots_through_walls_too_fast_or_missing_do_not_hit() -> None:
    wall = ConvexPolygon.rectangle(14.0, 5.0, 1.0, 10.0)
    level = Level(40.0, 20.0, [wall], [(10.0, 10.0), (20.0, 10.0)])
    match = SimMatch(link=LINK, level=level, seed=1)
    a, _b, _shooter, victim = _duel(match)
    target = a.obj.world.find(victim.id)
    a.poke(lambda c: c.shoot(target, match.now))
    match.run(0.05)
    a.poke(lambda c: c.shoot(target, match.now))  # within the cooldown
    match.run(0.5)
    a.poke(lambda c: c.shoot(target, match.now, direction=math.pi / 2))  # aimed away
    match.run(0.5)
    judged = _of(match.server_events, ShotJudged)
    assert [j.blocked for j in judged] == [True, False]
    assert judged[1].verdict.accepted is False
    assert match.game.drops["cooldown"] == 1
    assert victim.hp == 100


def test_kick_tells_the_client_and_removes_its_avatar() -> None:
    match = SimMatch(link=LINK)
    a = match.add_client(1)
    b = match.add_client(2)
    match.run(1.0)
    avatar = match.game.avatar_of(1)
    assert avatar is not None
    ident = avatar.id
    assert match.game.kick(1, "cheating", match.now)
    assert not match.game.kick(1, "again", match.now)
    assert not match.game.kick(99, "nobody", match.now)
    match.server.flush()
    match.run(1.0)
    ended = _of(match.client_events[0], ConnectionEnded)
    assert ended == [ConnectionEnded("server_disconnected", "cheating")]
    assert not a.obj.is_connected
    assert [e.reason for e in _of(match.server_events, PlayerLeft)] == ["kicked"]
    assert any(e.ident == ident for e in _of(match.client_events[1], ObjectDestroyed))
    assert b.obj.is_connected


def test_stop_connecting_and_connecting_failed() -> None:
    match = SimMatch(link=LINK)
    c = match.add_client(1, connect=False)
    now = match.now
    c.poke(lambda cl: cl.connect(("10.0.0.9", PORT), now, client_id=1))  # nobody there
    assert c.obj.is_connecting
    match.run(0.2)
    assert c.poke(lambda cl: cl.stop_connecting()) is None
    assert not c.obj.is_connecting
    assert _of(match.client_events[0], ConnectingFailed) == [ConnectingFailed("stopped")]
    assert not c.obj.stop_connecting()
    now = match.now
    c.poke(lambda cl: cl.connect(("10.0.0.9", PORT), now, client_id=1))
    match.run(10.0)
    failed = _of(match.client_events[0], ConnectingFailed)
    assert len(failed) == 2
    assert failed[1].reason != "stopped"
    now = match.now
    c.poke(lambda cl: cl.connect((SERVER, PORT), now, client_id=1))
    match.run(1.0)
    assert c.obj.is_connected


def test_shoot_needs_an_avatar() -> None:
    match = SimMatch(link=LINK)
    c = match.add_client(1, connect=False)
    other = match.add_client(2)
    match.run(1.0)
    target = other.obj.avatar
    assert target is not None
    with pytest.raises(LocalProtocolError):
        c.obj.shoot(target, match.now)
    assert c.obj.move((1.0, 0.0), 0.0) is False


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ConfigError, match="snapshot_rate"):
        GameConfig(sim_rate=30.0, snapshot_rate=60.0)
    with pytest.raises(ConfigError, match="max_players"):
        GameConfig(max_players=0)
    with pytest.raises(ConfigError, match="radius"):
        GameConfig(radius=0.0)


def test_sans_io_contract() -> None:
    def server(now: float) -> object:
        return SimMatch(seed=int(now) % 7).game

    def client(now: float) -> object:
        c = GameClient(PROTOCOL_ID, rng=random.Random(1))
        c.connect((SERVER, PORT), now, client_id=1)
        c.discover([("127.255.255.255", 47800)], now)
        return c

    check_sans_io(server, rng=random.Random(3))
    check_sans_io(client, rng=random.Random(4))


def test_an_earlier_kill_arriving_later_undoes_the_victims_own_kill() -> None:
    """Spec 000 §5.2.3: B shoots C, then A's shot at B arrives with an earlier server time inside
    the window: only "A kills B" is committed, "B kills C" is dropped."""
    level = Level(40.0, 20.0, [], [(5.0, 10.0), (15.0, 10.0), (25.0, 10.0)])
    match = SimMatch(link=LINK, level=level, config=GameConfig(hitpoints=20), seed=3)
    a, b, c = (match.add_client(n, connect=False) for n in (1, 2, 3))
    slow = LinkConfig(latency=0.12)  # A's slow link, both ways (no clock-sync bias)
    match.network.set_link("10.0.1.1", SERVER, slow)
    match.network.set_link(SERVER, "10.0.1.1", slow)
    for n, client in enumerate((a, b, c), start=1):
        now = match.now
        client.poke(lambda cl, n=n, now=now: cl.connect((SERVER, PORT), now, client_id=n))
    match.run(2.0)
    avatars = [match.game.avatar_of(cl.obj.replication.client_id or 0) for cl in (a, b, c)]
    for avatar, x in zip(avatars, (5.0, 15.0, 25.0), strict=True):
        assert avatar is not None
        avatar.pos = (x, 10.0)
    match.run(0.5)
    a_av, b_av, c_av = avatars
    assert a_av is not None
    assert b_av is not None
    assert c_av is not None
    b_seen_by_a = a.obj.world.find(b_av.id)
    c_seen_by_b = b.obj.world.find(c_av.id)
    a.poke(lambda cl: cl.shoot(b_seen_by_a, match.now))
    match.run(0.02)
    b.poke(lambda cl: cl.shoot(c_seen_by_b, match.now))
    match.run(1.0)
    decisions = [e.decision for e in _of(match.server_events, KillDecided)]
    outcome = {(d.kill.shooter, d.kill.victim): (d.committed, d.reason) for d in decisions}
    assert outcome[(a_av.id, b_av.id)] == (True, None)
    assert outcome[(b_av.id, c_av.id)][0] is False
    assert outcome[(b_av.id, c_av.id)][1].value == "shooter_dead"
    assert b_av.dead
    assert not c_av.dead
    assert c.obj.is_connected


def test_secure_connect_with_a_token_and_close() -> None:
    key = bytes(range(32))
    scheduler = Scheduler(start=50.0)
    network = Network(scheduler, seed=1, default_link=LINK)
    network.add_host(SERVER)
    network.add_host("10.0.1.1")
    game = GameServer(
        NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, private_key=key, public_address=(SERVER, PORT)
        ),
        _open_level(),
        rng=random.Random(1),
        random_bytes=random.Random(2).randbytes,
    )
    game.listen()
    server_events: list[object] = []
    SimEndpoint(game, network.host(SERVER), PORT, on_event=server_events.append)
    events: list[object] = []
    client = SimEndpoint(
        GameClient(PROTOCOL_ID, rng=random.Random(3), netcode=NetcodeClientConfig()),
        network.host("10.0.1.1"),
        on_event=events.append,
    )
    token = generate_connect_token(
        public_addresses=[(SERVER, PORT)],
        protocol_id=PROTOCOL_ID,
        expire_seconds=30,
        timeout_seconds=5,
        client_id=77,
        user_data=mark_user_data(b"zoe"),
        private_key=key,
        now_unix=int(scheduler.now),
        random_bytes=random.Random(4).randbytes,
    )
    now = scheduler.now
    client.poke(lambda c: c.connect_token(token, now))
    scheduler.run(until=scheduler.now + 1.0)
    assert client.obj.is_connected
    assert [(c.client_id, c.name) for c in game.clients] == [(77, "zoe")]
    game.close(scheduler.now)
    scheduler.run(until=scheduler.now + 1.0)
    assert not game.is_listening
    assert game.clients == []
    assert _of(events, ConnectionEnded) == [ConnectionEnded("server_disconnected", None)]
    assert [e.reason for e in _of(server_events, PlayerLeft)] == ["server_disconnected"]


def test_announcement_reports_live_players_and_an_interest_policy_limits_replicas() -> None:
    match = SimMatch(link=LINK, level=_open_level(), policy=AuraPolicy(radius=5.0))
    assert match.game.announcement("lan", 40000) == ServerAnnouncement("lan", 0, 64, 40000, "level")
    a, b = match.add_client(1), match.add_client(2)
    match.run(1.0)
    assert match.game.announcement("lan", 40000).players == 2
    # the avatars spawn 20 m apart: each client knows only its own (aura of 5 m)
    assert len(a.obj.world) == 1
    assert len(b.obj.world) == 1
    mover = a if a.obj.avatar is not None and a.obj.avatar.pos[0] < 20 else b
    mover.poke(lambda c: c.move((1.0, 0.0), 0.0))
    match.run(3.0)  # 18 m later they are within 5 m
    assert len(a.obj.world) == 2
    assert len(b.obj.world) == 2


def test_server_bots_move_shoot_and_leave() -> None:
    level = Level(40.0, 20.0, [ConvexPolygon.rectangle(19.0, 0.0, 2.0, 8.0)], [(10.0, 10.0)])
    match = SimMatch(link=LINK, level=level, config=GameConfig(hitpoints=50))
    player = match.add_client(1)
    match.run(1.0)
    bot = match.game.add_bot("robo")
    human = match.game.avatar_of(player.obj.replication.client_id or 0)
    assert human is not None
    bot.pos = (30.0, 10.0)
    human.pos = (10.0, 10.0)
    match.run(0.5)
    replica = player.obj.world.find(bot.id)
    assert isinstance(replica, Avatar)
    assert replica.name == "robo"
    assert match.game.bots == [bot]
    bot.steer = (-1.0, 0.0)
    match.run(0.5)
    assert bot.pos[0] == pytest.approx(27.0, abs=0.2)  # 6 m/s for 0.5 s
    bot.steer = (0.0, 0.0)
    assert match.game.bot_shoot(bot, human, match.now)  # 25 of 50
    assert not match.game.bot_shoot(bot, human, match.now)  # cooldown
    match.run(0.3)
    assert not match.game.bot_shoot(bot, human, match.now, direction=math.pi / 2)  # aimed away
    match.run(0.3)
    assert match.game.bot_shoot(bot, human, match.now)  # lethal: held for the window
    match.server.flush()
    assert human.hp == 25
    assert not human.dead
    match.run(0.5)
    assert human.dead
    received = [e.event for e in match.client_events[0] if isinstance(e, EventReceived)]
    assert [type(e).__name__ for e in received if isinstance(e, Hit | Killed)] == ["Hit", "Killed"]
    bot_id = bot.id
    assert match.game.remove_bot(bot)
    assert not match.game.remove_bot(bot)
    match.run(0.5)
    assert player.obj.world.find(bot_id) is None
    assert any(e.ident == bot_id for e in _of(match.client_events[0], ObjectDestroyed))
    assert match.game.bots == []
