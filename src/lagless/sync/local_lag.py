"""Local lag: every peer executes an action a fixed delay after it was made, so all see it at once.

Implements spec 000 §2.1 item 2 (Diot & Gautier 1999; Mauve et al. 2004), issue 15 item 4, as a
sans-I/O `lagless.sync.contract.SyncPeer`:

* Frames are tied to the session clock (`lagless.sync.clock.PeerClock`, peer 0's time): frame
  ``f`` is displayed from session time ``f * frame_period``, on every peer.
* An input made at frame ``n`` is scheduled for frame ``n + ceil(delay / frame_period)`` and sent
  to every peer at once; each peer steps it on that frame, so when every one-way latency is below
  ``delay`` all peers show it at the same moment.
* ``delay`` is chosen between ``min_delay`` (the highest RTT / 2 to any peer, so that only loss
  and jitter cause inconsistency) and ``max_delay`` (the genre's limit, default 100 ms):
  ``need + headroom * (max_delay - need)``, where ``need`` is the highest ``srtt / 2 + rttvar``
  over the peers (RFC 6298 estimates) and ``headroom`` (default 0.5) splits what is left between
  interactivity (0: the tightest delay) and consistency (1: the genre limit).
  When ``min_delay > max_delay`` the bounds *conflict* (spec: the developer must give up some
  consistency or interactivity): ``conflict`` is True, a `DelayChoice` is recorded, and
  ``conflict_policy`` picks ``max_delay`` (default: keep interactivity, accept inconsistency) or
  ``min_delay`` (keep consistency, accept sluggish controls). Before any RTT sample the delay is
  ``max_delay``.
* A remote input that has not arrived when its frame is stepped is predicted (the player's last
  input repeated); when it arrives later and differs, the peers disagree.

Units: seconds (float); frames are integers from 0.

Decisions:
    * Repair: local lag alone leaves such inconsistencies (spec §2.1), so by default a late input
      is only counted (``stats.late_discarded``) and the peers stay apart. With ``rollback=True``
      the peer repairs them the Time Warp way (spec §2.3, copy state saving): it restores the
      saved state of the late input's frame and re-executes up to the present
      (``stats.rollback_depths``, ``stats.frames_resimulated``), if the frame is at most
      ``max_rollback`` frames old; older ones are counted as late.
    * The scheduled frame only moves forward: when the delay shrinks, ticks whose target frame
      is already taken drop their input (``skipped_inputs``); when it grows, the frames in the
      gap repeat the previous input, which is also what a peer predicts for a frame it never
      receives, so gaps stay consistent.
    * Each message carries this peer's inputs for its last ``redundancy`` scheduled frames (the
      algorithm's own redundancy; ``Outgoing.reliable`` is False; default 8 frames), so a lost
      datagram costs nothing when a later one arrives in time. The transport packs several
      messages into one datagram, so one lost datagram can take four 60 Hz messages with it: with
      4 a UMTS run kept a wrong frame for good, with 8 it converged. There are no
      acknowledgements: an input lost in every copy is never repaired.
    * The effective delay of an input is between ``delay`` and ``delay + 2 * frame_period``
      (rounding up to whole frames, the tick's phase inside its frame); while a shrinking delay
      drains, a change waits for the first free frame: up to the old delay + 3 frame periods.
    * Before its session clock is synchronised a peer shows frame 0 and schedules nothing.
    * Frames more than ``MAX_AHEAD`` ahead are garbage (counted), which bounds memory; decoders
      never raise.
"""

from __future__ import annotations

import math
import random
import struct
from collections import deque
from dataclasses import dataclass
from typing import Final, Literal, TypeVar

from lagless.errors import ConfigError
from lagless.sync.contract import DeterministicGame
from lagless.sync.peer_base import ClockedPeer

__all__ = [
    "KIND_INPUTS",
    "MAX_AHEAD",
    "MAX_REDUNDANCY",
    "DelayChoice",
    "InputRun",
    "LocalLagConfig",
    "LocalLagPeer",
    "decode_inputs",
    "encode_inputs",
]

S = TypeVar("S")

