"""The browser's JavaScript agrees with the Python side: run in node on Python-made inputs.

* ``codec.mjs`` decodes snapshots, welcomes and input events made by ``lagless.physics.codec``
  to the same values (exactly: the same quantisation steps), refuses truncated and trailing-bit
  messages, and its input events and link frames are byte for byte Python's; its WebTransport
  stream deframer cuts a stream cut anywhere into the frames ``StreamDeframer`` framed.
* ``display.mjs``'s Hermite view draws the cars where ``lagless.smoothing.HermiteReceiver``
  draws them, for every display model of the demo (the ``HermiteConfig`` of each).
"""

from __future__ import annotations

import json
import math
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

from lagless.demo.arena import DISPLAY_MODELS, SNAPSHOT_FORMAT
from lagless.io.webtransport import StreamDeframer
from lagless.physics import CarState, Keys
from lagless.physics.codec import (
    CarSnapshot,
    InputEvent,
    Snapshot,
    Welcome,
    decode_message,
    encode_message,
)
from lagless.smoothing import HERMITE_LAYOUT, HermiteReceiver, KinematicState
from lagless.web.frames import LINK_VERSION, Hello, LinkMessage, Ping, Pong, encode_frame
from lagless.web.serve import page_config

STATIC = Path(__file__).resolve().parents[2] / "src" / "lagless" / "web" / "static"
NODE = shutil.which("node")


HARNESS = """
import { readFileSync } from "node:fs";
import * as codec from "STATIC/codec.mjs";
import { HermiteView } from "STATIC/display.mjs";
const job = JSON.parse(readFileSync(0, "utf8"));
const fields = codec.snapshotFields(job.format);
const hex = (s) => Uint8Array.from(s.match(/../g) ?? [], (b) => parseInt(b, 16));
const toHex = (a) => Array.from(a, (b) => b.toString(16).padStart(2, "0")).join("");
const out = {
  messages: job.messages.map((m) => codec.decodeMessage(hex(m), fields)),
  inputs: job.inputs.map(([seq, keys, t]) => toHex(codec.encodeInput(seq, keys, t))),
  frames: {
    hello: toHex(codec.helloFrame(job.hello[0], job.hello[1])),
    ping: toHex(codec.pingFrame(job.ping)),
    message: toHex(codec.messageFrame(3, hex(job.payload))),
    pong: codec.decodeFrame(hex(job.pong)),
    garbage: job.garbage.map((g) => codec.decodeFrame(hex(g))),
    prefixed: toHex(codec.lengthPrefixed(hex(job.payload))),
  },
  deframed: (() => {
    const deframer = new codec.StreamDeframer(4098);
    const frames = job.chunks.flatMap((c) => deframer.feed(hex(c)).map(toHex));
    const broken = new codec.StreamDeframer(4);
    return { frames, broken: [broken.feed(hex("0500")).length, broken.broken] };
  })(),
  views: {},
};
for (const [name, model] of Object.entries(job.models)) {
  const view = new HermiteView(model);
  view.rtt = job.rtt;
  const shown = [];
  for (const step of job.steps) {
    if (step.update) view.apply(step.update, step.now, step.serverNow);
    else shown.push(view.display(step.now));
  }
  out.views[name] = shown;
}
process.stdout.write(JSON.stringify(out));
"""


def _random_snapshot(rng: random.Random, t: float) -> Snapshot:
    cars = []
    for car_id in rng.sample(range(64), rng.randint(0, 20)):
        state = CarState(
            x=rng.uniform(-300.0, 300.0),
            y=rng.uniform(-10.0, 170.0),
            heading=rng.uniform(-10.0, 10.0),
            vx=rng.uniform(-45.0, 45.0),
            vy=rng.uniform(-45.0, 45.0),
            angular_velocity=rng.uniform(-25.0, 25.0),
            steer=rng.uniform(-1.0, 1.0),
            keys=Keys(rng.randrange(16)),
        )
        cars.append(CarSnapshot(car_id=car_id, state=state, input_seq=rng.randrange(1 << 16)))
    return Snapshot(t=t, cars=tuple(cars))


