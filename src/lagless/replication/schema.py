"""Schemas: the ordered replicated fields of a class, and the struct-of-arrays table of its objects.

Implements issue 13 item 2 (declarative typed fields, initial-only vs continuous, priority, writer
side, encoding through `lagless.wire`, a numpy path for many objects of one schema, savegame
JSON) and the data side of spec 003 §5.4.4-§5.4.5 (``InitialReplicationSetup`` /
``ReplicationSetup`` become the ``initial_only`` flag of each field).

Decisions:

* Field order is the class's definition order, base classes first; a subclass may not redeclare
  a field name (``test_schema.py::test_redeclared_field``).
* A `Table` holds every object of one class in one world: a float64 ``(capacity, dims)`` array of
  slots, one row per object (rows are reused after a destroy), plus Python lists for strings and
  bytes. `Schema.encode` turns rows into the integer codes of any subset of fields at once.
* The scalar encoding (announcements, owner updates, savegames over the wire) writes each code
  column in its full width with a `BitWriter`, then each string or bytes field as a length in
  ``max_len`` range bits followed by the bytes. Decoding is total on codes (out-of-range codes
  saturate), so only a short or over-long stream raises ``DecodeError``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from lagless.errors import LocalProtocolError
from lagless.replication.fields import Field, FloatField, NumericField, Writer, _BlobField
from lagless.wire import BitStream, DecodeError

__all__ = ["Schema", "Table"]

Codes = npt.NDArray[np.uint64]
Floats = npt.NDArray[np.float64]
_INITIAL_ROWS: Final = 16


class Schema:
    """The replicated fields of one `NetworkObject` class, in order.

    Args:
        fields: The fields, base classes' first; names must be unique.

    Raises:
        LocalProtocolError: two fields share a name.
    """

    def __init__(self, fields: Sequence[Field[Any]]) -> None:
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise LocalProtocolError(f"field names must be unique, got {names}")
        self.fields: tuple[Field[Any], ...] = tuple(fields)
        self.numeric: tuple[NumericField[Any], ...] = tuple(
            f for f in fields if isinstance(f, NumericField)
        )
        self.blobs: tuple[_BlobField[Any], ...] = tuple(
            f for f in fields if isinstance(f, _BlobField)
        )
        slot = 0
        for index, f in enumerate(self.fields):
            f.index = index
            if isinstance(f, NumericField):
                f.slot = slot
                slot += f.dims
        for index, blob in enumerate(self.blobs):
            blob.slot = index  # index into the table's blob lists
        self.dims = slot
        self.continuous: tuple[NumericField[Any], ...] = tuple(
            f for f in self.numeric if not f.initial_only
        )
        self.owner_fields: tuple[NumericField[Any], ...] = tuple(
            f for f in self.numeric if f.writer is Writer.OWNER
        )
        self.by_name = {f.name: f for f in self.fields}
        cols = [(f, c) for f in self.continuous for c in range(f.columns)]
        self.widths = np.array([f.widths[c] for f, c in cols], dtype=np.int64)
        """Full width of each continuous code column (bits)."""
        self.delta_bits = np.array([f.delta_bits[c] for f, c in cols], dtype=np.int64)
        """Small-delta width of each continuous code column (0 = never delta-coded)."""
        self.wraps = np.array([f.wraps for f, _ in cols], dtype=np.bool_)
        """Whether each continuous column's deltas wrap (angles)."""
        self.column_field = np.array(
            [i for i, f in enumerate(self.continuous) for _ in range(f.columns)], dtype=np.intp
        )
        """Index into ``continuous`` of each continuous column."""
        self.field_priority = np.array([f.priority for f in self.continuous], dtype=np.float64)
        """Priority weight of each continuous field."""
        self.predict_from = np.full(len(cols), -1, dtype=np.intp)
        """Continuous column of the velocity that predicts each column, or -1."""
        self.predict_scale = np.zeros((len(cols), 3), dtype=np.float64)
        """Per predicted column: velocity ``lo``, velocity resolution, own resolution."""
        first = {f.name: i for i, f in enumerate(self.continuous)}
        starts = np.concatenate(([0], np.cumsum([f.columns for f in self.continuous])))
        for index, f in enumerate(self.continuous):
            name = getattr(f, "predict", None)
            if name is None:
                continue
            vel = self.by_name.get(name)
            if not isinstance(vel, FloatField) or name not in first or vel.dims != f.dims:
                raise LocalProtocolError(
                    f"{f.name}: predict must name a continuous vector field of {f.dims} "
                    f"components, got {name!r}"
                )
            for axis in range(f.columns):
                col = int(starts[index]) + axis
                self.predict_from[col] = int(starts[first[name]]) + axis
                self.predict_scale[col] = (vel.lo, vel.resolution, f.resolution)

    @property
    def columns(self) -> int:
        """Number of continuous code columns (the width of a snapshot state)."""
        return int(self.widths.shape[0])

    def encode(self, slots: Floats, fields: Iterable[NumericField[Any]] | None = None) -> Codes:
        """Return the codes of ``fields`` (default: the continuous ones) for rows of slots.

        Args:
            slots: Table rows, shape ``(n, dims)``.
            fields: Numeric fields of this schema, in order.

        Returns:
            ``uint64`` codes, shape ``(n, total columns of fields)``.
        """
        chosen = self.continuous if fields is None else tuple(fields)
        parts = [f.encode(slots[:, f.slot : f.slot + f.dims]) for f in chosen]
        if not parts:
            return np.zeros((slots.shape[0], 0), dtype=np.uint64)
        return np.concatenate([p.reshape(slots.shape[0], -1) for p in parts], axis=1)

    def decode_into(
        self, codes: Codes, slots: Floats, fields: Iterable[NumericField[Any]] | None = None
    ) -> None:
        """Write the decoded ``codes`` of ``fields`` (default: continuous) into ``slots`` rows."""
        chosen = self.continuous if fields is None else tuple(fields)
        col = 0
        for f in chosen:
            values = f.decode(codes[:, col : col + f.columns])
            if f.dims == 2 and f.columns == 1:
                slots[:, f.slot] = values[:, 0]  # a reference: keep the row's generation slot
            else:
                slots[:, f.slot : f.slot + f.dims] = values
            col += f.columns

    def write_codes(
        self, stream: BitStream, codes: Sequence[int], fields: Iterable[NumericField[Any]]
    ) -> None:
        """Write one object's codes of ``fields`` in their full widths."""
        col = 0
        for f in fields:
            for width in f.widths:
                stream.serialize_bits(int(codes[col]), width)
                col += 1

    def read_codes(self, stream: BitStream, fields: Iterable[NumericField[Any]]) -> list[int]:
        """Read one object's codes of ``fields`` (raises ``DecodeError`` on a short stream)."""
        return [stream.serialize_bits(0, width) for f in fields for width in f.widths]

    def write_blobs(self, stream: BitStream, values: Sequence[Any]) -> None:
        """Write every string/bytes field of one object (length in range bits, then bytes)."""
        for f, value in zip(self.blobs, values, strict=True):
            stream.serialize_bytes(f.to_bytes(value), f.max_len)

    def read_blobs(self, stream: BitStream) -> list[Any]:
        """Read every string/bytes field of one object.

        Raises:
            DecodeError: short stream, over-long length or bytes that are not the field's type.
        """
        out = []
        for f in self.blobs:
            data = stream.serialize_bytes(b"", f.max_len)
            try:
                out.append(f.from_bytes(data))
            except ValueError as exc:
                raise DecodeError(f"{f.name}: {exc}") from None
        return out


