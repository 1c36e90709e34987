"""lagless.interest: which object updates each client receives, and how stale they may get.

The interest-management layer (DESIGN.md "Layers", issue 5). ``VfcPolicy`` implements
Vector-Field Consistency with fields of view (spec 001 §2): views of concentric zones × FoV bands
around one or several pivots, a κ = (θ, σ, ν) per cell, and a server round (33 ms by default)
that decides every (client, object) send at once with numpy. ``BroadcastPolicy``, ``AuraPolicy``
and ``GridPolicy`` are the baselines, behind the same ``InterestPolicy`` interface. Positional
events (sounds, shots) are filtered with ``filter_sound`` / ``filter_shot`` (spec 001 §3.6).
``NaiveVfcPolicy`` is the per-pair reference the vectorised round is tested and benchmarked
against.
"""

from __future__ import annotations

from lagless.interest.baselines import AuraPolicy as AuraPolicy
from lagless.interest.baselines import BroadcastPolicy as BroadcastPolicy
from lagless.interest.baselines import GridPolicy as GridPolicy
from lagless.interest.client import VfcClient as VfcClient
from lagless.interest.core import PolicyCore as PolicyCore
from lagless.interest.events import pivot_distance_squared as pivot_distance_squared
from lagless.interest.events import shot_concerns as shot_concerns
from lagless.interest.events import within_radius as within_radius
from lagless.interest.events import zone_of_point as zone_of_point
from lagless.interest.mobility import MAPS as MAPS
from lagless.interest.mobility import Bots as Bots
from lagless.interest.mobility import BotsConfig as BotsConfig
from lagless.interest.policy import ROUND_PERIOD as ROUND_PERIOD
from lagless.interest.policy import InterestConfig as InterestConfig
from lagless.interest.policy import InterestPolicy as InterestPolicy
from lagless.interest.policy import InterestStatistics as InterestStatistics
from lagless.interest.policy import SendPlan as SendPlan
from lagless.interest.policy import Trigger as Trigger
from lagless.interest.records import CubeOriObj as CubeOriObj
from lagless.interest.reference import NaiveVfcPolicy as NaiveVfcPolicy
from lagless.interest.server import VfcServer as VfcServer
from lagless.interest.server import VfcServerConfig as VfcServerConfig
from lagless.interest.vfc import NuMode as NuMode
from lagless.interest.vfc import VfcConfig as VfcConfig
from lagless.interest.vfc import VfcPolicy as VfcPolicy
from lagless.interest.view import FULL_CIRCLE as FULL_CIRCLE
from lagless.interest.view import Kappa as Kappa
from lagless.interest.view import View as View
from lagless.interest.view import band_index as band_index
from lagless.interest.view import example_view as example_view
from lagless.interest.view import normal_view as normal_view
from lagless.interest.view import vfc_view as vfc_view
from lagless.interest.view import zone_index as zone_index
from lagless.interest.view import zoom_view as zoom_view

__all__ = [
    "FULL_CIRCLE",
    "MAPS",
    "ROUND_PERIOD",
    "AuraPolicy",
    "Bots",
    "BotsConfig",
    "BroadcastPolicy",
    "CubeOriObj",
    "GridPolicy",
    "InterestConfig",
    "InterestPolicy",
    "InterestStatistics",
    "Kappa",
    "NaiveVfcPolicy",
    "NuMode",
    "PolicyCore",
    "SendPlan",
    "Trigger",
    "VfcClient",
    "VfcConfig",
    "VfcPolicy",
    "VfcServer",
    "VfcServerConfig",
    "View",
    "band_index",
    "example_view",
    "normal_view",
    "pivot_distance_squared",
    "shot_concerns",
    "vfc_view",
    "within_radius",
    "zone_index",
    "zone_of_point",
    "zoom_view",
]
