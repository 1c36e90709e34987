"""Client-side prediction and server reconciliation for owned objects (spec 000 §2.10, issue 13 #7).

The owning client runs the game's own ``step(state, input, dt)`` on every input at once (QuakeWorld
client-side prediction, spec 000 §2.10), numbers its inputs and sends the newest few in every
unreliable packet (redundancy against loss). The server (``InputServer``) buffers them, drops
duplicates and stale ones, applies them in sequence order at its fixed tick and reports its state
with the number of the last input it applied (NetQuake's "last processed command number"). The
client (``PredictionClient``) rewinds to that state, replays the inputs the server has not applied
yet (the CSP loop of §2.10) and blends the difference between the old and the new prediction away
(``BlendConfig``), counting and measuring every misprediction. Sans-I/O: every call takes ``now``
(s, the caller's monotonic clock); nothing here reads a clock or draws a random number.

Wire formats (bit-packed through ``lagless.wire``, LSB first):

* input packet, client to server: ``first_seq`` 16 bits | ``count - 1`` 5 bits (1..32 inputs) |
  per input, oldest first with consecutive sequence numbers: ``dt`` in ms, 8 bits (0..255 ms,
  QuakeWorld's ``usercmd_t.msec``) | input bytes, length in ``[0, max_input_bytes]`` then the bytes;
* server report, server to client: ``tick`` 32 bits | ``has_input`` 1 bit | ``last_input`` 16 bits
  (only with ``has_input``) | state bytes, length in ``[0, max_state_bytes]`` then the bytes.

Decisions:
    * Sequence numbers are unbounded ints in memory and 16 bits on the wire; the receiver widens
      a wire number to the value nearest the one it expects (``lagless.wire.seq_diff``), so 32768
      inputs may be in flight before numbers alias (``test_prediction.py::test_sequence_wraps``).
    * An input's frame time is quantised to whole milliseconds in ``apply_input`` and the client
      steps with the quantised value, so client and server run bit-identical steps and a lossless
      run has zero mispredictions (``test_prediction.py::test_lossless_run_never_mispredicts``).
    * The server applies every buffered input that continues its sequence at each ``tick``. An
      input it will never get (the client stopped resending it: a packet arrived whose oldest input
      is newer than the one expected) is skipped at the next tick and counted ``inputs_skipped``;
      an input arriving later than its number was applied or skipped is ``inputs_stale``
      (``test_prediction.py::test_server_skips_inputs_the_client_gave_up``). A packet starting
      more than ``max_ahead`` numbers ahead skips nothing and its inputs are dropped
      (``test_prediction.py::test_far_ahead_inputs_dropped``).
    * A packet with any undecodable part (bad bits, an input the codec rejects) is dropped whole
      and counted ``packets_malformed``; no state changes (DESIGN.md "Bad input").
    * Reports are ordered by server tick: one not newer than the last applied is ``reports_stale``
      (reordering). A report acknowledging an input never sent is ``reports_malformed``.
    * A correction is a misprediction when the old and new predicted positions differ by more
      than ``misprediction_threshold`` (m); its distance is measured. Every correction, large or
      not, is added to the display offset, which decays by ``BlendConfig`` (exponential with time
      constant ``time``, linear over ``time``, or snap); beyond ``snap_distance`` it snaps
      (``test_prediction.py::test_blend_kinds``).
    * At most ``max_pending`` unacknowledged inputs are kept (QuakeWorld "forced to resync"): the
      oldest is dropped and counted ``pending_overflows``; the next report then rewinds past it.
"""

from __future__ import annotations

import enum
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from lagless.errors import ConfigError, LocalProtocolError
from lagless.wire import BitReader, BitWriter, DecodeError, seq_diff

__all__ = [
    "INPUT_SEQ_BITS",
    "MAX_INPUTS_PER_PACKET",
    "MAX_INPUT_DT",
    "BlendConfig",
    "BlendKind",
    "InputFrame",
    "InputServer",
    "InputServerStats",
    "PredictionClient",
    "PredictionConfig",
    "PredictionStats",
    "ServerReport",
    "ValueCodec",
    "decode_input_packet",
    "decode_server_report",
    "encode_input_packet",
    "encode_server_report",
    "quantize_dt",
    "widen_seq",
]

S = TypeVar("S")
I = TypeVar("I")  # noqa: E741 - the conventional name of the input type parameter
T = TypeVar("T")

