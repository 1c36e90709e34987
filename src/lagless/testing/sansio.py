"""``check_sans_io``: the conformance checker every ``SansIO`` object passes (STYLE §6.2).

Modelled on trio's ``check_one_way_stream``. It checks that garbage never raises, that
``datagrams_to_send`` is idempotent when nothing changed, that ``next_timer`` never goes backwards
without an input, that an early ``handle_timer`` is harmless and that ``next_event`` drains.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Final

from lagless._types import Address, SansIO
from lagless.errors import LaglessError

GARBAGE_SAMPLES: Final = 300  # datagrams of random bytes fed per check
MAX_GARBAGE_LEN: Final = 1400  # bytes; a little over a UDP payload budget
MAX_EVENTS: Final = 10_000  # next_event() must return None within this many calls


class SansIOViolation(LaglessError, AssertionError):
    """A protocol object broke the sans-I/O contract; the message says which rule."""


def _drain_events(obj: SansIO) -> int:
    for count in range(MAX_EVENTS):
        if obj.next_event() is None:
            return count
    raise SansIOViolation(f"next_event() still returned events after {MAX_EVENTS} calls")


def check_sans_io(
    factory: Callable[[float], SansIO],
    *,
    rng: random.Random,
    start: float = 1_000.0,
    peer: Address = ("192.0.2.1", 40000),
) -> None:
    """Run the conformance checks on fresh objects made by ``factory(now)``.

    Args:
        factory: builds a new protocol object at time ``now`` (seconds).
        rng: source of the garbage bytes.
        start: the time (s) at which the objects are made; non-zero on purpose.
        peer: the address garbage claims to come from.

    Raises:
        SansIOViolation: naming the first rule broken.
    """
    now = start
    obj = factory(now)
    _drain_events(obj)
    obj.datagrams_to_send(now)
    if obj.datagrams_to_send(now):
        raise SansIOViolation("datagrams_to_send(now) returned data twice with no input between")

    timer = obj.next_timer()
    if obj.next_timer() != timer:
        raise SansIOViolation("next_timer() changed with no input")
    if timer is not None:
        early = min(timer, now) - 1e-3 if timer > now else now
        obj.handle_timer(early)
        later = obj.next_timer()
        if later is not None and later < timer - 1e-9:
            raise SansIOViolation("next_timer() moved backwards after an early handle_timer()")

    for _ in range(GARBAGE_SAMPLES):
        size = rng.randrange(0, MAX_GARBAGE_LEN)
        data = rng.randbytes(size)
        try:
            obj.receive_datagram(data, peer, now)
            obj.datagrams_to_send(now)
            _drain_events(obj)
        except SansIOViolation:
            raise
        except Exception as exc:
            raise SansIOViolation(
                f"receive_datagram raised {type(exc).__name__} on {size} garbage bytes: {exc}"
            ) from exc
        now += 0.001
