"""Fuzz the packet-trace CSV reader (DESIGN.md "Bad input"; ``lagless.netsim.trace``).

``Trace.from_csv`` raises only ``ValueError`` on any text: random text and valid traces with their
bytes mutated.
"""

from __future__ import annotations

import contextlib

from hypothesis import given
from hypothesis import strategies as st

from lagless.netsim.link import Fate
from lagless.netsim.trace import PacketRecord, Trace
from tests.property.fuzzing import FUZZ, fuzz_bytes

addresses = st.tuples(st.sampled_from(["10.0.0.1", "::1", "h"]), st.integers(0, 65535))
records = st.builds(
    PacketRecord,
    seq=st.integers(0, 10**6),
    src=addresses,
    dst=addresses,
    size=st.integers(0, 1500),
    sent_at=st.floats(0.0, 1e4),
    fate=st.sampled_from(Fate),
    arrived_at=st.none() | st.floats(0.0, 1e4),
    duplicate=st.booleans(),
)


def _csv(items: list[PacketRecord]) -> bytes:
    trace = Trace()
    for item in items:
        trace.record(item)
    return trace.to_bytes()


texts = st.one_of(
    st.text(max_size=300),
    fuzz_bytes(st.lists(records, max_size=4).map(_csv), max_size=300).map(
        lambda b: b.decode("utf-8", "replace")
    ),
)


@FUZZ
@given(texts)
def test_trace_from_csv_raises_value_error_only(text: str) -> None:
    with contextlib.suppress(ValueError):
        Trace.from_csv(text)
