"""Wrapping sequence-number arithmetic (serial-number comparison) for any width 1..64 bits.

Implements spec 004 §4.2 (16-bit packet sequence numbers with wrap-around) and the RFC 1982-style
comparison used by netcode/reliable. Decisions:

* Widths from 1 to 64 bits are accepted; anything else raises ``LocalProtocolError``
  (``test_seq.py::test_bad_width_rejected``).
* ``seq_diff(a, b)`` is the signed shortest distance ``a - b`` in ``(-2^(bits-1), 2^(bits-1)]``:
  the exact half-way point resolves to the positive value, so ``seq_greater(a, b)`` is
  ``seq_diff(a, b) > 0`` and, at half-way, both ``seq_greater(a, b)`` and ``seq_greater(b, a)`` are
  true, exactly as the classic ``((a > b) and (a - b <= half)) or ((a < b) and (b - a > half))``
  formula gives (``test_seq.py::test_half_way_point``).
* Inputs are taken modulo ``2^bits`` (so ``-1`` means ``2^bits - 1``) rather than rejected; the
  result of ``seq_add`` is always in ``[0, 2^bits)`` (``test_seq.py::test_inputs_reduced``).
"""

from __future__ import annotations

from lagless.errors import LocalProtocolError

__all__ = ["seq_add", "seq_diff", "seq_greater", "seq_less"]


def _check_bits(bits: int) -> int:
    if not 1 <= bits <= 64:
        raise LocalProtocolError(f"bits must be in [1, 64], got {bits}")
    return (1 << bits) - 1


def seq_diff(a: int, b: int, bits: int = 16) -> int:
    """Return the signed shortest distance ``a - b`` on a ``bits``-wide wrapping counter.

    Args:
        a: Sequence number (taken modulo ``2**bits``).
        b: Sequence number (taken modulo ``2**bits``).
        bits: Counter width in bits, 1..64.

    Returns:
        The distance in ``(-2**(bits-1), 2**(bits-1)]``.

    Raises:
        LocalProtocolError: ``bits`` outside 1..64.

    Examples:
        >>> seq_diff(1, 65535)
        2
        >>> seq_diff(65535, 1)
        -2
        >>> seq_diff(0, 32768)
        32768
    """
    mask = _check_bits(bits)
    d = (a - b) & mask
    half = 1 << (bits - 1)
    return d - (mask + 1) if d > half else d


def seq_greater(a: int, b: int, bits: int = 16) -> bool:
    """Return True when ``a`` is newer than ``b`` on a ``bits``-wide wrapping counter.

    Args:
        a: Sequence number.
        b: Sequence number.
        bits: Counter width in bits, 1..64.

    Returns:
        ``seq_diff(a, b, bits) > 0``.

    Examples:
        >>> seq_greater(0, 65535)
        True
        >>> seq_greater(65535, 0)
        False
    """
    return seq_diff(a, b, bits) > 0


def seq_less(a: int, b: int, bits: int = 16) -> bool:
    """Return True when ``a`` is older than ``b`` on a ``bits``-wide wrapping counter.

    Args:
        a: Sequence number.
        b: Sequence number.
        bits: Counter width in bits, 1..64.

    Returns:
        ``seq_greater(b, a, bits)``.

    Examples:
        >>> seq_less(65535, 0)
        True
    """
    return seq_greater(b, a, bits)


def seq_add(a: int, n: int, bits: int = 16) -> int:
    """Return ``a + n`` wrapped to ``[0, 2**bits)``.

    Args:
        a: Sequence number.
        n: Signed increment.
        bits: Counter width in bits, 1..64.

    Returns:
        The wrapped sum.

    Examples:
        >>> seq_add(65535, 1)
        0
        >>> seq_add(0, -1, bits=8)
        255
    """
    return (a + n) & _check_bits(bits)
