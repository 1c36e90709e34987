"""Structured logs for the servers: JSON lines, or the human-readable lines they always printed.

Implements the logging half of issue 16 part 3 ("Operations"). A server reports what happens
(a client connected, a client left and why, the server is shutting down) through an `EventLog`;
``--log-format text`` (the default) prints the same human line as before, ``--log-format json``
turns every report, and every record of the ``lagless`` loggers (the transport's warnings, the
driver's errors), into one JSON object per line.

A JSON line holds ``ts`` (UTC, ISO 8601 with milliseconds and ``Z``), ``level`` (lower case),
``logger``, ``event`` (a short snake_case name such as ``client_connected``; ``log`` for records
that did not name one), ``message`` (the human line) and the event's fields at the top level
(``client``, ``address``, ``reason``, ...). A field whose name collides with one of those keys
is written as ``field_<name>``; values JSON cannot hold are written as their ``str``; an
exception's traceback goes into ``exc``.

Decisions:

* JSON lines go to the stream the human lines went to (stdout), one ``write`` and flush per line,
  so a pipe or a log shipper sees whole lines as they happen.
* In text mode nothing is installed on the ``lagless`` loggers: their records go where they
  always went (Python's last-resort handler on stderr for warnings and above).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from collections.abc import Callable, Mapping
from typing import Final, Literal, TextIO

from lagless.errors import ConfigError

__all__ = [
    "LOG_FORMATS",
    "EventLog",
    "JsonLineFormatter",
    "LogFormat",
    "check_log_format",
    "install_json_logging",
]

LogFormat = Literal["text", "json"]
"""``text``: human lines; ``json``: one JSON object per line."""
LOG_FORMATS: Final[tuple[str, ...]] = ("text", "json")
RESERVED: Final = frozenset({"ts", "level", "logger", "event", "message", "exc"})
GENERIC_EVENT: Final = "log"  # the ``event`` of records that did not name one
_EVENT_ATTR: Final = "lagless_event"
_FIELDS_ATTR: Final = "lagless_fields"


def check_log_format(text: str, flag: str = "--log-format") -> LogFormat:
    """Return ``text`` as a `LogFormat`.

    Raises:
        ConfigError: naming ``flag`` and the allowed values.
    """
    if text == "text":
        return "text"
    if text == "json":
        return "json"
    raise ConfigError(f"{flag} must be one of {', '.join(LOG_FORMATS)}, got {text!r}")


class JsonLineFormatter(logging.Formatter):
    """Formats a record as one JSON object on one line (see the module docstring for keys)."""

    def format(self, record: logging.LogRecord) -> str:
        """Return the record as a JSON line without the trailing newline."""
        stamp = dt.datetime.fromtimestamp(record.created, tz=dt.UTC)
        line: dict[str, object] = {
            "ts": stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": getattr(record, _EVENT_ATTR, GENERIC_EVENT),
            "message": record.getMessage(),
        }
        fields: Mapping[str, object] = getattr(record, _FIELDS_ATTR, {})
        for key, value in fields.items():
            line[f"field_{key}" if key in RESERVED else key] = value
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False, separators=(",", ":"))


class _LineHandler(logging.Handler):
    """Writes each formatted record and a newline to a stream in one call, then flushes."""

    def __init__(self, stream: Callable[[], TextIO]) -> None:
        super().__init__()
        self._stream = stream

    def emit(self, record: logging.LogRecord) -> None:
        try:
            out = self._stream()
            out.write(self.format(record) + "\n")
            out.flush()
        except Exception:
            self.handleError(record)


def install_json_logging(
    stream: Callable[[], TextIO] = lambda: sys.stdout, level: int = logging.INFO
) -> Callable[[], None]:
    """Send every record of the ``lagless`` loggers at ``level`` or above to ``stream`` as JSON.

    Args:
        stream: returns the stream to write to (looked up per record, so a test's capture works).
        level: the lowest level written.

    Returns:
        A function that removes the handler again and restores the logger's level.
    """
    root = logging.getLogger("lagless")
    handler = _LineHandler(stream)
    handler.setFormatter(JsonLineFormatter())
    previous = (root.level, root.propagate)
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False

    def remove() -> None:
        root.removeHandler(handler)
        root.setLevel(previous[0])
        root.propagate = previous[1]

    return remove


class EventLog:
    """Where a server reports its events: a human line, or a structured log record.

    Args:
        logger: the logger name (``lagless.serve``, ``lagless.game``, ...).
        fmt: ``text`` prints the human line with ``say``; ``json`` logs a record (written as a
            JSON line once `install_json_logging` ran).
        say: prints one human line (text mode).
    """

    def __init__(self, logger: str, fmt: LogFormat, say: Callable[[str], None]) -> None:
        self._log = logging.getLogger(logger)
        self.format: LogFormat = fmt
        """The format this log writes."""
        self._say = say

    @property
    def json(self) -> bool:
        """Whether events become JSON lines."""
        return self.format == "json"

    def info(self, event: str, message: str, **fields: object) -> None:
        """Report ``event`` with the human ``message`` and its ``fields``."""
        self._emit(logging.INFO, event, message, fields)

    def warning(self, event: str, message: str, **fields: object) -> None:
        """Report ``event`` at WARNING level (a violation, a refused client)."""
        self._emit(logging.WARNING, event, message, fields)

    def _emit(self, level: int, event: str, message: str, fields: dict[str, object]) -> None:
        if self.format == "text":
            self._say(message)
            return
        self._log.log(level, "%s", message, extra={_EVENT_ATTR: event, _FIELDS_ATTR: fields})
