"""One process of the real-UDP prediction test (``python -m tests.replication.prediction_peer``).

``server``: a transport `Server` on 127.0.0.1:0 (prints its port) running an `InputServer` for the
first client's object: it buffers the input packets arriving on `UNRELIABLE`, ticks at `TICK_HZ`
and sends a report per tick on `UNRELIABLE_SEQUENCED`; when the client disconnects it prints a
JSON summary (the order in which inputs were applied, its counters and its final state).
``client PORT``: connects, predicts `INPUTS` inputs of `moves` with a `PredictionClient` (one per
frame, each packet carrying the newest unacknowledged ones), keeps resending until every input is
acknowledged, then disconnects and prints its final prediction and statistics. Every process exits
on its own within its deadline.
"""

from __future__ import annotations

import dataclasses
import json
import struct
import sys
import time
from typing import Any

from lagless.io.endpoint import PollEndpoint
from lagless.replication.prediction import InputServer, PredictionClient, PredictionConfig
from lagless.transport import UNRELIABLE, UNRELIABLE_SEQUENCED
from lagless.transport.client import Client
from lagless.transport.events import MessageReceived
from lagless.transport.netcode_client import NetcodeClientConfig
from lagless.transport.netcode_events import ClientConnected, ClientDisconnected, Connected
from lagless.transport.netcode_server import NetcodeServerConfig
from lagless.transport.server import Server
from lagless.wire import DecodeError

PROTOCOL_ID = 0x4C41_474C_5052_4544
DEADLINE = 20.0  # seconds any process runs at most
TICK_HZ = 60.0  # server ticks (and reports) per second
FRAME_DT = 0.016  # s each client input is held for
INPUTS = 90  # inputs the client predicts
SPEED = 3.0  # m/s per unit of input
CONFIG = PredictionConfig(redundancy=4)

State = tuple[float, float]
Move = tuple[int, int]
_MOVE = struct.Struct("<bb")
_STATE = struct.Struct("<dd")


class MoveCodec:
    """Input: a velocity command in whole units per axis, two signed bytes."""

    def encode(self, value: Move) -> bytes:
        return _MOVE.pack(*value)

    def decode(self, data: bytes) -> Move:
        if len(data) != _MOVE.size:
            raise DecodeError(f"move is {_MOVE.size} bytes, got {len(data)}")
        x, y = _MOVE.unpack(data)
        return x, y


class StateCodec:
    """State: a 2D position as two float64."""

    def encode(self, value: State) -> bytes:
        return _STATE.pack(*value)

    def decode(self, data: bytes) -> State:
        if len(data) != _STATE.size:
            raise DecodeError(f"state is {_STATE.size} bytes, got {len(data)}")
        x, y = _STATE.unpack(data)
        return x, y


def step(state: State, move: Move, dt: float) -> State:
    """Move the point by ``SPEED * move * dt`` (the game code both sides run)."""
    return state[0] + SPEED * move[0] * dt, state[1] + SPEED * move[1] * dt


def moves() -> list[Move]:
    """The client's inputs: a deterministic, non-trivial walk."""
    pattern: list[Move] = [(1, 0), (1, 1), (0, 1), (-1, 1), (2, -1), (0, 0)]
    return [pattern[(i // 5) % len(pattern)] for i in range(INPUTS)]


def quantized_path() -> list[float]:
    """Return the position after every input of `moves`, stepped with whole-ms frame times."""
    state: State = (0.0, 0.0)
    for move in moves():
        state = step(state, move, round(FRAME_DT * 1000) / 1000)
    return list(state)


def _frame(endpoint: PollEndpoint[Any], timeout: float = 0.004) -> list[object]:
    endpoint.wait(timeout)
    return endpoint.pump()


def run_server() -> dict[str, Any]:
    transport = Server(
        config=NetcodeServerConfig(
            protocol_id=PROTOCOL_ID, public_address=("127.0.0.1", 0), insecure=True
        )
    )
    applied: list[int] = []
    inputs = InputServer[State, Move](
        (0.0, 0.0),
        step=step,
        input_codec=MoveCodec(),
        state_codec=StateCodec(),
        config=CONFIG,
        on_input=lambda seq, _state: applied.append(seq),
    )
    summary: dict[str, Any] = {"other_channels": 0}
    with PollEndpoint(transport, "127.0.0.1:0") as endpoint:
        print(endpoint.address[1], flush=True)
        start = time.monotonic()
        conn: int | None = None
        next_tick = 0.0
        while time.monotonic() - start < DEADLINE:
            for event in _frame(endpoint):
                if isinstance(event, ClientConnected) and conn is None:
                    conn = event.connection_id
                elif isinstance(event, ClientDisconnected) and event.connection_id == conn:
                    summary["ended"] = "client_disconnected"
                elif isinstance(event, MessageReceived):
                    if event.channel == UNRELIABLE:
                        inputs.receive_packet(event.payload, endpoint.now())
                    else:
                        summary["other_channels"] += 1
            if "ended" in summary:
                break
            now = endpoint.now()
            if conn is not None and now >= next_tick:
                next_tick = now + 1.0 / TICK_HZ
                inputs.tick(now)
                report = inputs.report(now)
                endpoint.call(lambda s, c=conn, r=report: s.send(c, UNRELIABLE_SEQUENCED, r))
        summary.setdefault("ended", "deadline")
        summary["applied"] = applied
        summary["state"] = list(inputs.state)
        summary["stats"] = dataclasses.asdict(inputs.statistics())
    return summary


def run_client(port: int) -> dict[str, Any]:
    transport = Client(config=NetcodeClientConfig(insecure=True))
    predictor = PredictionClient[State, Move](
        (0.0, 0.0),
        step=step,
        position=lambda s: s,
        input_codec=MoveCodec(),
        state_codec=StateCodec(),
        config=CONFIG,
    )
    summary: dict[str, Any] = {"inputs": INPUTS, "rejected_reports": 0, "max_pending": 0}
    plan = moves()
    with PollEndpoint(transport, "127.0.0.1:0") as endpoint:
        transport.connect_insecure(
            server_addresses=[("127.0.0.1", port)],
            protocol_id=PROTOCOL_ID,
            client_id=1,
            now=endpoint.now(),
        )
        start = time.monotonic()
        connected = False
        next_frame = 0.0
        while time.monotonic() - start < DEADLINE:
            for event in _frame(endpoint):
                if isinstance(event, Connected):
                    connected = True
                elif isinstance(event, MessageReceived) and event.channel == UNRELIABLE_SEQUENCED:
                    applied = predictor.receive_report(event.payload, endpoint.now())
                    summary["rejected_reports"] += not applied
            now = endpoint.now()
            if not connected or now < next_frame:
                continue
            next_frame = now + FRAME_DT
            sent = predictor.next_seq
            if sent < INPUTS:
                predictor.apply_input(plan[sent], FRAME_DT, now)
            pending = predictor.statistics().pending
            summary["max_pending"] = max(summary["max_pending"], pending)
            if sent >= INPUTS and pending == 0:
                summary["done"] = True
                break
            packet = predictor.input_packet(now)
            if packet is not None:
                endpoint.call(lambda c, p=packet: c.send(UNRELIABLE, p))
        summary["state"] = list(predictor.state)
        summary["display"] = list(predictor.display_position(endpoint.now()))
        summary["stats"] = dataclasses.asdict(predictor.statistics())
        for _ in range(10):  # let the last acks out
            _frame(endpoint)
        transport.disconnect()
        endpoint.pump()
    return summary


def main(argv: list[str]) -> None:
    result = run_server() if argv[0] == "server" else run_client(int(argv[1]))
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
