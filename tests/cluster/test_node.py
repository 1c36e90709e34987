"""Cell servers over the in-memory bus on virtual time: hand-offs, take-over, conflicts, inputs."""

from __future__ import annotations

import math

import pytest

from lagless.cluster import CellGrid, CellNode, NodeConfig, VirtualCluster, spawn_states
from lagless.cluster.messages import CarRecord, Handoff, Input, Snapshot, decode, encode
from lagless.cluster.node import advance
from lagless.cluster.sim import subject_matches
from lagless.errors import ConfigError
from lagless.physics import CarState, Keys

INTERVAL_MS = 50.0  # one snapshot interval at 60 Hz / 3


def _owners(vc: VirtualCluster) -> dict[int, list[int]]:
    """Player -> the servers that own its car; a car in flight (a hand-off sent, not yet
    applied) counts for its receiver."""
    found: dict[int, list[int]] = {}
    for k, node in vc.nodes.items():
        for player in node.owned:
            found.setdefault(player, []).append(k)
    for node in vc.nodes.values():
        for player, pending in node._pending_out.items():
            receiver = vc.nodes.get(pending.target)
            if receiver is not None and player not in receiver.owned:
                found.setdefault(player, []).append(pending.target)
    return found


def test_bots_cross_borders_without_gap_jump_or_lost_input() -> None:
    vc = VirtualCluster(servers=3, players=30, seed=2)
    vc.run(vc.now + 8.0)
    report = vc.swarm.report(vc.now)
    handoffs = sum(node.handoffs_accepted for node in vc.nodes.values())
    assert handoffs >= 5
    assert report.handoffs_seen == handoffs
    assert report.handoff_gap_ms_max == pytest.approx(INTERVAL_MS)
    assert report.update_gap_ms_max == pytest.approx(INTERVAL_MS)
    assert report.handoff_jump_m_max < 0.1
    assert report.inputs_sent > 100
    assert report.inputs_lost == 0
    assert report.inputs_unapplied == 0
    assert report.players_live == 30
    owners = _owners(vc)
    assert sorted(owners) == list(range(30))
    assert all(len(servers) == 1 for servers in owners.values())


def test_a_border_car_is_a_ghost_on_the_neighbour() -> None:
    vc = VirtualCluster(servers=2, players=30, seed=3)
    seen_ghost = False
    for _ in range(80):
        vc.run(vc.now + 0.05)
        for k, node in vc.nodes.items():
            other = vc.nodes[1 - k]
            for player in node.ghosts:
                if player in other.owned:
                    seen_ghost = True
                    mine = node.world.state(player)
                    theirs = other.world.state(player)
                    assert abs(mine.x - theirs.x) < 2.0
    assert seen_ghost


def test_killed_server_is_taken_over_from_its_last_snapshot() -> None:
    vc = VirtualCluster(servers=3, players=30, seed=4)
    vc.run(vc.now + 3.0)
    victims = set(vc.nodes[1].owned)
    assert victims
    vc.kill(1)
    vc.run(vc.now + 3.0)
    report = vc.swarm.report(vc.now)
    assert report.recovery_ms is not None
    assert report.recovery_ms <= 1000.0 * (vc.config.dead_after + 0.2)
    assert report.cars_unrecovered == 0
    assert report.inputs_lost == 0
    assert report.inputs_unapplied == 0
    assert report.players_live == 30
    owners = _owners(vc)
    assert sorted(owners) == list(range(30))
    assert all(len(servers) == 1 for servers in owners.values())
    successor = vc.nodes[0]
    assert successor.takeovers == 1
    assert 1 in successor.dead
    assert vc.nodes[2].owner(1) == 0


def test_a_handoff_that_never_arrives_is_taken_back_when_the_receiver_dies() -> None:
    vc = VirtualCluster(servers=2, players=30, seed=5)
    vc.drop_filter = lambda subject, receiver: subject.endswith(".handoff.1")
    vc.run(vc.now + 6.0)
    stuck = set(vc.nodes[0]._pending_out)
    assert stuck
    assert not stuck & set(vc.nodes[1].owned)
    vc.kill(1)
    vc.drop_filter = None
    vc.run(vc.now + 2.0)
    node = vc.nodes[0]
    assert node.cars_reclaimed >= len(stuck)
    assert stuck <= set(node.owned)
    assert sorted(node.owned) == list(range(30))
    assert vc.swarm.report(vc.now).inputs_lost == 0


def test_a_false_alarm_ends_with_one_owner_per_car_and_cell() -> None:
    vc = VirtualCluster(servers=2, players=20, seed=6)
    vc.run(vc.now + 1.0)
    vc.drop_filter = lambda subject, receiver: ".snap.1" in subject and receiver == 0
    vc.run(vc.now + 1.5)
    assert 1 in vc.nodes[0].dead
    assert vc.nodes[0].takeovers == 1
    vc.drop_filter = None
    vc.run(vc.now + 2.0)
    owners = _owners(vc)
    assert sorted(owners) == list(range(20))
    assert all(len(servers) == 1 for servers in owners.values())
    assert vc.nodes[0].cells == [0, 1]
    assert vc.nodes[1].cells == []
    assert vc.nodes[1].duplicates_dropped > 0
    report = vc.swarm.report(vc.now)
    assert report.inputs_lost == 0
    assert report.players_live == 20


