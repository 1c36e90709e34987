"""Synctest: find non-determinism in a ``DeterministicGame`` on one machine, before shipping.

GGPO's synctest mode (issue 15 "Build" 1): the game runs forward as usual, but after every frame
the session loads the state it saved ``check_distance`` frames ago and re-simulates those frames
with the same inputs. Every re-simulated frame's checksum must equal the checksum the frame had
the first time; the first frame where they differ is reported. A ``step`` that reads something
outside ``state`` and ``inputs`` (a hidden counter, an unseeded random generator, the clock, the
order of a ``set``) or a ``save``/``load`` that shares memory with the working state shows up here
after a few frames, where over a network it would only show up as a rare desync.

Units: frames are integers from 0; ``divergence`` is in the game's unit (the arena: metres).

Decisions:
    * Like GGPO, the session goes on from the re-simulated state, so every frame is simulated
      ``check_distance + 1`` times (once forward, then once per later rollback that covers it)
      and every re-simulation is compared with the first checksum, not with the previous one.
    * The checksum of a loaded state is compared with the checksum taken when it was saved:
      a ``load`` that returns something else is reported on the loaded frame.
    * ``SyncTest.advance`` returns the first mismatch (and keeps returning it) rather than raising,
      so a game loop, a test and the lab can each decide what to do with it.
    * Memory is bounded: ``check_distance + 1`` saved states, inputs and checksums are kept.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from lagless.sync.contract import DeterministicGame

__all__ = ["SyncTest", "SyncTestMismatch", "SyncTestReport", "run_synctest"]

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class SyncTestMismatch:
    """The first frame whose re-simulated state differs from its first simulation.

    Attributes:
        frame: The frame whose state differs (the state after stepping ``frame - 1``).
        first_checksum: Its checksum when it was first simulated.
        resimulated_checksum: Its checksum after loading and re-simulating.
        rollback_from: The frame the re-simulation started from (the loaded state's frame).
        divergence: ``game.divergence`` between the first and the re-simulated state of ``frame``,
            in the game's unit (0 for a ``load`` mismatch).
        cause: ``"step"`` (re-simulation differs) or ``"load"`` (a loaded state differs from the
            state that was saved).
    """

    frame: int
    first_checksum: int
    resimulated_checksum: int
    rollback_from: int
    divergence: float
    cause: str


@dataclass(frozen=True, slots=True)
class SyncTestReport:
    """What ``run_synctest`` did and found.

    Attributes:
        frames: Frames advanced.
        check_distance: Frames re-simulated after each advance.
        rollbacks: Rollbacks performed.
        resimulated_frames: Steps done inside rollbacks.
        mismatch: The first mismatch, or ``None`` when every checksum agreed.
    """

    frames: int
    check_distance: int
    rollbacks: int
    resimulated_frames: int
    mismatch: SyncTestMismatch | None

    @property
    def ok(self) -> bool:
        """True when no re-simulated frame differed."""
        return self.mismatch is None


class SyncTest(Generic[S]):
    """A synctest session: call ``advance`` once per frame with every player's input.

    Args:
        game: The game to check.
        check_distance: Frames to roll back and re-simulate after every frame (GGPO's default is
            1; 2–8 exercises deeper rollbacks). At least 1.
    """

    def __init__(self, game: DeterministicGame[S], check_distance: int = 2) -> None:
        if check_distance < 1:
            raise ValueError(f"check_distance must be >= 1, got {check_distance}")
        self._game = game
        self._distance = check_distance
        self._state: S = game.initial_state()
        self._frame = 0
        self._saved: deque[tuple[int, S, int]] = deque(maxlen=check_distance + 1)
        self._inputs: deque[tuple[bytes, ...]] = deque(maxlen=check_distance)
        self._checksums: dict[int, int] = {0: game.checksum(self._state)}
        self.rollbacks = 0
        self.resimulated_frames = 0
        self.mismatch: SyncTestMismatch | None = None

    @property
    def frame(self) -> int:
        """The frame the session's current state is at."""
        return self._frame

    @property
    def state(self) -> S:
        """The current state (after the latest re-simulation)."""
        return self._state

    def advance(self, inputs: Sequence[bytes]) -> SyncTestMismatch | None:
        """Step one frame with ``inputs``, then roll back and re-simulate; the first mismatch."""
        game = self._game
        frame = self._frame
        self._saved.append((frame, game.save(self._state), self._checksums[frame]))
        frozen = tuple(inputs)
        self._inputs.append(frozen)
        self._state = game.step(self._state, frozen, frame)
        self._frame = frame + 1
        self._checksums[self._frame] = game.checksum(self._state)
        self._checksums.pop(self._frame - self._distance - 1, None)
        if self.mismatch is None and len(self._saved) > self._distance - 1:
            self.mismatch = self._rollback()
        return self.mismatch

    def _rollback(self) -> SyncTestMismatch | None:
        game = self._game
        start, saved, saved_sum = self._saved[-self._distance]
        references = {saved_frame: kept for saved_frame, kept, _ in self._saved}
        state = game.load(saved)
        self.rollbacks += 1
        loaded_sum = game.checksum(state)
        if loaded_sum != saved_sum:
            return SyncTestMismatch(start, saved_sum, loaded_sum, start, 0.0, "load")
        for offset, inputs in enumerate(list(self._inputs)[-self._distance :]):
            frame = start + offset
            state = game.step(state, inputs, frame)
            self.resimulated_frames += 1
            got = game.checksum(state)
            if got != self._checksums[frame + 1]:
                first = references.get(frame + 1, self._state)
                spread = game.divergence(first, state)
                return SyncTestMismatch(
                    frame + 1, self._checksums[frame + 1], got, start, spread, "step"
                )
        self._state = state
        return None


def run_synctest(
    game: DeterministicGame[S],
    inputs: Callable[[int], Sequence[bytes]],
    frames: int,
    check_distance: int = 2,
) -> SyncTestReport:
    """Run ``frames`` frames of synctest with ``inputs(frame)`` and report the first mismatch.

    Stops at the first mismatch. ``inputs`` returns every player's input for a frame (for
    example ``lambda f: [bot.at_frame(f) for bot in bots]`` with ``ScriptedInputs`` bots).
    """
    session = SyncTest(game, check_distance)
    for frame in range(frames):
        if session.advance(inputs(frame)) is not None:
            break
    return SyncTestReport(
        frames=session.frame,
        check_distance=check_distance,
        rollbacks=session.rollbacks,
        resimulated_frames=session.resimulated_frames,
        mismatch=session.mismatch,
    )
