"""Lag compensation: hit claims judged at the shooter's view time (spec 000 §2.11, §5.2.4)."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lagless.errors import ConfigError, LocalProtocolError
from lagless.replication.lagcomp import (
    HitBox,
    HitCircle,
    HitClaim,
    HitHistory,
    HitRejectReason,
    LagCompConfig,
    LagCompensator,
    interpolate_shape,
    ray_distance,
)

TICK = 0.05  # s
SHOOTER, TARGET = 1, 2


def test_ray_distance_circle_and_box() -> None:
    circle = HitCircle(10.0, 0.0, 1.0)
    assert ray_distance(circle, (0.0, 0.0), (1.0, 0.0)) == pytest.approx(9.0)
    assert ray_distance(circle, (0.0, 0.0), (-1.0, 0.0)) is None  # behind the shooter
    assert ray_distance(circle, (0.0, 1.5), (1.0, 0.0)) is None
    assert ray_distance(circle, (0.0, 1.5), (1.0, 0.0), margin=0.6) is not None
    assert ray_distance(circle, (10.0, 0.5), (0.0, 1.0)) == 0.0  # starts inside
    box = HitBox(10.0, 0.0, 1.0, 2.0)
    assert ray_distance(box, (0.0, 1.9), (2.0, 0.0)) == pytest.approx(9.0)
    assert ray_distance(box, (0.0, 2.1), (1.0, 0.0)) is None
    assert ray_distance(box, (10.0, -5.0), (0.0, 1.0)) == pytest.approx(3.0)
    assert ray_distance(box, (0.0, 0.0), (1.0, 1.0)) is None
    diagonal = ray_distance(box, (0.0, -9.0), (1.0, 1.0))
    assert diagonal == pytest.approx(math.sqrt(2) * 9.0)


def test_interpolate_shape() -> None:
    assert interpolate_shape(HitCircle(0, 0, 1), HitCircle(2, 4, 3), 0.5) == HitCircle(1, 2, 2)
    assert interpolate_shape(HitBox(0, 0, 1, 1), HitBox(2, 2, 1, 3), 0.25) == HitBox(
        0.5, 0.5, 1, 1.5
    )
    assert interpolate_shape(HitCircle(0, 0, 1), HitBox(2, 2, 1, 1), 0.75) == HitBox(2, 2, 1, 1)


def test_history_interpolates_and_forgets() -> None:
    history = HitHistory(1.0)
    for i in range(41):
        shapes = {TARGET: HitCircle(float(i), 0.0, 0.5)}
        if i < 20:
            shapes[3] = HitCircle(0.0, float(i), 0.5)
        history.record(i * TICK, shapes)
    target = history.shape_at(TARGET, 1.525)
    assert isinstance(target, HitCircle)
    assert target.x == pytest.approx(30.5)
    assert history.shape_at(3, 0.95) is not None
    assert history.shape_at(3, 0.975) is None  # gone at 1.0 s: not in both records
    assert history.shape_at(TARGET, 2.1) is None  # the future
    assert history.oldest is not None
    assert history.oldest == pytest.approx(0.95)  # 1 s kept plus the record before it
    assert history.shape_at(TARGET, 0.9) is None
    with pytest.raises(LocalProtocolError):
        history.record(2.0, {})


def moving_target(comp: LagCompensator, until: float) -> None:
    """Target runs along +y at 10 m/s at x = 20; the shooter stands at the origin."""
    t = 0.0
    while t <= until + 1e-9:
        comp.record(t, {SHOOTER: HitCircle(0.0, 0.0, 0.5), TARGET: HitCircle(20.0, 10.0 * t, 0.5)})
        t = round(t + TICK, 9)


def aim_at(t: float) -> tuple[float, float]:
    """Direction from the shooter to where the target was at ``t``."""
    return 20.0, 10.0 * t


def test_stamped_claim_hits_where_the_shooter_saw_the_target() -> None:
    comp = LagCompensator()
    moving_target(comp, 2.0)
    now, rtt, interp = 2.0, 0.2, 0.1
    view = now - interp - rtt / 2  # 1.8 s: target at y = 18
    verdict = comp.evaluate(
        HitClaim(SHOOTER, TARGET, (0.0, 0.0), aim_at(view), view),
        now,
        rtt=rtt,
        interpolation_delay=interp,
    )
    assert verdict.accepted
    assert verdict.time == pytest.approx(view)
    assert verdict.rewind == pytest.approx(0.2)
    # without lag compensation the same shot misses: the target is 2 m further now
    direct = comp.evaluate(
        HitClaim(SHOOTER, TARGET, (0.0, 0.0), aim_at(view), now),
        now,
        rtt=0.0,
        interpolation_delay=0.0,
    )
    assert direct.reason is HitRejectReason.MISS
    assert comp.accepted == 1
    assert comp.rejected() == {HitRejectReason.MISS: 1}


def test_unstamped_claim_searches_the_window() -> None:
    comp = LagCompensator(LagCompConfig(time_tolerance=0.05))
    moving_target(comp, 2.0)
    # the shooter really looked at 1.76 s; the server's estimate is 1.8 s (within 0.05 s)
    claim = HitClaim(SHOOTER, TARGET, (0.0, 0.0), aim_at(1.76))
    verdict = comp.evaluate(claim, 2.0, rtt=0.2, interpolation_delay=0.1)
    assert verdict.accepted
    assert verdict.time is not None
    assert abs(verdict.time - 1.76) <= 0.05
    far = HitClaim(SHOOTER, TARGET, (0.0, 0.0), aim_at(1.6))
    assert comp.evaluate(far, 2.0, rtt=0.2, interpolation_delay=0.1).reason is HitRejectReason.MISS


def test_impossible_claims_rejected_by_reason() -> None:
    comp = LagCompensator(LagCompConfig(max_rewind=0.5, history=1.0, weapon_range=15.0))
    moving_target(comp, 2.0)
    now, rtt, interp = 2.0, 0.2, 0.1

    def judge(claim: HitClaim, *, rtt: float = rtt) -> HitRejectReason | None:
        return comp.evaluate(claim, now, rtt=rtt, interpolation_delay=interp).reason

    origin = (0.0, 0.0)
    assert judge(HitClaim(SHOOTER, TARGET, origin, aim_at(2.0), 2.1)) is HitRejectReason.FROM_FUTURE
    assert judge(HitClaim(SHOOTER, TARGET, origin, aim_at(1.4), 1.4)) is HitRejectReason.TOO_OLD
    assert (
        judge(HitClaim(SHOOTER, TARGET, origin, aim_at(1.6), 1.6)) is HitRejectReason.TIME_MISMATCH
    )
    assert judge(HitClaim(SHOOTER, TARGET, origin, (-1.0, 0.0), 1.8)) is HitRejectReason.MISS
    assert (
        judge(HitClaim(SHOOTER, TARGET, (5.0, 5.0), aim_at(1.8), 1.8))
        is HitRejectReason.ORIGIN_MISMATCH
    )
    assert judge(HitClaim(9, TARGET, origin, aim_at(1.8), 1.8)) is HitRejectReason.SHOOTER_NOT_ALIVE
    assert judge(HitClaim(SHOOTER, 9, origin, aim_at(1.8), 1.8)) is HitRejectReason.TARGET_NOT_ALIVE
    assert (
        judge(HitClaim(SHOOTER, TARGET, origin, aim_at(1.8), 1.8)) is HitRejectReason.OUT_OF_RANGE
    )
    assert judge(HitClaim(SHOOTER, SHOOTER, origin, aim_at(1.8), 1.8)) is HitRejectReason.MALFORMED
    assert judge(HitClaim(SHOOTER, TARGET, origin, (0.0, 0.0), 1.8)) is HitRejectReason.MALFORMED
    assert (
        judge(HitClaim(SHOOTER, TARGET, origin, aim_at(1.8), math.nan)) is HitRejectReason.MALFORMED
    )
    assert judge(HitClaim(SHOOTER, TARGET, origin, aim_at(1.8), 1.8), rtt=math.inf) is (
        HitRejectReason.MALFORMED
    )
    assert comp.accepted == 0
    assert sum(comp.rejected().values()) == 12


def test_dead_target_and_dead_shooter() -> None:
    comp = LagCompensator()
    for i in range(21):
        t = i * TICK
        shapes = {SHOOTER: HitCircle(0.0, 0.0, 0.5)} if t < 0.8 else {}
        if t < 0.5:
            shapes[TARGET] = HitBox(10.0, 0.0, 0.5, 0.5)
        comp.record(t, shapes)
    # the target died at 0.5 s: a shot seen at 0.45 s still counts, one at 0.6 s does not
    hit = HitClaim(SHOOTER, TARGET, (0.0, 0.0), (1.0, 0.0), 0.45)
    assert comp.evaluate(hit, 0.55, rtt=0.0, interpolation_delay=0.1).accepted
    late = HitClaim(SHOOTER, TARGET, (0.0, 0.0), (1.0, 0.0), 0.6)
    assert comp.evaluate(late, 0.7, rtt=0.0, interpolation_delay=0.1).reason is (
        HitRejectReason.TARGET_NOT_ALIVE
    )
    ghost = HitClaim(SHOOTER, TARGET, (0.0, 0.0), (1.0, 0.0), 0.45)
    assert comp.evaluate(ghost, 1.0, rtt=0.0, interpolation_delay=0.55).reason is (
        HitRejectReason.SHOOTER_NOT_ALIVE
    )


def test_empty_history_rejects() -> None:
    comp = LagCompensator()
    claim = HitClaim(SHOOTER, TARGET, (0.0, 0.0), (1.0, 0.0), 0.0)
    assert comp.evaluate(claim, 0.0, rtt=0.0, interpolation_delay=0.0).reason is (
        HitRejectReason.SHOOTER_NOT_ALIVE
    )


def test_config_validation() -> None:
    with pytest.raises(ConfigError):
        LagCompConfig(max_rewind=2.0, history=1.0)
    with pytest.raises(ConfigError):
        LagCompConfig(time_tolerance=-1.0)
    with pytest.raises(ConfigError):
        HitHistory(0.0)


def test_no_rewind_tests_the_newest_record() -> None:
    comp = LagCompensator(LagCompConfig(time_tolerance=0.0))
    moving_target(comp, 2.0)
    now = 2.02  # between ticks: the newest record is at 2.0 s
    at_present = HitClaim(SHOOTER, TARGET, (0.0, 0.0), aim_at(2.0))
    assert comp.evaluate(at_present, now, rtt=0.0, interpolation_delay=0.0).time == 2.0
    seen_earlier = HitClaim(SHOOTER, TARGET, (0.0, 0.0), aim_at(1.8))
    verdict = comp.evaluate(seen_earlier, now, rtt=0.0, interpolation_delay=0.0)
    assert verdict.reason is HitRejectReason.MISS  # without compensation the shooter must lead


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    st.floats(0.15, 0.9),  # rewind (s)
    st.floats(-1.2, 1.2),  # aim offset across the target, in radii
    st.floats(0.0, 0.3),  # rtt (s)
)
def test_claim_accepted_iff_the_ray_crosses_the_drawn_shape(
    rewind: float, offset: float, rtt: float
) -> None:
    assume(abs(abs(offset) - 1.0) > 1e-6)  # not a tangent, where rounding decides
    comp = LagCompensator(LagCompConfig(shape_margin=0.0))
    moving_target(comp, 2.0)
    now = 2.0
    view = now - rewind
    interp = rewind - rtt / 2.0  # the delay that makes the server's estimate the view time
    cx, cy = aim_at(view)
    length = math.hypot(cx, cy)
    nx, ny = -cy / length, cx / length  # unit normal of the line of sight
    aim = (cx + nx * offset * 0.5, cy + ny * offset * 0.5)
    verdict = comp.evaluate(
        HitClaim(SHOOTER, TARGET, (0.0, 0.0), aim, view), now, rtt=rtt, interpolation_delay=interp
    )
    drawn = HitCircle(cx, cy, 0.5)
    assert verdict.accepted == (ray_distance(drawn, (0.0, 0.0), aim) is not None)
    if verdict.accepted:
        assert verdict.time == pytest.approx(view)
