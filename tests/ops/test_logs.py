"""`lagless.io.logs`: JSON lines with ts, level, logger, event and fields; text stays human."""

from __future__ import annotations

import datetime as dt
import io
import json
import logging
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lagless.errors import ConfigError
from lagless.io.logs import EventLog, JsonLineFormatter, check_log_format, install_json_logging


def test_text_mode_prints_the_human_line_and_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said: list[str] = []
    log = EventLog("lagless.test", "text", said.append)
    with caplog.at_level(logging.DEBUG, logger="lagless"):
        log.info("client_connected", "client 1 connected", client=1)
    assert said == ["client 1 connected"]
    assert not log.json
    assert caplog.records == []


def test_json_mode_writes_one_object_per_line_with_the_fields() -> None:
    out = io.StringIO()
    before = list(logging.getLogger("lagless").handlers)
    remove = install_json_logging(lambda: out)
    try:
        log = EventLog("lagless.test", "json", lambda _line: pytest.fail("no human line"))
        log.info(
            "client_disconnected",
            "client 3 disconnected (timed_out)",
            client=3,
            address="127.0.0.1:5000",
            reason="timed_out",
        )
        log.warning("client_violation", "bad", client=4, level="clash", where={1, 2})
        logging.getLogger("lagless.transport").info("plain %s", "record")
    finally:
        remove()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    first, second, third = (json.loads(line) for line in lines)
    assert first["event"] == "client_disconnected"
    assert first["level"] == "info"
    assert first["logger"] == "lagless.test"
    assert first["message"] == "client 3 disconnected (timed_out)"
    assert (first["client"], first["address"], first["reason"]) == (
        3,
        "127.0.0.1:5000",
        "timed_out",
    )
    stamp = dt.datetime.strptime(first["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    assert abs((dt.datetime.now(dt.UTC) - stamp).total_seconds()) < 60
    assert second["level"] == "warning"
    assert second["field_level"] == "clash"  # a field never overwrites a fixed key
    assert second["where"] == "{1, 2}"  # what JSON cannot hold is written as text
    assert (third["event"], third["logger"], third["message"]) == (
        "log",
        "lagless.transport",
        "plain record",
    )
    assert logging.getLogger("lagless").handlers == before  # removed again


def test_exceptions_carry_their_traceback() -> None:
    try:
        raise ValueError("boom")
    except ValueError:
        record = logging.getLogger("lagless.x").makeRecord(
            "lagless.x", logging.ERROR, __file__, 1, "failed", (), sys.exc_info()
        )
    line = json.loads(JsonLineFormatter().format(record))
    assert line["level"] == "error"
    assert "ValueError: boom" in line["exc"]


KEYS = st.text(max_size=10).filter(lambda key: not key.startswith("field_"))


@given(st.dictionaries(KEYS, st.one_of(st.text(), st.integers(), st.none())))
def test_any_fields_give_one_parseable_line(fields: dict[str, object]) -> None:
    record = logging.makeLogRecord(
        {"name": "lagless.f", "msg": "m", "levelno": 20, "levelname": "INFO"}
    )
    record.lagless_fields = fields
    text = JsonLineFormatter().format(record)
    assert "\n" not in text
    line = json.loads(text)
    for key, value in fields.items():
        reserved = key in {"ts", "level", "logger", "event", "message", "exc"}
        assert line[f"field_{key}" if reserved else key] == value


def test_log_format_must_be_text_or_json() -> None:
    assert check_log_format("json") == "json"
    assert check_log_format("text") == "text"
    with pytest.raises(ConfigError, match="--log-format must be one of text, json, got 'xml'"):
        check_log_format("xml")
