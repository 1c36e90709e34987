"""WebTransport's pieces: the stream deframer (fuzzed), the certificate, the offer in the page."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import json
import urllib.request

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st

from lagless.io.webtransport import StreamDeframer
from lagless.web.certificate import VALIDITY, make_certificate
from lagless.web.serve import WT_PATH, open_web_match

NOW = 1_790_000_000.0  # Unix s


@given(st.lists(st.binary(min_size=1, max_size=300), max_size=20), st.data())
def test_deframer_returns_the_frames_however_the_bytes_are_cut(
    frames: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(StreamDeframer.frame(f) for f in frames)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=10)))
    deframer = StreamDeframer(max_frame=300)
    out: list[bytes] = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        out.extend(deframer.feed(stream[a:b]))
    assert out == frames
    assert not deframer.broken


@given(st.binary(max_size=2000))
def test_deframer_never_raises_and_stays_bounded(data: bytes) -> None:
    deframer = StreamDeframer(max_frame=64)
    frames = deframer.feed(data)
    assert all(1 <= len(f) <= 64 for f in frames)
    assert sum(len(f) + 2 for f in frames) <= len(data)


def test_deframer_breaks_on_a_bad_length() -> None:
    deframer = StreamDeframer(max_frame=10)
    assert deframer.feed(b"\x02\x00ab\x0b\x00") == [b"ab"]
    assert deframer.broken
    assert deframer.feed(b"\x01\x00x") == []
    zero = StreamDeframer(max_frame=10)
    assert zero.feed(b"\x00\x00") == []
    assert zero.broken


def test_certificate_fits_the_pinning_rules() -> None:
    pinned = make_certificate(NOW, hosts=["127.0.0.1", "arena.example"])
    cert = pinned.certificate
    assert isinstance(pinned.private_key, ec.EllipticCurvePrivateKey)
    assert pinned.private_key.curve.name == "secp256r1"
    start = datetime.datetime.fromtimestamp(NOW, datetime.UTC)
    assert cert.not_valid_before_utc <= start <= cert.not_valid_after_utc
    assert cert.not_valid_after_utc - cert.not_valid_before_utc <= datetime.timedelta(days=14)
    assert cert.not_valid_after_utc - start == VALIDITY
    der = cert.public_bytes(serialization.Encoding.DER)
    assert pinned.sha256 == hashlib.sha256(der).digest()
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost", "arena.example"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    assert make_certificate(NOW).sha256 != pinned.sha256  # a new key every time


def test_the_page_is_offered_webtransport() -> None:
    async def main() -> None:
        local = ("127.0.0.1", 0)
        async with open_web_match(local, local, bots=0, seed=1, webtransport=local) as servers:
            assert servers.webtransport is not None
            url = f"http://127.0.0.1:{servers.web.address[1]}/config.json"
            body = await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
            offer = json.loads(body)["webtransport"]
            assert offer["port"] == servers.webtransport[1] != 0
            assert offer["path"] == WT_PATH
            assert len(offer["cert_sha256"]) == 32
            assert all(0 <= b <= 255 for b in offer["cert_sha256"])

    asyncio.run(main())
