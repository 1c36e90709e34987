"""The per-genre Realtime Simulator experiments: latency and loss sweeps, thesis vs our best.

Implements spec 000 §4.1-§4.5 for one genre: the genre's 60-s recording replayed (TestRun, §3.6)
through every display-model configuration of the sweeps (``configs.sweep_models``) at latencies
0-1100 ms without loss, then under the UMTS and GPRS conditions (§3.7) together with the thesis's
recommended and tabulated configurations, a loss sweep at the UMTS latency, and a wider tuning grid
from which the best configuration is picked.

Decisions:
    * "Best" under a condition is the lowest average error among all runs of that condition whose
      motion is at least as smooth as the thesis's recommended configuration there (DeviationB
      and jump count not above its values): the thesis chose by movement grade first, then error
      (``test_experiments.py::test_best_is_no_rougher_than_recommended``). A condition without a
      thesis recommendation is compared with the genre's UMTS recommendation run there.
    * Each run draws its link from its own named stream
      (``<genre>.<profile>.<latency>.<loss>.<config>``), so adding a configuration does not change
      the others' numbers.
    * Thesis figures that compare configurations (e.g. "1/1 raises the rate by 65 %") are measured
      on linear convergence without TC at 0 ms; send rates of threshold models do not depend on
      the latency (the sender's ghost ignores it, spec 000 §2.7).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from lagless.errors import ConfigError
from lagless.lab.realtime.configs import (
    CONDITIONS,
    GENRE_SETUPS,
    Condition,
    GenreSetup,
    ModelConfig,
    sweep_models,
    tuning_grid,
)
from lagless.lab.realtime.references import reference_extractors
from lagless.lab.realtime.runs import Row, RunIndex, metric_columns, model_columns
from lagless.lab.realtime.simulator import SimulatorRun, run
from lagless.lab.result import JSONScalar, JSONValue, Result
from lagless.lab.runner import ExperimentContext
from lagless.smoothing import DisplayModel
from lagless.world import Recording, Trajectory, load_recording, simulate

__all__ = [
    "GenreParams",
    "GenreRunner",
    "genre_experiment",
    "load_truth",
    "parse_params",
    "pick_best",
]

_BEST_COLUMNS = (
    "config",
    "updates_per_s",
    "payload_kBps_avg",
    "payload_kBps_max",
    "neutron_kBps_avg",
    "error_px_avg",
    "error_px_max",
    "deviation_b",
    "jumps",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GenreParams:
    """Parameters of a genre experiment (the spec's ``quick`` / ``full`` mappings)."""

    duration: float
    """Seconds of the genre recording replayed, (0, 60]."""
    latencies_ms: tuple[float, ...]
    """Sweep latencies, ms."""
    profiles: tuple[str, ...]
    """Conditions of ``configs.CONDITIONS`` run in full."""
    loss_sweep: tuple[float, ...]
    """Loss fractions of the loss sweep at the UMTS latency and jitter."""
    tuning: bool
    """Search ``configs.tuning_grid`` under every profile."""


def _floats(params: Mapping[str, JSONValue], key: str) -> tuple[float, ...]:
    value = params.get(key)
    if not isinstance(value, list) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in value
    ):
        raise ConfigError(f"{key} must be a list of numbers >= 0, got {value!r}")
    return tuple(float(v) for v in value)  # type: ignore[arg-type]


def parse_params(params: Mapping[str, JSONValue]) -> GenreParams:
    """Validate a genre experiment's parameters.

    Args:
        params: ``duration`` (s), ``latencies_ms``, ``profiles``, ``loss_sweep``, ``tuning``.

    Returns:
        The parsed parameters.

    Raises:
        ConfigError: A parameter is missing or out of range.
    """
    duration = params.get("duration")
    if isinstance(duration, bool) or not isinstance(duration, int | float) or not duration > 0:
        raise ConfigError(f"duration must be a number of seconds > 0, got {duration!r}")
    profiles = params.get("profiles")
    if not isinstance(profiles, list) or not all(p in CONDITIONS for p in profiles):
        raise ConfigError(f"profiles must be a list of {sorted(CONDITIONS)}, got {profiles!r}")
    tuning = params.get("tuning")
    if not isinstance(tuning, bool):
        raise ConfigError(f"tuning must be true or false, got {tuning!r}")
    return GenreParams(
        duration=float(duration),
        latencies_ms=_floats(params, "latencies_ms"),
        profiles=tuple(str(p) for p in profiles),
        loss_sweep=_floats(params, "loss_sweep"),
        tuning=tuning,
    )


def load_truth(genre: str, duration: float) -> Trajectory:
    """Return the true trajectory of the first ``duration`` seconds of a genre recording.

    Args:
        genre: ``sports``, ``simulation``, ``shooter`` or ``arcade``.
        duration: Seconds to keep (the recording is cut after the frame that passes it).

    Returns:
        The trajectory (``lagless.world.simulate``).
    """
    recording = load_recording(genre)
    frames, elapsed = [], 0.0
    for frame in recording.frames:
        if elapsed >= duration:
            break
        frames.append(frame)
        elapsed += frame.dt
    return simulate(genre, Recording.from_frames(frames))