KIND_INPUTS: Final = 0x30  # first byte of an input run
MAX_INPUT: Final = 64  # bytes of one input at most
MAX_REDUNDANCY: Final = 32  # inputs per message at most
MAX_AHEAD: Final = 1024  # frames ahead of the executed one an input may be for
MAX_CATCHUP: Final = 256  # frames stepped in one tick at most
_HEADER: Final = struct.Struct("<BIB")  # kind, first frame, count


@dataclass(frozen=True, slots=True)
class InputRun:
    """One local-lag message: a player's inputs for frames ``first, first + 1, ...``."""

    first: int
    inputs: tuple[bytes, ...]


def encode_inputs(run: InputRun) -> bytes:
    """The bytes of an input run.

    Raises:
        ValueError: More than ``MAX_REDUNDANCY`` inputs, or one longer than ``MAX_INPUT``.
    """
    if len(run.inputs) > MAX_REDUNDANCY:
        raise ValueError(f"at most {MAX_REDUNDANCY} inputs per message, got {len(run.inputs)}")
    parts = [_HEADER.pack(KIND_INPUTS, run.first, len(run.inputs))]
    for data in run.inputs:
        if len(data) > MAX_INPUT:
            raise ValueError(f"an input has at most {MAX_INPUT} bytes, got {len(data)}")
        parts.append(bytes((len(data),)) + data)
    return b"".join(parts)


def decode_inputs(data: bytes) -> InputRun | None:
    """Parse an input run; ``None`` for anything malformed (never raises)."""
    if len(data) < _HEADER.size or data[0] != KIND_INPUTS:
        return None
    _, first, count = _HEADER.unpack_from(data)
    if count > MAX_REDUNDANCY:
        return None
    offset = _HEADER.size
    inputs: list[bytes] = []
    for _ in range(count):
        if offset >= len(data):
            return None
        length = data[offset]
        offset += 1
        if length > MAX_INPUT or offset + length > len(data):
            return None
        inputs.append(bytes(data[offset : offset + length]))
        offset += length
    if offset != len(data):
        return None
    return InputRun(first, tuple(inputs))


@dataclass(frozen=True, slots=True)
class DelayChoice:
    """A change of the chosen delay (or of the conflict), as `LocalLagPeer.choices` records it.

    Attributes:
        time: Local time of the tick, seconds.
        min_delay: Highest RTT / 2 to a peer, seconds (``None`` before a sample).
        max_delay: The genre limit, seconds.
        delay: The delay chosen, seconds.
        frames: The delay in whole frames.
        conflict: ``min_delay > max_delay``.
    """

    time: float
    min_delay: float | None
    max_delay: float
    delay: float
    frames: int
    conflict: bool


@dataclass(frozen=True, slots=True)
class LocalLagConfig:
    """Settings of a `LocalLagPeer` (seconds, frames).

    Attributes:
        max_delay: The genre's limit on the local delay, seconds (spec: 80–100 ms).
        headroom: Share of ``max_delay - need`` added to the needed delay, in [0, 1].
        conflict_policy: What to use when ``min_delay > max_delay``: ``"max_delay"`` or
            ``"min_delay"``.
        rollback: Repair late inputs by rollback and re-execution.
        max_rollback: Frames a rollback may go back at most.
        redundancy: Own scheduled inputs repeated in every message (1 = none).
        ping_interval: Seconds between clock/RTT pings to each peer.
    """

    max_delay: float = 0.1
    headroom: float = 0.5
    conflict_policy: Literal["max_delay", "min_delay"] = "max_delay"
    rollback: bool = False
    max_rollback: int = 30
    redundancy: int = 8
    ping_interval: float = 0.2

    def __post_init__(self) -> None:
        """Check the ranges; raise ``ConfigError`` naming the field."""
        if not 0 <= self.max_delay <= 10:
            raise ConfigError(f"max_delay must be in [0, 10] s, got {self.max_delay}")
        if not 0 <= self.headroom <= 1:
            raise ConfigError(f"headroom must be in [0, 1], got {self.headroom}")
        if self.conflict_policy not in ("max_delay", "min_delay"):
            raise ConfigError(
                f"conflict_policy must be 'max_delay' or 'min_delay', got {self.conflict_policy!r}"
            )
        if not 1 <= self.max_rollback <= 600:
            raise ConfigError(f"max_rollback must be in [1, 600] frames, got {self.max_rollback}")
        if not 1 <= self.redundancy <= MAX_REDUNDANCY:
            raise ConfigError(
                f"redundancy must be in [1, {MAX_REDUNDANCY}] frames, got {self.redundancy}"
            )
        if not self.ping_interval > 0:
            raise ConfigError(f"ping_interval must be > 0 s, got {self.ping_interval}")


