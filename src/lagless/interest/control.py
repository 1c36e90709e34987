"""VFC control messages on the reliable channel: join, objects, views, client ids, forced leave.

Implements spec 001 §3.8 / §3.10 "remote procedures" (the thesis's .NET remoting calls ``Connect``,
``Disconnect``, ``AddObject``, ``DelObject``, ``SetPhi``, ``ChangeClientID`` and the server's
forced ``Disconnect``) as typed msgspec structs in MessagePack, carried by the transport's
reliable-ordered channel 0 instead of remoting over TCP.

Ambiguity decisions, pinned in ``tests/interest/test_control.py``:

* Deletions reach the other clients as an ``ObjectDeleted`` control message (the thesis leaves
  this to game events) (``test_round_trip_every_message``).
* A view travels as radii (metres, the last ``inf``), FoV apex angles (radians) and the κ cells
  row-major as ``[θ s, σ, ν]`` with ``inf`` for a disabled bound; at most ``MAX_CELLS`` cells and
  ``MAX_PIVOTS`` pivots, so a decoder never builds a large view (``test_rejects_huge_view``).
* Acknowledgements of delta update datagrams are not control messages: they travel on
  ``ACK_CHANNEL`` (unreliable-sequenced; each repeats the last 33 datagrams, so a lost or late
  one needs no resend) in the 6-byte form of ``lagless.interest.records.write_update_ack``.
* Decoding untrusted bytes raises only ``lagless.wire.DecodeError``
  (``test_garbage_raises_decode_error_only``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeAlias

import msgspec

from lagless.errors import ConfigError
from lagless.interest.view import Kappa, View
from lagless.wire import DecodeError

__all__ = [
    "ACK_CHANNEL",
    "CONTROL_CHANNEL",
    "MAX_CELLS",
    "UPDATE_CHANNEL",
    "AddObject",
    "ChangeClientId",
    "ClientIdChanged",
    "Control",
    "DelObject",
    "Join",
    "Kick",
    "Leave",
    "ObjectDeleted",
    "ObjectRejected",
    "SetView",
    "Welcome",
    "decode_control",
    "encode_control",
    "message_to_view",
    "view_to_message",
]

CONTROL_CHANNEL: Final = 0  # transport channel: reliable-ordered
UPDATE_CHANNEL: Final = 3  # transport channel: unreliable, no retransmission (spec 001 §3.10)
ACK_CHANNEL: Final = 2  # transport channel: unreliable-sequenced, client acks of delta datagrams
MAX_CELLS: Final = 64  # κ cells a SetView may carry
MAX_PIVOTS: Final = 8  # pivots a SetView may carry
MAX_CONTROL_BYTES: Final = 4096  # bytes: larger control payloads are rejected before decoding


class Join(msgspec.Struct, tag=1, array_like=True, frozen=True):
    """Client → server: join the VFC session (``Connect``)."""

    version: int = 1
    """Protocol version."""


class Welcome(msgspec.Struct, tag=2, array_like=True, frozen=True):
    """Server → client: the join succeeded."""

    client_id: int
    """The client id the server assigned."""
    encoding: str
    """Update encoding: ``records`` (thesis) or ``delta``."""


class AddObject(msgspec.Struct, tag=3, array_like=True, frozen=True):
    """Client → server: register a shared object owned by the sender (``AddObject``)."""

    record: bytes
    """The object's 24-byte record (its id inside)."""


class DelObject(msgspec.Struct, tag=4, array_like=True, frozen=True):
    """Client → server: delete an object the sender owns (``DelObject``)."""

    object_id: int
    """The object id."""


class SetView(msgspec.Struct, tag=5, array_like=True, frozen=True):
    """Client → server: replace the sender's view and pivots (``SetPhi``)."""

    radii: list[float]
    """Zone radii in metres, the last ``inf``."""
    fov: list[float]
    """FoV apex angles in radians, the last 2π."""
    kappa: list[list[float]]
    """κ cells row-major (zone-major) as ``[θ s, σ, ν]``."""
    pivots: list[int]
    """Pivot object ids."""