def _run_node(job: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    script = tmp_path / "harness.mjs"
    script.write_text(HARNESS.replace("STATIC", STATIC.as_uri()), encoding="utf-8")
    assert NODE is not None, "node is missing (.ci/run installs Debian's nodejs)"
    result = subprocess.run(
        [NODE, str(script)],
        input=json.dumps(job),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    out: dict[str, Any] = json.loads(result.stdout)
    return out


def _hermite_steps(rng: random.Random) -> tuple[list[dict[str, Any]], list[Any]]:
    """A car driving a curve, snapshots every 50 ms with jitter and one lost; draws between."""
    steps: list[dict[str, Any]] = []
    offset = 7.25  # server time - local time, s
    x, y, heading, speed = 20.0, 30.0, 0.3, 14.0
    now = 1.0
    for k in range(40):
        t = 0.05 * k
        heading += 0.04
        vx, vy = speed * math.cos(heading), speed * math.sin(heading)
        x, y = x + vx * 0.05, y + vy * 0.05
        now = t - offset + 0.03 + rng.uniform(0.0, 0.02)
        if k != 17:
            update = {"t": t, "x": x, "y": y, "vx": vx, "vy": vy, "heading": heading}
            steps.append({"update": update, "now": now, "serverNow": now + offset})
        for _ in range(2):
            now += rng.uniform(0.005, 0.02)
            steps.append({"now": now})
    return steps, []


def _python_views(steps: list[dict[str, Any]], rtt: float) -> dict[str, list[Any]]:
    shown: dict[str, list[Any]] = {}
    for name, config in DISPLAY_MODELS.items():
        receiver = HermiteReceiver(config.hermite(), entity_id=5)
        receiver.observe_link(rtt=rtt)
        out: list[Any] = []
        for step in steps:
            update = step.get("update")
            if update is not None:
                state = KinematicState(**update)
                payload = HERMITE_LAYOUT.encode(5, state)
                assert receiver.process_update(payload, step["now"], step["serverNow"])
            else:
                d = receiver.display(step["now"])
                out.append(None if d is None else (d.x, d.y, d.heading))
        shown[name] = out
    return shown


def test_js_agrees_with_python(tmp_path: Path) -> None:
    rng = random.Random(16)
    fmt = SNAPSHOT_FORMAT
    snapshots = [_random_snapshot(rng, rng.uniform(0.0, 1e5)) for _ in range(12)]
    messages: list[Snapshot | Welcome | InputEvent] = [
        *snapshots,
        Welcome(car_id=7),
        InputEvent(seq=65535, keys=Keys.UP | Keys.LEFT, t=123.456),
    ]
    encoded = [encode_message(m, fmt) for m in messages]
    broken = [encoded[0][:-1] if len(encoded[0]) > 12 else b"\x01", encoded[-1] + b"\x00"]
    inputs = [(rng.randrange(1 << 16), rng.randrange(16), rng.uniform(-1e6, 1e6)) for _ in range(8)]
    steps, _ = _hermite_steps(rng)
    stream = b"".join(StreamDeframer.frame(e) for e in encoded)
    cuts = sorted(rng.sample(range(1, len(stream)), 25))
    rtt = 0.08
    config = page_config()
    job = {
        "format": config["snapshot_format"],
        "messages": [e.hex() for e in encoded + broken],
        "inputs": inputs,
        "hello": [0x1A61E55D, LINK_VERSION],
        "ping": 12.5,
        "payload": "0102ff",
        "pong": encode_frame(Pong(12.5, 99.25)).hex(),
        "garbage": ["", "04", "0400", "09ffff", "02"],
        "models": config["display_models"],
        "chunks": [
            stream[a:b].hex() for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)
        ],
        "rtt": rtt,
        "steps": steps,
    }
    out = _run_node(job, tmp_path)

    decoded = out["messages"]
    for message, js in zip(messages, decoded, strict=False):
        python = decode_message(encode_message(message, fmt), fmt)
        if isinstance(python, Snapshot):
            assert js["kind"] == "snapshot"
            assert js["t"] == python.t
            assert len(js["cars"]) == len(python.cars)
            for car, jcar in zip(python.cars, js["cars"], strict=True):
                s = car.state
                assert jcar["id"] == car.car_id
                assert jcar["inputSeq"] == car.input_seq
                assert jcar["keys"] == int(s.keys)
                got = (jcar["x"], jcar["y"], jcar["heading"], jcar["vx"], jcar["vy"])
                assert got == (s.x, s.y, s.heading, s.vx, s.vy)
                assert (jcar["omega"], jcar["steer"]) == (s.angular_velocity, s.steer)
        elif isinstance(python, Welcome):
            assert js == {"kind": "welcome", "carId": python.car_id}
        else:
            assert isinstance(python, InputEvent)
            assert js == {
                "kind": "input",
                "seq": python.seq,
                "keys": int(python.keys),
                "t": python.t,
            }
    assert decoded[len(messages) :] == [None, None]

    for (seq, keys, t), js_hex in zip(inputs, out["inputs"], strict=True):
        assert bytes.fromhex(js_hex) == encode_message(
            InputEvent(seq=seq, keys=Keys(keys), t=t), fmt
        )

    frames = out["frames"]
    assert bytes.fromhex(frames["hello"]) == encode_frame(Hello(0x1A61E55D, LINK_VERSION))
    assert bytes.fromhex(frames["ping"]) == encode_frame(Ping(12.5))
    assert bytes.fromhex(frames["message"]) == encode_frame(LinkMessage(3, b"\x01\x02\xff"))
    assert frames["pong"] == {"kind": "pong", "clientTime": 12.5, "serverTime": 99.25}
    assert frames["garbage"] == [None] * 5
    assert bytes.fromhex(frames["prefixed"]) == StreamDeframer.frame(b"\x01\x02\xff")
    assert [bytes.fromhex(f) for f in out["deframed"]["frames"]] == encoded
    assert out["deframed"]["broken"] == [0, True]

    python_views = _python_views(steps, rtt)
    for name, expected in python_views.items():
        js_shown = out["views"][name]
        assert len(js_shown) == len(expected) > 0
        drawn = 0
        for py, js in zip(expected, js_shown, strict=True):
            assert (py is None) == (js is None)
            if py is None:
                continue
            drawn += 1
            # the Python view quantises its input to 1e-4 m (HERMITE_LAYOUT); JS does not
            assert math.hypot(py[0] - js["x"], py[1] - js["y"]) < 2e-3, name
            assert abs(math.remainder(py[2] - js["heading"], 2 * math.pi)) < 2e-3, name
        assert drawn > 40, name
