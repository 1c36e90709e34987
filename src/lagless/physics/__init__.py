"""lagless.physics: spec 004's physics synchronisation on a pymunk car (server logic, client views).

The layer above world, smoothing and transport (DESIGN.md "Layers"; spec 004 ch. 5, checklist
8.1): a top-down 3-m car on pymunk with per-wheel tyre friction (``CarWorld``), the parameter file
of §5.3.4 (``load_params``), bit-packed input events and 20-Hz snapshots with range-compressed
velocity (``encode_message`` / ``decode_message``), a sans-I/O ``PhysicsServer`` that runs the
physics and a sans-I/O ``PhysicsClient`` that sends one guaranteed input event per key change and
shows the cars through the Hermite buffer with render delay, dead reckoning and the 8-step
correction (``CarView``), optionally predicting its own car (``PredictedCar``, §7.2); input
record/replay and 50-Hz path logs as CSV; the receive-side latency of Gl. 5.1 (``ReceiveDelay``).
"""

from __future__ import annotations

from lagless.physics.car import GRAVITY as GRAVITY
from lagless.physics.car import Car as Car
from lagless.physics.car import CarState as CarState
from lagless.physics.car import CarWorld as CarWorld
from lagless.physics.car import Keys as Keys
from lagless.physics.car import Wall as Wall
from lagless.physics.client import ClientConfig as ClientConfig
from lagless.physics.client import PhysicsClient as PhysicsClient
from lagless.physics.client import SnapshotTiming as SnapshotTiming
from lagless.physics.client import Welcomed as Welcomed
from lagless.physics.codec import MAX_CARS as MAX_CARS
from lagless.physics.codec import CarSnapshot as CarSnapshot
from lagless.physics.codec import InputEvent as InputEvent
from lagless.physics.codec import MessageKind as MessageKind
from lagless.physics.codec import Snapshot as Snapshot
from lagless.physics.codec import SnapshotFormat as SnapshotFormat
from lagless.physics.codec import Welcome as Welcome
from lagless.physics.codec import decode_message as decode_message
from lagless.physics.codec import encode_message as encode_message
from lagless.physics.driver import CourseBot as CourseBot
from lagless.physics.driver import drive_course as drive_course
from lagless.physics.latency import ReceiveDelay as ReceiveDelay
from lagless.physics.params import CarParams as CarParams
from lagless.physics.params import PhysicsParams as PhysicsParams
from lagless.physics.params import load_params as load_params
from lagless.physics.params import parse_params as parse_params
from lagless.physics.recording import InputPlayer as InputPlayer
from lagless.physics.recording import InputRecorder as InputRecorder
from lagless.physics.recording import InputRecording as InputRecording
from lagless.physics.recording import PathLog as PathLog
from lagless.physics.recording import PathSample as PathSample
from lagless.physics.recording import read_user_controls as read_user_controls
from lagless.physics.recording import write_user_controls as write_user_controls
from lagless.physics.server import CarJoined as CarJoined
from lagless.physics.server import CarLeft as CarLeft
from lagless.physics.server import PhysicsServer as PhysicsServer
from lagless.physics.server import ServerConfig as ServerConfig
from lagless.physics.view import CarView as CarView
from lagless.physics.view import PredictedCar as PredictedCar
from lagless.physics.view import ViewConfig as ViewConfig

__all__ = [
    "GRAVITY",
    "MAX_CARS",
    "Car",
    "CarJoined",
    "CarLeft",
    "CarParams",
    "CarSnapshot",
    "CarState",
    "CarView",
    "CarWorld",
    "ClientConfig",
    "CourseBot",
    "InputEvent",
    "InputPlayer",
    "InputRecorder",
    "InputRecording",
    "Keys",
    "MessageKind",
    "PathLog",
    "PathSample",
    "PhysicsClient",
    "PhysicsParams",
    "PhysicsServer",
    "PredictedCar",
    "ReceiveDelay",
    "ServerConfig",
    "Snapshot",
    "SnapshotFormat",
    "SnapshotTiming",
    "ViewConfig",
    "Welcome",
    "Welcomed",
    "decode_message",
    "drive_course",
    "encode_message",
    "load_params",
    "parse_params",
    "read_user_controls",
    "write_user_controls",
]
