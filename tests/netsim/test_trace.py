from __future__ import annotations

import pytest

from lagless.netsim import Fate, PacketRecord, Trace


def _record(
    seq: int,
    dst_host: str,
    size: int,
    sent_at: float,
    fate: Fate,
    arrived_at: float | None,
    *,
    duplicate: bool,
) -> PacketRecord:
    return PacketRecord(
        seq=seq,
        src=("a", 1),
        dst=(dst_host, 2),
        size=size,
        sent_at=sent_at,
        fate=fate,
        arrived_at=arrived_at,
        duplicate=duplicate,
    )


def make_trace() -> Trace:
    trace = Trace()
    trace.record(_record(0, "b", 10, 0.1, Fate.DELIVERED, 0.1 + 1 / 3, duplicate=False))
    trace.record(_record(0, "b", 10, 0.1, Fate.DELIVERED, 0.45, duplicate=True))
    trace.record(_record(1, "b,c", 0, 1e-9, Fate.BURST_LOST, None, duplicate=False))
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
