"""lagless.replication: network objects, ID pools, schemas, snapshots, delta, priority, RPC.

The layer above ``transport``, ``interest``, ``smoothing`` and ``wire`` (DESIGN.md "Layers") that
turns game objects into packets and back (spec 003 §5.3-§5.4, issue 13). Exports are kept in one
sorted list below; every engineer adds names to it in sorted order.
"""

from __future__ import annotations

from lagless.replication.bitpack import pack_items as pack_items
from lagless.replication.client import OWNER_REDUNDANCY as OWNER_REDUNDANCY
from lagless.replication.client import ReplicationClient as ReplicationClient
from lagless.replication.display import Display as Display
from lagless.replication.events import NetEvent as NetEvent
from lagless.replication.events import Target as Target
from lagless.replication.events import TargetKind as TargetKind
from lagless.replication.fields import AngleField as AngleField
from lagless.replication.fields import BoolField as BoolField
from lagless.replication.fields import BytesField as BytesField
from lagless.replication.fields import EnumField as EnumField
from lagless.replication.fields import Field as Field
from lagless.replication.fields import FloatField as FloatField
from lagless.replication.fields import IntField as IntField
from lagless.replication.fields import NumericField as NumericField
from lagless.replication.fields import QuatField as QuatField
from lagless.replication.fields import RefField as RefField
from lagless.replication.fields import StringField as StringField
from lagless.replication.fields import Vec2Field as Vec2Field
from lagless.replication.fields import Vec3Field as Vec3Field
from lagless.replication.fields import Writer as Writer
from lagless.replication.ids import NO_ID as NO_ID
from lagless.replication.ids import NULL_REF as NULL_REF
from lagless.replication.ids import IdOverflowError as IdOverflowError
from lagless.replication.ids import IdPool as IdPool
from lagless.replication.ids import IdRef as IdRef
from lagless.replication.ids import IdState as IdState
from lagless.replication.ids import IdTakenError as IdTakenError
from lagless.replication.lagcomp import HitBox as HitBox
from lagless.replication.lagcomp import HitCircle as HitCircle
from lagless.replication.lagcomp import HitClaim as HitClaim
from lagless.replication.lagcomp import HitHistory as HitHistory
from lagless.replication.lagcomp import HitRejectReason as HitRejectReason
from lagless.replication.lagcomp import HitShape as HitShape
from lagless.replication.lagcomp import HitVerdict as HitVerdict
from lagless.replication.lagcomp import LagCompConfig as LagCompConfig
from lagless.replication.lagcomp import LagCompensator as LagCompensator
from lagless.replication.messages import MAX_OPS as MAX_OPS
from lagless.replication.messages import MAX_TARGETS as MAX_TARGETS
from lagless.replication.messages import MSG_CONTROL as MSG_CONTROL
from lagless.replication.messages import MSG_EVENT as MSG_EVENT
from lagless.replication.messages import MSG_OWNER_UPDATE as MSG_OWNER_UPDATE
from lagless.replication.messages import Announce as Announce
from lagless.replication.messages import BlobSet as BlobSet
from lagless.replication.messages import ControlOp as ControlOp
from lagless.replication.messages import Destroy as Destroy
from lagless.replication.messages import EventMessage as EventMessage
from lagless.replication.messages import OwnerChange as OwnerChange
from lagless.replication.messages import Welcome as Welcome
from lagless.replication.messages import decode_control as decode_control
from lagless.replication.messages import decode_event as decode_event
from lagless.replication.messages import decode_owner_update as decode_owner_update
from lagless.replication.messages import encode_control as encode_control
from lagless.replication.messages import encode_event as encode_event
from lagless.replication.messages import encode_owner_update as encode_owner_update
from lagless.replication.messages import message_type as message_type
from lagless.replication.objects import ClassRegistry as ClassRegistry
from lagless.replication.objects import NetworkObject as NetworkObject
from lagless.replication.objects import Role as Role
from lagless.replication.objects import World as World
from lagless.replication.objects import WorldChanges as WorldChanges
from lagless.replication.prediction import BlendConfig as BlendConfig
from lagless.replication.prediction import BlendKind as BlendKind
from lagless.replication.prediction import InputFrame as InputFrame
from lagless.replication.prediction import InputServer as InputServer
from lagless.replication.prediction import InputServerStats as InputServerStats
from lagless.replication.prediction import PredictionClient as PredictionClient
from lagless.replication.prediction import PredictionConfig as PredictionConfig
from lagless.replication.prediction import PredictionStats as PredictionStats
from lagless.replication.prediction import ServerReport as ServerReport
from lagless.replication.prediction import ValueCodec as ValueCodec
from lagless.replication.prediction import decode_input_packet as decode_input_packet
from lagless.replication.prediction import decode_server_report as decode_server_report
from lagless.replication.prediction import encode_input_packet as encode_input_packet
from lagless.replication.prediction import encode_server_report as encode_server_report
from lagless.replication.rollback_hits import DEFAULT_KILL_WINDOW as DEFAULT_KILL_WINDOW
from lagless.replication.rollback_hits import Kill as Kill
from lagless.replication.rollback_hits import KillArbiter as KillArbiter
from lagless.replication.rollback_hits import KillDecision as KillDecision
from lagless.replication.rollback_hits import KillDropReason as KillDropReason
from lagless.replication.schema import Schema as Schema
from lagless.replication.schema import Table as Table
from lagless.replication.server import CONTROL_CHANNEL as CONTROL_CHANNEL
from lagless.replication.server import OWNER_CHANNEL as OWNER_CHANNEL
from lagless.replication.server import SNAPSHOT_CHANNEL as SNAPSHOT_CHANNEL
from lagless.replication.server import ReplicationConfig as ReplicationConfig
from lagless.replication.server import ReplicationServer as ReplicationServer
from lagless.replication.session import ClientJoined as ClientJoined
from lagless.replication.session import ClientLeft as ClientLeft
from lagless.replication.session import EventReceived as EventReceived
from lagless.replication.session import ObjectAnnounced as ObjectAnnounced
from lagless.replication.session import ObjectDestroyed as ObjectDestroyed
from lagless.replication.session import OwnerChanged as OwnerChanged
from lagless.replication.session import ReplicationEvent as ReplicationEvent
from lagless.replication.session import SnapshotReceived as SnapshotReceived
from lagless.replication.session import Welcomed as Welcomed
from lagless.replication.snapshot import MSG_ACK as MSG_ACK
from lagless.replication.snapshot import MSG_SNAPSHOT as MSG_SNAPSHOT
from lagless.replication.snapshot import SnapshotConfig as SnapshotConfig
from lagless.replication.snapshot import SnapshotEngine as SnapshotEngine
from lagless.replication.snapshot import SnapshotInfo as SnapshotInfo
from lagless.replication.snapshot import SnapshotReader as SnapshotReader
from lagless.replication.snapshot import decode_ack as decode_ack
from lagless.replication.snapshot import encode_ack as encode_ack

