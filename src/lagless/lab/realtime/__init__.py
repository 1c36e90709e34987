"""The Realtime Simulator of spec 000 §3.2-§3.3 as a lab, with its metrics and configurations.

A recorded entity (``lagless.world``) is replicated through a display model
(``lagless.smoothing``) over a simulated one-way link (``lagless.netsim.Link``) and compared, per
frame, with the truth: payload and wire kB/s, average and maximum position error (px at 10 px per
m, and m), spec 004's DeviationA/B, jump and freeze counts. The experiments live in
``lagless.lab.experiments.realtime``.
"""

from __future__ import annotations

from lagless.lab.realtime.configs import CAR_CONFIGS as CAR_CONFIGS
from lagless.lab.realtime.configs import CONDITIONS as CONDITIONS
from lagless.lab.realtime.configs import GENRE_SETUPS as GENRE_SETUPS
from lagless.lab.realtime.configs import CarConfigSpec as CarConfigSpec
from lagless.lab.realtime.configs import Condition as Condition
from lagless.lab.realtime.configs import GenreSetup as GenreSetup
from lagless.lab.realtime.configs import ModelConfig as ModelConfig
from lagless.lab.realtime.configs import sweep_models as sweep_models
from lagless.lab.realtime.configs import tuning_grid as tuning_grid
from lagless.lab.realtime.metrics import count_freezes as count_freezes
from lagless.lab.realtime.metrics import count_jumps as count_jumps
from lagless.lab.realtime.metrics import deviation_a as deviation_a
from lagless.lab.realtime.metrics import deviation_b as deviation_b
from lagless.lab.realtime.metrics import position_error as position_error
from lagless.lab.realtime.metrics import send_rate as send_rate
from lagless.lab.realtime.metrics import smoothness as smoothness
from lagless.lab.realtime.metrics import step_lengths as step_lengths
from lagless.lab.realtime.metrics import wire_sizes as wire_sizes
from lagless.lab.realtime.runs import REQUIRED_COLUMNS as REQUIRED_COLUMNS
from lagless.lab.realtime.simulator import RunMetrics as RunMetrics
from lagless.lab.realtime.simulator import SimulatorRun as SimulatorRun
from lagless.lab.realtime.simulator import run as run
from lagless.lab.realtime.simulator import simulator_link as simulator_link
from lagless.lab.realtime.simulator import truth_state as truth_state

__all__ = [
    "CAR_CONFIGS",
    "CONDITIONS",
    "GENRE_SETUPS",
    "REQUIRED_COLUMNS",
    "CarConfigSpec",
    "Condition",
    "GenreSetup",
    "ModelConfig",
    "RunMetrics",
    "SimulatorRun",
    "count_freezes",
    "count_jumps",
    "deviation_a",
    "deviation_b",
    "position_error",
    "run",
    "send_rate",
    "simulator_link",
    "smoothness",
    "step_lengths",
    "sweep_models",
    "truth_state",
    "tuning_grid",
    "wire_sizes",
]
