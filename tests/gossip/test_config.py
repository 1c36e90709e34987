"""GossipConfig: thesis defaults and one-line validation errors."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.gossip import GossipConfig


def test_thesis_defaults() -> None:
    c = GossipConfig()
    assert (c.alpha_distance, c.alpha_angle, c.alpha_bandwidth, c.alpha_penalty) == (
        1.0,
        1.0,
        0.5,
        1.0,
    )
    assert c.max_hop == 2
    assert c.forward_delay_frames == (1, 4)
    assert c.forget_timeout == 10.0
    assert c.frame_time == 0.05
    assert c.duplicate_threshold == 2


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("alpha_angle", -1.0),
        ("alpha_penalty", float("nan")),
        ("fanout", 0),
        ("max_hop", 256),
        ("frame_time", 0.0),
        ("forward_delay_frames", (3, 2)),
        ("duplicate_threshold", 0),
        ("forget_timeout", -1.0),
        ("d_max", float("inf")),
        ("world_min", (2.0e6, 0.0, 0.0)),
        ("unknown_bandwidth", 1.5),
        ("map_id", -1),
        ("join_attempts", 0),
    ],
)
def test_rejects_out_of_range(field: str, value: object) -> None:
    with pytest.raises(ConfigError, match=field.split("_")[0]):
        GossipConfig(**{field: value})  # type: ignore[arg-type]


def test_all_alphas_zero_rejected() -> None:
    with pytest.raises(ConfigError, match="alpha"):
        GossipConfig(alpha_distance=0.0, alpha_angle=0.0, alpha_bandwidth=0.0)
