"""The datagrams of GGPO-style rollback (``lagless.sync.rollback``): inputs, spectator feeds, acks.

Issue 15 "Build" 6 and its follow-up (dropping a disconnected player): a player sends its own
inputs redundantly (every input the receiver has not acknowledged, in every datagram) together
with an acknowledgement of the receiver's inputs, its current frame and frame advantage (for
time sync) and its latest confirmed checksum (for desync detection). The spectator host sends
confirmed inputs of every player to each spectator the same way; a spectator only sends
acknowledgements back. A player that takes part in dropping a silent player sends the others,
while the drop is being agreed, a drop report: the last frame of that player's inputs it holds,
the players it still counts as remaining (its view) and the inputs of that player the receiver
may lack (relayed); once it has settled the drop, a drop notice with the settled last frame and
the same relay.

Units: frames are integers (u32 on the wire, ack and checksum frames i32 with -1 for "none");
the frame advantage travels in 1/16 frame (i16, saturated at ±2047.9 frames); sizes in bytes.

Layouts (little-endian):
    * input ``0xB1``: kind u8, frame u32, ack i32, advantage i16, checksum frame i32,
      checksum u32, start u32, count u8, then ``count`` inputs of (length u8, bytes).
    * spectate ``0xB2``: kind u8, checksum frame i32, checksum u32, start u32, players u8,
      count u8, then ``count * players`` inputs of (length u8, bytes), frame by frame.
    * spectator ack ``0xB3``: kind u8, ack i32.
    * drop notice ``0xB4``: kind u8, player u8, done u8 (0 or 1), last i32, start u32, count u8,
      then ``count`` inputs of (length u8, bytes): the dropped player's inputs being relayed.
      Since the drop report exists, a player sends it only with done = 1 (the drop settled).
    * drop report ``0xB5``: kind u8, player u8, view u8, last i32, start u32, count u8, then
      ``count`` inputs of (length u8, bytes) as in the notice. Bit ``p`` of ``view`` is set
      when the sender still counts player ``p`` as remaining (itself included, the dropped
      player never); a report is never "done".

Decisions:
    * Inputs are opaque and at most ``MAX_INPUT_BYTES`` (64) long; a datagram carries at most 255
      inputs (or frames) and at most ``budget`` bytes (default 1200, the transport's payload
      budget); the encoders report how many items fitted so the caller sends the rest later.
    * Decoders never raise and never allocate more than the datagram's own length: a wrong kind,
      a short or long buffer, an input longer than the limit, or a player count of 0 or above 8
      gives ``None``; so does a drop report whose view holds the dropped player.
    * The drop report is a kind of its own (not a longer 0xB4) so that 0xB4 keeps its layout:
      both decode to `DropNotice`, a notice with ``view`` None, a report with ``done`` False.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "KIND_DROP",
    "KIND_DROP_REPORT",
    "KIND_INPUT",
    "KIND_SPECTATE",
    "KIND_SPECTATOR_ACK",
    "MAX_INPUT_BYTES",
    "DropNotice",
    "InputPacket",
    "SpectatePacket",
    "SpectatorAck",
    "decode_rollback_packet",
    "encode_drop_notice",
    "encode_drop_report",
    "encode_input_packet",
    "encode_spectate_packet",
    "encode_spectator_ack",
]

KIND_INPUT: Final = 0xB1
KIND_SPECTATE: Final = 0xB2
KIND_SPECTATOR_ACK: Final = 0xB3
KIND_DROP: Final = 0xB4
KIND_DROP_REPORT: Final = 0xB5
MAX_INPUT_BYTES: Final = 64
MAX_ITEMS: Final = 255
MAX_PLAYERS: Final = 8
DEFAULT_BUDGET: Final = 1200
ADVANTAGE_SCALE: Final = 16.0

_INPUT_HEAD: Final = struct.Struct("<BIihiIIB")
_SPECTATE_HEAD: Final = struct.Struct("<BiIIBB")
_ACK: Final = struct.Struct("<Bi")
_DROP_HEAD: Final = struct.Struct("<BBBiIB")  # notice and report: the third byte is done / view
_I16: Final = 32767
_U32: Final = 0xFFFFFFFF


@dataclass(frozen=True, slots=True)
class InputPacket:
    """A player's datagram to another player.

    Attributes:
        frame: The sender's current frame when it sent.
        ack: The highest frame up to which the sender holds every input of the receiver (-1: none).
        advantage: How many frames the sender thinks it is ahead of the receiver (may be < 0).
        checksum_frame: Frame of the sender's latest confirmed checksum (-1: none yet).
        checksum: That checksum (32-bit).
        start: Frame of ``inputs[0]``.
        inputs: The sender's inputs for frames ``start, start + 1, ...``.
    """

    frame: int
    ack: int
    advantage: float
    checksum_frame: int
    checksum: int
    start: int
    inputs: tuple[bytes, ...]


@dataclass(frozen=True, slots=True)
class SpectatePacket:
    """Confirmed inputs of every player, from the spectator host to a spectator.

    Attributes:
        checksum_frame: Frame of the host's latest confirmed checksum (-1: none yet).
        checksum: That checksum.
        start: Frame of ``frames[0]``.
        frames: Per frame, one input per player.
    """

    checksum_frame: int
    checksum: int
    start: int
    frames: tuple[tuple[bytes, ...], ...]


@dataclass(frozen=True, slots=True)
class SpectatorAck:
    """A spectator's acknowledgement: it holds every frame up to ``ack`` (-1: none)."""

    ack: int


