"""lagless.replication: network objects, ID pools, schemas, snapshots, delta, priority, RPC.

The layer above ``transport``, ``interest``, ``smoothing`` and ``wire`` (DESIGN.md "Layers") that
turns game objects into packets and back (spec 003 §5.3-§5.4, issue 13). Exports are kept in one
sorted list below; every engineer adds names to it in sorted order.
"""

from __future__ import annotations

from lagless.replication.bitpack import pack_items as pack_items
from lagless.replication.client import ReplicationClient as ReplicationClient
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
    "SNAPSHOT_CHANNEL",
    "AngleField",
    "Announce",
    "BlobSet",
    "BoolField",
    "BytesField",
    "ClassRegistry",
    "ClientJoined",
    "ClientLeft",
    "ControlOp",
    "Destroy",
    "EnumField",
    "EventMessage",
    "EventReceived",
    "Field",
    "FloatField",
    "IdOverflowError",
    "IdPool",
    "IdRef",
    "IdState",
    "IdTakenError",
    "IntField",
    "NetEvent",
    "NetworkObject",
    "NumericField",
    "ObjectAnnounced",
    "ObjectDestroyed",
    "OwnerChange",
    "OwnerChanged",
    "QuatField",
    "RefField",
    "ReplicationClient",
    "ReplicationConfig",
    "ReplicationEvent",
    "ReplicationServer",
    "Role",
    "Schema",
    "SnapshotConfig",
    "SnapshotEngine",
    "SnapshotInfo",
    "SnapshotReader",
    "SnapshotReceived",
    "StringField",
    "Table",
    "Target",
    "TargetKind",
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
    "decode_owner_update",
    "encode_ack",
    "encode_control",
    "encode_event",
    "encode_owner_update",
    "message_type",
    "pack_items",
]
