"""lagless.smoothing: display models that draw remote entities smoothly and close to the truth.

The latency-hiding layer (DESIGN.md "Layers", issue 4). Each display model is a ``Sender`` (decides
when to send from the true state each frame; ``create_init`` / ``create_update`` payloads) and a
``Receiver`` (``process_init`` / ``process_update``; ``display(now)`` once per render frame):

* DIS dead reckoning of order 0, 1, 2 with ghost thresholds, heartbeat, pre-reckoning and capped
  time compensation (spec 000 §2.7), converging by snap, linear, quadratic, cubic or projective
  velocity blending;
* position-history-based DR (spec 000 §2.8) and interpolation with a position history (§2.9);
* the render-delay Hermite buffer with DR and the 8-step correction (spec 004 §5.2);
* the X4 PlayerController convergence (spec 003 §4.3);
* an adaptive policy choosing among them from RTT, jitter, loss and a bandwidth budget.

Payload sizes equal spec 000 Abb. 3.13 (DIS1 25/33, DIS2 33/41, PHB 21, interpolation 21 bytes);
layouts in ``lagless.smoothing.codec``. Models are created by name with
``create_display_model(name, **params)``.
"""

from __future__ import annotations

from lagless.smoothing.adaptive import AdaptiveConfig as AdaptiveConfig
from lagless.smoothing.adaptive import AdaptivePolicy as AdaptivePolicy
from lagless.smoothing.adaptive import LinkConditions as LinkConditions
from lagless.smoothing.adaptive import ModelChoice as ModelChoice
from lagless.smoothing.adaptive import choose_display_model as choose_display_model
from lagless.smoothing.base import DropReason as DropReason
from lagless.smoothing.base import PeriodicSchedule as PeriodicSchedule
from lagless.smoothing.base import Receiver as Receiver
from lagless.smoothing.base import ReceiverStatistics as ReceiverStatistics
from lagless.smoothing.base import Sender as Sender
from lagless.smoothing.base import Update as Update
from lagless.smoothing.base import compensated_age as compensated_age
from lagless.smoothing.codec import ANGLE_UNIT as ANGLE_UNIT
from lagless.smoothing.codec import ANGULAR_VELOCITY_UNIT as ANGULAR_VELOCITY_UNIT
from lagless.smoothing.codec import INIT_SIZE as INIT_SIZE
from lagless.smoothing.codec import LENGTH_UNIT as LENGTH_UNIT
from lagless.smoothing.codec import TIME_UNIT as TIME_UNIT
from lagless.smoothing.codec import DecodedInit as DecodedInit
from lagless.smoothing.codec import DecodedUpdate as DecodedUpdate
from lagless.smoothing.codec import ModelCode as ModelCode
from lagless.smoothing.codec import UpdateLayout as UpdateLayout
from lagless.smoothing.codec import decode_init as decode_init
from lagless.smoothing.codec import encode_init as encode_init
from lagless.smoothing.codec import peek_entity_id as peek_entity_id
from lagless.smoothing.convergence import CONVERGENCE_KINDS as CONVERGENCE_KINDS
from lagless.smoothing.convergence import Convergence as Convergence
from lagless.smoothing.convergence import ConvergenceConfig as ConvergenceConfig
from lagless.smoothing.convergence import ConvergenceKind as ConvergenceKind
from lagless.smoothing.convergence import create_convergence as create_convergence
from lagless.smoothing.convergence import hermite as hermite
from lagless.smoothing.dis import DeadReckoningTrack as DeadReckoningTrack
from lagless.smoothing.dis import DisConfig as DisConfig
from lagless.smoothing.dis import DisReceiver as DisReceiver
from lagless.smoothing.dis import DisSender as DisSender
from lagless.smoothing.dis import dis_layout as dis_layout
from lagless.smoothing.hermite import HERMITE_LAYOUT as HERMITE_LAYOUT
from lagless.smoothing.hermite import HermiteConfig as HermiteConfig
from lagless.smoothing.hermite import HermiteNode as HermiteNode
from lagless.smoothing.hermite import HermiteReceiver as HermiteReceiver
from lagless.smoothing.hermite import HermiteSender as HermiteSender
from lagless.smoothing.interpolation import INTERPOLATION_LAYOUT as INTERPOLATION_LAYOUT
from lagless.smoothing.interpolation import InterpolationConfig as InterpolationConfig
from lagless.smoothing.interpolation import InterpolationReceiver as InterpolationReceiver
from lagless.smoothing.interpolation import InterpolationSender as InterpolationSender
from lagless.smoothing.phb import PHB_LAYOUT as PHB_LAYOUT
from lagless.smoothing.phb import CurveClass as CurveClass
from lagless.smoothing.phb import PhbConfig as PhbConfig
from lagless.smoothing.phb import PhbReceiver as PhbReceiver
from lagless.smoothing.phb import PhbSender as PhbSender
from lagless.smoothing.phb import PhbTrack as PhbTrack
from lagless.smoothing.phb import angle_of_embrace as angle_of_embrace
from lagless.smoothing.registry import DisplayModel as DisplayModel
from lagless.smoothing.registry import create_display_model as create_display_model
from lagless.smoothing.registry import display_model_names as display_model_names
from lagless.smoothing.registry import register_display_model as register_display_model
from lagless.smoothing.state import DR_ORDERS as DR_ORDERS
from lagless.smoothing.state import DisplayState as DisplayState
from lagless.smoothing.state import KinematicState as KinematicState
from lagless.smoothing.state import Trajectory as Trajectory
from lagless.smoothing.state import angle_difference as angle_difference
from lagless.smoothing.state import blend_heading as blend_heading
from lagless.smoothing.state import extrapolate as extrapolate
from lagless.smoothing.state import wrap_angle as wrap_angle
from lagless.smoothing.thresholds import ThresholdConfig as ThresholdConfig
from lagless.smoothing.thresholds import ThresholdTrigger as ThresholdTrigger
from lagless.smoothing.thresholds import TriggerReason as TriggerReason
from lagless.smoothing.x4 import X4_LAYOUT as X4_LAYOUT
from lagless.smoothing.x4 import X4Config as X4Config
from lagless.smoothing.x4 import X4Path as X4Path
from lagless.smoothing.x4 import X4Receiver as X4Receiver
from lagless.smoothing.x4 import X4Sender as X4Sender

