"""Sans-I/O transport: the netcode 1.02 connection layer, acks, channels, fragments, clock sync.

Implements DESIGN.md "Transport defaults"; see each module's docstring for its spec sections.
"""

from __future__ import annotations

from lagless.transport.acks import AckConfig as AckConfig
from lagless.transport.acks import AckHeader as AckHeader
from lagless.transport.acks import AckTracker as AckTracker
from lagless.transport.acks import SequenceBuffer as SequenceBuffer
from lagless.transport.address import decode_address as decode_address
from lagless.transport.address import encode_address as encode_address
from lagless.transport.address import format_address as format_address
from lagless.transport.address import parse_address as parse_address
from lagless.transport.build import compiled as compiled
from lagless.transport.challenge import ChallengeToken as ChallengeToken
from lagless.transport.challenge import decrypt_challenge_token as decrypt_challenge_token
from lagless.transport.challenge import encrypt_challenge_token as encrypt_challenge_token
from lagless.transport.challenge import read_challenge_token as read_challenge_token
from lagless.transport.challenge import write_challenge_token as write_challenge_token
from lagless.transport.client import Client as Client
from lagless.transport.clocksync import CristianClock as CristianClock
from lagless.transport.clocksync import CristianConfig as CristianConfig
from lagless.transport.clocksync import Spec004Clock as Spec004Clock
from lagless.transport.clocksync import Spec004ClockConfig as Spec004ClockConfig
from lagless.transport.config import ChannelConfig as ChannelConfig
from lagless.transport.config import ChannelKind as ChannelKind
from lagless.transport.config import CongestionConfig as CongestionConfig
from lagless.transport.config import MessageLayerConfig as MessageLayerConfig
from lagless.transport.congestion import CongestionController as CongestionController
from lagless.transport.congestion import CongestionMode as CongestionMode
from lagless.transport.connection import Connection as Connection
from lagless.transport.connection import ConnectionConfig as ConnectionConfig
from lagless.transport.connection import ConnectionStatistics as ConnectionStatistics
from lagless.transport.connection import PayloadDropReason as PayloadDropReason
from lagless.transport.constants import RELIABLE as RELIABLE
from lagless.transport.constants import RELIABLE_UNORDERED as RELIABLE_UNORDERED
from lagless.transport.constants import UNRELIABLE as UNRELIABLE
from lagless.transport.constants import UNRELIABLE_SEQUENCED as UNRELIABLE_SEQUENCED
from lagless.transport.crypto import PacketCipher as PacketCipher
from lagless.transport.drops import DropReason as DropReason
from lagless.transport.drops import NetcodeStatistics as NetcodeStatistics
from lagless.transport.events import ConnectionViolated as ConnectionViolated
from lagless.transport.events import Event as Event
from lagless.transport.events import MessageDelivered as MessageDelivered
from lagless.transport.events import MessageReceived as MessageReceived
from lagless.transport.events import PacketDelivered as PacketDelivered
from lagless.transport.events import PacketLost as PacketLost
from lagless.transport.events import TransportEvent as TransportEvent
from lagless.transport.message_errors import MessageDropReason as MessageDropReason
from lagless.transport.message_errors import MessageTooLarge as MessageTooLarge
from lagless.transport.message_errors import SendQueueFull as SendQueueFull
from lagless.transport.netcode_client import NetcodeClient as NetcodeClient
from lagless.transport.netcode_client import NetcodeClientConfig as NetcodeClientConfig
from lagless.transport.netcode_events import ClientConnected as ClientConnected
from lagless.transport.netcode_events import ClientDisconnected as ClientDisconnected
from lagless.transport.netcode_events import Connected as Connected
from lagless.transport.netcode_events import ConnectFailed as ConnectFailed
from lagless.transport.netcode_events import Disconnected as Disconnected
from lagless.transport.netcode_events import NetcodeEvent as NetcodeEvent
from lagless.transport.netcode_events import PayloadReceived as PayloadReceived
from lagless.transport.netcode_server import NetcodeServer as NetcodeServer
from lagless.transport.netcode_server import NetcodeServerConfig as NetcodeServerConfig
from lagless.transport.netcode_state import CLIENT_TRANSITIONS as CLIENT_TRANSITIONS
from lagless.transport.netcode_state import ClientDisconnectReason as ClientDisconnectReason
from lagless.transport.netcode_state import ClientInput as ClientInput
from lagless.transport.netcode_state import NetcodeClientState as NetcodeClientState
from lagless.transport.netcode_state import ServerDisconnectReason as ServerDisconnectReason
from lagless.transport.packer import MessageLayer as MessageLayer
from lagless.transport.packer import MessageLayerStatistics as MessageLayerStatistics
from lagless.transport.packet import ConnectionChallengePacket as ConnectionChallengePacket
from lagless.transport.packet import ConnectionDeniedPacket as ConnectionDeniedPacket
from lagless.transport.packet import ConnectionRequestPacket as ConnectionRequestPacket
from lagless.transport.packet import ConnectionResponsePacket as ConnectionResponsePacket
from lagless.transport.packet import DisconnectPacket as DisconnectPacket
from lagless.transport.packet import (
    InsecureConnectionRequestPacket as InsecureConnectionRequestPacket,
)
from lagless.transport.packet import KeepAlivePacket as KeepAlivePacket
from lagless.transport.packet import PacketType as PacketType
from lagless.transport.packet import PayloadPacket as PayloadPacket
from lagless.transport.packet import VerifiedRequest as VerifiedRequest
from lagless.transport.packet import read_packet as read_packet
from lagless.transport.packet import write_packet as write_packet
from lagless.transport.replay import ReplayWindow as ReplayWindow
from lagless.transport.rtt import BandwidthMeter as BandwidthMeter
from lagless.transport.rtt import LinkStatistics as LinkStatistics
from lagless.transport.rtt import LossEstimator as LossEstimator
from lagless.transport.rtt import RttEstimator as RttEstimator
from lagless.transport.server import LAGLESS_MARK as LAGLESS_MARK
from lagless.transport.server import Server as Server
from lagless.transport.server import mark_user_data as mark_user_data
from lagless.transport.token import ConnectToken as ConnectToken
from lagless.transport.token import ConnectTokenError as ConnectTokenError
from lagless.transport.token import ConnectTokenPrivate as ConnectTokenPrivate
from lagless.transport.token import decrypt_private_token as decrypt_private_token
from lagless.transport.token import encrypt_private_token as encrypt_private_token
from lagless.transport.token import generate_connect_token as generate_connect_token
from lagless.transport.token import read_connect_token as read_connect_token
from lagless.transport.token import read_private_token as read_private_token
from lagless.transport.token import write_connect_token as write_connect_token
from lagless.transport.token import write_private_token as write_private_token