def _lone_node() -> CellNode:
    grid = CellGrid.for_servers(2, 120.0, 120.0)
    spawns = [CarState(x=50.0, y=60.0), CarState(x=180.0, y=60.0)]
    return CellNode(0, 2, grid, spawns, 10.0)


def _snapshot(node: CellNode, now: float) -> Snapshot:
    node.handle_timer(now)
    snaps = [decode(p) for s, p in node.messages_to_send() if s.endswith(".snap.0")]
    message = snaps[-1]
    assert isinstance(message, Snapshot)
    return message


def test_inputs_are_applied_in_seq_order_and_acknowledged() -> None:
    node = _lone_node()
    assert node.owned == [0]
    node.receive(encode(Input(0, 2, Keys.UP)), 10.01)
    node.receive(encode(Input(0, 1, Keys.DOWN)), 10.02)
    snap = _snapshot(node, 10.1)
    (car,) = snap.cars
    assert car.input_seq == 2
    assert car.state.keys == Keys.UP
    assert car.state.vx > 0.0


def test_handoff_applies_the_newest_input_heard() -> None:
    node = _lone_node()
    node.receive(encode(Input(1, 7, Keys.LEFT)), 10.0)
    record = CarRecord(1, 3, 5, CarState(x=118.0, y=60.0, vx=-10.0, keys=Keys.UP))
    node.receive(encode(Handoff(1, 0, node.tick, record)), 10.0)
    snap = _snapshot(node, 10.1)
    car = next(c for c in snap.cars if c.player == 1)
    assert (car.generation, car.input_seq, car.state.keys) == (3, 7, Keys.LEFT)
    assert car.state.x < 118.0


def test_garbage_and_foreign_messages_are_counted_not_raised() -> None:
    node = _lone_node()
    node.receive(b"\xffnot a message", 10.0)
    node.receive(b"", 10.0)
    node.receive(encode(Input(999, 1, Keys.UP)), 10.0)
    assert node.dropped == 3
    node.handle_timer(10.2)
    assert node.owned == [0]


def test_subject_matching_follows_nats() -> None:
    assert subject_matches("a.snap.*", "a.snap.3")
    assert not subject_matches("a.snap.*", "a.snap.3.x")
    assert subject_matches("a.>", "a.snap.3")
    assert not subject_matches("a.>", "a")
    assert not subject_matches("a.input", "a.inputs")


def test_node_config_is_validated() -> None:
    with pytest.raises(ConfigError, match="halo"):
        NodeConfig(halo=1.0, margin=2.0)
    with pytest.raises(ConfigError, match="dead_after"):
        NodeConfig(dead_after=0.0)
    grid = CellGrid.for_servers(2, 120.0, 120.0)
    with pytest.raises(ConfigError, match="players"):
        CellNode(0, 2, grid, spawn_states(grid, 300, 1), 0.0)


