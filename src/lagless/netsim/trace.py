"""Per-datagram records of a simulated run and a sink that keeps them (STYLE §5 "netsim").

Implements STYLE §5 (a ``Trace`` sink read by the lab's metrics and the tests) and the determinism
rule of STYLE §5: the same seed gives the same trace, byte for byte.

Decisions:
    * One record per arrival: a duplicated datagram gives two records with the same ``seq``, the
      second with ``duplicate=True``; a dropped one gives one record with ``arrived_at=None``
      (``test_network.py::test_trace_records_every_fate``).
    * ``to_csv()`` writes floats with ``repr`` (shortest round-trip form), so the bytes are exact
      and platform independent; the header row is fixed (``test_trace.py::test_csv_round_trips``).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final, Protocol

from lagless._types import Address
from lagless.netsim.link import Fate

__all__ = ["CSV_COLUMNS", "PacketRecord", "Trace", "TraceSink"]

CSV_COLUMNS: Final = (
    "seq",
    "src_host",
    "src_port",
    "dst_host",
    "dst_port",
    "size",
    "sent_at",
    "fate",
    "arrived_at",
    "duplicate",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class PacketRecord:
    """What happened to one datagram (or one copy of a duplicated datagram)."""

    seq: int
    """Network-wide send counter, from 0."""
    src: Address
    """Sender address."""
    dst: Address
    """Destination address."""
    size: int
    """Payload bytes (without the 28 IPv4+UDP header bytes)."""
    sent_at: float
    """Virtual send time (s)."""
    fate: Fate
    """Why it did or did not arrive."""
    arrived_at: float | None
    """Virtual arrival time (s), or ``None`` when dropped."""
    duplicate: bool
    """True for the extra copy of a duplicated datagram."""

    def as_row(self) -> tuple[str, ...]:
        """Return the record as CSV fields in ``CSV_COLUMNS`` order."""
        return (
            str(self.seq),
            self.src[0],
            str(self.src[1]),
            self.dst[0],
            str(self.dst[1]),
            str(self.size),
            repr(self.sent_at),
            self.fate.value,
            "" if self.arrived_at is None else repr(self.arrived_at),
            "1" if self.duplicate else "0",
        )


class TraceSink(Protocol):
    """Anything that accepts packet records (``Trace`` keeps them all)."""

    def record(self, record: PacketRecord) -> None:
        """Take one record."""


class Trace:
    """A list of ``PacketRecord`` in send order, with deterministic serialisation."""

    def __init__(self) -> None:
        """Create an empty trace."""
        self.records: list[PacketRecord] = []

    def record(self, record: PacketRecord) -> None:
        """Append one record."""
        self.records.append(record)

    def __len__(self) -> int:
        """Number of records."""
        return len(self.records)

    def __iter__(self) -> Iterator[PacketRecord]:
        """Iterate over the records in send order."""
        return iter(self.records)

    def to_csv(self) -> str:
        """Return the trace as CSV text (``\\n`` line ends, header ``CSV_COLUMNS``)."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)
        writer.writerows(record.as_row() for record in self.records)
        return out.getvalue()

    def to_bytes(self) -> bytes:
        """Return ``to_csv()`` encoded as UTF-8: identical for identical runs."""
        return self.to_csv().encode("utf-8")

    @classmethod
    def from_csv(cls, text: str) -> Trace:
        """Parse text written by ``to_csv``.

        Args:
            text: CSV text with the ``CSV_COLUMNS`` header.

        Returns:
            A trace with the same records.

        Raises:
            ValueError: the CSV, the header or a field is malformed (the only exception raised).
        """
        try:
            rows = list(csv.reader(io.StringIO(text, newline="")))
        except csv.Error as exc:  # a stray carriage return, an overlong field, ...
            raise ValueError(f"trace CSV is malformed: {exc}") from None
        header = rows[0] if rows else None
        if header is None or tuple(header) != CSV_COLUMNS:
            raise ValueError(f"trace CSV header must be {','.join(CSV_COLUMNS)}, got {header!r}")
        trace = cls()
        for row in rows[1:]:
            seq, src_host, src_port, dst_host, dst_port, size, sent, fate, arrived, dup = row
            trace.record(
                PacketRecord(
                    seq=int(seq),
                    src=(src_host, int(src_port)),
                    dst=(dst_host, int(dst_port)),
                    size=int(size),
                    sent_at=float(sent),
                    fate=Fate(fate),
                    arrived_at=None if arrived == "" else float(arrived),
                    duplicate=dup == "1",
                )
            )
        return trace
