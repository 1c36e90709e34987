"""Age of Empires lockstep: commands for turn N+2, adaptive turns, stalls, drops, checksums.

Implements spec 000 §2.14 (Bettner & Terrano 2001) and §2.1 "full synchronisation, P2P form",
issue 15 item 2, as a sans-I/O `lagless.sync.contract.SyncPeer`:

* Time is cut into *turns*, each a whole number of *frames* (the driver's ticks). At the start of
  turn ``T`` a peer samples its player's input and sends it to every peer as its *command* for
  turn ``T + 2``; every frame of turn ``T + 2`` steps the game with that command. Turns 0 and 1
  have no commands: every player is neutral.
* A peer starts turn ``T`` only when it holds every active peer's command for ``T`` *and* every
  active peer acknowledged its own command for ``T`` (spec: "the game halts until all
  acknowledgements are in"). Until then each tick is a *stall*, counted in
  ``stats.stall_frames``; every state the peers step is therefore the same on every peer.
* Turn length = the smoothed RTT of the slowest connection (spec: "average RTT of the slowest
  connection, adapted continuously"), clamped to ``[min_turn, max_turn]``; each command carries
  its sender's proposal in frames, and turn ``T`` lasts the largest proposal among the commands
  of ``T``, so every peer cuts turns at the same frames without a host. Turns 0 and 1 carry no
  commands and last ``start_frames`` (a session constant, default 12). The frame rate is the
  smallest ``max_frame_rate`` among the commands of the turn (spec: "set by the slowest
  machine"); ``frame_period`` tells the driver.

Units: seconds (float) for times, frames and turns are integers from 0, rates in Hz.

Decisions:
    * Reliability is the algorithm's own (``Outgoing.reliable`` is False), so lockstep runs over
      any datagram driver: each message to a peer carries every own command that peer has not
      acknowledged (at most ``MAX_BATCH``), a cumulative acknowledgement (the next turn expected
      from that peer) and the known drops. A peer sends when it has a new command, owes an
      acknowledgement (any command message received) or its resend timer (``srtt + 4 rttvar``,
      at least two frames; 0.2 s before a sample) ran out.
    * Drop: a stall longer than ``drop_timeout`` (default 5 s, the transport's timeout range)
      drops every peer that blocks it, from the stalled turn on. A dropped player's input is
      neutral from that turn, the drop travels in every later message, and a peer that learns of
      its own drop stops (``dropped`` is True). When two peers drop the same player at different
      turns the earlier turn wins. A peer cut off from only some peers can leave the others with
      its commands for turns the dropping peer played neutral; the checksum exchange detects it.
    * Desync: each command for turn ``T + 2`` carries the checksum of its sender's state at the
      start of turn ``T``; a mismatch appends the turn's first frame to ``stats.desyncs`` and, with
      ``abort_on_desync`` (default, the spec's "aborts on detected desync"), stops the peer
      (``aborted`` is True, ``abort_reason`` says where). Otherwise it is only reported. An
      aborted peer still sends and acknowledges the commands it has, so the command carrying
      its differing checksum reaches every peer and they abort too.
    * ``stats.input_delays``: from the first tick with a changed local input to the tick that
      steps the first frame of the turn that executes it.
    * Garbage (wrong kind, bad size, a source out of range, a command too far ahead) is counted
      in ``garbage`` and dropped; a decoder never raises.
"""

from __future__ import annotations

import dataclasses
import math
import random
import struct
from dataclasses import dataclass
from typing import Final, TypeVar

from lagless.errors import ConfigError
from lagless.sync.contract import DeterministicGame
from lagless.sync.peer_base import ClockedPeer

__all__ = [
    "KIND_COMMANDS",
    "MAX_BATCH",
    "MAX_INPUT",
    "Command",
    "CommandBatch",
    "LockstepConfig",
    "LockstepPeer",
    "decode_commands",
    "encode_commands",
]

S = TypeVar("S")

