"""netcode address codec: IPv4/IPv6 endpoints as they appear inside connect tokens.

Implements netcode-1.02 spec §3 (address encoding) and the string forms of §4.4. Decisions:

* An :data:`~lagless._types.Address` is ``(host, port)`` with a numeric host; hosts are normalised
  to Python's canonical text (``"::1"``, never ``"0:0::1"``), so two addresses are equal exactly
  when netcode's byte comparison says so (``test_netcode_codecs.py::test_canonical_hosts``).
* IPv4-mapped IPv6 hosts stay IPv6 and never equal their IPv4 form, as in the reference
  (``test_netcode_codecs.py::test_mapped_ipv6_is_not_ipv4``).
"""

from __future__ import annotations

import ipaddress
import struct
from typing import Final

from lagless._types import Address
from lagless.errors import LocalProtocolError

ADDRESS_TYPE_IPV4: Final = 1
"""Address type byte of an IPv4 endpoint (7 bytes in all)."""
ADDRESS_TYPE_IPV6: Final = 2
"""Address type byte of an IPv6 endpoint (19 bytes in all)."""

_IPV4: Final = struct.Struct("<B4sH")
_IPV6: Final = struct.Struct("<B8HH")


class AddressDecodeError(ValueError):
    """Bytes that do not hold a netcode address (unknown type byte or truncated body)."""


def normalize_address(address: Address) -> Address:
    """Return ``address`` with its host in canonical numeric form.

    Args:
        address: ``(host, port)`` with a numeric IPv4 or IPv6 host and a port in [0, 65535].

    Returns:
        The same endpoint with the host as ``ipaddress`` prints it.

    Raises:
        LocalProtocolError: the host is not a numeric IP address or the port is out of range.
    """
    host, port = address
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        raise LocalProtocolError(
            f"address host must be a numeric IPv4/IPv6 address, got {host!r}"
        ) from None
    if not 0 <= port <= 0xFFFF:
        raise LocalProtocolError(f"address port must be in [0, 65535], got {port}")
    return (str(ip), port)


def encode_address(address: Address) -> bytes:
    """Encode an endpoint as netcode's type byte + body (spec §3).

    IPv4 octets go in dotted order; each of the 8 IPv6 groups is a little-endian uint16; the port
    is a little-endian uint16.

    Args:
        address: ``(host, port)`` with a numeric host.

    Returns:
        7 bytes for IPv4, 19 bytes for IPv6.

    Raises:
        LocalProtocolError: the host is not numeric or the port is out of range.
    """
    host, port = normalize_address(address)
    ip = ipaddress.ip_address(host)
    if ip.version == 4:
        return _IPV4.pack(ADDRESS_TYPE_IPV4, ip.packed, port)
    groups = struct.unpack(">8H", ip.packed)
    return _IPV6.pack(ADDRESS_TYPE_IPV6, *groups, port)


def decode_address(data: bytes, offset: int) -> tuple[Address, int]:
    """Decode one address at ``offset`` (spec §3).

    Args:
        data: the buffer.
        offset: index of the type byte.

    Returns:
        The endpoint and the offset just past it.

    Raises:
        AddressDecodeError: the type byte is not 1 or 2, or the buffer is too short.
    """
    if offset >= len(data):
        raise AddressDecodeError("address type byte missing")
    kind = data[offset]
    if kind == ADDRESS_TYPE_IPV4:
        end = offset + _IPV4.size
        if end > len(data):
            raise AddressDecodeError("truncated IPv4 address")
        _, raw, port = _IPV4.unpack_from(data, offset)
        return (str(ipaddress.IPv4Address(raw)), port), end
    if kind == ADDRESS_TYPE_IPV6:
        end = offset + _IPV6.size
        if end > len(data):
            raise AddressDecodeError("truncated IPv6 address")
        fields = _IPV6.unpack_from(data, offset)
        packed = struct.pack(">8H", *fields[1:9])
        return (str(ipaddress.IPv6Address(packed)), fields[9]), end
    raise AddressDecodeError(f"address type must be 1 or 2, got {kind}")


def parse_address(text: str) -> Address:
    """Parse netcode's address strings: ``a.b.c.d[:port]``, ``[v6]:port`` or a bare v6 host.

    A missing port means port 0, as in the reference (spec §4.4).

    Args:
        text: the address string.

    Returns:
        The normalised endpoint.

    Raises:
        LocalProtocolError: the text is not an address of one of those forms.
    """
    text = text.strip()
    host, port_text = text, ""
    if text.startswith("["):
        close = text.find("]")
        if close < 0:
            raise LocalProtocolError(f"address {text!r} has '[' without ']'")
        host, rest = text[1:close], text[close + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise LocalProtocolError(f"address {text!r}: expected ':port' after ']'")
            port_text = rest[1:]
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    try:
        port = int(port_text) if port_text else 0
    except ValueError:
        raise LocalProtocolError(f"address {text!r}: port must be an integer") from None
    return normalize_address((host, port))


def format_address(address: Address) -> str:
    """Format an endpoint as ``a.b.c.d:port`` or ``[v6]:port`` (inverse of :func:`parse_address`).

    Args:
        address: the endpoint.

    Returns:
        The text form.
    """
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