class GenreRunner:
    """Runs display-model configurations on one genre's trajectory and collects ``runs`` rows.

    Args:
        ctx: The experiment context (named link streams, timers).
        genre: The ``genre`` column.
        truth: The true trajectory.
    """

    def __init__(self, ctx: ExperimentContext, genre: str, truth: Trajectory) -> None:
        """Create a runner with no rows."""
        self.ctx = ctx
        self.genre = genre
        self.truth = truth
        self.duration = float(truth.t[-1] - truth.t[0])
        self.rows: list[Row] = []

    def run(
        self, config: ModelConfig, condition: Condition, *, profile: str, role: str
    ) -> SimulatorRun:
        """Run ``config`` under ``condition`` and append its row.

        Args:
            config: The display-model configuration.
            condition: Latency (s), jitter fraction and loss.
            profile: The ``profile`` column (``sweep``, ``umts``, ...).
            role: The ``role`` column (``sweep``, ``recommended``, ``thesis``, ``tuning``, ...).

        Returns:
            The run.
        """
        model = config.create(latency=condition.latency)
        return self.run_model(model, model_columns(config), condition, profile=profile, role=role)

    def run_model(
        self,
        model: DisplayModel,
        columns: Row,
        condition: Condition,
        *,
        profile: str,
        role: str,
    ) -> SimulatorRun:
        """Run a ready display model; ``columns`` holds its configuration columns.

        Args:
            model: The display model.
            columns: ``config``, ``model``, ``convergence``, ``threshold``, ``tc_cap_ms``, ...
            condition: Latency (s), jitter fraction and loss.
            profile: The ``profile`` column.
            role: The ``role`` column.

        Returns:
            The run.
        """
        latency_ms = round(condition.latency * 1000.0, 3)
        label = columns["config"]
        stream = f"{self.genre}.{profile}.{latency_ms:g}.{condition.loss:g}.{label}"
        with self.ctx.timer(f"run.{model.name}"):
            result = run(self.truth, model, condition.link(), rng=self.ctx.rng(stream))
        row: Row = {
            "genre": self.genre,
            "profile": profile,
            "role": role,
            "latency_ms": latency_ms,
            "jitter": condition.jitter,
            "loss": condition.loss,
        }
        row |= columns
        row |= metric_columns(
            result.metrics, payload_size=model.payload_size, duration=self.duration
        )
        self.rows.append(row)
        return result


def pick_best(rows: Sequence[Mapping[str, JSONScalar]], reference: Mapping[str, JSONScalar]) -> Row:
    """Return the lowest-error row no rougher than ``reference`` (module docstring).

    Args:
        rows: Candidate rows (one condition).
        reference: The thesis-recommended configuration's row under that condition.

    Returns:
        A copy of the chosen row (``reference`` itself when nothing else qualifies).
    """

    def value(row: Mapping[str, JSONScalar], column: str) -> float:
        cell = row.get(column)
        return float(cell) if isinstance(cell, int | float) else float("inf")

    smooth = [
        row
        for row in rows
        if value(row, "deviation_b") <= value(reference, "deviation_b")
        and value(row, "jumps") <= value(reference, "jumps")
    ]
    chosen = min(smooth or [reference], key=lambda row: value(row, "error_px_avg"))
    return dict(chosen)


def _sweep_plots(
    ctx: ExperimentContext, index: RunIndex, setup: GenreSetup, lat: list[float]
) -> None:
    models = sweep_models(setup)

    def pick(*, tc: bool, thr: str | None) -> list[ModelConfig]:
        return [
            m
            for m in models
            if m.model == "interpolation"
            or (m.time_compensation == tc and (thr is None or m.threshold == thr))
        ]

    def series(chosen: list[ModelConfig], column: str) -> dict[str, list[float | None]]:
        return {m.label: [index.get("sweep", x, m.label, column) for x in lat] for m in chosen}

    genre = setup.genre
    for tc in (False, True):
        name = "tc" if tc else "no-tc"
        ctx.line_plot(
            f"error-avg-{name}",
            lat,
            series(pick(tc=tc, thr=None), "error_px_avg"),
            xlabel="latency (ms)",
            ylabel="average position error (px, 10 px = 1 m)",
            title=f"{genre}: average error vs latency, {'with' if tc else 'without'} TC",
        )
        ctx.line_plot(
            f"error-max-{name}",
            lat,
            series(pick(tc=tc, thr="1/1"), "error_px_max"),
            xlabel="latency (ms)",
            ylabel="maximum position error (px)",
            title=f"{genre}: maximum error vs latency, {'with' if tc else 'without'} TC, 1/1",
        )
    ctx.line_plot(
        "payload-kBps",
        lat,
        series(
            [m for m in pick(tc=False, thr=None) if m.convergence == "linear"], "payload_kBps_avg"
        ),
        xlabel="latency (ms)",
        ylabel="average payload rate (kB/s)",
        title=f"{genre}: payload rate vs latency (no TC)",
    )


