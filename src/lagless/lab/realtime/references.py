"""The thesis's numbers per genre (spec 000 §4.2-§4.5, §6.2) and how we measure each one.

Implements the ``reference`` blocks of the genre experiments: every number the spec text gives
for a genre, by metric name, and for each measurable one a function over the ``runs`` table that
computes our counterpart under the same name (so ``report.md`` sets them side by side).

Decisions:
    * Names carry the unit (``_kBps``, ``_px``, ``_ms``; ratios and increases are fractions).
      Movement grades and latency limits judged by eye are listed without an extractor: they are
      subjective (spec 000 §7) and appear in the report as "not measured".
    * "DIS-DR" without a stated configuration means DIS-DR 1st order, linear convergence, no TC,
      1/1; "3/15" figures use linear convergence without TC; errors "at X ms" are sweep runs
      (no loss, no jitter) at latency X; "up to 400 ms" means the mean over sweep latencies ≤ 400.
    * A threshold "gain" is the mean over all sweep latencies of error(3/15) - error(1/1).
    * The recommended configurations' figures (``<profile>_recommended_*``) are recorded by
      ``lagless.lab.realtime.genre`` itself, beside our best configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from lagless.lab.realtime.configs import GENRE_SETUPS, GenreSetup, ModelConfig
from lagless.lab.realtime.runs import RunIndex, difference, ratio

__all__ = ["THESIS_REFERENCES", "Extractor", "reference_extractors"]

Extractor = Callable[[RunIndex], float | None]

_REC = ("payload_kBps_avg", "payload_kBps_max", "error_px_avg", "error_px_max")

THESIS_REFERENCES: Final[Mapping[str, Mapping[str, float]]] = {
    "sports": {
        "dis1_payload_kBps_avg": 0.43,
        "interp_payload_kBps_avg": 0.28,
        "phb_payload_kBps_max": 0.85,
        "interp_error_px_avg_400ms": 22.0,
        "interp_error_px_avg_800ms": 33.0,
        "umts_recommended_payload_kBps_avg": 0.523,
        "umts_recommended_payload_kBps_max": 0.826,
        "umts_recommended_error_px_avg": 4.5,
        "umts_recommended_error_px_max": 9.78,
        "umts_recommended_grade": 2.0,
        "dis2_tc_unusable_from_ms": 100.0,
        "dis1_tc_tolerable_up_to_ms": 400.0,
        "dis1_worst_max_error_from_ms": 800.0,
    },
    "simulation": {
        "phb_3_15_payload_kBps_avg": 0.167,
        "phb_3_15_payload_kBps_max": 0.285,
        "dis1_rate_ratio_1_1_vs_3_15": 2.0,
        "phb_rate_ratio_1_1_vs_3_15": 3.0,
        "dis1_tc_rate_increase": 0.05,
        "dis1_tc_error_px_avg_800ms": 10.0,
        "dis1_tc_error_px_max_800ms": 22.5,
        "gprs_phb_error_px_max": 100.0,
        "gprs_recommended_payload_kBps_avg": 0.41,
        "gprs_recommended_payload_kBps_max": 0.734,
        "gprs_recommended_error_px_avg": 15.56,
        "gprs_recommended_error_px_max": 21.04,
        "gprs_recommended_grade": 2.5,
        "umts_recommended_payload_kBps_avg": 0.426,
        "umts_recommended_payload_kBps_max": 0.642,
        "umts_recommended_error_px_avg": 5.01,
        "umts_recommended_error_px_max": 10.14,
        "umts_recommended_grade": 2.0,
        "tc_satisfactory_up_to_ms": 350.0,
        "tc_unacceptable_above_ms": 1000.0,
        "phb_3_15_grade": 1.5,
    },
    "shooter": {
        "interp_payload_kBps_avg": 0.282,
        "interp_payload_kBps_max": 0.32,
        "dis1_3_15_payload_kBps_avg": 0.35,
        "dis1_3_15_payload_kBps_max": 0.486,
        "dis2_3_15_payload_kBps_avg": 0.35,
        "dis2_3_15_payload_kBps_max": 0.473,
        "phb_3_15_payload_kBps_avg": 0.35,
        "phb_3_15_payload_kBps_max": 0.46,
        "dis1_rate_increase_1_1": 0.65,
        "dis2_rate_increase_1_1": 0.70,
        "phb_rate_increase_1_1": 0.85,
        "dis1_tc_rate_increase": 0.20,
        "dis2_tc_rate_increase": 0.10,
        "dis1_snap_threshold_gain_px": 1.4,
        "dis1_linear_threshold_gain_px": 0.7,
        "dis2_snap_threshold_gain_px": 0.26,
        "dis2_linear_threshold_gain_px": 1.86,
        "dis1_snap_error_px_avg_to_400ms": 7.1,
        "dis2_linear_error_px_avg_to_400ms": 6.94,
        "dis2_snap_error_px_avg_to_400ms": 7.25,
        "dis1_snap_best_from_ms": 450.0,
        "interp_worst_until_ms": 750.0,
        "gprs_800ms_dis1_snap_error_px_avg": 17.93,
        "gprs_800ms_dis1_snap_error_px_max": 31.59,
        "umts_model1_payload_kBps_avg": 0.534,
        "umts_model1_payload_kBps_max": 0.757,
        "umts_model1_error_px_avg": 10.65,
        "umts_model1_error_px_max": 20.88,
        "umts_model1_grade": 2.0,
        "umts_model2_payload_kBps_avg": 0.595,
        "umts_model2_payload_kBps_max": 0.878,
        "umts_model2_error_px_avg": 7.3,
        "umts_model2_error_px_max": 21.30,
        "umts_model2_grade": 4.0,
        "umts_model3_payload_kBps_avg": 0.553,
        "umts_model3_payload_kBps_max": 0.841,
        "umts_model3_error_px_avg": 9.7,
        "umts_model3_error_px_max": 19.65,
        "umts_model3_grade": 1.5,
        "umts_bandwidth_8_players_kbit_s": 54.4,
    },
    "arcade": {
        "dis1_3_15_payload_kBps_avg": 0.26,
        "dis1_3_15_vs_interp_rate_ratio": 0.9,
        "dis1_rate_increase_1_1": 0.40,
        "dis2_rate_increase_1_1": 0.27,
        "phb_rate_increase_1_1": 0.27,
        "dis1_tc_rate_increase": 0.07,
        "dis2_tc_rate_increase": 0.11,
        "dis1_max_to_avg_rate": 2.0,
        "dis2_max_to_avg_rate": 1.9,
        "phb_max_to_avg_rate": 1.8,
        "interp_max_to_avg_rate": 1.25,
        "dis1_snap_tc_error_px_avg_800ms": 20.0,
        "tc_group_crossover_ms": 850.0,
        "models_equal_up_to_ms": 200.0,
        "dis1_linear_tc_vs_dis2_snap_max_error_ratio": 1.9,
        "umts_dis2_notc_payload_kBps_avg": 0.444,
        "umts_dis2_notc_payload_kBps_max": 0.852,
        "umts_dis2_notc_error_px_avg": 10.073,
        "umts_dis2_notc_error_px_max": 26.29,
        "umts_dis2_notc_grade": 2.0,
        "umts_dis1_tc100_payload_kBps_avg": 0.365,
        "umts_dis1_tc100_payload_kBps_max": 0.734,
        "umts_dis1_tc100_error_px_avg": 9.073,
        "umts_dis1_tc100_error_px_max": 21.24,
        "umts_dis1_tc100_grade": 1.5,
    },
}
"""Every number spec 000 §4.2-§4.5 gives per genre (units in the names)."""


def _label(
    setup: GenreSetup,
    model: str,
    conv: str = "linear",
    *,
    tc: bool = False,
    thr: tuple[float, float] = (1.0, 1.0),
) -> str:
    return ModelConfig(
        model=model,
        convergence=conv,
        threshold_px=thr[0],
        threshold_deg=thr[1],
        time_compensation=tc,
        position_time=setup.position_time,
    ).label


def reference_extractors(genre: str, setup: GenreSetup | None = None) -> dict[str, Extractor]:
    """Return, for every measurable thesis number of ``genre``, how to compute ours.

    Args:
        genre: ``sports``, ``simulation``, ``shooter`` or ``arcade``.
        setup: The genre setup (default ``GENRE_SETUPS[genre]``).

    Returns:
        Metric name -> function of the run index.
    """
    s = GENRE_SETUPS[genre] if setup is None else setup
    low = (3.0, 15.0)
    dis1 = _label(s, "dis1")
    dis2 = _label(s, "dis2")
    phb = _label(s, "phb")
    interp = "interpolation"

    def sweep(label: str, column: str, latency: float = 0.0) -> Extractor:
        return lambda ix: ix.get("sweep", latency, label, column)

    def rate_change(hi: str, lo: str, *, offset: float) -> Extractor:
        def f(ix: RunIndex) -> float | None:
            r = ratio(
                ix.get("sweep", 0, hi, "payload_kBps_avg"),
                ix.get("sweep", 0, lo, "payload_kBps_avg"),
            )
            return None if r is None else r - offset

        return f

    def max_to_avg(label: str) -> Extractor:
        return lambda ix: ratio(
            ix.get("sweep", 0, label, "payload_kBps_max"),
            ix.get("sweep", 0, label, "payload_kBps_avg"),
        )

    def gain(model: str, conv: str) -> Extractor:
        def f(ix: RunIndex) -> float | None:
            lats = sorted({float(r["latency_ms"]) for r in ix.rows("sweep")})  # type: ignore[arg-type]
            hi = ix.mean("sweep", lats, _label(s, model, conv, thr=low), "error_px_avg")
            lo = ix.mean("sweep", lats, _label(s, model, conv), "error_px_avg")
            return difference(hi, lo)

        return f

    def upto(label: str, limit: float) -> Extractor:
        def f(ix: RunIndex) -> float | None:
            lats = sorted({float(r["latency_ms"]) for r in ix.rows("sweep")})  # type: ignore[arg-type]
            return ix.mean("sweep", [x for x in lats if x <= limit], label, "error_px_avg")

        return f

    def real(profile: str, label: str, column: str) -> Extractor:
        latency = {"umts": 340.0, "gprs": 800.0, "l100": 100.0}[profile]
        return lambda ix: ix.get(profile, latency, label, column)

    out: dict[str, Extractor] = {}
    for short, config in s.thesis_models.items():
        for column in _REC:
            out[f"umts_{short}_{column}"] = real("umts", config.label, column)
    tc = {m: _label(s, m, tc=True) for m in ("dis1", "dis2")}
    if genre == "sports":
        out |= {
            "dis1_payload_kBps_avg": sweep(dis1, "payload_kBps_avg"),
            "interp_payload_kBps_avg": sweep(interp, "payload_kBps_avg"),
            "phb_payload_kBps_max": sweep(phb, "payload_kBps_max"),
            "interp_error_px_avg_400ms": sweep(interp, "error_px_avg", 400.0),
            "interp_error_px_avg_800ms": sweep(interp, "error_px_avg", 800.0),
        }
    elif genre == "simulation":
        phb_low = _label(s, "phb", thr=low)
        out |= {
            "phb_3_15_payload_kBps_avg": sweep(phb_low, "payload_kBps_avg"),
            "phb_3_15_payload_kBps_max": sweep(phb_low, "payload_kBps_max"),
            "dis1_rate_ratio_1_1_vs_3_15": rate_change(dis1, _label(s, "dis1", thr=low), offset=0),
            "phb_rate_ratio_1_1_vs_3_15": rate_change(phb, phb_low, offset=0),
            "dis1_tc_rate_increase": rate_change(tc["dis1"], dis1, offset=1),
            "dis1_tc_error_px_avg_800ms": sweep(tc["dis1"], "error_px_avg", 800.0),
            "dis1_tc_error_px_max_800ms": sweep(tc["dis1"], "error_px_max", 800.0),
            "gprs_phb_error_px_max": real(
                "gprs", _label(s, "phb", tc=True, thr=low), "error_px_max"
            ),
        }
    elif genre == "shooter":
        for model in ("dis1", "dis2", "phb"):
            lab_low = _label(s, model, thr=low)
            out[f"{model}_3_15_payload_kBps_avg"] = sweep(lab_low, "payload_kBps_avg")
            out[f"{model}_3_15_payload_kBps_max"] = sweep(lab_low, "payload_kBps_max")
            out[f"{model}_rate_increase_1_1"] = rate_change(_label(s, model), lab_low, offset=1)
        for model in ("dis1", "dis2"):
            out[f"{model}_tc_rate_increase"] = rate_change(tc[model], _label(s, model), offset=1)
            for conv in ("snap", "linear"):
                out[f"{model}_{conv}_threshold_gain_px"] = gain(model, conv)
        out |= {
            "interp_payload_kBps_avg": sweep(interp, "payload_kBps_avg"),
            "interp_payload_kBps_max": sweep(interp, "payload_kBps_max"),
            "dis1_snap_error_px_avg_to_400ms": upto(_label(s, "dis1", "snap"), 400.0),
            "dis2_linear_error_px_avg_to_400ms": upto(dis2, 400.0),
            "dis2_snap_error_px_avg_to_400ms": upto(_label(s, "dis2", "snap"), 400.0),
            "gprs_800ms_dis1_snap_error_px_avg": sweep(
                _label(s, "dis1", "snap"), "error_px_avg", 800.0
            ),
            "gprs_800ms_dis1_snap_error_px_max": sweep(
                _label(s, "dis1", "snap"), "error_px_max", 800.0
            ),
        }
    else:
        dis1_low = _label(s, "dis1", thr=low)
        for model in ("dis1", "dis2", "phb"):
            out[f"{model}_rate_increase_1_1"] = rate_change(
                _label(s, model), _label(s, model, thr=low), offset=1
            )
            out[f"{model}_max_to_avg_rate"] = max_to_avg(_label(s, model))
        for model in ("dis1", "dis2"):
            out[f"{model}_tc_rate_increase"] = rate_change(tc[model], _label(s, model), offset=1)

        def max_ratio(ix: RunIndex) -> float | None:
            lats = (200.0, 250.0, 300.0, 350.0, 400.0)
            return ratio(
                ix.mean("sweep", lats, tc["dis1"], "error_px_max"),
                ix.mean("sweep", lats, _label(s, "dis2", "snap"), "error_px_max"),
            )

        out |= {
            "dis1_3_15_payload_kBps_avg": sweep(dis1_low, "payload_kBps_avg"),
            "dis1_3_15_vs_interp_rate_ratio": rate_change(dis1_low, interp, offset=0),
            "interp_max_to_avg_rate": max_to_avg(interp),
            "dis1_snap_tc_error_px_avg_800ms": sweep(
                _label(s, "dis1", "snap", tc=True), "error_px_avg", 800.0
            ),
            "dis1_linear_tc_vs_dis2_snap_max_error_ratio": max_ratio,
        }
    return out