__all__ = [
    "CLIENT_TRANSITIONS",
    "LAGLESS_MARK",
    "RELIABLE",
    "RELIABLE_UNORDERED",
    "UNRELIABLE",
    "UNRELIABLE_SEQUENCED",
    "AckConfig",
    "AckHeader",
    "AckTracker",
    "BandwidthMeter",
    "ChallengeToken",
    "ChannelConfig",
    "ChannelKind",
    "Client",
    "ClientConnected",
    "ClientDisconnectReason",
    "ClientDisconnected",
    "ClientInput",
    "CongestionConfig",
    "CongestionController",
    "CongestionMode",
    "ConnectFailed",
    "ConnectToken",
    "ConnectTokenError",
    "ConnectTokenPrivate",
    "Connected",
    "Connection",
    "ConnectionChallengePacket",
    "ConnectionConfig",
    "ConnectionDeniedPacket",
    "ConnectionRequestPacket",
    "ConnectionResponsePacket",
    "ConnectionStatistics",
    "ConnectionViolated",
    "CristianClock",
    "CristianConfig",
    "DisconnectPacket",
    "Disconnected",
    "DropReason",
    "Event",
    "InsecureConnectionRequestPacket",
    "KeepAlivePacket",
    "LinkStatistics",
    "LossEstimator",
    "MessageDelivered",
    "MessageDropReason",
    "MessageLayer",
    "MessageLayerConfig",
    "MessageLayerStatistics",
    "MessageReceived",
    "MessageTooLarge",
    "NetcodeClient",
    "NetcodeClientConfig",
    "NetcodeClientState",
    "NetcodeEvent",
    "NetcodeServer",
    "NetcodeServerConfig",
    "NetcodeStatistics",
    "PacketCipher",
    "PacketDelivered",
    "PacketLost",
    "PacketType",
    "PayloadDropReason",
    "PayloadPacket",
    "PayloadReceived",
    "ReplayWindow",
    "RttEstimator",
    "SendQueueFull",
    "SequenceBuffer",
    "Server",
    "ServerDisconnectReason",
    "Spec004Clock",
    "Spec004ClockConfig",
    "TransportEvent",
    "VerifiedRequest",
    "compiled",
    "decode_address",
    "decrypt_challenge_token",
    "decrypt_private_token",
    "encode_address",
    "encrypt_challenge_token",
    "encrypt_private_token",
    "format_address",
    "generate_connect_token",
    "mark_user_data",
    "parse_address",
    "read_challenge_token",
    "read_connect_token",
    "read_packet",
    "read_private_token",
    "write_challenge_token",
    "write_connect_token",
    "write_packet",
    "write_private_token",
]