@dataclass(frozen=True, slots=True)
class DropNotice:
    """A player's part in dropping a silent player (see ``lagless.sync.rollback``).

    Both the drop notice (0xB4) and the drop report (0xB5) decode to it.

    Attributes:
        player: The player being dropped.
        done: True once the sender has settled the drop (it knows the frame from which the
            player's input is neutral and holds every input before it); False in a report.
        last: The last frame of ``player``'s inputs the sender holds (-1: none).
        start: Frame of ``inputs[0]``.
        inputs: ``player``'s inputs for frames ``start, start + 1, ...`` (relayed).
        view: In a report, the bit mask of the players the sender still counts as remaining
            (bit ``p`` for player ``p``); None in a notice.
    """

    player: int
    done: bool
    last: int
    start: int
    inputs: tuple[bytes, ...]
    view: int | None = None


def _pack_inputs(items: Sequence[bytes], room: int) -> tuple[bytes, int]:
    """Length-prefixed ``items`` that fit in ``room`` bytes, and how many fitted."""
    parts: list[bytes] = []
    used = 0
    for item in items:
        if len(item) > MAX_INPUT_BYTES:
            raise ValueError(f"an input is {len(item)} bytes; the limit is {MAX_INPUT_BYTES}")
        if used + 1 + len(item) > room:
            break
        parts.append(bytes((len(item),)))
        parts.append(item)
        used += 1 + len(item)
    return b"".join(parts), len(parts) // 2


def _advantage_wire(advantage: float) -> int:
    return max(-_I16, min(_I16, round(advantage * ADVANTAGE_SCALE)))


def encode_input_packet(
    *,
    frame: int,
    ack: int,
    advantage: float,
    checksum_frame: int,
    checksum: int,
    start: int,
    inputs: Sequence[bytes],
    budget: int = DEFAULT_BUDGET,
) -> tuple[bytes, int]:
    """An input datagram carrying as many of ``inputs`` as fit; returns (bytes, inputs carried).

    Raises:
        ValueError: an input longer than ``MAX_INPUT_BYTES``.
    """
    body, count = _pack_inputs(inputs[:MAX_ITEMS], budget - _INPUT_HEAD.size)
    head = _INPUT_HEAD.pack(
        KIND_INPUT,
        frame & _U32,
        ack,
        _advantage_wire(advantage),
        checksum_frame,
        checksum & _U32,
        start & _U32,
        count,
    )
    return head + body, count


def encode_spectate_packet(
    *,
    checksum_frame: int,
    checksum: int,
    start: int,
    frames: Sequence[Sequence[bytes]],
    budget: int = DEFAULT_BUDGET,
) -> tuple[bytes, int]:
    """A spectator feed carrying as many whole ``frames`` as fit; returns (bytes, frames carried).

    Raises:
        ValueError: frames of different player counts, or an input over ``MAX_INPUT_BYTES``.
    """
    players = len(frames[0]) if frames else 1
    room = budget - _SPECTATE_HEAD.size
    parts: list[bytes] = []
    count = 0
    for frame_inputs in frames[:MAX_ITEMS]:
        if len(frame_inputs) != players:
            raise ValueError("every frame must carry one input per player")
        packed, fitted = _pack_inputs(frame_inputs, room)
        if fitted < players:
            break
        parts.append(packed)
        room -= len(packed)
        count += 1
    head = _SPECTATE_HEAD.pack(
        KIND_SPECTATE, checksum_frame, checksum & _U32, start & _U32, players, count
    )
    return head + b"".join(parts), count


def encode_drop_notice(
    *,
    player: int,
    done: bool,
    last: int,
    start: int,
    inputs: Sequence[bytes],
    budget: int = DEFAULT_BUDGET,
) -> tuple[bytes, int]:
    """A drop notice relaying as many of ``inputs`` as fit; returns (bytes, inputs carried).

    Raises:
        ValueError: ``player`` outside ``0 .. 7``, ``last < -1``, or an input over the limit.
    """
    return _encode_drop(KIND_DROP, player, int(done), last, start, inputs, budget)


