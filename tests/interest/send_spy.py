"""Put a function in front of a VFC object's transport ``send`` in tests.

A compiled transport `Client` takes no new attribute, so its ``send`` cannot be replaced on the
instance (docs/compiled.md); the VFC object's ``transport`` attribute is replaced instead by a
stand-in that calls ``send`` and hands everything else to the real client.
"""

from __future__ import annotations

from collections.abc import Callable

from lagless.interest.client import VfcClient

Send = Callable[[int, bytes], "int | None"]


class _SendSpy:
    def __init__(self, inner: object, send: Send) -> None:
        self._inner = inner
        self.send = send

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)


def spy_on_send(vfc: VfcClient, make: Callable[[Send], Send]) -> Callable[[], None]:
    """Route ``vfc.transport.send`` through ``make(original_send)``; return the undo."""
    transport = vfc.transport
    vfc.transport = _SendSpy(transport, make(transport.send))  # type: ignore[assignment]

    def undo() -> None:
        vfc.transport = transport

    return undo
