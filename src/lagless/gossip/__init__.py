"""lagless.gossip: the Silac gossip protocol (spec 002): wire codec and sans-I/O peer.

`codec` encodes and decodes every message of spec 002 §2 (layouts and the §7 decision list in
``docs/protocol/silac.md``); `GossipPeer` runs Algorithm 1 with weighted recipient selection
(Eq. 2.1–2.7), the hop TTL, join / accept / reject / leave, retransmission requests, loss
correction, the interest path and conflict rollback.
"""

from __future__ import annotations

from lagless.gossip.codec import AVATAR_INFO_SIZE as AVATAR_INFO_SIZE
from lagless.gossip.codec import HEADER_SIZE as HEADER_SIZE
from lagless.gossip.codec import LAST_RECEIVED_OFFSET as LAST_RECEIVED_OFFSET
from lagless.gossip.codec import decode as decode
from lagless.gossip.codec import encode as encode
from lagless.gossip.codec import measure as measure
from lagless.gossip.codec import with_last_received as with_last_received
from lagless.gossip.config import GossipConfig as GossipConfig
from lagless.gossip.events import AvatarUpdated as AvatarUpdated
from lagless.gossip.events import GossipEvent as GossipEvent
from lagless.gossip.events import InteractionReceived as InteractionReceived
from lagless.gossip.events import InteractionRolledBack as InteractionRolledBack
from lagless.gossip.events import JoinAccepted as JoinAccepted
from lagless.gossip.events import JoinFailed as JoinFailed
from lagless.gossip.events import JoinRejected as JoinRejected
from lagless.gossip.events import LeaveReason as LeaveReason
from lagless.gossip.events import PeerJoined as PeerJoined
from lagless.gossip.events import PeerLeft as PeerLeft
from lagless.gossip.lobby import GameClosed as GameClosed
from lagless.gossip.lobby import GameInfoReceived as GameInfoReceived
from lagless.gossip.lobby import GameOpened as GameOpened
from lagless.gossip.lobby import GamesListed as GamesListed
from lagless.gossip.lobby import Lobby as Lobby
from lagless.gossip.lobby import LobbyClient as LobbyClient
from lagless.gossip.lobby import LobbyClientConfig as LobbyClientConfig
from lagless.gossip.lobby import LobbyClientStatistics as LobbyClientStatistics
from lagless.gossip.lobby import LobbyConfig as LobbyConfig
from lagless.gossip.lobby import LobbyDropReason as LobbyDropReason
from lagless.gossip.lobby import LobbyStatistics as LobbyStatistics
from lagless.gossip.lobby import LobbyUnreachable as LobbyUnreachable
from lagless.gossip.messages import MAX_CONTACTS as MAX_CONTACTS
from lagless.gossip.messages import MAX_GAMES as MAX_GAMES
from lagless.gossip.messages import MAX_INTERACTIONS as MAX_INTERACTIONS
from lagless.gossip.messages import MAX_NAME_BYTES as MAX_NAME_BYTES
from lagless.gossip.messages import MAX_RECIPIENTS as MAX_RECIPIENTS
from lagless.gossip.messages import MAX_RETRANSMIT_IDS as MAX_RETRANSMIT_IDS
from lagless.gossip.messages import NO_INTERACTION as NO_INTERACTION
from lagless.gossip.messages import RETRANSMISSION_FLAG as RETRANSMISSION_FLAG
from lagless.gossip.messages import AvatarInfo as AvatarInfo
from lagless.gossip.messages import AvatarState as AvatarState
from lagless.gossip.messages import ExtraInfoRequest as ExtraInfoRequest
from lagless.gossip.messages import GameEntry as GameEntry
from lagless.gossip.messages import GameInfo as GameInfo
from lagless.gossip.messages import GamesList as GamesList
from lagless.gossip.messages import Header as Header
from lagless.gossip.messages import Heartbeat as Heartbeat
from lagless.gossip.messages import Interaction as Interaction
from lagless.gossip.messages import InteractionInfo as InteractionInfo
from lagless.gossip.messages import InteractionKind as InteractionKind
from lagless.gossip.messages import InteractionRecord as InteractionRecord
from lagless.gossip.messages import JoinAccept as JoinAccept
from lagless.gossip.messages import JoinReject as JoinReject
from lagless.gossip.messages import JoinRequest as JoinRequest
from lagless.gossip.messages import Leave as Leave
from lagless.gossip.messages import MessageType as MessageType
from lagless.gossip.messages import Packet as Packet
from lagless.gossip.messages import Payload as Payload
from lagless.gossip.messages import RejectCode as RejectCode
from lagless.gossip.messages import RetransmissionRequest as RetransmissionRequest
from lagless.gossip.messages import Tail as Tail
from lagless.gossip.messages import Vec3 as Vec3
from lagless.gossip.peer import GossipPeer as GossipPeer
from lagless.gossip.selection import draw_recipients as draw_recipients
from lagless.gossip.selection import goal_function as goal_function
from lagless.gossip.selection import select_peers as select_peers
from lagless.gossip.selection import selection_weights as selection_weights
from lagless.gossip.state import TRANSITIONS as TRANSITIONS
from lagless.gossip.state import DropReason as DropReason
from lagless.gossip.state import GossipStatistics as GossipStatistics
from lagless.gossip.state import PeerInput as PeerInput
from lagless.gossip.state import PeerState as PeerState
from lagless.gossip.table import PeerRecord as PeerRecord
from lagless.gossip.table import PeerTable as PeerTable
from lagless.gossip.table import avatar_id_for as avatar_id_for
from lagless.gossip.table import join_reject_code as join_reject_code
from lagless.gossip.world_state import InterestPath as InterestPath
from lagless.gossip.world_state import WorldState as WorldState

