"""Named random streams derived from one root seed (STYLE §5 "Randomness").

Implements the seeding rule of STYLE §5: a stream is
``np.random.SeedSequence(root, spawn_key=(zlib.crc32(name.encode()),))``, so it depends only on the
root seed and its name, never on how many other streams were made before it. Positional
``SeedSequence.spawn(n)`` would shift every later stream when a link is added.

Decisions:
    * The bit generator is PCG64 (numpy's default), pinned here so a numpy default change cannot
      silently change every trace (``test_seeds.py::test_stream_is_pinned``).
    * ``random.Random`` streams are seeded from ``generate_state(2)`` of the same sequence, as
      STYLE §5 says (``test_seeds.py::test_random_stream_matches_numpy_state``).
"""

from __future__ import annotations

import random
import zlib

import numpy as np

from lagless.errors import ConfigError


def _sequence(root_seed: int, name: str) -> np.random.SeedSequence:
    if isinstance(root_seed, bool) or not isinstance(root_seed, int) or root_seed < 0:
        raise ConfigError(f"root_seed must be a non-negative int, got {root_seed!r}")
    if not name:
        raise ConfigError("name must be a non-empty string, got ''")
    return np.random.SeedSequence(root_seed, spawn_key=(zlib.crc32(name.encode("utf-8")),))


def stream(root_seed: int, name: str) -> np.random.Generator:
    """Return the numpy generator named ``name`` under ``root_seed``.

    Args:
        root_seed: The experiment's root seed (non-negative int).
        name: A stable, dotted stream name, e.g. ``"netsim.link.client->server"``.

    Returns:
        A fresh PCG64 ``np.random.Generator``; the same arguments always give the same draws.

    Raises:
        ConfigError: ``root_seed`` is negative or not an int, or ``name`` is empty.
    """
    return np.random.Generator(np.random.PCG64(_sequence(root_seed, name)))


def random_stream(root_seed: int, name: str) -> random.Random:
    """Return a ``random.Random`` for scalar code, seeded from the named stream's sequence.

    Args:
        root_seed: The experiment's root seed (non-negative int).
        name: A stable, dotted stream name.

    Returns:
        A ``random.Random`` seeded with the 64-bit ``generate_state(2)`` of the named sequence.

    Raises:
        ConfigError: ``root_seed`` is negative or not an int, or ``name`` is empty.
    """
    words = _sequence(root_seed, name).generate_state(2, dtype=np.uint32)
    return random.Random(int(words[0]) | (int(words[1]) << 32))
