"""Experiments ``vfc/*``: VFC traffic, views, players, clustering, encodings, delta (spec 001 §6.3).

Implements spec 001 §6.3 E1-E10 with the synthetic bots of ``lagless.interest.mobility`` and the
run machinery of ``lagless.lab.vfc``: ``vfc/maps`` (E1 Table 5.5, E3 client ratio, E7 event bytes,
E8 trigger histogram), ``vfc/views`` (E2 normal / zoom / single-band view, beside the broadcast,
aura and grid baselines at measured error), ``vfc/players`` (E4 N = 8…256, E9 CPU per round),
``vfc/clustering`` (E5), ``vfc/encoding`` (E6 record sizes, E9 control-message size) and
``vfc/delta`` (issue 5 part 5: VFC plus the quantised delta encoding). ``vfc/views`` also
reports E3 per client: the spread of the client incoming ratio over clients and how much a
client's incoming rate varies over time, VFC against broadcast (thesis §5.4.2: the VFC4FPS client
rate varies more than the original's constant rate).

Decisions:
    * Every run is 48 bots unless the sweep says otherwise; full runs measure 120 s of simulated
      play after 1 s of warm-up instead of the thesis's 10 minutes (the averages are stable to
      the second decimal by then; a full experiment stays under ~5 min).
    * ``round_ms_avg`` stays a column of every ``runs`` table but is always ``None`` in
      ``results.json``, which must not depend on the machine: the time of the measured server
      rounds (policy round + packing) is wall-clock, so it goes only to ``timings.json`` through
      ``ctx.timer`` when the caller injects a clock (the CLI does), as ``round.<run label>``
      seconds in total; ``round_ms_avg = 1000 × that / rounds`` with the row's ``rounds``
      column. (The lab cannot read CPU time itself: it never touches a clock.)
    * The E3 per-client figures are metrics of the normal view and of broadcast only
      (``client_ratio_{mean,min,max}_<map>``, ``client_in_cv_<map>_{vfc,broadcast}``); every
      run's row has the same columns.
    * Reference names equal metric names, so ``report.md`` sets ours beside the thesis's.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from typing import Final

import numpy as np

from lagless.errors import ConfigError
from lagless.interest import normal_view, zoom_view
from lagless.interest.control import encode_control, view_to_message
from lagless.interest.mobility import MAIN_MAPS, MAPS, Bots, BotsConfig, get_map
from lagless.interest.records import (
    PHYS_FALL,
    RECORD_DTYPE,
    RECORD_SIZE,
    CubeOriObj,
)
from lagless.lab.registry import ExperimentSpec, register
from lagless.lab.result import JSONScalar, JSONValue, Result
from lagless.lab.runner import ExperimentContext
from lagless.lab.vfc.sim import ROUND, RunConfig, RunResult, simulate

__all__ = ["SPECS"]

TABLE_5_5: Final = {
    "aard3c": 1.7,
    "academy": 1.5,
    "aqueducts": 1.7,
    "arabic": 2.0,
    "akroseum": 2.2,
    "dust2": 2.5,
    "campo": 1.7,
    "venice": 2.5,
    "wcd": 2.6,
    "redemption": 2.3,
    "core_transfer": 2.7,
    "face-capture": 2.5,
    "damnation": 2.1,
    "shipwreck": 3.0,
    "flagstone": 3.0,
    "hallo": 2.7,
    "ph-capture": 2.7,
    "river_c": 2.9,
    "mach2": 2.9,
    "urban_c": 2.8,
}
VIEW_TABLE: Final = {
    ("wcd", "normal"): 2.6,
    ("wcd", "zoom"): 2.6,
    ("wcd", "vfc"): 1.6,
    ("flagstone", "normal"): 3.0,
    ("flagstone", "zoom"): 3.0,
    ("flagstone", "vfc"): 1.8,
    ("urban_c", "normal"): 2.8,
    ("urban_c", "zoom"): 2.7,
    ("urban_c", "vfc"): 1.7,
}
VIEWS: Final = ("normal", "zoom", "vfc")
BASELINES: Final = ("broadcast", "aura", "grid")
CLIENT_TABLE: Final = {"wcd": 2.5, "flagstone": 2.9, "urban_c": 2.9}
TABLE_5_8: Final = {  # map: (original Cube 2 object bytes, VFC4FPS object bytes, bitmap %)
    "aard3c": (20, 18, 77),
    "academy": (17, 18, 78),
    "aqueducts": (17, 19, 81),
    "arabic": (17, 19, 79),
    "akroseum": (17, 19, 79),
    "dust2": (19, 18, 79),
    "campo": (17, 19, 79),
    "venice": (17, 18, 78),
    "wcd": (17, 18, 79),
    "redemption": (18, 19, 80),
    "core_transfer": (19, 19, 81),
    "face-capture": (20, 19, 80),
    "damnation": (17, 19, 80),
    "shipwreck": (20, 19, 82),
    "flagstone": (20, 19, 82),
    "hallo": (19, 19, 82),
    "ph-capture": (18, 18, 78),
    "river_c": (18, 20, 83),
    "mach2": (19, 19, 81),
    "urban_c": (19, 18, 76),
}


def _number(params: Mapping[str, JSONValue], key: str) -> float:
    value = params.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigError(f"vfc parameter {key} must be a number > 0, got {value!r}")
    return float(value)


def _names(params: Mapping[str, JSONValue], key: str) -> list[str]:
    value = params.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"vfc parameter {key} must be a list of names, got {value!r}")
    return [str(v) for v in value]


def _ints(params: Mapping[str, JSONValue], key: str) -> list[int]:
    value = params.get(key)
    if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
        raise ConfigError(f"vfc parameter {key} must be a list of ints, got {value!r}")
    return [int(v) for v in value]  # type: ignore[arg-type]


def _label(cfg: RunConfig) -> str:
    return (
        f"{cfg.map}.{cfg.players}.{cfg.policy}.{cfg.view}.{cfg.mobility}.{cfg.encoding}.{cfg.loss}"
    )


def _run(ctx: ExperimentContext, cfg: RunConfig) -> RunResult:
    """Run one configuration from its own named stream, timing its rounds into timings.json."""
    label = _label(cfg)
    timer_name = f"round.{label}"
    rng = ctx.rng(f"vfc.{label}")
    return simulate(cfg, rng=rng, timer=lambda: ctx.timer(timer_name))


def _runs(ctx: ExperimentContext, configs: Sequence[RunConfig], what: str) -> list[RunResult]:
    return [_run(ctx, cfg) for cfg in ctx.track(configs, description=what, total=len(configs))]


def _rows(results: Sequence[RunResult]) -> list[dict[str, JSONScalar]]:
    return [dict(r.row) for r in results]


def _trigger_rows(results: Sequence[RunResult]) -> list[dict[str, JSONScalar]]:
    rows: list[dict[str, JSONScalar]] = []
    for r in results:
        sends = sum(r.triggers.values())
        row: dict[str, JSONScalar] = {"map": r.row["map"], "view": r.row["view"], "sends": sends}
        for name, count in r.triggers.items():
            row[f"{name}_share"] = round(count / sends, 4) if sends else None
        for name, count in r.exceeded.items():
            row[f"{name}_exceeded_share"] = round(count / sends, 4) if sends else None
        rows.append(row)
    return rows


# -- vfc/maps (E1, E3, E7, E8) ---------------------------------------------------------------------


def maps_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """E1/E3/E7/E8: server and client traffic ratio, normal view, 48 players, by map."""
    seconds = _number(params, "seconds")
    players = int(_number(params, "players"))
    maps = _names(params, "maps")
    configs = [RunConfig(map=m, players=players, seconds=seconds) for m in maps]
    results = _runs(ctx, configs, "vfc/maps")
    ctx.add_table("runs", _rows(results))
    ctx.add_table("triggers", _trigger_rows(results))
    ratios = []
    for r in results:
        name = str(r.row["map"])
        ctx.add_metric(f"ratio_{name}", r.row["ratio"])  # type: ignore[arg-type]
        ratios.append(float(r.row["ratio"] or 0.0))
        if name in CLIENT_TABLE:
            ctx.add_metric(f"client_ratio_{name}", r.row["client_ratio"])  # type: ignore[arg-type]
    ctx.add_metric("ratio_mean", round(float(np.mean(ratios)), 4))
    sent = sum(float(r.row["event_sent_kBps"] or 0.0) for r in results)
    full = sum(float(r.row["event_unfiltered_kBps"] or 0.0) for r in results)
    ctx.add_metric("event_filtered_share", round(1.0 - sent / full, 4) if full else None)
    sends = sum(sum(r.triggers.values()) for r in results)
    for name in ("first", "theta", "sigma", "nu"):
        share = sum(r.triggers[name] for r in results) / sends if sends else None
        ctx.add_metric(f"trigger_share_{name}", None if share is None else round(share, 4))
    ctx.bar_plot(
        "ratio_by_map",
        maps,
        {"ours": ratios, "thesis": [TABLE_5_5[m] for m in maps]},
        xlabel="map (by size)",
        ylabel="broadcast / VFC server out",
        title="E1: traffic ratio, normal view, 48 players",
    )
    return ctx.result()


# -- vfc/views (E2 + baselines at measured error) -------------------------------------------------


def views_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """E2: normal vs zoom vs single-band view, with broadcast, aura and grid beside them."""
    seconds = _number(params, "seconds")
    players = int(_number(params, "players"))
    maps = _names(params, "maps")
    configs = []
    for m in maps:
        configs += [RunConfig(map=m, players=players, seconds=seconds, view=v) for v in VIEWS]
        configs += [RunConfig(map=m, players=players, seconds=seconds, policy=p) for p in BASELINES]
    results = _runs(ctx, configs, "vfc/views")
    ctx.add_table("runs", _rows(results))
    ctx.add_table("triggers", _trigger_rows([r for r in results if r.row["policy"] == "vfc"]))
    by_key = {(r.row["map"], r.row["policy"], r.row["view"]): r.row for r in results}
    for m in maps:
        for v in VIEWS:
            ctx.add_metric(f"ratio_{m}_{v}", by_key[(m, "vfc", v)]["ratio"])  # type: ignore[arg-type]
        normal = by_key[(m, "vfc", "normal")]["ratio"]
        single = by_key[(m, "vfc", "vfc")]["ratio"]
        gain = float(normal) / float(single) if normal and single else None
        ctx.add_metric(f"fov_gain_{m}", None if gain is None else round(gain, 4))
        for v in ("normal", "zoom"):
            row = by_key[(m, "vfc", v)]
            sent, full = row["event_sent_kBps"], row["event_unfiltered_kBps"]
            share = 1.0 - float(sent) / float(full) if full else None  # type: ignore[arg-type]
            ctx.add_metric(
                f"event_filtered_share_{m}_{v}", None if share is None else round(share, 4)
            )
        normal_row, bcast_row = by_key[(m, "vfc", "normal")], by_key[(m, "broadcast", "-")]
        for stat in ("mean", "min", "max"):
            ctx.add_metric(f"client_ratio_{stat}_{m}", normal_row[f"client_ratio_{stat}"])  # type: ignore[arg-type]
        ctx.add_metric(f"client_in_cv_{m}_vfc", normal_row["client_in_cv"])  # type: ignore[arg-type]
        ctx.add_metric(f"client_in_cv_{m}_broadcast", bcast_row["client_in_cv"])  # type: ignore[arg-type]
    return ctx.result()


# -- vfc/players (E4, E9) --------------------------------------------------------------------------


def players_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """E4/E9: traffic, ratio and CPU per round for N = 8…256 players, normal view."""
    seconds = _number(params, "seconds")
    counts = _ints(params, "players")
    map_name = str(params.get("map"))
    configs = [RunConfig(map=map_name, players=n, seconds=seconds) for n in counts]
    results = _runs(ctx, configs, "vfc/players")
    ctx.add_table("runs", _rows(results))
    for r in results:
        ctx.add_metric(f"ratio_{r.row['players']}", r.row["ratio"])  # type: ignore[arg-type]
    bcast = [float(r.row["broadcast_out_kBps"] or 0.0) for r in results]
    vfc = [float(r.row["server_out_kBps"] or 0.0) for r in results]
    slope = np.polyfit(np.log(counts), np.log(bcast), 1)[0] if len(counts) > 1 else None
    ctx.add_metric("broadcast_growth_exponent", None if slope is None else round(float(slope), 4))
    vslope = np.polyfit(np.log(counts), np.log(vfc), 1)[0] if len(counts) > 1 else None
    ctx.add_metric("vfc_growth_exponent", None if vslope is None else round(float(vslope), 4))
    ctx.line_plot(
        "traffic_by_players",
        counts,
        {"broadcast": bcast, "vfc": vfc},
        xlabel="players",
        ylabel="server out, kB/s (with headers)",
        title="E4: server outgoing traffic vs players",
        logy=True,
    )
    return ctx.result()


# -- vfc/clustering (E5) ---------------------------------------------------------------------------


def clustering_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """E5: the same map size with spread vs clustered waypoints."""
    seconds = _number(params, "seconds")
    players = int(_number(params, "players"))
    maps = _names(params, "maps")
    configs = [
        RunConfig(map=m, players=players, seconds=seconds, mobility=mob)
        for m in maps
        for mob in ("spread", "clustered")
    ]
    results = _runs(ctx, configs, "vfc/clustering")
    ctx.add_table("runs", _rows(results))
    for r in results:
        ctx.add_metric(f"ratio_{r.row['map']}_{r.row['mobility']}", r.row["ratio"])  # type: ignore[arg-type]
    return ctx.result()


# -- vfc/encoding (E6, E9 control size) ----------------------------------------------------


def _putint_size(values: np.ndarray) -> np.ndarray:
    """Bytes of Cube 2's ``putint`` (1 byte in [-127, 127], 3 for 16 bits, else 5)."""
    small = (values >= -127) & (values <= 127)
    mid = (values >= -32768) & (values <= 32767)
    return np.where(small, 1, np.where(mid, 3, 5))