KIND_COMMANDS: Final = 0x10  # first byte of a command batch
MAX_BATCH: Final = 32  # commands per message at most
MAX_INPUT: Final = 64  # bytes of one input at most
MAX_AHEAD: Final = 64  # turns ahead of the local turn a received command may be
LEAD: Final = 2  # commands execute this many turns after the turn that sends them
_HEADER: Final = struct.Struct("<BIIBB")  # kind, ack, first turn, command count, drop count
_DROP: Final = struct.Struct("<BI")  # dropped peer, from turn
_COMMAND: Final = struct.Struct("<BHIB")  # frames per turn, max frame rate Hz, checksum, input len


@dataclass(frozen=True, slots=True)
class Command:
    """One player's command for one turn.

    Attributes:
        input: The player's input for every frame of the turn (at most ``MAX_INPUT`` bytes).
        frames_per_turn: The sender's proposed turn length in frames (1..255).
        frame_rate: The sender's highest frame rate, Hz (1..65535).
        checksum: The sender's state checksum at the start of the turn two turns earlier.
    """

    input: bytes
    frames_per_turn: int
    frame_rate: int
    checksum: int


@dataclass(frozen=True, slots=True)
class CommandBatch:
    """One lockstep message: an ack, drops, and commands for consecutive turns from ``first``.

    Attributes:
        ack: The next turn the sender expects from the receiver (all earlier ones arrived).
        first: The turn of ``commands[0]``.
        commands: Commands for turns ``first, first + 1, ...``.
        drops: ``(peer, turn)``: the sender dropped ``peer`` from ``turn`` on.
    """

    ack: int
    first: int
    commands: tuple[Command, ...]
    drops: tuple[tuple[int, int], ...] = ()


def encode_commands(batch: CommandBatch) -> bytes:
    """The bytes of a command batch.

    Raises:
        ValueError: More than ``MAX_BATCH`` commands or 255 drops, an input over ``MAX_INPUT``
            bytes, or a field out of its range.
    """
    if len(batch.commands) > MAX_BATCH or len(batch.drops) > 255:
        raise ValueError(f"at most {MAX_BATCH} commands and 255 drops per batch")
    parts = [
        _HEADER.pack(KIND_COMMANDS, batch.ack, batch.first, len(batch.commands), len(batch.drops))
    ]
    parts.extend(_DROP.pack(peer, turn) for peer, turn in batch.drops)
    for command in batch.commands:
        if len(command.input) > MAX_INPUT:
            raise ValueError(f"an input has at most {MAX_INPUT} bytes, got {len(command.input)}")
        parts.append(
            _COMMAND.pack(
                command.frames_per_turn, command.frame_rate, command.checksum, len(command.input)
            )
        )
        parts.append(command.input)
    return b"".join(parts)


def decode_commands(data: bytes) -> CommandBatch | None:
    """Parse a command batch; ``None`` for anything malformed (never raises)."""
    if len(data) < _HEADER.size or data[0] != KIND_COMMANDS:
        return None
    _, ack, first, count, drop_count = _HEADER.unpack_from(data)
    if count > MAX_BATCH:
        return None
    offset = _HEADER.size
    if len(data) < offset + drop_count * _DROP.size:
        return None
    drops = tuple(_DROP.unpack_from(data, offset + i * _DROP.size) for i in range(drop_count))
    offset += drop_count * _DROP.size
    commands: list[Command] = []
    for _ in range(count):
        if len(data) < offset + _COMMAND.size:
            return None
        frames, rate, checksum, length = _COMMAND.unpack_from(data, offset)
        offset += _COMMAND.size
        if frames == 0 or rate == 0 or length > MAX_INPUT or len(data) < offset + length:
            return None
        commands.append(Command(bytes(data[offset : offset + length]), frames, rate, checksum))
        offset += length
    if offset != len(data):
        return None
    return CommandBatch(ack, first, tuple(commands), drops)