__all__ = [
    "CONTROL_CHANNEL",
    "DEFAULT_KILL_WINDOW",
    "MAX_OPS",
    "MAX_TARGETS",
    "MSG_ACK",
    "MSG_CONTROL",
    "MSG_EVENT",
    "MSG_OWNER_UPDATE",
    "MSG_SNAPSHOT",
    "NO_ID",
    "NULL_REF",
    "OWNER_CHANNEL",
    "OWNER_REDUNDANCY",
    "SNAPSHOT_CHANNEL",
    "AngleField",
    "Announce",
    "BlendConfig",
    "BlendKind",
    "BlobSet",
    "BoolField",
    "BytesField",
    "ClassRegistry",
    "ClientJoined",
    "ClientLeft",
    "ControlOp",
    "Destroy",
    "Display",
    "EnumField",
    "EventMessage",
    "EventReceived",
    "Field",
    "FloatField",
    "HitBox",
    "HitCircle",
    "HitClaim",
    "HitHistory",
    "HitRejectReason",
    "HitShape",
    "HitVerdict",
    "IdOverflowError",
    "IdPool",
    "IdRef",
    "IdState",
    "IdTakenError",
    "InputFrame",
    "InputServer",
    "InputServerStats",
    "IntField",
    "Kill",
    "KillArbiter",
    "KillDecision",
    "KillDropReason",
    "LagCompConfig",
    "LagCompensator",
    "NetEvent",
    "NetworkObject",
    "NumericField",
    "ObjectAnnounced",
    "ObjectDestroyed",
    "OwnerChange",
    "OwnerChanged",
    "PredictionClient",
    "PredictionConfig",
    "PredictionStats",
    "QuatField",
    "RefField",
    "ReplicationClient",
    "ReplicationConfig",
    "ReplicationEvent",
    "ReplicationServer",
    "Role",
    "Schema",
    "ServerReport",
    "SnapshotConfig",
    "SnapshotEngine",
    "SnapshotInfo",
    "SnapshotReader",
    "SnapshotReceived",
    "StringField",
    "Table",
    "Target",
    "TargetKind",
    "ValueCodec",
    "Vec2Field",
    "Vec3Field",
    "Welcome",
    "Welcomed",
    "World",
    "WorldChanges",
    "Writer",
    "decode_ack",
    "decode_control",
    "decode_event",
    "decode_input_packet",
    "decode_owner_update",
    "decode_server_report",
    "encode_ack",
    "encode_control",
    "encode_event",
    "encode_input_packet",
    "encode_owner_update",
    "encode_server_report",
    "message_type",
    "pack_items",
]
