"""Wire formats of the replication messages other than snapshots and acks (issue 13 items 3, 5).

Every message is a `lagless.wire` bit stream whose first 3 bits name its type (snapshot 1 and
ack 2 live in ``snapshot.py``):

* **Control** (type 3, server -> client, reliable-ordered channel): a count (varint, at most
  `MAX_OPS`) of operations, each a 3-bit op code and its fields:
  ``WELCOME`` (the client's id as the server names it, varint),
  ``ANNOUNCE`` (class ID string of at most 64 bytes, object ID varint, owner varint with 0 for
  none and ``id + 1`` otherwise, announcement data of at most 1024 bytes, the codes of every
  numeric field in full width, every string/bytes field),
  ``DESTROY`` (object ID), ``OWNER`` (object ID, owner as above),
  ``BLOB`` (object ID, field index varint, bytes of at most 65535).
  Announcements are the "large initial state": the transport fragments a long control message.
* **Owner update** (type 4, owner -> server, unreliable-sequenced): a count of objects, each its
  ID and the codes of its ``Writer.OWNER`` fields.
* **Event** (type 5, either direction, reliable-ordered or unreliable by the event's policy):
  class ID string, sender (varint: 0 the server, ``id + 1`` a client), target kind (3 bits) with
  its object ID or client set (at most `MAX_TARGETS`), the sender's synchronised time as an
  IEEE 754 binary64 (64 bits), then the event's codes and strings/bytes.

Decoders raise only ``DecodeError`` (wrong type, short or over-long stream, unknown class,
counts over their bounds, trailing bytes); lengths are range-coded against fixed maxima, so a
decoder never allocates more than the message's own size times a constant.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

import numpy as np

from lagless.replication.events import NetEvent, Target, TargetKind
from lagless.replication.objects import ClassRegistry, NetworkObject
from lagless.replication.schema import Schema
from lagless.wire import BitReader, BitWriter, DecodeError

__all__ = [
    "MAX_OPS",
    "MAX_TARGETS",
    "MSG_CONTROL",
    "MSG_EVENT",
    "MSG_OWNER_UPDATE",
    "Announce",
    "BlobSet",
    "ControlOp",
    "Destroy",
    "EventMessage",
    "OwnerChange",
    "Welcome",
    "decode_control",
    "decode_event",
    "decode_owner_update",
    "encode_control",
    "encode_event",
    "encode_owner_update",
    "message_type",
]

MSG_CONTROL: Final = 3
MSG_OWNER_UPDATE: Final = 4
MSG_EVENT: Final = 5
TYPE_BITS: Final = 3
MAX_OPS: Final = 4096  # operations per control message
MAX_TARGETS: Final = 256  # clients in a SET target
MAX_CLASS_ID: Final = 64  # bytes of a class ID string
MAX_ANNOUNCEMENT: Final = 1024  # bytes of announcement data
MAX_BLOB: Final = 65535  # bytes of one string/bytes field value in a BLOB op
MAX_ID: Final = (1 << 53) - 1  # IDs fit float64 slots
_OP_BITS: Final = 3
_WELCOME, _ANNOUNCE, _DESTROY, _OWNER, _BLOB = range(5)
_F64: Final = struct.Struct("<d")
_U64: Final = struct.Struct("<Q")


@dataclass(frozen=True, slots=True)
class Welcome:
    """The server tells a client its id."""

    client: int


@dataclass(frozen=True, slots=True)
class Announce:
    """Construct a replica: class, ID, owner, announcement data, full state."""

    cls: type[NetworkObject]
    ident: int
    owner: int | None
    data: bytes
    codes: tuple[int, ...]
    """Codes of every numeric field, schema order."""
    blobs: tuple[Any, ...] = field(default=())
    """Every string/bytes field, schema order."""


@dataclass(frozen=True, slots=True)
class Destroy:
    """Destroy a replica."""

    ident: int


@dataclass(frozen=True, slots=True)
class OwnerChange:
    """A replica's owner changed (None: the server)."""

    ident: int
    owner: int | None


@dataclass(frozen=True, slots=True)
class BlobSet:
    """A string/bytes field of a replica changed (index into ``schema.blobs``)."""

    ident: int
    index: int
    data: bytes


ControlOp: TypeAlias = Welcome | Announce | Destroy | OwnerChange | BlobSet


@dataclass(frozen=True, slots=True)
class EventMessage:
    """A decoded event with its envelope."""

    event: NetEvent
    sender: int | None
    """Client id of the sender, None for the server."""
    target: Target
    time: float
    """The sender's synchronised time when it sent the event, seconds."""


