"""Experiment ``replication/prediction``: client-side prediction vs a waiting client, over netsim.

Implements issue 13's ``replication/prediction`` for ``lagless.replication.prediction`` (spec 000
§2.10): one player steers an entity (the world's own ``Entity.step`` is the game's ``step``) with
a recorded input per 20-ms frame; inputs travel to the server in redundant input packets and the
server reports its state every tick, both over a simulated link (``lagless.netsim``) with a given
RTT, 10 % jitter and loss. The server also pushes the entity now and then (a velocity kick the
client cannot foresee), which is what makes predictions wrong. Two displays run on the same
packets: **predicted** (``PredictionClient.display_position``: own inputs at once, corrections
blended) and **waiting** (the position of the newest server report, as a client without prediction
shows it). Per RTT and loss: the input-to-display delay, the display error and the mispredictions.

Decisions:
    * The display error at frame ``k`` is the distance between what the player sees and the
      server's authoritative position after the same inputs ``0..k`` (the state the server reaches
      once input ``k`` is applied), so both displays are judged against the same truth: the
      predicted one errs only while a push is not yet known, the waiting one by everything in
      flight. Frames whose input the server skipped or never applied are left out.
    * Input-to-display delay of input ``i``: from its frame to the first frame that draws a state
      including it (predicted: the same frame, 0 ms; waiting: the first frame after a report
      acknowledging it arrived). Inputs never shown are left out.
    * ``pending_inputs_mean`` is the mean number of unacknowledged inputs just after each frame's
      input; spec 000 §2.10's example (50 fps, 100 ms RTT) has 5, the reference.
    * Jitter is uniform in ``[0, 0.1 x RTT/2]`` per direction; loss is independent per datagram,
      both directions. One network seed per (RTT, loss) cell; the inputs and pushes are the same in
      every cell.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Final

import numpy as np

from lagless._types import Address
from lagless.errors import ConfigError
from lagless.lab.registry import ExperimentSpec, register
from lagless.lab.result import JSONScalar, JSONValue, Result
from lagless.lab.runner import ExperimentContext
from lagless.netsim import JitterConfig, LinkConfig, Network, Scheduler
from lagless.replication.prediction import (
    BlendConfig,
    InputServer,
    PredictionClient,
    PredictionConfig,
    decode_server_report,
    widen_seq,
)
from lagless.wire import DecodeError
from lagless.world import PRESETS, Controls, Entity, EntityState, Keys, Preset, drive

__all__ = [
    "SPEC",
    "Cell",
    "KeysCodec",
    "Scenario",
    "StateCodec",
    "entity_step",
    "prediction_experiment",
    "run_cell",
]

_STATE: Final = struct.Struct("<8d")
_KEYS: Final = struct.Struct("<B")
_PORT: Final = 4000
JITTER_FRACTION: Final = 0.1  # uniform jitter width as a fraction of the one-way delay
_REFERENCE: Final = {"pending_inputs_mean_rtt100_loss0": 5.0}  # spec 000 §2.10 example


class KeysCodec:
    """Encodes an input (held ``Keys``) as one byte."""

    def encode(self, value: Keys) -> bytes:
        """Return the byte of ``value``."""
        return _KEYS.pack(int(value))

    def decode(self, data: bytes) -> Keys:
        """Return the keys of ``data``; ``DecodeError`` if not one valid byte."""
        if len(data) != _KEYS.size or data[0] > 127:
            raise DecodeError("keys are one byte in [0, 127]")
        return Keys(data[0])


class StateCodec:
    """Encodes an ``EntityState`` as eight float64 (64 bytes)."""

    def encode(self, value: EntityState) -> bytes:
        """Return the 64 bytes of ``value``."""
        v = value
        return _STATE.pack(v.x, v.y, v.heading, v.vx, v.vy, v.ax, v.ay, v.turn_rate)

    def decode(self, data: bytes) -> EntityState:
        """Return the state of ``data``; ``DecodeError`` if not 64 bytes."""
        if len(data) != _STATE.size:
            raise DecodeError(f"state is {_STATE.size} bytes, got {len(data)}")
        x, y, heading, vx, vy, ax, ay, turn = _STATE.unpack(data)
        return EntityState(x=x, y=y, heading=heading, vx=vx, vy=vy, ax=ax, ay=ay, turn_rate=turn)


Step = Callable[[EntityState, Keys, float], EntityState]


def entity_step(preset: Preset) -> Step:
    """Return the game's ``step(state, keys, dt)``: ``lagless.world.Entity.step`` as a function.

    Args:
        preset: The entity's genre preset.
    """

    def step(state: EntityState, keys: Keys, dt: float) -> EntityState:
        entity = Entity.from_state(preset, state)
        entity.step(dt, Controls(keys=keys))
        return entity.state()

    return step


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """One (RTT, loss) condition of the sweep."""

    rtt: float
    """Round-trip time (s): twice the one-way minimum delay."""
    loss: float
    """Loss probability per datagram, both directions."""
    seed: int
    """Root seed of the simulated network."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Scenario:
    """What every cell replays: inputs, pushes, frame time, preset and prediction settings."""

    keys: tuple[Keys, ...]
    """One input per frame."""
    pushes: tuple[tuple[float, float, float], ...]
    """Server-side kicks ``(time s, dvx m/s, dvy m/s)``, in time order."""
    tick: float
    """Frame time and server tick (s)."""
    preset: Preset
    """The entity's preset."""
    config: PredictionConfig
    """Prediction settings."""


