"""The Silac message model: type identifiers, header, payloads, tail and retransmission request.

Implements spec 002 §2.1–§2.11 (Table 2.1, Fig. 2.3–2.11) as frozen value objects; the byte
layouts live in `lagless.gossip.codec` and ``docs/protocol/silac.md``. Decisions (spec 002 §7):

* The retransmission flag 64 is OR-ed onto the base type (§7.5); a `Packet` carries it as an
  optional `RetransmissionRequest`, never as a type (``test_codec.py::test_flag_is_or``).
* The header's type byte and data-size field are derived from the payload, so `Header` holds only
  the five free fields and ``decode(encode(p)) == p`` is exact (``test_codec.py::test_roundtrip``).
* An interaction is one u32 code: kind (4 bits) | serial (8 bits) | target (20 bits), filling the
  "interaction performed" and "interaction to roll back" rows of Fig. 2.9 and the interaction id
  that type 10 lacks (§7.13) (``test_codec.py::test_interaction_code_layout``).
* Facing is a direction vector (x, y, z), not Euler angles (§7.3), so the angle β of Eq. 2.4 needs
  no conversion (``test_selection.py::test_goal_function_values``).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Final, TypeAlias

from lagless._types import Address
from lagless.errors import LocalProtocolError

__all__ = [
    "MAX_CONTACTS",
    "MAX_GAMES",
    "MAX_INTERACTIONS",
    "MAX_NAME_BYTES",
    "MAX_RECIPIENTS",
    "MAX_RETRANSMIT_IDS",
    "NO_INTERACTION",
    "RETRANSMISSION_FLAG",
    "AvatarInfo",
    "AvatarState",
    "ExtraInfoRequest",
    "GameEntry",
    "GameInfo",
    "GamesList",
    "Header",
    "Heartbeat",
    "Interaction",
    "InteractionInfo",
    "InteractionKind",
    "InteractionRecord",
    "JoinAccept",
    "JoinReject",
    "JoinRequest",
    "Leave",
    "MessageType",
    "Packet",
    "Payload",
    "RejectCode",
    "RetransmissionRequest",
    "Tail",
    "Vec3",
]

Vec3: TypeAlias = tuple[float, float, float]
"""Three float32-representable components: a position (metres) or a facing direction."""

RETRANSMISSION_FLAG: Final = 0x40  # type bit 64 of Table 2.1, OR-ed onto the base type (§7.5)
MAX_NAME_BYTES: Final = 64  # bytes of UTF-8 in a participant name (decision §7.2)
MAX_RECIPIENTS: Final = 255  # participant ids in one tail (bounds decoder allocation)
MAX_RETRANSMIT_IDS: Final = 64  # participant ids in one retransmission request
MAX_INTERACTIONS: Final = 32  # interaction records in one type-10 message
MAX_GAMES: Final = 64  # games in one type-32 list
MAX_CONTACTS: Final = 64  # contact nodes per game in types 32/33
_U32_LIMIT: Final = 1 << 32


class MessageType(enum.IntEnum):
    """Base message type identifiers of spec 002 Table 2.1 (flag 64 excluded)."""

    JOIN_REQUEST = 0
    """§2.5.3 join request; gossiped."""
    JOIN_ACCEPT = 1
    """§2.5.4 join accept; direct reply, never forwarded."""
    JOIN_REJECT = 2
    """§2.5.5 join reject with a `RejectCode`; direct reply."""
    LEAVE = 3
    """§2.5.6 leave game; gossiped (decision: carries the leaver's avatar id)."""
    AVATAR_INFO = 9
    """§2.5.9 avatar state change; the most frequent message."""
    INTERACTION_INFO = 10
    """§2.5.8 full interaction info (loss correction); direct."""
    GAMES_LIST = 32
    """§2.5.11 active games list (info server); no tail."""
    GAME_INFO = 33
    """§2.5.12 active game info (one game); no tail."""
    EXTRA_INFO_REQUEST = 34
    """§2.5.13 extra game info request; no tail."""
    HEARTBEAT = 35
    """§2.5.14 heartbeat to the info server; no tail."""

    @property
    def has_tail(self) -> bool:
        """True for game messages (0–10); info-server messages (32–35) carry no tail (§2.5.10)."""
        return self._value_ < 32


class RejectCode(enum.IntEnum):
    """Join-reject error codes of spec 002 Table 2.2."""

    INVALID_AVATAR = 1
    """Invalid avatar data."""
    OUTSIDE_MAP = 2
    """Avatar outside the map area."""
    INVALID_GAME = 3
    """Invalid game data (wrong game id, map or game type)."""
    NAME_TAKEN = 4
    """The name is already used by another participant."""
    INVALID_ADDRESS = 5
    """Invalid sender address."""


class InteractionKind(enum.IntEnum):
    """The 4-bit kind of an interaction code (decision §7.13)."""

    NONE = 0
    """No interaction (the code 0 means "none" on the wire)."""
    SHOT = 1
    """Firing a weapon: transient, never corrected by type 10 (§2.5.8)."""
    PICKUP = 2
    """Picking up an item (target = item id): important, corrected and conflict-checked (§2.7)."""


_KIND_SHIFT: Final = 28
_SERIAL_SHIFT: Final = 20
_TARGET_MASK: Final = (1 << 20) - 1


def _check_vec3(name: str, value: Vec3) -> None:
    isfinite = math.isfinite
    if len(value) != 3 or not (isfinite(value[0]) and isfinite(value[1]) and isfinite(value[2])):
        raise LocalProtocolError(f"{name} must be 3 finite floats, got {value!r}")


def _check_u32(name: str, value: int) -> None:
    if not 0 <= value < _U32_LIMIT:
        raise LocalProtocolError(f"{name} must be in [0, 2**32), got {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Interaction:
    """One interaction, packed on the wire as a u32 code kind:4 | serial:8 | target:20.

    Raises:
        LocalProtocolError: a field is out of range.
    """

    kind: InteractionKind
    """What was done."""
    serial: int = 0
    """Per-avatar attempt counter mod 256, so repeated attempts on one target differ."""
    target: int = 0
    """Item id for pickups, an application value for shots; in [0, 2**20)."""

    def __post_init__(self) -> None:
        if not 0 <= self.serial <= 0xFF:
            raise LocalProtocolError(f"serial must be in [0, 255], got {self.serial}")
        if not 0 <= self.target <= _TARGET_MASK:
            raise LocalProtocolError(f"target must be in [0, 2**20), got {self.target}")
        if self.kind is InteractionKind.NONE and (self.serial or self.target):
            raise LocalProtocolError("a NONE interaction must have serial 0 and target 0")

    @property
    def code(self) -> int:
        """The u32 wire code."""
        return (int(self.kind) << _KIND_SHIFT) | (self.serial << _SERIAL_SHIFT) | self.target

    @property
    def important(self) -> bool:
        """True for interactions corrected by type 10 and ranked first on the interest path."""
        return self.kind is InteractionKind.PICKUP

    @classmethod
    def from_code(cls, code: int) -> Interaction:
        """Unpack a u32 wire code.

        Args:
            code: The u32 code.

        Raises:
            ValueError: The kind nibble is not an `InteractionKind` (the codec turns it into a
                `DecodeError`), or the code is 0-kind with non-zero bits.
        """
        return cls(
            kind=InteractionKind(code >> _KIND_SHIFT),
            serial=(code >> _SERIAL_SHIFT) & 0xFF,
            target=code & _TARGET_MASK,
        )


NO_INTERACTION: Final = Interaction(kind=InteractionKind.NONE)
"""The code-0 "no interaction" value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AvatarState:
    """The avatar fields shared by types 0, 1 and 9 (Fig. 2.4, 2.5, 2.9).

    Raises:
        LocalProtocolError: a field is out of range or not finite.
    """

    avatar_id: int
    """u32 avatar id = f(owner address, port) (see `lagless.gossip.table.avatar_id_for`)."""
    position: Vec3
    """Position, metres, three float32."""
    facing: Vec3
    """Facing direction vector (any non-negative length), three float32."""
    state: int = 0
    """Application avatar state, u8."""
    weapon: int = 0
    """Active weapon id, u24."""

    def __post_init__(self) -> None:
        _check_u32("avatar_id", self.avatar_id)
        _check_vec3("position", self.position)
        _check_vec3("facing", self.facing)
        if not 0 <= self.state <= 0xFF:
            raise LocalProtocolError(f"state must be in [0, 255], got {self.state}")
        if not 0 <= self.weapon <= 0xFFFFFF:
            raise LocalProtocolError(f"weapon must be in [0, 2**24), got {self.weapon}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Header:
    """The free fields of the 20-byte header (Fig. 2.3); type and data size are derived."""

    hop: int = 0
    """Which sender in the chain wrote this copy: 0 = originator (§2.13)."""
    sender_port: int = 0
    """Port on which the current sender expects replies."""
    game_id: int = 0
    """Game id chosen at random by the first participant."""
    message_number: int = 0
    """The originator's logical clock value for this message."""
    last_received: int = 0
    """Number of the last message originated by the recipient that the sender received (§2.11)."""

    def __post_init__(self) -> None:
        if not 0 <= self.hop <= 0xFF:
            raise LocalProtocolError(f"hop must be in [0, 255], got {self.hop}")
        if not 0 <= self.sender_port <= 0xFFFF:
            raise LocalProtocolError(f"sender_port must be in [0, 65535], got {self.sender_port}")
        _check_u32("game_id", self.game_id)
        _check_u32("message_number", self.message_number)
        _check_u32("last_received", self.last_received)


def _check_name(name: str) -> None:
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise LocalProtocolError(f"name must be at most {MAX_NAME_BYTES} UTF-8 bytes, got {name!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinRequest:
    """Type 0 (Fig. 2.4) plus the originator address the figure lacks (§7.4)."""

    avatar: AvatarState
    """The newcomer's full avatar."""
    model: int = 0
    """Avatar model id, u32."""
    name: str = ""
    """Participant name, at most `MAX_NAME_BYTES` UTF-8 bytes."""
    map_id: int = 0
    """Map id, u32."""
    game_type: int = 0
    """Game type, u32."""
    origin: Address = ("0.0.0.0", 0)
    """Where accept/reject replies go: an IPv4 or IPv6 literal and a port."""

    def __post_init__(self) -> None:
        _check_u32("model", self.model)
        _check_name(self.name)
        _check_u32("map_id", self.map_id)
        _check_u32("game_type", self.game_type)


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinAccept:
    """Type 1 (Fig. 2.5); also the reply to a retransmission request (§2.5.7)."""

    avatar: AvatarState
    """The described participant's avatar."""
    model: int = 0
    """Avatar model id, u32."""
    name: str = ""
    """Participant name, at most `MAX_NAME_BYTES` UTF-8 bytes."""
    origin: Address | None = None
    """The described participant's address when it is not the sender (a third-party
    retransmission reply); ``None`` when the sender describes itself."""

    def __post_init__(self) -> None:
        _check_u32("model", self.model)
        _check_name(self.name)


@dataclass(frozen=True, slots=True, kw_only=True)
class JoinReject:
    """Type 2 (layout lost, §7.1): error code and the rejecting participant's avatar id."""

    code: RejectCode
    """Why the join was rejected (Table 2.2)."""
    rejecter_id: int = 0
    """Avatar id of the rejecting participant."""

    def __post_init__(self) -> None:
        _check_u32("rejecter_id", self.rejecter_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class Leave:
    """Type 3: the leaver's avatar id (decision §7.12; the thesis's empty payload cannot be
    attributed once forwarded)."""

    avatar_id: int
    """The leaving participant's avatar id."""

    def __post_init__(self) -> None:
        _check_u32("avatar_id", self.avatar_id)


@dataclass(frozen=True, slots=True, kw_only=True)
class AvatarInfo:
    """Type 9 (Fig. 2.9): 40 bytes."""

    avatar: AvatarState
    """The avatar's new state."""
    interaction: Interaction = NO_INTERACTION
    """The interaction performed (or re-sent from the interest path)."""
    rollback: Interaction = NO_INTERACTION
    """An interaction this avatar rolls back after a conflict (§2.7)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InteractionRecord:
    """One block of a type-10 message: Fig. 2.8's 32 bytes plus the interaction code (§7.13)."""

    interaction: Interaction
    """Which interaction."""
    position: Vec3
    """The avatar's position during the interaction, metres."""
    facing: Vec3
    """The avatar's facing during the interaction."""
    first_message: int = 0
    """Number of the first message that carried the interaction."""
    length: int = 0
    """Number of frames during which it was sent."""

    def __post_init__(self) -> None:
        _check_vec3("position", self.position)
        _check_vec3("facing", self.facing)
        _check_u32("first_message", self.first_message)
        _check_u32("length", self.length)


@dataclass(frozen=True, slots=True, kw_only=True)
class InteractionInfo:
    """Type 10 (Fig. 2.8): avatar id, count, then one `InteractionRecord` per interaction."""

    avatar_id: int
    """The avatar that performed the interactions."""
    records: tuple[InteractionRecord, ...] = ()
    """At most `MAX_INTERACTIONS` records."""

    def __post_init__(self) -> None:
        _check_u32("avatar_id", self.avatar_id)
        if len(self.records) > MAX_INTERACTIONS:
            raise LocalProtocolError(
                f"records must hold at most {MAX_INTERACTIONS}, got {len(self.records)}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class GameEntry:
    """One game of a type-32/33 message (Fig. 2.11)."""

    game_id: int
    """Game id."""
    map_id: int = 0
    """Map id."""
    game_type: int = 0
    """Game type."""
    participants: int = 0
    """Number of participants, 31 bits (decision §7.2: p/count split 1/31)."""
    ipv6: bool = False
    """The p bit: every contact of this game is IPv6 (True) or IPv4 (False)."""
    contacts: tuple[Address, ...] = ()
    """Contact nodes, at most `MAX_CONTACTS`."""

    def __post_init__(self) -> None:
        _check_u32("game_id", self.game_id)
        _check_u32("map_id", self.map_id)
        _check_u32("game_type", self.game_type)
        if not 0 <= self.participants < (1 << 31):
            raise LocalProtocolError(f"participants must be in [0, 2**31), got {self.participants}")
        if len(self.contacts) > MAX_CONTACTS:
            raise LocalProtocolError(f"contacts must hold at most {MAX_CONTACTS}")


@dataclass(frozen=True, slots=True, kw_only=True)
class GamesList:
    """Type 32 (Fig. 2.11): the info server's list of active games."""

    games: tuple[GameEntry, ...] = ()
    """At most `MAX_GAMES` games."""

    def __post_init__(self) -> None:
        if len(self.games) > MAX_GAMES:
            raise LocalProtocolError(f"games must hold at most {MAX_GAMES}, got {len(self.games)}")


@dataclass(frozen=True, slots=True, kw_only=True)
class GameInfo:
    """Type 33 (§2.5.12): type 32's layout with exactly one game."""

    game: GameEntry
    """The game."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtraInfoRequest:
    """Type 34 (layout lost, §7.1): how many extra contact nodes are wanted (game id in header)."""

    wanted_contacts: int = 0
    """Number of contact nodes asked for, u32."""

    def __post_init__(self) -> None:
        _check_u32("wanted_contacts", self.wanted_contacts)


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    """Type 35 (layout lost, §7.1): the game's map and type (game id in header)."""

    map_id: int = 0
    """Map id."""
    game_type: int = 0
    """Game type."""

    def __post_init__(self) -> None:
        _check_u32("map_id", self.map_id)
        _check_u32("game_type", self.game_type)


@dataclass(frozen=True, slots=True, kw_only=True)
class Tail:
    """Protocol data (Fig. 2.10): advertised free bandwidth and this hop's recipient list."""

    free_bandwidth: int = 0
    """Advertised free bandwidth, bytes per second (half the real free bandwidth, §2.12)."""
    recipients: tuple[int, ...] = ()
    """Avatar ids this copy was sent to (this hop's S), at most `MAX_RECIPIENTS`."""

    def __post_init__(self) -> None:
        _check_u32("free_bandwidth", self.free_bandwidth)
        if len(self.recipients) > MAX_RECIPIENTS:
            raise LocalProtocolError(f"recipients must hold at most {MAX_RECIPIENTS}")
        if self.recipients and not (
            min(self.recipients) >= 0 and max(self.recipients) < _U32_LIMIT
        ):
            bad = next(r for r in self.recipients if not 0 <= r < _U32_LIMIT)
            raise LocalProtocolError(f"recipient id must be in [0, 2**32), got {bad}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RetransmissionRequest:
    """The flag-64 block appended after the tail (layout lost, §7.1): ids whose data is missing."""

    avatar_ids: tuple[int, ...]
    """1 to `MAX_RETRANSMIT_IDS` participant ids."""

    def __post_init__(self) -> None:
        if not 1 <= len(self.avatar_ids) <= MAX_RETRANSMIT_IDS:
            raise LocalProtocolError(
                f"avatar_ids must hold 1 to {MAX_RETRANSMIT_IDS} ids, got {len(self.avatar_ids)}"
            )
        for aid in self.avatar_ids:
            _check_u32("avatar id", aid)


Payload: TypeAlias = (
    JoinRequest
    | JoinAccept
    | JoinReject
    | Leave
    | AvatarInfo
    | InteractionInfo
    | GamesList
    | GameInfo
    | ExtraInfoRequest
    | Heartbeat
)
"""Any message payload."""

_TYPE_OF: Final[dict[type, MessageType]] = {
    JoinRequest: MessageType.JOIN_REQUEST,
    JoinAccept: MessageType.JOIN_ACCEPT,
    JoinReject: MessageType.JOIN_REJECT,
    Leave: MessageType.LEAVE,
    AvatarInfo: MessageType.AVATAR_INFO,
    InteractionInfo: MessageType.INTERACTION_INFO,
    GamesList: MessageType.GAMES_LIST,
    GameInfo: MessageType.GAME_INFO,
    ExtraInfoRequest: MessageType.EXTRA_INFO_REQUEST,
    Heartbeat: MessageType.HEARTBEAT,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Packet:
    """A whole Silac datagram: header, payload, tail (game messages only), retransmission block.

    Raises:
        LocalProtocolError: a game message lacks its tail, an info-server message has one, or an
            info-server message carries a retransmission request.
    """

    header: Header
    """The header's free fields."""
    payload: Payload
    """The game data."""
    tail: Tail | None = None
    """Protocol data; required for types 0–10, absent for 32–35."""
    retransmission: RetransmissionRequest | None = None
    """The flag-64 request, game messages only."""

    def __post_init__(self) -> None:
        has_tail = self.message_type.has_tail
        if has_tail != (self.tail is not None):
            raise LocalProtocolError(
                f"tail must be {'present' if has_tail else 'absent'} for {self.message_type.name}"
            )
        if not has_tail and self.retransmission is not None:
            raise LocalProtocolError("retransmission requests ride only on game messages (0-10)")

    @property
    def message_type(self) -> MessageType:
        """The base type of the payload."""
        return _TYPE_OF[type(self.payload)]