def message_type(payload: bytes) -> int:
    """The 3-bit type of a replication message (0 for an empty payload)."""
    return payload[0] & 7 if payload else 0


def _read_id(reader: BitReader) -> int:
    value = reader.serialize_varint(0)
    if value > MAX_ID:
        raise DecodeError(f"object ID {value} is out of range")
    return value


def _read_owner(reader: BitReader) -> int | None:
    value = reader.serialize_varint(0)
    if value > MAX_ID:
        raise DecodeError(f"client id {value} is out of range")
    return None if value == 0 else value - 1


def _read_class_id(reader: BitReader) -> str:
    raw = reader.serialize_bytes(b"", MAX_CLASS_ID)
    try:
        return raw.decode()
    except UnicodeDecodeError:
        raise DecodeError("class ID is not UTF-8") from None


def _finish(reader: BitReader) -> None:
    left = reader.bits_remaining
    if left >= 8 or reader.serialize_bits(0, left) != 0:
        raise DecodeError("trailing bits after the message")


def encode_control(ops: Sequence[ControlOp]) -> bytes:
    """Encode control operations into one message (at most `MAX_OPS`).

    Raises:
        LocalProtocolError: too many ops or a value out of its range (through the writer).
    """
    writer = BitWriter()
    writer.serialize_bits(MSG_CONTROL, TYPE_BITS)
    writer.serialize_range(len(ops), 0, MAX_OPS)
    for op in ops:
        if isinstance(op, Welcome):
            writer.serialize_bits(_WELCOME, _OP_BITS)
            writer.serialize_varint(op.client)
        elif isinstance(op, Announce):
            schema = op.cls.schema
            writer.serialize_bits(_ANNOUNCE, _OP_BITS)
            writer.serialize_bytes(op.cls.class_id.encode(), MAX_CLASS_ID)
            writer.serialize_varint(op.ident)
            writer.serialize_varint(0 if op.owner is None else op.owner + 1)
            writer.serialize_bytes(op.data, MAX_ANNOUNCEMENT)
            schema.write_codes(writer, op.codes, schema.numeric)
            schema.write_blobs(writer, op.blobs)
        elif isinstance(op, Destroy):
            writer.serialize_bits(_DESTROY, _OP_BITS)
            writer.serialize_varint(op.ident)
        elif isinstance(op, OwnerChange):
            writer.serialize_bits(_OWNER, _OP_BITS)
            writer.serialize_varint(op.ident)
            writer.serialize_varint(0 if op.owner is None else op.owner + 1)
        else:
            writer.serialize_bits(_BLOB, _OP_BITS)
            writer.serialize_varint(op.ident)
            writer.serialize_varint(op.index)
            writer.serialize_bytes(op.data, MAX_BLOB)
    return writer.getvalue()


def decode_control(payload: bytes, registry: ClassRegistry) -> list[ControlOp]:
    """Decode a control message; classes are looked up in ``registry``.

    Raises:
        DecodeError: malformed message or unknown class.
    """
    reader = BitReader(payload)
    if reader.serialize_bits(0, TYPE_BITS) != MSG_CONTROL:
        raise DecodeError("not a control message")
    count = reader.serialize_range(0, 0, MAX_OPS)
    ops: list[ControlOp] = []
    for _ in range(count):
        code = reader.serialize_bits(0, _OP_BITS)
        if code == _WELCOME:
            ops.append(Welcome(_read_id(reader)))
        elif code == _ANNOUNCE:
            class_id = _read_class_id(reader)
            cls = registry.get(class_id)
            if cls is None:
                raise DecodeError(f"unknown class {class_id!r}")
            ident = _read_id(reader)
            owner = _read_owner(reader)
            data = reader.serialize_bytes(b"", MAX_ANNOUNCEMENT)
            codes = tuple(cls.schema.read_codes(reader, cls.schema.numeric))
            blobs = tuple(cls.schema.read_blobs(reader))
            ops.append(Announce(cls, ident, owner, data, codes, blobs))
        elif code == _DESTROY:
            ops.append(Destroy(_read_id(reader)))
        elif code == _OWNER:
            ops.append(OwnerChange(_read_id(reader), _read_owner(reader)))
        elif code == _BLOB:
            ident = _read_id(reader)
            index = reader.serialize_varint(0)
            ops.append(BlobSet(ident, index, reader.serialize_bytes(b"", MAX_BLOB)))
        else:
            raise DecodeError(f"unknown control op {code}")
    _finish(reader)
    return ops


