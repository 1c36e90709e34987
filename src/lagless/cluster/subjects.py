"""The NATS subjects of one cluster, all under one prefix (issue 16 part 1).

Decisions:
    * ``<prefix>.input``: every player's inputs; every server hears all of them, so the owner of a
      car after a hand-off or a take-over already knows its newest keys (no input is lost in the
      move). One input per key change keeps this small.
    * ``<prefix>.snap.<server>``: the server's 20-Hz snapshot of its cars. Players take their
      updates from it; servers use it as the heartbeat and keep the last one of every server as
      the state to restore if that server dies.
    * ``<prefix>.border.<cell>``: copies of the cars near ``cell`` from the neighbouring cells'
      owners; the owner of ``cell`` subscribes (``border.*`` and keeps its own cells' copies).
    * ``<prefix>.handoff.<server>``: cars handed to ``server``.
    * ``<prefix>.stop`` and ``<prefix>.stats.<server>``: the entry point's end of run and the
      servers' counters.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Subjects"]


@dataclass(frozen=True, slots=True)
class Subjects:
    """Subject names of the cluster ``prefix`` (a NATS token path without wildcards)."""

    prefix: str = "lagless.cluster"

    @property
    def input(self) -> str:
        """Return the players' input subject."""
        return f"{self.prefix}.input"

    def snapshot(self, server: int) -> str:
        """Return the snapshot subject of ``server``."""
        return f"{self.prefix}.snap.{server}"

    @property
    def snapshots(self) -> str:
        """Return the wildcard of every server's snapshots."""
        return f"{self.prefix}.snap.*"

    def border(self, cell: int) -> str:
        """Return the subject of the copies of cars near ``cell``."""
        return f"{self.prefix}.border.{cell}"

    @property
    def borders(self) -> str:
        """Return the wildcard of every cell's border copies."""
        return f"{self.prefix}.border.*"

    def handoff(self, server: int) -> str:
        """Return the subject of hand-offs to ``server``."""
        return f"{self.prefix}.handoff.{server}"

    @property
    def stop(self) -> str:
        """Return the end-of-run subject."""
        return f"{self.prefix}.stop"

    def stats(self, server: int) -> str:
        """Return the statistics subject of ``server``."""
        return f"{self.prefix}.stats.{server}"

    @property
    def all_stats(self) -> str:
        """Return the wildcard of every server's statistics."""
        return f"{self.prefix}.stats.*"