INPUT_SEQ_BITS: Final = 16  # bits of an input sequence number on the wire
MAX_INPUTS_PER_PACKET: Final = 32  # inputs one packet can carry (5-bit count)
MAX_INPUT_DT: Final = 0.255  # s: largest frame time an input carries (8 bits of ms)
_SEQ_MASK: Final = (1 << INPUT_SEQ_BITS) - 1
_COUNT_BITS: Final = 5
_DT_BITS: Final = 8
_TICK_BITS: Final = 32
_MS: Final = 1000.0


class ValueCodec(Protocol[T]):
    """Turns a game value (an input or a state) into bytes and back."""

    def encode(self, value: T) -> bytes:
        """Return the bytes of ``value``."""
        ...

    def decode(self, data: bytes) -> T:
        """Return the value of ``data``; raise ``DecodeError`` (or ``ValueError``) on bad bytes."""
        ...


def quantize_dt(dt: float) -> float:
    """Return ``dt`` rounded to whole milliseconds, as the input packet carries it.

    Args:
        dt: Frame time (s), in ``[0, MAX_INPUT_DT]``.

    Returns:
        The quantised frame time (s).

    Raises:
        LocalProtocolError: ``dt`` is not finite or out of range.
    """
    ms = round(dt * _MS) if math.isfinite(dt) else -1
    if not 0 <= ms <= round(MAX_INPUT_DT * _MS):
        raise LocalProtocolError(f"dt must be in [0, {MAX_INPUT_DT}] s, got {dt!r}")
    return ms / _MS


def widen_seq(wire: int, reference: int) -> int:
    """Return the unbounded sequence number nearest ``reference`` whose low 16 bits are ``wire``.

    Args:
        wire: A 16-bit sequence number from the wire.
        reference: The unbounded number the receiver expects near it.

    Returns:
        ``reference + seq_diff(wire, reference)``.
    """
    return reference + seq_diff(wire & _SEQ_MASK, reference & _SEQ_MASK, INPUT_SEQ_BITS)


@dataclass(frozen=True, slots=True)
class InputFrame:
    """One numbered input as it travels: sequence number, frame time and the game's bytes."""

    seq: int
    """Sequence number (unbounded in memory; its low 16 bits go on the wire)."""
    dt: float
    """Frame time the input is held for (s), whole milliseconds in ``[0, MAX_INPUT_DT]``."""
    data: bytes
    """The input encoded by the game's codec."""


def _finish(reader: BitReader) -> None:
    left = reader.bits_remaining
    if left >= 8 or reader.serialize_bits(0, left) != 0:
        raise DecodeError(f"{left} trailing bits after message (allowed: < 8 zero padding bits)")


def encode_input_packet(frames: Sequence[InputFrame], *, max_input_bytes: int) -> bytes:
    """Encode 1..32 consecutive inputs, oldest first, into an input packet (module docstring).

    Args:
        frames: The inputs; sequence numbers must be consecutive.
        max_input_bytes: Largest input encoding (bytes) both sides agreed on.

    Returns:
        The packet bytes.

    Raises:
        LocalProtocolError: No frame, more than 32, non-consecutive numbers, or a bad field.
    """
    if not 1 <= len(frames) <= MAX_INPUTS_PER_PACKET:
        raise LocalProtocolError(f"1..{MAX_INPUTS_PER_PACKET} inputs per packet, got {len(frames)}")
    first = frames[0].seq
    if any(frame.seq != first + i for i, frame in enumerate(frames)):
        raise LocalProtocolError("input sequence numbers must be consecutive")
    writer = BitWriter()
    writer.serialize_uint(first & _SEQ_MASK, INPUT_SEQ_BITS)
    writer.serialize_uint(len(frames) - 1, _COUNT_BITS)
    for frame in frames:
        writer.serialize_uint(round(quantize_dt(frame.dt) * _MS), _DT_BITS)
        writer.serialize_bytes(frame.data, max_input_bytes)
    return writer.getvalue()


def decode_input_packet(data: bytes, *, max_input_bytes: int) -> list[InputFrame]:
    """Decode an input packet; sequence numbers come back as 16-bit wire values.

    Args:
        data: The packet bytes.
        max_input_bytes: Largest input encoding (bytes); longer ones are rejected.

    Returns:
        The inputs, oldest first (``seq`` modulo 2**16).

    Raises:
        DecodeError: Truncated, out-of-range or trailing data. Nothing else.
    """
    reader = BitReader(data)
    first = reader.serialize_uint(0, INPUT_SEQ_BITS)
    count = reader.serialize_uint(0, _COUNT_BITS) + 1
    frames = []
    for i in range(count):
        dt = reader.serialize_uint(0, _DT_BITS) / _MS
        frames.append(
            InputFrame((first + i) & _SEQ_MASK, dt, reader.serialize_bytes(b"", max_input_bytes))
        )
    _finish(reader)
    return frames