def encode_owner_update(objects: Sequence[NetworkObject]) -> bytes:
    """Encode the ``Writer.OWNER`` fields of owned objects (owner -> server)."""
    writer = BitWriter()
    writer.serialize_bits(MSG_OWNER_UPDATE, TYPE_BITS)
    writer.serialize_range(len(objects), 0, MAX_OPS)
    for obj in objects:
        schema = obj.schema
        table = obj._table
        assert table is not None
        codes = schema.encode(table.values[obj._row : obj._row + 1], schema.owner_fields)[0]
        writer.serialize_varint(obj.id)
        schema.write_codes(writer, codes.tolist(), schema.owner_fields)
    return writer.getvalue()


def decode_owner_update(
    payload: bytes, find: Callable[[int], NetworkObject | None]
) -> list[tuple[NetworkObject, list[int]]]:
    """Decode an owner update; ``find`` maps IDs to the server's objects.

    Raises:
        DecodeError: malformed, or an ID ``find`` does not know (its codes cannot be parsed).
    """
    reader = BitReader(payload)
    if reader.serialize_bits(0, TYPE_BITS) != MSG_OWNER_UPDATE:
        raise DecodeError("not an owner update")
    count = reader.serialize_range(0, 0, MAX_OPS)
    out = []
    for _ in range(count):
        ident = _read_id(reader)
        obj = find(ident)
        if obj is None:
            raise DecodeError(f"owner update for unknown object {ident}")
        out.append((obj, obj.schema.read_codes(reader, obj.schema.owner_fields)))
    _finish(reader)
    return out


def event_codes(event: NetEvent) -> list[int]:
    """The codes of every numeric field of ``event``."""
    schema = event.schema
    return schema.encode(event._slots, schema.numeric)[0].tolist()


def encode_event(event: NetEvent, sender: int | None, target: Target, time: float) -> bytes:
    """Encode an event with its envelope.

    Raises:
        LocalProtocolError: a SET target of more than `MAX_TARGETS` clients, or a bad value.
    """
    schema = event.schema
    writer = BitWriter()
    writer.serialize_bits(MSG_EVENT, TYPE_BITS)
    writer.serialize_bytes(event.class_id.encode(), MAX_CLASS_ID)
    writer.serialize_varint(0 if sender is None else sender + 1)
    writer.serialize_bits(int(target.kind), 3)
    if target.kind in (TargetKind.OWNER, TargetKind.ALL_BUT_OWNER):
        writer.serialize_varint(target.object_id)
    elif target.kind is TargetKind.SET:
        writer.serialize_range(len(target.clients), 0, MAX_TARGETS)
        for client in target.clients:
            writer.serialize_varint(client)
    writer.serialize_bits(_U64.unpack(_F64.pack(time))[0], 64)
    schema.write_codes(writer, event_codes(event), schema.numeric)
    schema.write_blobs(writer, [getattr(event, f.name) for f in schema.blobs])
    return writer.getvalue()


def decode_event(payload: bytes, events: dict[str, type[NetEvent]]) -> EventMessage:
    """Decode an event; ``events`` maps class IDs to event classes.

    Raises:
        DecodeError: malformed message, unknown event class or target kind.
    """
    reader = BitReader(payload)
    if reader.serialize_bits(0, TYPE_BITS) != MSG_EVENT:
        raise DecodeError("not an event message")
    class_id = _read_class_id(reader)
    cls = events.get(class_id)
    if cls is None:
        raise DecodeError(f"unknown event class {class_id!r}")
    sender = _read_owner(reader)
    kind_code = reader.serialize_bits(0, 3)
    if kind_code > max(TargetKind):
        raise DecodeError(f"unknown target kind {kind_code}")
    kind = TargetKind(kind_code)
    target = Target(kind)
    if kind in (TargetKind.OWNER, TargetKind.ALL_BUT_OWNER):
        target = Target(kind, _read_id(reader))
    elif kind is TargetKind.SET:
        n = reader.serialize_range(0, 0, MAX_TARGETS)
        target = Target(kind, clients=tuple(_read_id(reader) for _ in range(n)))
    time = _F64.unpack(_U64.pack(reader.serialize_bits(0, 64)))[0]
    if time != time:
        raise DecodeError("event time is NaN")
    schema: Schema = cls.schema
    codes = schema.read_codes(reader, schema.numeric)
    blobs = schema.read_blobs(reader)
    _finish(reader)
    event = cls.__new__(cls)
    event._slots = np.zeros((1, max(schema.dims, 1)), dtype=np.float64)
    schema.decode_into(np.array([codes], dtype=np.uint64), event._slots, schema.numeric)
    event._blobs = blobs
    return EventMessage(event, sender, target, time)
