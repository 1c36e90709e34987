"""lagless.game: an authoritative game server, its client, LAN discovery and a room relay.

Issue 14 items 1-3 on top of `lagless.replication` (DESIGN.md "Layers": this layer sits beside
``rooms``, above replication): `GameServer` / `GameClient` (spec 003 §5.4 server and client API,
spec 000 §5.2 server components: collision, level, entity lifecycle, lag-compensated hits),
`Level` from Tiled JSON maps, `DiscoveryClient` / `DiscoveryResponder` (spec 003 checklist 7.1),
and `RoomServer` / `RoomClient` (spec 000 §3.1 rooms, matchmaking and relay). Every protocol object
is sans-I/O; `lagless.io.discovery` drives discovery on broadcast sockets.
"""

from __future__ import annotations

from lagless.game.client import GameClient as GameClient
from lagless.game.discovery import DEFAULT_DISCOVERY_GROUP as DEFAULT_DISCOVERY_GROUP
from lagless.game.discovery import DEFAULT_DISCOVERY_PORT as DEFAULT_DISCOVERY_PORT
from lagless.game.discovery import DiscoveryClient as DiscoveryClient
from lagless.game.discovery import DiscoveryReply as DiscoveryReply
from lagless.game.discovery import DiscoveryResponder as DiscoveryResponder
from lagless.game.discovery import ServerAnnouncement as ServerAnnouncement
from lagless.game.discovery import ServerList as ServerList
from lagless.game.discovery import decode_query as decode_query
from lagless.game.discovery import decode_reply as decode_reply
from lagless.game.discovery import encode_query as encode_query
from lagless.game.discovery import encode_reply as encode_reply
from lagless.game.entities import DEFAULT_WEAPONS as DEFAULT_WEAPONS
from lagless.game.entities import GAME_CLASSES as GAME_CLASSES
from lagless.game.entities import GAME_EVENTS as GAME_EVENTS
from lagless.game.entities import Avatar as Avatar
from lagless.game.entities import Collision as Collision
from lagless.game.entities import Hit as Hit
from lagless.game.entities import Kicked as Kicked
from lagless.game.entities import Killed as Killed
from lagless.game.entities import Shoot as Shoot
from lagless.game.entities import Weapon as Weapon
from lagless.game.events import ClientInfo as ClientInfo
from lagless.game.events import ConnectingFailed as ConnectingFailed
from lagless.game.events import ConnectionEnded as ConnectionEnded
from lagless.game.events import ConnectionEstablished as ConnectionEstablished
from lagless.game.events import DiscoveredServer as DiscoveredServer
from lagless.game.events import KillDecided as KillDecided
from lagless.game.events import PlayerJoined as PlayerJoined
from lagless.game.events import PlayerLeft as PlayerLeft
from lagless.game.events import PlayerRejected as PlayerRejected
from lagless.game.events import ServerDiscovered as ServerDiscovered
from lagless.game.events import ServerLost as ServerLost
from lagless.game.events import ShotJudged as ShotJudged
from lagless.game.geometry import Contact as Contact
from lagless.game.geometry import ConvexPolygon as ConvexPolygon
from lagless.game.geometry import aabb_overlap_matrix as aabb_overlap_matrix
from lagless.game.geometry import aabb_pairs as aabb_pairs
from lagless.game.geometry import ray_cast as ray_cast
from lagless.game.geometry import regular_polygon as regular_polygon
from lagless.game.geometry import sat_contact as sat_contact
from lagless.game.level import Level as Level
from lagless.game.level import builtin_map as builtin_map
from lagless.game.level import load_tiled as load_tiled
from lagless.game.rooms import ROOM_MESSAGES as ROOM_MESSAGES
from lagless.game.rooms import CreateRoom as CreateRoom
from lagless.game.rooms import Joined as Joined
from lagless.game.rooms import JoinRoom as JoinRoom
from lagless.game.rooms import LeaveRoom as LeaveRoom
from lagless.game.rooms import Left as Left
from lagless.game.rooms import ListRooms as ListRooms
from lagless.game.rooms import Matchmake as Matchmake
from lagless.game.rooms import MemberJoined as MemberJoined
from lagless.game.rooms import MemberLeft as MemberLeft
from lagless.game.rooms import RaiseEvent as RaiseEvent
from lagless.game.rooms import Relayed as Relayed
from lagless.game.rooms import RoomChanged as RoomChanged
from lagless.game.rooms import RoomClient as RoomClient
from lagless.game.rooms import RoomError as RoomError
from lagless.game.rooms import RoomEventReceived as RoomEventReceived
from lagless.game.rooms import RoomInfo as RoomInfo
from lagless.game.rooms import RoomList as RoomList
from lagless.game.rooms import RoomMessageDropped as RoomMessageDropped
from lagless.game.rooms import RoomServer as RoomServer
from lagless.game.rooms import decode_room_message as decode_room_message
from lagless.game.rooms import encode_room_message as encode_room_message
from lagless.game.server import GameConfig as GameConfig
from lagless.game.server import GameServer as GameServer

__all__ = [
    "DEFAULT_DISCOVERY_GROUP",
    "DEFAULT_DISCOVERY_PORT",
    "DEFAULT_WEAPONS",
    "GAME_CLASSES",
    "GAME_EVENTS",
    "ROOM_MESSAGES",
    "Avatar",
    "ClientInfo",
    "Collision",
    "ConnectingFailed",
    "ConnectionEnded",
    "ConnectionEstablished",
    "Contact",
    "ConvexPolygon",
    "CreateRoom",
    "DiscoveredServer",
    "DiscoveryClient",
    "DiscoveryReply",
    "DiscoveryResponder",
    "GameClient",
    "GameConfig",
    "GameServer",
    "Hit",
    "JoinRoom",
    "Joined",
    "Kicked",
    "KillDecided",
    "Killed",
    "LeaveRoom",
    "Left",
    "Level",
    "ListRooms",
    "Matchmake",
    "MemberJoined",
    "MemberLeft",
    "PlayerJoined",
    "PlayerLeft",
    "PlayerRejected",
    "RaiseEvent",
    "Relayed",
    "RoomChanged",
    "RoomClient",
    "RoomError",
    "RoomEventReceived",
    "RoomInfo",
    "RoomList",
    "RoomMessageDropped",
    "RoomServer",
    "ServerAnnouncement",
    "ServerDiscovered",
    "ServerList",
    "ServerLost",
    "Shoot",
    "ShotJudged",
    "Weapon",
    "aabb_overlap_matrix",
    "aabb_pairs",
    "builtin_map",
    "decode_query",
    "decode_reply",
    "decode_room_message",
    "encode_query",
    "encode_reply",
    "encode_room_message",
    "load_tiled",
    "ray_cast",
    "regular_polygon",
    "sat_contact",
]
