"""``gossip/improved``: both variants side by side, parameters chosen with ``--set``."""

from __future__ import annotations

import pytest

from lagless.errors import ConfigError
from lagless.lab import run


def test_quick_run_puts_improved_beside_faithful() -> None:
    result = run("gossip/improved", seed=0, quick=True, out=None)
    rows = {row["variant"]: row for row in result.tables["variants"]}
    assert set(rows) == {"faithful", "improved"}
    faithful, improved = rows["faithful"], rows["improved"]
    assert improved["join_all_known_s_mean"] < faithful["join_all_known_s_mean"]
    assert improved["join_known_share_after_spacing"] == 1.0
    assert faithful["table_fill_min"] == improved["table_fill_min"] == 1.0
    assert result.metrics["improved_join_all_known_s_mean_n16"] == pytest.approx(
        improved["join_all_known_s_mean"]
    )


def test_one_variant_can_run_alone() -> None:
    result = run(
        "gossip/improved", seed=0, quick=True, out=None, overrides={"variants": ["improved"]}
    )
    assert [row["variant"] for row in result.tables["variants"]] == ["improved"]
    assert not any(name.startswith("faithful_") for name in result.metrics)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"variants": ["fast"]}, "variants must be a non-empty list"),
        ({"variants": []}, "variants must be a non-empty list"),
        ({"sizes": [1]}, "sizes must be ints >= 2"),
        ({"push_limit": 70000}, "push_limit must be in"),
        ({"wide_rate": -5}, "wide_rate must be"),
    ],
)
def test_bad_parameters_are_config_errors(overrides, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        run("gossip/improved", seed=0, quick=True, out=None, overrides=overrides)