@dataclass(frozen=True, slots=True)
class LockstepConfig:
    """Settings of a `LockstepPeer` (seconds, Hz).

    Attributes:
        max_frame_rate: This machine's highest frame rate, Hz (the session runs at the lowest).
        initial_turn: Turn length proposed before any RTT is measured, seconds.
        start_frames: Frames of turns 0 and 1, which have no commands to carry a proposal;
            must be the same on every peer (like the game itself).
        min_turn: Shortest turn, seconds.
        max_turn: Longest turn, seconds.
        drop_timeout: Seconds a stall may last before the blocking peers are dropped.
        abort_on_desync: Stop at the first checksum mismatch (else only report it).
        ping_interval: Seconds between RTT pings to each peer.
    """

    max_frame_rate: int = 60
    initial_turn: float = 0.2
    start_frames: int = 12
    min_turn: float = 0.05
    max_turn: float = 1.0
    drop_timeout: float = 5.0
    abort_on_desync: bool = True
    ping_interval: float = 0.2

    def __post_init__(self) -> None:
        """Check the ranges; raise ``ConfigError`` naming the field."""
        if not 1 <= self.max_frame_rate <= 1000:
            raise ConfigError(f"max_frame_rate must be in [1, 1000] Hz, got {self.max_frame_rate}")
        if not 0 < self.min_turn <= self.max_turn:
            raise ConfigError(
                f"min_turn and max_turn must satisfy 0 < min_turn <= max_turn, got "
                f"{self.min_turn}, {self.max_turn}"
            )
        if not self.min_turn <= self.initial_turn <= self.max_turn:
            raise ConfigError(
                f"initial_turn must be in [min_turn, max_turn], got {self.initial_turn}"
            )
        if not 1 <= self.start_frames <= 255:
            raise ConfigError(f"start_frames must be in [1, 255], got {self.start_frames}")
        if not self.drop_timeout > 0 or not self.ping_interval > 0:
            raise ConfigError("drop_timeout and ping_interval must be > 0 s")


