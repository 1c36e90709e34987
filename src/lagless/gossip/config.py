"""`GossipConfig`: the frozen, validated parameters of a Silac peer.

Implements the tunables of spec 002 §3.7–§3.12 (Eq. 2.1–2.7, TTL, 10-s forget timeout). Every
default cites its source; where the thesis is silent the decision is listed here and pinned:

* ``fanout = 3``: the thesis never states |S| (§7.6). With fan-out f the first copies arrive
  at hop 0 : 1 : 2 roughly as f : f² : f³ before suppression, and f = 3 gives the shape of §3.5
  (hop 2 the mode, hop 1 about a quarter to a third) while 3 + 9 + 27 copies still cover a
  20-node swarm (``test_swarm.py::test_swarm_spreads_avatar_updates``).
* ``frame_time = 0.05`` s: "the world changes on average every 50 ms" (§2.13, §7.10).
* ``d_max = 1000.0`` m: the thesis gives no world size (§7.10); set it to the map diagonal.
* ``duplicate_threshold = 2`` copies from distinct other senders during the wait (§7.7).
* ``unknown_bandwidth = 0.5``: b_k for a peer whose tail was never seen (§3.7 leaves it open).
* Interest path (§7.9): each interaction is carried in ``carry_frames = 20`` own messages,
  consecutive frames when alone (Fig. 2.8 describes the carriers as a first message number plus
  a length in frames, a contiguous run). Transient interactions decay after 1 s (so a lone shot
  gets its 20 frames), important ones after 2 s (kept for corrections). Calibration, since the
  thesis gives no number: at f = 3 one message reaches about a third of 100 peers whatever their
  distance (Eq. 2.1 is flat; E8 measures the same delay near and far), so the loss within 1/5 of
  the map falls with the number of carriers: 3 (the earlier sparse 1-2-4-8 schedule) 30 %,
  10 carriers 4.2 %, 16 carriers 1.9 % (100 peers, seed 1); 20 gives a margin under the
  thesis's ≤ 2 % (§5.4). The carriers cost no bandwidth: every avatar info has the field.
"""

from __future__ import annotations

from dataclasses import dataclass

from lagless._validate import require_non_negative as _non_negative
from lagless._validate import require_positive as _positive
from lagless.errors import ConfigError

__all__ = ["GossipConfig"]


def _u32(name: str, value: int) -> None:
    if not 0 <= value < (1 << 32):
        raise ConfigError(f"{name} must be in [0, 2**32), got {value}")


@dataclass(frozen=True, slots=True, kw_only=True)
class GossipConfig:
    """Parameters of a `lagless.gossip.GossipPeer` (spec 002 §3).

    Raises:
        ConfigError: naming the first field out of range.
    """

    alpha_distance: float = 1.0
    """α1, weight of the distance term d of Eq. 2.1 (§3.1: α1 = 1)."""
    alpha_angle: float = 1.0
    """α2, weight of the goal-function term a (§3.1: α1/α2 = 1)."""
    alpha_bandwidth: float = 0.5
    """α3, weight of the bandwidth term b (§3.1: α1/α3 = 2)."""
    alpha_penalty: float = 1.0
    """α4, subtracted for peers listed in a received tail (Eq. 2.6; §3.1: α1/α4 = 1)."""
    fanout: int = 3
    """|S|, recipients drawn per message (decision; the thesis leaves it open)."""
    max_hop: int = 2
    """A message received with this hop is not forwarded: at most three senders (§2.13)."""
    frame_time: float = 0.05
    """Seconds per frame: own avatar info is sent once per frame (§2.13)."""
    forward_delay_frames: tuple[int, int] = (1, 4)
    """Uniform integer range of the forwarding wait, frames (Eq. 2.7)."""
    duplicate_threshold: int = 2
    """Distinct other senders of a pending message that cancel its forwarding (§2.10)."""
    forget_timeout: float = 10.0
    """Seconds of silence after which a peer is forgotten (§3.2)."""
    d_max: float = 1000.0
    """Maximum distance in the world, metres (Eq. 2.3); the map diagonal."""
    world_min: tuple[float, float, float] = (-1.0e6, -1.0e6, -1.0e6)
    """Lower corner of the map, metres; a joiner outside is rejected with code 2."""
    world_max: tuple[float, float, float] = (1.0e6, 1.0e6, 1.0e6)
    """Upper corner of the map, metres."""
    unknown_bandwidth: float = 0.5
    """b_k in [0, 1] used for a peer that never advertised bandwidth (decision)."""
    map_id: int = 0
    """Map id this peer plays; joiners with another map are rejected with code 3."""
    game_type: int = 0
    """Game type this peer plays; joiners with another type are rejected with code 3."""
    join_retry_interval: float = 1.0
    """Seconds between re-sends of an unanswered join request (decision)."""
    join_attempts: int = 5
    """Join requests sent before the join fails (decision)."""
    transient_decay: float = 1.0
    """Seconds a transient interaction (shot) stays on the interest path (§2.8, decision)."""
    important_decay: float = 2.0
    """Seconds an important interaction (pickup) stays on the interest path (§2.8, decision)."""
    conflict_memory: float = 4.0
    """Seconds an interaction code is remembered for deduplication and conflict checks."""
    correction_limit: int = 4
    """Type-10 corrections sent per peer per interaction at most (§2.11, decision)."""
    carry_frames: int = 20
    """Own messages that carry each interaction, consecutive frames when alone (§2.8, Fig. 2.8)."""
    max_pending: int = 4096
    """Pending forwards kept at most; extra messages are dropped (bounded memory)."""
    max_peers: int = 4096
    """Peers kept at most; unknown newcomers beyond it are dropped (bounded memory)."""

    def __post_init__(self) -> None:
        for name in ("alpha_distance", "alpha_angle", "alpha_bandwidth", "alpha_penalty"):
            _non_negative(name, getattr(self, name))
        if self.alpha_distance + self.alpha_angle + self.alpha_bandwidth <= 0:
            raise ConfigError("alpha_distance + alpha_angle + alpha_bandwidth must be > 0")
        if not 1 <= self.fanout <= 255:
            raise ConfigError(f"fanout must be in [1, 255], got {self.fanout}")
        if not 0 <= self.max_hop <= 255:
            raise ConfigError(f"max_hop must be in [0, 255], got {self.max_hop}")
        for name in ("frame_time", "forget_timeout", "d_max", "join_retry_interval"):
            _positive(name, getattr(self, name))
        for name in ("transient_decay", "important_decay", "conflict_memory"):
            _positive(name, getattr(self, name))
        lo, hi = self.forward_delay_frames
        if not 0 <= lo <= hi:
            raise ConfigError(
                f"forward_delay_frames must be (lo, hi) with 0 <= lo <= hi, got {lo, hi}"
            )
        if self.duplicate_threshold < 1:
            raise ConfigError(f"duplicate_threshold must be >= 1, got {self.duplicate_threshold}")
        if len(self.world_min) != 3 or len(self.world_max) != 3:
            raise ConfigError("world_min and world_max must have 3 components")
        if not all(a < b for a, b in zip(self.world_min, self.world_max, strict=True)):
            raise ConfigError(
                f"world_min must be < world_max, got {self.world_min}, {self.world_max}"
            )
        if not 0.0 <= self.unknown_bandwidth <= 1.0:
            raise ConfigError(f"unknown_bandwidth must be in [0, 1], got {self.unknown_bandwidth}")
        _u32("map_id", self.map_id)
        _u32("game_type", self.game_type)
        for name in (
            "join_attempts",
            "correction_limit",
            "carry_frames",
            "max_pending",
            "max_peers",
        ):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
