"""Named network profiles: frozen up/down link settings with their sources (STYLE §2 netsim).

Implements spec 000 §2.0 Table 2.2 and §3.7 (GPRS and UMTS as simulated in the thesis), spec 004
§5.3.3/§6.0 (settings L40/J20 and L80/J40), spec 003 §6.3 (the ns-2 link with 1 s RTT), and typical
figures for other access networks so experiments can sweep realistic conditions.

Decisions:
    * ``up`` is client → server and ``down`` is server → client (``Network.set_profile(a, b, p)``
      puts ``up`` on a → b).
    * GPRS/UMTS map the Table 2.2 RTT to a one-way latency of RTT/2 per direction (spec 000 §2.0
      "latency ≈ RTT/2"; §3.5.2.3 takes UMTS one way ≈ 170 ms). The thesis simulated the whole
      client → server → client delay as one mobile RTT; with two mobile clients behind a relay the
      path A → server → B crosses two one-way links and sees exactly that RTT as its minimum delay
      (``test_profiles.py::test_gprs_and_umts_follow_table_2_2``).
    * Their jitter follows spec 000 §3.7, ``delay = latency · (1 + U(0, jitter%))``: uniform
      U(0, jitter% · one-way latency); the latency is the minimum delay.
    * Their loss is the Table 2.2 bound ("< 5 %", "< 1 %") applied independently on each direction,
      so a relayed client-to-client path loses 1 - (1 - p)² (spec 000 §3.7 drew one loss per event).
    * Their bandwidth is unlimited because the thesis did not simulate bandwidth (spec 000 §3.7
      "Bandwidth limits are not simulated"); Table 2.2 rates are in the description for checks.
    * L40/J20 and L80/J40 (spec 004 §6.0): "latency" is the mean and "jitter" the width of a uniform
      delay, ``max(0, latency + (random() - 0.5) · variance)`` (Gl. 5.1), applied on receive at both
      ends; so ``latency`` = mean - width/2 and uniform jitter of the full width
      (``test_profiles.py::test_spec004_settings_are_uniform_around_the_mean``).
    * rtt1s (spec 003 §6.3): two ns-2 simplex links of 10 Mbit/s and 500 ms each; the SFQ queue only
      matters under overload, so the default FIFO queue stands in for it.
"""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from lagless.errors import ConfigError
from lagless.netsim.link import GilbertElliott, JitterConfig, LinkConfig