@dataclass(slots=True)
class _Waiting:
    """What the waiting (non-predicting) client shows: the newest report's state."""

    tick: int = -1
    state: EntityState | None = None
    last: int = -1


def _float_cell(row: Mapping[str, JSONScalar], column: str) -> float | None:
    value = row[column]
    return float(value) if isinstance(value, int | float) else None


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _p95(values: list[float]) -> float | None:
    return float(np.percentile(values, 95)) if values else None


def run_cell(scenario: Scenario, cell: Cell) -> dict[str, JSONScalar]:
    """Simulate one (RTT, loss) cell and measure both displays.

    Args:
        scenario: Inputs, pushes and settings.
        cell: The network condition.

    Returns:
        One row of table ``runs`` (delays in ms, errors in m).
    """
    tick, config = scenario.tick, scenario.config
    step, codec = entity_step(scenario.preset), StateCodec()
    authoritative: dict[int, EntityState] = {}
    client = PredictionClient[EntityState, Keys](
        EntityState(),
        step=step,
        position=lambda s: (s.x, s.y),
        input_codec=KeysCodec(),
        state_codec=codec,
        config=config,
    )
    server = InputServer[EntityState, Keys](
        EntityState(),
        step=step,
        input_codec=KeysCodec(),
        state_codec=codec,
        config=config,
        on_input=lambda seq, state: authoritative.__setitem__(seq, state),
    )
    scheduler = Scheduler()
    network = Network(scheduler, seed=cell.seed)
    one_way = cell.rtt / 2.0
    jitter = JITTER_FRACTION * one_way
    link = LinkConfig(
        latency=one_way,
        jitter=JitterConfig(kind="uniform", amount=jitter) if jitter > 0 else JitterConfig(),
        loss=cell.loss,
    )
    client_host, server_host = network.add_host("client"), network.add_host("server")
    network.set_link(client_host, server_host, link)
    network.set_link(server_host, client_host, link)
    waiting = _Waiting()

    def on_report(data: bytes, addr: Address, now: float) -> None:
        client.receive_report(data, now)
        report = decode_server_report(data, max_state_bytes=config.max_state_bytes)
        if report.tick > waiting.tick and report.last_input is not None:
            waiting.tick, waiting.state = report.tick, codec.decode(report.state)
            waiting.last = widen_seq(report.last_input, client.next_seq - 1)

    def on_inputs(data: bytes, addr: Address, now: float) -> None:
        server.receive_packet(data, now)

    client_addr = client_host.bind(_PORT, on_report)
    server_addr = server_host.bind(_PORT, on_inputs)
    applied_at: list[float] = []
    shown: dict[str, list[tuple[int, float, float]]] = {"predicted": [], "waiting": []}
    delays: dict[str, list[float]] = {"predicted": [], "waiting": []}
    pending: list[float] = []
    pushes = list(scenario.pushes)

    def client_frame(k: int) -> None:
        now = scheduler.now
        client.apply_input(scenario.keys[k], tick, now)
        applied_at.append(now)
        pending.append(float(client.statistics().pending))
        packet = client.input_packet(now)
        if packet is not None:
            client_host.send(packet, client_addr, server_addr)
        x, y = client.display_position(now)
        shown["predicted"].append((k, x, y))
        if waiting.state is not None:
            shown["waiting"].append((k, waiting.state.x, waiting.state.y))
        for name, last in (("predicted", client.next_seq - 1), ("waiting", waiting.last)):
            seen = delays[name]
            while len(seen) <= last:
                seen.append(now - applied_at[len(seen)])
        scheduler.call_at(now, server_tick, k)

    def server_tick(k: int) -> None:
        now = scheduler.now
        while pushes and pushes[0][0] <= now:
            _, dvx, dvy = pushes.pop(0)
            s = server.state
            server.state = replace(s, vx=s.vx + dvx, vy=s.vy + dvy)
        server.tick(now)
        server_host.send(server.report(now), server_addr, client_addr)
        if k + 1 < len(scenario.keys):
            scheduler.call_at(now + tick, client_frame, k + 1)

    scheduler.call_at(0.0, client_frame, 0)
    scheduler.run(until=len(scenario.keys) * tick + 2.0 * cell.rtt + 1.0)
    stats, served = client.statistics(), server.statistics()
    row: dict[str, JSONScalar] = {"rtt_ms": round(cell.rtt * 1000.0, 6), "loss": cell.loss}
    errors = {}
    for name, samples in shown.items():
        errors[name] = [
            math.hypot(x - authoritative[k].x, y - authoritative[k].y)
            for k, x, y in samples
            if k in authoritative
        ]
        ms = [1000.0 * d for seq, d in enumerate(delays[name]) if seq in authoritative]
        row[f"input_delay_ms_{name}_mean"] = _mean(ms)
        row[f"input_delay_ms_{name}_p95"] = _p95(ms)
    duration = len(scenario.keys) * tick
    return row | {
        "display_error_m_predicted_mean": _mean(errors["predicted"]),
        "display_error_m_predicted_p95": _p95(errors["predicted"]),
        "display_error_m_waiting_mean": _mean(errors["waiting"]),
        "display_error_m_waiting_p95": _p95(errors["waiting"]),
        "mispredictions": stats.mispredictions,
        "mispredictions_per_s": stats.mispredictions / duration,
        "correction_m_mean": stats.misprediction_error_mean,
        "correction_m_max": stats.misprediction_error_max,
        "pending_inputs_mean": _mean(pending),
        "replayed_per_report": stats.replayed / stats.reports if stats.reports else None,
        "reports_applied": stats.reports,
        "inputs_applied": served.inputs_applied,
        "inputs_skipped": served.inputs_skipped,
    }


