"""Every receiver: garbage never raises, wrong entity/model payloads are counted and ignored."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.smoothing import (
    INIT_SIZE,
    DropReason,
    KinematicState,
    create_display_model,
    display_model_names,
)

BUILT_IN = ["dis0", "dis1", "dis2", "phb", "interpolation", "hermite", "x4"]


@pytest.mark.parametrize("name", BUILT_IN)
@given(
    data=st.lists(
        st.one_of(st.binary(max_size=64), st.binary(min_size=INIT_SIZE, max_size=INIT_SIZE)),
        max_size=8,
    ),
    times=st.floats(0, 1e6, allow_nan=False),
)
def test_garbage_never_raises(name: str, data: list[bytes], times: float) -> None:
    receiver = create_display_model(name).create_receiver()
    for k, blob in enumerate(data):
        receiver.process_update(blob, times + k, times + k)
        receiver.process_init(blob, times + k)
        receiver.display(times + k + 0.5)
    stats = receiver.statistics()
    assert stats.applied + sum(stats.dropped.values()) == 2 * len(data)


def test_init_model_mismatch() -> None:
    sender = create_display_model("dis1").create_sender()
    sender.update(0.0, KinematicState(x=1.0))
    init = sender.create_init()
    assert len(init) == INIT_SIZE
    wrong_model = create_display_model("dis2").create_receiver()
    wrong_tc = create_display_model("dis1", time_compensation=True).create_receiver()
    right = create_display_model("dis1").create_receiver()
    assert not wrong_model.process_init(init, 0.0)
    assert not wrong_tc.process_init(init, 0.0)
    assert right.process_init(init, 0.0)
    assert wrong_model.statistics().dropped[DropReason.WRONG_MODEL] == 1
    assert wrong_tc.statistics().dropped[DropReason.WRONG_MODEL] == 1
    shown = right.display(0.0)
    assert shown is not None
    assert shown.x == pytest.approx(1.0)


def test_wrong_entity_and_malformed() -> None:
    model = create_display_model("phb")
    sender, receiver = model.create_sender(entity_id=3), model.create_receiver(entity_id=4)
    update = sender.update(0.0, KinematicState())
    assert update is not None
    assert not receiver.process_update(update.payload, 0.0, 0.0)
    assert not receiver.process_update(b"\x04", 0.0, 0.0)
    assert not receiver.process_init(sender.create_init(), 0.0)
    dropped = receiver.statistics().dropped
    assert dropped[DropReason.WRONG_ENTITY] == 2
    assert dropped[DropReason.MALFORMED] == 1
    assert set(BUILT_IN) <= set(display_model_names())