class ChangeClientId(msgspec.Struct, tag=6, array_like=True, frozen=True):
    """Client → server: ask for another client id (``ChangeClientID``)."""

    client_id: int
    """The requested id."""


class ClientIdChanged(msgspec.Struct, tag=7, array_like=True, frozen=True):
    """Server → client: the answer to ``ChangeClientId`` (``accepted`` false: id taken)."""

    client_id: int
    """The client's id from now on."""
    accepted: bool
    """Whether the requested id was granted."""


class Leave(msgspec.Struct, tag=8, array_like=True, frozen=True):
    """Client → server: leave the session (``Disconnect``)."""


class Kick(msgspec.Struct, tag=9, array_like=True, frozen=True):
    """Server → client: forced disconnect (the server's only remote call, spec 001 §3.8)."""

    reason: str
    """Why, for logs."""


class ObjectRejected(msgspec.Struct, tag=10, array_like=True, frozen=True):
    """Server → client: an ``AddObject`` or ``DelObject`` was refused."""

    object_id: int
    """The object id."""
    reason: str
    """Why (id taken, not the owner, malformed record)."""


class ObjectDeleted(msgspec.Struct, tag=11, array_like=True, frozen=True):
    """Server → client: an object was deleted by its owner or with its owner's departure."""

    object_id: int
    """The object id."""


Control: TypeAlias = (
    Join
    | Welcome
    | AddObject
    | DelObject
    | SetView
    | ChangeClientId
    | ClientIdChanged
    | Leave
    | Kick
    | ObjectRejected
    | ObjectDeleted
)
_ENCODER: Final = msgspec.msgpack.Encoder()
_DECODER: Final = msgspec.msgpack.Decoder(Control)


def encode_control(message: Control) -> bytes:
    """Encode a control message (MessagePack array with the tag first).

    Examples:
        >>> encode_control(DelObject(object_id=5)).hex()
        '920405'
    """
    return _ENCODER.encode(message)


def decode_control(data: bytes) -> Control:
    """Decode an untrusted control payload.

    Raises:
        DecodeError: too long, malformed (invalid UTF-8 in a string included), or an unknown tag.
    """
    if len(data) > MAX_CONTROL_BYTES:
        raise DecodeError(f"control payload of {len(data)} bytes exceeds {MAX_CONTROL_BYTES}")
    try:
        message: Control = _DECODER.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
        # msgspec raises UnicodeDecodeError, not its own DecodeError, for a str that is not UTF-8.
        raise DecodeError(f"malformed control message: {exc}") from None
    if isinstance(message, SetView) and (
        len(message.kappa) > MAX_CELLS
        or len(message.pivots) > MAX_PIVOTS
        or len(message.radii) * len(message.fov) > MAX_CELLS
    ):
        raise DecodeError("SetView carries too many cells or pivots")
    return message


def view_to_message(view: View, *, pivots: Sequence[int]) -> SetView:
    """Build the ``SetView`` message for a view and its pivots."""
    cells = [[k.theta, k.sigma, k.nu] for row in view.kappa for k in row]
    return SetView(
        radii=list(view.radii), fov=list(view.fov), kappa=cells, pivots=[int(p) for p in pivots]
    )


def message_to_view(message: SetView) -> View:
    """Rebuild the view of a ``SetView`` (untrusted).

    Raises:
        DecodeError: the cells do not form a valid view.
    """
    zones, bands = len(message.radii), len(message.fov)
    if len(message.kappa) != zones * bands or any(len(c) != 3 for c in message.kappa):
        raise DecodeError(f"SetView needs {zones}x{bands} cells of 3 numbers")
    try:
        cells = [Kappa(theta=c[0], sigma=c[1], nu=c[2]) for c in message.kappa]
        kappa = tuple(tuple(cells[z * bands : (z + 1) * bands]) for z in range(zones))
        return View(radii=tuple(message.radii), fov=tuple(message.fov), kappa=kappa)
    except (ConfigError, ValueError, OverflowError) as exc:
        raise DecodeError(f"invalid view: {exc}") from None
