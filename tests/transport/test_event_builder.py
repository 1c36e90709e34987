"""The C event builder of a compiled build (``lagless.transport._events``) against Python.

`Connection` builds its `MessageReceived` and `MessageDelivered` events with it where it is built
(`connection.BUILD_EVENTS`), else with ``tuple.__new__``; both must give the same events. Under
an editable install the module is not built, so the fixture compiles ``_events.c`` itself.
"""

from __future__ import annotations

import gc
import sys
from collections import deque
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.transport import compiled, connection
from lagless.transport.events import MessageDelivered, MessageReceived, TransportEvent
from tests.transport.c_extension import SOURCES, build_extension


@pytest.fixture(scope="module")
def events(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The installed ``lagless.transport._events`` of a compiled build, or one built from source."""
    try:
        from lagless.transport import _events
    except ImportError:
        return build_extension(tmp_path_factory.mktemp("events"), "_events", SOURCES / "_events.c")
    return _events


def _python(
    kind: type, head: tuple[object, ...], entries: list[tuple[object, ...]]
) -> list[object]:
    return [tuple.__new__(kind, head + entry) for entry in entries]


ENTRIES = st.lists(
    st.tuples(st.integers(0, 7), st.integers(0, 0xFFFF), st.binary(max_size=40)), max_size=20
)


@given(entries=ENTRIES, client_index=st.integers(0, 255), connection_id=st.integers(1, 2**40))
@settings(max_examples=60, deadline=None)
def test_the_same_events_as_tuple_new(
    events: ModuleType,
    entries: list[tuple[int, int, bytes]],
    client_index: int,
    connection_id: int,
) -> None:
    head = (client_index, connection_id)
    built = events.build(MessageReceived, head, entries)
    expected = _python(MessageReceived, head, list(entries))
    assert built == expected
    assert all(type(event) is MessageReceived for event in built)
    for event, entry in zip(built, entries, strict=True):
        assert event.client_index == client_index
        assert event.connection_id == connection_id
        assert (event.channel, event.message_id, event.payload) == entry
        assert hash(event) == hash(MessageReceived(client_index, connection_id, *entry))


def test_delivered_events_from_a_deque(events: ModuleType) -> None:
    queue = deque([(0, 1), (2, 3)])
    built = events.build(MessageDelivered, (4, 5), queue)
    assert built == [MessageDelivered(4, 5, 0, 1), MessageDelivered(4, 5, 2, 3)]
    assert list(queue) == [(0, 1), (2, 3)]  # read, not emptied (the connection clears it)


def test_no_reference_is_leaked_or_lost(events: ModuleType) -> None:
    payload = bytes(range(200))
    entries = [(0, n, payload) for n in range(50)]
    gc.collect()
    before = sys.getrefcount(payload)
    built = events.build(MessageReceived, (1, 2), entries)
    assert sys.getrefcount(payload) == before + 50  # one per event
    del built
    gc.collect()
    assert sys.getrefcount(payload) == before


@pytest.mark.parametrize(
    ("args", "text"),
    [
        ((dict, (1, 2), []), "kind must be a subclass of tuple"),
        ((MessageReceived, [1, 2], []), "head must be a tuple"),
        ((MessageReceived, (1, 2), [[0, 1, b""]]), "every entry must be a tuple"),
        ((MessageReceived, (1, 2), 5), "not iterable"),
        ((MessageReceived, (1, 2)), "takes 3 arguments"),
    ],
)
def test_wrong_arguments_raise_clearly(
    events: ModuleType, args: tuple[object, ...], text: str
) -> None:
    with pytest.raises(TypeError, match=text):
        events.build(*args)


def test_a_compiled_connection_uses_it() -> None:
    """A compiled core builds its events in C; a pure one with tuple.__new__."""
    assert (connection.BUILD_EVENTS is not None) == compiled()
    assert issubclass(MessageReceived, TransportEvent)
