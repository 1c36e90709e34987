"""Rollback benchmark: an 8-frame rollback of a 1000-entity numpy arena, re-simulation included.

Issue 15 goal: at most 2 ms, so a rollback at 60 Hz costs at most an eighth of a 16.7 ms frame.

What is timed (wall clock, ``time.perf_counter``): one ``RollbackPeer.tick`` of player 0 of a
two-player ``Arena(entities=1000)`` right after the remote input of the 8 frames it predicted
arrived and contradicted every prediction. That tick loads the state saved 8 frames ago,
re-simulates the 8 frames (saving each, as the next rollback may need them), steps the new
frame and encodes its datagram: the whole cost a player pays, slightly more than the rollback
alone. Beside it: the same tick without a misprediction (one frame), and two competitors, the
same peer on the same game saving its states the generic Python ways, with ``copy.deepcopy``
and as ``pickle`` bytes (the analogue of GGPO's C API, which saves a state as a byte buffer),
with the ratios. The goal itself is the main yardstick (``goal_headroom`` = goal / median), and
the median of a bare ``Arena.step`` shows how much of the rollback is the game's own work
(``rollback_overhead_ms`` = the rollback tick minus 9 steps).

Run: ``python benchmarks/sync.py [--quick] [--repeats N] [--json]`` or ``lagless bench sync``.
Import: ``run(...) -> dict``. Timings on a shared machine are noisy: the median of ``repeats``
rollbacks is the headline, the best and the 95th percentile are printed beside it.
"""

from __future__ import annotations

import argparse
import copy
import json
import pickle
import time
from typing import Any, Final

import numpy as np

from lagless.sync.arena import Arena, ArenaState, ScriptedInputs
from lagless.sync.rollback import RollbackPeer

GOAL_MS: Final = 2.0  # issue 15
DEPTH: Final = 8
ENTITIES: Final = 1000
FRAME_MS: Final = 1000.0 / 60.0


class DeepCopyArena(Arena):
    """The competitor: the same game, saving and loading with ``copy.deepcopy``."""

    def save(self, state: ArenaState) -> ArenaState:
        """A deep copy made by the standard library."""
        return copy.deepcopy(state)

    def load(self, saved: ArenaState) -> ArenaState:
        """A deep copy made by the standard library."""
        return copy.deepcopy(saved)


class PickleArena(Arena):
    """The second competitor: states saved as ``pickle`` bytes and loaded back from them."""

    def save(self, state: ArenaState) -> ArenaState:
        """The state as bytes (typed as a state: the peer only hands it back to ``load``)."""
        saved: ArenaState = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)  # type: ignore[assignment]
        return saved

    def load(self, saved: ArenaState) -> ArenaState:
        """The state unpickled from the saved bytes."""
        state: ArenaState = pickle.loads(saved)  # type: ignore[arg-type]
        return state


def _one_rollback(game: Arena, seed: int, warmup: int = 30) -> tuple[float, float]:
    """Seconds of a tick with an 8-frame rollback and of the predicted tick before it."""
    period = 1.0 / 60.0
    a = RollbackPeer(game, peer=0, peers=2, input_delay=0, max_prediction=DEPTH)
    b = RollbackPeer(game, peer=1, peers=2, input_delay=0, max_prediction=DEPTH)
    bots = [ScriptedInputs(p, seed) for p in range(2)]
    now = 0.0
    for frame in range(warmup):
        now = frame * period
        a.tick(now, bots[0].at_frame(frame))
        b.tick(now, bots[1].at_frame(frame))
        for out in a.outgoing():
            b.receive(0, out.payload, now)
        for out in b.outgoing():
            a.receive(1, out.payload, now)
    # b's last input was neutral or not: flip it so all 8 of a's predictions are wrong
    last = bots[1].at_frame(warmup - 1)[0]
    surprise = bytes(((last ^ 0x0F) & 0x1F,))
    held: list[bytes] = []
    plain = 0.0
    for frame in range(warmup, warmup + DEPTH):
        now = frame * period
        b.tick(now, surprise)
        held.extend(out.payload for out in b.outgoing())
        start = time.perf_counter()
        a.tick(now, bots[0].at_frame(frame))
        plain = time.perf_counter() - start
        a.outgoing()
    for payload in held:
        a.receive(1, payload, now)
    now += period
    start = time.perf_counter()
    a.tick(now, bots[0].at_frame(warmup + DEPTH))
    rolled = time.perf_counter() - start
    if a.stats.rollback_depths[-1:] != [DEPTH] or a.stats.stall_frames:
        raise RuntimeError(f"expected one {DEPTH}-frame rollback, got {a.stats.rollback_depths}")
    return rolled, plain


