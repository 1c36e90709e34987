"""One VFC lab run: bots, an interest policy and the update codecs, round by round, measured.

Implements the synthetic reproduction of spec 001 §6.3: N bots (``lagless.interest.mobility``)
write their avatars every 33 ms round, the server policy (VFC or a baseline) decides the sends,
every client's due records are packed into datagrams exactly as ``VfcServer`` packs them
(``lagless.interest.records``), and each client's replica is updated from what it receives. The
run measures server and client traffic, the full-broadcast baseline, the replica error per zone,
the bound-trigger histogram and the filtered event bytes. It runs the policy and codecs directly,
without the transport, for speed; ``tests/interest/test_server.py`` covers the same pieces over the
simulated network.

Accounting decisions (spec 001 §5.1, §6.2; pinned in ``tests/lab/vfc/test_sim.py``):

* Payload bytes are the compressed datagram payloads; ``*_kBps`` columns add the 28-byte IPv4+UDP
  header per datagram, ``*_payload_kBps`` columns do not. kB = 1000 bytes.
* Broadcast baseline payload is counted exactly as §5.1: every update a client sends (its record
  compressed alone, ``4 + nonzero`` bytes) × (N - 1). Its headers are counted as if the original
  server also packed each recipient's updates of a round into datagrams of at most 37 records, so
  header aggregation does not favour VFC (``test_broadcast_counts_section_5_1``).
* Replica error: after each round's deliveries (no network latency in the lab, so broadcast's
  error is the quantisation error), the distance in metres between each client's replica of every
  other avatar and that avatar's true position, grouped by the true distance into the normal
  view's zones (≤ 300, ≤ 600, > 600 world units) for every policy so that columns compare;
  pairs the client never received are counted apart (``missing_fraction``). p99 comes from a 1 cm
  histogram.
* The first ``warmup`` seconds (initial snapshot) are excluded from every figure.
* Delta encoding: acknowledgements reach the server ``ack_rounds`` rounds after a delivered send;
  a lost datagram is never acknowledged, so its records never become baselines.
* Client incoming (E3): each client's own bytes (with headers) against what broadcast would
  have sent it (every other client's changed update, ``4 + nonzero`` bytes, its headers packed
  37 records a datagram), so ``client_ratio_min`` / ``_max`` / ``_mean`` spread over clients
  (``client_ratio`` stays the ratio of the means). ``client_in_cv`` (and
  ``broadcast_client_in_cv``) is the coefficient of variation of a client's incoming bytes over
  consecutive ``RATE_WINDOW`` windows of 10 rounds (0.33 s, one full cycle of the slowest θ of
  Table 5.1, so it measures the rate's drift, not the round-by-round sawtooth), averaged over
  clients; an incomplete last window is left out (``test_client_incoming_spread``).
* ``round_ms_avg`` is always ``None`` here: the measured server-round time is wall-clock and
  lives only in ``timings.json`` (see ``lagless.lab.experiments.vfc``); ``rounds`` is the
  number of measured rounds it divides by.
* Events (E7): every jump is a positional sound (radius 300 units, 6 bytes) and every bot fires
  once a second a shot (20 bytes) along its look direction, 0-50 m long, filtered with zone ≤ 1;
  filtered bytes are ``size × (N - relevant)`` with the sender counted relevant (§5.1).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from lagless.errors import ConfigError
from lagless.interest import (
    AuraPolicy,
    BroadcastPolicy,
    GridPolicy,
    InterestConfig,
    Trigger,
    VfcConfig,
    VfcPolicy,
    View,
    normal_view,
    vfc_view,
    zoom_view,
)
from lagless.interest.mobility import Bots, BotsConfig, Mobility, get_map
from lagless.interest.records import (
    CUBE_UNIT,
    MAX_RECORDS_PER_DATAGRAM,
    RECORD_DTYPE,
    RECORD_SIZE,
    compressed_sizes,
    delta_record_bits,
    dequantise_headings,
    dequantise_positions,
)

__all__ = ["HEADER_BYTES", "RATE_WINDOW", "RunConfig", "RunResult", "simulate"]

HEADER_BYTES: Final = 28  # bytes: IPv4 (20) + UDP (8) header per datagram
ROUND: Final = 0.033  # seconds (spec 001 §2.9)
ERROR_BIN: Final = 0.01  # metres: histogram step of the replica error (p99)
ERROR_BINS: Final = 20000  # bins: errors beyond 200 m land in the last one
SOUND_RADIUS: Final = 300.0 * CUBE_UNIT  # metres
SOUND_BYTES: Final = 6  # bytes of a positional sound event (assumption)
SHOT_BYTES: Final = 20  # bytes of a shot-effect event (assumption, Cube 2 N_SHOTFX order)
SHOT_RATE: Final = 1.0  # shots per second per bot
SHOT_RANGE: Final = 50.0  # metres
SHOT_MAX_ZONE: Final = 1
RATE_WINDOW: Final = 10  # rounds: 0.33 s, one cycle of the slowest θ (300 ms) of Table 5.1
VIEWS: Final[dict[str, Callable[[float], View]]] = {
    "normal": normal_view,
    "zoom": zoom_view,
    "vfc": vfc_view,
}
POLICIES: Final = ("vfc", "broadcast", "aura", "grid")
ENCODINGS: Final = ("records", "delta")
AnyPolicy = VfcPolicy | BroadcastPolicy | AuraPolicy | GridPolicy
_ZONE_RADII: Final = (300.0 * CUBE_UNIT, 600.0 * CUBE_UNIT)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """One run: map, players, policy and view, encoding, duration and network."""

    map: str
    """A map of Table 5.4."""
    players: int
    """Number of bots (≥ 2)."""
    policy: str = "vfc"
    """``vfc``, ``broadcast``, ``aura`` or ``grid``."""
    view: str = "normal"
    """``normal``, ``zoom`` or ``vfc`` (thesis Tables 5.1-5.3); VFC policy only."""
    mobility: str | None = None
    """``spread``, ``clustered`` or ``None`` for the map's default."""
    seconds: float = 120.0
    """Measured simulated time, seconds (after ``warmup``)."""
    warmup: float = 1.0
    """Seconds run before measuring."""
    encoding: str = "records"
    """``records`` (thesis) or ``delta`` (quantised delta against the last acked value)."""
    loss: float = 0.0
    """Probability that a server→client datagram is lost."""
    ack_rounds: int = 3
    """Rounds between a delivered send and its acknowledgement at the server (delta)."""
    aoi_radius: float = 600.0 * CUBE_UNIT
    """Aura radius and grid cell side of the AoI baselines, metres."""
    terrain_amplitude: float = 4.0
    """Ground bump height, metres."""
    jump_rate: float = 0.2
    """Jumps per second per bot."""

    def __post_init__(self) -> None:
        """Validate.

        Raises:
            ConfigError: naming the offending field.
        """
        get_map(self.map)
        if not isinstance(self.players, int) or self.players < 2:
            raise ConfigError(f"players must be an int >= 2, got {self.players!r}")
        if self.policy not in POLICIES:
            raise ConfigError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.view not in VIEWS:
            raise ConfigError(f"view must be one of {tuple(VIEWS)}, got {self.view!r}")
        if self.encoding not in ENCODINGS:
            raise ConfigError(f"encoding must be one of {ENCODINGS}, got {self.encoding!r}")
        if self.mobility is not None and self.mobility not in {m.value for m in Mobility}:
            raise ConfigError(f"mobility must be spread, clustered or None, got {self.mobility!r}")
        if not 0.0 < self.seconds < math.inf or not 0.0 <= self.warmup < math.inf:
            raise ConfigError("seconds must be > 0 and warmup >= 0")
        if not 0.0 <= self.loss < 1.0:
            raise ConfigError(f"loss must be in [0, 1), got {self.loss!r}")
        if not isinstance(self.ack_rounds, int) or self.ack_rounds < 1:
            raise ConfigError(f"ack_rounds must be an int >= 1, got {self.ack_rounds!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunResult:
    """What one run measured (rates in kB/s, errors in metres)."""

    row: dict[str, float | int | str | None]
    """The run's row of the ``runs`` table."""
    triggers: dict[str, int]
    """Sends by the trigger each is attributed to (``first``, ``theta``, ``sigma``, ``nu``)."""
    exceeded: dict[str, int]
    """Every bound exceeded at a send."""
    record_bytes: float
    """Mean bytes per record sent (compressed share, or delta bits / 8)."""
    client_in_series: list[float]
    """Bytes client 0 received per round, over the measured rounds."""


def _policy(cfg: RunConfig) -> AnyPolicy:
    base = InterestConfig(dim=3, initial_clients=cfg.players, initial_objects=cfg.players)
    if cfg.policy == "vfc":
        view = VIEWS[cfg.view](CUBE_UNIT)
        return VfcPolicy(
            VfcConfig(
                dim=3,
                initial_clients=cfg.players,
                initial_objects=cfg.players,
                default_view=view,
            )
        )
    if cfg.policy == "broadcast":
        return BroadcastPolicy(base)
    if cfg.policy == "aura":
        return AuraPolicy(cfg.aoi_radius, base)
    return GridPolicy(cfg.aoi_radius, base)


class _ErrorStats:
    """Per-zone replica error accumulator (sum, count, 1 cm histogram)."""

    def __init__(self) -> None:
        self.total = np.zeros(3)
        self.hist = np.zeros((3, ERROR_BINS), dtype=np.int64)
        self.missing = 0
        self.pairs = 0

    def add(
        self, err: npt.NDArray[np.float64], zone: npt.NDArray[np.intp], have: npt.NDArray[np.bool_]
    ) -> None:
        self.pairs += int(zone.size)
        self.missing += int((~have).sum())
        e, z = err[have], zone[have]
        bins = np.minimum((e / ERROR_BIN).astype(np.int64), ERROR_BINS - 1)
        for k in range(3):
            sel = z == k
            self.total[k] += float(e[sel].sum())
            self.hist[k] += np.bincount(bins[sel], minlength=ERROR_BINS)

    def row(self) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for k in range(3):
            count = int(self.hist[k].sum())
            avg = float(self.total[k]) / count if count else None
            p99 = None
            if count:
                cum = np.cumsum(self.hist[k])
                p99 = (int(np.searchsorted(cum, 0.99 * count)) + 1) * ERROR_BIN
            out[f"error_zone{k}_m_avg"] = None if avg is None else round(avg, 4)
            out[f"error_zone{k}_m_p99"] = None if p99 is None else round(p99, 4)
        out["missing_fraction"] = round(self.missing / self.pairs, 6) if self.pairs else None
        return out


def _chunk_starts(clients: npt.NDArray[np.intp], n: int) -> npt.NDArray[np.intp]:
    """Index of the first pair of every datagram: per client, every 37 pairs (plan is sorted)."""
    if clients.size == 0:
        return np.zeros(0, dtype=np.intp)
    counts = np.bincount(clients, minlength=n)
    offsets = np.concatenate(([0], np.cumsum(counts)[:-1]))
    within = np.arange(clients.size) - offsets[clients]
    return np.flatnonzero(within % MAX_RECORDS_PER_DATAGRAM == 0)


def simulate(
    cfg: RunConfig,
    *,
    rng: np.random.Generator,
    timer: Callable[[], AbstractContextManager[None]] | None = None,
    progress: Callable[[], None] | None = None,
) -> RunResult:
    """Run one configuration and measure it (see the module docstring for the accounting).

    Args:
        cfg: the run's configuration.
        rng: the run's generator (bots, losses).
        timer: a context manager factory wrapped around each measured server round (policy round
            and packing); the caller reads the time it accumulates.
        progress: called once per round.

    Returns:
        The measured figures.
    """
    n = cfg.players
    spec = get_map(cfg.map)
    mobility = None if cfg.mobility is None else Mobility(cfg.mobility)
    bots = Bots(
        BotsConfig(
            count=n,
            map=spec,
            mobility=mobility,
            terrain_amplitude=cfg.terrain_amplitude,
            jump_rate=cfg.jump_rate,
        ),
        rng=rng,
    )
    policy = _policy(cfg)
    ids = np.arange(n)
    for c in range(n):
        policy.add_client()
        policy.add_object(owner=c)
    for c in range(n):
        policy.set_pivots(c, [c])
    time_box = timer if timer is not None else contextlib.nullcontext
    replica = np.zeros((n, n, 3))
    have = np.zeros((n, n), dtype=np.bool_)
    np.fill_diagonal(have, True)
    baseline = np.zeros((n, n), dtype=RECORD_DTYPE)
    inflight: list[
        tuple[int, npt.NDArray[np.intp], npt.NDArray[np.intp], npt.NDArray[np.void]]
    ] = []
    previous = np.zeros(n, dtype=RECORD_DTYPE)
    errors = _ErrorStats()
    warm_rounds = round(cfg.warmup / ROUND)
    total_rounds = warm_rounds + round(cfg.seconds / ROUND)
    sums = dict.fromkeys(
        ("server_payload", "server_dgrams", "bcast_payload", "bcast_dgrams", "records"), 0.0
    )
    event_bytes = dict.fromkeys(("sound_total", "sound_sent", "shot_total", "shot_sent"), 0)
    client_in = np.zeros(n)
    client_rounds: list[npt.NDArray[np.float64]] = []
    bcast_rounds: list[npt.NDArray[np.float64]] = []
    series: list[float] = []
    start_stats = policy.statistics()
    now = 0.0
    for r in range(total_rounds):
        now = r * ROUND
        measuring = r >= warm_rounds
        if r == warm_rounds:
            start_stats = policy.statistics()
        was_airborne = bots.airborne.copy()
        bots.step(ROUND, rng=rng)
        records = bots.records(ids)
        raw = records.view(np.uint8).reshape(n, RECORD_SIZE)
        changed_mask = np.any(raw != previous.view(np.uint8).reshape(n, RECORD_SIZE), axis=1)
        previous = records
        nonzero = np.count_nonzero(raw, axis=1)
        positions = dequantise_positions(records)
        sent_ids = ids[changed_mask]
        policy.update_received(
            sent_ids,
            positions[sent_ids],
            None,
            now,
            headings=dequantise_headings(records[sent_ids]),
        )
        while inflight and inflight[0][0] <= r:
            _, ac, ao, arec = inflight.pop(0)
            baseline[ac, ao] = arec
        with time_box():
            plan = policy.round(now)
            clients, objects = plan.clients, plan.objects
            starts = _chunk_starts(clients, n)
            if cfg.encoding == "records":
                sizes = compressed_sizes(nonzero[objects], starts)
                bits = None
            else:
                bits = delta_record_bits(records[objects], baseline[clients, objects])
                chunk_bits = np.add.reduceat(bits, starts) if starts.size else np.zeros(0, np.int64)
                sizes = 2 + (chunk_bits + 7) // 8
        delivered = np.ones(clients.size, dtype=np.bool_)
        if cfg.loss > 0.0 and starts.size:
            lost = rng.uniform(0.0, 1.0, starts.size) < cfg.loss
            counts = np.diff(np.append(starts, clients.size))
            delivered = ~np.repeat(lost, counts)
        dc, do = clients[delivered], objects[delivered]
        replica[dc, do] = positions[do]
        have[dc, do] = True
        if cfg.encoding == "delta":
            inflight.append((r + cfg.ack_rounds, dc, do, records[do]))
        truth = bots.positions
        if measuring:
            k = int(changed_mask.sum())
            sums["server_payload"] += float(sizes.sum())
            sums["server_dgrams"] += float(starts.size)
            sums["records"] += float(clients.size)
            sums["bcast_payload"] += float((4 + nonzero[changed_mask]).sum()) * (n - 1)
            per_recipient = k - changed_mask.astype(np.int64)
            sums["bcast_dgrams"] += float(np.ceil(per_recipient / MAX_RECORDS_PER_DATAGRAM).sum())
            round_in = np.bincount(
                clients[starts], weights=sizes + HEADER_BYTES, minlength=n
            ).astype(np.float64)
            client_in += round_in
            client_rounds.append(round_in)
            own = np.where(changed_mask, 4 + nonzero, 0)
            bcast_rounds.append(
                (own.sum() - own) + HEADER_BYTES * np.ceil(per_recipient / MAX_RECORDS_PER_DATAGRAM)
            )
            series.append(float(round_in[0]))
            delta = replica - truth[None, :, :]
            err = np.sqrt(np.einsum("ijk,ijk->ij", delta, delta))
            sep = truth[:, None, :] - truth[None, :, :]
            dist = np.sqrt(np.einsum("ijk,ijk->ij", sep, sep))
            zone = (dist > _ZONE_RADII[0]).astype(np.intp) + (dist > _ZONE_RADII[1])
            off = ~np.eye(n, dtype=np.bool_)
            errors.add(err[off], zone[off], have[off])
            _events(policy, bots, was_airborne, rng, event_bytes)
        if progress is not None:
            progress()
    seconds = (total_rounds - warm_rounds) * ROUND
    end_stats = policy.statistics()
    row = _row(cfg, sums, client_in, seconds, errors, event_bytes)
    row.update(_client_spread(client_rounds, bcast_rounds))
    names = {
        Trigger.FIRST: "first",
        Trigger.THETA: "theta",
        Trigger.SIGMA: "sigma",
        Trigger.NU: "nu",
    }
    triggers = {
        label: end_stats.triggers[t] - start_stats.triggers[t] for t, label in names.items()
    }
    exceeded = {
        label: end_stats.exceeded[t] - start_stats.exceeded[t]
        for t, label in names.items()
        if t in end_stats.exceeded
    }
    per_record = sums["server_payload"] / sums["records"] if sums["records"] else 0.0
    return RunResult(
        row=row,
        triggers=triggers,
        exceeded=exceeded,
        record_bytes=round(per_record, 4),
        client_in_series=series,
    )


def _cv(per_round: list[npt.NDArray[np.float64]]) -> float | None:
    """Mean over clients of the coefficient of variation of incoming bytes per window."""
    windows = len(per_round) // RATE_WINDOW
    if windows < 2:
        return None
    stacked = np.stack(per_round[: windows * RATE_WINDOW])
    sums = stacked.reshape(windows, RATE_WINDOW, -1).sum(axis=1)
    mean = sums.mean(axis=0)
    cv = np.divide(sums.std(axis=0), mean, out=np.zeros_like(mean), where=mean > 0)
    return round(float(cv.mean()), 4)


def _client_spread(
    client_rounds: list[npt.NDArray[np.float64]], bcast_rounds: list[npt.NDArray[np.float64]]
) -> dict[str, float | int | str | None]:
    """Per-client incoming ratios and the rates' variation over time (E3)."""
    got = np.stack(client_rounds).sum(axis=0)
    full = np.stack(bcast_rounds).sum(axis=0)
    ratios = full[got > 0] / got[got > 0]
    return {
        "client_ratio_min": round(float(ratios.min()), 4) if ratios.size else None,
        "client_ratio_max": round(float(ratios.max()), 4) if ratios.size else None,
        "client_ratio_mean": round(float(ratios.mean()), 4) if ratios.size else None,
        "client_in_cv": _cv(client_rounds),
        "broadcast_client_in_cv": _cv(bcast_rounds),
    }


def _events(
    policy: AnyPolicy,
    bots: Bots,
    was_airborne: npt.NDArray[np.bool_],
    rng: np.random.Generator,
    out: dict[str, int],
) -> None:
    """Count positional sound and shot event bytes with and without filtering (E7)."""
    n = bots.config.count
    positions = bots.positions
    jumps = np.flatnonzero(bots.airborne & ~was_airborne)
    for b in jumps.tolist():
        concerned = policy.filter_sound(positions[b], SOUND_RADIUS)
        concerned[b] = True
        out["sound_total"] += SOUND_BYTES * (n - 1)
        out["sound_sent"] += SOUND_BYTES * (int(concerned.sum()) - 1)
    shooters = np.flatnonzero(rng.uniform(0.0, 1.0, n) < SHOT_RATE * ROUND)
    if shooters.size == 0:
        return
    reach = rng.uniform(0.0, SHOT_RANGE, shooters.size)
    targets = positions[shooters] + bots.headings[shooters] * reach[:, None]
    for b, target in zip(shooters.tolist(), targets, strict=True):
        concerned = policy.filter_shot(positions[b], target, SHOT_MAX_ZONE)
        concerned[b] = True
        out["shot_total"] += SHOT_BYTES * (n - 1)
        out["shot_sent"] += SHOT_BYTES * (int(concerned.sum()) - 1)


def _row(
    cfg: RunConfig,
    sums: dict[str, float],
    client_in: npt.NDArray[np.float64],
    seconds: float,
    errors: _ErrorStats,
    events: dict[str, int],
) -> dict[str, float | int | str | None]:
    n = cfg.players

    def rate(total: float) -> float:
        return round(total / seconds / 1000.0, 4)

    server = sums["server_payload"] + HEADER_BYTES * sums["server_dgrams"]
    bcast = sums["bcast_payload"] + HEADER_BYTES * sums["bcast_dgrams"]
    bcast_client = bcast / n
    mean_in = float(client_in.mean())
    row: dict[str, float | int | str | None] = {
        "map": cfg.map,
        "players": n,
        "view": cfg.view if cfg.policy == "vfc" else "-",
        "policy": cfg.policy,
        "mobility": cfg.mobility or get_map(cfg.map).mobility.value,
        "encoding": cfg.encoding,
        "loss": cfg.loss,
        "server_out_kBps": rate(server),
        "broadcast_out_kBps": rate(bcast),
        "ratio": round(bcast / server, 4) if server else None,
        "server_out_payload_kBps": rate(sums["server_payload"]),
        "broadcast_out_payload_kBps": rate(sums["bcast_payload"]),
        "ratio_payload": (
            round(sums["bcast_payload"] / sums["server_payload"], 4)
            if sums["server_payload"]
            else None
        ),
        "client_in_kBps": rate(mean_in),
        "client_ratio": round(bcast_client / mean_in, 4) if mean_in else None,
    }
    row.update(errors.row())
    row["event_sent_kBps"] = rate(events["sound_sent"] + events["shot_sent"])
    row["event_unfiltered_kBps"] = rate(events["sound_total"] + events["shot_total"])
    row["rounds"] = round(seconds / ROUND)
    row["round_ms_avg"] = None
    return row
