"""The exceptions lagless raises to its caller (STYLE §4, first channel).

Bad bytes from the network never raise out of a protocol object: they are counted and dropped.
Only the application's own mistakes raise, and they raise one of these.
"""

from __future__ import annotations


class LaglessError(Exception):
    """Base class of every exception lagless raises on purpose."""


class LocalProtocolError(LaglessError, ValueError):
    """The application asked for something illegal (send on a closed connection, oversize message).

    The message is one line naming the field and the allowed values. The object stays usable.
    """


class ConfigError(LaglessError, ValueError):
    """A configuration value is out of range; the message names the field and the allowed values."""
