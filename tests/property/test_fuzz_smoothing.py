"""Fuzz the display-model payload codec (DESIGN.md "Bad input").

``UpdateLayout.decode`` (every field combination) and ``decode_init`` raise only ``DecodeError``;
``peek_entity_id`` never raises. The receivers that call them are fuzzed in
``tests/smoothing/test_receivers.py::test_garbage_never_raises``.
"""

from __future__ import annotations

import contextlib
import itertools

from hypothesis import given
from hypothesis import strategies as st

from lagless.smoothing.codec import (
    ModelCode,
    UpdateLayout,
    decode_init,
    encode_init,
    peek_entity_id,
)
from lagless.smoothing.state import KinematicState
from lagless.wire import DecodeError
from tests.property.fuzzing import FUZZ, fuzz_bytes

LAYOUTS = [
    UpdateLayout(velocity=v, acceleration=a, angular_velocity=w, timestamp=t)
    for v, a, w, t in itertools.product((False, True), repeat=4)
]
metres = st.floats(-1000.0, 1000.0)
states = st.builds(
    KinematicState,
    t=st.floats(0.0, 1e6),
    x=metres,
    y=metres,
    vx=metres,
    vy=metres,
    ax=metres,
    ay=metres,
    heading=st.floats(-10.0, 10.0),
    angular_velocity=st.floats(-100.0, 100.0),
)
entity_ids = st.integers(0, 255)


@FUZZ
@given(
    st.sampled_from(LAYOUTS).flatmap(
        lambda layout: st.tuples(
            st.just(layout),
            fuzz_bytes(st.builds(layout.encode, entity_ids, states), max_size=64),
        )
    )
)
def test_update_decode_raises_decode_error_only(case: tuple[UpdateLayout, bytes]) -> None:
    layout, data = case
    assert peek_entity_id(data) == (data[0] if data else None)
    with contextlib.suppress(DecodeError):
        assert layout.decode(data).entity_id == data[0]


init_payloads = st.builds(
    encode_init, entity_ids, st.sampled_from(ModelCode), states, time_compensation=st.booleans()
)


@FUZZ
@given(fuzz_bytes(init_payloads, max_size=64))
def test_decode_init_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        assert decode_init(data).entity_id == data[0]
