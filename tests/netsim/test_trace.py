from __future__ import annotations

import pytest

from lagless.netsim import Fate, PacketRecord, Trace


def make_trace() -> Trace:
    trace = Trace()
    trace.record(
        PacketRecord(
            seq=0,
            src=("a", 1),
            dst=("b", 2),
            size=10,
            sent_at=0.1,
            fate=Fate.DELIVERED,
            arrived_at=0.1 + 1 / 3,
            duplicate=False,
        )
    )
    trace.record(
        PacketRecord(
            seq=0,
            src=("a", 1),
            dst=("b", 2),
            size=10,
            sent_at=0.1,
            fate=Fate.DELIVERED,
            arrived_at=0.45,
            duplicate=True,
        )
    )
    trace.record(
        PacketRecord(
            seq=1,
            src=("a", 1),
            dst=("b,c", 2),
            size=0,
            sent_at=1e-9,
            fate=Fate.BURST_LOST,
            arrived_at=None,
            duplicate=False,
        )
    )
    return trace


def test_csv_round_trips() -> None:
    trace = make_trace()
    text = trace.to_csv()
    assert (
        text.splitlines()[0]
        == "seq,src_host,src_port,dst_host,dst_port,size,sent_at,fate,arrived_at,duplicate"
    )
    assert Trace.from_csv(text).records == trace.records
    assert trace.to_bytes() == text.encode()
    assert len(trace) == 3
    assert [r.seq for r in trace] == [0, 0, 1]


def test_bad_header_raises() -> None:
    with pytest.raises(ValueError, match="header"):
        Trace.from_csv("a,b\n")