def cube_style_sizes(records: np.ndarray) -> np.ndarray:
    """Bytes of a Cube 2-style variable-length position packet per record (our approximation).

    Message type, client number and a state byte, then ``putint`` of x, y, z (1/16 unit), yaw
    and pitch (degrees) and velocity (units/s); falling velocity only while airborne.
    """
    size = np.full(records.shape[0], 3, dtype=np.int64)
    for name in ("x", "y", "z"):
        size += _putint_size(records[name].astype(np.int64))
    size += _putint_size(np.round(records["yaw"].astype(np.int64) * 360 / 65536) % 360)
    size += _putint_size(np.round(records["pitch"].astype(np.int64) * 90 / 127))
    for name in ("vx", "vy", "vz"):
        size += _putint_size(records[name].astype(np.int64) // 16)
    airborne = records["physstate"] == PHYS_FALL
    falling = sum(_putint_size(records[n].astype(np.int64)) for n in ("fx", "fy", "fz"))
    return size + np.where(airborne, falling, 0)


def encoding_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """E6: record sizes after bitmap compression by map; flat vs bumpy ground; E9 control size."""
    seconds = _number(params, "seconds")
    players = int(_number(params, "players"))
    maps = _names(params, "maps")
    rows: list[dict[str, JSONScalar]] = []
    means = []
    for m in ctx.track(maps, description="vfc/encoding", total=len(maps)):
        for ground, amplitude, jumps in (("bumpy", 4.0, 0.2), ("flat", 0.0, 0.0)):
            rng = ctx.rng(f"vfc.encoding.{m}.{ground}")
            bots = Bots(
                BotsConfig(
                    count=players, map=get_map(m), terrain_amplitude=amplitude, jump_rate=jumps
                ),
                rng=rng,
            )
            nonzero = []
            cube = []
            for _ in range(round(seconds / ROUND)):
                bots.step(ROUND, rng=rng)
                records = bots.records()
                nonzero.append(np.count_nonzero(records.view(np.uint8).reshape(-1, RECORD_SIZE), 1))
                cube.append(cube_style_sizes(records))
            nz = np.concatenate(nonzero)
            compressed = float(np.mean(4 + nz))
            row: dict[str, JSONScalar] = {
                "map": m,
                "ground": ground,
                "record_bytes_raw": RECORD_SIZE,
                "record_bytes_compressed": round(compressed, 4),
                "bitmap_percent": round(100.0 * compressed / RECORD_SIZE, 4),
                "cube_style_bytes": round(float(np.mean(np.concatenate(cube))), 4),
                "thesis_record_bytes": TABLE_5_8[m][1],
                "thesis_bitmap_percent": TABLE_5_8[m][2],
                "thesis_cube_bytes": TABLE_5_8[m][0],
            }
            rows.append(row)
            if ground == "bumpy":
                means.append(row)
    ctx.add_table("sizes", rows)
    for key, metric in (
        ("record_bytes_compressed", "record_bytes_mean"),
        ("bitmap_percent", "bitmap_percent_mean"),
        ("cube_style_bytes", "cube_packet_bytes_mean"),
    ):
        ctx.add_metric(metric, round(float(np.mean([float(r[key]) for r in means])), 4))  # type: ignore[arg-type]
    flat = [float(r["record_bytes_compressed"]) for r in rows if r["ground"] == "flat"]  # type: ignore[arg-type]
    ctx.add_metric("record_bytes_mean_flat", round(float(np.mean(flat)), 4))
    avatar = CubeOriObj(id=7, x=100.0, y=50.0, z=2.0, yaw=1.0, vx=10.0, vy=-3.0, gunselect=2)
    naive = len(pickle.dumps(avatar, protocol=pickle.HIGHEST_PROTOCOL))
    ctx.add_metric("naive_pickle_bytes", naive)
    ctx.add_metric("fields_share_of_naive_percent", round(100.0 * RECORD_SIZE / naive, 4))
    set_view = len(encode_control(view_to_message(zoom_view(0.125), pivots=(7,))))
    ctx.add_metric("setview_control_bytes", set_view)
    ctx.add_metric(
        "setview_normal_control_bytes",
        len(encode_control(view_to_message(normal_view(0.125), pivots=(7,)))),
    )
    ctx.add_metric("record_dtype_bytes", RECORD_DTYPE.itemsize)
    return ctx.result()


# -- vfc/delta (part 5) -------------------------------------------------------------------


def delta_experiment(ctx: ExperimentContext, params: Mapping[str, JSONValue]) -> Result:
    """Beyond the thesis: VFC plus quantised delta encoding; ratio and error, with/without loss."""
    seconds = _number(params, "seconds")
    players = int(_number(params, "players"))
    maps = _names(params, "maps")
    losses = [0.0, float(params.get("loss", 0.05))]  # type: ignore[arg-type]
    configs = [
        RunConfig(map=m, players=players, seconds=seconds, policy=p, encoding=e, loss=loss)
        for m in maps
        for loss in losses
        for p in ("vfc", "broadcast")
        for e in ("records", "delta")
    ]
    results = _runs(ctx, configs, "vfc/delta")
    rows = _rows(results)
    for row, r in zip(rows, results, strict=True):
        row["record_bytes_mean"] = r.record_bytes
    ctx.add_table("runs", rows)
    for r in results:
        if r.row["policy"] == "vfc" and r.row["loss"] == 0.0:
            ctx.add_metric(f"ratio_{r.row['map']}_{r.row['encoding']}", r.row["ratio"])  # type: ignore[arg-type]
    return ctx.result()


_DESCRIPTION: Final = (
    "Synthetic bots (random waypoints, spread or clustered, Cube 2 speed 12.5 m/s, 1 world "
    "unit = 0.125 m) write 24-byte CubeOriObj records every 33 ms; the server policy decides "
    "the sends and every client's records are packed into zero-bitmap-compressed datagrams. "
    "Traffic counts the 28-byte IPv4+UDP header per datagram (payload-only columns beside); "
    "the broadcast baseline is spec 001 §5.1: each update's size x (N-1). Replica error is "
    "measured per zone after each round's deliveries (no latency), so broadcast's is the "
    "quantisation error. Absolute ratios depend on the mobility model: compare trends."
)

_MAIN: Final[list[JSONValue]] = list(MAIN_MAPS)
_ALL: Final[list[JSONValue]] = list(MAPS)

SPECS: Final = (
    register(
        ExperimentSpec(
            id="vfc/maps",
            title="VFC server traffic ratio vs broadcast by map size (E1, E3, E7, E8)",
            entry_point=maps_experiment,
            quick={"seconds": 1.5, "players": 16, "maps": _MAIN},
            full={"seconds": 120.0, "players": 48, "maps": _ALL},
            reference={
                **{f"ratio_{m}": v for m, v in TABLE_5_5.items()},
                "ratio_mean": 2.4,
                **{f"client_ratio_{m}": v for m, v in CLIENT_TABLE.items()},
            },
            description=_DESCRIPTION,
        )
    ),
    register(
        ExperimentSpec(
            id="vfc/views",
            title="Normal vs zoom vs single-band VFC view, beside broadcast/aura/grid (E2)",
            entry_point=views_experiment,
            quick={"seconds": 1.0, "players": 16, "maps": ["flagstone"]},
            full={"seconds": 120.0, "players": 48, "maps": _MAIN},
            reference={
                **{f"ratio_{m}_{v}": r for (m, v), r in VIEW_TABLE.items()},
                "fov_gain_wcd": 1.63,
                "fov_gain_flagstone": 1.67,
                "fov_gain_urban_c": 1.65,
                **{f"client_ratio_mean_{m}": v for m, v in CLIENT_TABLE.items()},
            },
            description=_DESCRIPTION,
        )
    ),
    register(
        ExperimentSpec(
            id="vfc/players",
            title="Traffic, ratio and CPU per round vs number of players (E4, E9)",
            entry_point=players_experiment,
            quick={"seconds": 1.0, "players": [8, 16, 32], "map": "flagstone"},
            full={
                "seconds": 60.0,
                "players": [8, 16, 24, 32, 48, 64, 96, 128, 192, 256],
                "map": "flagstone",
            },
            reference={"ratio_48": 3.0, "broadcast_growth_exponent": 2.0},
            description=_DESCRIPTION,
        )
    ),
    register(
        ExperimentSpec(
            id="vfc/clustering",
            title="Spread vs clustered players on the same map size (E5)",
            entry_point=clustering_experiment,
            quick={"seconds": 1.0, "players": 16, "maps": ["flagstone"]},
            full={"seconds": 120.0, "players": 48, "maps": ["wcd", "flagstone", "urban_c"]},
            reference={"ratio_flagstone_spread": 3.0, "ratio_urban_c_clustered": 2.8},
            description=_DESCRIPTION,
        )
    ),
    register(
        ExperimentSpec(
            id="vfc/encoding",
            title="Avatar record sizes: 24-byte record, bitmap compression, Cube 2-style (E6)",
            entry_point=encoding_experiment,
            quick={"seconds": 1.0, "players": 8, "maps": _MAIN},
            full={"seconds": 30.0, "players": 48, "maps": _ALL},
            reference={
                "record_bytes_mean": 18.7,
                "bitmap_percent_mean": 79.7,
                "cube_packet_bytes_mean": 18.25,
                "fields_share_of_naive_percent": 11.0,
                "setview_control_bytes": 1109.0,
            },
            description=_DESCRIPTION,
        )
    ),
    register(
        ExperimentSpec(
            id="vfc/delta",
            title="Beyond the thesis: VFC plus quantised delta encoding (ratio and error)",
            entry_point=delta_experiment,
            quick={"seconds": 1.0, "players": 16, "maps": ["flagstone"], "loss": 0.05},
            full={"seconds": 120.0, "players": 48, "maps": _MAIN, "loss": 0.05},
            reference={f"ratio_{m}_records": TABLE_5_5[m] for m in MAIN_MAPS},
            description=_DESCRIPTION,
        )
    ),
)
