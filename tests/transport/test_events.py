"""The reliability layer's events: typed immutable tuples that behave as value objects."""

from __future__ import annotations

import pickle

import pytest

from lagless.errors import LocalProtocolError
from lagless.transport import MessageDelivered, MessageReceived, TransportEvent
from lagless.transport.events import PacketDelivered, PacketLost


def test_fields_by_position_or_name_and_by_attribute() -> None:
    by_position = MessageReceived(3, 17, 0, 42, b"hi")
    by_name = MessageReceived(
        client_index=3, connection_id=17, channel=0, message_id=42, payload=b"hi"
    )
    assert by_position == by_name
    assert (by_name.client_index, by_name.connection_id) == (3, 17)
    assert (by_name.channel, by_name.message_id, by_name.payload) == (0, 42, b"hi")
    assert isinstance(by_name, TransportEvent)
    assert repr(MessageDelivered(0, 1, 0, 7)) == (
        "MessageDelivered(client_index=0, connection_id=1, channel=0, message_id=7)"
    )


def test_equal_only_to_the_same_class_with_the_same_fields() -> None:
    assert PacketDelivered(0, 1, 5) != PacketLost(0, 1, 5)  # same fields, other event
    assert PacketDelivered(0, 1, 5) != (0, 1, 5)  # not a plain tuple either
    assert PacketDelivered(0, 1, 5) == PacketDelivered(0, 1, 5)
    assert len({PacketDelivered(0, 1, 5), PacketDelivered(0, 1, 5), PacketLost(0, 1, 5)}) == 2
    event = MessageReceived(0, 1, 2, 3, b"x")
    assert pickle.loads(pickle.dumps(event)) == event
    with pytest.raises(AttributeError):
        event.payload = b"y"  # type: ignore[misc]


def test_match_by_keyword_and_by_position() -> None:
    event: object = MessageReceived(0, 1, 2, 3, b"x")
    match event:
        case MessageDelivered():
            pytest.fail("a MessageReceived is not a MessageDelivered")
        case MessageReceived(channel=2, payload=payload):
            assert payload == b"x"
        case _:
            pytest.fail("keyword pattern")
    match event:
        case MessageReceived(_, _, channel, _, payload):
            assert (channel, payload) == (2, b"x")
        case _:
            pytest.fail("positional pattern")


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((0, 1, 2, 3, b"x", 9), {}, "takes 5 fields"),
        ((0, 1, 2), {}, "needs field 'message_id'"),
        ((0, 1, 2, 3), {"payload": b"", "extra": 1}, "no field"),
        ((0, 1, 2, 3, b"x"), {"payload": b"y"}, "twice"),
    ],
)
def test_bad_fields_are_refused_with_a_clear_error(
    args: tuple[object, ...], kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(LocalProtocolError, match=message):
        MessageReceived(*args, **kwargs)
