"""The interest path and the replicated interaction state of a Silac node (spec 002 §3.5, §3.6).

Implements spec 002 §2.7 (every node owns the whole world except other avatars; consistency by
gossiping interactions; conflicting interactions on one element are rolled back on both sides)
and §2.8 (the interest path: own interactions ordered by recency, re-sent less often with age,
decaying; important ones first and longer). Decisions (spec 002 §7.9), pinned in
``tests/gossip/test_world_state.py``:

* One interaction rides in each avatar-info message. An interaction is carried in
  ``carry_frames`` own messages, consecutive when it is alone, because the type-10 record
  describes its carriers as "the first message that contained it" plus "the number of frames in
  which it was sent" (§2.8 Fig. 2.8): a contiguous run, not a sparse schedule. Several live
  entries share the frames round-robin: fewest sends first, then important before transient,
  then oldest (``test_carried_in_consecutive_frames``,
  ``test_transient_decays_fast_and_important_ranks_first``). After its run, or once it decays,
  an entry is no longer carried; important entries stay for corrections until they decay.
* Interactions are identified by (avatar id, code) and applied once; a rolled-back code is
  remembered so a late copy does not re-apply it (``test_late_copy_after_rollback_is_ignored``).
* Conflict (§2.7): a pickup of an item another avatar holds makes **both** lose: the item becomes
  free everywhere, and an owner whose pickup lost announces it in the rollback field
  (``test_conflict_rolls_back_both``).
* Loss correction (§2.11): peer P has interaction e if P ever reports a number in e's carrying
  range [first, last] or the number of a correction sent to it; a report past ``last`` without
  that triggers a type-10 correction, at most ``correction_limit`` times per peer
  (``test_correction_after_missed_carriers``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lagless.errors import LocalProtocolError
from lagless.gossip.messages import Interaction, InteractionKind, InteractionRecord, Vec3

__all__ = ["InterestPath", "WorldState"]

_EPS = 1e-9  # seconds of slack when comparing float deadlines


@dataclass(slots=True, kw_only=True)
class _Entry:
    interaction: Interaction
    created: float
    position: Vec3
    facing: Vec3
    first: int | None = None
    last: int = 0
    sends: int = 0
    confirmed: set[int] = field(default_factory=set)
    corrections: dict[int, list[int]] = field(default_factory=dict)


class InterestPath:
    """This node's own recent interactions, re-sent with falling frequency (spec 002 §2.8).

    Args:
        transient_decay: Lifetime of transient interactions, seconds.
        important_decay: Lifetime of important interactions, seconds.
        correction_limit: Corrections per peer per interaction at most.
        carry_frames: Own messages that carry each interaction (its "length", Fig. 2.8).
    """

    def __init__(
        self,
        *,
        transient_decay: float,
        important_decay: float,
        correction_limit: int,
        carry_frames: int = 20,
    ) -> None:
        self._carry = carry_frames
        self._decay = (transient_decay, important_decay)
        self._limit = correction_limit
        self._entries: list[_Entry] = []

    def __len__(self) -> int:
        """Return the number of live entries."""
        return len(self._entries)

    def add(self, interaction: Interaction, now: float, position: Vec3, facing: Vec3) -> None:
        """Put a new own interaction on the path (most recent, not yet sent)."""
        self._entries.append(
            _Entry(interaction=interaction, created=now, position=position, facing=facing)
        )

    def remove(self, interaction: Interaction) -> None:
        """Drop an interaction (e.g. after rolling it back) so it is not re-sent."""
        self._entries = [e for e in self._entries if e.interaction != interaction]

    def expire(self, now: float) -> None:
        """Drop entries older than their decay time."""
        self._entries = [
            e
            for e in self._entries
            if now - e.created < self._decay[int(e.interaction.important)] - _EPS
        ]

    def take(self, now: float, message_number: int) -> Interaction | None:
        """Choose the interaction to carry in own message ``message_number`` sent at ``now``."""
        self.expire(now)
        live = [e for e in self._entries if e.sends < self._carry]
        if not live:
            return None
        best = min(live, key=lambda e: (e.sends, not e.interaction.important, e.created))
        if best.first is None:
            best.first = message_number
        best.last = message_number
        best.sends += 1
        return best.interaction

    def corrections_for(self, peer_id: int, reported: int) -> list[InteractionRecord]:
        """Return the important interactions ``peer_id`` may have lost, given its report.

        Args:
            peer_id: The peer's avatar id.
            reported: The header "last received" number it sent us (§2.11).
        """
        out: list[InteractionRecord] = []
        for e in self._entries:
            if not e.interaction.important or e.first is None or peer_id in e.confirmed:
                continue
            sent = e.corrections.get(peer_id, [])
            if e.first <= reported <= e.last or reported in sent:
                e.confirmed.add(peer_id)
            elif reported > e.last and len(sent) < self._limit:
                if sent and reported <= sent[-1]:
                    continue
                out.append(
                    InteractionRecord(
                        interaction=e.interaction,
                        position=e.position,
                        facing=e.facing,
                        first_message=e.first,
                        length=e.sends,
                    )
                )
        return out

    def note_correction(self, peer_id: int, records: list[InteractionRecord], number: int) -> None:
        """Remember that ``records`` went to ``peer_id`` in own message ``number``."""
        sent = {r.interaction for r in records}
        for e in self._entries:
            if e.interaction in sent:
                e.corrections.setdefault(peer_id, []).append(number)


@dataclass(slots=True)
class _Seen:
    when: float
    rolled_back: bool


@dataclass(slots=True, kw_only=True)
class _Holding:
    avatar_id: int
    interaction: Interaction


class WorldState:
    """The local copy of the world's items and of applied interactions (spec 002 §2.7).

    Args:
        self_id: This node's avatar id.
        memory: Seconds an interaction code is remembered.
    """

    def __init__(self, *, self_id: int, memory: float) -> None:
        self._self_id = self_id
        self._memory = memory
        self._items: dict[int, _Holding] = {}
        self._seen: dict[tuple[int, int], _Seen] = {}

    def holder(self, item: int) -> int | None:
        """Return the avatar id holding ``item``, or ``None`` if it is free."""
        h = self._items.get(item)
        return None if h is None else h.avatar_id

    def items(self) -> dict[int, int]:
        """Return a snapshot {item id: holder avatar id}."""
        return {item: h.avatar_id for item, h in self._items.items()}

    def forget_old(self, now: float) -> None:
        """Drop remembered codes older than the memory time (oldest first, in insertion order)."""
        while self._seen:
            key = next(iter(self._seen))
            if now - self._seen[key].when < self._memory:
                break
            del self._seen[key]

    def local(self, interaction: Interaction, now: float) -> None:
        """Apply an own interaction.

        Raises:
            LocalProtocolError: a pickup of an item some avatar already holds.
        """
        if interaction.kind is InteractionKind.PICKUP:
            holder = self.holder(interaction.target)
            if holder is not None:
                raise LocalProtocolError(
                    f"item {interaction.target} is held by avatar {holder}; pick a free item"
                )
            self._items[interaction.target] = _Holding(
                avatar_id=self._self_id, interaction=interaction
            )
        self._seen[(self._self_id, interaction.code)] = _Seen(now, False)

    def remote(
        self, avatar_id: int, interaction: Interaction, now: float
    ) -> tuple[bool, list[tuple[int, Interaction]]]:
        """Apply another avatar's interaction.

        Returns:
            (applied, rolled back): ``applied`` is False for a duplicate or a rolled-back code;
            ``rolled back`` lists (avatar id, interaction) pairs undone by a conflict.
        """
        key = (avatar_id, interaction.code)
        if interaction.kind is InteractionKind.NONE or key in self._seen:
            return False, []
        self._seen[key] = _Seen(now, False)
        if interaction.kind is not InteractionKind.PICKUP:
            return True, []
        item = interaction.target
        held = self._items.get(item)
        if held is None or held.avatar_id == avatar_id:
            self._items[item] = _Holding(avatar_id=avatar_id, interaction=interaction)
            return True, []
        # §2.7: simultaneous interactions on one element: both sides lose, immediately.
        del self._items[item]
        self._seen[key].rolled_back = True
        self._seen[(held.avatar_id, held.interaction.code)] = _Seen(now, True)
        return True, [(held.avatar_id, held.interaction), (avatar_id, interaction)]

    def rollback(self, avatar_id: int, interaction: Interaction, now: float) -> bool:
        """Undo ``avatar_id``'s interaction announced in a rollback field.

        Returns:
            True the first time this rollback is learnt.
        """
        key = (avatar_id, interaction.code)
        seen = self._seen.get(key)
        if interaction.kind is InteractionKind.NONE or (seen is not None and seen.rolled_back):
            return False
        self._seen[key] = _Seen(now, True)
        held = self._items.get(interaction.target)
        if (
            interaction.kind is InteractionKind.PICKUP
            and held is not None
            and held.avatar_id == avatar_id
            and held.interaction == interaction
        ):
            del self._items[interaction.target]
        return True