__all__ = [
    "AVATAR_INFO_SIZE",
    "HEADER_SIZE",
    "LAST_RECEIVED_OFFSET",
    "MAX_CONTACTS",
    "MAX_GAMES",
    "MAX_INTERACTIONS",
    "MAX_NAME_BYTES",
    "MAX_RECIPIENTS",
    "MAX_RETRANSMIT_IDS",
    "NO_INTERACTION",
    "RETRANSMISSION_FLAG",
    "TRANSITIONS",
    "AvatarInfo",
    "AvatarState",
    "AvatarUpdated",
    "DropReason",
    "ExtraInfoRequest",
    "GameClosed",
    "GameEntry",
    "GameInfo",
    "GameInfoReceived",
    "GameOpened",
    "GamesList",
    "GamesListed",
    "GossipConfig",
    "GossipEvent",
    "GossipPeer",
    "GossipStatistics",
    "Header",
    "Heartbeat",
    "Interaction",
    "InteractionInfo",
    "InteractionKind",
    "InteractionReceived",
    "InteractionRecord",
    "InteractionRolledBack",
    "JoinAccept",
    "JoinAccepted",
    "JoinFailed",
    "JoinReject",
    "JoinRejected",
    "JoinRequest",
    "Leave",
    "LeaveReason",
    "Lobby",
    "LobbyClient",
    "LobbyClientConfig",
    "LobbyClientStatistics",
    "LobbyConfig",
    "LobbyDropReason",
    "LobbyStatistics",
    "LobbyUnreachable",
    "MessageType",
    "Packet",
    "Payload",
    "PeerInput",
    "PeerJoined",
    "PeerLeft",
    "PeerRecord",
    "PeerState",
    "PeerTable",
    "RejectCode",
    "RetransmissionRequest",
    "Tail",
    "Vec3",
    "WorldState",
    "avatar_id_for",
    "decode",
    "draw_recipients",
    "encode",
    "goal_function",
    "join_reject_code",
    "measure",
    "select_peers",
    "selection_weights",
    "with_last_received",
]
