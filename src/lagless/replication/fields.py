"""Typed replicated fields: the declarative part of a schema (issue 13 item 2, spec 003 §5.4.4).

A field is a descriptor declared on a `NetworkObject` subclass (``pos = Vec2Field(-500, 500,
0.01)``). It plays the thesis's ``Replicator<T>`` (§7.2.3): it knows its wire form, its flag
(initial-only or continuous), its priority and which side may write it (``SerializeTo``). Values
live in the object's table, one float64 row per object (struct of arrays), so a server encodes
every object of a class with one numpy call per field.

Every numeric field maps its value to ``dims`` float64 slots and to ``columns`` unsigned integer
codes of fixed ``widths`` (bits). Decisions:

* **Ints** are stored as float64, so ranges are limited to 53 bits (checked at declaration); an
  ``IntField(lo, hi)`` code is ``v - lo`` in ``(hi - lo).bit_length()`` bits (at least 1).
* **Enums** are coded by their index in definition order; **bools** in one bit.
* **Floats and vectors** use `lagless.wire.quantize_array` (saturating, worst-case error
  ``resolution / 2``); **angles** `quantize_angle_array` (wrapping, error ``π / 2^bits``);
  **quaternions** smallest three (``3b + 2`` bits, error ``quaternion_error_bound(b)``), stored
  ``(w, x, y, z)`` and identity by default.
* **Object references** (`RefField`) store the referenced ID and its generation (`IdRef`); on the
  wire they are the ID + 1 in ``bits`` bits (0 is the null reference), so network IDs must stay
  below ``2**bits - 1`` and below ``2**53`` (float64 slots).
* **Delta coding.** ``delta_bits`` is the width of the small signed difference a snapshot sends
  instead of the full code when the value moved little since the client's baseline (0 disables
  it). The default is ``max(2, width // 3)`` for quantised floats, vectors and angles (angles
  wrap: the difference is taken modulo ``2^bits``) and 0 for bools, enums, ints and references.
* **Strings and bytes** (`StringField`, `BytesField`) have no code columns: they go in
  announcements, savegames and reliable field messages, never in delta snapshots.
* **Prediction.** A vector field declared with ``predict="vel"`` is delta-coded against its
  baseline moved by the baseline's ``vel`` over the time between the two snapshots, so an
  object moving steadily sends near-zero deltas (dead reckoning applied to delta compression).
* JSON (savegames) stores the value, not the code: floats as numbers, vectors as lists, enums by
  name, references as ``{"id": n}``, bytes as hex.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar, cast

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError
from lagless.replication.ids import NO_ID, NULL_REF, IdRef
from lagless.wire import (
    bits_for_range,
    dequantize_angle_array,
    dequantize_array,
    pack_quaternions_smallest_three,
    quantize_angle_array,
    quantize_array,
    unpack_quaternions_smallest_three,
)

if TYPE_CHECKING:
    from lagless.replication.objects import NetworkObject

__all__ = [
    "AngleField",
    "BoolField",
    "BytesField",
    "EnumField",
    "Field",
    "FloatField",
    "IntField",
    "NumericField",
    "QuatField",
    "RefField",
    "StringField",
    "Vec2Field",
    "Vec3Field",
    "Writer",
]

Codes = npt.NDArray[np.uint64]
Floats = npt.NDArray[np.float64]
V = TypeVar("V")
E = TypeVar("E", bound=enum.Enum)
MAX_EXACT_INT: Final = 1 << 53  # float64 slots hold integers exactly below this
JSONValue = Any


class Writer(enum.Enum):
    """Which side may write a field (thesis ``ReplicatorSerializeTo``)."""

    AUTHORITY = "authority"
    """Only the authority (server) writes it; it flows to every proxy and the owner."""
    OWNER = "owner"
    """The owning client writes it too (e.g. its aim); it flows owner -> server -> others."""


class Field(Generic[V]):
    """Base of every replicated field (a data descriptor on a `NetworkObject` subclass).

    Args:
        initial_only: Sent once, in the announcement (thesis "only once"), never in snapshots.
        priority: Priority weight (> 0) this field adds when it changed; snapshots send the
            objects whose accumulated priority is highest first.
        writer: Which side may write it.
    """

    dims: int = 0
    """float64 slots per object in the table."""
    columns: int = 0
    """Integer code columns on the wire (0 for strings and bytes)."""

    def __init__(
        self,
        *,
        initial_only: bool = False,
        priority: float = 1.0,
        writer: Writer = Writer.AUTHORITY,
    ) -> None:
        if not (math.isfinite(priority) and priority > 0.0):
            raise LocalProtocolError(f"priority must be a finite number > 0, got {priority!r}")
        if not isinstance(writer, Writer):
            raise LocalProtocolError(f"writer must be a Writer, got {writer!r}")
        self.initial_only = initial_only
        self.priority = float(priority)
        self.writer = writer
        self.name = ""
        self.index = -1  # position in the schema, set by Schema
        self.slot = -1  # first float64 slot in the table row (numeric fields)

    def __set_name__(self, owner: type, name: str) -> None:
        """Remember the attribute name."""
        self.name = name

    def __get__(self, obj: NetworkObject | None, objtype: type | None = None) -> Any:
        """Read the value of ``obj`` (the descriptor itself on the class)."""
        if obj is None:
            return self
        return obj._get_field(self)

    def __set__(self, obj: NetworkObject, value: V) -> None:
        """Write the value of ``obj`` (allowed on the side ``writer`` names)."""
        obj._set_field(self, value)

    @property
    def default(self) -> V:
        """The value a new object starts with."""
        raise NotImplementedError

    def to_json(self, value: V) -> JSONValue:
        """Return the savegame JSON form of ``value``."""
        raise NotImplementedError

    def from_json(self, data: JSONValue) -> V:
        """Parse the savegame JSON form; raise `LocalProtocolError` on a bad value."""
        raise NotImplementedError


class NumericField(Field[V]):
    """A field stored in float64 slots and sent as fixed-width integer codes."""

    widths: tuple[int, ...] = ()
    """Bits per code column (full encoding)."""
    delta_bits: tuple[int, ...] = ()
    """Bits of the small signed delta per column; 0 = the column is never delta-coded."""
    wraps: bool = False
    """Deltas are taken modulo ``2 ** width`` (angles)."""

    def to_slots(self, value: V) -> Sequence[float]:
        """Return the ``dims`` float64 slot values of ``value``; raise on a bad value."""
        raise NotImplementedError

    def from_slots(self, slots: Floats) -> V:
        """Return the Python value of a row's slots."""
        raise NotImplementedError

    def encode(self, slots: Floats) -> Codes:
        """Return the codes, shape ``(n, columns)``, of slot rows of shape ``(n, dims)``."""
        raise NotImplementedError

    def decode(self, codes: Codes) -> Floats:
        """Return slot rows ``(n, dims)`` for codes ``(n, columns)`` (codes are in range)."""
        raise NotImplementedError

    def _set_delta(self, delta_bits: int | None, default: int) -> None:
        bits = default if delta_bits is None else delta_bits
        if not 0 <= bits < max(self.widths):
            raise LocalProtocolError(
                f"delta_bits must be in [0, {max(self.widths) - 1}], got {delta_bits!r}"
            )
        self.delta_bits = tuple(bits for _ in self.widths)

    def to_json(self, value: V) -> JSONValue:
        """Return the savegame JSON form of ``value``."""
        slots = list(self.to_slots(value))
        return slots[0] if len(slots) == 1 else slots

    def from_json(self, data: JSONValue) -> V:
        """Parse the savegame JSON form; raise `LocalProtocolError` on a bad value."""
        values = data if isinstance(data, list) else [data]
        if len(values) != self.dims or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values
        ):
            raise LocalProtocolError(f"{self.name}: expected {self.dims} numbers, got {data!r}")
        return self.from_slots(np.asarray(values, dtype=np.float64))