@dataclass(frozen=True, slots=True)
class ServerReport:
    """The server's state of an owned object and the last input it applied (spec 000 §2.10)."""

    tick: int
    """Server tick the state belongs to (u32, increasing)."""
    last_input: int | None
    """Sequence number of the last applied input (16-bit on the wire), or ``None`` before any."""
    state: bytes
    """The state encoded by the game's codec."""


def encode_server_report(report: ServerReport, *, max_state_bytes: int) -> bytes:
    """Encode a ``ServerReport`` (module docstring).

    Args:
        report: The report.
        max_state_bytes: Largest state encoding (bytes) both sides agreed on.

    Returns:
        The report bytes.

    Raises:
        LocalProtocolError: A field is out of range.
    """
    writer = BitWriter()
    writer.serialize_uint(report.tick, _TICK_BITS)
    writer.serialize_bool(report.last_input is not None)
    if report.last_input is not None:
        writer.serialize_uint(report.last_input & _SEQ_MASK, INPUT_SEQ_BITS)
    writer.serialize_bytes(report.state, max_state_bytes)
    return writer.getvalue()


def decode_server_report(data: bytes, *, max_state_bytes: int) -> ServerReport:
    """Decode a ``ServerReport``; ``last_input`` comes back as a 16-bit wire value.

    Args:
        data: The report bytes.
        max_state_bytes: Largest state encoding (bytes).

    Returns:
        The report.

    Raises:
        DecodeError: Truncated, out-of-range or trailing data. Nothing else.
    """
    reader = BitReader(data)
    tick = reader.serialize_uint(0, _TICK_BITS)
    last = reader.serialize_uint(0, INPUT_SEQ_BITS) if reader.serialize_bool(False) else None
    state = reader.serialize_bytes(b"", max_state_bytes)
    _finish(reader)
    return ServerReport(tick, last, state)


