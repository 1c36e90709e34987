"""Helpers of the operations tests: a ``lagless`` server process that logs JSON lines, and a
scrape of its metrics endpoint parsed into samples."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

ROOT = Path(__file__).resolve().parents[2]
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass
class JsonServer:
    """A ``python -m lagless ... --log-format json`` process; its stdout parsed line by line."""

    process: subprocess.Popen[str]
    records: list[dict[str, object]] = field(default_factory=list)

    def wait_event(self, event: str, timeout: float = 20.0) -> dict[str, object]:
        """Read stdout until a record with ``event`` appears (or one seen already); return it."""
        for record in self.records:
            if record["event"] == event:
                return record
        stream = self.process.stdout
        assert stream is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = stream.readline()
            if not line:
                break
            record = json.loads(line)  # every stdout line must be one JSON object
            self.records.append(record)
            if record["event"] == event:
                return record
        raise AssertionError(f"no {event!r} record in {self.records}")

    def finish(self, timeout: float = 10.0) -> tuple[int, str]:
        """Wait for the exit; parse the rest of stdout; return the status and stderr."""
        out, err = self.process.communicate(timeout=timeout)
        self.records.extend(json.loads(line) for line in out.splitlines())
        return self.process.returncode, err

    def events(self, event: str) -> list[dict[str, object]]:
        """The records seen so far with ``event``."""
        return [record for record in self.records if record["event"] == event]


def scrape(address: str) -> Samples:
    """GET ``http://ADDRESS/metrics`` (what ``curl`` does) and return every sample by name and
    labels."""
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
        assert response.status == 200
        text = response.read().decode("utf-8")
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return samples
