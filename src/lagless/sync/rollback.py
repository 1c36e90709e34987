"""GGPO-style rollback: input delay, prediction, rollback and re-simulation, time sync, spectators.

Issue 15 "Build" 6, the practice of today's fighting games (GGPO): every peer simulates every
frame at once with the inputs it has; a remote input that has not arrived is predicted by
repeating that player's last known input. When the real input arrives and differs from the
prediction, the peer loads the state saved before the first mispredicted frame and re-simulates
up to the present (the "rollback"), within the same tick, so the screen jumps to the corrected
state. A few frames of input delay (the local input is applied ``input_delay`` frames later on
every peer) make mispredictions rarer; a prediction window bounds how far a peer may run ahead
of the inputs it holds: past it, the peer stalls rather than roll back further.

Units: times in seconds (``now`` is passed in), frames are integers, sizes in bytes, the frame
advantage in frames.

Decisions:
    * Players are peers ``0 .. game.players - 1``; peers ``game.players .. peers - 1`` are
      spectators (``RollbackSpectator``), fed confirmed inputs by the spectator host (peer 0 by
      default). ``make_rollback_peer`` builds the right one for a peer number (the registry's
      ``"rollback"`` entry).
    * Each player sends, every tick, one datagram to every other player carrying all of its
      inputs that player has not acknowledged (redundancy instead of the reliable channel), the
      highest frame up to which it holds that player's inputs (the acknowledgement), its current
      frame and its frame advantage, and its latest confirmed checksum. Inputs of frames
      ``0 .. input_delay - 1`` are the neutral input and are sent like any other.
    * A frame is *confirmed* when every player's input for it is known; the state of frame ``k``
      is final once frame ``k - 1`` is confirmed. Rollback depth is at most ``max_prediction``:
      a peer only steps frame ``f`` when ``f - confirmed_frame <= max_prediction`` and stalls
      (``SyncStats.stall_frames``) otherwise. ``max_prediction = 0`` is lockstep-like.
    * A mispredicted frame found in ``receive`` is rolled back at the start of the next ``tick``
      (as GGPO does in its advance), so several late inputs cost one rollback.
    * Time sync (GGPO's frame advantage): a peer estimates the remote's frame now as its last
      reported frame plus the time since it arrived plus half the smoothed RTT (measured from
      input acknowledgements), in frames; its advantage is its own frame minus that. Peers
      exchange advantages, and ``(mine - theirs) / 2`` averaged over ``sync_window`` ticks is the
      lead that asymmetric latency estimates cancel out of. A peer whose largest lead exceeds
      half a frame lengthens ``frame_period`` by ``lead / 30`` of a period (at most 25 %), so it
      gives the lead back over about 30 frames; the peer behind never speeds up. For a driver
      that ticks at a fixed rate and ignores ``frame_period``, ``time_sync="skip"`` keeps the
      period and instead skips ticks (no step; the local input of a skipped tick is dropped, as
      on a stall): half the lead, rounded down, at least one tick, then no more skips for
      ``sync_window`` ticks so the average sees the effect (``skipped_ticks`` counts them).
      ``time_sync="off"`` does neither (the prediction window still bounds the gap).
    * Checksums: every ``checksum_interval`` frames a peer takes the checksum of the state it is
      about to step; once that state is final it becomes the peer's latest confirmed checksum
      (kept in ``confirmed_checksums``, the last ``history`` of them) and travels in every
      datagram; a frame whose checksum differs from a remote's is appended to
      ``SyncStats.desyncs`` once.
    * A stalled tick drops its local input (as GGPO does); the felt delay of an input change
      (``SyncStats.input_delays``) runs from the first tick that was handed the new input, so
      stalls show up in it.
    * Spectators never send inputs, only acknowledgements (5 bytes a tick), so the host can send
      confirmed inputs redundantly until acknowledged. The host keeps at most
      ``spectator_backlog`` frames per spectator; a spectator further behind is dropped
      (``dropped_spectators``). A spectator steps one frame per tick, two while more than
      ``catch_up`` frames are waiting, and stalls when none is.
    * Bounded memory: saved states and prediction records exist only for unconfirmed frames;
      inputs are kept until every receiver acknowledged them; inputs more than ``HORIZON``
      frames ahead of the receiver's frame are dropped and counted in ``rejected``.
    * Silence and dropping (GGPO's interrupted and disconnected events, then its disconnect): a
      player heard from no datagram for ``interrupt_after`` seconds is in ``interrupted``; after
      ``disconnect_after`` seconds (2 s) it is dropped by agreement. Each remaining player that
      sees the silence, or hears a drop report or notice about that player from another,
      freezes it: its datagrams, and the checksums it sent before, are ignored from then on (a
      dead player may have confirmed frames with inputs no survivor holds). A player's *view*
      is the set of players it has not begun to drop, itself included. Until it settles a drop,
      it sends every other player of its view a drop report (``0xB5``) every tick: the last
      frame of the dropped player's inputs it holds, its view, and the inputs the receiver may
      lack (relayed, from the last frame the receiver announced). With ``held`` the last frame
      it holds, it settles the drop at ``held + 1`` when every other player of its view last
      reported exactly (its view, ``held``), or when one of them sent a drop notice (``0xB4``,
      done) saying it settled with that same last frame. From then on the dropped player's
      input is the game's neutral input, frames predicted otherwise are rolled back at once,
      and the player sends drop notices instead of reports until each receiver's notice says it
      settled too. The frame is the highest any survivor holds (relays raise the others to it),
      never lower, because a peer may already have confirmed frames up to the frame it holds,
      and confirmed frames never change.
    * Why every survivor settles on the same frame, even when a second player dies while it
      relays the first one's inputs (the rule before the view was "the highest frame
      announced by every remaining player", and a survivor that dropped the relay early could
      settle on a report sent before the relay reached its sender). A player takes a dropped
      player's inputs only from the players of its current view, and views only shrink. If
      every player of a view V reported (m, V), none of them ever holds more than m: after its
      report each takes inputs only from players of V, and each of those held m at its own
      report and nothing more before it (take the first one to exceed m: its source exceeded m
      earlier). So every player of V that settles by the equal reports settles on m + 1, and a
      settled notice only passes that frame on: its receiver is in the sender's view, so it
      reported (m, V) and holds m. A second death changes everyone's view; reports over the old
      view no longer count, and the survivors re-report until they hold the same inputs over
      the same view.
    * Relaying works because every player keeps the other players' inputs ``input_delay +
      max_prediction + 2`` frames below its confirmed frame: a player of its view cannot be
      further behind in them while it is alive (all peers use the same knobs).
    * Partitions. Agreement needs a report from every other player of the view, so a player
      that cannot be heard keeps the others stalled until it has been silent for
      ``disconnect_after``; then it is dropped too and the rest settle without it, while it
      drops everyone and goes on alone. A partition into groups leaves one session per group,
      each in agreement within itself, possibly with different drop frames for the same player
      (they ignore each other's datagrams from then on). A report from any peer makes the others
      join its drop, so a one-way cut ends in the same drop on every side; a single cut link
      between two survivors makes each drop the other, a third joins whichever drop it hears
      of first and ignores the accused from then on: one or both ends are lost, by timing.
      The application decides what a shrunken session means (``disconnected``, ``dropped``).
    * ``rng`` is accepted for the registry's uniform signature; rollback makes no random choice.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from lagless.sync.contract import DeterministicGame, Outgoing, SyncStats
from lagless.sync.inputs import (
    MAX_INPUT_BYTES,
    DropNotice,
    InputPacket,
    SpectatePacket,
    SpectatorAck,
    decode_rollback_packet,
    encode_drop_notice,
    encode_drop_report,
    encode_input_packet,
    encode_spectate_packet,
    encode_spectator_ack,
)
from lagless.sync.peer_base import PeerBase

__all__ = ["RollbackPeer", "RollbackSpectator", "make_rollback_peer"]

S = TypeVar("S")

HORIZON: Final = 256
"""Frames beyond the receiver's current frame from which remote inputs are dropped."""
SLOWDOWN_DEAD_BAND: Final = 0.5
"""Frames of lead tolerated before a peer slows down."""
CATCH_UP_FRAMES: Final = 30.0
"""A lead of L frames lengthens the period by L / CATCH_UP_FRAMES."""
MAX_SLOWDOWN: Final = 0.25
"""Largest relative lengthening of ``frame_period``."""
RTT_GAIN: Final = 0.125
"""Weight of a new RTT sample in the smoothed RTT."""
TIME_SYNC_MODES: Final = ("period", "skip", "off")
"""How a peer that runs ahead gives frames back (see the module docstring)."""
REMOTE_SUMS_KEPT: Final = 64
"""Remote checksums kept per peer while waiting for our own of the same frame."""


