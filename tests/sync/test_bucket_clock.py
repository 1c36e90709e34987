"""The session clock of bucket sync and local lag (spec 000 §2.4 Cristian over sync messages)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lagless.sync.clock import PeerClock, Ping, Pong, decode_clock_message, encode_clock_message


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_decoder_never_raises(data: bytes) -> None:
    message = decode_clock_message(data)
    if message is not None:
        assert encode_clock_message(message) == data


_times = st.floats(allow_nan=False, allow_infinity=False)


@settings(max_examples=100, deadline=None)
@given(_times, _times, st.one_of(st.none(), _times))
def test_round_trip(sent: float, responder: float, epoch: float | None) -> None:
    assert decode_clock_message(encode_clock_message(Ping(sent))) == Ping(sent)
    pong = Pong(sent, responder, epoch)
    assert decode_clock_message(encode_clock_message(pong)) == pong


def test_non_finite_times_are_rejected() -> None:
    assert decode_clock_message(encode_clock_message(Ping(math.nan))) is None
    assert decode_clock_message(encode_clock_message(Pong(0.0, math.inf, None))) is None


def _exchange(
    client: PeerClock, server: PeerClock, t_client: float, offset: float, up: float, down: float
) -> None:
    """One ping from ``client`` to ``server`` (whose clock reads ``offset`` more) and back."""
    for other, ping in client.tick(t_client):
        if other != server.peer:
            continue
        request = decode_clock_message(ping)
        assert request is not None
        reply = server.receive(client.peer, request, t_client + up + offset)
        assert reply is not None
        answer = decode_clock_message(reply)
        assert answer is not None
        client.receive(server.peer, answer, t_client + up + down)


def test_session_time_follows_peer_zero() -> None:
    reference, follower = PeerClock(0, 2, ping_interval=0.1), PeerClock(1, 2, ping_interval=0.1)
    reference.tick(500.0)  # peer 0's epoch: its first tick, at 500 s on its clock
    assert reference.session_time(500.25) == pytest.approx(0.25)
    assert follower.session_time(0.0) is None
    offset = 500.0 - 20.0  # the follower's clock reads 480 s less
    for i in range(10):
        _exchange(follower, reference, 20.0 + 0.1 * i, offset, up=0.03, down=0.03)
    assert follower.synchronised
    session = follower.session_time(21.0)
    assert session is not None
    assert session == pytest.approx(21.0 + offset - 500.0, abs=1e-6)
    assert follower.rtt(0) == pytest.approx(0.06)


def test_asymmetry_biases_by_half_the_difference() -> None:
    reference, follower = PeerClock(0, 2), PeerClock(1, 2, ping_interval=0.01)
    reference.tick(0.0)
    for i in range(20):
        _exchange(follower, reference, 1.0 + 0.01 * i, 0.0, up=0.02, down=0.08)
    assert follower.offset(2.0) == pytest.approx((0.02 - 0.08) / 2.0, abs=1e-6)


def test_rtt_is_smoothed_and_bad_pongs_are_ignored() -> None:
    clock = PeerClock(1, 3, ping_interval=1.0)
    ping = encode_clock_message(Ping(0.0))
    assert clock.tick(0.0) == [(0, ping), (2, ping)]
    assert clock.tick(0.5) == []  # the next ping is due at 1.0 s
    clock.receive(2, Pong(0.0, 0.0, None), 0.1)
    clock.receive(2, Pong(1.0, 0.0, None), 1.3)
    assert clock.rtt(2) == pytest.approx(0.1 + 0.125 * (0.3 - 0.1))
    clock.receive(2, Pong(5.0, 0.0, None), 4.0)  # from the future: ignored
    assert clock.rtt_samples == 2
    assert clock.max_rtt() == clock.rtt(2)
    assert clock.rtt(0) is None
    assert not clock.synchronised  # no pong from peer 0 carried an epoch
