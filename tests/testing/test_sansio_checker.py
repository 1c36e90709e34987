"""The conformance checker catches each broken rule and passes a well-behaved object."""

from __future__ import annotations

import random

import pytest

from lagless._types import Address
from lagless.testing import FakeClock, SansIOViolation, check_sans_io


class Echo:
    """A minimal well-behaved sans-I/O object: echoes datagrams that start with b'E'."""

    def __init__(self, now: float) -> None:
        self.out: list[tuple[bytes, Address]] = []
        self.events: list[bytes] = []
        self.deadline = now + 1.0

    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        if data[:1] == b"E":
            self.out.append((data, addr))
            self.events.append(data)

    def handle_timer(self, now: float) -> None:
        if now >= self.deadline:
            self.deadline = now + 1.0

    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        out, self.out = self.out, []
        return out

    def next_timer(self) -> float | None:
        return self.deadline

    def next_event(self) -> object | None:
        return self.events.pop(0) if self.events else None


class Raises(Echo):
    def receive_datagram(self, data: bytes, addr: Address, now: float) -> None:
        if len(data) > 3:
            raise IndexError("boom")


class Repeats(Echo):
    def datagrams_to_send(self, now: float) -> list[tuple[bytes, Address]]:
        return [(b"again", ("192.0.2.9", 1))]


class EndlessEvents(Echo):
    def next_event(self) -> object | None:
        return b"x"


class RewindsTimer(Echo):
    def handle_timer(self, now: float) -> None:
        self.deadline = now - 5.0


def test_well_behaved_object_passes() -> None:
    check_sans_io(Echo, rng=random.Random(0))


@pytest.mark.parametrize(
    ("cls", "rule"),
    [
        (Raises, "raised IndexError"),
        (Repeats, "twice"),
        (EndlessEvents, "still returned events"),
        (RewindsTimer, "backwards"),
    ],
)
def test_each_broken_rule_is_reported(cls: type[Echo], rule: str) -> None:
    with pytest.raises(SansIOViolation, match=rule):
        check_sans_io(cls, rng=random.Random(0))


def test_fake_clock_moves_only_forward() -> None:
    clock = FakeClock()
    assert clock() == clock.now == 1000.0
    assert clock.jump(0.25) == 1000.25
    with pytest.raises(ValueError, match="seconds must be >= 0"):
        clock.jump(-1)
