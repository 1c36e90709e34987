"""The 2D kinematic world of the Realtime Simulator and spec 004's car.

Implements spec 000 §3.4 (entity and steering models: Direct, Thrust, 3D-Action, Point & Click),
§3.6 (genre presets, record and playback of per-frame key bitmasks and frame times), §4.1-§4.5
(the per-genre test movements, as scripted drivers) and §7 (preset calibration, documented in
``lagless.world.presets``), plus spec 004 §5.1/§5.3.1 (a kinematic car driven by recorded input).

SI units inside (metres, seconds, radians; world frame x right, y up). The thesis's pixels map
with ``PX_PER_M`` = 10 (the 10 px reference entity is 1 m long); convert with ``to_px``/``from_px``
at the edges.
"""

from __future__ import annotations

from lagless.world.car import CAR_CSV_HEADER as CAR_CSV_HEADER
from lagless.world.car import CarConfig as CarConfig
from lagless.world.car import CarFrame as CarFrame
from lagless.world.car import CarRecording as CarRecording
from lagless.world.car import KinematicCar as KinematicCar
from lagless.world.car import StadiumTrack as StadiumTrack
from lagless.world.car import drive_laps as drive_laps
from lagless.world.car import load_car_recording as load_car_recording
from lagless.world.car import simulate_car as simulate_car
from lagless.world.drivers import ARENA_HALF_WIDTH as ARENA_HALF_WIDTH
from lagless.world.drivers import FRAME_TIME_RANGE as FRAME_TIME_RANGE
from lagless.world.drivers import GENRES as GENRES
from lagless.world.drivers import drive as drive
from lagless.world.entity import IDLE as IDLE
from lagless.world.entity import MAX_FRAME_TIME as MAX_FRAME_TIME
from lagless.world.entity import Entity as Entity
from lagless.world.entity import EntityState as EntityState
from lagless.world.entity import wrap_angle as wrap_angle
from lagless.world.kinematics import coast_step as coast_step
from lagless.world.kinematics import stopping_distance as stopping_distance
from lagless.world.kinematics import stopping_time as stopping_time
from lagless.world.kinematics import terminal_speed as terminal_speed
from lagless.world.kinematics import thrust_step as thrust_step
from lagless.world.presets import ENTITY_LENGTH as ENTITY_LENGTH
from lagless.world.presets import FRAME_TIME as FRAME_TIME
from lagless.world.presets import PRESETS as PRESETS
from lagless.world.presets import PX_PER_M as PX_PER_M
from lagless.world.presets import Preset as Preset
from lagless.world.presets import from_px as from_px
from lagless.world.presets import get_preset as get_preset
from lagless.world.presets import to_px as to_px
from lagless.world.recording import CSV_HEADER as CSV_HEADER
from lagless.world.recording import Frame as Frame
from lagless.world.recording import Recording as Recording
from lagless.world.recording import available_recordings as available_recordings
from lagless.world.recording import load_recording as load_recording
from lagless.world.steering import ALL_KEYS as ALL_KEYS
from lagless.world.steering import ARRIVAL_RADIUS as ARRIVAL_RADIUS
from lagless.world.steering import Controls as Controls
from lagless.world.steering import Keys as Keys
from lagless.world.steering import Steering as Steering
from lagless.world.steering import SteeringModel as SteeringModel
from lagless.world.steering import steer as steer
from lagless.world.trajectory import Trajectory as Trajectory
from lagless.world.trajectory import play as play
from lagless.world.trajectory import simulate as simulate

__all__ = [
    "ALL_KEYS",
    "ARENA_HALF_WIDTH",
    "ARRIVAL_RADIUS",
    "CAR_CSV_HEADER",
    "CSV_HEADER",
    "ENTITY_LENGTH",
    "FRAME_TIME",
    "FRAME_TIME_RANGE",
    "GENRES",
    "IDLE",
    "MAX_FRAME_TIME",
    "PRESETS",
    "PX_PER_M",
    "CarConfig",
    "CarFrame",
    "CarRecording",
    "Controls",
    "Entity",
    "EntityState",
    "Frame",
    "KinematicCar",
    "Preset",
    "Recording",
    "StadiumTrack",
    "Steering",
    "SteeringModel",
    "Trajectory",
    "available_recordings",
    "coast_step",
    "drive",
    "drive_laps",
    "from_px",
    "get_preset",
    "load_car_recording",
    "load_recording",
    "play",
    "simulate",
    "steer",
    "stopping_distance",
    "stopping_time",
    "terminal_speed",
    "thrust_step",
    "to_px",
    "wrap_angle",
]