NEVER: Final = 2**62
"""``_known`` of a dropped player: every frame's input is known (neutral from its drop frame)."""


@dataclass(slots=True)
class _Drop:
    """One player being dropped: what the other remaining players said about it, the frame.

    ``marks`` maps a peer to the highest last frame of the player's inputs it announced in any
    report or notice (where relaying to it starts); ``reports`` maps a peer to the report
    received last, (view mask, last frame): a stale one is still true of its time, and a fresh
    one follows every tick; ``settled`` maps a peer whose notice said it settled to the last
    frame it settled with; ``frame`` is the first frame of neutral input once this peer
    settled (None before).
    """

    marks: dict[int, int] = field(default_factory=dict)
    reports: dict[int, tuple[int, int]] = field(default_factory=dict)
    settled: dict[int, int] = field(default_factory=dict)
    frame: int | None = None


def _keep_last(table: dict[int, int], limit: int) -> None:
    """Drop the oldest-inserted entries of ``table`` until it holds ``limit``."""
    while len(table) > limit:
        del table[next(iter(table))]


class RollbackPeer(PeerBase[S]):
    """A player of a GGPO-style rollback session (a ``SyncPeer``), sans-I/O.

    Args:
        game: The deterministic game (the same on every peer).
        peer: This player's number, ``0 <= peer < game.players``.
        peers: Players plus spectators.
        rng: Unused (rollback makes no random choice); accepted for ``make_peer``.
        frame_period: Nominal seconds per frame (1/60 for 60 Hz).
        input_delay: Frames between a local input and the frame it applies to (0–30).
        max_prediction: Most frames simulated ahead of the confirmed frame (0–60).
        checksum_interval: Frames between two exchanged checksums.
        spectator_host: The player that feeds the spectators.
        spectator_backlog: Frames the host keeps per spectator before dropping it.
        sync_window: Ticks over which the frame advantage is averaged.
        time_sync: ``"period"`` (lengthen ``frame_period``), ``"skip"`` (skip ticks) or ``"off"``.
        history: Confirmed checksums kept in ``confirmed_checksums``.
        interrupt_after: Seconds of silence after which a remote counts as ``interrupted``.
        disconnect_after: Seconds of silence after which a remote is dropped by agreement.
    """

    def __init__(
        self,
        game: DeterministicGame[S],
        *,
        peer: int,
        peers: int,
        rng: random.Random | None = None,
        frame_period: float = 1.0 / 60.0,
        input_delay: int = 2,
        max_prediction: int = 8,
        checksum_interval: int = 8,
        spectator_host: int = 0,
        spectator_backlog: int = 600,
        sync_window: int = 32,
        time_sync: str = "period",
        history: int = 4096,
        interrupt_after: float = 1.0,
        disconnect_after: float = 2.0,
    ) -> None:
        players = game.players
        if not 0 <= peer < players:
            raise ValueError(f"peer must be a player in [0, {players - 1}], got {peer}")
        if peers < players:
            raise ValueError(f"peers ({peers}) must be at least the game's players ({players})")
        if not 0 <= input_delay <= 30:
            raise ValueError(f"input_delay must be in [0, 30], got {input_delay}")
        if not 0 <= max_prediction <= 60:
            raise ValueError(f"max_prediction must be in [0, 60], got {max_prediction}")
        if frame_period <= 0 or checksum_interval < 1 or sync_window < 1 or history < 1:
            raise ValueError("frame_period, checksum_interval, sync_window, history must be > 0")
        if not 0 <= spectator_host < players:
            raise ValueError(f"spectator_host must be a player, got {spectator_host}")
        if time_sync not in TIME_SYNC_MODES:
            raise ValueError(f"time_sync must be one of {TIME_SYNC_MODES}, got {time_sync!r}")
        if not 0 < interrupt_after <= disconnect_after:
            raise ValueError("need 0 < interrupt_after <= disconnect_after (seconds)")
        del rng
        self._game = game
        self._peer = peer
        self._peers = peers
        self._players = players
        self._remotes = [p for p in range(players) if p != peer]
        self._base_period = frame_period
        self._period = frame_period
        self.input_delay = input_delay
        self.max_prediction = max_prediction
        self._interval = checksum_interval
        self._history = history
        self._backlog = spectator_backlog
        neutral = game.neutral_input
        self._neutral = neutral
        self._state: S = game.initial_state()
        self._frame = 0
        self._inputs: list[dict[int, bytes]] = [{} for _ in range(players)]
        self._known = [-1] * players
        for frame in range(input_delay):
            self._inputs[peer][frame] = neutral
        self._known[peer] = input_delay - 1
        self._low = [0] * players
        self._saved: dict[int, S] = {}
        self._used: dict[int, tuple[bytes, ...]] = {}
        self._pending_sums: dict[int, int] = {}
        self._first_wrong: int | None = None
        self._acked = dict.fromkeys(self._remotes, -1)
        self._spectators: dict[int, int] = (
            dict.fromkeys(range(players, peers), -1) if peer == spectator_host else {}
        )
        self.dropped_spectators = 0
        self._sent_at: dict[int, float] = {}
        self._rtt: dict[int, float] = {}
        self._remote_frame: dict[int, tuple[int, float]] = {}
        self._remote_advantage: dict[int, float] = {}
        self._ahead: dict[int, float] = {}
        self._leads: dict[int, deque[float]] = {q: deque(maxlen=sync_window) for q in self._remotes}
        self._lead = 0.0
        self._time_sync_mode = time_sync
        self._sync_window = sync_window
        self._skip = 0
        self._skip_cooldown = 0
        self.skipped_ticks = 0
        self.confirmed_checksums: dict[int, int] = {}
        self._latest_sum: tuple[int, int] = (-1, 0)
        self._remote_sums: dict[int, dict[int, int]] = {q: {} for q in self._remotes}
        self._desynced: set[int] = set()
        self._last_local = neutral
        self._held: tuple[bytes, float] = (neutral, 0.0)
        self._delays: deque[tuple[int, float]] = deque()
        self._out: list[Outgoing] = []
        self._stats = SyncStats()
        self.rejected = 0
        self._interrupt_after = interrupt_after
        self._disconnect_after = disconnect_after
        self._heard: dict[int, float] = {}
        self._silent: dict[int, float] = {}
        self._drops: dict[int, _Drop] = {}
        self._relay_margin = input_delay + max_prediction + 2

    # -- SyncPeer ------------------------------------------------------------------------------

    @property
    def confirmed_frame(self) -> int:
        """The highest frame for which every player's input is known (-1: none)."""
        return min(self._known)

    @property
    def frame_advantage(self) -> float:
        """This peer's averaged lead over the remote it is most ahead of, frames."""
        return self._lead

    @property
    def interrupted(self) -> list[int]:
        """Players silent for more than ``interrupt_after`` s at the last tick, drops excluded."""
        return [q for q, quiet in self._silent.items() if quiet > self._interrupt_after]

    @property
    def disconnected(self) -> list[int]:
        """Players being dropped or dropped (silent for ``disconnect_after`` s, or so agreed)."""
        return sorted(self._drops)

    @property
    def dropped(self) -> dict[int, int]:
        """Settled drops: player -> the first frame in which its input is the neutral input."""
        return {q: d.frame for q, d in self._drops.items() if d.frame is not None}

    def rtt(self, remote: int) -> float | None:
        """Smoothed round-trip time to player ``remote`` in seconds (None before a sample)."""
        return self._rtt.get(remote)

    def tick(self, now: float, local_input: bytes) -> None:
        """Roll back if an input was mispredicted, then step one frame or stall, then send."""
        if len(local_input) > MAX_INPUT_BYTES:
            raise ValueError(f"an input is at most {MAX_INPUT_BYTES} bytes")
        for remote in list(self._acked):
            quiet = self._silent[remote] = now - self._heard.setdefault(remote, now)
            if quiet > self._disconnect_after:
                self._begin_drop(remote)
        self._settle_drops()
        if local_input != self._held[0]:
            self._held = (local_input, now)
        self._rollback()
        if self._skip:
            self._skip -= 1
            self.skipped_ticks += 1
        elif self._frame - self.confirmed_frame > self.max_prediction:
            self._stats.stall_frames += 1
        else:
            target = self._frame + self.input_delay
            self._inputs[self._peer][target] = local_input
            self._known[self._peer] = target
            self._sent_at[target] = now
            if local_input != self._last_local:
                self._delays.append((target, self._held[1]))
                self._last_local = local_input
            self._step_frame(self.confirmed_frame)
            while self._delays and self._delays[0][0] < self._frame:
                self._stats.input_delays.append(now - self._delays.popleft()[1])
        self._publish_checksums()
        self._time_sync(now)
        self._prune()
        self._send()

    def receive(self, source: int, payload: bytes, now: float) -> None:
        """Take a datagram from ``source``; anything malformed or misaddressed is counted."""
        self._stats.bytes_received += len(payload)
        packet = decode_rollback_packet(payload)
        if isinstance(packet, InputPacket) and source in self._acked:
            self._heard[source] = now
            self._take_inputs(source, packet, now)
        elif isinstance(packet, DropNotice) and source in self._acked:
            self._heard[source] = now
            self._take_notice(source, packet)
        elif isinstance(packet, SpectatorAck) and source in self._spectators:
            if packet.ack <= self.confirmed_frame:
                self._spectators[source] = max(self._spectators[source], packet.ack)
            else:
                self.rejected += 1
        else:
            self.rejected += 1

    # -- simulation ----------------------------------------------------------------------------

    def _input(self, player: int, frame: int) -> bytes:
        known = self._known[player]
        if frame <= known:  # a dropped player's store ends before its drop frame: neutral after
            return self._inputs[player].get(frame, self._neutral)
        return self._inputs[player][known] if known >= 0 else self._neutral

    def _step_frame(self, confirmed: int) -> None:
        """Step the current frame with known or predicted inputs, saving what a rollback needs."""
        frame = self._frame
        game = self._game
        if frame % self._interval == 0:
            self._pending_sums[frame] = game.checksum(self._state)
        inputs = tuple(self._input(p, frame) for p in range(self._players))
        if frame > confirmed:
            self._saved[frame] = game.save(self._state)
            self._used[frame] = inputs
        self._state = game.step(self._state, inputs, frame)
        self._frame = frame + 1
        self._stats.frames_simulated += 1

    def _rollback(self) -> None:
        start = self._first_wrong
        if start is None:
            return
        self._first_wrong = None
        end = self._frame
        confirmed = self.confirmed_frame
        self._state = self._game.load(self._saved[start])
        self._frame = start
        while self._frame < end:
            self._step_frame(confirmed)
        depth = end - start
        self._stats.frames_resimulated += depth
        self._stats.rollback_depths.append(depth)

    def _take_inputs(self, source: int, packet: InputPacket, now: float) -> None:
        if packet.ack > self._known[self._peer]:
            self.rejected += 1
            return
        if packet.ack > self._acked[source]:
            sent = self._sent_at.get(packet.ack)
            if sent is not None:
                sample = max(0.0, now - sent)
                old = self._rtt.get(source)
                self._rtt[source] = sample if old is None else old + RTT_GAIN * (sample - old)
            self._acked[source] = packet.ack
        last = self._remote_frame.get(source)
        if last is None or packet.frame >= last[0]:
            self._remote_frame[source] = (packet.frame, now)
            self._remote_advantage[source] = packet.advantage
        self._store(source, packet.start, packet.inputs)
        if packet.checksum_frame >= 0:
            self._compare_sum(source, packet.checksum_frame, packet.checksum)

    def _store(self, player: int, start: int, inputs: Sequence[bytes]) -> None:
        """Take ``player``'s inputs from frame ``start``; stop at a gap or past the horizon."""
        store = self._inputs[player]
        limit = self._frame + HORIZON
        for offset, value in enumerate(inputs):
            frame = start + offset
            known = self._known[player]
            if frame <= known:
                continue
            if frame != known + 1 or frame > limit:
                self.rejected += 1
                break
            store[frame] = value
            self._known[player] = frame
            used = self._used.get(frame)
            if used is not None and used[player] != value:
                self._mark_wrong(frame)

    def _mark_wrong(self, frame: int) -> None:
        """Roll back to ``frame`` (or earlier) at the start of the next tick."""
        wrong = self._first_wrong
        self._first_wrong = frame if wrong is None else min(wrong, frame)

    # -- dropping a silent player ------------------------------------------------------------

    def _begin_drop(self, player: int) -> None:
        """Freeze ``player``: ignore it (and its checksums) from now on, report what is held."""
        del self._acked[player]
        self._remote_sums[player].clear()
        self._silent.pop(player, None)
        self._drops[player] = _Drop()

    def _view(self) -> int:
        """The players this peer still counts as remaining, itself included, as a bit mask."""
        view = 1 << self._peer
        for remote in self._acked:
            view |= 1 << remote
        return view

    def _take_notice(self, source: int, notice: DropNotice) -> None:
        player = notice.player
        if player in (self._peer, source) or player >= self._players:
            self.rejected += 1
            return
        view = notice.view
        mine = 1 << self._peer | 1 << source
        if notice.last > self._frame + HORIZON or (
            view is not None and (view & mine != mine or view >> self._players)
        ):
            self.rejected += 1
            return
        if player in self._acked:
            self._begin_drop(player)
        drop = self._drops[player]
        drop.marks[source] = max(drop.marks.get(source, -1), notice.last)
        if notice.done:
            drop.settled[source] = notice.last
        elif view is not None:
            drop.reports[source] = (view, notice.last)
        if drop.frame is None:
            carried = max(0, notice.last - notice.start + 1)
            self._store(player, notice.start, notice.inputs[:carried])

    def _settle_drops(self) -> None:
        """Settle every drop that the remaining players agree on (see the module docstring)."""
        if not self._drops:
            return  # the common case, every tick
        view = self._view()
        for player, drop in self._drops.items():
            if drop.frame is not None:
                continue
            held = self._known[player]
            agreed = held in (drop.settled.get(r) for r in self._acked) or all(
                drop.reports.get(r) == (view, held) for r in self._acked
            )
            if not agreed:
                continue
            drop.frame = held + 1
            self._known[player] = NEVER
            for frame, used in self._used.items():
                if frame > held and used[player] != self._neutral:
                    self._mark_wrong(frame)

    def _send_notices(self, remote: int) -> None:
        """This peer's drop reports (notices once settled) for ``remote``, relaying inputs."""
        if not self._drops:
            return  # the common case, every tick and remote
        view = self._view()
        for player, drop in self._drops.items():
            if remote in drop.settled:
                continue
            last = self._known[player] if drop.frame is None else drop.frame - 1
            first = max(self._low[player], drop.marks.get(remote, -1) + 1)
            store = self._inputs[player]
            inputs = [store[f] for f in range(first, last + 1)]
            if drop.frame is None:
                payload, _ = encode_drop_report(
                    player=player, view=view, last=last, start=first, inputs=inputs
                )
            else:
                payload, _ = encode_drop_notice(
                    player=player, done=True, last=last, start=first, inputs=inputs
                )
            self._emit(remote, payload)

    # -- checksums -----------------------------------------------------------------------------

    def _publish_checksums(self) -> None:
        final = min(self.confirmed_frame + 1, self._frame - 1)
        for frame in sorted(f for f in self._pending_sums if f <= final):
            checksum = self._pending_sums.pop(frame)
            self.confirmed_checksums[frame] = checksum
            self._latest_sum = (frame, checksum)
            for sums in self._remote_sums.values():
                theirs = sums.pop(frame, None)
                if theirs is not None and theirs != checksum:
                    self._desync(frame)
        _keep_last(self.confirmed_checksums, self._history)

    def _compare_sum(self, source: int, frame: int, checksum: int) -> None:
        mine = self.confirmed_checksums.get(frame)
        if mine is not None:
            if mine != checksum:
                self._desync(frame)
            return
        sums = self._remote_sums[source]
        sums[frame] = checksum
        _keep_last(sums, REMOTE_SUMS_KEPT)

    def _desync(self, frame: int) -> None:
        if frame not in self._desynced:
            self._desynced.add(frame)
            self._stats.desyncs.append(frame)

    # -- time sync, pruning, sending -----------------------------------------------------------

    def _time_sync(self, now: float) -> None:
        base = self._base_period
        lead = 0.0
        for source in self._acked:
            reported = self._remote_frame.get(source)
            if reported is None:
                continue
            frame, when = reported
            estimate = frame + (now - when + self._rtt.get(source, 0.0) / 2.0) / base
            ahead = self._frame - estimate
            self._ahead[source] = ahead
            leads = self._leads[source]
            leads.append((ahead - self._remote_advantage.get(source, 0.0)) / 2.0)
            lead = max(lead, sum(leads) / len(leads))
        self._lead = lead
        if self._time_sync_mode == "period":
            slow = min(MAX_SLOWDOWN, max(0.0, lead - SLOWDOWN_DEAD_BAND) / CATCH_UP_FRAMES)
            self._period = base * (1.0 + slow)
        elif self._time_sync_mode == "skip":
            self._skip_cooldown = max(0, self._skip_cooldown - 1)
            if not self._skip_cooldown and lead > 1.0:
                self._skip = max(1, int(lead / 2.0))
                self._skip_cooldown = self._skip + self._sync_window

    def _prune(self) -> None:
        confirmed = self.confirmed_frame
        for table in (self._saved, self._used):
            for frame in [f for f in table if f <= confirmed]:
                del table[frame]
        for spectator, acked in list(self._spectators.items()):
            if confirmed - acked > self._backlog:
                del self._spectators[spectator]
                self.dropped_spectators += 1
        spectator_floor = min(self._spectators.values(), default=confirmed) + 1
        for player in range(self._players):
            keep_from = min(confirmed + 1, self._frame, self._known[player], spectator_floor)
            if player == self._peer:
                keep_from = min(keep_from, min(self._acked.values(), default=keep_from) + 1)
            else:  # kept to relay if this player is dropped
                keep_from -= self._relay_margin
            store = self._inputs[player]
            for frame in range(self._low[player], keep_from):
                store.pop(frame, None)
                if player == self._peer:
                    self._sent_at.pop(frame, None)
            self._low[player] = max(self._low[player], keep_from)

    def _send(self) -> None:
        own = self._inputs[self._peer]
        last = self._known[self._peer]
        frame, checksum = self._latest_sum
        for remote, acked in self._acked.items():
            first = acked + 1
            payload, _ = encode_input_packet(
                frame=self._frame,
                ack=self._known[remote],
                advantage=self._ahead.get(remote, 0.0),
                checksum_frame=frame,
                checksum=checksum,
                start=first,
                inputs=[own[f] for f in range(first, last + 1)],
            )
            self._emit(remote, payload)
            self._send_notices(remote)
        confirmed = self.confirmed_frame
        for spectator, acked in self._spectators.items():
            first = acked + 1
            if first > confirmed:
                continue
            frames = [
                tuple(self._input(p, f) for p in range(self._players))
                for f in range(first, min(confirmed + 1, first + 255))
            ]
            payload, _ = encode_spectate_packet(
                checksum_frame=frame, checksum=checksum, start=first, frames=frames
            )
            self._emit(spectator, payload)