def _numbers(params: Mapping[str, JSONValue], key: str, *, upper: float) -> list[float]:
    value = params.get(key)
    if (
        not isinstance(value, list)
        or not value
        or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= upper
            for v in value
        )
    ):
        raise ConfigError(
            f"{key} must be a non-empty list of numbers in [0, {upper}], got {value!r}"
        )
    return [float(v) for v in value]  # type: ignore[arg-type]


def _positive(params: Mapping[str, JSONValue], key: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"{key} must be a number > 0, got {value!r}")
    return float(value)


def _pushes(
    rng: np.random.Generator, *, duration: float, rate: float, speed: float
) -> tuple[tuple[float, float, float], ...]:
    pushes, t = [], float(rng.exponential(1.0 / rate))
    while t < duration:
        angle = float(rng.uniform(0.0, 2.0 * math.pi))
        pushes.append((t, speed * math.cos(angle), speed * math.sin(angle)))
        t += float(rng.exponential(1.0 / rate))
    return tuple(pushes)


def prediction_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """Sweep RTT x loss; measure input delay, display error and mispredictions of both displays.

    Args:
        ctx: The run's context.
        params: ``duration`` (s), ``tick`` (s), ``rtts_ms``, ``losses``, ``redundancy``,
            ``pushes_per_s``, ``push_speed`` (m/s), ``blend_ms``, ``genre``.

    Returns:
        Table ``runs`` (one row per cell), headline metrics at 100 ms RTT without loss and the
        worst cells, plots ``input-delay`` and ``display-error`` (first loss) and
        ``misprediction-error`` (every loss).
    """
    duration, tick = _positive(params, "duration"), _positive(params, "tick")
    rtts = [ms / 1000.0 for ms in _numbers(params, "rtts_ms", upper=5000.0)]
    losses = _numbers(params, "losses", upper=0.9)
    genre = params.get("genre")
    if genre not in PRESETS:
        raise ConfigError(f"genre must be one of {sorted(PRESETS)}, got {genre!r}")
    redundancy = int(_positive(params, "redundancy"))
    blend = _positive(params, "blend_ms") / 1000.0
    recording = drive(
        str(genre), duration=duration, rng=ctx.random("prediction.inputs"), frame_time=tick
    )
    scenario = Scenario(
        keys=tuple(frame.keys for frame in recording.frames),
        pushes=_pushes(
            ctx.rng("prediction.pushes"),
            duration=duration,
            rate=_positive(params, "pushes_per_s"),
            speed=_positive(params, "push_speed"),
        ),
        tick=tick,
        preset=PRESETS[str(genre)],
        config=PredictionConfig(
            redundancy=redundancy, max_state_bytes=_STATE.size, blend=BlendConfig(time=blend)
        ),
    )
    cells = [
        Cell(rtt=rtt, loss=loss, seed=ctx.seed_for(f"prediction.rtt{rtt}.loss{loss}"))
        for loss in losses
        for rtt in rtts
    ]
    rows = [run_cell(scenario, cell) for cell in ctx.track(cells, description="prediction cells")]
    ctx.add_table("runs", rows)
    headline = next((r for r in rows if r["rtt_ms"] == 100.0 and r["loss"] == 0.0), None)
    for column in (
        "pending_inputs_mean",
        "input_delay_ms_predicted_mean",
        "input_delay_ms_waiting_mean",
        "display_error_m_predicted_mean",
        "display_error_m_waiting_mean",
        "mispredictions_per_s",
    ):
        value = None if headline is None else headline[column]
        ctx.add_metric(f"{column}_rtt100_loss0", value if isinstance(value, float) else None)

    def worst(column: str) -> float | None:
        values = [v for r in rows if isinstance(v := r[column], float)]
        return max(values) if values else None

    ctx.add_metric("input_delay_ms_predicted_max", worst("input_delay_ms_predicted_mean"))
    ctx.add_metric("input_delay_ms_waiting_max", worst("input_delay_ms_waiting_mean"))
    ctx.add_metric("display_error_m_predicted_max", worst("display_error_m_predicted_mean"))
    ctx.add_metric("display_error_m_waiting_max", worst("display_error_m_waiting_mean"))
    ctx.add_metric("pushes", float(len(scenario.pushes)))
    clean = [r for r in rows if r["loss"] == losses[0]]
    x = [float(r["rtt_ms"]) for r in clean]  # type: ignore[arg-type]
    ctx.line_plot(
        "input-delay",
        x,
        {
            "predicted": [r["input_delay_ms_predicted_mean"] for r in clean],  # type: ignore[misc]
            "waiting": [r["input_delay_ms_waiting_mean"] for r in clean],  # type: ignore[misc]
        },
        xlabel="RTT (ms)",
        ylabel="input-to-display delay (ms)",
        title=f"Input-to-display delay, loss {losses[0]:g}",
    )
    ctx.line_plot(
        "display-error",
        x,
        {
            "predicted": [r["display_error_m_predicted_mean"] for r in clean],  # type: ignore[misc]
            "waiting": [r["display_error_m_waiting_mean"] for r in clean],  # type: ignore[misc]
        },
        xlabel="RTT (ms)",
        ylabel="mean display error vs the server (m)",
        title=f"Display error of the own entity, loss {losses[0]:g}",
    )
    ctx.line_plot(
        "misprediction-error",
        x,
        {
            f"loss {loss:g}": [
                _float_cell(r, "correction_m_mean") for r in rows if r["loss"] == loss
            ]
            for loss in losses
        },
        xlabel="RTT (ms)",
        ylabel="mean correction per misprediction (m)",
        title="Misprediction error vs RTT and loss",
    )
    return ctx.result(config={"inputs": len(scenario.keys), "jitter_fraction": JITTER_FRACTION})


