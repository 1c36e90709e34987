"""The contracts every synchronisation algorithm of ``lagless.sync`` is written against.

Implements the shared ground of spec 000 §2.1 (local lag), §2.3 (Time Warp, local rollback, bucket
synchronisation) and §2.14 (lockstep), and of GGPO-style rollback (issue 15): a deterministic game
the algorithms step, and one sans-I/O peer interface that a driver (the simulator harness, the real
UDP runner, a game loop) calls at a fixed frame period.

Units: times in seconds (float), frames are integers counted from 0, payloads are ``bytes``.

Decisions:
    * Inputs are opaque ``bytes`` at this level (a game packs its buttons and commands); a peer
      that has no input from a player for a frame uses the game's ``neutral_input`` or its own
      prediction, as its algorithm says.
    * ``step`` may change ``state`` in place and returns the state of the next frame (the fastest
      form for numpy states); an algorithm that may need to go back calls ``save`` first. ``save``
      returns an independent copy (copy state saving, spec 000 §2.3 "state queue"); ``load``
      returns a state that ``step`` may change without touching the saved copy, so one saved
      state can be loaded many times.
    * Peers are numbered ``0 .. peers - 1``; the number is also the player's index in ``inputs``.
    * A peer hands the driver datagrams, not a stream: ``Outgoing.reliable`` asks the transport
      for its reliable ordered channel, otherwise the algorithm does its own redundancy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

__all__ = ["DeterministicGame", "Outgoing", "SyncPeer", "SyncStats"]

S = TypeVar("S")


class DeterministicGame(Protocol[S]):
    """A game whose frames depend only on the previous state and every player's input.

    Two peers that start from ``initial_state()`` and step the same inputs must reach states with
    equal ``checksum``; ``lagless.sync`` finds out when they do not (synctest, exchanged
    checksums).
    """

    @property
    def players(self) -> int:
        """How many players (and so how many inputs per frame) the game has."""
        ...

    @property
    def neutral_input(self) -> bytes:
        """The input of a player who presses nothing (used before a player's first input)."""
        ...

    def initial_state(self) -> S:
        """The state of frame 0."""
        ...

    def step(self, state: S, inputs: Sequence[bytes], frame: int) -> S:
        """Advance ``state`` of ``frame`` one frame, one input per player; may work in place."""
        ...

    def save(self, state: S) -> S:
        """An independent copy of ``state`` that later steps do not change."""
        ...

    def load(self, saved: S) -> S:
        """A working state equal to ``saved``; stepping it leaves ``saved`` unchanged."""
        ...

    def checksum(self, state: S) -> int:
        """A 32-bit digest of everything ``step`` reads (equal states, equal digests)."""
        ...

    def divergence(self, a: S, b: S) -> float:
        """How far apart two states are, in the game's unit (the arena: metres); 0 when equal."""
        ...


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One datagram a peer wants sent: to peer ``destination``, on the reliable channel or not."""

    destination: int
    payload: bytes
    reliable: bool = False


@dataclass(slots=True)
class SyncStats:
    """What a peer counts while it runs; the lab turns these into the ``sync/compare`` columns.

    Attributes:
        frames_simulated: Calls of ``step`` in total, re-simulations included.
        frames_resimulated: Calls of ``step`` for a frame this peer had already simulated.
        rollback_depths: One entry per rollback: how many frames it went back.
        stall_frames: Driver ticks on which the peer could not advance (waited for a peer).
        input_delays: Per local input change, seconds from ``tick`` receiving it to the first
            displayed state that includes it on this peer.
        bytes_sent: Payload bytes handed out by ``outgoing`` (transport headers not included).
        bytes_received: Payload bytes passed to ``receive``.
        late_discarded: Inputs or ADUs dropped because they arrived after their frame was final.
        desyncs: Frames on which exchanged checksums disagreed.
    """

    frames_simulated: int = 0
    frames_resimulated: int = 0
    rollback_depths: list[int] = field(default_factory=list)
    stall_frames: int = 0
    input_delays: list[float] = field(default_factory=list)
    bytes_sent: int = 0
    bytes_received: int = 0
    late_discarded: int = 0
    desyncs: list[int] = field(default_factory=list)


class SyncPeer(Protocol[S]):
    """One participant of a synchronised session, sans-I/O.

    A driver calls ``tick`` every ``frame_period`` seconds with the local player's current input,
    passes every datagram from another peer to ``receive``, and sends what ``outgoing`` returns.
    ``displayed_state`` and ``displayed_frame`` are what the local screen shows after the tick.
    """

    @property
    def peer(self) -> int:
        """This peer's number (and its player's index)."""
        ...

    @property
    def peers(self) -> int:
        """How many peers take part."""
        ...

    @property
    def frame_period(self) -> float:
        """Seconds between two ``tick`` calls the driver should make now (may adapt)."""
        ...

    @property
    def displayed_frame(self) -> int:
        """The frame whose state the local screen shows."""
        ...

    @property
    def displayed_state(self) -> S:
        """The state the local screen shows (do not change it)."""
        ...

    @property
    def stats(self) -> SyncStats:
        """Counters since the session started."""
        ...

    def tick(self, now: float, local_input: bytes) -> None:
        """One driver frame at ``now`` with the local player's input: advance, predict or stall."""
        ...

    def receive(self, source: int, payload: bytes, now: float) -> None:
        """A datagram from peer ``source``; garbage is counted and dropped, never raised."""
        ...

    def outgoing(self) -> list[Outgoing]:
        """Datagrams to send since the last call (the list is the caller's)."""
        ...
