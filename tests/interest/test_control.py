"""VFC control messages (spec 001 §3.8, §3.10)."""

from __future__ import annotations

import contextlib
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.interest.control import (
    AddObject,
    ChangeClientId,
    ClientIdChanged,
    DelObject,
    Join,
    Kick,
    Leave,
    ObjectDeleted,
    ObjectRejected,
    SetView,
    Welcome,
    decode_control,
    encode_control,
    message_to_view,
    view_to_message,
)
from lagless.interest.view import example_view, normal_view, zoom_view
from lagless.wire import DecodeError

MESSAGES = [
    Join(),
    Welcome(client_id=3, encoding="records"),
    AddObject(record=bytes(range(24))),
    DelObject(object_id=9),
    ChangeClientId(client_id=4),
    ClientIdChanged(client_id=4, accepted=True),
    Leave(),
    Kick(reason="cheating"),
    ObjectRejected(object_id=1, reason="id taken"),
    ObjectDeleted(object_id=2),
]


@pytest.mark.parametrize("message", MESSAGES, ids=lambda m: type(m).__name__)
def test_round_trip_every_message(message: object) -> None:
    assert decode_control(encode_control(message)) == message  # type: ignore[arg-type]


@pytest.mark.parametrize("make", [normal_view, zoom_view, example_view])
def test_view_round_trip(make: object) -> None:
    view = make(0.125)  # type: ignore[operator]
    message = view_to_message(view, pivots=[7, 8])
    back = decode_control(encode_control(message))
    assert isinstance(back, SetView)
    assert back.pivots == [7, 8]
    rebuilt = message_to_view(back)
    assert rebuilt == view
    assert math.isinf(rebuilt.radii[-1])
    assert len(encode_control(message)) < 1109  # the thesis's remoting SetPhi (spec 001 §5.7)


def test_rejects_huge_or_invalid_view() -> None:
    huge = SetView(radii=[1.0] * 10, fov=[1.0] * 10, kappa=[[0.0, 0.0, 0.0]] * 100, pivots=[])
    with pytest.raises(DecodeError):
        decode_control(encode_control(huge))
    bad = SetView(radii=[1.0], fov=[6.283185307179586], kappa=[[0.0, 0.0, 0.0]], pivots=[])
    with pytest.raises(DecodeError):
        message_to_view(bad)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_garbage_raises_decode_error_only(data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode_control(data)