_COMMON: Final[dict[str, JSONValue]] = {
    "tick": 0.02,
    "redundancy": 8,
    "pushes_per_s": 1.0,
    "push_speed": 3.0,
    "blend_ms": 100.0,
    "genre": "sports",
}

SPEC: Final = register(
    ExperimentSpec(
        id="replication/prediction",
        title="Client-side prediction: input-to-display delay and mispredictions vs RTT and loss",
        entry_point=prediction_experiment,
        quick={**_COMMON, "duration": 6.0, "rtts_ms": [0.0, 100.0, 250.0], "losses": [0.0, 0.1]},
        full={
            **_COMMON,
            "duration": 30.0,
            "rtts_ms": [0.0, 50.0, 100.0, 150.0, 200.0, 300.0, 500.0],
            "losses": [0.0, 0.02, 0.05, 0.1, 0.2],
        },
        reference=_REFERENCE,
        description=(
            "A player steers a `sports` entity (`lagless.world`) with a scripted input every 20 ms "
            "(50 fps). Inputs ride redundantly (8 per packet) to the server, which applies them at "
            "its 50-Hz tick, pushes the entity now and then (1 kick/s of 3 m/s the client "
            "cannot foresee) and reports its state and last applied input every tick; both "
            "directions cross `lagless.netsim` links with the given RTT, 10 % jitter and loss. "
            "The predicted display (`lagless.replication.prediction`: own inputs at once, "
            "rewind-and-replay, corrections blended over 100 ms) and a waiting display (newest "
            "report) run on the same packets. Columns: input-to-display delay (ms), display error "
            "against the server's state after the same inputs (m), mispredictions per second and "
            "their size (m), pending inputs. Reference: spec 000 §2.10's 5 pending commands at "
            "50 fps and 100 ms RTT."
        ),
    )
)
"""The registered spec of ``replication/prediction``."""