class LocalLagPeer(ClockedPeer[S]):
    """One local-lag participant (a ``SyncPeer``); see the module docstring.

    Args:
        game: The deterministic game every peer steps.
        peer: This peer's number, ``0 .. peers - 1`` (0 is the time reference).
        peers: How many peers take part (the game's player count).
        rng: Accepted for the registry's uniform signature; local lag makes no random choice.
        frame_period: Seconds per frame (and between ticks).
        config: Delay bounds, conflict policy and repair.
    """

    def __init__(
        self,
        game: DeterministicGame[S],
        peer: int,
        peers: int,
        *,
        rng: random.Random | None = None,
        frame_period: float = 1.0 / 60.0,
        config: LocalLagConfig | None = None,
    ) -> None:
        del rng
        self.config = config if config is not None else LocalLagConfig()
        self._start(game, peer, peers, frame_period, self.config.ping_interval)
        if not 0.001 <= frame_period <= 10:
            raise ConfigError(f"frame_period must be in [0.001, 10] s, got {frame_period}")
        self._frame = 0
        neutral = game.neutral_input
        self._own: dict[int, bytes] = {}
        self._remote: list[dict[int, bytes]] = [{} for _ in range(peers)]
        self._used: dict[int, list[bytes]] = {}
        self._saved: dict[int, S] = {}
        self._last_used: list[bytes] = [neutral] * peers
        self._last_target = -1
        self._rollback_from: int | None = None
        self._last_input: bytes | None = None
        self._change_time: float | None = None
        self._change_of_frame: dict[int, float] = {}
        self.delay = self.config.max_delay
        """The delay in force, seconds."""
        self.delay_frames = self._frames_of(self.delay)
        """The delay in whole frames."""
        self.min_delay: float | None = None
        """Highest RTT / 2 to any peer, seconds (``None`` before a sample)."""
        self.conflict = False
        """True while ``min_delay > max_delay``."""
        self.choices: deque[DelayChoice] = deque(maxlen=256)
        """The newest changes of the chosen delay or of the conflict."""
        self.skipped_inputs = 0
        """Ticks whose input was dropped because the delay shrank."""

    def tick(self, now: float, local_input: bytes) -> None:
        """Schedule the local input ``delay`` ahead, repair if asked, step to the clock's frame."""
        self._check_input(local_input, MAX_INPUT)
        self._send_pings(now, frozenset())
        if local_input != self._last_input:
            self._last_input = local_input
            if self._change_time is None:
                self._change_time = now
        session = self._clock.session_time(now)
        if session is None:
            return
        current = max(0, math.floor(session / self._period))
        self._choose(now)
        self._schedule(current + self.delay_frames, local_input)
        if self._rollback_from is not None:
            self._rollback(self._rollback_from)
        for _ in range(min(current - self._frame, MAX_CATCHUP)):
            self._step()
            changed_at = self._change_of_frame.pop(self._frame - 1, None)
            if changed_at is not None:
                self._stats.input_delays.append(now - changed_at)

    def receive(self, source: int, payload: bytes, now: float) -> None:
        """A datagram from ``source``: a ping/pong or an input run; garbage is counted."""
        if not self._screen(source, payload, now):
            return
        run = decode_inputs(payload)
        if run is None or run.first + len(run.inputs) > self._frame + MAX_AHEAD:
            self.garbage += 1
            return
        remote = self._remote[source]
        oldest = self._frame - self.config.max_rollback
        for index, data in enumerate(run.inputs):
            frame = run.first + index
            if frame in remote:
                continue
            if frame >= self._frame:
                remote[frame] = data
                continue
            used = self._used.get(frame)
            if used is None or frame < oldest:
                if used is None or used[source] != data:
                    self._stats.late_discarded += 1
                continue
            remote[frame] = data
            if used[source] == data:
                continue
            if self.config.rollback:
                start = self._rollback_from
                self._rollback_from = frame if start is None else min(start, frame)
            else:
                self._stats.late_discarded += 1

    def _frames_of(self, delay: float) -> int:
        return max(0, math.ceil(delay / self._period - 1e-9))

    def _choose(self, now: float) -> None:
        max_delay = self.config.max_delay
        highest: float | None = None
        wanted = 0.0
        for other in range(self._peers):
            srtt = self._clock.rtt(other)
            if other == self._peer or srtt is None:
                continue
            highest = srtt / 2.0 if highest is None else max(highest, srtt / 2.0)
            wanted = max(wanted, srtt / 2.0 + self._clock.rtt_deviation(other))
        self.min_delay = highest
        if highest is None:
            delay, conflict = max_delay, False
        elif highest <= max_delay:
            need = min(max_delay, wanted)
            delay, conflict = need + self.config.headroom * (max_delay - need), False
        else:
            conflict = True
            delay = max_delay if self.config.conflict_policy == "max_delay" else wanted
        self.delay = delay
        frames = self._frames_of(delay)
        if frames != self.delay_frames or conflict != self.conflict or not self.choices:
            self.choices.append(DelayChoice(now, highest, max_delay, delay, frames, conflict))
        self.delay_frames, self.conflict = frames, conflict

    def _schedule(self, target: int, local_input: bytes) -> None:
        if target <= self._last_target:
            self.skipped_inputs += 1
            return
        held = self._own.get(self._last_target, self._game.neutral_input)
        for frame in range(max(self._last_target + 1, target - MAX_REDUNDANCY), target):
            self._own[frame] = held
        self._own[target] = local_input
        self._last_target = target
        if self._change_time is not None:
            self._change_of_frame[target] = self._change_time
            self._change_time = None
        first = max(0, target - self.config.redundancy + 1)
        inputs = tuple(self._own.get(f, held) for f in range(first, target + 1))
        payload = encode_inputs(InputRun(first, inputs))
        for other in range(self._peers):
            if other != self._peer:
                self._emit(other, payload)

    def _inputs_of(self, frame: int, last: list[bytes]) -> list[bytes]:
        inputs = []
        for player in range(self._peers):
            if player == self._peer:
                inputs.append(self._own.get(frame, last[player]))
            else:
                inputs.append(self._remote[player].get(frame, last[player]))
        return inputs

    def _step(self) -> None:
        frame = self._frame
        if self.config.rollback:
            self._saved[frame] = self._game.save(self._state)
        inputs = self._inputs_of(frame, self._last_used)
        self._used[frame] = inputs
        self._last_used = inputs
        self._state = self._game.step(self._state, inputs, frame)
        self._stats.frames_simulated += 1
        self._frame = frame + 1
        self._forget(frame + 1 - self.config.max_rollback - 1)

    def _forget(self, frame: int) -> None:
        """Drop what only frames before ``frame`` needed (keeps memory bounded)."""
        self._saved.pop(frame, None)
        self._used.pop(frame - 1, None)
        self._own.pop(frame - 1, None)
        for remote in self._remote:
            remote.pop(frame - 1, None)

    def _rollback(self, start: int) -> None:
        self._rollback_from = None
        end = self._frame
        saved = self._saved.get(start)
        if saved is None:
            return
        self._state = self._game.load(saved)
        self._frame = start
        previous = self._used.get(start - 1)
        self._last_used = (
            list(previous) if previous is not None else [self._game.neutral_input] * self._peers
        )
        self._stats.rollback_depths.append(end - start)
        while self._frame < end:
            self._step()
            self._stats.frames_resimulated += 1