def encode_drop_report(
    *,
    player: int,
    view: int,
    last: int,
    start: int,
    inputs: Sequence[bytes],
    budget: int = DEFAULT_BUDGET,
) -> tuple[bytes, int]:
    """A drop report relaying as many of ``inputs`` as fit; returns (bytes, inputs carried).

    Raises:
        ValueError: ``player`` outside ``0 .. 7``, ``view`` outside ``0 .. 255`` or holding
            ``player``, ``last < -1``, or an input over the limit.
    """
    if not 0 <= view < 1 << MAX_PLAYERS or view >> player & 1:
        raise ValueError(f"view must be a mask of players without player {player}, got {view}")
    return _encode_drop(KIND_DROP_REPORT, player, view, last, start, inputs, budget)


def _encode_drop(
    kind: int,
    player: int,
    third: int,
    last: int,
    start: int,
    inputs: Sequence[bytes],
    budget: int,
) -> tuple[bytes, int]:
    """A notice (``third`` = done) or report (``third`` = view) of the shared 0xB4/0xB5 layout."""
    if not 0 <= player < MAX_PLAYERS or last < -1:
        raise ValueError(f"player must be in [0, {MAX_PLAYERS - 1}] and last >= -1")
    body, count = _pack_inputs(inputs[:MAX_ITEMS], budget - _DROP_HEAD.size)
    head = _DROP_HEAD.pack(kind, player, third, last, start & _U32, count)
    return head + body, count


def encode_spectator_ack(ack: int) -> bytes:
    """A spectator's acknowledgement of every frame up to ``ack``."""
    return _ACK.pack(KIND_SPECTATOR_ACK, ack)


def _unpack_inputs(data: bytes, offset: int, count: int) -> tuple[list[bytes], int] | None:
    """``count`` length-prefixed inputs from ``offset``; None if the buffer is short or bad."""
    items: list[bytes] = []
    end = len(data)
    for _ in range(count):
        if offset >= end:
            return None
        size = data[offset]
        offset += 1
        if size > MAX_INPUT_BYTES or offset + size > end:
            return None
        items.append(data[offset : offset + size])
        offset += size
    return items, offset


def _decode_input(data: bytes) -> InputPacket | None:
    if len(data) < _INPUT_HEAD.size:
        return None
    _, frame, ack, adv, ck_frame, checksum, start, count = _INPUT_HEAD.unpack_from(data)
    unpacked = _unpack_inputs(data, _INPUT_HEAD.size, count)
    if unpacked is None or unpacked[1] != len(data) or ack < -1 or ck_frame < -1:
        return None
    return InputPacket(
        frame, ack, adv / ADVANTAGE_SCALE, ck_frame, checksum, start, tuple(unpacked[0])
    )


def _decode_spectate(data: bytes) -> SpectatePacket | None:
    if len(data) < _SPECTATE_HEAD.size:
        return None
    _, ck_frame, checksum, start, players, count = _SPECTATE_HEAD.unpack_from(data)
    if not 1 <= players <= MAX_PLAYERS or ck_frame < -1:
        return None
    unpacked = _unpack_inputs(data, _SPECTATE_HEAD.size, players * count)
    if unpacked is None or unpacked[1] != len(data):
        return None
    flat = unpacked[0]
    frames = tuple(tuple(flat[i : i + players]) for i in range(0, len(flat), players))
    return SpectatePacket(ck_frame, checksum, start, frames)


def _decode_drop(data: bytes) -> DropNotice | None:
    """A drop notice (0xB4: the third byte is done) or report (0xB5: the third byte is a view)."""
    if len(data) < _DROP_HEAD.size:
        return None
    kind, player, third, last, start, count = _DROP_HEAD.unpack_from(data)
    report = kind == KIND_DROP_REPORT
    if player >= MAX_PLAYERS or last < -1 or (third >> player & 1 if report else third > 1):
        return None
    unpacked = _unpack_inputs(data, _DROP_HEAD.size, count)
    if unpacked is None or unpacked[1] != len(data):
        return None
    if report:
        return DropNotice(player, False, last, start, tuple(unpacked[0]), third)
    return DropNotice(player, bool(third), last, start, tuple(unpacked[0]))


RollbackPacket = InputPacket | SpectatePacket | SpectatorAck | DropNotice
"""Any datagram of a rollback session."""


def decode_rollback_packet(data: bytes) -> RollbackPacket | None:
    """The packet in ``data``, or None for anything malformed (never raises)."""
    if not data:
        return None
    kind = data[0]
    if kind in (KIND_DROP, KIND_DROP_REPORT):
        return _decode_drop(data)
    if kind == KIND_INPUT:
        return _decode_input(data)
    if kind == KIND_SPECTATE:
        return _decode_spectate(data)
    if kind == KIND_SPECTATOR_ACK and len(data) == _ACK.size:
        ack = _ACK.unpack(data)[1]
        return SpectatorAck(ack) if ack >= -1 else None
    return None