__all__ = [
    "ANGLE_UNIT",
    "ANGULAR_VELOCITY_UNIT",
    "CONVERGENCE_KINDS",
    "DR_ORDERS",
    "HERMITE_LAYOUT",
    "INIT_SIZE",
    "INTERPOLATION_LAYOUT",
    "LENGTH_UNIT",
    "PHB_LAYOUT",
    "TIME_UNIT",
    "X4_LAYOUT",
    "AdaptiveConfig",
    "AdaptivePolicy",
    "Convergence",
    "ConvergenceConfig",
    "ConvergenceKind",
    "CurveClass",
    "DeadReckoningTrack",
    "DecodedInit",
    "DecodedUpdate",
    "DisConfig",
    "DisReceiver",
    "DisSender",
    "DisplayModel",
    "DisplayState",
    "DropReason",
    "HermiteConfig",
    "HermiteNode",
    "HermiteReceiver",
    "HermiteSender",
    "InterpolationConfig",
    "InterpolationReceiver",
    "InterpolationSender",
    "KinematicState",
    "LinkConditions",
    "ModelChoice",
    "ModelCode",
    "PeriodicSchedule",
    "PhbConfig",
    "PhbReceiver",
    "PhbSender",
    "PhbTrack",
    "Receiver",
    "ReceiverStatistics",
    "Sender",
    "ThresholdConfig",
    "ThresholdTrigger",
    "Trajectory",
    "TriggerReason",
    "Update",
    "UpdateLayout",
    "X4Config",
    "X4Path",
    "X4Receiver",
    "X4Sender",
    "angle_difference",
    "angle_of_embrace",
    "blend_heading",
    "choose_display_model",
    "compensated_age",
    "create_convergence",
    "create_display_model",
    "decode_init",
    "dis_layout",
    "display_model_names",
    "encode_init",
    "extrapolate",
    "hermite",
    "peek_entity_id",
    "register_display_model",
    "wrap_angle",
]