__all__ = ["PROFILES", "Profile", "get_profile"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Profile:
    """A named, sourced pair of link settings for the two directions of a client-server path."""

    name: str
    """Lowercase identifier, e.g. ``"umts"``."""
    description: str
    """One line on what the profile models."""
    source: str
    """Where the numbers come from (spec section or kind of public source)."""
    up: LinkConfig
    """Client → server direction."""
    down: LinkConfig
    """Server → client direction."""

    def __post_init__(self) -> None:
        """Validate the fields; raise ``ConfigError`` naming the bad one."""
        if not self.name or self.name != self.name.lower() or not self.name.isascii():
            raise ConfigError(f"name must be a non-empty lowercase ASCII string, got {self.name!r}")
        if not isinstance(self.up, LinkConfig) or not isinstance(self.down, LinkConfig):
            raise ConfigError(f"up and down must be LinkConfig, got {self.up!r}, {self.down!r}")

    @property
    def rtt(self) -> float:
        """Minimum round-trip time (s): up + down latency, without jitter or queueing."""
        return self.up.latency + self.down.latency

    @property
    def rtt_mean(self) -> float:
        """Mean round-trip time (s): up + down latency plus mean jitter, without queueing."""
        return self.up.mean_delay + self.down.mean_delay


def _kbit(rate: float) -> float:
    """Convert kbit/s (how the sources quote rates) to bytes/s."""
    return rate * 1000.0 / 8.0


def _thesis_mobile(rtt: float, loss: float, jitter_fraction: float) -> LinkConfig:
    one_way = rtt / 2.0
    return LinkConfig(
        latency=one_way,
        jitter=JitterConfig(kind="uniform", amount=jitter_fraction * one_way),
        loss=loss,
    )


_SPEC000 = "spec 000 §2.0 Table 2.2 (means of Timm-Giel 2004, Chesterfield 2005, Holma & Toskala"
_SPEC000 += " 2006, Claypool 2006) and §3.7 simulator settings"
_TYPICAL = "typical figures from public operator/measurement reports and vendor specs, rounded;"
_TYPICAL += " an order-of-magnitude model, not one measurement"

_ALL: Final = (
    Profile(
        name="gprs",
        description="GPRS as the thesis simulated it: RTT 916 ms, loss 5 %, jitter 15 % of latency "
        "(Table 2.2 rates, not simulated: 18.5-27.9 kbit/s down, 6.5 kbit/s up)",
        source=_SPEC000,
        up=_thesis_mobile(0.916, 0.05, 0.15),
        down=_thesis_mobile(0.916, 0.05, 0.15),
    ),
    Profile(
        name="umts",
        description="UMTS as the thesis simulated it: RTT 340 ms, loss 1 %, jitter 7 % of latency "
        "(Table 2.2 rates, not simulated: 105 kbit/s down, 48 kbit/s up)",
        source=_SPEC000,
        up=_thesis_mobile(0.340, 0.01, 0.07),
        down=_thesis_mobile(0.340, 0.01, 0.07),
    ),
    Profile(
        name="edge",
        description="EDGE (EGPRS) mobile data: RTT about 400 ms, 200/100 kbit/s",
        source=_TYPICAL,
        up=LinkConfig(
            latency=0.200,
            jitter=JitterConfig(kind="uniform", amount=0.040),
            loss=0.01,
            bandwidth=_kbit(100),
        ),
        down=LinkConfig(
            latency=0.200,
            jitter=JitterConfig(kind="uniform", amount=0.040),
            loss=0.01,
            bandwidth=_kbit(200),
        ),
    ),
    Profile(
        name="hspa",
        description="HSPA (3.5G) mobile data: RTT about 100 ms, 4 Mbit/s down, 1.5 Mbit/s up",
        source=_TYPICAL,
        up=LinkConfig(
            latency=0.050,
            jitter=JitterConfig(kind="normal", amount=0.010),
            loss=0.005,
            bandwidth=_kbit(1_500),
        ),
        down=LinkConfig(
            latency=0.050,
            jitter=JitterConfig(kind="normal", amount=0.010),
            loss=0.005,
            bandwidth=_kbit(4_000),
        ),
    ),
    Profile(
        name="lte",
        description="LTE (4G) mobile data: RTT about 50 ms, 30 Mbit/s down, 10 Mbit/s up",
        source=_TYPICAL,
        up=LinkConfig(
            latency=0.025,
            jitter=JitterConfig(kind="normal", amount=0.005),
            loss=0.002,
            bandwidth=_kbit(10_000),
        ),
        down=LinkConfig(
            latency=0.025,
            jitter=JitterConfig(kind="normal", amount=0.005),
            loss=0.002,
            bandwidth=_kbit(30_000),
        ),
    ),
    Profile(
        name="5g",
        description="5G NR mobile data: RTT about 20 ms, 200 Mbit/s down, 50 Mbit/s up",
        source=_TYPICAL,
        up=LinkConfig(
            latency=0.010,
            jitter=JitterConfig(kind="normal", amount=0.002),
            loss=0.001,
            bandwidth=_kbit(50_000),
        ),
        down=LinkConfig(
            latency=0.010,
            jitter=JitterConfig(kind="normal", amount=0.002),
            loss=0.001,
            bandwidth=_kbit(200_000),
        ),
    ),
    Profile(
        name="wifi",
        description="home Wi-Fi hop: RTT about 4 ms, heavy-tailed contention jitter, 1 % loss in "
        "bursts of 3, 100 Mbit/s",
        source=_TYPICAL + "; burst loss after Gilbert-Elliott fits of 802.11 traces",
        up=LinkConfig(
            latency=0.002,
            jitter=JitterConfig(kind="pareto", amount=0.002),
            burst=GilbertElliott.from_loss_and_burst(0.01, 3.0),
            bandwidth=_kbit(100_000),
            mtu=1500,
        ),
        down=LinkConfig(
            latency=0.002,
            jitter=JitterConfig(kind="pareto", amount=0.002),
            burst=GilbertElliott.from_loss_and_burst(0.01, 3.0),
            bandwidth=_kbit(100_000),
            mtu=1500,
        ),
    ),
    Profile(
        name="dsl",
        description="ADSL2+ broadband to a nearby server: RTT about 30 ms, 16 Mbit/s down, "
        "1 Mbit/s up, PPPoE MTU 1492",
        source=_TYPICAL + "; MTU 1492 from PPPoE (RFC 2516)",
        up=LinkConfig(
            latency=0.015,
            jitter=JitterConfig(kind="uniform", amount=0.004),
            loss=0.001,
            bandwidth=_kbit(1_000),
            mtu=1492,
        ),
        down=LinkConfig(
            latency=0.015,
            jitter=JitterConfig(kind="uniform", amount=0.004),
            loss=0.001,
            bandwidth=_kbit(16_000),
            mtu=1492,
        ),
    ),
    Profile(
        name="lan",
        description="switched gigabit Ethernet LAN: RTT about 0.4 ms, no loss, MTU 1500",
        source=_TYPICAL + "; MTU 1500 from Ethernet (RFC 894)",
        up=LinkConfig(
            latency=0.0002,
            jitter=JitterConfig(kind="uniform", amount=0.0001),
            bandwidth=_kbit(1_000_000),
            mtu=1500,
        ),
        down=LinkConfig(
            latency=0.0002,
            jitter=JitterConfig(kind="uniform", amount=0.0001),
            bandwidth=_kbit(1_000_000),
            mtu=1500,
        ),
    ),
    Profile(
        name="intercontinental",
        description="broadband across an ocean (e.g. Europe to US west coast or Asia): RTT about "
        "150 ms, 0.5 % loss; bandwidth set by the access link, not modelled",
        source=_TYPICAL + "; RTTs as in public inter-region latency tables of cloud providers",
        up=LinkConfig(
            latency=0.075,
            jitter=JitterConfig(kind="normal", amount=0.005),
            loss=0.005,
            mtu=1500,
        ),
        down=LinkConfig(
            latency=0.075,
            jitter=JitterConfig(kind="normal", amount=0.005),
            loss=0.005,
            mtu=1500,
        ),
    ),
    Profile(
        name="l40j20",
        description="spec 004 setting L40: one-way delay uniform in [30, 50] ms each way, no loss",
        source="spec 004 §5.3.3 (Gl. 5.1) and §6.0: networkSimulatedLatency 40 ms, "
        "networkSimulatedVariance 20 ms",
        up=LinkConfig(latency=0.030, jitter=JitterConfig(kind="uniform", amount=0.020)),
        down=LinkConfig(latency=0.030, jitter=JitterConfig(kind="uniform", amount=0.020)),
    ),
    Profile(
        name="l80j40",
        description="spec 004 setting L80: one-way delay uniform in [60, 100] ms each way, no loss",
        source="spec 004 §5.3.3 (Gl. 5.1) and §6.0: networkSimulatedLatency 80 ms, "
        "networkSimulatedVariance 40 ms",
        up=LinkConfig(latency=0.060, jitter=JitterConfig(kind="uniform", amount=0.040)),
        down=LinkConfig(latency=0.060, jitter=JitterConfig(kind="uniform", amount=0.040)),
    ),
    Profile(
        name="rtt1s",
        description="spec 003 '1 s lag' test: 10 Mbit/s simplex links with 500 ms delay each way",
        source="spec 003 §6.3 ns-2 script: simplex-link 10Mb 500ms SFQ, one per direction",
        up=LinkConfig(latency=0.5, bandwidth=_kbit(10_000)),
        down=LinkConfig(latency=0.5, bandwidth=_kbit(10_000)),
    ),
)

PROFILES: Final[Mapping[str, Profile]] = types.MappingProxyType({p.name: p for p in _ALL})
"""Every built-in profile by name, in a fixed order: mobile, fixed, then the spec 004/003 links."""


def get_profile(name: str) -> Profile:
    """Return the built-in profile called ``name`` (case-insensitive).

    Args:
        name: A key of ``PROFILES``, e.g. ``"umts"``.

    Returns:
        The profile.

    Raises:
        ConfigError: the name is unknown; the message lists the valid names.
    """
    profile = PROFILES.get(name.strip().lower()) if isinstance(name, str) else None
    if profile is None:
        raise ConfigError(f"unknown profile {name!r}; valid names: {', '.join(PROFILES)}")
    return profile
