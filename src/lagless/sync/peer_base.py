"""What every ``SyncPeer`` of ``lagless.sync`` holds in common: identity, screen, counters, output.

Implements the shared part of the ``lagless.sync.contract.SyncPeer`` interface (spec 000 §2.1,
§2.3, §2.14; issue 15) once, so the algorithms hold only their own logic:

* `PeerBase` keeps the peer's number, the number of peers, the tick period, the displayed frame
  and state, the `SyncStats` and the queue of `Outgoing` datagrams, and answers the contract's
  properties and ``outgoing`` from them. ``_emit`` queues a datagram and counts its bytes.
* `ClockedPeer` adds the session clock (`lagless.sync.clock.PeerClock`) of the algorithms that
  keep one (lockstep, bucket synchronisation, local lag): the first screen of a received
  datagram (sender range, empty payload, ping/pong answered), the pings of a tick and the
  input-length check.

Units: seconds (``frame_period``, ``now``), frames are integers, sizes in bytes.

Decision: a subclass sets the attributes in its ``__init__`` (``_peer``, ``_peers``, ``_period``,
``_frame``, ``_state``, ``_stats``, ``_out``) rather than passing them up, because several
compute them from their own configuration first; a property whose meaning differs (bucket
synchronisation's local view) is overridden there.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from lagless.errors import ConfigError
from lagless.sync.clock import KIND_PING, KIND_PONG, PeerClock, decode_clock_message
from lagless.sync.contract import DeterministicGame, Outgoing, SyncStats

__all__ = ["ClockedPeer", "PeerBase"]

S = TypeVar("S")


class PeerBase(Generic[S]):
    """The contract's properties and the output queue of a sync peer (see the module docstring)."""

    _peer: int
    _peers: int
    _period: float
    _frame: int
    _state: S
    _stats: SyncStats
    _out: list[Outgoing]

    @property
    def peer(self) -> int:
        """This peer's number (and its player's index)."""
        return self._peer

    @property
    def peers(self) -> int:
        """How many peers take part (spectators included where the algorithm has them)."""
        return self._peers

    @property
    def frame_period(self) -> float:
        """Seconds until the next tick the driver should make (some algorithms adapt it)."""
        return self._period

    @property
    def displayed_frame(self) -> int:
        """The frame of ``displayed_state``: frames stepped so far, predicted ones included."""
        return self._frame

    @property
    def displayed_state(self) -> S:
        """The state on screen (do not change it)."""
        return self._state

    @property
    def stats(self) -> SyncStats:
        """Counters since the start."""
        return self._stats

    def outgoing(self) -> list[Outgoing]:
        """The datagrams produced since the last call (the list is the caller's)."""
        out, self._out = self._out, []
        return out

    def _emit(self, destination: int, payload: bytes) -> None:
        """Queue ``payload`` for peer ``destination`` (unreliable) and count its bytes."""
        self._out.append(Outgoing(destination, payload))
        self._stats.bytes_sent += len(payload)


class ClockedPeer(PeerBase[S]):
    """A `PeerBase` with a session clock, pings and a garbage counter."""

    _game: DeterministicGame[S]
    _clock: PeerClock
    garbage: int
    """Datagrams dropped as malformed or out of range."""

    def _start(
        self,
        game: DeterministicGame[S],
        peer: int,
        peers: int,
        frame_period: float,
        ping_interval: float,
    ) -> None:
        """Check the peer numbers and set what every clocked peer holds (``__init__`` calls it).

        Raises:
            ConfigError: ``peer`` is not in ``0 .. peers - 1`` or ``peers`` is not the game's
                player count.
        """
        if not 0 <= peer < peers or peers != game.players:
            raise ConfigError(f"peer must be in [0, peers) and peers == game.players ({peers})")
        self._game = game
        self._peer = peer
        self._peers = peers
        self._period = frame_period
        self._clock = PeerClock(peer, peers, ping_interval=ping_interval)
        self._stats = SyncStats()
        self._state = game.initial_state()
        self._out = []
        self.garbage = 0

    @property
    def clock(self) -> PeerClock:
        """The session clock and RTT estimates."""
        return self._clock

    def _check_input(self, local_input: bytes, limit: int) -> None:
        """Raise ``ConfigError`` when the local input is longer than ``limit`` bytes."""
        if len(local_input) > limit:
            raise ConfigError(f"local_input has at most {limit} bytes, got {len(local_input)}")

    def _send_pings(self, now: float, skip: frozenset[int] | set[int] | dict[int, int]) -> None:
        """Emit the clock's pings that are due at ``now``, except to the peers in ``skip``."""
        for other, ping in self._clock.tick(now):
            if other not in skip:
                self._emit(other, ping)

    def _screen(self, source: int, payload: bytes, now: float) -> bool:
        """Count ``payload``, answer a ping/pong; True when the algorithm should read the payload.

        A datagram from outside ``0 .. peers - 1``, from this peer itself, empty, or a malformed
        ping/pong is counted in ``garbage``.
        """
        self._stats.bytes_received += len(payload)
        if not 0 <= source < self._peers or source == self._peer or not payload:
            self.garbage += 1
            return False
        if payload[0] not in (KIND_PING, KIND_PONG):
            return True
        message = decode_clock_message(payload)
        if message is None:
            self.garbage += 1
            return False
        reply = self._clock.receive(source, message, now)
        if reply is not None:
            self._emit(source, reply)
        return False