def genre_experiment(ctx: ExperimentContext, genre: str) -> Result:
    """Run one genre's sweeps, real-condition runs, loss sweep and tuning (module docstring).

    Args:
        ctx: The run's context.
        genre: ``sports``, ``simulation``, ``shooter`` or ``arcade``.

    Returns:
        Table ``runs`` (one row per run), table ``best`` (thesis recommendation beside ours per
        profile), metrics matching every thesis number that has a measurable counterpart, plots.
    """
    params = parse_params(ctx.params)
    setup = GENRE_SETUPS[genre]
    truth = load_truth(genre, params.duration)
    runner = GenreRunner(ctx, genre, truth)
    models = sweep_models(setup)
    for latency_ms in ctx.track(list(params.latencies_ms), description=f"{genre} sweep"):
        condition = Condition(name="sweep", latency=latency_ms / 1000.0, jitter=0.0, loss=0.0)
        for config in models:
            runner.run(config, condition, profile="sweep", role="sweep")
    best_rows: list[Row] = []
    for profile in ctx.track(list(params.profiles), description=f"{genre} profiles"):
        condition = CONDITIONS[profile]
        recommended = setup.recommended.get(profile, setup.recommended["umts"])
        rec_result = runner.run(recommended, condition, profile=profile, role="recommended")
        rec_row = runner.rows[-1]
        if profile == "umts":
            ctx.add_series(
                "umts_recommended_path",
                {
                    "t": rec_result.t,
                    "true_x": rec_result.true_x,
                    "true_y": rec_result.true_y,
                    "shown_x": rec_result.shown_x,
                    "shown_y": rec_result.shown_y,
                },
            )
        for config in setup.thesis_models.values():
            runner.run(config, condition, profile=profile, role="thesis")
        for config in models:
            runner.run(config, condition, profile=profile, role="sweep")
        if params.tuning:
            for config in tuning_grid(setup):
                runner.run(config, condition, profile=profile, role="tuning")
        candidates = [r for r in runner.rows if r["profile"] == profile]
        best = pick_best(candidates, rec_row)
        for kind, row in (("thesis-recommended", rec_row), ("ours-best", best)):
            entry: Row = {"genre": genre, "profile": profile, "kind": kind}
            entry |= {column: row.get(column) for column in _BEST_COLUMNS}
            best_rows.append(entry)
            prefix = f"{profile}_{'recommended' if kind == 'thesis-recommended' else 'best'}_"
            for column in ("payload_kBps_avg", "payload_kBps_max", "error_px_avg", "error_px_max"):
                ctx.add_metric(prefix + column, _cell(row, column))
    umts = CONDITIONS["umts"]
    loss_models = [
        setup.recommended["umts"],
        *(m for m in models if m.label in _loss_labels(setup)),
    ]
    for loss in params.loss_sweep:
        condition = replace(umts, name="loss-sweep", loss=loss)
        for config in loss_models:
            runner.run(config, condition, profile="loss-sweep", role="loss-sweep")
    index = RunIndex(runner.rows)
    for name, extractor in reference_extractors(genre, setup).items():
        if name not in ctx.spec.reference:
            continue
        ctx.add_metric(name, extractor(index))
    ctx.add_metric("truth_speed_mps_avg", float(truth.speed.mean()))
    ctx.add_table("runs", runner.rows)
    ctx.add_table("best", best_rows)
    lat = list(params.latencies_ms)
    _sweep_plots(ctx, index, setup, lat)
    if params.loss_sweep:
        umts_ms = round(umts.latency * 1000.0, 3)
        ctx.line_plot(
            "error-vs-loss",
            [100.0 * x for x in params.loss_sweep],
            {
                m.label: [
                    _cell(r, "error_px_avg")
                    for r in runner.rows
                    if r["profile"] == "loss-sweep" and r["config"] == m.label
                ]
                for m in loss_models
            },
            xlabel="loss (%)",
            ylabel="average position error (px)",
            title=f"{genre}: error vs loss at {umts_ms:g} ms, 7 % jitter",
        )
    return ctx.result(config={"genre": genre, "px_per_m": 10.0})


def _cell(row: Mapping[str, JSONScalar], column: str) -> float | None:
    value = row.get(column)
    return float(value) if isinstance(value, int | float) else None


def _loss_labels(setup: GenreSetup) -> set[str]:
    pos = setup.position_time
    dis = ModelConfig(model="dis1", convergence="snap", position_time=pos)
    dis2 = ModelConfig(model="dis2", convergence="linear", position_time=pos)
    phb = ModelConfig(
        model="phb", threshold_px=3.0, threshold_deg=15.0, time_compensation=True, position_time=pos
    )
    return {dis.label, dis2.label, phb.label, "interpolation"}