class Table:
    """Every object of one class in one world, as rows of float64 slots (struct of arrays).

    Args:
        schema: The class's schema.
    """

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.values: Floats = np.zeros((_INITIAL_ROWS, max(schema.dims, 1)), dtype=np.float64)
        """Slots of every row (read the live rows through ``rows``)."""
        self.ids = np.full(_INITIAL_ROWS, -1, dtype=np.int64)
        """Object ID of each row, -1 for a free row."""
        self.objects: list[Any] = [None] * _INITIAL_ROWS
        self.blobs: list[list[Any]] = [[None] * _INITIAL_ROWS for _ in schema.blobs]
        self._free: list[int] = []
        self.size = 0
        """Rows in use or freed (the high-water mark); rows ``>= size`` were never used."""

    def add(self, obj: Any, ident: int) -> int:
        """Give ``obj`` (ID ``ident``) a row holding its schema's defaults; return the row."""
        if self._free:
            row = self._free.pop()
        else:
            row = self.size
            if row == self.ids.shape[0]:
                self._grow(2 * row)
            self.size += 1
        self.ids[row] = ident
        self.objects[row] = obj
        for f in self.schema.numeric:
            self.values[row, f.slot : f.slot + f.dims] = f.to_slots(f.default)
        for blob, column in zip(self.schema.blobs, self.blobs, strict=True):
            column[row] = blob.default
        return row

    def remove(self, row: int) -> None:
        """Free ``row``."""
        self.ids[row] = -1
        self.objects[row] = None
        self._free.append(row)

    def _grow(self, size: int) -> None:
        values = np.zeros((size, self.values.shape[1]), dtype=np.float64)
        values[: self.values.shape[0]] = self.values
        self.values = values
        ids = np.full(size, -1, dtype=np.int64)
        ids[: self.ids.shape[0]] = self.ids
        self.ids = ids
        extra = size - len(self.objects)
        self.objects.extend([None] * extra)
        for column in self.blobs:
            column.extend([None] * extra)