def _step_seconds(game: Arena, seed: int, frames: int = 200) -> float:
    """Median seconds of one bare ``game.step`` (what each re-simulated frame costs at least)."""
    bots = [ScriptedInputs(p, seed) for p in range(game.players)]
    state = game.initial_state()
    times = []
    for frame in range(frames):
        inputs = [bot.at_frame(frame) for bot in bots]
        start = time.perf_counter()
        state = game.step(state, inputs, frame)
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def run(repeats: int = 200, competitor_repeats: int = 40, seed: int = 1) -> dict[str, Any]:
    """Time ``repeats`` rollbacks (``competitor_repeats`` per competitor); the numbers in ms."""
    game = Arena(2, entities=ENTITIES, seed=seed)
    rolled, plain = zip(*(_one_rollback(game, seed + r) for r in range(repeats)), strict=True)
    deep_game = DeepCopyArena(2, entities=ENTITIES, seed=seed)
    deep = [_one_rollback(deep_game, seed + r)[0] for r in range(competitor_repeats)]
    pickle_game = PickleArena(2, entities=ENTITIES, seed=seed)
    pickled = [_one_rollback(pickle_game, seed + r)[0] for r in range(competitor_repeats)]
    ms = np.array(rolled) * 1000.0
    median = float(np.median(ms))
    step_ms = _step_seconds(game, seed) * 1000.0
    deep_median = float(np.median(deep)) * 1000.0
    pickle_median = float(np.median(pickled)) * 1000.0
    return {
        "entities": ENTITIES,
        "depth_frames": DEPTH,
        "repeats": repeats,
        "rollback_8_frames_ms": round(median, 4),
        "rollback_8_frames_ms_best": round(float(ms.min()), 4),
        "rollback_8_frames_ms_p95": round(float(np.percentile(ms, 95)), 4),
        "tick_without_rollback_ms": round(float(np.median(plain)) * 1000.0, 4),
        "game_step_ms": round(step_ms, 4),
        "rollback_overhead_ms": round(median - (DEPTH + 1) * step_ms, 4),
        "deepcopy_rollback_8_frames_ms": round(deep_median, 4),
        "ratio_vs_deepcopy": round(deep_median / median, 2),
        "pickle_rollback_8_frames_ms": round(pickle_median, 4),
        "ratio_vs_pickle": round(pickle_median / median, 2),
        "goal_ms": GOAL_MS,
        "goal_headroom": round(GOAL_MS / median, 2),
        "meets_goal": median <= GOAL_MS,
        "share_of_60hz_frame": round(median / FRAME_MS, 4),
    }


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(prog="lagless bench sync", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 repeats instead of 200")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    repeats = args.repeats or (30 if args.quick else 200)
    result = run(repeats, max(5, repeats // 5), args.seed)
    if args.json:
        print(json.dumps(result))
        return
    verdict = "meets" if result["meets_goal"] else "MISSES"
    print(
        f"{DEPTH}-frame rollback, {ENTITIES} entities, re-simulation included: "
        f"{result['rollback_8_frames_ms']:.3f} ms median (goal <= {GOAL_MS:.1f} ms: {verdict}, "
        f"{result['goal_headroom']:.1f}x headroom; "
        f"best {result['rollback_8_frames_ms_best']:.3f}, "
        f"p95 {result['rollback_8_frames_ms_p95']:.3f}; "
        f"{100 * result['share_of_60hz_frame']:.1f} % of a 60 Hz frame)"
    )
    print(f"tick without rollback:         {result['tick_without_rollback_ms']:.3f} ms median")
    print(
        f"of the rollback tick, {DEPTH + 1} game steps take {DEPTH + 1} x "
        f"{result['game_step_ms']:.3f} ms; saves, loads, bookkeeping and the datagram "
        f"{result['rollback_overhead_ms']:.3f} ms"
    )
    for name, key in (("deepcopy", "deepcopy"), ("pickle", "pickle")):
        print(
            f"{name} save/load competitor: {result[f'{key}_rollback_8_frames_ms']:.3f} ms median "
            f"(x{result[f'ratio_vs_{key}']:.2f} of ours)"
        )
    print("wall-clock medians on this machine; other load makes the p95 noisy")


if __name__ == "__main__":
    main()
