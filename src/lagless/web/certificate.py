"""A short-lived self-signed TLS certificate for WebTransport, pinned by its SHA-256 in the page.

Browsers open a WebTransport session to a server whose certificate no authority signed when the
page passes the certificate's SHA-256 in ``serverCertificateHashes``; the W3C WebTransport spec
allows this only for an ECDSA P-256 (secp256r1) certificate valid for at most 14 days. A
``lagless web`` server makes one at start (``make_certificate``) and serves the hash in
``/config.json``.

Decisions:
    * Validity: from an hour before ``now`` (clock skew) to 13 days after: inside 14 days.
    * The key comes from the operating system's CSPRNG (``cryptography``), not from an injected
      generator: a TLS key must never be reproducible from a seed.
    * Subject alternative names: ``localhost`` and the given host names or IP literals; with a
      pinned hash the browser does not check the name, but other clients may.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["VALIDITY", "PinnedCertificate", "make_certificate"]

VALIDITY = datetime.timedelta(days=13)
"""How long a certificate lasts (the spec's limit is 14 days)."""
_SKEW = datetime.timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class PinnedCertificate:
    """A certificate, its key, and the hash a page pins it by."""

    certificate: x509.Certificate
    """The self-signed certificate."""
    private_key: ec.EllipticCurvePrivateKey
    """Its P-256 key."""
    sha256: bytes
    """SHA-256 of the certificate's DER bytes (``serverCertificateHashes``)."""


def make_certificate(now: float, hosts: Sequence[str] = ()) -> PinnedCertificate:
    """Return a new certificate valid from ``now - 1 h`` for 13 days.

    Args:
        now: Unix time, s (the wall clock: certificates are dated in it).
        hosts: Host names or IP literals to name besides ``localhost``.
    """
    key = ec.generate_private_key(ec.SECP256R1())
    start = datetime.datetime.fromtimestamp(now, datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "lagless web")])
    alternatives: list[x509.GeneralName] = [x509.DNSName("localhost")]
    for host in hosts:
        try:
            alternatives.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alternatives.append(x509.DNSName(host))
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start - _SKEW)
        .not_valid_after(start + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alternatives), critical=False)
        .sign(key, hashes.SHA256())
    )
    der = certificate.public_bytes(serialization.Encoding.DER)
    return PinnedCertificate(certificate, key, hashlib.sha256(der).digest())
