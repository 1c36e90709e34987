"""DecodeError is the wire layer's one decode exception and fits the lagless hierarchy."""

from __future__ import annotations

import pytest

from lagless.errors import LaglessError, LocalProtocolError
from lagless.wire import DecodeError


def test_decode_error_hierarchy() -> None:
    assert issubclass(DecodeError, LaglessError)
    assert issubclass(DecodeError, ValueError)
    assert not issubclass(DecodeError, LocalProtocolError)
    with pytest.raises(ValueError, match="truncated"):
        raise DecodeError("truncated")