def _finite(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise LocalProtocolError(f"{name} must be a number, got {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise LocalProtocolError(f"{name} must be finite, got {value!r}")
    return result


class BoolField(NumericField[bool]):
    """A bool in one bit."""

    dims = 1
    columns = 1

    def __init__(self, default: bool = False, **options: Any) -> None:
        super().__init__(**options)
        self._default = bool(default)
        self.widths = (1,)
        self.delta_bits = (0,)

    @property
    def default(self) -> bool:
        """The value a new object starts with."""
        return self._default

    def to_slots(self, value: bool) -> Sequence[float]:
        """One slot, 0.0 or 1.0."""
        if not isinstance(value, bool | np.bool_):
            raise LocalProtocolError(f"{self.name} must be a bool, got {value!r}")
        return (1.0 if value else 0.0,)

    def from_slots(self, slots: Floats) -> bool:
        """The bool of a row."""
        return bool(slots[0] != 0.0)

    def encode(self, slots: Floats) -> Codes:
        """0 or 1."""
        return (slots != 0.0).astype(np.uint64)

    def decode(self, codes: Codes) -> Floats:
        """0.0 or 1.0."""
        return codes.astype(np.float64)

    def to_json(self, value: bool) -> JSONValue:
        """A JSON bool."""
        return bool(value)

    def from_json(self, data: JSONValue) -> bool:
        """A JSON bool."""
        if not isinstance(data, bool):
            raise LocalProtocolError(f"{self.name}: expected a bool, got {data!r}")
        return data


class EnumField(NumericField[E]):
    """A member of ``enum_type``, coded by its index in definition order."""

    dims = 1
    columns = 1

    def __init__(self, enum_type: type[E], default: E | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.members: tuple[E, ...] = tuple(enum_type)
        if not self.members:
            raise LocalProtocolError(f"enum {enum_type.__name__} has no members")
        self.enum_type = enum_type
        self._default = self.members[0] if default is None else default
        self._index = {m: i for i, m in enumerate(self.members)}
        self.widths = (max(1, (len(self.members) - 1).bit_length()),)
        self.delta_bits = (0,)

    @property
    def default(self) -> E:
        """The value a new object starts with."""
        return self._default

    def to_slots(self, value: E) -> Sequence[float]:
        """The member's index."""
        index = self._index.get(value)
        if index is None:
            raise LocalProtocolError(
                f"{self.name} must be a {self.enum_type.__name__} member, got {value!r}"
            )
        return (float(index),)

    def from_slots(self, slots: Floats) -> E:
        """The member at a row's index."""
        return self.members[int(slots[0])]

    def encode(self, slots: Floats) -> Codes:
        """The indices."""
        return slots.astype(np.uint64)

    def decode(self, codes: Codes) -> Floats:
        """The indices; codes beyond the last member saturate to it."""
        return np.minimum(codes, len(self.members) - 1).astype(np.float64)

    def to_json(self, value: E) -> JSONValue:
        """The member's name."""
        return value.name

    def from_json(self, data: JSONValue) -> E:
        """A member name."""
        for member in self.members:
            if member.name == data:
                return member
        raise LocalProtocolError(
            f"{self.name}: expected a {self.enum_type.__name__} name, got {data!r}"
        )


class IntField(NumericField[int]):
    """An integer in ``[lo, hi]`` in ``(hi - lo).bit_length()`` bits (spec 004 §3.3.1)."""

    dims = 1
    columns = 1

    def __init__(
        self, lo: int, hi: int, default: int | None = None, *, delta_bits: int = 0, **options: Any
    ) -> None:
        super().__init__(**options)
        if not (isinstance(lo, int) and isinstance(hi, int) and lo <= hi):
            raise LocalProtocolError(f"IntField needs ints lo <= hi, got {lo!r}, {hi!r}")
        if max(abs(lo), abs(hi)) >= MAX_EXACT_INT:
            raise LocalProtocolError(
                f"IntField bounds must be below 2**53 in magnitude, got {lo}, {hi}"
            )
        self.lo, self.hi = lo, hi
        self._default = lo if default is None else default
        self.widths = (max(1, (hi - lo).bit_length()),)
        self._set_delta(delta_bits, 0)

    @property
    def default(self) -> int:
        """The value a new object starts with."""
        return self._default

    def to_slots(self, value: int) -> Sequence[float]:
        """The int, checked against the range."""
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise LocalProtocolError(f"{self.name} must be an int, got {value!r}")
        if not self.lo <= value <= self.hi:
            raise LocalProtocolError(f"{self.name} must be in [{self.lo}, {self.hi}], got {value}")
        return (float(value),)

    def from_slots(self, slots: Floats) -> int:
        """The int of a row."""
        return int(slots[0])

    def encode(self, slots: Floats) -> Codes:
        """``v - lo``."""
        return (slots - self.lo).astype(np.uint64)

    def decode(self, codes: Codes) -> Floats:
        """``lo + code``, saturating at ``hi``."""
        return np.minimum(codes.astype(np.float64) + self.lo, float(self.hi))


class FloatField(NumericField[float]):
    """A float in ``[lo, hi]`` quantised to ``resolution`` (error ``resolution / 2``)."""

    dims = 1
    columns = 1

    def __init__(
        self,
        lo: float,
        hi: float,
        resolution: float,
        default: float | None = None,
        *,
        delta_bits: int | None = None,
        **options: Any,
    ) -> None:
        super().__init__(**options)
        width = bits_for_range(lo, hi, resolution)
        if width < 1:
            raise LocalProtocolError(f"FloatField range [{lo}, {hi}] is empty")
        self.lo, self.hi, self.resolution = float(lo), float(hi), float(resolution)
        self._default = min(max(0.0, self.lo), self.hi) if default is None else float(default)
        self.widths = (width,) * self.columns
        self._set_delta(delta_bits, max(2, width // 3))

    @property
    def default(self) -> Any:
        """The value a new object starts with."""
        return self._default

    def to_slots(self, value: Any) -> Sequence[float]:
        """The float (clipped on the wire, not here)."""
        return (_finite(value, self.name),)

    def from_slots(self, slots: Floats) -> Any:
        """The float of a row."""
        return float(slots[0])

    def encode(self, slots: Floats) -> Codes:
        """Range-quantised codes."""
        return quantize_array(slots, self.lo, self.hi, self.resolution)

    def decode(self, codes: Codes) -> Floats:
        """Dequantised values."""
        return dequantize_array(codes, self.lo, self.hi, self.resolution)


class _VecField(FloatField):
    """A vector of ``dims`` components, each quantised like a `FloatField`."""

    def __init__(
        self,
        lo: float,
        hi: float,
        resolution: float,
        default: Sequence[float] | None = None,
        *,
        delta_bits: int | None = None,
        predict: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(lo, hi, resolution, None, delta_bits=delta_bits, **options)
        self.predict = predict
        """Name of a velocity field (same dims, units per second): snapshot deltas of this field
        are taken against the baseline dead-reckoned by the baseline's velocity (schema.py)."""
        zero = min(max(0.0, self.lo), self.hi)
        self._vdefault = tuple(zero for _ in range(self.dims)) if default is None else default
        self._vdefault = tuple(self.to_slots(self._vdefault))

    @property
    def default(self) -> Any:
        """The value a new object starts with."""
        return self._vdefault

    def to_slots(self, value: Any) -> Sequence[float]:
        """The components."""
        if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
            raise LocalProtocolError(f"{self.name} must be a sequence of {self.dims} numbers")
        if len(value) != self.dims:
            raise LocalProtocolError(f"{self.name} must have {self.dims} components, got {value!r}")
        return tuple(_finite(v, self.name) for v in value)

    def from_slots(self, slots: Floats) -> Any:
        """A tuple of floats."""
        return tuple(float(v) for v in slots)


class Vec2Field(_VecField):
    """A 2D vector (metres, m/s, ...), each component quantised over ``[lo, hi]``."""

    dims = 2
    columns = 2


class Vec3Field(_VecField):
    """A 3D vector, each component quantised over ``[lo, hi]``."""

    dims = 3
    columns = 3


class AngleField(NumericField[float]):
    """An angle in radians, wrapped to ``[0, 2π)`` in ``bits`` bits (error ``π / 2^bits``)."""

    dims = 1
    columns = 1
    wraps = True

    def __init__(
        self, bits: int = 10, default: float = 0.0, *, delta_bits: int | None = None, **options: Any
    ) -> None:
        super().__init__(**options)
        if not 2 <= bits <= 32:
            raise LocalProtocolError(f"AngleField bits must be in [2, 32], got {bits}")
        self.bits = bits
        self._default = float(default)
        self.widths = (bits,)
        self._set_delta(delta_bits, max(2, bits // 3))

    @property
    def default(self) -> float:
        """The value a new object starts with."""
        return self._default

    def to_slots(self, value: float) -> Sequence[float]:
        """The angle in radians."""
        return (_finite(value, self.name),)

    def from_slots(self, slots: Floats) -> float:
        """The angle of a row."""
        return float(slots[0])

    def encode(self, slots: Floats) -> Codes:
        """Wrapped angle codes."""
        return quantize_angle_array(slots, self.bits)

    def decode(self, codes: Codes) -> Floats:
        """Angles in ``[0, 2π)``."""
        return dequantize_angle_array(codes, self.bits)


class QuatField(NumericField[tuple[float, float, float, float]]):
    """A rotation quaternion ``(w, x, y, z)`` in smallest-three form, ``3b + 2`` bits."""

    dims = 4
    columns = 1

    def __init__(self, bits_per_component: int = 10, **options: Any) -> None:
        super().__init__(**options)
        if not 2 <= bits_per_component <= 20:
            raise LocalProtocolError(
                f"bits_per_component must be in [2, 20], got {bits_per_component}"
            )
        self.bits = bits_per_component
        self.widths = (3 * bits_per_component + 2,)
        self.delta_bits = (0,)

    @property
    def default(self) -> tuple[float, float, float, float]:
        """The identity rotation."""
        return (1.0, 0.0, 0.0, 0.0)

    def to_slots(self, value: tuple[float, float, float, float]) -> Sequence[float]:
        """The four components (normalised when encoded)."""
        if not isinstance(value, Sequence | np.ndarray) or len(value) != 4:
            raise LocalProtocolError(f"{self.name} must be 4 numbers (w, x, y, z), got {value!r}")
        slots = tuple(_finite(v, self.name) for v in value)
        if not any(slots):
            raise LocalProtocolError(f"{self.name} must not be the zero quaternion")
        return slots

    def from_slots(self, slots: Floats) -> tuple[float, float, float, float]:
        """A ``(w, x, y, z)`` tuple."""
        w, x, y, z = (float(v) for v in slots)
        return (w, x, y, z)

    def encode(self, slots: Floats) -> Codes:
        """Smallest-three codes."""
        return pack_quaternions_smallest_three(slots, self.bits).reshape(-1, 1)

    def decode(self, codes: Codes) -> Floats:
        """Unpacked quaternions."""
        return unpack_quaternions_smallest_three(codes.reshape(-1), self.bits)


class RefField(NumericField[IdRef]):
    """A reference to another network object, sent as its ID (thesis ``ObjectReference<T>``).

    Args:
        depending: The referenced object is announced to a client before the holder (thesis
            ``Depending``: the holder depends on it).
        bits: Width of the ID + 1 on the wire.
    """

    dims = 2  # ID + 1 (0 = null), generation of the assignment it was taken from
    columns = 1

    def __init__(self, *, depending: bool = False, bits: int = 32, **options: Any) -> None:
        super().__init__(**options)
        if not 1 <= bits <= 53:
            raise LocalProtocolError(f"RefField bits must be in [1, 53], got {bits}")
        self.depending = depending
        self.widths = (bits,)
        self.delta_bits = (0,)

    @property
    def default(self) -> IdRef:
        """The null reference."""
        return NULL_REF

    def to_slots(self, value: IdRef) -> Sequence[float]:
        """ID + 1 and generation."""
        if not isinstance(value, IdRef):
            raise LocalProtocolError(f"{self.name} must be an IdRef, got {value!r}")
        if value.id >= (1 << self.widths[0]) - 1:
            raise LocalProtocolError(
                f"{self.name}: ID {value.id} does not fit {self.widths[0]} bits"
            )
        return (float(value.id + 1), float(value.generation))

    def from_slots(self, slots: Floats) -> IdRef:
        """The reference of a row."""
        return IdRef(int(slots[0]) - 1, int(slots[1])) if slots[0] else NULL_REF

    def encode(self, slots: Floats) -> Codes:
        """ID + 1."""
        return slots[:, :1].astype(np.uint64)

    def decode(self, codes: Codes) -> Floats:
        """ID + 1 with generation 0 (bound by the receiving world)."""
        out = np.zeros((codes.shape[0], 2), dtype=np.float64)
        out[:, 0] = codes[:, 0]
        return out

    def is_updated(self, obj: Any) -> bool:
        """Whether the referenced ID changed since the last call for ``obj`` (thesis
        ``IsDataUpdated``: ``ID != OldID``; the first call compares with the null reference)."""
        key = f"_old_ref_{self.name}"
        ident = getattr(obj, self.name).id
        old = obj.__dict__.get(key, NO_ID)
        obj.__dict__[key] = ident
        return bool(ident != old)

    def to_json(self, value: IdRef) -> JSONValue:
        """``{"id": n}`` or None."""
        return None if value.id == NO_ID else {"id": value.id}

    def from_json(self, data: JSONValue) -> IdRef:
        """``{"id": n}`` or None (generation bound on import)."""
        if data is None:
            return NULL_REF
        ident = data.get("id") if isinstance(data, dict) else None
        if isinstance(ident, bool) or not isinstance(ident, int) or ident < 0:
            raise LocalProtocolError(f"{self.name}: expected {{'id': n}} or null, got {data!r}")
        return IdRef(ident, 0)


class _BlobField(Field[V]):
    """A string or bytes of at most ``max_len`` bytes, never delta-coded."""

    def __init__(self, max_len: int, default: V, **options: Any) -> None:
        super().__init__(**options)
        if not 0 < max_len <= 65535:
            raise LocalProtocolError(f"max_len must be in [1, 65535] bytes, got {max_len}")
        self.max_len = max_len
        self._default = default

    @property
    def default(self) -> V:
        """The value a new object starts with."""
        return self._default

    def to_bytes(self, value: V) -> bytes:
        """The wire bytes of ``value``; raise `LocalProtocolError` if too long or mistyped."""
        raise NotImplementedError

    def from_bytes(self, data: bytes) -> V:
        """The value of wire bytes; raise ``ValueError`` on bad bytes."""
        raise NotImplementedError

    def _checked(self, data: bytes) -> bytes:
        if len(data) > self.max_len:
            raise LocalProtocolError(f"{self.name} is {len(data)} bytes, at most {self.max_len}")
        return data


class StringField(_BlobField[str]):
    """A short UTF-8 string of at most ``max_len`` bytes."""

    def __init__(self, max_len: int = 32, default: str = "", **options: Any) -> None:
        super().__init__(max_len, default, **options)

    def to_bytes(self, value: str) -> bytes:
        """UTF-8 bytes."""
        if not isinstance(value, str):
            raise LocalProtocolError(f"{self.name} must be a str, got {value!r}")
        return self._checked(value.encode())

    def from_bytes(self, data: bytes) -> str:
        """Decoded UTF-8 (``UnicodeDecodeError`` is a ``ValueError``)."""
        return data.decode()

    def to_json(self, value: str) -> JSONValue:
        """The string."""
        return value

    def from_json(self, data: JSONValue) -> str:
        """A string."""
        if not isinstance(data, str):
            raise LocalProtocolError(f"{self.name}: expected a string, got {data!r}")
        self.to_bytes(data)
        return data


class BytesField(_BlobField[bytes]):
    """Raw bytes, at most ``max_len``."""

    def __init__(self, max_len: int = 64, default: bytes = b"", **options: Any) -> None:
        super().__init__(max_len, default, **options)

    def to_bytes(self, value: bytes) -> bytes:
        """The bytes."""
        if not isinstance(value, bytes):
            raise LocalProtocolError(f"{self.name} must be bytes, got {value!r}")
        return self._checked(value)

    def from_bytes(self, data: bytes) -> bytes:
        """The bytes."""
        return data

    def to_json(self, value: bytes) -> JSONValue:
        """Hex digits."""
        return value.hex()

    def from_json(self, data: JSONValue) -> bytes:
        """Hex digits."""
        try:
            return self.to_bytes(bytes.fromhex(cast("str", data)))
        except (TypeError, ValueError):
            raise LocalProtocolError(f"{self.name}: expected hex digits, got {data!r}") from None
