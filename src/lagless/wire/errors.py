"""The one exception every ``lagless.wire`` reader raises on bad bytes.

Implements STYLE §4 ("decoders of network bytes never raise anything but their layer's decode
error"). Decision: ``DecodeError`` subclasses both ``LaglessError`` and ``ValueError`` so callers
that catch ``ValueError`` keep working (pinned by ``tests/wire/test_errors.py``).
"""

from __future__ import annotations

from lagless.errors import LaglessError


class DecodeError(LaglessError, ValueError):
    """Bytes from the network are truncated, overlong or hold an out-of-range value.

    The only exception any ``lagless.wire`` reader raises (``Buffer.pull_*``, ``BitReader``,
    ``read_message``, ``zero_bitmap_decompress``). Protocol objects catch it at their
    ``receive_datagram`` boundary and count a drop.
    """
