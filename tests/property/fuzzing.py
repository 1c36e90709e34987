"""Shared pieces of the decoder fuzz tests: the example budget, the settings and byte mutators.

DESIGN.md "Bad input": any byte sequence fed to a decoder is decoded or rejected with the
decoder's documented error. Random bytes rarely get past a decoder's first check, so every fuzz
test also feeds *mutated valid encodings*: a valid message with bits flipped, bytes overwritten,
inserted, deleted or duplicated, or the tail cut off or extended.

The budget is ``FUZZ_EXAMPLES`` examples per test (300 in CI); set the environment variable
``LAGLESS_FUZZ_EXAMPLES`` to run a long campaign, e.g.
``LAGLESS_FUZZ_EXAMPLES=100000 .venv/bin/python -m pytest tests/property -k fuzz``. Examples are
derandomized, so a run is deterministic.
"""

from __future__ import annotations

import os
from typing import Final

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

__all__ = ["FUZZ", "FUZZ_EXAMPLES", "fuzz_bytes", "mutated", "scaled"]

FUZZ_EXAMPLES: Final = int(os.environ.get("LAGLESS_FUZZ_EXAMPLES", "300"))
MAX_RANDOM_BYTES: Final = 1400  # bytes of pure random input: a little over one UDP payload


def scaled(fraction: float) -> settings:
    """Fuzz settings with ``fraction`` of the budget (for tests whose examples are slow).

    Args:
        fraction: Share of ``FUZZ_EXAMPLES`` to run, > 0; at least 10 examples run.

    Returns:
        Deterministic settings with no deadline and no example database.
    """
    return settings(
        max_examples=max(10, int(FUZZ_EXAMPLES * fraction)),
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )


FUZZ: Final = scaled(1.0)


@st.composite
def _mutate(draw: st.DrawFn, valid: st.SearchStrategy[bytes]) -> bytes:
    data = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(("flip", "set", "insert", "delete", "truncate", "extend", "dup")))
        at = draw(st.integers(0, len(data)))
        if op == "flip" and data:
            index = min(at, len(data) - 1)
            data[index] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and data:
            index = min(at, len(data) - 1)
            data[index] = (
                draw(st.sampled_from((0x00, 0x01, 0x7F, 0x80, 0xC1, 0xFF)))
                if draw(st.booleans())
                else draw(st.integers(0, 255))
            )
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 8))]
        elif op == "truncate":
            del data[at:]
        elif op == "extend":
            data += draw(st.binary(min_size=1, max_size=32))
        elif op == "dup":
            data[at:at] = data[at : at + draw(st.integers(1, 16))]
    return bytes(data)


def mutated(valid: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Valid encodings with one to four mutations each.

    Args:
        valid: Strategy of valid encodings.

    Returns:
        A strategy of bytes that are mostly one step away from valid.
    """
    return _mutate(valid)


def fuzz_bytes(
    valid: st.SearchStrategy[bytes], *, max_size: int = MAX_RANDOM_BYTES
) -> st.SearchStrategy[bytes]:
    """Random bytes, valid encodings and mutated valid encodings.

    Args:
        valid: Strategy of valid encodings.
        max_size: Longest random input in bytes.

    Returns:
        A strategy that draws mutated encodings most often.
    """
    return st.one_of(st.binary(max_size=max_size), valid, mutated(valid), mutated(valid))