def test_a_late_handoff_is_made_up_for_at_the_missed_instant() -> None:
    node = _lone_node()
    node.handle_timer(10.2)
    node.messages_to_send()
    sent_at = node.tick - 7  # the sender ran 7 ticks late: the next instant after it is past
    missed = (sent_at // 3 + 1) * 3
    assert missed <= node.tick
    record = CarRecord(1, 4, 2, CarState(x=110.0, y=60.0, vx=-12.0))
    node.receive(encode(Handoff(1, 0, sent_at, record)), 10.2)
    assert node.late_handoffs == 1
    snaps = [decode(p) for s, p in node.messages_to_send() if s.endswith(".snap.0")]
    assert len(snaps) == 1
    late = snaps[0]
    assert isinstance(late, Snapshot)
    assert late.tick == missed
    (car,) = late.cars
    assert car.player == 1
    assert car.state.x == pytest.approx(110.0 - 12.0 * (missed - sent_at) / 60.0, abs=1e-3)


def test_a_one_car_catch_up_snapshot_is_not_a_peers_last_full_snapshot() -> None:
    grid = CellGrid.for_servers(2, 120.0, 120.0)
    spawns = spawn_states(grid, 10, 1)
    peer = CellNode(1, 2, grid, spawns, 10.0)
    full = Snapshot(0, 600, ((0, 0),), tuple(CarRecord(p, 0, 0, spawns[p]) for p in range(3)))
    partial = Snapshot(0, 597, ((0, 0),), (CarRecord(5, 1, 0, spawns[5]),))
    peer.receive(encode(full), 10.0)
    peer.receive(encode(partial), 10.0)
    for now in (10.3, 10.6, 10.9):
        peer.handle_timer(now)
        for _subject, payload in peer.messages_to_send():
            peer.receive(payload, now)  # the bus echoes the node's own snapshots back
    assert 0 not in peer.dead
    peer.handle_timer(11.2)
    assert 0 in peer.dead
    assert {0, 1, 2} <= set(peer.owned)


def test_advance_carries_the_state_along_its_velocity() -> None:
    moved = advance(
        CarState(x=1.0, y=2.0, heading=3.1, vx=10.0, vy=-5.0, angular_velocity=1.0), 0.1
    )
    assert (moved.x, moved.y) == pytest.approx((2.0, 1.5))
    assert (moved.vx, moved.vy) == (10.0, -5.0)
    assert moved.heading == pytest.approx(3.2 - 2.0 * math.pi)


def test_a_stalled_server_is_taken_over_and_does_not_take_the_others_for_dead() -> None:
    vc = VirtualCluster(servers=3, players=30, seed=7)
    vc.run(vc.now + 2.0)
    stalled = set(vc.nodes[1].owned)
    assert stalled
    vc.pause(1, 1.5)
    vc.run(vc.now + 4.0)
    node = vc.nodes[1]
    assert node.stalls == 1
    assert node.takeovers == 0
    assert node.dead == set()
    assert node.cells == []
    assert vc.nodes[0].takeovers == 1
    owners = _owners(vc)
    assert sorted(owners) == list(range(30))
    assert all(len(servers) == 1 for servers in owners.values())
    report = vc.swarm.report(vc.now)
    assert report.failovers_seen >= len(stalled)
    assert report.failover_gap_ms_max <= 1000.0 * (1.5 + 0.2)
    assert report.handoff_jump_m_max < 0.1
    assert report.inputs_lost == 0
    assert report.inputs_unapplied == 0
    assert report.players_live == 30


def test_a_silent_bus_makes_nobody_dead() -> None:
    vc = VirtualCluster(servers=3, players=20, seed=8)
    vc.run(vc.now + 1.0)
    vc.drop_filter = lambda subject, receiver: ".snap." in subject
    vc.run(vc.now + 1.5)
    assert all(node.dead == set() and node.takeovers == 0 for node in vc.nodes.values())
    vc.drop_filter = None
    vc.run(vc.now + 1.0)
    assert all(node.dead == set() for node in vc.nodes.values())
    owners = _owners(vc)
    assert sorted(owners) == list(range(20))
    assert all(len(servers) == 1 for servers in owners.values())


def test_a_resent_handoff_after_the_car_moved_on_is_ignored() -> None:
    node = _lone_node()
    record = CarRecord(1, 5, 2, CarState(x=118.0, y=60.0, vx=-10.0))
    handoff = encode(Handoff(1, 0, node.tick, record))
    node.receive(handoff, 10.0)
    assert 1 in node.owned
    # server 1 has the car again, one hand-off later (generation 6): ours is the stale copy
    moved_on = CarRecord(1, 6, 3, CarState(x=140.0, y=60.0, vx=10.0))
    node.receive(encode(Snapshot(1, node.tick + 30, ((1, 0),), (moved_on,))), 10.4)
    assert 1 not in node.owned
    node.receive(handoff, 10.5)  # the sender's resend of generation 5 arrives late
    assert 1 not in node.owned
    assert node.stale_handoffs == 1


def test_a_node_back_from_a_stall_speaks_for_its_cars_only_after_its_echo() -> None:
    node = _lone_node()
    node.handle_timer(10.2)
    node.messages_to_send()
    node.handle_timer(10.9)  # stalled 0.7 s: the other server may have taken cell 0
    out = [decode(p) for _s, p in node.messages_to_send()]
    assert out
    assert all(isinstance(m, Snapshot) and not m.claims and not m.cars for m in out)
    assert node.stalls == 1
    taken = CarRecord(0, 1, 0, node.world.state(0))
    node.receive(encode(Snapshot(1, node.tick, ((0, 1), (1, 0)), (taken,))), 10.9)
    for message in out:
        node.receive(encode(message), 10.9)  # the probe comes back: all queued news is read
    node.handle_timer(11.0)
    after = [decode(p) for s, p in node.messages_to_send() if ".snap." in s]
    assert after
    assert all(isinstance(m, Snapshot) and not m.cars and not m.claims for m in after)
    assert node.owned == []
    assert node.cells == []
    assert node.duplicates_dropped == 1


def test_a_server_dead_before_its_first_full_snapshot_leaves_its_spawned_cars() -> None:
    vc = VirtualCluster(servers=2, players=20, seed=9)
    spawned = set(vc.nodes[1].owned)
    assert spawned
    survivor = vc.nodes[0]
    survivor.receive(encode(Snapshot(1, survivor.tick, (), ())), vc.now)  # a fencing heartbeat
    del vc.nodes[1]  # dies without ever speaking for its cars
    vc.run(vc.now + 2.0)
    assert survivor.takeovers == 1
    assert spawned <= set(survivor.owned)
    assert sorted(survivor.owned) == list(range(20))