class BlendKind(enum.Enum):
    """How the display offset left by a correction decays."""

    EXPONENTIAL = "exponential"
    """``offset · exp(-τ / time)``."""
    LINEAR = "linear"
    """``offset · max(0, 1 - τ / time)``: gone after ``time``."""
    SNAP = "snap"
    """No blending: the new prediction is shown at once."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BlendConfig:
    """How a correction's error is blended away on the display (issue 13 #7)."""

    kind: BlendKind = BlendKind.EXPONENTIAL
    """Decay shape."""
    time: float = 0.1
    """Time constant (exponential) or duration (linear) in s, > 0."""
    snap_distance: float = math.inf
    """An offset larger than this (m) snaps instead of blending (a teleport)."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not isinstance(self.kind, BlendKind):
            raise ConfigError(f"kind must be a BlendKind, got {self.kind!r}")
        if not (math.isfinite(self.time) and self.time > 0):
            raise ConfigError(f"time must be a finite number > 0 s, got {self.time!r}")
        if not self.snap_distance > 0:
            raise ConfigError(f"snap_distance must be > 0 m, got {self.snap_distance!r}")

    def remaining(self, elapsed: float) -> float:
        """Return the fraction of an offset left ``elapsed`` seconds after it was set."""
        if self.kind is BlendKind.SNAP:
            return 0.0
        if self.kind is BlendKind.LINEAR:
            return max(0.0, 1.0 - elapsed / self.time)
        return math.exp(-elapsed / self.time)


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictionConfig:
    """Settings both sides of the prediction share (issue 13 #7)."""

    redundancy: int = 8
    """Newest inputs sent in every packet, 1..32 (each input rides in this many packets)."""
    max_pending: int = 256
    """Unacknowledged inputs the client keeps for replay (≥ ``redundancy``)."""
    max_input_bytes: int = 16
    """Largest encoded input (bytes)."""
    max_state_bytes: int = 64
    """Largest encoded state in a report (bytes)."""
    max_ahead: int = 1024
    """The server buffers inputs at most this many numbers ahead of the one it expects."""
    misprediction_threshold: float = 1e-3
    """A correction moving the prediction more than this (m) counts as a misprediction."""
    blend: BlendConfig = BlendConfig()
    """How corrections are blended on the display."""

    def __post_init__(self) -> None:
        """Validate the fields.

        Raises:
            ConfigError: A field is out of range.
        """
        if not 1 <= self.redundancy <= MAX_INPUTS_PER_PACKET:
            raise ConfigError(f"redundancy must be in 1..{MAX_INPUTS_PER_PACKET}")
        if self.max_pending < self.redundancy:
            raise ConfigError(f"max_pending must be >= redundancy, got {self.max_pending}")
        for name in ("max_input_bytes", "max_state_bytes", "max_ahead"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not self.misprediction_threshold >= 0:
            raise ConfigError("misprediction_threshold must be >= 0 m")


@dataclass(frozen=True, slots=True, kw_only=True)
class PredictionStats:
    """Counters and error measures of a ``PredictionClient``."""

    inputs: int
    """Inputs applied locally."""
    pending: int
    """Inputs not yet acknowledged by a report."""
    reports: int
    """Reports applied (each a rewind and replay)."""
    reports_stale: int
    """Reports ignored because a newer tick was applied."""
    reports_malformed: int
    """Reports that did not decode or acknowledged an input never sent."""
    replayed: int
    """Inputs replayed over all reports."""
    mispredictions: int
    """Corrections larger than ``misprediction_threshold``."""
    misprediction_error_max: float
    """Largest correction distance (m)."""
    misprediction_error_mean: float
    """Mean distance of the mispredictions (m); 0 without any."""
    snaps: int
    """Corrections beyond ``snap_distance``."""
    pending_overflows: int
    """Inputs dropped from replay because more than ``max_pending`` were unacknowledged."""


class PredictionClient(Generic[S, I]):
    """The owning client's side: predict at once, reconcile with server reports (spec 000 §2.10).

    Args:
        initial: The object's state when the client takes control.
        step: The game's movement code, ``step(state, input, dt) -> state`` (dt in s); the same
            function the server runs.
        position: Projects a state to the position blended on the display (m, any dimension).
        input_codec: Encodes inputs for the wire.
        state_codec: Decodes the state in server reports (for ``receive_report``).
        config: Shared settings.
    """

    def __init__(
        self,
        initial: S,
        *,
        step: Callable[[S, I, float], S],
        position: Callable[[S], Sequence[float]],
        input_codec: ValueCodec[I],
        state_codec: ValueCodec[S],
        config: PredictionConfig | None = None,
    ) -> None:
        """Create a client that has applied no input."""
        self.config = config if config is not None else PredictionConfig()
        self._step = step
        self._position = position
        self._inputs = input_codec
        self._states = state_codec
        self._state = initial
        self._pending: deque[tuple[InputFrame, I]] = deque()
        self._next_seq = 0
        self._tick: int | None = None
        self._offset: tuple[float, ...] = tuple(0.0 for _ in position(initial))
        self._offset_time = 0.0
        self._counts = dict.fromkeys(
            ("inputs", "reports", "stale", "malformed", "replayed", "snaps", "overflows"), 0
        )
        self._errors: list[float] = []

    @property
    def state(self) -> S:
        """The newest predicted state (all inputs applied)."""
        return self._state

    @property
    def next_seq(self) -> int:
        """The number the next input gets."""
        return self._next_seq

    def apply_input(self, value: I, dt: float, now: float) -> InputFrame:
        """Predict one input at once and queue it for the server.

        Args:
            value: The input (the game's type).
            dt: Frame time it is held for (s), quantised to whole ms (``quantize_dt``).
            now: Local time (s).

        Returns:
            The numbered input as it will be sent.

        Raises:
            LocalProtocolError: ``dt`` out of range or the encoded input too long.
        """
        dt = quantize_dt(dt)
        data = self._inputs.encode(value)
        if len(data) > self.config.max_input_bytes:
            raise LocalProtocolError(
                f"encoded input is {len(data)} bytes, max_input_bytes is "
                f"{self.config.max_input_bytes}"
            )
        frame = InputFrame(self._next_seq, dt, data)
        self._next_seq += 1
        self._state = self._step(self._state, value, dt)
        self._pending.append((frame, value))
        if len(self._pending) > self.config.max_pending:
            self._pending.popleft()
            self._counts["overflows"] += 1
        self._counts["inputs"] += 1
        return frame

    def input_packet(self, now: float) -> bytes | None:
        """Return the packet with the newest ``redundancy`` unacknowledged inputs, or ``None``.

        Args:
            now: Local time (s).
        """
        if not self._pending:
            return None
        newest = list(self._pending)[-self.config.redundancy :]
        return encode_input_packet(
            [frame for frame, _ in newest], max_input_bytes=self.config.max_input_bytes
        )

    def offset(self, now: float) -> tuple[float, ...]:
        """Return the display offset still to blend away at ``now`` (m per axis)."""
        left = self.config.blend.remaining(max(0.0, now - self._offset_time))
        return tuple(c * left for c in self._offset)

    def display_position(self, now: float) -> tuple[float, ...]:
        """Return where to draw the object at ``now``: prediction plus the blended offset (m)."""
        return tuple(
            p + o for p, o in zip(self._position(self._state), self.offset(now), strict=True)
        )

    def receive_report(self, data: bytes, now: float) -> bool:
        """Decode a server report and reconcile with it; never raises on bad bytes.

        Args:
            data: The report bytes.
            now: Local time of receipt (s).

        Returns:
            True if applied; False if stale or malformed (and counted).
        """
        try:
            report = decode_server_report(data, max_state_bytes=self.config.max_state_bytes)
            state = self._states.decode(report.state)
        except (DecodeError, ValueError):
            self._counts["malformed"] += 1
            return False
        return self.reconcile(state, report.last_input, report.tick, now)

    def reconcile(self, server_state: S, last_input: int | None, tick: int, now: float) -> bool:
        """Rewind to the server's state, replay unacknowledged inputs and blend the error.

        Args:
            server_state: The object's state on the server after ``last_input``.
            last_input: Last input the server applied (its low 16 bits suffice), or ``None``.
            tick: The server tick of the state; reports not newer than the last are stale.
            now: Local time (s).

        Returns:
            True if applied; False if stale or acknowledging an input never sent (counted).
        """
        if self._tick is not None and tick <= self._tick:
            self._counts["stale"] += 1
            return False
        newest = self._next_seq - 1
        acked = -1 if last_input is None else widen_seq(last_input, newest)
        if acked > newest or (last_input is not None and newest < 0):
            self._counts["malformed"] += 1
            return False
        self._tick = tick
        while self._pending and self._pending[0][0].seq <= acked:
            self._pending.popleft()
        state = server_state
        for frame, value in self._pending:
            state = self._step(state, value, frame.dt)
        self._counts["replayed"] += len(self._pending)
        self._counts["reports"] += 1
        before, after = self._position(self._state), self._position(state)
        jump = tuple(b - a for b, a in zip(before, after, strict=True))
        error = math.hypot(*jump)
        if error > self.config.misprediction_threshold:
            self._errors.append(error)
        offset = tuple(o + j for o, j in zip(self.offset(now), jump, strict=True))
        if math.hypot(*offset) > self.config.blend.snap_distance:
            offset = tuple(0.0 for _ in offset)
            self._counts["snaps"] += 1
        self._offset, self._offset_time = offset, now
        self._state = state
        return True

    def statistics(self) -> PredictionStats:
        """Return the counters and misprediction measures."""
        c = self._counts
        return PredictionStats(
            inputs=c["inputs"],
            pending=len(self._pending),
            reports=c["reports"],
            reports_stale=c["stale"],
            reports_malformed=c["malformed"],
            replayed=c["replayed"],
            mispredictions=len(self._errors),
            misprediction_error_max=max(self._errors, default=0.0),
            misprediction_error_mean=sum(self._errors) / len(self._errors) if self._errors else 0.0,
            snaps=c["snaps"],
            pending_overflows=c["overflows"],
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class InputServerStats:
    """Counters of an ``InputServer``."""

    packets: int
    """Input packets decoded."""
    packets_malformed: int
    """Packets dropped whole because a part did not decode."""
    inputs_applied: int
    """Inputs run through ``step``."""
    inputs_duplicate: int
    """Inputs received again while buffered (redundant copies)."""
    inputs_stale: int
    """Inputs received after their number was applied or skipped (mostly redundant copies)."""
    inputs_skipped: int
    """Numbers skipped because the client stopped resending them."""
    inputs_too_far: int
    """Inputs more than ``max_ahead`` numbers ahead of the expected one (dropped)."""
    ticks: int
    """Ticks run."""


class InputServer(Generic[S, I]):
    """The server's side of one owned object: buffer, dedupe and apply inputs at its tick.

    Args:
        initial: The object's authoritative state.
        step: The game's movement code, ``step(state, input, dt) -> state`` (dt in s).
        input_codec: Decodes inputs from the wire.
        state_codec: Encodes the state into reports.
        config: Shared settings (``max_input_bytes``, ``max_state_bytes``, ``max_ahead``).
        on_input: Called as ``on_input(seq, state)`` after each applied input with the state it
            produced (e.g. to stamp hit claims or to measure), or ``None``.
    """

    def __init__(
        self,
        initial: S,
        *,
        step: Callable[[S, I, float], S],
        input_codec: ValueCodec[I],
        state_codec: ValueCodec[S],
        config: PredictionConfig | None = None,
        on_input: Callable[[int, S], None] | None = None,
    ) -> None:
        """Create a server side that has applied no input."""
        self._on_input = on_input
        self.config = config if config is not None else PredictionConfig()
        self._step = step
        self._inputs = input_codec
        self._states = state_codec
        self.state = initial
        """The authoritative state (the game may change it between ticks, e.g. on a hit)."""
        self._expected = 0
        self._skip_to = 0
        self._buffer: dict[int, tuple[I, float]] = {}
        self._tick = 0
        self.last_packet_time: float | None = None
        """Local time (s) of the last packet that decoded, or ``None``."""
        self._counts = dict.fromkeys(
            ("packets", "malformed", "applied", "duplicate", "stale", "skipped", "far"), 0
        )

    @property
    def last_applied(self) -> int | None:
        """Number of the last input applied (or skipped), or ``None`` before any."""
        return self._expected - 1 if self._expected > 0 else None

    @property
    def buffered(self) -> int:
        """Inputs received and waiting for their turn (at most ``max_ahead + 1``)."""
        return len(self._buffer)

    @property
    def tick_count(self) -> int:
        """Ticks run so far (the tick number of the next report)."""
        return self._tick

    def receive_packet(self, data: bytes, now: float) -> bool:
        """Buffer the inputs of a packet; never raises on bad bytes.

        Args:
            data: The input packet.
            now: Local time of receipt (s).

        Returns:
            True if the packet decoded (even if every input was a duplicate), else False.
        """
        try:
            frames = decode_input_packet(data, max_input_bytes=self.config.max_input_bytes)
            values = [self._inputs.decode(frame.data) for frame in frames]
        except (DecodeError, ValueError):
            self._counts["malformed"] += 1
            return False
        self._counts["packets"] += 1
        self.last_packet_time = now
        first = widen_seq(frames[0].seq, self._expected)
        if first <= self._expected + self.config.max_ahead:
            self._skip_to = max(self._skip_to, first)
        for i, (frame, value) in enumerate(zip(frames, values, strict=True)):
            seq = first + i
            if seq < self._expected:
                self._counts["stale"] += 1
            elif seq in self._buffer:
                self._counts["duplicate"] += 1
            elif seq > self._expected + self.config.max_ahead:
                self._counts["far"] += 1
            else:
                self._buffer[seq] = (value, frame.dt)
        return True

    def tick(self, now: float) -> S:
        """Apply every buffered input that continues the sequence; return the new state.

        Args:
            now: Local time of the tick (s).

        Returns:
            The authoritative state after this tick's inputs.
        """
        self._tick += 1
        while True:
            if self._expected not in self._buffer and self._expected < self._skip_to:
                skip = min([self._skip_to, *(s for s in self._buffer if s > self._expected)])
                self._counts["skipped"] += skip - self._expected
                self._expected = skip
            entry = self._buffer.pop(self._expected, None)
            if entry is None:
                break
            value, dt = entry
            self.state = self._step(self.state, value, dt)
            if self._on_input is not None:
                self._on_input(self._expected, self.state)
            self._counts["applied"] += 1
            self._expected += 1
        return self.state

    def report(self, now: float) -> bytes:
        """Return the report of the current state and the last applied input.

        Args:
            now: Local time (s).

        Raises:
            LocalProtocolError: The encoded state is longer than ``max_state_bytes``.
        """
        return encode_server_report(
            ServerReport(self._tick, self.last_applied, self._states.encode(self.state)),
            max_state_bytes=self.config.max_state_bytes,
        )

    def statistics(self) -> InputServerStats:
        """Return the counters."""
        c = self._counts
        return InputServerStats(
            packets=c["packets"],
            packets_malformed=c["malformed"],
            inputs_applied=c["applied"],
            inputs_duplicate=c["duplicate"],
            inputs_stale=c["stale"],
            inputs_skipped=c["skipped"],
            inputs_too_far=c["far"],
            ticks=self._tick,
        )
