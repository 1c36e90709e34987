"""Input record/replay and path logs as CSV (spec 004 §5.3.1, §5.3.2), and the sample-drive bot."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lagless.errors import ConfigError, LocalProtocolError
from lagless.physics import (
    CarParams,
    CarState,
    CarWorld,
    CourseBot,
    InputPlayer,
    InputRecorder,
    InputRecording,
    Keys,
    PathLog,
    PhysicsParams,
    read_user_controls,
    write_user_controls,
)
from lagless.physics.driver import drive_course


def test_input_round_trip() -> None:
    recording = drive_course(CarParams(), duration=20.0, rng=random.Random(4))
    assert len(recording.events) > 20
    again = InputRecording.from_csv(recording.to_csv())
    assert again == recording
    assert {k & (Keys.LEFT | Keys.RIGHT) for _, k in recording.events} >= {Keys.LEFT, Keys.RIGHT}


def test_drive_is_seeded() -> None:
    a = drive_course(CarParams(), duration=10.0, rng=random.Random(1))
    b = drive_course(CarParams(), duration=10.0, rng=random.Random(1))
    c = drive_course(CarParams(), duration=10.0, rng=random.Random(2))
    assert a == b
    assert a != c


def test_csv_layout() -> None:
    recording = InputRecording(events=((0.0, Keys.UP), (1.25, Keys.UP | Keys.LEFT)))
    lines = recording.to_csv().splitlines()
    assert lines[1:] == ["t,up,down,left,right", "0.0,1,0,0,0", "1.25,1,0,1,0"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("t,up,down\n0,1,0\n", "header"),
        ("t,up,down,left,right\n0.0,2,0,0,0\n", "line 2: up must be 0 or 1"),
        ("t,up,down,left,right\nx,1,0,0,0\n", "line 2: t must be a number"),
        ("t,up,down,left,right\n1.0,1,0,0,0\n0.5,0,0,0,0\n", "event 1: t must be"),
        ("t,up,down,left,right\n0.0,1,0,0,0\n0.5,1,0,0,0\n", "event 1: keys must be a new"),
    ],
)
def test_bad_input_csv(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        InputRecording.from_csv(text)


def test_recorder_keeps_changes_only() -> None:
    recorder = InputRecorder(start=10.0)
    recorder.record(10.0, Keys.UP)
    recorder.record(10.5, Keys.UP)  # no change: no event
    recorder.record(11.0, Keys.NONE)
    assert recorder.recording().events == ((0.0, Keys.UP), (1.0, Keys.NONE))
    with pytest.raises(LocalProtocolError, match="increase"):
        recorder.record(10.9, Keys.DOWN)


def test_player_returns_each_change_once() -> None:
    recording = InputRecording(events=((0.0, Keys.UP), (0.5, Keys.LEFT), (0.6, Keys.NONE)))
    player = InputPlayer(recording, start=100.0)
    assert player.next_time() == 100.0
    assert player.due(99.9) == []
    assert player.due(100.55) == [Keys.UP, Keys.LEFT]
    assert player.due(100.55) == []
    assert player.due(200.0) == [Keys.NONE]
    assert player.finished
    assert player.next_time() is None


def test_path_log_round_trip() -> None:
    log = PathLog()
    log.record(1000.02, 0, 1.0 / 3.0, -2.5, 3.0)
    log.record(1000.02, 1, 7.0, 8.0, -0.1)
    log.record(1000.04, 0, 1.5, -2.0, 3.1)
    again = PathLog.from_csv(log.to_csv())
    assert again.samples == log.samples
    assert [s.t for s in again.for_car(0)] == [1000.02, 1000.04]
    with pytest.raises(ConfigError, match="line 3: car must be an id"):
        PathLog.from_csv("# x\nt,car,x,y,heading\n1.0,a,0,0,0\n")


def test_user_controls_files(tmp_path: Path) -> None:
    path = tmp_path / "drive.csv"
    recording = InputRecording(events=((0.0, Keys.UP), (0.7, Keys.NONE)))
    writing = PhysicsParams(user_controls_file=str(path), write_user_controls=True)
    assert read_user_controls(writing) is None
    assert write_user_controls(writing, recording)
    reading = PhysicsParams(
        user_controls_file=str(path), read_user_controls=True, write_user_controls=True
    )
    assert not write_user_controls(reading, InputRecording(events=()))  # reading wins
    assert read_user_controls(reading) == recording
    path.write_text("t,up\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"drive\.csv: recording line 1: header"):
        read_user_controls(reading)
    missing = PhysicsParams(user_controls_file=str(tmp_path / "no.csv"), read_user_controls=True)
    with pytest.raises(ConfigError, match="cannot read the user controls"):
        read_user_controls(missing)


def test_course_bot_drives_to_its_waypoints() -> None:
    bot = CourseBot(random.Random(3), CarState())
    world = CarWorld(CarParams())
    world.add_car(0, CarState())
    first = bot.waypoint
    reached = 0
    for n in range(3000):
        if n % 5 == 0:
            world.set_keys(0, bot.keys(world.state(0)))
            if bot.waypoint != first:
                reached += 1
                first = bot.waypoint
        world.step(0.01)
    assert reached >= 2  # 30 s at about 20 m/s: several 60-140-m legs
    assert 16.0 <= bot.target_speed <= 26.0
