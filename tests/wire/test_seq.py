"""Wrapping sequence arithmetic (spec 004 §4.2) at 16 bits and other widths."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import LocalProtocolError
from lagless.wire import seq_add, seq_diff, seq_greater, seq_less


@st.composite
def width_and_values(draw: st.DrawFn) -> tuple[int, int, int]:
    bits = draw(st.integers(1, 64))
    top = (1 << bits) - 1
    return bits, draw(st.integers(0, top)), draw(st.integers(0, top))


def test_wrap_at_16_bits() -> None:
    assert seq_greater(0, 65535)
    assert seq_greater(5, 65530)
    assert not seq_greater(65530, 5)
    assert seq_less(65530, 5)
    assert seq_diff(5, 65530) == 11
    assert seq_diff(65530, 5) == -11
    assert seq_add(65535, 1) == 0
    assert seq_add(65530, 11) == 5
    assert seq_add(3, -5) == 65534


def test_other_widths() -> None:
    # spec 004 §4.4.2: 11-bit sequence numbers wrap mod 2048.
    assert seq_greater(0, 2047, bits=11)
    assert seq_diff(1, 2046, bits=11) == 3
    assert seq_add(2047, 1, bits=11) == 0
    assert seq_greater(1, 0, bits=1)
    assert seq_diff(0, 2**64 - 1, bits=64) == 1
    assert seq_add(2**32 - 1, 2, bits=32) == 1


def test_half_way_point() -> None:
    # Exactly half-way: the distance is +2^(bits-1) both ways, so both compare greater.
    assert seq_diff(0, 32768) == 32768
    assert seq_diff(32768, 0) == 32768
    assert seq_greater(0, 32768)
    assert seq_greater(32768, 0)
    assert seq_diff(0, 1, bits=1) == 1


def test_inputs_reduced() -> None:
    assert seq_diff(-1, 0) == -1
    assert seq_add(-1, 0) == 65535
    assert seq_diff(65536 + 3, 1) == 2


@pytest.mark.parametrize("bits", [0, 65, -1])
def test_bad_width_rejected(bits: int) -> None:
    with pytest.raises(LocalProtocolError, match="bits"):
        seq_diff(0, 0, bits)
    with pytest.raises(LocalProtocolError, match="bits"):
        seq_add(0, 0, bits)


@given(width_and_values(), st.integers(-(2**70), 2**70))
def test_properties(wv: tuple[int, int, int], n: int) -> None:
    bits, a, b = wv
    half = 1 << (bits - 1)
    d = seq_diff(a, b, bits)
    assert -half < d <= half
    assert seq_add(b, d, bits) == a
    assert seq_greater(a, b, bits) == (d > 0)
    assert seq_less(a, b, bits) == seq_greater(b, a, bits)
    if a != b and d != half:
        assert seq_greater(a, b, bits) != seq_greater(b, a, bits)
    s = seq_add(a, n, bits)
    assert 0 <= s < 2 * half
    assert (s - a - n) % (2 * half) == 0


@given(st.integers(0, 65535), st.integers(1, 32767))
def test_small_steps_forward_are_greater(a: int, step: int) -> None:
    assert seq_greater(seq_add(a, step), a)
    assert seq_diff(seq_add(a, step), a) == step