class LockstepPeer(ClockedPeer[S]):
    """One lockstep participant (a ``SyncPeer``); see the module docstring for the protocol.

    Args:
        game: The deterministic game every peer steps.
        peer: This peer's number, ``0 .. peers - 1``.
        peers: How many peers take part (the game's player count).
        rng: Accepted for the registry's uniform signature; lockstep makes no random choice.
        frame_period: This machine's shortest frame period, seconds; sets
            ``config.max_frame_rate`` (rounded to whole Hz) when given.
        config: Turn, timeout and desync settings.
    """

    def __init__(
        self,
        game: DeterministicGame[S],
        peer: int,
        peers: int,
        *,
        rng: random.Random | None = None,
        frame_period: float | None = None,
        config: LockstepConfig | None = None,
    ) -> None:
        del rng
        config = config if config is not None else LockstepConfig()
        if frame_period is not None:
            if not frame_period > 0:
                raise ConfigError(f"frame_period must be > 0 s, got {frame_period}")
            config = dataclasses.replace(config, max_frame_rate=max(1, round(1.0 / frame_period)))
        self.config = config
        self._start(game, peer, peers, 1.0 / config.max_frame_rate, config.ping_interval)
        self._frame = 0
        self._turn = 0
        self._frame_in_turn = 0
        self._frames_per_turn = self.config.start_frames
        self._turn_inputs: list[bytes] = [game.neutral_input] * peers
        self._own: dict[int, Command] = {}
        self._received: list[dict[int, Command]] = [{} for _ in range(peers)]
        self._next_expected = [LEAD] * peers
        self._acked = [LEAD] * peers
        self._ack_due = [False] * peers
        self._resend_at = [0.0] * peers
        self._sent_upto = [LEAD] * peers
        self._drops: dict[int, int] = {}
        self._checksums: dict[int, tuple[int, int]] = {}
        self._pending_checks: dict[int, list[tuple[int, int]]] = {}
        self._stall_since: float | None = None
        self._last_input: bytes | None = None
        self._change_time: float | None = None
        self._change_of_turn: dict[int, float] = {}
        self.aborted = False
        """True after a checksum mismatch with ``abort_on_desync``: the peer no longer steps."""
        self.abort_reason = ""
        """Why the peer aborted ("" while it runs)."""
        self.dropped = False
        """True once another peer dropped this one: it no longer steps."""

    @property
    def turn(self) -> int:
        """The turn being played (or waited for)."""
        return self._turn

    @property
    def frames_per_turn(self) -> int:
        """Frames of the current turn."""
        return self._frames_per_turn

    @property
    def drops(self) -> dict[int, int]:
        """Dropped peers and the turn each was dropped from (a copy)."""
        return dict(self._drops)

    def tick(self, now: float, local_input: bytes) -> None:
        """One frame: start the next turn if every command and ack is in, then step; else stall."""
        self._check_input(local_input, MAX_INPUT)
        self._send_pings(now, self._drops)
        if local_input != self._last_input:
            self._last_input = local_input
            if self._change_time is None:
                self._change_time = now
        if self.aborted or self.dropped:
            self._send(now)
            return
        if self._frame_in_turn == 0:
            if not self._ready(self._turn):
                self._stats.stall_frames += 1
                if self._stall_since is None:
                    self._stall_since = now
                elif now - self._stall_since > self.config.drop_timeout:
                    self._drop_blockers()
                self._send(now)
                return
            self._stall_since = None
            if not self._begin_turn(local_input):
                self._send(now)
                return
        self._state = self._game.step(self._state, self._turn_inputs, self._frame)
        self._frame += 1
        self._stats.frames_simulated += 1
        if self._frame_in_turn == 0 and self._turn in self._change_of_turn:
            self._stats.input_delays.append(now - self._change_of_turn.pop(self._turn))
        self._frame_in_turn += 1
        if self._frame_in_turn >= self._frames_per_turn:
            self._frame_in_turn = 0
            self._turn += 1
        self._send(now)

    def receive(self, source: int, payload: bytes, now: float) -> None:
        """A datagram from ``source``: a ping/pong or a command batch; garbage is counted."""
        if not self._screen(source, payload, now):
            return
        batch = decode_commands(payload)
        if batch is None:
            self.garbage += 1
            return
        self._take(source, batch)

    def _active(self, peer: int, turn: int) -> bool:
        dropped_from = self._drops.get(peer)
        return dropped_from is None or turn < dropped_from

    def _ready(self, turn: int) -> bool:
        if turn < LEAD:
            return True
        for other in range(self._peers):
            if other == self._peer or not self._active(other, turn):
                continue
            if turn not in self._received[other] or self._acked[other] <= turn:
                return False
        return True

    def _drop_blockers(self) -> None:
        turn = self._turn
        for other in range(self._peers):
            if other == self._peer or not self._active(other, turn):
                continue
            if turn not in self._received[other] or self._acked[other] <= turn:
                self._drops[other] = turn
        self._stall_since = None

    @staticmethod
    def _fpt_for(turn_length: float, frame_period: float) -> int:
        return max(1, min(255, math.ceil(turn_length / frame_period - 1e-9)))

    def _proposal(self) -> int:
        active = {p for p in range(self._peers) if self._active(p, self._turn)}
        rtt = self._clock.max_rtt(active)
        length = self.config.initial_turn if rtt is None else rtt
        length = min(self.config.max_turn, max(self.config.min_turn, length))
        return self._fpt_for(length, self._period)

    def _begin_turn(self, local_input: bytes) -> bool:
        """Set up turn ``self._turn`` and send the command for two turns on; False if aborted."""
        turn = self._turn
        commands = [
            self._own.get(turn) if p == self._peer else self._received[p].get(turn)
            for p in range(self._peers)
        ]
        live = [c for p, c in enumerate(commands) if c is not None and self._active(p, turn)]
        if turn >= LEAD and live:
            self._frames_per_turn = max(c.frames_per_turn for c in live)
            self._period = 1.0 / min(c.frame_rate for c in live)
        neutral = self._game.neutral_input
        self._turn_inputs = [
            c.input if c is not None and self._active(p, turn) else neutral
            for p, c in enumerate(commands)
        ]
        checksum = self._game.checksum(self._state) & 0xFFFFFFFF
        self._checksums[turn] = (checksum, self._frame)
        for other, theirs in self._pending_checks.pop(turn, []):
            self._compare(turn, other, theirs)
        self._checksums.pop(turn - MAX_AHEAD, None)
        self._own[turn + LEAD] = Command(
            local_input, self._proposal(), self.config.max_frame_rate, checksum
        )
        if self._change_time is not None:
            self._change_of_turn[turn + LEAD] = self._change_time
            self._change_time = None
        for received in self._received:
            received.pop(turn - 1, None)
        oldest_ack = min(
            (
                self._acked[p]
                for p in range(self._peers)
                if p != self._peer and p not in self._drops
            ),
            default=turn + LEAD + 1,
        )
        for old in [t for t in self._own if t < min(oldest_ack, turn)]:
            del self._own[old]
        return not self.aborted

    def _compare(self, turn: int, other: int, theirs: int) -> None:
        ours, first_frame = self._checksums[turn]
        if ours == theirs:
            return
        self._stats.desyncs.append(first_frame)
        if self.config.abort_on_desync and not self.aborted:
            self.aborted = True
            self.abort_reason = f"desync with peer {other} at turn {turn} (frame {first_frame})"

    def _take(self, source: int, batch: CommandBatch) -> None:
        newest_own = max(self._own, default=LEAD - 1)
        self._acked[source] = max(self._acked[source], min(batch.ack, newest_own + 1))
        for peer, turn in batch.drops:
            if 0 <= peer < self._peers and turn >= LEAD:
                self._drops[peer] = min(turn, self._drops.get(peer, turn))
                if peer == self._peer:
                    self.dropped = True
        self._ack_due[source] = True
        received = self._received[source]
        for index, command in enumerate(batch.commands):
            turn = batch.first + index
            if turn < self._next_expected[source] or turn in received:
                continue
            if turn >= self._turn + MAX_AHEAD:
                self.garbage += 1
                break
            received[turn] = command
            checked = turn - LEAD
            if checked in self._checksums:
                self._compare(checked, source, command.checksum)
            elif checked >= self._turn:
                self._pending_checks.setdefault(checked, []).append((source, command.checksum))
        while self._next_expected[source] in received:
            self._next_expected[source] += 1

    def _send(self, now: float) -> None:
        newest_own = max(self._own, default=LEAD - 1)
        drops = tuple(sorted(self._drops.items()))
        for other in range(self._peers):
            if other == self._peer or other in self._drops:
                continue
            first = self._acked[other]
            unacked = newest_own >= first
            due = (
                self._ack_due[other]
                or newest_own >= self._sent_upto[other]
                or (unacked and now >= self._resend_at[other])
            )
            if not due:
                continue
            last = min(newest_own, first + MAX_BATCH - 1)
            commands = tuple(self._own[t] for t in range(first, last + 1) if t in self._own)
            if len(commands) != max(0, last - first + 1):
                commands = ()
            batch = CommandBatch(self._next_expected[other], first, commands, drops)
            self._emit(other, encode_commands(batch))
            self._ack_due[other] = False
            self._sent_upto[other] = max(self._sent_upto[other], last + 1)
            self._resend_at[other] = now + self._resend_timeout(other)

    def _resend_timeout(self, other: int) -> float:
        srtt = self._clock.rtt(other)
        if srtt is None:
            return 0.2
        return max(2.0 * self._period, srtt + 4.0 * self._clock.rtt_deviation(other))