class RollbackSpectator(PeerBase[S]):
    """A spectator of a rollback session: steps confirmed inputs from the host, sends only acks.

    Args:
        game: The deterministic game.
        peer: This spectator's number, ``game.players <= peer < peers``.
        peers: Players plus spectators.
        rng: Unused; accepted for ``make_peer``.
        frame_period: Seconds per frame.
        spectator_host: The player that feeds this spectator.
        checksum_interval: Frames between two checksums (as the players').
        catch_up: Frames waiting beyond which the spectator steps two frames per tick.
        backlog: Most frames held ahead of the displayed one.
    """

    def __init__(
        self,
        game: DeterministicGame[S],
        *,
        peer: int,
        peers: int,
        rng: random.Random | None = None,
        frame_period: float = 1.0 / 60.0,
        spectator_host: int = 0,
        checksum_interval: int = 8,
        catch_up: int = 6,
        backlog: int = 600,
    ) -> None:
        if not game.players <= peer < peers:
            raise ValueError(f"a spectator's number must be in [{game.players}, {peers - 1}]")
        if not 0 <= spectator_host < game.players:
            raise ValueError(f"spectator_host must be a player, got {spectator_host}")
        if frame_period <= 0 or checksum_interval < 1 or catch_up < 0 or backlog < 1:
            raise ValueError("frame_period, checksum_interval, backlog > 0; catch_up >= 0")
        del rng
        self._game = game
        self._peer = peer
        self._peers = peers
        self._host = spectator_host
        self._period = frame_period
        self._interval = checksum_interval
        self._catch_up = catch_up
        self._backlog = backlog
        self._state: S = game.initial_state()
        self._frame = 0
        self._frames: dict[int, tuple[bytes, ...]] = {}
        self._known = -1
        self.checksums: dict[int, int] = {}
        self._host_sums: dict[int, int] = {}
        self._desynced: set[int] = set()
        self._out: list[Outgoing] = []
        self._stats = SyncStats()
        self.rejected = 0

    def tick(self, now: float, local_input: bytes) -> None:
        """Step one frame (two when behind) of confirmed inputs, or stall; ack to the host."""
        del now, local_input
        steps = 2 if self._known - self._frame >= self._catch_up else 1
        stepped = 0
        while stepped < steps and self._frame <= self._known:
            frame = self._frame
            if frame % self._interval == 0:
                self._record_sum(frame, self._game.checksum(self._state))
            inputs = self._frames.pop(frame)
            self._state = self._game.step(self._state, inputs, frame)
            self._frame = frame + 1
            self._stats.frames_simulated += 1
            stepped += 1
        if not stepped:
            self._stats.stall_frames += 1
        payload = encode_spectator_ack(self._known)
        self._emit(self._host, payload)

    def receive(self, source: int, payload: bytes, now: float) -> None:
        """Take a feed from the host; anything else is counted and dropped."""
        self._stats.bytes_received += len(payload)
        packet = decode_rollback_packet(payload)
        players = self._game.players
        if not isinstance(packet, SpectatePacket) or source != self._host:
            self.rejected += 1
            return
        for offset, inputs in enumerate(packet.frames):
            frame = packet.start + offset
            if frame <= self._known:
                continue
            if frame != self._known + 1 or len(inputs) != players:
                self.rejected += 1
                break
            if frame - self._frame > self._backlog:
                break
            self._frames[frame] = inputs
            self._known = frame
        if packet.checksum_frame >= 0:
            self._record_host_sum(packet.checksum_frame, packet.checksum)

    def _record_sum(self, frame: int, checksum: int) -> None:
        self.checksums[frame] = checksum
        _keep_last(self.checksums, 4096)
        theirs = self._host_sums.pop(frame, None)
        if theirs is not None and theirs != checksum:
            self._desync(frame)

    def _record_host_sum(self, frame: int, checksum: int) -> None:
        mine = self.checksums.get(frame)
        if mine is not None:
            if mine != checksum:
                self._desync(frame)
            return
        if frame >= self._frame:
            self._host_sums[frame] = checksum
            _keep_last(self._host_sums, REMOTE_SUMS_KEPT)

    def _desync(self, frame: int) -> None:
        if frame not in self._desynced:
            self._desynced.add(frame)
            self._stats.desyncs.append(frame)


def make_rollback_peer(
    game: DeterministicGame[S],
    *,
    peer: int,
    peers: int,
    rng: random.Random | None = None,
    **knobs: Any,
) -> RollbackPeer[S] | RollbackSpectator[S]:
    """A ``RollbackPeer`` for a player number, a ``RollbackSpectator`` for a higher one.

    ``knobs`` go to the class (``frame_period``, ``input_delay``, ``max_prediction``, ...); the
    spectator ignores the players' knobs it has no use for.
    """
    if peer < game.players:
        return RollbackPeer(game, peer=peer, peers=peers, rng=rng, **knobs)
    wanted = {"frame_period", "spectator_host", "checksum_interval", "catch_up", "backlog"}
    chosen = {k: v for k, v in knobs.items() if k in wanted}
    return RollbackSpectator(game, peer=peer, peers=peers, rng=rng, **chosen)
