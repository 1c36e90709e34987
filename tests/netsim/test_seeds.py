from __future__ import annotations

import random
import zlib

import numpy as np
import pytest

from lagless.errors import ConfigError
from lagless.netsim import random_stream, stream


def test_stream_is_pinned() -> None:
    expected = np.random.Generator(
        np.random.PCG64(np.random.SeedSequence(42, spawn_key=(zlib.crc32(b"netsim.link.a->b"),)))
    )
    assert np.array_equal(stream(42, "netsim.link.a->b").random(64), expected.random(64))


def test_stream_depends_only_on_root_and_name() -> None:
    first = [stream(7, name).random(8) for name in ("x", "y", "z")]
    shuffled = {name: stream(7, name).random(8) for name in ("z", "x", "y")}
    for name, draws in zip(("x", "y", "z"), first, strict=True):
        assert np.array_equal(draws, shuffled[name])
    assert not np.array_equal(first[0], first[1])
    assert not np.array_equal(stream(7, "x").random(8), stream(8, "x").random(8))


def test_random_stream_matches_numpy_state() -> None:
    words = np.random.SeedSequence(3, spawn_key=(zlib.crc32(b"lab.bots"),)).generate_state(
        2, dtype=np.uint32
    )
    expected = random.Random(int(words[0]) | (int(words[1]) << 32))
    got = random_stream(3, "lab.bots")
    assert [got.random() for _ in range(5)] == [expected.random() for _ in range(5)]
    assert random_stream(3, "lab.bots").random() != random_stream(3, "lab.other").random()


@pytest.mark.parametrize(("root", "name"), [(-1, "a"), (1.5, "a"), (True, "a"), (1, "")])
def test_bad_seed_or_name_raises(root: object, name: str) -> None:
    with pytest.raises(ConfigError):
        stream(root, name)  # type: ignore[arg-type]
