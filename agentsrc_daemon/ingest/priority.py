"""Live appends before the backlog: when the ingest loop yields to an append during a
backfill, and how much backfill work it does between two looks for one.

Pure (the loop passes the clock): the daemon asks it at every boundary between two
pieces of backfill work (a round read here, a batch committed, a worker's piece
committed, the writer's WAL restart), so an append waits for at most one piece, not
for a pass over the queue. Two rules keep the backlog moving: a piece still runs when
the last one is older than ``progress_s`` (a steady writer cannot starve the
backfill), and the pieces are small only while appends came in the last
``recent_s`` (a backfill with no live session reads and commits in large pieces,
at full speed).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# While appends come in (within APPENDS_RECENT_S), a backfill round reads at most this
# much of a file and a batch holds at most this many events: an append waits for a few
# milliseconds of parsing or of a commit, not for 4 MiB or 2,000 events.
LIVE_ROUND_BUDGET_BYTES = 128 << 10
LIVE_BATCH_EVENTS = 250
APPENDS_RECENT_S = 5.0
# Appends go first, but the backfill still moves at least once in this long.
BACKFILL_PROGRESS_S = 0.25


@dataclass(slots=True)
class LivePriority:
    """The loop's record of the appends and of the backfill's progress."""

    round_bytes: int  # a backfill round's budget with no live appends
    batch_events: int  # a batch's events with no live appends
    live_round_bytes: int = LIVE_ROUND_BUDGET_BYTES
    live_batch_events: int = LIVE_BATCH_EVENTS
    recent_s: float = APPENDS_RECENT_S
    progress_s: float = BACKFILL_PROGRESS_S
    appended_at: float = -math.inf  # when the watcher last saw an append
    progressed_at: float = -math.inf  # when a piece of backfill work was last done

    def appended(self, now: float) -> None:
        self.appended_at = now

    def progressed(self, now: float) -> None:
        self.progressed_at = now

    def recent(self, now: float) -> bool:
        """Appends came in the last ``recent_s``: a live session is being written."""
        return now - self.appended_at < self.recent_s

    def budget(self, now: float) -> tuple[int, int]:
        """A round's bytes and a batch's events (here and in the workers)."""
        if self.recent(now):
            return self.live_round_bytes, self.live_batch_events
        return self.round_bytes, self.batch_events

    def yields(self, now: float, waiting: bool) -> bool:
        """Before a piece of backfill work: leave it for later, because an append is
        ``waiting`` (the watcher marked a file since the loop last took them) and the
        backfill moved less than ``progress_s`` ago."""
        return waiting and now - self.progressed_at < self.progress_s
