"""``check_determinism``: run a lab experiment twice from one seed and compare the bytes.

Implements STYLE §5 "Lab": ``lagless.testing.check_determinism(id)`` runs ``--quick`` twice with one
seed and compares ``results.json`` byte for byte, as Gymnasium's environment checks and netcode's
``test_network_simulator_determinism`` do. Users run it on their own registered experiments.

Decisions:
    * Besides ``results.json`` it compares every other file the lab wrote (``report.md``, CSV and
      PNG), except ``timings.json``, which holds wall-clock times by design
      (``tests/lab/test_determinism.py::test_check_determinism_catches_a_seeded_leak``).
    * The two runs write into ``tmp_dir/run-a`` and ``tmp_dir/run-b``; the error names the first
      differing file and, for text, the first differing line.
"""

from __future__ import annotations

from pathlib import Path

from lagless.errors import LaglessError
from lagless.lab import output_files, plots_available, run
from lagless.lab.registry import ExperimentSpec

__all__ = ["DeterminismViolation", "check_determinism"]


class DeterminismViolation(LaglessError, AssertionError):
    """Two runs of one experiment from one seed wrote different bytes; the message says where."""


def _first_difference(a: bytes, b: bytes) -> str:
    try:
        lines_a, lines_b = a.decode("utf-8").splitlines(), b.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return f"binary files differ ({len(a)} vs {len(b)} bytes)"
    for number, (left, right) in enumerate(zip(lines_a, lines_b, strict=False), start=1):
        if left != right:
            return f"line {number}: {left!r} != {right!r}"
    return f"one file is longer ({len(lines_a)} vs {len(lines_b)} lines)"


def check_determinism(experiment_id: str | ExperimentSpec, *, seed: int = 0, tmp_dir: Path) -> None:
    """Run ``experiment_id`` with ``--quick`` twice from ``seed``; fail if any output byte differs.

    Args:
        experiment_id: A registered id, or a spec (registered or not).
        seed: The root seed of both runs.
        tmp_dir: A scratch directory; the runs write into ``run-a`` and ``run-b`` under it.

    Raises:
        DeterminismViolation: naming the first file (``results.json`` first) that differs.
        ConfigError: the id is unknown.
    """
    first_dir, second_dir = tmp_dir / "run-a", tmp_dir / "run-b"
    first = run(experiment_id, seed=seed, quick=True, out=first_dir)
    run(experiment_id, seed=seed, quick=True, out=second_dir)
    for path in output_files(first, first_dir, plots=plots_available()):
        relative = path.relative_to(first_dir)
        other = second_dir / relative
        left = path.read_bytes()
        right = other.read_bytes() if other.is_file() else b""
        if left != right:
            raise DeterminismViolation(
                f"{first.experiment} with seed {seed}: {relative} differs between two runs; "
                f"{_first_difference(left, right)}"
            )
